/*
 * --gaps and --replay-ops of collprof --replay (docs/replay.md, "Gaps"): which ops of the trace
 * a rank replays, when it issues each (at its recorded offset from the replay's start, by an
 * absolute sleep and a short spin; or after its recorded gap filled with work: a busy kernel on
 * the op's device through the plugin's compute slot, else a memory-bandwidth loop), and how
 * far each issue was from its target (the gap fidelity: per op and per rank in /replay's
 * issue_err_* columns, the rank rows).  One replay at a time per process: the state is this
 * file's; replay_gaps_util.c, below it, parses the options and folds the figures.
 */
#ifndef COLLPROF_RUNNER_REPLAY_GAPS_H
#define COLLPROF_RUNNER_REPLAY_GAPS_H

#include "runner/replay_scan.h"
#include "schema/trace_read.h"

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>

enum { CP_GAPS_NONE, CP_GAPS_TRACE, CP_GAPS_COMPUTE };

/** --gaps none|trace|trace:SCALE|compute|compute:SCALE ("" is none).  0, or -1 and why. */
int cp_gaps_parse(const char *s, int *mode, double *scale, char *err, size_t len);
/** --replay-ops A-B, A-, -B or A: seqs A to B (-1: open).  0, or -1 and why. */
int cp_replay_ops_parse(const char *s, int64_t *lo, int64_t *hi, char *err, size_t len);

/** Before any communication: keep only the ops of t in range (t's ops are compacted; sc: a
 *  partial read that kept them, and saw every rank's, else NULL), check that the trace has
 *  what gaps needs, and set up this rank's replays (iters of them).  0, or -1 and a one-line
 *  reason (the same on every rank: they read the same trace). */
int cp_gaps_setup(const char *gaps, const char *range, cp_trace_t *t, const cp_trace_scan_t *sc,
                  int rank, int iters, char *err, size_t len);
/** The node's local_size ranks: the spin before each issue may grow past 80 us on a host
 *  whose timer wakes late only where each has a CPU of this process's affinity. */
void cp_gaps_cores(int local_size);
/** The mode set up (CP_GAPS_*). */
int cp_gaps_mode(void);

/** Replay it starts (after the barrier that starts it; it 0: the first on a backend). */
void cp_gaps_begin(int it);
/** --gaps compute on the device: keep it busy for us from now, return when done; 0 (*how: a
 *  few words on the work), 1 where there is none (the host fills the gaps), -1 when it failed
 *  (said; the host fills the rest of this backend's gaps). */
typedef int (*cp_gaps_fill_fn)(void *arg, double us, const char **how);
/** Wait for op r's target, just before it is issued (its buffers ready); records the error.
 *  Under compute, fill(arg, ...) fills the gap where given (the op's device), else the host. */
void cp_gaps_wait(const collprof_trace_op_row_t *r, cp_gaps_fill_fn fill, void *arg);
/** Op r has completed (before its check). */
void cp_gaps_done(const collprof_trace_op_row_t *r);
/** Replay it ends. */
void cp_gaps_end(int it);

/** Op row of r: its issue_err_* (p50, p99, max over the replays; -1 when not timed) and late. */
void cp_gaps_op_row(const collprof_trace_op_row_t *r, collprof_replay_row_t *row);
/** This rank's row on backend (what "rank"): its errors over every op and replay, its late
 *  ops, its span (start to its last op's end, p50 over the replays) against its recorded
 *  window.  1 when filled, 0 under --gaps none (no row). */
int cp_gaps_rank_row(const char *backend, collprof_replay_row_t *row);
/** Move the rank rows of rows[n] to its end (in order); their count. */
size_t cp_gaps_partition(collprof_replay_row_t *rows, size_t n);
/** A type row folded from ops[k]: the largest of their errors, their late ops summed. */
void cp_gaps_fold(const collprof_replay_row_t *ops, size_t k, collprof_replay_row_t *r);
/** One more op r into a fold: into's errors the larger of its and r's, the late ops summed. */
void cp_gaps_fold_add(collprof_replay_row_t *into, const collprof_replay_row_t *r);
/** The trace row(s) of rows[n] from the rank rows rk[nrk]: the largest errors, late summed. */
void cp_gaps_trace_row(collprof_replay_row_t *rows, size_t n, const collprof_replay_row_t *rk,
                       size_t nrk);
void cp_gaps_free(void);

#endif /* COLLPROF_RUNNER_REPLAY_GAPS_H */
