/*
 * collprof --replay (docs/replay.md): every process group of a trace as a context of its
 * members on one backend (the whole job's own context for a group of every rank, else a
 * group context as --split starts them, COLLPROF_BACKEND_GROUPS), then this rank's ops in
 * their recorded order, back to back, each filled and checked exactly as a matrix cell.
 */
#ifndef COLLPROF_RUNNER_REPLAY_H
#define COLLPROF_RUNNER_REPLAY_H

#include "boot/boot.h"
#include "plugin/loader.h"
#include "runner/policy.h"
#include "schema/trace_read.h"

#include <collprof/plugin.h>
#include <collprof/schema.h>

/** One group's context on this rank (replay_groups.c). */
typedef struct cp_rgroup {
    int *ranks;    /**< its members as job ranks, ascending */
    int n, me;     /**< members, this rank's index (-1: not a member) */
    void *ctx;     /**< the context (NULL: none on this rank) */
    int own;       /**< ctx is a group context of ours (finalize it) */
    void *buf[2];  /**< send, receive buffers of bytes each, from ctx */
    void *hbuf[2]; /**< their host copies where the buffers are the backend's (staged), else NULL */
    int memtype;   /**< the buffers' memory (cp_replay_memtype) */
    size_t bytes;
    char err[256];        /**< why it has no context, else "" */
    collprof_host_t host; /**< its group context's host (valid until it is finalized) */
} cp_rgroup_t;

/** Collective over the job: the contexts of every group of t on plugin p (members alone get
 *  one); a group that cannot start leaves its err, agreed on every rank. */
cp_rgroup_t *cp_replay_groups_start(cp_plugin_t *p, const cp_trace_t *t, const cp_boot_t *b,
                                    const collprof_host_t *world);
/** Collective over the job: free the buffers, finalize the group contexts. */
void cp_replay_groups_stop(cp_plugin_t *p, cp_rgroup_t *g, size_t ngroups);
/** Make group g's out-of-band functions the current ones (before any call on its context). */
void cp_replay_groups_use(cp_rgroup_t *g, size_t gi);

/** The memory a replay on p fills and checks its ops in: host memory where p takes it, else
 *  the device's (then through host copies, mem_copy, as a matrix cell on device memory). */
int cp_replay_memtype(const cp_plugin_t *p);

/** Collective over the job: replay t iters times on p with variant (NULL or "default": the
 *  library's own choice; else made current on every context for each op that offers it, the
 *  rows' backend then "NAME/VARIANT"), each replay within tmo seconds (the watchdog's; 0:
 *  none); this rank's op rows in *rows (*nrows, malloc'ed, in seq order) and the p50 of the
 *  sum of its ops' times per replay in *whole_us.  0, or -1 when out of memory. */
int cp_replay_run(cp_plugin_t *p, const char *variant, const cp_trace_t *t, const cp_boot_t *b,
                  const collprof_host_t *world, int iters, double tmo, collprof_replay_row_t **rows,
                  size_t *nrows, double *whole_us);

/** --check for the replays to come (docs/replay.md): every replay's ops filled before and
 *  checked after, the last one's (last), replays K, 2K, ... and the last (sample:K), or none.
 *  Before cp_replay_run; the default is last. */
void cp_replay_check_set(cp_check_t mode, int k);

/** The ops p can post: its caps' post_ops where it has post() and wait(), else 0. */
uint32_t cp_replay_post_mask(const cp_plugin_t *p);
/** The order of the replays to come and of the check before them (replay_order.c): order
 *  (nccl, program; "": nccl for a trace imported from NCCL, else program), the check told
 *  what every plugin ps[i] with used[i] set (used NULL: every one) can post.  Its name. */
const char *cp_replay_order_setup(const char *order, const cp_trace_t *t, const cp_plugin_t *ps,
                                  int np, const unsigned char *used);

/** For the memory guard: the bytes rank holds to replay its ops of t iters times (per op its
 *  trace row, prepared op, row, times and --gaps figures; each group's two buffers at its
 *  largest op's size, more where async ops overlap). */
uint64_t cp_replay_rank_bytes(const cp_trace_t *t, int rank, int iters);

/** Do the splits of alltoallv op r agree with those of the same op (the k-th alltoallv of the
 *  group) on every other member (replay_match.c)?  1, else 0 and why. */
int cp_replay_splits_agree(const cp_trace_t *t, const collprof_trace_op_row_t *r, char *why,
                           size_t len);
/** The per-rank blocks of variable op r (allgatherv, gatherv: what each member sends;
 *  scatterv, reducescatter: what each receives), in trace group-rank order into blk[group
 *  size], each from its member's own record of the same op (the k-th of the group).  1, else 0
 *  and why (a member without it; no counts recorded). */
int cp_replay_blocks(const cp_trace_t *t, const collprof_trace_op_row_t *r, uint64_t *blk,
                     char *why, size_t len);
void cp_replay_match_free(void);

/** collprof --replay --shrink: fold t, recorded on more ranks, onto n (replay_shrink.c,
 *  docs/replay.md).  0, or -1 when out of memory. */
int cp_trace_shrink(cp_trace_t *t, int n);

#endif /* COLLPROF_RUNNER_REPLAY_H */
