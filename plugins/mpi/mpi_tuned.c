/*
 * Open MPI's coll/tuned algorithms as the MPI backend's variants, through
 * MPI_T: discovery (query, before MPI_Init), whether they can be forced
 * (init), and forcing one (select_variant).
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
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpi_internal.h"

/* ---- discovery (query, before MPI_Init) ------------------------------- */

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
    collprof_env_default("OMPI_MCA_coll_tuned_use_dynamic_rules",
                         "OMPI_MCA_coll_tuned_use_dynamic_rules=1"); /* threads run: no setenv */
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
void mpi_be_discover(void)
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

/* Why forced algorithms cannot work here, or leave forcing_ok set. */
void mpi_be_check_forcing(mpi_be_ctx_t *ctx)
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

int mpi_be_select_variant(void *vctx, collprof_op_t op, const char *variant)
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

/* ---- string variables (describe) -------------------------------------- */

/* A string control variable bound to no object into buf ("" when absent, empty or unreadable). */
void mpi_be_cvar_str(const char *name, char *buf, size_t len)
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
