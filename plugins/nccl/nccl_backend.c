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
 *
 * The code is spread over several files; nccl_internal.h lists them.
 */

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define NB_DEF_COMMS      4
#define NB_LIBVERSION_FIT 128 /* the schema's library_version column */

static int nb_plan_ready;
static char nb_libversion[512];

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
    if (COLLPROF_CAPS_HAS(caps, post_ops)) {
        caps->post_ops = nb_post_ops(); /* send, recv and the blocking collectives (post()) */
    }
    if (COLLPROF_CAPS_HAS(caps, var_ops)) { /* a reduce per block in one group (nccl_issue.c) */
        caps->var_ops = COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER);
    }
    return COLLPROF_OK;
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
    nb_drop_held(ctx);
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
    if (ctx->cstream != NULL) {
        cudaStreamDestroy(ctx->cstream);
    }
    free(ctx->xf);
    free(ctx);
    nb_compute_hold(0); /* (the last context frees the device compute's buffer) */
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

/*
 * How many devices this rank sees (*count > 0), or why none:
 * COLLPROF_ERR_NO_DEVICE when nothing is there (no GPU, no driver, a driver
 * too old for the runtime: cp_nccl_no_gpu), an error when a driver is there
 * and fails otherwise.
 */
static int nb_count_devices(nb_ctx_t *ctx, int *count)
{
    int drv = 0, rt = 0;
    const char *load_err = NULL;
    char why[NB_ERR_LEN];
    void *cuda = NULL;
    *count = 0; /* left unwritten by some failures */
    cudaError_t e = cudaGetDeviceCount(count);
    if (e == cudaSuccess && *count > 0) {
        return COLLPROF_OK;
    }
    if (cudaDriverGetVersion(&drv) != cudaSuccess) {
        drv = 0;
    }
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) {
        rt = CUDART_VERSION;
    }
    if (drv <= 0 && e != cudaErrorStubLibrary) { /* why the driver is not there */
        cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
        load_err = cuda == NULL ? dlerror() : NULL;
        if (load_err != NULL && strncmp(load_err, "libcuda.so.1: ", 14) == 0) {
            load_err += 14;
        }
    }
    int none = cp_nccl_no_gpu(e, *count, drv, rt, ctx->rank, load_err, why, sizeof(why));
    if (cuda != NULL) {
        dlclose(cuda);
    }
    if (none) {
        nb_set_error(ctx, "%s", why);
        return COLLPROF_ERR_NO_DEVICE;
    }
    return nb_cuda_fail(ctx, "cudaGetDeviceCount", e);
}

/* this rank's device: everything local, no communication */
static int nb_local_setup(nb_ctx_t *ctx)
{
    const collprof_host_t *h = ctx->host;
    const char *devopt = h->get_option ? h->get_option("nccl-device") : NULL;
    const char *comms = h->get_option ? h->get_option("nccl-max-comms") : NULL;
    const char *blk = h->get_option ? h->get_option("nccl-blocking") : NULL;
    int count = 0, rc;
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
    if ((rc = nb_count_devices(ctx, &count)) != COLLPROF_OK) {
        return rc;
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
    cudaError_t e = cudaSetDevice(ctx->dev);
    if (e != cudaSuccess) { /* a device that is there and fails: an error */
        return nb_cuda_fail(ctx, "cudaSetDevice", e);
    }
    if ((e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (e = cudaStreamCreateWithFlags(&ctx->cstream, cudaStreamNonBlocking)) != cudaSuccess) {
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

/* COLLPROF_TRACE_DIR asks for a recording, but NCCL loads the one profiler plugin
 * NCCL_PROFILER_PLUGIN names: one line (rank 0) when that is not collprof's
 * (docs/replay.md, "Recording from NCCL programs") */
static void nb_note_profiler(const nb_ctx_t *ctx)
{
    static int noted; /* once per process, whatever the inits */
    const char *dir = getenv("COLLPROF_TRACE_DIR"), *p = getenv("NCCL_PROFILER_PLUGIN");
    if (noted || dir == NULL || dir[0] == '\0' || ctx->rank != 0 || ctx->host->log == NULL ||
        (p != NULL && strstr(p, "collprof") != NULL)) {
        return;
    }
    noted = 1;
    ctx->host->log(COLLPROF_LOG_WARN,
                   "nccl: COLLPROF_TRACE_DIR is set, but NCCL_PROFILER_PLUGIN %s%s: NCCL loads "
                   "one profiler plugin, so collprof's records nothing (set "
                   "NCCL_PROFILER_PLUGIN to libnccl-profiler-collprof.so's path)",
                   p != NULL ? "names another plugin: " : "is not set", p != NULL ? p : "");
}

/* A context for host's rank: its fields, the transfer table and the local set-up (the device)
 * done, rc the set-up's status (the message in ctx->err); NULL when out of memory (rc says so,
 * the message the plugin's own). */
static nb_ctx_t *nb_ctx_new(const collprof_host_t *host, int *rc)
{
    nb_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        nb_set_error(NULL, "out of memory");
        *rc = COLLPROF_ERR_NO_MEMORY;
        return NULL;
    }
    nb_compute_hold(1);
    ctx->host = host;
    ctx->rank = host->rank;
    ctx->n = host->nranks;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->cur_slot[op] = -1;
    }
    ctx->xf = calloc(2u * (size_t)ctx->n + 2u, sizeof(*ctx->xf));
    *rc = ctx->xf != NULL ? nb_local_setup(ctx) : COLLPROF_ERR_NO_MEMORY;
    if (ctx->xf == NULL) {
        nb_set_error(ctx, "out of memory");
    }
    return ctx;
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
    ctx = nb_ctx_new(host, &rc);
    if (ctx == NULL) {
        return rc;
    }
    /* always collective: a rank without a GPU must not strand the others */
    rc = nb_agree_all(ctx, rc, ctx->err);
    if (rc == COLLPROF_OK) {
        /* one node: keep NCCL's bootstrap and socket traffic on loopback */
        if (host->nnodes <= 1) { /* the watchdog's thread runs: no setenv */
            collprof_env_default("NCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME=lo");
        }
        rc = nb_slot_for(ctx, cp_nccl_plan_find(&nb_plan, NULL), &slot);
    }
    if (rc != COLLPROF_OK) {
        snprintf(nb_global_err, sizeof(nb_global_err), "%s", ctx->err);
        nb_teardown(ctx);
        return rc;
    }
    nb_log_device(ctx);
    nb_note_profiler(ctx);
    *out = ctx;
    return COLLPROF_OK;
}

#ifdef HAVE_NCCLCOMMSPLIT
/* a member's context around its communicator from ncclCommSplit: init()'s local set-up, the
 * communicator in the default variant's slot */
static int nb_split_ctx(const collprof_host_t *host, ncclComm_t comm, nb_ctx_t **out)
{
    int rc;
    nb_ctx_t *ctx = nb_ctx_new(host, &rc);
    if (ctx == NULL || rc != COLLPROF_OK) {
        ncclCommAbort(comm);
        if (ctx != NULL) {
            snprintf(nb_global_err, sizeof(nb_global_err), "%s", ctx->err);
            nb_teardown(ctx);
        }
        return rc;
    }
    nb_comm_t *c = &ctx->comms[0];
    c->live = 1;
    c->comm = comm;
    c->vname = "default";
    c->used = ++ctx->tick;
    cp_nccl_variant_key(cp_nccl_plan_find(&nb_plan, NULL), c->key, sizeof(c->key));
    *out = ctx;
    return COLLPROF_OK;
}

/*
 * split(): a replay's process group from the job's context, every rank of it taking part:
 * ncclCommSplit of its default communicator, colour 0 on the members (key: the group rank),
 * NCCL_SPLIT_NOCOLOR elsewhere.  The members' contexts then create their other variants'
 * communicators on the group alone, as init()'s do.
 */
static int nb_split(void *vparent, const collprof_host_t *host, void **out)
{
    nb_ctx_t *par = vparent;
    char want[CP_NCCL_KEY_LEN];
    int ps = -1;
    cp_nccl_variant_key(cp_nccl_plan_find(&nb_plan, NULL), want, sizeof(want));
    for (int s = 0; s < par->max_comms && ps < 0; s++) {
        ps = par->comms[s].live && !strcmp(par->comms[s].key, want) ? s : -1;
    }
    if (ps < 0) { /* the same on every rank: the caches are in step */
        nb_set_error(par, "split: the job's default communicator was finalised");
        return COLLPROF_ERR_BACKEND;
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = par->blocking;
    config.commName = "default (split)";
    ncclComm_t comm = NULL, pc = par->comms[ps].comm;
    ncclResult_t r = ncclCommSplit(pc, host != NULL ? 0 : NCCL_SPLIT_NOCOLOR,
                                   host != NULL ? host->rank : 0, &comm, &config);
    int rc = nb_settle(par, comm != NULL ? -1 : ps, comm != NULL ? comm : pc, r, "ncclCommSplit");
    if (rc != COLLPROF_OK || host == NULL) {
        return rc;
    }
    nb_ctx_t *ctx = NULL;
    if ((rc = nb_split_ctx(host, comm, &ctx)) == COLLPROF_OK && host->log != NULL &&
        host->rank == 0) {
        host->log(COLLPROF_LOG_INFO,
                  "nccl: a group of %d rank%s: its communicator split from the "
                  "job's (ncclCommSplit)",
                  host->nranks, host->nranks == 1 ? "" : "s");
    }
    if (rc == COLLPROF_OK) {
        *out = ctx;
    }
    return rc;
}
#endif

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
    .post = nb_post,
    .wait = nb_req_wait,
    .group = nb_group,
    .compute = nb_compute,
#ifdef HAVE_NCCLCOMMSPLIT
    .split = nb_split,
#endif
};
