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
 * How a variant is forced: coll/tuned reads coll_tuned_<op>_algorithm
 * when it enables its module on a communicator, not on every call.
 * select_variant() therefore writes the control variable, duplicates
 * MPI_COMM_WORLD (the new communicator's module captures the value),
 * puts the variable back, and runs that op on the duplicate from then on.
 * Putting it back keeps each communicator forced for its own op only:
 * algorithms that are built from other collectives (allreduce
 * "nonoverlapping" = reduce + bcast) then use the library's own choice for
 * the inner ones, whatever was selected for those ops earlier.
 *
 * Forced values are only honoured when coll_tuned_use_dynamic_rules is
 * true, a read-only variable taken from the environment when Open MPI
 * first registers its variables, which is MPI_T_init_thread() or
 * MPI_Init(), whichever comes first.  Hence the setenv() before both.
 */

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include <collprof/plugin_util.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define MPI_BE_ERR_LEN      512
#define MPI_BE_NAME_LEN     48
#define MPI_BE_DESC_LEN     384
#define MPI_BE_MAX_ALGS     24
#define MPI_BE_MAX_VARIANTS 64
#define MPI_BE_TAG          7411 /* sendrecv tag; any constant both sides agree on */

/* ---- process-wide state (MPI itself is process-wide) ------------------ */

/* One algorithm of one op: its collprof name and its enum value. */
typedef struct mpi_be_alg {
    char name[MPI_BE_NAME_LEN];
    int value;
} mpi_be_alg_t;

/* The coll/tuned control variable that governs one collprof op. */
typedef struct mpi_be_opvar {
    const char *stem; /* "allreduce": the variable is coll_tuned_<stem>_algorithm */
    int found;        /* the variable exists in this library */
    int nalgs;
    mpi_be_alg_t algs[MPI_BE_MAX_ALGS];
} mpi_be_opvar_t;

/*
 * The variable behind each op.  MPI_Reduce_scatter_block has its own in
 * Open MPI >= 4.0 (coll_tuned_reduce_scatter_block_algorithm: basic_linear,
 * recursive_doubling, recursive_halving, butterfly; checked with pml
 * monitoring: each changes the traffic of MPI_Reduce_scatter_block).
 * coll_tuned_reduce_scatter_algorithm only governs MPI_Reduce_scatter,
 * which collprof does not call, so it is not used as a fallback.
 */
static const char *mpi_be_stem(collprof_op_t op)
{
    if (collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING) {
        return NULL; /* libnbc's schedules, not coll/tuned's: "default" only */
    }
    switch (op) {
    case COLLPROF_OP_REDUCESCATTER: return "reduce_scatter_block";
    case COLLPROF_OP_BROADCAST: return "bcast";
    case COLLPROF_OP_SENDRECV: return NULL; /* point to point: nothing to tune */
    default: return collprof_op_name(op);   /* the other stems are collprof's names */
    }
}

static struct {
    int tool_state; /* 0 never tried, 1 MPI_T initialised by us, -1 failed */
    int discovered; /* the variant table below is final */
    int mpi_owned;  /* we called MPI_Init_thread, so we call MPI_Finalize */
    mpi_be_opvar_t opvars[COLLPROF_OP_COUNT];
    collprof_variant_t variants[MPI_BE_MAX_VARIANTS];
    char vnames[MPI_BE_MAX_VARIANTS][MPI_BE_NAME_LEN];
    char vdescs[MPI_BE_MAX_VARIANTS][MPI_BE_DESC_LEN];
    size_t nvariants;
    char libversion[128];
    char err[MPI_BE_ERR_LEN]; /* last_error(NULL): query/init failures */
} mpi_be;

/* ---- per-init context ------------------------------------------------- */

typedef struct mpi_be_ctx {
    const collprof_host_t *host;
    int rank;
    int nranks;
    int forcing_ok; /* coll_tuned_use_dynamic_rules is on and MPI_T works */
    char forcing_why[160];
    MPI_Comm base; /* MPI_COMM_WORLD, or the group's communicator (split cells) */
    MPI_Comm comm[COLLPROF_OP_COUNT]; /* base or our duplicate */
    /* alltoallv/allgatherv arguments converted to int, sized nranks at init so that
     * run() never allocates inside the timed region */
    int *a2av_scounts, *a2av_sdispls, *a2av_rcounts, *a2av_rdispls;
    char err[MPI_BE_ERR_LEN];
} mpi_be_ctx_t;

static COLLPROF_DEFINE_SET_ERROR(mpi_be_set_error, mpi_be_ctx_t, err, mpi_be.err);

__attribute__((format(printf, 3, 4))) static void mpi_be_log(const mpi_be_ctx_t *ctx, int level,
                                                             const char *fmt, ...)
{
    char buf[MPI_BE_ERR_LEN];
    va_list ap;
    if (!ctx || !ctx->host || !ctx->host->log) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    ctx->host->log(level, "%s", buf);
}

/* Keep MPI's own text and class: they say more than any code of ours. */
static int mpi_be_mpi_error(mpi_be_ctx_t *ctx, const char *call, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) {
        snprintf(msg, sizeof(msg), "unknown MPI error");
    }
    MPI_Error_class(rc, &cls);
    mpi_be_set_error(ctx, "%s failed: %s (MPI error %d, class %d)", call, msg, rc, cls);
    return COLLPROF_ERR_BACKEND;
}

/* ---- discovery (query, before MPI_Init) ------------------------------- */

/* collprof variant names are lower case, no spaces, no '-' (CLI/matrix tokens). */
static void mpi_be_normalise(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] != '\0' && i + 1 < len; i++) {
        char c = src[i];
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        } else if (c == ' ' || c == '-' || c == ',') {
            c = '_';
        }
        dst[i] = c;
    }
    dst[i] = '\0';
}

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

/*
 * MPI_T is reference counted and may be initialised before MPI_Init, which
 * is what lets query() list the algorithms without starting MPI.  It stays
 * initialised until finalize(): ending it and starting MPI later works in
 * 4.1.4, but nothing is gained by relying on that.
 */
static int mpi_be_tool_init(void)
{
    int provided = 0, rc;
    if (mpi_be.tool_state != 0) {
        return mpi_be.tool_state > 0 ? COLLPROF_OK : COLLPROF_ERR_BACKEND;
    }
    /* Must precede the first MPI_T_init_thread/MPI_Init (see the top of the
     * file).  No overwrite: a user who set it to 0 keeps 0, and init() then
     * reports that variants cannot be forced. */
    setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
    rc = MPI_T_init_thread(MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
        mpi_be.tool_state = -1;
        mpi_be_set_error(NULL, "MPI_T_init_thread failed (%d)", rc);
        return COLLPROF_ERR_BACKEND;
    }
    mpi_be.tool_state = 1;
    return COLLPROF_OK;
}

/* Index of a control variable by name, or -1 (absent from this library). */
static int mpi_be_cvar_index(const char *name)
{
    int idx = -1;
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS) {
        return -1;
    }
    return idx;
}

/* Read the algorithm enum of one op's variable into opvars[op]. */
static int mpi_be_discover_op(collprof_op_t op)
{
    mpi_be_opvar_t *ov = &mpi_be.opvars[op];
    char cvar[96], vname[128], desc[16], ename[128];
    int nlen = sizeof(vname), dlen = sizeof(desc), elen = sizeof(ename);
    int verbosity, bind, scope, nitems = 0, idx;
    MPI_Datatype dt;
    MPI_T_enum et;

    snprintf(cvar, sizeof(cvar), "coll_tuned_%s_algorithm", ov->stem);
    idx = mpi_be_cvar_index(cvar);
    if (idx < 0) {
        return COLLPROF_OK; /* this library has no such variable: default only */
    }
    /* desc is deliberately tiny: MPI_T truncates, we only want the enum. */
    if (MPI_T_cvar_get_info(idx, vname, &nlen, &verbosity, &dt, &et, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        dt != MPI_INT || et == MPI_T_ENUM_NULL ||
        MPI_T_enum_get_info(et, &nitems, ename, &elen) != MPI_SUCCESS) {
        mpi_be_set_error(NULL, "%s is not an integer enum in this MPI", cvar);
        return COLLPROF_ERR_BACKEND;
    }
    if (scope == MPI_T_SCOPE_CONSTANT || scope == MPI_T_SCOPE_READONLY) {
        return COLLPROF_OK; /* listed but cannot be written: nothing to force */
    }
    ov->found = 1;
    for (int i = 0; i < nitems && ov->nalgs < MPI_BE_MAX_ALGS; i++) {
        char item[MPI_BE_NAME_LEN * 2];
        int ilen = sizeof(item), value = 0;
        mpi_be_alg_t *a = &ov->algs[ov->nalgs];
        if (MPI_T_enum_get_item(et, i, &value, item, &ilen) != MPI_SUCCESS) {
            continue;
        }
        /* 0 "ignore" means "let the decision rules choose": our "default". */
        if (value == 0 || !strcmp(item, "ignore")) {
            continue;
        }
        mpi_be_normalise(a->name, sizeof(a->name), item);
        if (!strcmp(a->name, "default")) {
            /* allgatherv's 1 "default" is a gatherv to rank 0 then a bcast; collprof's
             * "default" is the decision rules' choice, so it needs another name */
            snprintf(a->name, sizeof(a->name), "%s",
                     op == COLLPROF_OP_ALLGATHERV ? "gatherv_bcast" : "basic_default");
        }
        a->value = value;
        ov->nalgs++;
    }
    return COLLPROF_OK;
}

/* Merge the per-op algorithms into one variant per name. */
static void mpi_be_build_variants(void)
{
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        for (int i = 0; i < mpi_be.opvars[op].nalgs; i++) {
            const char *name = mpi_be.opvars[op].algs[i].name;
            size_t v = 0;
            while (v < mpi_be.nvariants && strcmp(mpi_be.vnames[v], name) != 0) {
                v++;
            }
            if (v == mpi_be.nvariants) {
                if (v == MPI_BE_MAX_VARIANTS) {
                    continue;
                }
                /* both arrays are MPI_BE_NAME_LEN long, so the copy fits */
                memcpy(mpi_be.vnames[v], name, strlen(name) + 1);
                mpi_be.variants[v].name = mpi_be.vnames[v];
                mpi_be.variants[v].description = mpi_be.vdescs[v];
                mpi_be.nvariants++;
            }
            mpi_be.variants[v].ops |= COLLPROF_BIT(op);
        }
    }
    /* "Open MPI coll/tuned allreduce/allgather algorithm ring (forced via
     *  coll_tuned_<op>_algorithm=4/4)" */
    for (size_t v = 0; v < mpi_be.nvariants; v++) {
        char ops[160] = "", vals[64] = "";
        const char *stem = NULL;
        int nops = 0;
        for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
            const mpi_be_opvar_t *ov = &mpi_be.opvars[op];
            if (!(mpi_be.variants[v].ops & COLLPROF_BIT(op))) {
                continue;
            }
            for (int i = 0; i < ov->nalgs; i++) {
                if (!strcmp(ov->algs[i].name, mpi_be.vnames[v])) {
                    size_t lo = strlen(ops), lv = strlen(vals);
                    snprintf(ops + lo, sizeof(ops) - lo, "%s%s", nops ? "/" : "", ov->stem);
                    snprintf(vals + lv, sizeof(vals) - lv, "%s%d", nops ? "/" : "",
                             ov->algs[i].value);
                    stem = ov->stem;
                    nops++;
                    break;
                }
            }
        }
        snprintf(mpi_be.vdescs[v], MPI_BE_DESC_LEN,
                 "Open MPI coll/tuned %s algorithm %s (forced via coll_tuned_%s_algorithm=%s)", ops,
                 mpi_be.vnames[v], nops == 1 ? stem : "<op>", vals);
        if (!strcmp(mpi_be.vnames[v], "segmented_ring")) {
            size_t l = strlen(mpi_be.vdescs[v]);
            snprintf(mpi_be.vdescs[v] + l, MPI_BE_DESC_LEN - l, ", 1 MiB segments");
        }
    }
}

/* Build the variant table once; on failure it stays empty ("default" only). */
static void mpi_be_discover(void)
{
    if (mpi_be.discovered) {
        return;
    }
    mpi_be.discovered = 1;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        mpi_be.opvars[op].stem = mpi_be_stem((collprof_op_t)op);
    }
    if (mpi_be_tool_init() != COLLPROF_OK) {
        size_t l = strlen(mpi_be.err);
        snprintf(mpi_be.err + l, sizeof(mpi_be.err) - l,
                 "; no coll/tuned algorithms listed, only \"default\"");
        return;
    }
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (mpi_be.opvars[op].stem && mpi_be_discover_op((collprof_op_t)op) != COLLPROF_OK) {
            /* all or nothing: a half-read table would hide algorithms silently */
            memset(mpi_be.opvars, 0, sizeof(mpi_be.opvars));
            for (int o = 0; o < COLLPROF_OP_COUNT; o++) {
                mpi_be.opvars[o].stem = mpi_be_stem((collprof_op_t)o);
            }
            size_t l = strlen(mpi_be.err);
            snprintf(mpi_be.err + l, sizeof(mpi_be.err) - l,
                     "; MPI_T discovery failed, only \"default\" is offered");
            return;
        }
    }
    mpi_be_build_variants();
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
    /* an older core's struct may end before the appended fields (zeroed here) */
    memcpy(caps, &c, caps->size < sizeof(c) ? caps->size : sizeof(c));
    return COLLPROF_OK;
}

/* ---- control variables ------------------------------------------------ */

/* Read (and optionally first write) an int control variable bound to no object. */
static int mpi_be_cvar_rw(mpi_be_ctx_t *ctx, const char *name, const int *in, int *out)
{
    MPI_T_cvar_handle h;
    int idx = mpi_be_cvar_index(name), n = 0, rc, v = 0;
    if (idx < 0) {
        mpi_be_set_error(ctx, "MPI control variable %s does not exist in this library", name);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    rc = MPI_T_cvar_handle_alloc(idx, NULL, &h, &n);
    if (rc != MPI_SUCCESS) {
        mpi_be_set_error(ctx, "MPI_T_cvar_handle_alloc(%s) failed (%d)", name, rc);
        return COLLPROF_ERR_BACKEND;
    }
    if (n != 1) {
        MPI_T_cvar_handle_free(&h);
        mpi_be_set_error(ctx, "%s has %d values, expected 1", name, n);
        return COLLPROF_ERR_BACKEND;
    }
    if (in && (rc = MPI_T_cvar_write(h, in)) != MPI_SUCCESS) {
        MPI_T_cvar_handle_free(&h);
        mpi_be_set_error(ctx, "MPI_T_cvar_write(%s=%d) failed (%d)", name, *in, rc);
        return COLLPROF_ERR_BACKEND;
    }
    rc = MPI_T_cvar_read(h, &v);
    MPI_T_cvar_handle_free(&h);
    if (rc != MPI_SUCCESS) {
        mpi_be_set_error(ctx, "MPI_T_cvar_read(%s) failed (%d)", name, rc);
        return COLLPROF_ERR_BACKEND;
    }
    *out = v;
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

/* Why forced algorithms cannot work here, or leave forcing_ok set. */
static void mpi_be_check_forcing(mpi_be_ctx_t *ctx)
{
    int dyn = 0;
    ctx->forcing_ok = 0;
    if (mpi_be.tool_state <= 0) {
        snprintf(ctx->forcing_why, sizeof(ctx->forcing_why), "MPI_T is not available");
        return;
    }
    if (mpi_be_cvar_rw(ctx, "coll_tuned_use_dynamic_rules", NULL, &dyn) != COLLPROF_OK) {
        snprintf(ctx->forcing_why, sizeof(ctx->forcing_why),
                 "coll/tuned is not in this MPI (no coll_tuned_use_dynamic_rules)");
        ctx->err[0] = '\0';
        return;
    }
    if (!dyn) {
        snprintf(ctx->forcing_why, sizeof(ctx->forcing_why),
                 "coll_tuned_use_dynamic_rules is false (set outside collprof), so Open MPI "
                 "ignores forced algorithms");
        return;
    }
    if (ctx->nranks < 2) {
        snprintf(ctx->forcing_why, sizeof(ctx->forcing_why),
                 "with 1 rank Open MPI uses coll/self and coll/tuned algorithms do not apply");
        return;
    }
    ctx->forcing_ok = 1;
    /* An OMPI_MCA_coll_tuned_<op>_algorithm from the user also applies to
     * MPI_COMM_WORLD, which serves ops that never select a variant; an
     * explicit "default" still resets to the decision rules. */
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        char cvar[96];
        int v = 0;
        if (!mpi_be.opvars[op].found) {
            continue;
        }
        snprintf(cvar, sizeof(cvar), "coll_tuned_%s_algorithm", mpi_be.opvars[op].stem);
        if (mpi_be_cvar_rw(ctx, cvar, NULL, &v) == COLLPROF_OK && v != 0) {
            mpi_be_log(ctx, COLLPROF_LOG_WARN,
                       "%s=%d is set outside collprof: %s cells that select no variant use it",
                       cvar, v, collprof_op_name(op));
        }
    }
    ctx->err[0] = '\0';
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

/* ---- variants --------------------------------------------------------- */

static int mpi_be_is_pow2(int n)
{
    return n > 0 && (n & (n - 1)) == 0;
}

/*
 * Algorithms that Open MPI 4.1 accepts when forced but cannot run as
 * themselves on this communicator size; NULL when fine.  Refusing them
 * keeps a cell from being labelled with an algorithm that did not run.
 * (Count-dependent fallbacks, e.g. ring allreduce with count < nranks,
 * cannot be judged here: select_variant() does not know the count.)
 */
static const char *mpi_be_unusable(collprof_op_t op, const char *alg, int nranks)
{
    /* 4.1.4 fails these with MPI_ERR_UNSUPPORTED_OPERATION on every call. */
    if (!strcmp(alg, "two_proc") && nranks != 2) {
        return "two_proc is Open MPI's 2-rank special case";
    }
    if (op == COLLPROF_OP_ALLGATHER || op == COLLPROF_OP_ALLGATHERV) {
        if (op == COLLPROF_OP_ALLGATHER && !strcmp(alg, "recursive_doubling") &&
            !mpi_be_is_pow2(nranks)) {
            return "Open MPI silently runs bruck instead when the size is not a power of two";
        }
        if (!strcmp(alg, "neighbor") && nranks % 2 != 0) {
            return "Open MPI silently runs ring instead when the size is odd";
        }
    }
    return NULL;
}

/*
 * Forced algorithms take their segment size from
 * coll_tuned_<op>_algorithm_segmentsize, 0 (no segmentation) by default.
 * For allreduce segmented_ring that makes Open MPI 4.1 run plain ring on
 * every count (same traffic under pml monitoring), so unless the user set
 * a size, use 1 MiB, the one Open MPI's own decision rules pass it.  Other
 * algorithms keep the library's forced default: unsegmented.
 */
#define MPI_BE_SEGRING_CVAR    "coll_tuned_allreduce_algorithm_segmentsize"
#define MPI_BE_SEGRING_SEGSIZE (1 << 20)

/* 1 when a segment size was written and must be put back (*old). */
static int mpi_be_segsize_push(mpi_be_ctx_t *ctx, collprof_op_t op, const mpi_be_alg_t *alg,
                               int *old)
{
    int cur = 0, seg = MPI_BE_SEGRING_SEGSIZE, back = 0;
    if (op != COLLPROF_OP_ALLREDUCE || !alg || strcmp(alg->name, "segmented_ring") != 0) {
        return 0;
    }
    if (mpi_be_cvar_rw(ctx, MPI_BE_SEGRING_CVAR, NULL, &cur) != COLLPROF_OK || cur != 0 ||
        mpi_be_cvar_rw(ctx, MPI_BE_SEGRING_CVAR, &seg, &back) != COLLPROF_OK) {
        ctx->err[0] = '\0'; /* best effort: the algorithm itself is still forced */
        return 0;
    }
    *old = cur;
    return 1;
}

static const mpi_be_alg_t *mpi_be_find_alg(collprof_op_t op, const char *name)
{
    const mpi_be_opvar_t *ov = &mpi_be.opvars[op];
    for (int i = 0; i < ov->nalgs; i++) {
        if (!strcmp(ov->algs[i].name, name)) {
            return &ov->algs[i];
        }
    }
    return NULL;
}

/* ctx->comm[op] becomes comm (ctx->base: the library's choice), freeing our old duplicate */
static void mpi_be_set_comm(mpi_be_ctx_t *ctx, collprof_op_t op, MPI_Comm comm)
{
    if (ctx->comm[op] != ctx->base) {
        MPI_Comm_free(&ctx->comm[op]);
    }
    ctx->comm[op] = comm;
}

/* The coll/tuned algorithm a named variant stands for (*alg), or why it cannot be forced. */
static int mpi_be_resolve_variant(mpi_be_ctx_t *ctx, collprof_op_t op, const char *variant,
                                  const mpi_be_alg_t **alg)
{
    const mpi_be_opvar_t *ov = &mpi_be.opvars[op];
    char name[MPI_BE_NAME_LEN];
    const char *why;
    mpi_be_normalise(name, sizeof(name), variant);
    *alg = mpi_be_find_alg(op, name);
    if (!*alg) {
        char known[384] = "";
        for (int i = 0; i < ov->nalgs; i++) {
            size_t l = strlen(known);
            snprintf(known + l, sizeof(known) - l, "%s%s", i ? " " : "", ov->algs[i].name);
        }
        mpi_be_set_error(ctx, "variant '%s' is not a coll/tuned %s algorithm here (%s%s)", variant,
                         collprof_op_name(op), ov->nalgs ? "known: " : "none known", known);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (!ctx->forcing_ok) {
        mpi_be_set_error(ctx, "variant '%s' cannot be forced: %s", name, ctx->forcing_why);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    why = mpi_be_unusable(op, name, ctx->nranks);
    if (why) {
        mpi_be_set_error(ctx, "variant '%s' cannot run on %d ranks: %s", name, ctx->nranks, why);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    return COLLPROF_OK;
}

/* Write cvar = value, confirm, duplicate MPI_COMM_WORLD (the new module captures it), restore. */
static int mpi_be_force(mpi_be_ctx_t *ctx, collprof_op_t op, const char *cvar,
                        const mpi_be_alg_t *alg, int value)
{
    int old = 0, back = -1, rc, st, seg_set, seg_old = 0, ignored;
    MPI_Comm comm;
    st = mpi_be_cvar_rw(ctx, cvar, NULL, &old);
    if (st != COLLPROF_OK) {
        return st;
    }
    st = mpi_be_cvar_rw(ctx, cvar, &value, &back);
    if (st != COLLPROF_OK) {
        return st;
    }
    if (back != value) {
        mpi_be_cvar_rw(ctx, cvar, &old, &ignored);
        mpi_be_set_error(ctx, "%s reads back %d after writing %d", cvar, back, value);
        return COLLPROF_ERR_BACKEND;
    }
    seg_set = mpi_be_segsize_push(ctx, op, alg, &seg_old);
    rc = MPI_Comm_dup(ctx->base, &comm);
    st = mpi_be_cvar_rw(ctx, cvar, &old, &back);
    if (seg_set) {
        mpi_be_cvar_rw(ctx, MPI_BE_SEGRING_CVAR, &seg_old, &ignored);
    }
    if (rc != MPI_SUCCESS) {
        return mpi_be_mpi_error(ctx, "MPI_Comm_dup", rc);
    }
    if (st != COLLPROF_OK) {
        MPI_Comm_free(&comm);
        return st;
    }
    mpi_be_set_comm(ctx, op, comm);
    mpi_be_log(ctx, COLLPROF_LOG_DEBUG, "%s: %s=%d%s on a fresh communicator", collprof_op_name(op),
               cvar, value, seg_set ? " (segment size 1 MiB)" : "");
    return COLLPROF_OK;
}

static int mpi_be_select_variant(void *vctx, collprof_op_t op, const char *variant)
{
    mpi_be_ctx_t *ctx = vctx;
    const mpi_be_opvar_t *ov;
    const mpi_be_alg_t *alg = NULL;
    char cvar[96];

    if (!ctx) {
        mpi_be_set_error(NULL, "select_variant: ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if ((int)op < 0 || op >= COLLPROF_OP_COUNT) {
        mpi_be_set_error(ctx, "select_variant: unknown op %d", (int)op);
        return COLLPROF_ERR_INVALID;
    }
    ov = &mpi_be.opvars[op];
    if (variant && variant[0] != '\0' && strcmp(variant, "default") != 0) {
        int st = mpi_be_resolve_variant(ctx, op, variant, &alg);
        if (st != COLLPROF_OK) {
            return st;
        }
    }
    if (!ov->found || !ctx->forcing_ok) {
        /* Nothing to force: the library's choice on the base communicator. */
        mpi_be_set_comm(ctx, op, ctx->base);
        return COLLPROF_OK;
    }
    snprintf(cvar, sizeof(cvar), "coll_tuned_%s_algorithm", ov->stem);
    return mpi_be_force(ctx, op, cvar, alg, alg ? alg->value : 0);
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

/* ---- run -------------------------------------------------------------- */

/* Handles are not constant expressions in every MPI, hence switches. */
static MPI_Datatype mpi_be_dtype(collprof_dtype_t dt, size_t *esize)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8: *esize = 1; return MPI_INT8_T;
    case COLLPROF_DTYPE_UINT8: *esize = 1; return MPI_UINT8_T;
    case COLLPROF_DTYPE_INT32: *esize = 4; return MPI_INT32_T;
    case COLLPROF_DTYPE_UINT32: *esize = 4; return MPI_UINT32_T;
    case COLLPROF_DTYPE_INT64: *esize = 8; return MPI_INT64_T;
    case COLLPROF_DTYPE_UINT64: *esize = 8; return MPI_UINT64_T;
    case COLLPROF_DTYPE_FLOAT32: *esize = 4; return MPI_FLOAT;
    case COLLPROF_DTYPE_FLOAT64: *esize = 8; return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL; /* MPI has no standard 16-bit floats */
    }
}

static MPI_Op mpi_be_redop(collprof_redop_t op)
{
    switch (op) {
    case COLLPROF_REDOP_SUM: return MPI_SUM;
    case COLLPROF_REDOP_PROD: return MPI_PROD;
    case COLLPROF_REDOP_MIN: return MPI_MIN;
    case COLLPROF_REDOP_MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

/* size_t element counts/displacements into the preallocated int arrays. */
static int mpi_be_a2av_convert(mpi_be_ctx_t *ctx, const size_t *in, int *out, const char *what)
{
    for (int i = 0; i < ctx->nranks; i++) {
        if (in[i] > INT_MAX) {
            mpi_be_set_error(ctx, "%s[%d] = %zu exceeds INT_MAX (MPI-3 int counts)", what, i,
                             in[i]);
            return COLLPROF_ERR_NOT_SUPPORTED;
        }
        out[i] = (int)in[i];
    }
    return COLLPROF_OK;
}

static int mpi_be_run_alltoallv(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                                MPI_Comm comm)
{
    int st, rc;
    if (!a->recvcounts || !a->rdispls || (!a->in_place && (!a->sendcounts || !a->sdispls))) {
        mpi_be_set_error(ctx, "alltoallv: counts or displacements missing");
        return COLLPROF_ERR_INVALID;
    }
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    if (a->in_place) {
        /* recvcounts/rdispls describe both sides; send arguments are ignored. */
        rc = MPI_Alltoallv(MPI_IN_PLACE, ctx->a2av_rcounts, ctx->a2av_rdispls, dt, a->recvbuf,
                           ctx->a2av_rcounts, ctx->a2av_rdispls, dt, comm);
    } else {
        if ((st = mpi_be_a2av_convert(ctx, a->sendcounts, ctx->a2av_scounts, "sendcounts")) ||
            (st = mpi_be_a2av_convert(ctx, a->sdispls, ctx->a2av_sdispls, "sdispls"))) {
            return st;
        }
        rc = MPI_Alltoallv(a->sendbuf, ctx->a2av_scounts, ctx->a2av_sdispls, dt, a->recvbuf,
                           ctx->a2av_rcounts, ctx->a2av_rdispls, dt, comm);
    }
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Alltoallv", rc);
}

/* allgatherv: rank r's block of recvcounts[r] at rdispls[r]; in place, ours is already there */
static int mpi_be_run_allgatherv(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                                 MPI_Comm comm)
{
    int st;
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    const void *sbuf = a->in_place ? MPI_IN_PLACE : a->sendbuf;
    int rc = MPI_Allgatherv(sbuf, ctx->a2av_rcounts[ctx->rank], dt, a->recvbuf, ctx->a2av_rcounts,
                            ctx->a2av_rdispls, dt, comm);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Allgatherv", rc);
}

/*
 * gatherv and scatterv: rank r's block of recvcounts[r] at rdispls[r] of the
 * root's buffer.  In place, MPI_IN_PLACE at the root only (its block stays
 * where it is); the others send from, or receive into, their own
 * displacement of the one buffer.
 */
static int mpi_be_run_rooted_v(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                               MPI_Comm comm)
{
    int st, rc, me = ctx->rank, at_root = me == a->root;
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    const int *cnt = ctx->a2av_rcounts, *dsp = ctx->a2av_rdispls;
    size_t esz = collprof_dtype_size(a->dtype);
    char *mine = (char *)a->recvbuf + a->rdispls[me] * esz;
    if (a->op == COLLPROF_OP_GATHERV) {
        const void *sbuf = !a->in_place ? a->sendbuf : at_root ? MPI_IN_PLACE : mine;
        rc = MPI_Gatherv(sbuf, cnt[me], dt, at_root ? a->recvbuf : NULL, cnt, dsp, dt, a->root,
                         comm);
        return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Gatherv", rc);
    }
    const void *sbuf = !at_root ? NULL : a->in_place ? a->recvbuf : a->sendbuf;
    void *rbuf = !a->in_place ? a->recvbuf : at_root ? MPI_IN_PLACE : mine;
    rc = MPI_Scatterv(sbuf, cnt, dsp, dt, rbuf, cnt[me], dt, a->root, comm);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Scatterv", rc);
}

/* One run(): the arguments in MPI's terms. */
typedef struct mpi_be_call {
    MPI_Datatype dt;
    MPI_Op mop; /* MPI_OP_NULL unless the op reduces */
    MPI_Comm comm;
    int cnt, blk, ip, root;
    const void *sbuf; /* sendbuf, or MPI_IN_PLACE */
    void *rbuf;
    char *mine; /* this rank's block of the in-place buffer */
    const char *call;
} mpi_be_call_t;

/* The checks every run() makes, then c filled in; the message is set on failure. */
static int mpi_be_prepare(mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    size_t esize = 0;
    const int n = ctx->nranks;
    const unsigned flags = collprof_op_info(a->op)->flags;
    if (a->memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "run: memory type %d is not offered (host only)", a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->dt = mpi_be_dtype(a->dtype, &esize);
    if (c->dt == MPI_DATATYPE_NULL) {
        mpi_be_set_error(ctx, "run: dtype %d has no MPI equivalent", (int)a->dtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->mop = (flags & COLLPROF_OPF_REDUCES) ? mpi_be_redop(a->redop) : MPI_OP_NULL;
    if ((flags & COLLPROF_OPF_REDUCES) && c->mop == MPI_OP_NULL) {
        mpi_be_set_error(ctx, "run: redop %d is not offered", (int)a->redop);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (a->count > INT_MAX) {
        mpi_be_set_error(ctx, "run: count %zu exceeds INT_MAX; MPI-3 bindings take int counts",
                         a->count);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->cnt = (int)a->count;
    c->blk = c->cnt / n;
    c->ip = a->in_place;
    c->root = a->root;
    c->comm = ctx->comm[a->op];
    c->sbuf = c->ip ? MPI_IN_PLACE : a->sendbuf;
    c->rbuf = a->recvbuf;
    c->mine = (char *)a->recvbuf + (size_t)ctx->rank * (size_t)c->blk * esize;
    return collprof_check_layout(a, n, ctx->err, sizeof(ctx->err));
}

/* reduce, gather and scatter: in place, the root and the others call differently */
static int mpi_be_issue_rooted(const mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    const int at_root = ctx->rank == c->root;
    switch (a->op) {
    case COLLPROF_OP_REDUCE:
        /* MPI_IN_PLACE is legal only at the root; the others send their buffer. */
        c->call = "MPI_Reduce";
        if (c->ip && !at_root) {
            return MPI_Reduce(a->recvbuf, NULL, c->cnt, c->dt, c->mop, c->root, c->comm);
        }
        return MPI_Reduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->root, c->comm);
    case COLLPROF_OP_GATHER:
        c->call = "MPI_Gather";
        if (c->ip && !at_root) {
            /* in place on every rank: a non-root sends its own block of recvbuf */
            return MPI_Gather(c->mine, c->blk, c->dt, NULL, c->blk, c->dt, c->root, c->comm);
        }
        return MPI_Gather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm);
    default: /* scatter */
        c->call = "MPI_Scatter";
        if (!c->ip) {
            return MPI_Scatter(a->sendbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm);
        }
        if (at_root) { /* the root's block stays where it is */
            return MPI_Scatter(a->recvbuf, c->blk, c->dt, MPI_IN_PLACE, c->blk, c->dt, c->root,
                               c->comm);
        }
        return MPI_Scatter(NULL, c->blk, c->dt, c->mine, c->blk, c->dt, c->root, c->comm);
    }
}

/* The MPI call for a->op (its name in c->call); an MPI return code. */
static int mpi_be_issue(const mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    switch (a->op) {
    case COLLPROF_OP_ALLREDUCE:
        c->call = "MPI_Allreduce";
        return MPI_Allreduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->comm);
    case COLLPROF_OP_ALLGATHER:
        /* in place: this rank's block already sits at rank*blk of recvbuf */
        c->call = "MPI_Allgather";
        return MPI_Allgather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm);
    case COLLPROF_OP_REDUCESCATTER:
        /* in place: the whole buffer is the input, the result lands in block 0 */
        c->call = "MPI_Reduce_scatter_block";
        return MPI_Reduce_scatter_block(c->sbuf, c->rbuf, c->blk, c->dt, c->mop, c->comm);
    case COLLPROF_OP_ALLTOALL:
        c->call = "MPI_Alltoall";
        return MPI_Alltoall(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm);
    case COLLPROF_OP_BROADCAST:
        /* one buffer: the root's input is in recvbuf */
        c->call = "MPI_Bcast";
        return MPI_Bcast(c->rbuf, c->cnt, c->dt, c->root, c->comm);
    case COLLPROF_OP_BARRIER: c->call = "MPI_Barrier"; return MPI_Barrier(c->comm);
    case COLLPROF_OP_SENDRECV:
        if (c->ip) {
            c->call = "MPI_Sendrecv_replace";
            return MPI_Sendrecv_replace(c->rbuf, c->cnt, c->dt, a->peer_send, MPI_BE_TAG,
                                        a->peer_recv, MPI_BE_TAG, c->comm, MPI_STATUS_IGNORE);
        }
        c->call = "MPI_Sendrecv";
        return MPI_Sendrecv(a->sendbuf, c->cnt, c->dt, a->peer_send, MPI_BE_TAG, c->rbuf, c->cnt,
                            c->dt, a->peer_recv, MPI_BE_TAG, c->comm, MPI_STATUS_IGNORE);
    default: return mpi_be_issue_rooted(ctx, a, c);
    }
}

/* The non-blocking call for a->op, posted into *req; an MPI return code. */
static int mpi_be_post(const collprof_args_t *a, mpi_be_call_t *c, MPI_Request *req)
{
    switch (a->op) {
    case COLLPROF_OP_IALLREDUCE:
        c->call = "MPI_Iallreduce";
        return MPI_Iallreduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->comm, req);
    case COLLPROF_OP_IALLGATHER:
        c->call = "MPI_Iallgather";
        return MPI_Iallgather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm, req);
    case COLLPROF_OP_IALLTOALL:
        c->call = "MPI_Ialltoall";
        return MPI_Ialltoall(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm, req);
    default: /* ibroadcast: one buffer, the root's input is in recvbuf */
        c->call = "MPI_Ibcast";
        return MPI_Ibcast(c->rbuf, c->cnt, c->dt, c->root, c->comm, req);
    }
}

/*
 * A non-blocking op: post it, run the core's computation (a->overlap) while
 * it is in flight, then MPI_Wait.  No MPI_Test in between: the library
 * progresses it on its own or not at all, which is what the overlap shows.
 */
static int mpi_be_run_nonblocking(mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = mpi_be_post(a, c, &req);
    if (rc != MPI_SUCCESS) {
        return mpi_be_mpi_error(ctx, c->call, rc);
    }
    if (a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Wait", rc);
}

static int mpi_be_run(void *vctx, const collprof_args_t *a)
{
    mpi_be_ctx_t *ctx = vctx;
    mpi_be_call_t c;
    int rc;

    if (!ctx || !a) {
        mpi_be_set_error(ctx, "run: ctx or args is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if ((int)a->op < 0 || a->op >= COLLPROF_OP_COUNT) {
        mpi_be_set_error(ctx, "run: unknown op %d", (int)a->op);
        return COLLPROF_ERR_INVALID;
    }
    rc = mpi_be_prepare(ctx, a, &c);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    if (a->op == COLLPROF_OP_ALLTOALLV) {
        return mpi_be_run_alltoallv(ctx, a, c.dt, c.comm);
    }
    if (a->op == COLLPROF_OP_ALLGATHERV) {
        return mpi_be_run_allgatherv(ctx, a, c.dt, c.comm);
    }
    if (a->op == COLLPROF_OP_GATHERV || a->op == COLLPROF_OP_SCATTERV) {
        return mpi_be_run_rooted_v(ctx, a, c.dt, c.comm);
    }
    if (collprof_op_info(a->op)->flags & COLLPROF_OPF_NONBLOCKING) {
        return mpi_be_run_nonblocking(ctx, a, &c);
    }
    rc = mpi_be_issue(ctx, a, &c);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, c.call, rc);
}

static COLLPROF_DEFINE_LAST_ERROR(mpi_be_last_error, mpi_be_ctx_t, err, mpi_be.err);

/* ---- provenance ------------------------------------------------------- */

/* A string control variable bound to no object into buf ("" when absent, empty or unreadable). */
static void mpi_be_cvar_str(const char *name, char *buf, size_t len)
{
    char vname[128], desc[16];
    int nlen = sizeof(vname), dlen = sizeof(desc), verbosity, bind, scope, n = 0;
    int idx = mpi_be_cvar_index(name);
    MPI_Datatype dt;
    MPI_T_enum et;
    MPI_T_cvar_handle h;
    buf[0] = '\0';
    if (idx < 0 ||
        MPI_T_cvar_get_info(idx, vname, &nlen, &verbosity, &dt, &et, desc, &dlen, &bind, &scope) !=
            MPI_SUCCESS ||
        dt != MPI_CHAR || bind != MPI_T_BIND_NO_OBJECT ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &n) != MPI_SUCCESS) {
        return;
    }
    char *v = n > 0 ? calloc((size_t)n + 1, 1) : NULL;
    if (v != NULL && MPI_T_cvar_read(h, v) == MPI_SUCCESS) {
        snprintf(buf, len, "%s", v);
    }
    free(v);
    MPI_T_cvar_handle_free(&h);
}

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
};
