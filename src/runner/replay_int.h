/*
 * What the files of collprof --replay share (replay.c: the ops prepared, the rows;
 * replay_issue.c: when each op is issued and completed, and the replays; replay_p2p.c:
 * point-to-point ops).  Internal to src/runner.
 */
#ifndef COLLPROF_RUNNER_REPLAY_INT_H
#define COLLPROF_RUNNER_REPLAY_INT_H

#include "colls/colls.h"
#include "runner/replay.h"

/** How an op is issued (replay_issue.c). */
enum { RP_NOW = 0, RP_POST = 1 };

/** Point-to-point kinds. */
enum { RP_SEND = 1, RP_RECV = 2 };

/* One op of this rank, prepared before the first replay. */
typedef struct rop {
    const collprof_trace_op_row_t *t;
    int op;         /**< collprof_op_t; -1: not replayed (note says why) */
    int group;      /**< its /trace_groups row */
    cp_xfer_t x;    /**< its transfer on its group's context */
    cp_a2av_t a2av; /**< alltoallv's counts in the context's rank order */
    size_t *counts; /**< the four arrays of a2av, one block */
    uint64_t wrong;
    int failed;  /**< the backend failed it */
    int unsup;   /**< the backend does not offer its op or type */
    int compose; /**< a reducescatter of per-rank blocks as a reduce per block (replay_issue.c) */
    int p2p;     /**< RP_SEND, RP_RECV; 0: a collective */
    int peer;    /**< p2p: the peer's rank in the group's context */
    int how;     /**< RP_NOW or RP_POST */
    int wq;      /**< its group's context is the job's own (shared by every such group): a
                      collective's queue under --replay-order nccl is the job's, not its group's */
    size_t done_at; /**< RP_POST: completed before op done_at runs (n: at the end) */
    long waits;     /**< a wait that completes an op: its index; else -1 */
    size_t off;     /**< its buffers' offset in its group's two buffers */
    size_t need;    /**< bytes of each buffer it uses */
    void *req;      /**< in flight: the plugin's request */
    double us;      /**< this replay's time in its calls */
    double at;      /**< this replay's issue of it (now_us: its first call) */
    double calls;   /**< this replay's time in its own calls, post and wait (whichever row
                         the wait's time goes to): its exposed time */
    double end;     /**< this replay's end of the call that completed it (now_us) */
    char note[128];
} rop_t;

/** Point-to-point op o (send or recv) prepared on its group (replay_p2p.c); 0. */
int cp_replay_prepare_p2p(const cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g, int rank);
/** Does p have post() and wait() for point-to-point? */
int cp_replay_has_post(const cp_plugin_t *p);
/** Fill a send's buffer; after a recv completes, count its wrong elements. */
void cp_replay_p2p_fill(const rop_t *o, void *buf, int rank);
uint64_t cp_replay_p2p_check(const rop_t *o, const void *buf);

/** --replay-order nccl: the op after o[i] that completes it, the next of its group not of
 *  its coalesced call or run of blocking sends and recvs; n: none (replay_order.c). */
size_t cp_replay_nccl_next(const rop_t *o, size_t n, size_t i);
/** The order the replay issues its ops in: 1 nccl, 0 program (cp_replay_order_setup). */
int cp_replay_order_nccl(void);
/** The collectives some backend of the run can post (cp_replay_order_setup; all before). */
uint32_t cp_replay_order_post_any(void);

/** Decide how each of o[n] is issued and when completed, and its buffer offset; the bytes
 *  each group's buffers need on this rank in need[ngroups] (replay_issue.c).  0, or -1 when
 *  out of memory. */
int cp_replay_schedule(const cp_plugin_t *p, rop_t *o, size_t n, size_t *need, size_t ngroups);
/** The replays: every op of o[n], iters times; times[op * iters + it], issues[] alike (its
 *  issue, from this rank's exit of the barrier that starts the replay), exposed[] alike (its
 *  time in its own calls: post, run, wait; the rest of a posted op's flight overlapped
 *  whatever the rank did meanwhile), overl[] alike (its flight, the start of its issue to the
 *  end of the call that completed it, less its exposed time: 0 for an op run at once),
 *  whole[it]; fly: scratch of n + 1.  --gaps: each op
 *  issued at its target (replay_gaps.h). */
void cp_replay_loop(cp_plugin_t *p, rop_t *o, size_t n, cp_rgroup_t *g, int iters, double tmo,
                    double *times, double *issues, double *exposed, double *overl, double *whole,
                    int rank, size_t *fly);
/** --gaps compute: the plugin's device work set up on each context of g[ng] this rank holds,
 *  before the replays (its compute slot, where it has one; replay_issue.c). */
void cp_replay_compute_setup(cp_plugin_t *p, cp_rgroup_t *g, size_t ng);
/** An upper bound of the bytes of op r's buffers, the same on every rank (replay.c). */
size_t cp_replay_bound_bytes(const cp_trace_t *t, const collprof_trace_op_row_t *r);
/** Per group g, the most bytes of rank's ops in flight at once in its buffers, in the order
 *  of the replay (nccl_order: --replay-order nccl), a collective posted where post (its
 *  collprof_op_t's bit) has it, a send or recv always, into peak[g] (ngroups, zeroed):
 *  replay_fly.c.  0, or -1 out of memory. */
int cp_replay_fly_peak(const cp_trace_t *t, int rank, int nccl_order, uint32_t post,
                       uint64_t *peak);

#endif /* COLLPROF_RUNNER_REPLAY_INT_H */
