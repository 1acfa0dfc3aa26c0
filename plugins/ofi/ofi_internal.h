/*
 * Private header of the libfabric (OFI) backend: the context, the buffer
 * registrations and what the files of the plugin call in each other.
 *
 *   ofi_backend.c   entry struct, query, variants, describe
 *   ofi_fabric.c    init/finalize: options, fabric, endpoints, address exchange
 *   ofi_provider.c  providers: hints, usable entries, link rate, a context's provider and device
 *   ofi_post.c      post(), wait() and run(): a context's worker thread, started by the first
 *                   post, that runs its posted collectives in the order posted and progresses
 *                   its sends and recvs; the mem_* slots pause it
 *   ofi_ops.c       the blocking run(): one schedule of RMA writes per operation
 *   ofi_nb.c        run() of the non-blocking ops: posted, overlap(), finished in the wait
 *   ofi_reduce.c    host reductions and the reduce-scatter phase
 *   ofi_progress.c  completions, waiting, posting writes and control messages
 *   ofi_p2p.c       the posted sends and recvs (tagged messages) and the worker's queue
 *   ofi_mr.c        memory: allocation, registration (host, CUDA, dma-buf), mem_* slots; a
 *                   run()'s buffers looked up in the registrations (ofi_call_init)
 *   ofi_util.c      errors, the clock, the GPU count
 *
 * Calls go down only, top to bottom: ofi_backend > ofi_fabric > ofi_provider > ofi_post >
 * ofi_ops > ofi_nb > ofi_reduce > ofi_progress > ofi_p2p > ofi_mr > ofi_util.
 */
#ifndef CP_OFI_INTERNAL_H
#define CP_OFI_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <collprof/plugin_util.h>

#define OFI_ERR_LEN            768
#define OFI_MAX_CH             64 /* collprof --ofi-channels checks 1..64 too */
#define OFI_ADDR_MAX           256
#define OFI_DEF_CH             4
#define OFI_CHUNK_MAX          ((size_t)1 << 30)
#define OFI_WAIT_LIMIT_S       120.0
#define OFI_CQ_BATCH           32
#define OFI_SPINS_BEFORE_YIELD 64
#define OFI_IDLE_SLEEP_US      20 /* -B ofi-yield=sleep */

/* completion kinds carried in the immediate data */
enum { K_READY = 1, K_DATA = 2, K_DATA2 = 3, K_BARRIER = 4, K_NKINDS = 5 };

/* channel modes (variants); M_DIRECT: plain writes (no remote CQ data), which shm's CMA
 * performs inside fi_write, then one notification per block once they completed */
enum { M_SINGLE = 0, M_MULTI = 1, M_RR = 2, M_DIRECT = 3 };

/* what the backend offers (query) */
#define OFI_VOPS                                                                                   \
    (COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_ALLGATHER) |                   \
     COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER) | COLLPROF_BIT(COLLPROF_OP_ALLTOALL) |                \
     COLLPROF_BIT(COLLPROF_OP_ALLTOALLV) | COLLPROF_BIT(COLLPROF_OP_BROADCAST) |                   \
     COLLPROF_BIT(COLLPROF_OP_REDUCE) | COLLPROF_BIT(COLLPROF_OP_GATHER) |                         \
     COLLPROF_BIT(COLLPROF_OP_SCATTER) | COLLPROF_BIT(COLLPROF_OP_SENDRECV) |                      \
     COLLPROF_BIT(COLLPROF_OP_ALLGATHERV) | COLLPROF_BIT(COLLPROF_OP_GATHERV) |                    \
     COLLPROF_BIT(COLLPROF_OP_SCATTERV))
#define OFI_DTYPES                                                                                 \
    (COLLPROF_BIT(COLLPROF_DTYPE_INT8) | COLLPROF_BIT(COLLPROF_DTYPE_UINT8) |                      \
     COLLPROF_BIT(COLLPROF_DTYPE_INT32) | COLLPROF_BIT(COLLPROF_DTYPE_UINT32) |                    \
     COLLPROF_BIT(COLLPROF_DTYPE_INT64) | COLLPROF_BIT(COLLPROF_DTYPE_UINT64) |                    \
     COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32) | COLLPROF_BIT(COLLPROF_DTYPE_FLOAT64))
/* the non-blocking ops (ofi_nb.c); the variants apply to them too */
#define OFI_NBOPS                                                                                  \
    (COLLPROF_BIT(COLLPROF_OP_IALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_IALLGATHER) |                 \
     COLLPROF_BIT(COLLPROF_OP_IALLTOALL) | COLLPROF_BIT(COLLPROF_OP_IBROADCAST))

/* remote view of one peer's buffer and of its companion scratch */
typedef struct ofi_rbuf {
    uint64_t addr, key;   /* address to use in fi_write (0-based unless FI_MR_VIRT_ADDR) */
    uint64_t saddr, skey; /* companion scratch */
} ofi_rbuf_t;

typedef struct ofi_buf {
    struct ofi_buf *next;
    char *base;
    size_t len;
    char *scr;
    size_t scrlen;
    struct fid_mr *mr, *smr;
    void *desc, *sdesc;
    ofi_rbuf_t *peer; /* [nranks] */
    int dev;          /* base and scr are device memory */
} ofi_buf_t;

/* one write (or a striped set of writes) to post in a run */
typedef struct ofi_send {
    int peer;
    int kind;
    int need_ready; /* wait for the peer's READY of this call first */
    int to_scratch; /* target: the peer's companion scratch, else its buffer */
    const char *src;
    void *desc;
    size_t len;
    uint64_t roff;
    int posted;
    int notify; /* M_DIRECT, posted with ofi_post_deferred: its notification is still due */
} ofi_send_t;

/*
 * A posted op (post(), ofi_post.c): a send or a recv, tagged messages of up to ctx->chunk
 * bytes each (ofi_p2p.c), or a collective, which the context's worker runs.
 */
typedef struct ofi_req {
    struct ofi_req *next;
    int coll;
    collprof_args_t a; /* a collective's arguments */
    int send, peer, ch;
    char *buf;
    void *desc;
    size_t len;
    uint64_t src, seq;           /* the first message's tag: src << OFI_TAG_SEQ_BITS | seq */
    int nchunks, nposted, ndone; /* the worker's */
    int done, rc, orphan;        /* under the queue's mutex (orphan: its wait gave up) */
    int cancelled;               /* the worker's: orphan, its messages cancelled (fi_cancel) */
    char err[OFI_ERR_LEN];
} ofi_req_t;

#define OFI_TAG_SEQ_BITS 40

/* A context's worker and its queue (ofi_post.c, ofi_p2p.c). */
typedef struct ofi_post {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;            /* to the worker: work, hold, stop */
    pthread_cond_t done;          /* from the worker: a request finished, it went to sleep */
    ofi_req_t *in_head, *in_tail; /* posted, not yet taken by the worker (mu) */
    int inbox;                    /* atomic: in_head != NULL */
    int cancel;                   /* atomic: a wait gave up on a send or recv (orphan) */
    int hold, asleep, stop;       /* mu */
    int empty;                    /* mu: asleep with nothing in flight */
    ofi_req_t *p2p;               /* the worker's: sends and recvs in flight */
    ofi_req_t *coll, *coll_tail;  /* the worker's: collectives to run, in the order posted */
    uint64_t *sseq, *rseq;        /* the posting thread's: [n] the next message per peer */
} ofi_post_t;

typedef struct ofi_ctx {
    const collprof_host_t *host;
    int rank, n, nch;
    char prov[64];
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    /* endpoints: nch data channels, then one control channel (index nch) that carries only
     * READY, BARRIER and the direct variant's notifications: shm holds the target region's
     * spinlock for a whole fast-path (CMA) write, so control messages that shared a region
     * with bulk data spun behind it, for a time slice when the writer was preempted */
    struct fid_ep *ep[OFI_MAX_CH + 1];
    struct fid_cq *cq[OFI_MAX_CH + 1];
    int nep;         /* nch + 1 */
    fi_addr_t *addr; /* [n * nep] */
    uint64_t mr_mode;
    int virt;
    uint64_t next_key;
    size_t chunk; /* largest single write */
    size_t inject;
    /* control area: [0, n) READY payload slots written by peers, [n, 2n) our sources,
     * [2n, 3n) where the peers' data notifications (M_DIRECT) land */
    uint64_t *ctrl;
    struct fid_mr *ctrl_mr;
    void *ctrl_desc;
    uint64_t *peer_ctrl_addr, *peer_ctrl_key;
    /* completion accounting */
    uint64_t *cnt[K_NKINDS], *used[K_NKINDS];
    uint64_t tx_posted, tx_done;
    uint64_t direct_flags; /* fi_writemsg flags of M_DIRECT data writes */
    unsigned idle;         /* empty progress rounds in a row */
    int yield_idle;        /* sched_yield while idle (-B ofi-yield); 2: and sleep */
    double wait_limit_s;   /* a wait gives up after it: "timeout", else OFI_WAIT_LIMIT_S */
    char *got_ready;       /* [n] this call */
    uint64_t *rpayload;    /* [n] READY payload of this call */
    ofi_send_t *sends;     /* [2n + 2] */
    int mode[COLLPROF_OP_COUNT];
    ofi_buf_t *bufs;
    int hmem;     /* the provider took FI_HMEM: device buffers can be registered */
    int cuda_dev; /* this rank's CUDA device */
    int dmabuf;   /* still worth trying dma-buf registration */
    int cur_dev;  /* the current run() is on device memory */
    /* where the current run()'s recvbuf lies in its registration: every READY carries it, and
     * a write into a peer's buffer (not its scratch) lands that far into the peer's (the
     * buffers of ops in flight together, or rotated, need not be at the start) */
    uint64_t here;
    int copy_err;     /* a cudaMemcpy in the current run() failed */
    int tagged;       /* the provider took FI_TAGGED: sends and recvs can be posted */
    ofi_post_t *post; /* the worker, from the first post() on (NULL: none) */
    char err[OFI_ERR_LEN];
    char werr[OFI_ERR_LEN]; /* the worker thread's errors */
} ofi_ctx_t;

/* one run(): the arguments resolved against the registrations (ofi_call_init, ofi_mr.c) */
typedef struct ofi_call {
    const collprof_args_t *a;
    ofi_buf_t *rb;        /* registration of recvbuf */
    char *recv;           /* a->recvbuf */
    const char *send;     /* the input: sendbuf, or recvbuf in place */
    void *sdesc;          /* its descriptor (NULL for a broadcast's unused sendbuf) */
    size_t esz, blk, all; /* element size; count/n and count elements, in bytes */
    int n, me, mode;
    int ns; /* a non-blocking op: the sends its post set up (ofi_nb.c) */
} ofi_call_t;

/* the address of peer's endpoint ch (ch == nch: its control endpoint) */
static inline fi_addr_t ofi_peer_addr(const ofi_ctx_t *ctx, int peer, int ch)
{
    return ctx->addr[(size_t)peer * (size_t)ctx->nep + (size_t)ch];
}

/* state shared by the files of the plugin (ofi_util.c) */
extern char ofi_global_err[OFI_ERR_LEN];

/* Bytes per element of a dtype the backend supports, else 0. */
static inline size_t ofi_dtsize(collprof_dtype_t dt)
{
    return (unsigned)dt < COLLPROF_DTYPE_COUNT && (OFI_DTYPES & COLLPROF_BIT(dt))
               ? collprof_dtype_size(dt)
               : 0;
}

/* ofi_util.c */
__attribute__((format(printf, 2, 3))) void ofi_set_error(ofi_ctx_t *ctx, const char *fmt, ...);
int ofi_fail(ofi_ctx_t *ctx, const char *call, long rc);
double ofi_now(void);
/* The calling thread is a context's worker: ofi_set_error writes ctx->werr there. */
void ofi_mark_worker(void);
int ofi_gpu_count(void);

/* ofi_fabric.c */
struct fi_info *ofi_hints(const char *prov);
int ofi_usable(const struct fi_info *i);
double ofi_info_link_gbps(const struct fi_info *i);
double ofi_default_link_gbps(void);
/* The provider (ctx->prov, else the first usable) and the device of a context: a collprof
 * status (ofi_provider.c). */
int ofi_pick_provider(ofi_ctx_t *ctx);
int ofi_pick_device(ofi_ctx_t *ctx);
int ofi_init(const collprof_host_t *host, void **out);
int ofi_finalize(void *vctx);

/* ofi_mr.c */
ofi_buf_t *ofi_find(ofi_ctx_t *ctx, const void *p);
int ofi_reg(ofi_ctx_t *ctx, void *p, size_t len, int dev, struct fid_mr **mr, void **desc);
void ofi_buf_free(ofi_buf_t *b);
void ofi_copy(ofi_ctx_t *ctx, void *dst, const void *src, size_t len);
int ofi_mr_alloc(ofi_ctx_t *ctx, int memtype, size_t bytes, void **ptr);
int ofi_mr_free(ofi_ctx_t *ctx, int memtype, void *ptr);
int ofi_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes, int to_device);
int ofi_call_init(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_call_t *c);

/* ofi_p2p.c: the worker's queue (called on the worker thread, but ofi_p2p_finish) */
void ofi_p2p_poll(ofi_ctx_t *ctx);
void ofi_p2p_done(ofi_ctx_t *ctx, void *op_context, int failed, const char *why);
void ofi_p2p_finish(ofi_ctx_t *ctx, ofi_req_t *r);
void ofi_p2p_fail_all(ofi_ctx_t *ctx, int rc, const char *why);

/* The most ranks a context connects to all its peers at set-up (ofi_connect_all): two
 * connections per peer (a data channel, the control endpoint) */
#define OFI_CONNECT_ALL_MAX 64

/* ofi_progress.c */
int ofi_progress(ofi_ctx_t *ctx);
int ofi_wait_from(ofi_ctx_t *ctx, int kind, int peer, uint64_t need);
int ofi_wait_tx(ofi_ctx_t *ctx);
int ofi_signal(ofi_ctx_t *ctx, int peer, int kind, uint64_t payload);
int ofi_connect_all(ofi_ctx_t *ctx);
ofi_send_t *ofi_add(ofi_ctx_t *ctx, int *ns, int peer, int kind, const void *src, void *desc,
                    size_t len, uint64_t roff);
int ofi_post_all(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns);
int ofi_expect(ofi_ctx_t *ctx, int mode, int kind, int peer, size_t len);
int ofi_ready_all(ofi_ctx_t *ctx, const int *only, uint64_t payload);
int ofi_post_deferred(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns);
int ofi_notify_deferred(ofi_ctx_t *ctx, int ns, int wait);

/* ofi_reduce.c */
void ofi_split(size_t count, int n, int r, size_t *off, size_t *len);
int ofi_reduce_slots(ofi_ctx_t *ctx, const collprof_args_t *a, const char *scr, size_t len,
                     size_t esz, char *out);
int ofi_rs_phase(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_buf_t *rb, const char *in,
                 void *indesc, int even, char *out, int mode);

/* ofi_ops.c: run() on the calling thread */
int ofi_run_now(ofi_ctx_t *ctx, const collprof_args_t *a);

/* ofi_nb.c */
int ofi_run_nb(ofi_ctx_t *ctx, const collprof_args_t *a);

/* ofi_post.c */
int ofi_post(void *vctx, const collprof_args_t *a, void **req);
int ofi_wait(void *vctx, void *req);
int ofi_run(void *vctx, const collprof_args_t *a);
int ofi_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr);
int ofi_mem_free(void *vctx, int memtype, void *ptr);
/* Hold the worker asleep (hold 1) until hold 0: the caller uses the fabric meanwhile. */
void ofi_post_hold(ofi_ctx_t *ctx, int hold);
void ofi_post_stop(ofi_ctx_t *ctx);

#endif /* CP_OFI_INTERNAL_H */
