/*
 * collprof --replay's check of a trace before it is replayed (docs/replay.md, "The check
 * before the replay"): every member of a group has the group's collectives in the same order
 * (op, root, size), every send its recv (per group and peer pair, in order, the same size),
 * and the replay's blocking schedule, simulated over every rank's ops, does not stall.  Fed
 * every row of /trace_ops in range as the partial read sees it (replay_scan.c); the same
 * answer on every rank (the same trace): a refusal is one line, before anything is replayed.
 */
#ifndef COLLPROF_RUNNER_REPLAY_CHECK_H
#define COLLPROF_RUNNER_REPLAY_CHECK_H

#include "schema/trace_read.h"

#include <stddef.h>
#include <stdint.h>

/** The order the check simulates (replay_sim.c): nccl 1 (--replay-order nccl: an op posted
 *  where post_mask has it, completed before the next op of its group), 0 program (the
 *  default). */
void cp_replay_check_order(int nccl, uint32_t post_mask);
/** Start a check (drops any earlier one). */
void cp_replay_check_begin(void);
/** Row r of t (its groups and members read) joins the check. */
void cp_replay_check_row(const cp_trace_t *t, const collprof_trace_op_row_t *r);
/** Start a check of every op of t (a trace folded by --shrink, in memory whole). */
void cp_replay_check_trace(const cp_trace_t *t);
/** The check of the rows given: 0, -1 with the refusal in one line in err, or 1 when it could
 *  not be made (out of memory: err says so, the replay goes on unchecked). */
int cp_replay_check_end(const cp_trace_t *t, char *err, size_t len);
/** Drop the check's memory. */
void cp_replay_check_free(void);

#endif /* COLLPROF_RUNNER_REPLAY_CHECK_H */
