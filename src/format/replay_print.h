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

#endif /* COLLPROF_FORMAT_REPLAY_PRINT_H */
