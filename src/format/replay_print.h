/*
 * A replay's report as text (collprof --replay, docs/replay.md "The report"): the run's
 * summary and console, and collprof-report replay from the /replay table of its file.
 */
#ifndef COLLPROF_FORMAT_REPLAY_PRINT_H
#define COLLPROF_FORMAT_REPLAY_PRINT_H

#include <collprof/schema.h>

#include <stddef.h>
#include <stdio.h>

/** Print the type and trace rows of rows[n] (every backend's, /replay), with the critical
 *  path from the op rows; minor: the file's schema minor version (before 1.12 the rows have
 *  no bandwidths, skew, stragglers or critical path: printed as "-"). */
void cp_replay_print(FILE *f, const collprof_replay_row_t *rows, size_t n, long long minor);
/** --gaps (replay_gaps_print.c): the words for backend's replay in rows[n] ("back to back",
 *  "gaps trace:0.5"), and the line of rank row rows[i] (a header before the first). */
const char *cp_replay_gaps_words(const collprof_replay_row_t *rows, size_t n, const char *backend,
                                 char *buf, size_t len);
void cp_replay_gaps_print(FILE *f, const collprof_replay_row_t *rows, size_t i);

#endif /* COLLPROF_FORMAT_REPLAY_PRINT_H */
