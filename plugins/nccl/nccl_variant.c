/* select_variant() of the nccl backend: what applies, the forced-algorithm probe */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

#define NB_REFUSAL "no algorithm/protocol available"

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

int nb_select_variant(void *vctx, collprof_op_t iop, const char *name)
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
