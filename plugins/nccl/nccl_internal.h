/*
 * Private header of the NCCL backend: the context, the communicator cache,
 * the buffer records and what the files of the plugin call in each other.
 * Every file of the plugin includes this header and no other's.
 *
 *   nccl_backend.c  entry struct, options, building the plan and query, init/finalize, describe,
 *                   split (a replay's process group: ncclCommSplit)
 *   nccl_compute.c  compute(): the gaps of collprof --replay --gaps compute on the device (a busy
 *                   PTX kernel, or device-to-device copies where it does not load)
 *   nccl_variant.c  select_variant(): what applies, the forced-algorithm probe
 *   nccl_run.c      run(), run_batch() and post(): what is not timed (staging space,
 *                   registration, graph capture), the launches, the timings
 *   nccl_post.c     posted operations (post/wait/group, collprof --replay): the requests,
 *                   the sends and recvs (and a coalesced call's collectives) held and
 *                   launched as one group, the wait for one
 *   nccl_issue.c    one operation's NCCL calls on the stream (staging, send/recv groups)
 *   nccl_mem.c      memory: the mem_* slots and the buffer records; the device copy rate
 *   nccl_wait.c     the CUDA events and the wait for them under the per-operation timeout
 *   nccl_comm.c     communicators: the cache (LRU), creation under a variant's environment,
 *                   settling non-blocking calls, abort; the graphs and registrations per slot
 *   nccl_util.c     the plan (nb_plan), errors, the clock, the timeout, the nap between polls
 *   nccl_plan.c     what needs no GPU: the variant table, the environment, versions,
 *                   status and dtype maps (nccl_plan.h; tests/unit/test_nccl_plan.t)
 *   nccl_p2p.c      the grouped send/recv schedules, no GPU needed either (the same)
 *
 * Calls go down only, top to bottom: nccl_backend > nccl_compute > nccl_variant > nccl_run >
 * nccl_post > nccl_issue > nccl_mem > nccl_wait > nccl_comm > nccl_util > nccl_plan > nccl_p2p.
 */
#ifndef CP_NCCL_INTERNAL_H
#define CP_NCCL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <collprof/plugin_util.h>

#include "nccl_plan.h"

#define NB_ERR_LEN        768
#define NB_MAX_COMMS      16
#define NB_GRAPHS         8
#define NB_PROBE_PER_RANK 256

/* why a selected variant's communicator went away (nb_ctx_t.lost) */
enum { NB_EVICTED = 1, NB_ABORTED = 2 };

typedef struct nb_comm {
    int live;
    char key[CP_NCCL_KEY_LEN];
    const char *vname; /* the variant that created it (for messages) */
    ncclComm_t comm;
    int broken; /* an NCCL call on it failed: aborted and dropped at the next chance */
    unsigned long used;
} nb_comm_t;

typedef struct nb_buf {
    struct nb_buf *next;
    char *ptr;
    size_t bytes;
    int nccl_mem;            /* from ncclMemAlloc (else cudaMalloc) */
    void *reg[NB_MAX_COMMS]; /* ncclCommRegister handle per communicator slot */
} nb_buf_t;

typedef struct nb_graph {
    int valid;
    int slot;
    const cp_nccl_variant_t *v;
    collprof_args_t a;
    cudaGraphExec_t exec;
    unsigned long used;
} nb_graph_t;

typedef struct nb_ctx {
    const collprof_host_t *host;
    int rank, n, dev, max_comms;
    int blocking;  /* communicators are created blocking (the default) */
    int spin;      /* operations are running: poll without sleeping */
    int alloc_reg; /* the cell selected registers its buffers: ncclMemAlloc them */
    double timeout_s;
    cudaStream_t stream;
    cudaStream_t cstream; /* mem_copy's: never waits for the operations in flight on stream */
    cudaEvent_t *ev;
    int nev;
    char *scratch; /* zeroed: barrier element and variant probes */
    size_t scratch_bytes;
    nb_buf_t stage; /* staging copy for in-place alltoall(v) and sendrecv */
    nb_comm_t comms[NB_MAX_COMMS];
    unsigned long tick;
    const cp_nccl_variant_t *cur_v[COLLPROF_OP_COUNT];
    int cur_slot[COLLPROF_OP_COUNT];
    int lost[COLLPROF_OP_COUNT]; /* its communicator went away: NB_EVICTED or NB_ABORTED */
    nb_buf_t *bufs;
    nb_graph_t graphs[NB_GRAPHS];
    cp_nccl_xfer_t *xf; /* [2n] */
    /* forced algorithm probes, agreed by all ranks: 0 not yet, 1 usable, 2 refused */
    unsigned char probed[CP_NCCL_MAX_VARS][COLLPROF_OP_COUNT];
    char err[NB_ERR_LEN];
} nb_ctx_t;

/* a posted operation (nccl_post.c): a collective launched at post, a send or recv held until
 * the next call that is not one (and every op of a coalesced call until its end); complete
 * when its event is.  v: a collective's variant while it is held, else NULL */
typedef struct nb_req {
    struct nb_req *next; /* the held list */
    nb_ctx_t *ctx;
    collprof_args_t a;
    const cp_nccl_variant_t *v;
    int slot;
    int launched;
    int rc; /* its launch failed: the status, err the message */
    cudaEvent_t ev;
    char err[NB_ERR_LEN];
} nb_req_t;

/* state shared by the files of the plugin (nccl_util.c) */
extern cp_nccl_plan_t nb_plan; /* the variant table, built once (query or init) */
extern char nb_global_err[NB_ERR_LEN];

/* nccl_util.c */
__attribute__((format(printf, 2, 3))) void nb_set_error(nb_ctx_t *ctx, const char *fmt, ...);
int nb_cuda_fail(nb_ctx_t *ctx, const char *call, cudaError_t e);
int nb_nccl_fail(nb_ctx_t *ctx, ncclComm_t comm, const char *call, ncclResult_t r);
double nb_now(void);
void nb_read_timeout(nb_ctx_t *ctx);
void nb_nap(const nb_ctx_t *ctx, unsigned *spins);

/* nccl_comm.c */
void nb_graph_drop(nb_graph_t *g);
void nb_graphs_drop(nb_ctx_t *ctx, int slot);
void nb_abort_slot(nb_ctx_t *ctx, int slot);
int nb_drop_broken(nb_ctx_t *ctx);
int nb_settle(nb_ctx_t *ctx, int slot, ncclComm_t comm, ncclResult_t r, const char *what);
void nb_destroy_slot(nb_ctx_t *ctx, int slot);
int nb_agree_all(nb_ctx_t *ctx, int rc, const char *why);
int nb_slot_for(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int *slot);

/* nccl_issue.c */
size_t nb_stage_bytes(nb_ctx_t *ctx, const cp_nccl_variant_t *v, const collprof_args_t *a);
int nb_issue(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot, const collprof_args_t *a);

/* nccl_wait.c */
int nb_events(nb_ctx_t *ctx, int need);
int nb_wait(nb_ctx_t *ctx, int slot, const collprof_args_t *a, int nev);
int nb_wait_event(nb_ctx_t *ctx, int slot, const collprof_args_t *a, cudaEvent_t ev);

/* nccl_post.c */
nb_req_t *nb_req_new(nb_ctx_t *ctx, const collprof_args_t *a, int slot);
void nb_req_free(nb_req_t *r);
int nb_hold_p2p(nb_ctx_t *ctx, const collprof_args_t *a, void **req);
int nb_grouping(void);
void nb_hold(nb_req_t *r);
int nb_group(void *vctx, int begin);
int nb_launch_held(void);
void nb_drop_held(nb_ctx_t *ctx);
int nb_req_wait(void *vctx, void *vreq);

/* nccl_run.c */
int nb_run(void *vctx, const collprof_args_t *ia);
int nb_run_batch(void *vctx, const collprof_args_t *a, int iters, double *times_us);
uint32_t nb_post_ops(void);
int nb_post(void *vctx, const collprof_args_t *a, void **req);

/* nccl_compute.c */
int nb_compute(void *vctx, double us, const char **how);
/* more 1: a context made, 0: one gone; the last one gone frees the compute's device state */
void nb_compute_hold(int more);

/* nccl_variant.c */
int nb_select_variant(void *vctx, collprof_op_t iop, const char *name);

/* nccl_mem.c */
nb_buf_t *nb_find_buf(nb_ctx_t *ctx, const void *p);
int nb_buf_free(nb_ctx_t *ctx, nb_buf_t *b);
int nb_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr);
int nb_mem_free(void *vctx, int memtype, void *ptr);
int nb_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes, int to_device);
int nb_copy_rate(void *vctx, int memtype, size_t bytes, double *gbs);

#endif /* CP_NCCL_INTERNAL_H */
