/*
 * collprof --replay reads only what a rank replays (docs/replay.md, "Memory"): the trace's
 * groups, members and splits whole, and of /trace_ops, read in blocks of rows, this rank's
 * ops in --replay-ops' range and the all-to-all-v ops of every rank (their splits are compared
 * between members); of every other row it keeps only the figures the replay needs of the whole
 * trace, the same on every rank.  --shrink, which folds every rank's ops, reads them all.
 */
#ifndef COLLPROF_RUNNER_REPLAY_SCAN_H
#define COLLPROF_RUNNER_REPLAY_SCAN_H

#include "schema/trace_read.h"

#include <stddef.h>
#include <stdint.h>

/** What a partial read saw of every rank's ops. */
typedef struct cp_trace_scan {
    int rank;                 /**< the rank whose ops it kept */
    int64_t lo, hi;           /**< --replay-ops' range (hi -1: open; 0, -1: every op) */
    int64_t top;              /**< the largest seq, -1: no ops */
    int64_t first_ns, end_ns; /**< the ops in range: first issue, last completion; -1: none */
    uint32_t used;            /**< the collprof ops in range, COLLPROF_BIT()s */
    size_t nops;              /**< ops in range, every rank's */
    size_t nr;                /**< ranks counted below (the members') */
    int64_t *all, *kept;      /**< [group * nr + rank]: collectives, of them in range */
} cp_trace_scan_t;

/** Read path's trace for rank of a run of nranks: partial (*scan set), or whole where the
 *  trace has more ranks than the run and shrink asks to fold it (*scan NULL).  0, or -1 and
 *  why (as cp_trace_read's). */
int cp_replay_read(const char *path, const char *range, int rank, int nranks, int shrink,
                   cp_trace_t *t, const cp_trace_scan_t **scan, char *err, size_t len);
/* Rank 0's partial read also gathers the rows in range for the check before the replay
 * (replay_check.h): cp_replay_check_end() after the range's own checks, or freed here. */
/** The scan of the last partial read, NULL when the trace was read whole. */
const cp_trace_scan_t *cp_replay_scan(void);
void cp_replay_scan_free(void);

#endif /* COLLPROF_RUNNER_REPLAY_SCAN_H */
