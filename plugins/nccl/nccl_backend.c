#include "config.h"

/*
 * collprof backend for NCCL on CUDA device buffers.
 *
 * Communicators: every variant runs on a communicator created with its
 * setting in force (NCCL_ALGO / NCCL_PROTO, or NCCLX's CTran variables):
 * the plugin sets those variables around ncclCommInitRankConfig, keeps
 * them until the (non-blocking) initialisation has finished, then restores
 * the previous values.  Communicators are cached by that environment, so
 * "ring-ll", "ring-ll+reg" and "ring-ll+graph" share one; at most
 * -B nccl-max-comms=N (default 4) live at once, the least recently used is
 * finalised first.  Every communicator gets a fresh ncclUniqueId from rank
 * 0 through host->oob_bcast.  select_variant is called collectively and in
 * the same order on every rank, so creation and eviction stay in step.
 *
 * Communicators are blocking by default, as nccl-tests times them: on a
 * non-blocking one NCCL 2.28 hands every collective to a thread of its own,
 * which the timing would include.  -B nccl-blocking=0 makes them
 * non-blocking (initialisation and connection set-up can then be aborted on
 * a timeout too); every call that returns ncclInProgress is then polled
 * with ncclCommGetAsyncError.  Completion on the stream is polled with
 * cudaEventQuery under the per-operation timeout (host option "timeout",
 * seconds, read for every cell; 300 without one), never with a sleep while
 * a batch is timed.  On an asynchronous error or a timeout the
 * communicator is aborted (ncclCommAbort, after its CUDA graphs are
 * destroyed) and the call fails with a message naming the operation and
 * the time waited; a communicator that saw any NCCL error is aborted and
 * dropped from the cache, so the next cell starts on a fresh one.
 *
 * Timing (COLLPROF_BACKEND_DEVICE_TIMER): run_batch records a CUDA event
 * before the first operation and after each one, with no host
 * synchronisation in between, then waits once; iteration i lasts
 * cudaEventElapsedTime(ev[i], ev[i+1]).  Staging, buffer registration and
 * graph capture happen before the first event.  Each batch is an NVTX
 * range "collprof nccl/<variant> <op> <dtype> count=<n>".
 *
 * The buffer layouts follow <collprof/plugin.h>; where NCCL's in-place
 * convention differs, the plugin adapts on the stream (in-place
 * reducescatter runs NCCL's in-place form, whose result is at
 * rank*count/n, then copies it to offset 0; in-place alltoall, alltoallv
 * and sendrecv send from a staged copy of the buffer), and that copy is
 * part of the timed operation.
 */

#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <collprof/plugin_util.h>

#include "nccl_plan.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NB_ERR_LEN          768
#define NB_MAX_COMMS        16
#define NB_DEF_COMMS        4
#define NB_GRAPHS           8
#define NB_DEF_TIMEOUT_S    300.0
#define NB_PROBE_PER_RANK   256
#define NB_SPINS_BEFORE_NAP 64
#define NB_REFUSAL          "no algorithm/protocol available"
#define NB_LIBVERSION_FIT   128 /* the schema's library_version column */

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

static cp_nccl_plan_t nb_plan;
static int nb_plan_ready;
static char nb_libversion[512];
static char nb_global_err[NB_ERR_LEN];

static COLLPROF_DEFINE_SET_ERROR(nb_set_error, nb_ctx_t, err, nb_global_err);

static int nb_cuda_fail(nb_ctx_t *ctx, const char *call, cudaError_t e)
{
    nb_set_error(ctx, "%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
    return cp_nccl_cuda_status((int)e);
}

static int nb_nccl_fail(nb_ctx_t *ctx, ncclComm_t comm, const char *call, ncclResult_t r)
{
    const char *last = comm != NULL ? ncclGetLastError(comm) : NULL;
    for (int s = 0; comm != NULL && s < NB_MAX_COMMS; s++) {
        if (ctx != NULL && ctx->comms[s].live && ctx->comms[s].comm == comm) {
            ctx->comms[s].broken = 1; /* its errors may stick: never reused (B5) */
        }
    }
    nb_set_error(ctx, "%s failed: %s%s%s", call, ncclGetErrorString(r), last && last[0] ? ": " : "",
                 last ? last : "");
    return cp_nccl_status((int)r);
}

static double nb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The per-operation timeout: -B timeout=S, else what the core answers for
 * the running cell (its watchdog's limit plus a margin), read again for
 * every cell; NB_DEF_TIMEOUT_S when there is none.
 */
static void nb_read_timeout(nb_ctx_t *ctx)
{
    const char *tmo = ctx->host->get_option ? ctx->host->get_option("timeout") : NULL;
    char *end = NULL;
    double t = tmo != NULL ? strtod(tmo, &end) : 0.0;
    ctx->timeout_s = end != tmo && end != NULL && *end == '\0' && t > 0 ? t : NB_DEF_TIMEOUT_S;
}

/* between two polls: a short sleep after a while, except while a batch is timed */
static void nb_nap(const nb_ctx_t *ctx, unsigned *spins)
{
    if (!ctx->spin && ++*spins > NB_SPINS_BEFORE_NAP) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

/* ---- plan and query ------------------------------------------------------- */

static int nb_has_symbol(const char *sym, void *handle)
{
    return handle != NULL && dlsym(handle, sym) != NULL;
}

static void nb_prepare_plan(void)
{
    unsigned f = 0;
    int ncclx = 0, code = 0, cudart = 0;
    Dl_info info;
    const char *lib = NULL;
    if (nb_plan_ready) {
        return;
    }
#ifdef HAVE_NCCLALLTOALL
    f |= CP_NCCL_HAVE_ALLTOALL;
#endif
#ifdef HAVE_NCCLGATHER
    f |= CP_NCCL_HAVE_GATHER;
#endif
#ifdef HAVE_NCCLSCATTER
    f |= CP_NCCL_HAVE_SCATTER;
#endif
#ifdef HAVE_NCCLCOMMREGISTER
    f |= CP_NCCL_HAVE_REGISTER;
#endif
    /* the library that actually provides ncclGetVersion, as loaded */
    if (dladdr((void *)(uintptr_t)ncclGetVersion, &info) != 0 && info.dli_fname != NULL) {
        lib = info.dli_fname;
        void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        ncclx = cp_nccl_detect_ncclx(nb_has_symbol, h);
        if (h != NULL) {
            dlclose(h);
        }
    }
    if (ncclx) {
        f |= CP_NCCL_IS_NCCLX;
    }
    cp_nccl_plan_build(&nb_plan, f);
    char ver[32];
    if (ncclGetVersion(&code) != ncclSuccess) {
        code = 0;
    }
    cp_nccl_version_string(code, ver, sizeof(ver));
    if (cudaRuntimeGetVersion(&cudart) != cudaSuccess) {
        cudart = CUDART_VERSION;
    }
    /* which library answered: the file (whole path when it fits the schema's 128) */
    const char *base = lib != NULL && strrchr(lib, '/') ? strrchr(lib, '/') + 1 : lib;
    int len = snprintf(nb_libversion, sizeof(nb_libversion), "%s %s (CUDA runtime %d.%d) %s",
                       ncclx ? "NCCLX" : "NCCL", ver, cudart / 1000, (cudart % 1000) / 10,
                       lib != NULL ? lib : "");
    if (len >= NB_LIBVERSION_FIT) {
        snprintf(nb_libversion, sizeof(nb_libversion), "%s %s (CUDA runtime %d.%d) %s",
                 ncclx ? "NCCLX" : "NCCL", ver, cudart / 1000, (cudart % 1000) / 10, base);
    }
    nb_plan_ready = 1;
}

static int nb_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx; /* the same answer before and after init */
    int rc = collprof_check_caps(caps, nb_global_err, sizeof(nb_global_err));
    if (rc != COLLPROF_OK) { /* fields appended later are left alone */
        return rc;
    }
    nb_prepare_plan();
    caps->library_version = nb_libversion;
    caps->ops = 0;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        caps->ops |= COLLPROF_BIT(op);
    }
    caps->dtypes = 0;
    for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
        if (cp_nccl_dtype((collprof_dtype_t)t) >= 0) {
            caps->dtypes |= COLLPROF_BIT(t);
        }
    }
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM) | COLLPROF_BIT(COLLPROF_REDOP_PROD) |
                   COLLPROF_BIT(COLLPROF_REDOP_MIN) | COLLPROF_BIT(COLLPROF_REDOP_MAX);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_DEVICE);
    caps->variants = nb_plan.pub;
    caps->nvariants = nb_plan.npub;
    return COLLPROF_OK;
}

/* ---- graphs, registrations, communicators ---------------------------------- */

static void nb_graph_drop(nb_graph_t *g)
{
    if (g->valid) {
        cudaGraphExecDestroy(g->exec);
        g->valid = 0;
    }
}

static void nb_graphs_drop(nb_ctx_t *ctx, int slot)
{
    for (int i = 0; i < NB_GRAPHS; i++) {
        if (slot < 0 || ctx->graphs[i].slot == slot) {
            nb_graph_drop(&ctx->graphs[i]);
        }
    }
}

static void nb_forget_slot(nb_ctx_t *ctx, int slot, int why)
{
    nb_graphs_drop(ctx, slot);
    for (nb_buf_t *b = ctx->bufs; b != NULL; b = b->next) {
        b->reg[slot] = NULL;
    }
    ctx->stage.reg[slot] = NULL;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (ctx->cur_slot[op] == slot) {
            ctx->cur_slot[op] = -1;
            ctx->lost[op] = why;
        }
    }
    ctx->comms[slot].live = 0;
    ctx->comms[slot].broken = 0;
    ctx->comms[slot].comm = NULL;
}

/* graphs that replay NCCL kernels of the communicator go first (B11) */
static void nb_abort_slot(nb_ctx_t *ctx, int slot)
{
    if (slot >= 0 && ctx->comms[slot].live) {
        nb_graphs_drop(ctx, slot);
        ncclCommAbort(ctx->comms[slot].comm);
        nb_forget_slot(ctx, slot, NB_ABORTED);
    }
}

/*
 * Collective: every communicator an NCCL error was seen on, on any rank, is
 * aborted and forgotten everywhere (B5), so that the ranks' caches stay in
 * step and the next selection creates a fresh one together.
 */
static int nb_drop_broken(nb_ctx_t *ctx)
{
    uint32_t mine = 0, mask = 0, *all = calloc((size_t)ctx->n, sizeof(*all));
    for (int s = 0; s < NB_MAX_COMMS; s++) {
        mine |= ctx->comms[s].live && ctx->comms[s].broken ? 1u << s : 0;
    }
    if (all == NULL || ctx->host->oob_allgather(&mine, all, sizeof(mine)) != 0) {
        free(all);
        nb_set_error(ctx, "out-of-band allgather failed (communicators in error)");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    for (int q = 0; q < ctx->n; q++) {
        mask |= all[q];
    }
    free(all);
    for (int s = 0; s < NB_MAX_COMMS; s++) {
        if ((mask & (1u << s)) && ctx->comms[s].live) {
            if (ctx->host->log != NULL && ctx->rank == 0) {
                ctx->host->log(COLLPROF_LOG_INFO,
                               "nccl: communicator of %s aborted after an error; the next "
                               "selection creates a fresh one",
                               ctx->comms[s].vname);
            }
            nb_abort_slot(ctx, s);
        }
    }
    return COLLPROF_OK;
}

/*
 * Wait until a non-blocking NCCL call has finished (r == ncclInProgress) and
 * translate the outcome; aborts the communicator on a timeout.
 */
static int nb_settle(nb_ctx_t *ctx, int slot, ncclComm_t comm, ncclResult_t r, const char *what)
{
    double t0 = nb_now();
    unsigned spins = 0;
    while (r == ncclInProgress) {
        ncclResult_t st = ncclInProgress;
        if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) {
            break;
        }
        r = st;
        if (r != ncclInProgress) {
            break;
        }
        double el = nb_now() - t0;
        if (el > ctx->timeout_s) {
            for (int s = 0; slot < 0 && s < NB_MAX_COMMS; s++) {
                if (ctx->comms[s].live && ctx->comms[s].comm == comm) {
                    slot = s; /* the caller did not say, but it is a cached one */
                }
            }
            if (slot >= 0) {
                nb_abort_slot(ctx, slot); /* its graphs first, then the communicator */
            } else {
                ncclCommAbort(comm);
            }
            nb_set_error(ctx,
                         "%s did not complete within %.0f s (waited %.1f s); communicator "
                         "aborted",
                         what, ctx->timeout_s, el);
            return COLLPROF_ERR_TIMEOUT;
        }
        nb_nap(ctx, &spins);
    }
    if (r != ncclSuccess) {
        return nb_nccl_fail(ctx, comm, what, r);
    }
    return COLLPROF_OK;
}

static void nb_deregister_slot(nb_ctx_t *ctx, int slot)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    nb_buf_t *all[2] = {ctx->bufs, &ctx->stage};
    for (int k = 0; k < 2; k++) {
        for (nb_buf_t *b = all[k]; b != NULL; b = k == 0 ? b->next : NULL) {
            if (!ctx->comms[slot].live) {
                return; /* a deregistration timed out: the communicator was aborted */
            }
            if (b->reg[slot] != NULL) {
                nb_settle(ctx, slot, comm, ncclCommDeregister(comm, b->reg[slot]),
                          "ncclCommDeregister");
                b->reg[slot] = NULL;
            }
        }
    }
}

static void nb_destroy_slot(nb_ctx_t *ctx, int slot)
{
    nb_comm_t *c = &ctx->comms[slot];
    if (!c->live) {
        return;
    }
    nb_graphs_drop(ctx, slot);
    nb_deregister_slot(ctx, slot);
    if (c->live &&
        nb_settle(ctx, slot, c->comm, ncclCommFinalize(c->comm), "ncclCommFinalize") == 0) {
        ncclCommDestroy(c->comm);
    } else if (c->live) {
        ncclCommAbort(c->comm);
    }
    if (c->live) {
        nb_forget_slot(ctx, slot, NB_EVICTED);
    }
}

typedef struct nb_idmsg {
    int32_t rc;
    char why[236];
    ncclUniqueId id;
} nb_idmsg_t;

typedef struct nb_agree {
    int32_t rc;
    char why[244];
} nb_agree_t;

/* every rank's rc: 0 if all succeeded, else the first failure (message in ctx->err) */
static int nb_agree_all(nb_ctx_t *ctx, int rc, const char *why)
{
    int n = ctx->n;
    nb_agree_t mine, *all = calloc((size_t)n, sizeof(*all));
    memset(&mine, 0, sizeof(mine));
    mine.rc = rc;
    snprintf(mine.why, sizeof(mine.why), "%s", rc != 0 ? why : "");
    if (all == NULL) {
        nb_set_error(ctx, "out of memory");
        return COLLPROF_ERR_NO_MEMORY; /* the peers see an out-of-band failure */
    }
    if (ctx->host->oob_allgather(&mine, all, sizeof(mine)) != 0) {
        free(all);
        nb_set_error(ctx, "out-of-band allgather failed");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    int res = 0;
    for (int q = 0; q < n; q++) {
        if (all[q].rc != 0) {
            res = all[q].rc;
            all[q].why[sizeof(all[q].why) - 1] = '\0';
            if (q == ctx->rank) {
                nb_set_error(ctx, "%s", all[q].why);
            } else {
                nb_set_error(ctx, "rank %d: %s", q, all[q].why);
            }
            break;
        }
    }
    free(all);
    return res;
}

/* collective: a communicator for variant v in slot (env set while it is created) */
static int nb_comm_create(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot)
{
    nb_idmsg_t msg;
    int rc = COLLPROF_OK;
    char key[CP_NCCL_KEY_LEN];
    ncclComm_t comm = NULL;

    cp_nccl_variant_key(v, key, sizeof(key));
    memset(&msg, 0, sizeof(msg));
    if (ctx->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&msg.id);
        if (r != ncclSuccess) {
            msg.rc = nb_nccl_fail(ctx, NULL, "ncclGetUniqueId", r);
            snprintf(msg.why, sizeof(msg.why), "%s", ctx->err);
        }
    }
    if (ctx->host->oob_bcast(&msg, sizeof(msg), 0) != 0) {
        nb_set_error(ctx, "out-of-band broadcast of the ncclUniqueId failed");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (msg.rc != 0) {
        msg.why[sizeof(msg.why) - 1] = '\0';
        nb_set_error(ctx, "rank 0: %s", msg.why);
        return msg.rc;
    }
    cp_nccl_env_saved_t saved;
    if (cp_nccl_env_push(v, &saved) != 0) {
        nb_set_error(ctx, "cannot set the environment of variant %s", v->name);
        rc = COLLPROF_ERR_NO_MEMORY;
    } else {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = ctx->blocking;
        config.commName = v->name;
        ncclResult_t r = ncclCommInitRankConfig(&comm, ctx->n, msg.id, ctx->rank, &config);
        if (r == ncclSuccess || r == ncclInProgress) {
            char what[CP_NCCL_KEY_LEN + 64];
            snprintf(what, sizeof(what), "ncclCommInitRankConfig [%s]", key[0] ? key : "defaults");
            rc = nb_settle(ctx, -1, comm, r, what); /* the environment stays set meanwhile */
        } else {
            rc = nb_nccl_fail(ctx, comm, "ncclCommInitRankConfig", r);
            comm = NULL;
        }
        cp_nccl_env_pop(&saved);
    }
    int all = nb_agree_all(ctx, rc, ctx->err);
    if (all != 0) {
        /* a timed-out init was aborted by nb_settle already */
        if (comm != NULL && rc != COLLPROF_ERR_TIMEOUT) {
            ncclCommAbort(comm);
        }
        return all;
    }
    nb_comm_t *c = &ctx->comms[slot];
    c->live = 1;
    c->comm = comm;
    c->vname = v->name;
    c->used = ++ctx->tick;
    snprintf(c->key, sizeof(c->key), "%s", key);
    if (ctx->host->log != NULL && ctx->rank == 0) {
        ctx->host->log(COLLPROF_LOG_INFO,
                       "nccl: communicator for variant %s created with %s (NCCL_DEBUG=INFO "
                       "NCCL_DEBUG_SUBSYS=TUNING shows what NCCL picks)",
                       v->name, key[0] ? key : "the library's defaults");
    }
    return COLLPROF_OK;
}

/* collective: the slot of v's communicator, creating it (and evicting) if needed */
static int nb_slot_for(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int *slot)
{
    char key[CP_NCCL_KEY_LEN];
    int free_slot = -1, lru = -1;
    cp_nccl_variant_key(v, key, sizeof(key));
    for (int s = 0; s < ctx->max_comms; s++) {
        nb_comm_t *c = &ctx->comms[s];
        if (c->live && !strcmp(c->key, key)) {
            c->used = ++ctx->tick;
            *slot = s;
            return COLLPROF_OK;
        }
        if (!c->live && free_slot < 0) {
            free_slot = s;
        }
        if (c->live && (lru < 0 || c->used < ctx->comms[lru].used)) {
            lru = s;
        }
    }
    if (free_slot < 0) {
        if (ctx->host->log != NULL && ctx->rank == 0) {
            ctx->host->log(COLLPROF_LOG_INFO,
                           "nccl: finalising the communicator of %s (at most "
                           "%d at once, -B nccl-max-comms)",
                           ctx->comms[lru].vname, ctx->max_comms);
        }
        nb_destroy_slot(ctx, lru);
        free_slot = lru;
    }
    int rc = nb_comm_create(ctx, v, free_slot);
    if (rc == COLLPROF_OK) {
        *slot = free_slot;
    }
    return rc;
}

/* ---- issuing one operation on the stream ---------------------------------- */

static nb_buf_t *nb_find_buf(nb_ctx_t *ctx, const void *p)
{
    const char *c = p;
    for (nb_buf_t *b = ctx->bufs; b != NULL; b = b->next) {
        if (c >= b->ptr && c < b->ptr + b->bytes) {
            return b;
        }
    }
    if (ctx->stage.ptr != NULL && c >= ctx->stage.ptr && c < ctx->stage.ptr + ctx->stage.bytes) {
        return &ctx->stage;
    }
    return NULL;
}

/* bytes of staging an operation needs (its send side copied before the group) */
static size_t nb_stage_bytes(nb_ctx_t *ctx, const cp_nccl_variant_t *v, const collprof_args_t *a)
{
    size_t es = cp_nccl_dtype_size(a->dtype), stage = 0;
    if (!a->in_place) {
        return 0;
    }
    if (cp_nccl_uses_p2p(&nb_plan, v, a->op)) {
        if (cp_nccl_p2p_plan(a, ctx->rank, ctx->n, ctx->xf, &stage) < 0) {
            return 0;
        }
        return stage * es;
    }
    return a->op == COLLPROF_OP_ALLTOALL ? a->count * es : 0;
}

static int nb_issue_p2p(nb_ctx_t *ctx, ncclComm_t comm, const collprof_args_t *a, ncclDataType_t dt,
                        size_t es)
{
    size_t stage = 0;
    int nx = cp_nccl_p2p_plan(a, ctx->rank, ctx->n, ctx->xf, &stage);
    cudaError_t e;
    if (nx < 0) {
        nb_set_error(ctx, "%s: invalid arguments (root, peers or counts)", collprof_op_name(a->op));
        return COLLPROF_ERR_INVALID;
    }
    if (stage > 0) {
        e = cudaMemcpyAsync(ctx->stage.ptr, a->recvbuf, stage * es, cudaMemcpyDeviceToDevice,
                            ctx->stream);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaMemcpyAsync (staging)", e);
        }
    }
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) {
        return nb_nccl_fail(ctx, comm, "ncclGroupStart", r);
    }
    for (int i = 0; i < nx; i++) {
        const cp_nccl_xfer_t *x = &ctx->xf[i];
        char *base = x->buf == CP_NCCL_BUF_STAGE  ? ctx->stage.ptr
                     : x->buf == CP_NCCL_BUF_RECV ? (char *)a->recvbuf
                                                  : (char *)(uintptr_t)a->sendbuf;
        char *p = base + x->off * es;
        r = x->is_send ? ncclSend(p, x->count, dt, x->peer, comm, ctx->stream)
                       : ncclRecv(p, x->count, dt, x->peer, comm, ctx->stream);
        if (r != ncclSuccess && r != ncclInProgress) {
            ncclGroupEnd();
            return nb_nccl_fail(ctx, comm, x->is_send ? "ncclSend" : "ncclRecv", r);
        }
    }
    return nb_settle(ctx, -1, comm, ncclGroupEnd(), "ncclGroupEnd (send/recv)");
}

/* in place reducescatter: NCCL's result lands at rank*count/n; collprof wants it at 0 */
static int nb_issue_rs_inplace(nb_ctx_t *ctx, ncclComm_t comm, const collprof_args_t *a,
                               ncclDataType_t dt, ncclRedOp_t ro, size_t blk, size_t es)
{
    const char *call = "ncclReduceScatter";
    char *recv = a->recvbuf;
    ncclResult_t r = ncclReduceScatter(recv, recv + (size_t)ctx->rank * blk * es, blk, dt, ro, comm,
                                       ctx->stream);
    if (r == ncclInProgress) {
        int rc = nb_settle(ctx, -1, comm, r, call);
        if (rc != COLLPROF_OK) {
            return rc;
        }
        r = ncclSuccess;
    }
    if (r == ncclSuccess && ctx->rank != 0 && blk > 0) {
        cudaError_t e = cudaMemcpyAsync(recv, recv + (size_t)ctx->rank * blk * es, blk * es,
                                        cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaMemcpyAsync (in-place reducescatter)", e);
        }
    }
    return r == ncclSuccess ? COLLPROF_OK : nb_nccl_fail(ctx, comm, call, r);
}

/* the one NCCL call of a collective (*call: its name); NOT_SUPPORTED when NCCL has none */
static int nb_issue_coll(nb_ctx_t *ctx, ncclComm_t comm, const collprof_args_t *a, const char *send,
                         ncclDataType_t dt, ncclRedOp_t ro, const char **call, ncclResult_t *r)
{
    size_t es = cp_nccl_dtype_size(a->dtype), blk = a->count / (size_t)ctx->n;
    char *recv = a->recvbuf, *mine = recv + (size_t)ctx->rank * blk * es;
    switch (a->op) {
    case COLLPROF_OP_ALLREDUCE:
        *r = ncclAllReduce(send, recv, a->count, dt, ro, comm, ctx->stream);
        *call = "ncclAllReduce";
        break;
    case COLLPROF_OP_ALLGATHER:
        /* in place: this rank's block at rank*count/n, NCCL's convention too */
        *r = ncclAllGather(a->in_place ? mine : send, recv, blk, dt, comm, ctx->stream);
        *call = "ncclAllGather";
        break;
    case COLLPROF_OP_REDUCESCATTER:
        *r = ncclReduceScatter(send, recv, blk, dt, ro, comm, ctx->stream);
        *call = "ncclReduceScatter";
        break;
    case COLLPROF_OP_BROADCAST:
        *r = ncclBroadcast(recv, recv, a->count, dt, a->root, comm, ctx->stream);
        *call = "ncclBroadcast";
        break;
    case COLLPROF_OP_REDUCE:
        *r = ncclReduce(send, recv, a->count, dt, ro, a->root, comm, ctx->stream);
        *call = "ncclReduce";
        break;
#ifdef HAVE_NCCLALLTOALL
    case COLLPROF_OP_ALLTOALL:
        *r = ncclAlltoAll(send, recv, blk, dt, comm, ctx->stream);
        *call = "ncclAlltoAll";
        break;
#endif
#ifdef HAVE_NCCLGATHER
    case COLLPROF_OP_GATHER:
        /* in place: the block at rank*count/n (on the root, NCCL's in-place form) */
        *r = ncclGather(a->in_place ? mine : send, recv, blk, dt, a->root, comm, ctx->stream);
        *call = "ncclGather";
        break;
#endif
#ifdef HAVE_NCCLSCATTER
    case COLLPROF_OP_SCATTER:
        *r = ncclScatter(send, a->in_place ? mine : recv, blk, dt, a->root, comm, ctx->stream);
        *call = "ncclScatter";
        break;
#endif
    case COLLPROF_OP_BARRIER:
        *r = ncclAllReduce(ctx->scratch, ctx->scratch, 1, ncclFloat32, ncclSum, comm, ctx->stream);
        *call = "ncclAllReduce (barrier)";
        break;
    default: nb_set_error(ctx, "%s: not offered", *call); return COLLPROF_ERR_NOT_SUPPORTED;
    }
    return COLLPROF_OK;
}

/* enqueue one operation on the stream (no waiting) */
static int nb_issue(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot, const collprof_args_t *a)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    int dti = cp_nccl_dtype(a->dtype), roi = cp_nccl_redop(a->redop);
    size_t es = cp_nccl_dtype_size(a->dtype);
    const char *send = a->sendbuf;
    ncclResult_t r = ncclSuccess;
    const char *call = collprof_op_name(a->op);
    const collprof_op_info_t *oi = collprof_op_info(a->op);

    if (dti < 0 || (roi < 0 && oi != NULL && (oi->flags & COLLPROF_OPF_REDUCES))) {
        nb_set_error(ctx, "%s: dtype or reduction not offered by NCCL", call);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    ncclDataType_t dt = (ncclDataType_t)dti;
    ncclRedOp_t ro = (ncclRedOp_t)(roi < 0 ? 0 : roi);
    if (cp_nccl_uses_p2p(&nb_plan, v, a->op)) {
        return nb_issue_p2p(ctx, comm, a, dt, es);
    }
    if (a->op == COLLPROF_OP_REDUCESCATTER && a->in_place) {
        return nb_issue_rs_inplace(ctx, comm, a, dt, ro, a->count / (size_t)ctx->n, es);
    }
#ifdef HAVE_NCCLALLTOALL
    if (a->op == COLLPROF_OP_ALLTOALL && a->in_place) {
        cudaError_t e = cudaMemcpyAsync(ctx->stage.ptr, a->recvbuf, a->count * es,
                                        cudaMemcpyDeviceToDevice, ctx->stream);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaMemcpyAsync (staging)", e);
        }
        send = ctx->stage.ptr;
    }
#endif
    int rc = nb_issue_coll(ctx, comm, a, send, dt, ro, &call, &r);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    if (r == ncclInProgress) {
        return nb_settle(ctx, -1, comm, r, call);
    }
    return r == ncclSuccess ? COLLPROF_OK : nb_nccl_fail(ctx, comm, call, r);
}

static int nb_same_args(const collprof_args_t *x, const collprof_args_t *y)
{
    return x->op == y->op && x->dtype == y->dtype && x->redop == y->redop && x->root == y->root &&
           x->in_place == y->in_place && x->sendbuf == y->sendbuf && x->recvbuf == y->recvbuf &&
           x->count == y->count && x->sendcounts == y->sendcounts &&
           x->recvcounts == y->recvcounts && x->sdispls == y->sdispls && x->rdispls == y->rdispls &&
           x->peer_send == y->peer_send && x->peer_recv == y->peer_recv;
}

static int nb_events(nb_ctx_t *ctx, int need);
static int nb_wait(nb_ctx_t *ctx, int slot, const collprof_args_t *a, int nev);

/*
 * Capture the operation into a CUDA graph (once per variant, slot and
 * arguments).  With warm, the operation first runs once outside the graph,
 * so that NCCL sets up its connections before the capture (run_batch does;
 * run, the check, finds the graph its batches captured and must not run the
 * operation one extra time on fresh inputs).
 */
static int nb_graph_get(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot,
                        const collprof_args_t *a, int warm, nb_graph_t **out)
{
    nb_graph_t *victim = &ctx->graphs[0];
    for (int i = 0; i < NB_GRAPHS; i++) {
        nb_graph_t *g = &ctx->graphs[i];
        if (g->valid && g->slot == slot && g->v == v && nb_same_args(&g->a, a)) {
            g->used = ++ctx->tick;
            *out = g;
            return COLLPROF_OK;
        }
        if (!g->valid || (victim->valid && g->used < victim->used)) {
            victim = g;
        }
    }
    nb_graph_drop(victim);
    if (warm) {
        int rc = nb_events(ctx, 1);
        if (rc == COLLPROF_OK) {
            rc = nb_issue(ctx, v, slot, a);
        }
        if (rc == COLLPROF_OK) {
            cudaError_t e = cudaEventRecord(ctx->ev[0], ctx->stream);
            rc = e == cudaSuccess ? nb_wait(ctx, slot, a, 1)
                                  : nb_cuda_fail(ctx, "cudaEventRecord", e);
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaStreamBeginCapture", e);
    }
    int rc = nb_issue(ctx, v, slot, a);
    e = cudaStreamEndCapture(ctx->stream, &graph);
    if (rc != COLLPROF_OK) {
        if (graph != NULL) {
            cudaGraphDestroy(graph);
        }
        return rc;
    }
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaStreamEndCapture", e);
    }
    e = cudaGraphInstantiate(&victim->exec, graph, 0);
    cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaGraphInstantiate", e);
    }
    victim->valid = 1;
    victim->slot = slot;
    victim->v = v;
    victim->a = *a;
    victim->used = ++ctx->tick;
    *out = victim;
    return COLLPROF_OK;
}

static int nb_register(nb_ctx_t *ctx, int slot, const void *p)
{
#ifdef HAVE_NCCLCOMMREGISTER
    nb_buf_t *b = p != NULL ? nb_find_buf(ctx, p) : NULL;
    if (b == NULL || b->reg[slot] != NULL) {
        return COLLPROF_OK;
    }
    ncclComm_t comm = ctx->comms[slot].comm;
    void *h = NULL;
    int rc = nb_settle(ctx, slot, comm, ncclCommRegister(comm, b->ptr, b->bytes, &h),
                       "ncclCommRegister");
    if (rc == COLLPROF_OK) {
        b->reg[slot] = h;
    }
    return rc;
#else
    (void)ctx, (void)slot, (void)p;
    return COLLPROF_OK;
#endif
}

/*
 * Everything that must not be timed: the variant's communicator, staging
 * space, registrations, the graph.  *slot and *graph on success.
 */
static int nb_prepare(nb_ctx_t *ctx, const collprof_args_t *a, int warm,
                      const cp_nccl_variant_t **vout, int *slot, nb_graph_t **graph)
{
    if ((unsigned)a->op >= COLLPROF_OP_COUNT) {
        nb_set_error(ctx, "unknown operation %d", (int)a->op);
        return COLLPROF_ERR_INVALID;
    }
    if (a->memtype != COLLPROF_MEM_DEVICE && a->op != COLLPROF_OP_BARRIER) {
        nb_set_error(ctx, "nccl runs on device buffers only (memtype %d given)", a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    const cp_nccl_variant_t *v = ctx->cur_v[a->op];
    int s = ctx->cur_slot[a->op];
    if (v == NULL) {
        v = cp_nccl_plan_find(&nb_plan, NULL);
        s = -1;
    }
    if (s < 0 || !ctx->comms[s].live) {
        if (ctx->cur_v[a->op] != NULL && ctx->lost[a->op] == NB_ABORTED) {
            nb_set_error(ctx, "the communicator of variant %s was aborted after an earlier failure",
                         v->name);
            return COLLPROF_ERR_BACKEND;
        }
        /* never selected, or evicted since: (re)create it, collectively like run() itself */
        int rc = nb_slot_for(ctx, v, &s);
        if (rc != COLLPROF_OK) {
            return rc;
        }
        if (ctx->cur_v[a->op] != NULL) {
            ctx->cur_slot[a->op] = s;
            ctx->lost[a->op] = 0;
        }
    }
    size_t need = nb_stage_bytes(ctx, v, a);
    if (need > ctx->stage.bytes) {
        for (int i = 0; i < ctx->max_comms; i++) {
            if (ctx->stage.reg[i] != NULL && ctx->comms[i].live) {
                nb_settle(ctx, i, ctx->comms[i].comm,
                          ncclCommDeregister(ctx->comms[i].comm, ctx->stage.reg[i]),
                          "ncclCommDeregister");
            }
            ctx->stage.reg[i] = NULL;
        }
        nb_graphs_drop(ctx, -1);
        cudaFree(ctx->stage.ptr);
        ctx->stage.ptr = NULL;
        ctx->stage.bytes = 0;
        cudaError_t e = cudaMalloc((void **)&ctx->stage.ptr, need);
        if (e != cudaSuccess) {
            ctx->stage.ptr = NULL;
            return nb_cuda_fail(ctx, "cudaMalloc (staging buffer)", e);
        }
        ctx->stage.bytes = need;
    }
    if (v->reg) {
        int rc = nb_register(ctx, s, a->sendbuf);
        if (rc == COLLPROF_OK) {
            rc = nb_register(ctx, s, a->recvbuf);
        }
        if (rc == COLLPROF_OK && need > 0) {
            rc = nb_register(ctx, s, ctx->stage.ptr);
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    *graph = NULL;
    if (v->graph) {
        int rc = nb_graph_get(ctx, v, s, a, warm, graph);
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    *vout = v;
    *slot = s;
    return COLLPROF_OK;
}

static int nb_launch(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot, nb_graph_t *g,
                     const collprof_args_t *a)
{
    if (g != NULL) {
        cudaError_t e = cudaGraphLaunch(g->exec, ctx->stream);
        return e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaGraphLaunch", e);
    }
    return nb_issue(ctx, v, slot, a);
}

static int nb_events(nb_ctx_t *ctx, int need)
{
    if (need <= ctx->nev) {
        return COLLPROF_OK;
    }
    cudaEvent_t *ev = realloc(ctx->ev, (size_t)need * sizeof(*ev));
    if (ev == NULL) {
        nb_set_error(ctx, "out of memory for %d CUDA events", need);
        return COLLPROF_ERR_NO_MEMORY;
    }
    ctx->ev = ev;
    while (ctx->nev < need) {
        cudaError_t e = cudaEventCreate(&ctx->ev[ctx->nev]);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaEventCreate", e);
        }
        ctx->nev++;
    }
    return COLLPROF_OK;
}

/*
 * Wait for events ev[0..nev): each has timeout_s from the completion of the
 * one before it (a per-operation limit), with NCCL's async errors polled.
 */
static int nb_wait(nb_ctx_t *ctx, int slot, const collprof_args_t *a, int nev)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    double t0 = nb_now(), last = t0;
    unsigned spins = 0;
    int k = 0;
    while (k < nev) {
        cudaError_t e = cudaEventQuery(ctx->ev[k]);
        if (e == cudaSuccess) {
            k++;
            last = nb_now();
            spins = 0;
            continue;
        }
        if (e != cudaErrorNotReady) {
            return nb_cuda_fail(ctx, "cudaEventQuery", e);
        }
        ncclResult_t st = ncclSuccess;
        if (ncclCommGetAsyncError(comm, &st) == ncclSuccess && st != ncclSuccess &&
            st != ncclInProgress) {
            nb_nccl_fail(ctx, comm, "nccl asynchronous error", st);
            char msg[NB_ERR_LEN];
            snprintf(msg, sizeof(msg), "%s: %s after %.3f s; communicator aborted",
                     collprof_op_name(a->op), ctx->err, nb_now() - t0);
            nb_abort_slot(ctx, slot);
            nb_set_error(ctx, "%s", msg);
            return COLLPROF_ERR_BACKEND;
        }
        double now = nb_now();
        if (now - last > ctx->timeout_s) {
            nb_abort_slot(ctx, slot);
            nb_set_error(ctx,
                         "%s (%s, count %zu): operation %d did not complete within %.0f s "
                         "(%.1f s in all); communicator aborted",
                         collprof_op_name(a->op), collprof_dtype_name(a->dtype), a->count, k,
                         ctx->timeout_s, now - t0);
            return COLLPROF_ERR_TIMEOUT;
        }
        nb_nap(ctx, &spins);
    }
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    return e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaStreamSynchronize", e);
}

/*
 * run(): the operation on the stream, then the wait.  A non-blocking op
 * (iallreduce...) is its blocking twin enqueued the same way, with the
 * core's host computation (a->overlap) between the enqueue and the wait:
 * NCCL calls are asynchronous to the host, so the GPU works meanwhile.
 */
static int nb_run(void *vctx, const collprof_args_t *ia)
{
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = NULL;
    nb_graph_t *g = NULL;
    int slot = -1;
    collprof_args_t twin = *ia;
    const collprof_args_t *a = &twin;
    twin.op = (collprof_op_t)collprof_op_blocking((int)ia->op);
    int rc = nb_prepare(ctx, a, 0, &v, &slot, &g);
    if (rc == COLLPROF_OK) {
        rc = nb_events(ctx, 1);
    }
    ctx->spin = 1; /* operations are polled, never slept on */
    if (rc == COLLPROF_OK) {
        rc = nb_launch(ctx, v, slot, g, a);
    }
    if (rc == COLLPROF_OK) {
        cudaError_t e = cudaEventRecord(ctx->ev[0], ctx->stream);
        if (e == cudaSuccess && (collprof_op_info((int)ia->op)->flags & COLLPROF_OPF_NONBLOCKING) &&
            ia->overlap != NULL) {
            ia->overlap(ia->overlap_arg);
        }
        rc = e == cudaSuccess ? nb_wait(ctx, slot, a, 1) : nb_cuda_fail(ctx, "cudaEventRecord", e);
    }
    ctx->spin = 0;
    return rc;
}

static int nb_run_batch(void *vctx, const collprof_args_t *a, int iters, double *times_us)
{
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = NULL;
    nb_graph_t *g = NULL;
    int slot = -1;
    char range[160];
    if (iters <= 0) {
        return COLLPROF_OK;
    }
    int rc = nb_prepare(ctx, a, 1, &v, &slot, &g);
    if (rc == COLLPROF_OK) {
        rc = nb_events(ctx, iters + 1);
    }
    if (rc != COLLPROF_OK) {
        return rc;
    }
    snprintf(range, sizeof(range), "collprof nccl/%s %s %s count=%zu", v->name,
             collprof_op_name(a->op), collprof_dtype_name(a->dtype), a->count);
    nvtxRangePushA(range);
    ctx->spin = 1; /* no sleep between launches or while the batch completes */
    double issue0 = nb_now();
    cudaError_t e = cudaEventRecord(ctx->ev[0], ctx->stream);
    if (e != cudaSuccess) {
        rc = nb_cuda_fail(ctx, "cudaEventRecord", e);
    }
    int issued = 0;
    for (int i = 0; i < iters && rc == COLLPROF_OK; i++) {
        rc = nb_launch(ctx, v, slot, g, a);
        if (rc == COLLPROF_OK) {
            e = cudaEventRecord(ctx->ev[i + 1], ctx->stream);
            rc = e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaEventRecord", e);
            issued = i + 2;
        }
    }
    double issue_us = (nb_now() - issue0) * 1e6 / iters;
    nvtxRangePop();
    if (rc != COLLPROF_OK) {
        /* drain what was launched (bounded), keep the first error */
        if (issued > 0 && slot >= 0 && ctx->comms[slot].live) {
            char keep[NB_ERR_LEN];
            snprintf(keep, sizeof(keep), "%s", ctx->err);
            nb_wait(ctx, slot, a, issued);
            nb_set_error(ctx, "%s", keep);
        }
        ctx->spin = 0;
        return rc;
    }
    rc = nb_wait(ctx, slot, a, iters + 1);
    ctx->spin = 0;
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double sum = 0;
    for (int i = 0; i < iters; i++) {
        float ms = 0.0f;
        e = cudaEventElapsedTime(&ms, ctx->ev[i], ctx->ev[i + 1]);
        if (e != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaEventElapsedTime", e);
        }
        times_us[i] = (double)ms * 1000.0;
        sum += times_us[i];
    }
    /* where the host's time per launch comes near the device's time per operation, the GPU
     * waited for the host: the launch rate, not the collective, set the time (-v -v) */
    if (ctx->host->log != NULL) {
        ctx->host->log(
            COLLPROF_LOG_DEBUG, "%s: %d launches, host %.2f us each, device %.2f us each%s", range,
            iters, issue_us, sum / iters, issue_us >= 0.9 * sum / iters ? " (launch-bound)" : "");
    }
    return COLLPROF_OK;
}

/* ---- variants --------------------------------------------------------------- */

#ifdef HAVE_NCCLGROUPSIMULATEEND
/* the probe's one collective, in the open group; ncclSuccess or NCCL's answer */
static ncclResult_t nb_probe_issue(nb_ctx_t *ctx, ncclComm_t comm, collprof_op_t op)
{
    size_t cnt = NB_PROBE_PER_RANK * (size_t)ctx->n;
    char *s = ctx->scratch, *r = ctx->scratch + cnt * sizeof(float);
    switch (op) {
    case COLLPROF_OP_ALLREDUCE:
        return ncclAllReduce(s, r, cnt, ncclFloat32, ncclSum, comm, ctx->stream);
    case COLLPROF_OP_ALLGATHER:
        return ncclAllGather(s, r, NB_PROBE_PER_RANK, ncclFloat32, comm, ctx->stream);
    case COLLPROF_OP_REDUCESCATTER:
        return ncclReduceScatter(s, r, NB_PROBE_PER_RANK, ncclFloat32, ncclSum, comm, ctx->stream);
    case COLLPROF_OP_BROADCAST: return ncclBroadcast(s, r, cnt, ncclFloat32, 0, comm, ctx->stream);
    case COLLPROF_OP_REDUCE:
        return ncclReduce(s, r, cnt, ncclFloat32, ncclSum, 0, comm, ctx->stream);
    default: return ncclSuccess;
    }
}

/*
 * Whether NCCL has the forced algorithm/protocol of v for op on this
 * machine, asked through ncclGroupSimulateEnd on the variant's
 * communicator.  On a blocking communicator NCCL 2.28 only simulates and
 * answers at once, without an error sticking to it; on a non-blocking one
 * it launches the probe for real (on the zeroed scratch buffer) and a
 * refusal arrives later as an asynchronous error that sticks.  So the
 * variant's environment is set again for the whole probe (NCCL reads it
 * when it refuses: ncclInvalidUsage while it is set, ncclInternalError
 * after), and a communicator that saw any error is marked broken and
 * dropped by the caller.  Returns 1 if NCCL refused (message in ctx->err),
 * -1 on another failure (message in ctx->err), 0 when usable.
 */
static int nb_probe_refused(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot, collprof_op_t op)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
    cp_nccl_env_saved_t saved;
    if (cp_nccl_env_push(v, &saved) != 0) {
        nb_set_error(ctx, "cannot set the environment of variant %s", v->name);
        return -1;
    }
    ncclResult_t res = ncclGroupStart();
    if (res == ncclSuccess) {
        res = nb_probe_issue(ctx, comm, op);
        if (res != ncclSuccess && res != ncclInProgress) {
            ncclGroupEnd();
        } else {
            res = ncclGroupSimulateEnd(&sim);
        }
    }
    double t0 = nb_now();
    while (res == ncclInProgress && nb_now() - t0 <= ctx->timeout_s) { /* NCCL's thread */
        if (ncclCommGetAsyncError(comm, &res) != ncclSuccess) {
            res = ncclInternalError;
        }
    }
    if (res == ncclInProgress) {
        cp_nccl_env_pop(&saved);
        ctx->comms[slot].broken = 1;
        nb_set_error(ctx, "variant probe: no answer from NCCL within %.0f s", ctx->timeout_s);
        return -1;
    }
    if (res == ncclSuccess && !ctx->blocking) { /* it launched: wait for it, still with env */
        int rc = nb_events(ctx, 1);
        if (rc == COLLPROF_OK) {
            cudaEventRecord(ctx->ev[0], ctx->stream);
            collprof_args_t a = {.op = op};
            rc = nb_wait(ctx, slot, &a, 1);
        }
        cp_nccl_env_pop(&saved);
        return rc == COLLPROF_OK ? 0 : -1;
    }
    cp_nccl_env_pop(&saved);
    if (res == ncclSuccess) {
        return 0;
    }
    const char *last = ncclGetLastError(comm);
    int refused = res == ncclInvalidUsage || res == ncclInvalidArgument ||
                  (last != NULL && strstr(last, NB_REFUSAL) != NULL);
    nb_nccl_fail(ctx, comm, "ncclGroupSimulateEnd (variant probe)", res); /* marks it broken */
    if (!ctx->blocking) {
        ctx->comms[slot].broken = 1; /* a refusal sticks to a non-blocking communicator */
    } else if (refused) {
        ctx->comms[slot].broken = 0; /* a blocking one only simulated: still healthy */
    }
    if (!refused) {
        return -1;
    }
    nb_set_error(ctx, "NCCL has no %s/%s for %s here: %s", v->algo ? v->algo : "default",
                 v->proto ? v->proto : "default", collprof_op_name(op),
                 last && last[0] ? last : ncclGetErrorString(res));
    return 1;
}
#endif

/*
 * Why v cannot be measured as named for op, or NULL.  A single-rank NCCL
 * collective is a device copy with no algorithm selected, so a forced
 * algorithm would only lend its name to that copy.  NCCLX reads its CTran
 * variables once per process and takes per-communicator choices only
 * through its C++ config hints, which this C plugin does not set: a CTran
 * variant would measure whatever the process started with.
 */
static const char *nb_not_applicable(const nb_ctx_t *ctx, const cp_nccl_variant_t *v)
{
    if (v->ctran_algo != NULL) {
        return "not measurable as named: NCCLX reads its CTran algorithm variables once per "
               "process and selects per communicator only through C++ config hints, which "
               "collprof does not set";
    }
    if (ctx->n == 1 && (v->algo != NULL || v->proto != NULL)) {
        return "not applicable on a single rank: NCCL runs a one-rank collective as a device "
               "copy and selects no algorithm or protocol";
    }
    return NULL;
}

static int nb_select_variant(void *vctx, collprof_op_t iop, const char *name)
{
    /* a non-blocking op runs its blocking twin, on the twin's selection */
    const collprof_op_t op = (collprof_op_t)collprof_op_blocking((int)iop);
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = cp_nccl_plan_find(&nb_plan, name);
    int slot = -1;
    if ((unsigned)op >= COLLPROF_OP_COUNT) {
        nb_set_error(ctx, "unknown operation %d", (int)op);
        return COLLPROF_ERR_INVALID;
    }
    if (v == NULL) {
        nb_set_error(ctx, "unknown variant '%s' (see collprof --list)", name);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (!(v->ops & COLLPROF_BIT(op))) {
        nb_set_error(ctx, "variant %s does not apply to %s", v->name, collprof_op_name(op));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    const char *na = nb_not_applicable(ctx, v);
    if (na != NULL) { /* the same on every rank: no communication */
        nb_set_error(ctx, "%s", na);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    nb_read_timeout(ctx); /* the running cell's */
    size_t vi = (size_t)(v - nb_plan.v);
    if (ctx->probed[vi][op] == 2) { /* every rank knows it: no communication */
        nb_set_error(ctx,
                     "NCCL_ALGO=%s NCCL_PROTO=%s is not available for %s on this machine "
                     "(NCCL refused it when the variant was first selected)",
                     v->algo, v->proto, collprof_op_name(op));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    int rc = nb_drop_broken(ctx); /* after an earlier error: a fresh communicator */
    if (rc == COLLPROF_OK) {
        rc = nb_slot_for(ctx, v, &slot);
    }
    if (rc != COLLPROF_OK) {
        return rc;
    }
#ifdef HAVE_NCCLGROUPSIMULATEEND
    if (v->algo != NULL && ctx->probed[vi][op] == 0) {
        int refused = nb_probe_refused(ctx, v, slot, op);
        char why[NB_ERR_LEN];
        snprintf(why, sizeof(why), "%s", refused ? ctx->err : "");
        rc = nb_agree_all(ctx,
                          refused > 0   ? COLLPROF_ERR_NOT_SUPPORTED
                          : refused < 0 ? COLLPROF_ERR_BACKEND
                                        : 0,
                          why);
        ctx->probed[vi][op] = rc == COLLPROF_ERR_NOT_SUPPORTED ? 2 : rc == COLLPROF_OK ? 1 : 0;
        /* a refusal must not follow the variant's other operations: a fresh one if it stuck */
        int dropped = nb_drop_broken(ctx);
        rc = rc != COLLPROF_OK ? rc : dropped;
        if (rc != COLLPROF_OK) {
            return rc;
        }
        if (!ctx->comms[slot].live && (rc = nb_slot_for(ctx, v, &slot)) != COLLPROF_OK) {
            return rc;
        }
    }
#endif
    ctx->cur_v[op] = v;
    ctx->cur_slot[op] = slot;
    ctx->lost[op] = 0;
    ctx->alloc_reg = v->reg; /* the cell's buffers come next */
    return COLLPROF_OK;
}

/* ---- memory ----------------------------------------------------------------- */

/* the memory and its record, with the allocator that made it */
static int nb_buf_free(nb_ctx_t *ctx, nb_buf_t *b)
{
#ifdef HAVE_NCCLMEMALLOC
    if (b->nccl_mem) {
        ncclResult_t r = ncclMemFree(b->ptr);
        free(b);
        return r == ncclSuccess ? COLLPROF_OK : nb_nccl_fail(ctx, NULL, "ncclMemFree", r);
    }
#endif
    cudaError_t e = cudaFree(b->ptr);
    free(b);
    return e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaFree", e);
}

static int nb_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    nb_ctx_t *ctx = vctx;
    if (memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "nccl works on device memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    nb_buf_t *b = calloc(1, sizeof(*b));
    if (b == NULL) {
        nb_set_error(ctx, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
#ifdef HAVE_NCCLMEMALLOC
    /*
     * Registration pays off on memory NCCL can map for its peers (cuMem):
     * +reg variants take their buffers from ncclMemAlloc, others from cudaMalloc.
     */
    if (ctx->alloc_reg) {
        ncclResult_t r = ncclMemAlloc((void **)&b->ptr, bytes > 0 ? bytes : 1);
        if (r != ncclSuccess) {
            free(b);
            return nb_nccl_fail(ctx, NULL, "ncclMemAlloc", r);
        }
        b->nccl_mem = 1;
    }
#endif
    cudaError_t e = b->nccl_mem ? cudaSuccess : cudaMalloc((void **)&b->ptr, bytes > 0 ? bytes : 1);
    if (e != cudaSuccess) {
        free(b);
        return nb_cuda_fail(ctx, "cudaMalloc", e);
    }
    b->bytes = bytes > 0 ? bytes : 1;
    b->next = ctx->bufs;
    ctx->bufs = b;
    *ptr = b->ptr;
    return COLLPROF_OK;
}

static int nb_mem_free(void *vctx, int memtype, void *ptr)
{
    nb_ctx_t *ctx = vctx;
    (void)memtype;
    for (nb_buf_t **pp = &ctx->bufs; *pp != NULL; pp = &(*pp)->next) {
        nb_buf_t *b = *pp;
        if (b->ptr != ptr) {
            continue;
        }
        nb_graphs_drop(ctx, -1); /* a graph may use it; addresses get reused */
        for (int s = 0; s < ctx->max_comms; s++) {
            if (b->reg[s] != NULL && ctx->comms[s].live) {
                nb_settle(ctx, s, ctx->comms[s].comm,
                          ncclCommDeregister(ctx->comms[s].comm, b->reg[s]), "ncclCommDeregister");
            }
        }
        *pp = b->next;
        return nb_buf_free(ctx, b);
    }
    nb_set_error(ctx, "mem_free: %p was not allocated by this backend", ptr);
    return COLLPROF_ERR_INVALID;
}

static int nb_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes,
                       int to_device)
{
    nb_ctx_t *ctx = vctx;
    if (memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "mem_copy: device memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    /*
     * On the plugin's own (non-blocking) stream, then synchronised: a plain
     * cudaMemcpy from pageable memory may return before the DMA has landed,
     * and the legacy default stream does not order against ours.
     */
    cudaError_t e = cudaMemcpyAsync(
        dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, ctx->stream);
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaMemcpyAsync", e);
    }
    e = cudaStreamSynchronize(ctx->stream);
    return e == cudaSuccess ? COLLPROF_OK
                            : nb_cuda_fail(ctx, "cudaStreamSynchronize (mem_copy)", e);
}

/* ---- device copy rate (the optional copy_rate slot) --------------------------------- */

#define NB_COPY_SAMPLES  7    /* timed batches; the median one counts */
#define NB_COPY_MIN_MS   1.0  /* each batch copies for at least this long */
#define NB_COPY_MAX_REPS 4096 /* copies per batch at most (tiny sizes) */

/*
 * nsamples batches of reps device-to-device copies src -> dst on the stream,
 * batch k between ev[k] and ev[k+1], with no host synchronisation until the
 * last event; ms[k] is batch k's time.
 */
static int nb_copy_batches(nb_ctx_t *ctx, char *dst, const char *src, size_t bytes, int reps,
                           int nsamples, float *ms)
{
    int rc = nb_events(ctx, nsamples + 1);
    cudaError_t e = rc == COLLPROF_OK ? cudaEventRecord(ctx->ev[0], ctx->stream) : cudaSuccess;
    for (int k = 0; rc == COLLPROF_OK && e == cudaSuccess && k < nsamples; k++) {
        for (int i = 0; e == cudaSuccess && i < reps; i++) {
            e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, ctx->stream);
        }
        e = e == cudaSuccess ? cudaEventRecord(ctx->ev[k + 1], ctx->stream) : e;
    }
    if (rc != COLLPROF_OK) {
        return rc;
    }
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaMemcpyAsync (device copy rate)", e);
    }
    if ((e = cudaStreamSynchronize(ctx->stream)) != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaStreamSynchronize (device copy rate)", e);
    }
    for (int k = 0; k < nsamples; k++) {
        if ((e = cudaEventElapsedTime(&ms[k], ctx->ev[k], ctx->ev[k + 1])) != cudaSuccess) {
            return nb_cuda_fail(ctx, "cudaEventElapsedTime (device copy rate)", e);
        }
    }
    return COLLPROF_OK;
}

static int nb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/*
 * Two single copies (the first warms the fresh buffers up, the second's time
 * sets how many copies make a batch of NB_COPY_MIN_MS: the first's, with its
 * first-touch cost, would make batches too short), then NB_COPY_SAMPLES timed
 * batches; *gbs is the median batch's bytes copied / time.
 */
static int nb_copy_measure(nb_ctx_t *ctx, char *dst, const char *src, size_t bytes, double *gbs)
{
    float ms[NB_COPY_SAMPLES];
    double rate[NB_COPY_SAMPLES];
    int rc = nb_copy_batches(ctx, dst, src, bytes, 1, 2, ms);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double reps = ms[1] > 0 ? NB_COPY_MIN_MS / ms[1] + 1 : NB_COPY_MAX_REPS;
    int r = reps < NB_COPY_MAX_REPS ? (int)reps : NB_COPY_MAX_REPS;
    if ((rc = nb_copy_batches(ctx, dst, src, bytes, r, NB_COPY_SAMPLES, ms)) != COLLPROF_OK) {
        return rc;
    }
    int n = 0;
    for (int k = 0; k < NB_COPY_SAMPLES; k++) {
        if (ms[k] > 0) {
            rate[n++] = (double)bytes * r / (ms[k] * 1e-3) * 1e-9;
        }
    }
    if (n == 0) {
        nb_set_error(ctx, "device copy rate: %d batches of %d copies of %zu B took no time",
                     NB_COPY_SAMPLES, r, bytes);
        return COLLPROF_ERR_BACKEND;
    }
    qsort(rate, (size_t)n, sizeof(rate[0]), nb_cmp_double);
    *gbs = rate[n / 2];
    return COLLPROF_OK;
}

/*
 * copy_rate: device-to-device cudaMemcpyAsync between two cudaMalloc'd
 * buffers of bytes on the plugin's stream, timed with CUDA events (what the
 * device can move on its own, the limit beside device cells' busBW).
 */
static int nb_copy_rate(void *vctx, int memtype, size_t bytes, double *gbs)
{
    nb_ctx_t *ctx = vctx;
    if (memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "copy_rate: device memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (bytes == 0) {
        nb_set_error(ctx, "copy_rate: nothing to copy");
        return COLLPROF_ERR_INVALID;
    }
    /* buffers that do not fit fail here; the error is cleared so that no later launch
     * check of NCCL's reads it back as its own */
    char *src = NULL, *dst = NULL;
    cudaError_t e = cudaMalloc((void **)&src, bytes);
    if (e == cudaSuccess && (e = cudaMalloc((void **)&dst, bytes)) != cudaSuccess) {
        cudaFree(src);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return nb_cuda_fail(ctx, "cudaMalloc (device copy rate)", e);
    }
    double rate = 0.0;
    int rc = nb_copy_measure(ctx, dst, src, bytes, &rate);
    cudaFree(dst);
    cudaFree(src);
    if (rc == COLLPROF_OK) {
        *gbs = rate;
    }
    return rc;
}

/* ---- init / finalize ---------------------------------------------------------- */

static void nb_teardown(nb_ctx_t *ctx)
{
    if (ctx == NULL) {
        return;
    }
    /* a peer that aborted a communicator never finalises it: do not wait long */
    if (ctx->timeout_s > 30.0) {
        ctx->timeout_s = 30.0;
    }
    nb_graphs_drop(ctx, -1);
    for (int s = 0; s < NB_MAX_COMMS; s++) {
        nb_destroy_slot(ctx, s);
    }
    while (ctx->bufs != NULL) {
        nb_buf_t *b = ctx->bufs;
        ctx->bufs = b->next;
        nb_buf_free(ctx, b);
    }
    if (ctx->stage.ptr != NULL) {
        cudaFree(ctx->stage.ptr);
    }
    if (ctx->scratch != NULL) {
        cudaFree(ctx->scratch);
    }
    for (int i = 0; i < ctx->nev; i++) {
        cudaEventDestroy(ctx->ev[i]);
    }
    free(ctx->ev);
    if (ctx->stream != NULL) {
        cudaStreamDestroy(ctx->stream);
    }
    free(ctx->xf);
    free(ctx);
}

static int nb_parse_int(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

/* this rank's device: everything local, no communication */
static int nb_local_setup(nb_ctx_t *ctx)
{
    const collprof_host_t *h = ctx->host;
    const char *devopt = h->get_option ? h->get_option("nccl-device") : NULL;
    const char *comms = h->get_option ? h->get_option("nccl-max-comms") : NULL;
    const char *blk = h->get_option ? h->get_option("nccl-blocking") : NULL;
    int count = 0; /* left unwritten by some failures */
    long v;

    nb_read_timeout(ctx);
    ctx->blocking = 1;
    if (blk != NULL) {
        if (nb_parse_int(blk, 0, 1, &v) != 0) {
            nb_set_error(ctx, "nccl-blocking=%s: expected 0 or 1", blk);
            return COLLPROF_ERR_INVALID;
        }
        ctx->blocking = (int)v;
    }
    ctx->max_comms = NB_DEF_COMMS;
    if (comms != NULL) {
        if (nb_parse_int(comms, 1, NB_MAX_COMMS, &v) != 0) {
            nb_set_error(ctx, "nccl-max-comms=%s: expected 1..%d", comms, NB_MAX_COMMS);
            return COLLPROF_ERR_INVALID;
        }
        ctx->max_comms = (int)v;
    }
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count <= 0) {
        nb_set_error(ctx, "no usable GPU: %s",
                     e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device found");
        return COLLPROF_ERR_NO_DEVICE;
    }
    /*
     * The visible devices in turn: with one per task (CUDA_VISIBLE_DEVICES set
     * per rank, Slurm's --gpus-per-task or --gpu-bind) every rank takes its
     * device 0; with all of a node's visible, local rank i takes device i.
     * Two ranks on one GPU are refused by NCCL itself ("duplicate GPU").
     */
    ctx->dev = h->local_rank >= 0 ? h->local_rank % count : 0;
    if (devopt != NULL) {
        if (nb_parse_int(devopt, 0, count - 1, &v) != 0) {
            nb_set_error(ctx, "nccl-device=%s: expected 0..%d", devopt, count - 1);
            return COLLPROF_ERR_INVALID;
        }
        ctx->dev = (int)v;
    }
    if ((e = cudaSetDevice(ctx->dev)) != cudaSuccess) {
        nb_cuda_fail(ctx, "cudaSetDevice", e);
        return COLLPROF_ERR_NO_DEVICE;
    }
    if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaStreamCreateWithFlags", e);
    }
    ctx->scratch_bytes = 2u * NB_PROBE_PER_RANK * sizeof(float) * (size_t)ctx->n;
    if ((e = cudaMalloc((void **)&ctx->scratch, ctx->scratch_bytes)) != cudaSuccess) {
        ctx->scratch = NULL;
        return nb_cuda_fail(ctx, "cudaMalloc (scratch)", e);
    }
    if ((e = cudaMemset(ctx->scratch, 0, ctx->scratch_bytes)) != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaMemset", e);
    }
    if ((e = cudaDeviceSynchronize()) != cudaSuccess) { /* the memset, before our stream reads */
        return nb_cuda_fail(ctx, "cudaDeviceSynchronize", e);
    }
    return COLLPROF_OK;
}

/* which physical GPU this rank drives: the visible index, its bus id and UUID */
static void nb_log_device(const nb_ctx_t *ctx)
{
    struct cudaDeviceProp prop;
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (ctx->host->log == NULL || cudaGetDeviceProperties(&prop, ctx->dev) != cudaSuccess) {
        return;
    }
    char uuid[40];
    const unsigned char *u = (const unsigned char *)prop.uuid.bytes;
    snprintf(uuid, sizeof(uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
             u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
             u[15]);
    ctx->host->log(COLLPROF_LOG_INFO,
                   "nccl: %s; local rank %d on device %d of the visible ones "
                   "(CUDA_VISIBLE_DEVICES=%s): %s (%.1f GiB), PCI %04x:%02x:%02x.0, GPU-%s; %s "
                   "communicators; timeout %.0f s",
                   nb_libversion, ctx->host->local_rank, ctx->dev, vis ? vis : "unset", prop.name,
                   (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0),
                   (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID,
                   uuid, ctx->blocking ? "blocking" : "non-blocking", ctx->timeout_s);
}

static int nb_init(const collprof_host_t *host, void **out)
{
    nb_ctx_t *ctx;
    int rc, slot = -1;
    if (host == NULL) {
        nb_set_error(NULL, "no host table");
        return COLLPROF_ERR_INVALID;
    }
    nb_prepare_plan();
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        nb_set_error(NULL, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    ctx->host = host;
    ctx->rank = host->rank;
    ctx->n = host->nranks;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->cur_slot[op] = -1;
    }
    ctx->xf = calloc(2u * (size_t)ctx->n + 2u, sizeof(*ctx->xf));
    rc = ctx->xf != NULL ? nb_local_setup(ctx) : COLLPROF_ERR_NO_MEMORY;
    if (ctx->xf == NULL) {
        nb_set_error(ctx, "out of memory");
    }
    /* always collective: a rank without a GPU must not strand the others */
    rc = nb_agree_all(ctx, rc, ctx->err);
    if (rc == COLLPROF_OK) {
        /* one node: keep NCCL's bootstrap and socket traffic on loopback */
        if (host->nnodes <= 1 && getenv("NCCL_SOCKET_IFNAME") == NULL) {
            setenv("NCCL_SOCKET_IFNAME", "lo", 0);
        }
        rc = nb_slot_for(ctx, cp_nccl_plan_find(&nb_plan, NULL), &slot);
    }
    if (rc != COLLPROF_OK) {
        snprintf(nb_global_err, sizeof(nb_global_err), "%s", ctx->err);
        nb_teardown(ctx);
        return rc;
    }
    nb_log_device(ctx);
    *out = ctx;
    return COLLPROF_OK;
}

static int nb_finalize(void *vctx)
{
    nb_teardown(vctx);
    return COLLPROF_OK;
}

static COLLPROF_DEFINE_LAST_ERROR(nb_last_error, nb_ctx_t, err, nb_global_err);

/*
 * run_batch times every operation between two CUDA events on the stream;
 * mem_alloc takes device memory from cudaMalloc (the reg variants register
 * it with each communicator); the device is the one init set.  NCCL does
 * not tell its transport (P2P, SHM, NET) through its API: left unknown.
 */
static int nb_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    nb_ctx_t *ctx = vctx;
    struct cudaDeviceProp prop;
    if (ctx == NULL || out == NULL || memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "describe: device memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    snprintf(out->timer, sizeof(out->timer), "cudaEventElapsedTime");
#ifdef HAVE_NCCLMEMALLOC
    snprintf(out->memory, sizeof(out->memory), "cudaMalloc; +reg: ncclMemAlloc, ncclCommRegister");
#else
    snprintf(out->memory, sizeof(out->memory), "cudaMalloc (ncclCommRegister by reg variants)");
#endif
    if (cudaGetDeviceProperties(&prop, ctx->dev) == cudaSuccess) {
        snprintf(out->device, sizeof(out->device), "cuda:%d %.32s (%04x:%02x:%02x.0)", ctx->dev,
                 prop.name, (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID,
                 (unsigned)prop.pciDeviceID);
    } else {
        snprintf(out->device, sizeof(out->device), "cuda:%d", ctx->dev);
    }
    return COLLPROF_OK;
}

#define NB_STR_(x) #x
#define NB_STR(x)  NB_STR_(x)
static const collprof_option_t nb_options[] = {
    {"nccl-device", COLLPROF_OPT_INT, NULL, 0, 1023, NULL,
     "CUDA device of every rank (default: local rank modulo the visible devices)", 0},
    {"nccl-max-comms", COLLPROF_OPT_INT, NB_STR(NB_DEF_COMMS), 1, NB_MAX_COMMS, NULL,
     "communicators kept open at once (one per variant)", 0},
    {"nccl-blocking", COLLPROF_OPT_INT, "1", 0, 1, NULL,
     "1: blocking communicators (as nccl-tests); 0: non-blocking (abortable set-up, but NCCL "
     "hands every collective to a thread, which the timing includes)",
     0},
    {"timeout", COLLPROF_OPT_INT, NULL, 1, 1000000, NULL,
     "seconds before a stuck operation aborts the communicator (default: collprof's --timeout)", 0},
};

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD("nccl", PACKAGE_VERSION,
                          "NCCL collectives on CUDA device buffers, timed with CUDA events"),
    .flags = COLLPROF_BACKEND_DEVICE_TIMER | COLLPROF_BACKEND_GROUPS,
    COLLPROF_BACKEND_SLOTS(nb, nb_mem_copy, nb_run_batch),
    COLLPROF_BACKEND_EXTRAS(nb_options, COLLPROF_NROWS(nb_options), 0, nb_describe),
    .copy_rate = nb_copy_rate,
};
