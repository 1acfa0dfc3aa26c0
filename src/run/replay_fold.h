/*
 * Rank 0's fold of one backend's replay (docs/replay.md, "The report", "Memory"): the op rows
 * of every rank pass through it one at a time, on their way to the result file, and leave
 * only what the report needs: per operation x message size x group its figures (the values
 * of its medians, its worst status, its stragglers), per rank and group the critical path's
 * part, per rank its exposed time.  Rank 0 never holds every rank's op rows.
 */
#ifndef COLLPROF_RUN_REPLAY_FOLD_H
#define COLLPROF_RUN_REPLAY_FOLD_H

#include "schema/trace_read.h"

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cp_rfold cp_rfold_t;

/** The trace row's note under --check 0 (format/replay_print.c prints it for the wrong count). */
#define CP_RFOLD_UNCHECKED "results not checked (--check 0)"

/** A fold of the op rows of a job of nranks ranks (unchecked: --check 0, the trace row's note
 *  then begins with CP_RFOLD_UNCHECKED); NULL when out of memory. */
cp_rfold_t *cp_rfold_new(int nranks, int unchecked);
/** Op row r, the at-th of the backend's (rank after rank, each rank's in seq order), its
 *  skew, straggler and critical part set (cp_replay_path): its bandwidths set, folded.  0, or
 *  -1 when out of memory. */
int cp_rfold_add(cp_rfold_t *f, uint64_t at, collprof_replay_row_t *r);
/** Did a row come out wrong or failed? */
int cp_rfold_bad(const cp_rfold_t *f);
/**
 * The rows of the report, malloc'ed, *n of them: in *nhead the critical path's op rows, one per
 * rank on it (group -1) and one per group (rank -1) (ops: how many, critical_us: their sum, in
 * the order of the rows); then the type rows (op, bytes,
 * group order), the trace row (whole: the slowest rank's replay time, crit: the path's
 * length, t's recorded window, every rank's: sc, else t's ops) and the rank rows rk[nrk] of
 * --gaps.  *nhead is not part of the file's /replay table: the rest is, after the op rows.
 */
collprof_replay_row_t *cp_rfold_rows(cp_rfold_t *f, const cp_trace_t *t, double whole, double crit,
                                     const collprof_replay_row_t *rk, size_t nrk, size_t *nhead,
                                     size_t *n);
void cp_rfold_free(cp_rfold_t *f);

/** The recorded window of t (every rank's ops: the partial read's figures where t holds only
 *  this rank's): first issue to last completion, us; -1 when not recorded. */
double cp_replay_window_us(const cp_trace_t *t);

#endif /* COLLPROF_RUN_REPLAY_FOLD_H */
