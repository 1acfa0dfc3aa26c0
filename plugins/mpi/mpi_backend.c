#include "config.h"

/*
 * collprof backend for MPI (tested with Open MPI 4.1).
 *
 * Every collprof operation maps to one blocking MPI call on a
 * communicator owned by this plugin.  Variants are Open MPI's coll/tuned
 * algorithms.  They are discovered from the linked library through MPI_T
 * (each coll_tuned_<op>_algorithm control variable is an enum whose items
 * name the algorithms), so the list always matches the library that runs.
 *
 * The code is spread over four files; mpi_internal.h lists them, and
 * mpi_tuned.c tells how a variant is forced.
 */

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpi_internal.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

/* ---- library version and query ----------------------------------------- */

/*
 * "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4,
 * May 26, 2022" becomes "Open MPI v4.1.4, package: Debian OpenMPI": the first
 * line, blanks squeezed, cut before the third comma-separated field (the
 * rest repeats the version and adds a date).
 */
static void mpi_be_library_version(void)
{
    char raw[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0, commas = 0;
    size_t o = 0;
    char *out = mpi_be.libversion;
    if (out[0] != '\0') {
        return;
    }
    /* One of the few MPI calls allowed before MPI_Init. */
    if (MPI_Get_library_version(raw, &len) != MPI_SUCCESS || len <= 0) {
        snprintf(out, sizeof(mpi_be.libversion), "MPI (unknown library)");
        return;
    }
    raw[sizeof(raw) - 1] = '\0';
    for (const char *p = raw; *p != '\0' && *p != '\n' && o + 1 < sizeof(mpi_be.libversion); p++) {
        int blank = (*p == ' ' || *p == '\t' || *p == '\r');
        if (*p == ',' && ++commas == 2) {
            break;
        }
        if (blank && (o == 0 || out[o - 1] == ' ')) {
            continue;
        }
        out[o++] = blank ? ' ' : *p;
    }
    while (o > 0 && out[o - 1] == ' ') {
        o--;
    }
    out[o] = '\0';
}

static int mpi_be_query(void *ctx, collprof_caps_t *caps)
{
    (void)ctx; /* the same answer before and after init */
    collprof_caps_t c;
    int rc = collprof_check_caps(caps, mpi_be.err, sizeof(mpi_be.err));
    if (rc != COLLPROF_OK) {
        return rc;
    }
    mpi_be_library_version();
    mpi_be_discover();

    memset(&c, 0, sizeof(c));
    c.size = caps->size;
    c.library_version = mpi_be.libversion;
    c.ops = 0;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        c.ops |= COLLPROF_BIT(op);
    }
    c.dtypes = COLLPROF_BIT(COLLPROF_DTYPE_INT8) | COLLPROF_BIT(COLLPROF_DTYPE_UINT8) |
               COLLPROF_BIT(COLLPROF_DTYPE_INT32) | COLLPROF_BIT(COLLPROF_DTYPE_UINT32) |
               COLLPROF_BIT(COLLPROF_DTYPE_INT64) | COLLPROF_BIT(COLLPROF_DTYPE_UINT64) |
               COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32) | COLLPROF_BIT(COLLPROF_DTYPE_FLOAT64);
    c.redops = COLLPROF_BIT(COLLPROF_REDOP_SUM) | COLLPROF_BIT(COLLPROF_REDOP_PROD) |
               COLLPROF_BIT(COLLPROF_REDOP_MIN) | COLLPROF_BIT(COLLPROF_REDOP_MAX);
    c.memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    c.variants = mpi_be.nvariants ? mpi_be.variants : NULL;
    c.nvariants = mpi_be.nvariants;
    /* post(): point-to-point and the collectives with a non-blocking form */
    c.post_ops = COLLPROF_BIT(COLLPROF_OP_SENDRECV) | COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) |
                 COLLPROF_BIT(COLLPROF_OP_ALLGATHER) | COLLPROF_BIT(COLLPROF_OP_ALLTOALL) |
                 COLLPROF_BIT(COLLPROF_OP_BROADCAST) | COLLPROF_MPI_POST_MORE |
                 COLLPROF_MPI_POST_VAR;
    /* per-rank blocks: a reducescatter as MPI_Reduce_scatter with recvcounts (and posted) */
    c.var_ops = COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER);
    /* an older core's struct may end before the appended fields (zeroed here) */
    memcpy(caps, &c, caps->size < sizeof(c) ? caps->size : sizeof(c));
    return COLLPROF_OK;
}

/* ---- init / finalize -------------------------------------------------- */

static void mpi_be_ctx_free(mpi_be_ctx_t *ctx)
{
    free(ctx->a2av_scounts);
    free(ctx->a2av_sdispls);
    free(ctx->a2av_rcounts);
    free(ctx->a2av_rdispls);
    free(ctx);
}

/* MPI cannot be started twice: a failed init or a finalize leaves nothing to retry. */
static int mpi_be_stop_mpi(void)
{
    int rc = MPI_SUCCESS;
    if (mpi_be.tool_state > 0) {
        MPI_T_finalize();
        mpi_be.tool_state = 0;
    }
    if (mpi_be.mpi_owned) {
        rc = MPI_Finalize();
        mpi_be.mpi_owned = 0;
    }
    return rc;
}

/* The host stands for a group of the job's ranks (split cells). */
static int mpi_be_group(const collprof_host_t *host)
{
    return host->size >= offsetof(collprof_host_t, world_nranks) + sizeof(int) &&
           host->world_ranks != NULL;
}

/* The group's communicator as ctx->base: collective over the group only. */
static int mpi_be_group_comm(mpi_be_ctx_t *ctx, const collprof_host_t *host)
{
    MPI_Group world, group;
    int rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Group_incl(world, host->nranks, host->world_ranks, &group);
        MPI_Group_free(&world);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_create_group(MPI_COMM_WORLD, group, 0x5c17, &ctx->base);
        MPI_Group_free(&group);
    }
    if (rc != MPI_SUCCESS) {
        return mpi_be_mpi_error(ctx, "MPI_Comm_create_group", rc);
    }
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->comm[op] = ctx->base;
    }
    return COLLPROF_OK;
}

/* MPI started (unless the process already did) and matching the job; *provided: thread level */
static int mpi_be_start_mpi(const collprof_host_t *host, int *provided)
{
    int flag = 0, rc, size = 0, rank = -1;
    MPI_Finalized(&flag);
    if (flag) {
        mpi_be_set_error(NULL, "MPI was already finalized in this process and cannot restart");
        return COLLPROF_ERR_BACKEND;
    }
    mpi_be_library_version();
    mpi_be_discover(); /* before MPI_Init: it sets coll_tuned_use_dynamic_rules */

    MPI_Initialized(&flag);
    if (!flag) {
        /* SERIALIZED: the core may call us from a thread other than the one
         * that called init, but never from two at once. */
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
        if (rc != MPI_SUCCESS) {
            mpi_be_set_error(NULL, "MPI_Init_thread failed (%d)", rc);
            return COLLPROF_ERR_BACKEND;
        }
        mpi_be.mpi_owned = 1;
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (size == host->nranks && rank == host->rank) {
        return COLLPROF_OK;
    }
    if (mpi_be_group(host) && size == host->world_nranks && rank == host->world_ranks[host->rank]) {
        return COLLPROF_OK;
    }
    if (size == 1 && host->nranks > 1) {
        mpi_be_set_error(NULL,
                         "MPI world has 1 rank but the job has %d: Open MPI started as a "
                         "singleton; run under mpirun or srun --mpi=pmix",
                         host->nranks);
    } else {
        mpi_be_set_error(NULL, "MPI world is rank %d of %d but the job says rank %d of %d", rank,
                         size, host->rank, host->nranks);
    }
    mpi_be_stop_mpi();
    return COLLPROF_ERR_BACKEND;
}

/* A context for the job's rank and size, with its alltoallv arrays; NULL when out of memory. */
static mpi_be_ctx_t *mpi_be_ctx_new(const collprof_host_t *host)
{
    mpi_be_ctx_t *ctx = calloc(1, sizeof(*ctx));
    size_t n = (size_t)host->nranks;
    if (!ctx) {
        return NULL;
    }
    ctx->host = host;
    ctx->rank = host->rank;
    ctx->nranks = host->nranks;
    ctx->a2av_scounts = calloc(n, sizeof(int));
    ctx->a2av_sdispls = calloc(n, sizeof(int));
    ctx->a2av_rcounts = calloc(n, sizeof(int));
    ctx->a2av_rdispls = calloc(n, sizeof(int));
    if (!ctx->a2av_scounts || !ctx->a2av_sdispls || !ctx->a2av_rcounts || !ctx->a2av_rdispls) {
        mpi_be_ctx_free(ctx);
        return NULL;
    }
    ctx->base = MPI_COMM_WORLD;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->comm[op] = MPI_COMM_WORLD;
    }
    return ctx;
}

static int mpi_be_init(const collprof_host_t *host, void **ctxp)
{
    mpi_be_ctx_t *ctx;
    int provided = 0, rc;

    if (!host || !ctxp) {
        mpi_be_set_error(NULL, "init: host or ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (host->size < sizeof(collprof_host_t) || host->nranks < 1 || host->rank < 0 ||
        host->rank >= host->nranks) {
        mpi_be_set_error(NULL, "init: bad host table (size %zu, rank %d of %d)", host->size,
                         host->rank, host->nranks);
        return COLLPROF_ERR_INVALID;
    }
    rc = mpi_be_start_mpi(host, &provided);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    const int group = mpi_be_group(host);
    ctx = mpi_be_ctx_new(host);
    if (!ctx) {
        mpi_be_set_error(NULL, "init: out of memory");
        if (!group) {
            mpi_be_stop_mpi();
        }
        return COLLPROF_ERR_NO_MEMORY;
    }
    /* Report errors instead of aborting the job: the core records them per cell.
     * Our duplicates inherit the handler. */
    rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rc == MPI_SUCCESS && group && (rc = mpi_be_group_comm(ctx, host)) == COLLPROF_OK) {
        rc = MPI_Comm_set_errhandler(ctx->base, MPI_ERRORS_RETURN);
    }
    if (rc != MPI_SUCCESS) {
        if (ctx->err[0] == '\0') {
            mpi_be_mpi_error(ctx, "MPI_Comm_set_errhandler", rc);
        }
        mpi_be_set_error(NULL, "%s", ctx->err);
        if (ctx->base != MPI_COMM_WORLD) {
            MPI_Comm_free(&ctx->base);
        }
        mpi_be_ctx_free(ctx);
        if (!group) {
            mpi_be_stop_mpi();
        }
        return COLLPROF_ERR_BACKEND;
    }
    mpi_be_check_forcing(ctx);
    if (!ctx->forcing_ok) {
        mpi_be_log(ctx, COLLPROF_LOG_INFO, "coll/tuned variants unavailable: %s", ctx->forcing_why);
    }
    mpi_be_log(ctx, COLLPROF_LOG_DEBUG, "%s, thread level %d, %zu variants", mpi_be.libversion,
               provided, mpi_be.nvariants);
    *ctxp = ctx;
    return COLLPROF_OK;
}

static int mpi_be_finalize(void *vctx)
{
    mpi_be_ctx_t *ctx = vctx;
    int rc;
    if (!ctx) {
        mpi_be_set_error(NULL, "finalize: ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (ctx->comm[op] != ctx->base) {
            MPI_Comm_free(&ctx->comm[op]);
        }
    }
    if (ctx->base != MPI_COMM_WORLD) { /* a group's: MPI stays up for the job's context */
        MPI_Comm_free(&ctx->base);
        mpi_be_ctx_free(ctx);
        return COLLPROF_OK;
    }
    mpi_be_ctx_free(ctx);
    rc = mpi_be_stop_mpi();
    if (rc != MPI_SUCCESS) {
        mpi_be_set_error(NULL, "MPI_Finalize failed (%d)", rc);
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

/* ---- memory ----------------------------------------------------------- */

static int mpi_be_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    mpi_be_ctx_t *ctx = vctx;
    void *p = NULL;
    int rc;
    if (!ptr) {
        mpi_be_set_error(ctx, "mem_alloc: ptr is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "mem_alloc: memory type %d is not offered (host only)", memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    /* Page aligned, so buffers start alike whatever the size. */
    rc = posix_memalign(&p, 4096, bytes ? bytes : 1);
    if (rc != 0) {
        mpi_be_set_error(ctx, "mem_alloc: posix_memalign(%zu bytes) failed (%d)", bytes, rc);
        return COLLPROF_ERR_NO_MEMORY;
    }
    *ptr = p;
    return COLLPROF_OK;
}

static int mpi_be_mem_free(void *vctx, int memtype, void *ptr)
{
    mpi_be_ctx_t *ctx = vctx;
    if (memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "mem_free: memory type %d is not offered (host only)", memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    free(ptr);
    return COLLPROF_OK;
}

static COLLPROF_DEFINE_LAST_ERROR(mpi_be_last_error, mpi_be_ctx_t, err, mpi_be.err);

/* ---- provenance ------------------------------------------------------- */

/*
 * Open MPI names the components it selects nowhere cheap to read, so the
 * transport is what its MCA variables restrict the choice to (pml, btl,
 * btl_tcp_if_include), as set; "" when none is set.
 */
static int mpi_be_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    static const char *vars[] = {"pml", "btl", "btl_tcp_if_include"};
    mpi_be_ctx_t *ctx = vctx;
    if (ctx == NULL || out == NULL || memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "describe: host memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    snprintf(out->memory, sizeof(out->memory), "posix_memalign, 4096-byte aligned");
    snprintf(out->device, sizeof(out->device), "host");
    out->transport[0] = '\0';
    for (size_t i = 0; mpi_be.tool_state > 0 && i < sizeof(vars) / sizeof(vars[0]); i++) {
        char v[96];
        mpi_be_cvar_str(vars[i], v, sizeof(v));
        size_t at = strlen(out->transport);
        if (v[0] != '\0' && at < sizeof(out->transport)) {
            snprintf(out->transport + at, sizeof(out->transport) - at, "%s%s=%s", at ? " " : "MCA ",
                     vars[i], v);
        }
    }
    return COLLPROF_OK;
}

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD(
        "mpi", PACKAGE_VERSION,
        "MPI collectives (Open MPI coll/tuned algorithms as variants, via MPI_T)"),
    .flags =
        COLLPROF_BACKEND_RTLD_GLOBAL | COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_SHARED_BUFFERS,
    COLLPROF_BACKEND_SLOTS(mpi_be, collprof_no_mem_copy, collprof_no_run_batch),
    COLLPROF_BACKEND_EXTRAS(NULL, 0, 0, mpi_be_describe),
    .post = mpi_be_post_op,
    .wait = mpi_be_wait,
};
