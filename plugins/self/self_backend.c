#include "config.h"

/*
 * collprof backend "self": every operation in plain C over a POSIX shared
 * memory segment shared by the ranks of one node, with no communication
 * library.  It measures collprof's own overhead and lets tests drive the
 * runner without MPI.  It runs only when named (-b self).
 *
 * The segment: a process-shared barrier, a header of n element counts
 * (alltoallv: every rank's largest block), then one slot of S bytes
 * per rank (S = 1 MiB, option self-slot-kib) and two result areas of S bytes.
 * Every operation goes through the slots in chunks: each rank copies its
 * chunk into its own slot (or, for alltoall and reducescatter, one sub-slot
 * per peer), barrier, reads what it needs from the others' slots, barrier.
 * Reductions cost O(count) per rank whatever n: allreduce and reduce are a
 * reduce-scatter (rank r reduces its 1/n share of the chunk over the n
 * ranks' pieces, in rank order, into a result area; the pieces of a share lie
 * side by side in the slots area, see self_op_reduce) then an all-gather
 * (every rank, or the root, copies the whole result area); each element is
 * reduced by one rank only, so every rank gets the same bits.
 *
 * This file: the entry, query, the segment, init/finalize, memory and run; the operations
 * are in self_ops.c (self_internal.h).
 */

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <collprof/plugin.h>
#include <collprof/plugin_util.h>

#include "self_internal.h"

static char self_err[SELF_ERR_LEN]; /* last_error(NULL) */

__attribute__((format(printf, 2, 3))) static void self_set_error(self_ctx_t *ctx, const char *fmt,
                                                                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx ? ctx->err : self_err, SELF_ERR_LEN, fmt, ap);
    va_end(ap);
}

/* ---- slots ------------------------------------------------------------- */

static int self_check_args(self_ctx_t *ctx, const collprof_args_t *a)
{
    if (a->op < 0 || a->op >= COLLPROF_OP_COUNT || collprof_dtype_size((int)a->dtype) == 0 ||
        (int)a->redop < 0 || a->redop >= COLLPROF_REDOP_COUNT) {
        self_set_error(ctx, "run: op %d, dtype %d or redop %d out of range", (int)a->op,
                       (int)a->dtype, (int)a->redop);
        return COLLPROF_ERR_INVALID;
    }
    if (a->memtype != COLLPROF_MEM_HOST) {
        self_set_error(ctx, "run: %s memory is not supported (host only)",
                       collprof_memtype_name(a->memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if ((collprof_op_info((int)a->op)->flags & COLLPROF_OPF_ROOTED) &&
        (a->root < 0 || a->root >= ctx->n)) {
        self_set_error(ctx, "run: %s root %d out of range", collprof_op_name((int)a->op), a->root);
        return COLLPROF_ERR_INVALID;
    }
    if (a->op == COLLPROF_OP_SENDRECV && (a->peer_recv < 0 || a->peer_recv >= ctx->n)) {
        self_set_error(ctx, "run: sendrecv peer %d out of range", a->peer_recv);
        return COLLPROF_ERR_INVALID;
    }
    return COLLPROF_OK;
}

static int self_run(void *vctx, const collprof_args_t *a)
{
    self_ctx_t *ctx = vctx;
    int rc = self_check_args(ctx, a);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    self_run_op(ctx, a);
    if ((collprof_op_info((int)a->op)->flags & COLLPROF_OPF_NONBLOCKING) && a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    return COLLPROF_OK;
}

static int self_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx; /* the same answer before and after init */
    if (!caps) {
        self_set_error(NULL, "query: caps is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (caps->size < COLLPROF_CAPS_SIZE_V1) {
        self_set_error(NULL, "query: caps->size %zu is smaller than ABI 1's %zu", caps->size,
                       (size_t)COLLPROF_CAPS_SIZE_V1);
        return COLLPROF_ERR_ABI;
    }
    caps->library_version = "collprof self " PACKAGE_VERSION " (POSIX shared memory)";
    caps->ops = COLLPROF_BIT(COLLPROF_OP_COUNT) - 1u;
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_COUNT) - 1u;
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_COUNT) - 1u;
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    caps->variants = NULL;
    caps->nvariants = 0;
    if (COLLPROF_CAPS_HAS(caps, post_ops)) {
        /* sends and recvs (self_p2p.c); every blocking collective (self_async.c) */
        caps->post_ops = (COLLPROF_BIT(COLLPROF_OP_SENDRECV + 1) - 1u) | /* allreduce..sendrecv */
                         COLLPROF_BIT(COLLPROF_OP_ALLGATHERV) | COLLPROF_BIT(COLLPROF_OP_GATHERV) |
                         COLLPROF_BIT(COLLPROF_OP_SCATTERV);
    }
    return COLLPROF_OK;
}

/* The slot size in bytes from self-slot-kib; 0 (and last_error) when it is bad. */
static size_t self_slot_bytes(const collprof_host_t *h)
{
    const char *opt = h->get_option ? h->get_option("self-slot-kib") : NULL;
    char *end = NULL;
    unsigned long long kib = SELF_SLOT_KIB;
    if (opt != NULL) {
        errno = 0;
        kib = strtoull(opt, &end, 10);
        if (errno || end == opt || *end != '\0' || kib == 0 || kib > (1ull << 22)) {
            self_set_error(NULL, "self-slot-kib: '%s' is not a size in KiB (1 to 4194304)", opt);
            return 0;
        }
    }
    /* an alltoall sub-slot must hold at least one element of every type */
    if (kib * 1024 < (unsigned long long)h->nranks * SELF_MAX_ALIGN) {
        self_set_error(NULL, "self-slot-kib %llu is too small for %d ranks", kib, h->nranks);
        return 0;
    }
    return (size_t)kib * 1024;
}

/* The pid in a segment name collprof-self-<pid>-<ns>-<i> (self_shm_create), else 0. */
static long self_segment_pid(const char *name)
{
    long pid = 0, ns = 0;
    int i = 0, used = 0;
    if (sscanf(name, "collprof-self-%ld-%ld-%d%n", &pid, &ns, &i, &used) != 3 ||
        name[used] != '\0') {
        return 0;
    }
    return pid;
}

/* Every rank maps rank 0's segment; all agree on the outcome; rank 0 unlinks it. */
static int self_attach(const collprof_host_t *h, self_ctx_t *ctx)
{
    char name[SELF_NAME_LEN] = "";
    int mine, *all, bad = 0;
    if (h->rank == 0) {
        /* segments a rank 0 killed between creating and unlinking left behind */
        collprof_shm_sweep(self_segment_pid, h, "self");
        self_shm_create(ctx->seglen, name, self_err, sizeof(self_err));
    }
    if (h->oob_bcast(name, sizeof(name), 0) != COLLPROF_OK) {
        self_set_error(NULL, "init: out-of-band broadcast of the segment name failed");
        return COLLPROF_ERR_BOOTSTRAP; /* the core's agreement covers this */
    }
    if (name[0] == '\0' && h->rank != 0) {
        self_set_error(NULL, "init: rank 0 could not create the shared memory segment");
    }
    ctx->seg = name[0] != '\0' ? self_shm_map(name, ctx->seglen, self_err, sizeof(self_err)) : NULL;
    mine = ctx->seg != NULL;
    all = calloc((size_t)h->nranks, sizeof(int));
    if (!all || h->oob_allgather(&mine, all, sizeof(int)) != COLLPROF_OK) {
        bad = 1;
    }
    for (int q = 0; !bad && q < h->nranks; q++) {
        bad = !all[q];
    }
    free(all);
    if (h->rank == 0 && name[0] != '\0') {
        shm_unlink(name); /* every rank has it mapped (or gave up): nothing is left behind */
    }
    if (bad && mine) {
        self_set_error(NULL, "init: another rank could not map the shared memory segment");
    }
    if (bad) {
        if (ctx->seg) {
            munmap(ctx->seg, ctx->seglen);
        }
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

static int self_init(const collprof_host_t *h, void **out)
{
    self_ctx_t *ctx;
    size_t slot;
    int rc;
    if (!h || !out || h->nranks < 1) {
        self_set_error(NULL, "init: bad arguments");
        return COLLPROF_ERR_INVALID;
    }
    if (h->nnodes != 1) {
        self_set_error(NULL, "self needs all ranks on one node (this run has %d nodes)", h->nnodes);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if ((slot = self_slot_bytes(h)) == 0) {
        return COLLPROF_ERR_INVALID;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        self_set_error(NULL, "init: out of memory");
        return COLLPROF_ERR_NO_MEMORY; /* the core agrees on failures before going on */
    }
    ctx->host = h;
    ctx->rank = h->rank;
    ctx->n = h->nranks;
    ctx->slot = slot;
    /* run()'s lane and the rings; posted collectives get a lane of their own (self_async.c) */
    ctx->seglen = self_header_bytes(h->nranks) + ((size_t)h->nranks + 2) * slot +
                  self_p2p_area_bytes(h->nranks);
    rc = self_attach(h, ctx);
    if (rc != COLLPROF_OK) {
        free(ctx);
        return rc;
    }
    ctx->bar = ctx->seg;
    ctx->ctl = (self_lane_ctl_t *)(ctx->bar + 1);
    ctx->most = (size_t *)(ctx->ctl + 1);
    ctx->slots = (unsigned char *)ctx->seg + self_header_bytes(h->nranks);
    ctx->results = ctx->slots + (size_t)h->nranks * slot;
    ctx->p2p = ctx->results + 2 * slot;
    ctx->ring = self_p2p_ring_bytes(h->nranks);
    if (h->rank == 0 && h->log != NULL) {
        h->log(COLLPROF_LOG_INFO, "self: a %zu-byte shared memory segment for %d ranks",
               ctx->seglen, h->nranks);
    }
    if (self_async_init(ctx) != COLLPROF_OK) {
        munmap(ctx->seg, ctx->seglen); /* (out of memory: the core agrees on failures) */
        free(ctx);
        self_set_error(NULL, "init: out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    *out = ctx;
    return COLLPROF_OK;
}

static int self_finalize(void *vctx)
{
    self_ctx_t *ctx = vctx;
    if (!ctx) {
        return COLLPROF_OK;
    }
    self_async_free(ctx); /* its lane's ops first: every rank's worker ends alike */
    self_barrier(ctx);
    self_p2p_free(ctx);
    munmap(ctx->seg, ctx->seglen);
    free(ctx);
    return COLLPROF_OK;
}

static int self_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    self_ctx_t *ctx = vctx;
    void *p = NULL;
    if (memtype != COLLPROF_MEM_HOST) {
        self_set_error(ctx, "mem_alloc: %s memory is not supported (host only)",
                       collprof_memtype_name(memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (posix_memalign(&p, SELF_PAGE, bytes ? bytes : 1) != 0) {
        self_set_error(ctx, "mem_alloc: %zu bytes: out of memory", bytes);
        return COLLPROF_ERR_NO_MEMORY;
    }
    *ptr = p;
    return COLLPROF_OK;
}

static int self_mem_free(void *vctx, int memtype, void *ptr)
{
    if (memtype != COLLPROF_MEM_HOST) {
        self_set_error(vctx, "mem_free: %s memory is not supported (host only)",
                       collprof_memtype_name(memtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    free(ptr);
    return COLLPROF_OK;
}

/* post(): a send or recv on the rings (self_p2p.c), a collective on the worker's lane
 * (self_async.c); wait() tells them apart by their requests' first member. */
static int self_post(void *vctx, const collprof_args_t *a, void **req)
{
    if (a->op != COLLPROF_OP_SENDRECV && a->op >= 0 && a->op < COLLPROF_OP_COUNT &&
        !(collprof_op_info((int)a->op)->flags & COLLPROF_OPF_NONBLOCKING)) {
        return self_post_coll(vctx, a, req);
    }
    return self_p2p_post(vctx, a, req);
}

static int self_wait(void *vctx, void *req)
{
    return *(const int *)req ? self_wait_coll(vctx, req) : self_p2p_wait(vctx, req);
}

static const char *self_last_error(void *vctx)
{
    const self_ctx_t *ctx = vctx;
    return ctx ? ctx->err : self_err;
}

static int self_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    const self_ctx_t *ctx = vctx;
    if (ctx == NULL || out == NULL || memtype != COLLPROF_MEM_HOST) {
        self_set_error(vctx, "describe: host memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    snprintf(out->memory, sizeof(out->memory), "posix_memalign, %d-byte aligned", SELF_PAGE);
    snprintf(out->device, sizeof(out->device), "host");
    snprintf(out->transport, sizeof(out->transport), "POSIX shared memory, %zu KiB slot per rank",
             ctx->slot / 1024);
    return COLLPROF_OK;
}

#define SELF_STR_(x) #x
#define SELF_STR(x)  SELF_STR_(x)
static const collprof_option_t self_options[] = {
    {"self-slot-kib", COLLPROF_OPT_INT, SELF_STR(SELF_SLOT_KIB), 1, 1ll << 22, NULL,
     "KiB of shared memory each rank exchanges per step", 0},
};

/* tests/plugins/perrank.c builds this file again under another name, with its own describe() */
#ifndef SELF_ENTRY_NAME
#define SELF_ENTRY_NAME     "self"
#define SELF_ENTRY_DESCRIBE self_describe
#endif

__attribute__((visibility("default"))) const collprof_backend_t collprof_backend_v1 = {
    .size = sizeof(collprof_backend_t),
    .abi_version = COLLPROF_PLUGIN_ABI_VERSION,
    .name = SELF_ENTRY_NAME,
    .version = PACKAGE_VERSION,
    .description = "collprof's own shared-memory collectives, no library (overhead baseline)",
    /* GROUPS: a second context beside the first is a second segment (collprof --repeats) */
    .flags =
        COLLPROF_BACKEND_ON_REQUEST | COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_SHARED_BUFFERS,
    .query = self_query,
    .init = self_init,
    .finalize = self_finalize,
    .select_variant = collprof_no_select_variant,
    .mem_alloc = self_mem_alloc,
    .mem_free = self_mem_free,
    .mem_copy = collprof_no_mem_copy,
    .run = self_run,
    .run_batch = collprof_no_run_batch,
    .last_error = self_last_error,
    .options = self_options,
    .noptions = sizeof(self_options) / sizeof(self_options[0]),
    .study_ops = 0,
    .describe = SELF_ENTRY_DESCRIBE,
    .copy_rate = NULL,
    .post = self_post,
    .wait = self_wait,
};
