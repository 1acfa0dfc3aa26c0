/* one operation of the nccl backend enqueued on the stream (no waiting) */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

/* ---- issuing one operation on the stream ---------------------------------- */

/* bytes of staging an operation needs (its send side copied before the group) */
size_t nb_stage_bytes(nb_ctx_t *ctx, const cp_nccl_variant_t *v, const collprof_args_t *a)
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

/* a reducescatter of per-rank blocks (caps->var_ops: collprof --replay; never in place): NCCL
 * has no reduce-scatter-v, so an ncclReduce of each non-empty block to its owner, all in one
 * group (one launch); block c is recvcounts[c] elements at rdispls[c] of sendbuf */
static int nb_issue_rs_v(nb_ctx_t *ctx, ncclComm_t comm, const collprof_args_t *a,
                         ncclDataType_t dt, ncclRedOp_t ro, size_t es)
{
    if (a->in_place || a->rdispls == NULL) {
        nb_set_error(ctx, "reducescatter of per-rank blocks: in place or without displacements");
        return COLLPROF_ERR_INVALID;
    }
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) {
        return nb_nccl_fail(ctx, comm, "ncclGroupStart", r);
    }
    for (int c = 0; c < ctx->n; c++) {
        if (a->recvcounts[c] == 0) {
            continue;
        }
        const char *in = (const char *)a->sendbuf + a->rdispls[c] * es;
        r = ncclReduce(in, a->recvbuf, a->recvcounts[c], dt, ro, c, comm, ctx->stream);
        if (r != ncclSuccess && r != ncclInProgress) {
            ncclGroupEnd();
            return nb_nccl_fail(ctx, comm, "ncclReduce (a block of a reduce-scatter)", r);
        }
    }
    return nb_settle(ctx, -1, comm, ncclGroupEnd(), "ncclGroupEnd (reduce per block)");
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
int nb_issue(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot, const collprof_args_t *a)
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
    if (a->op == COLLPROF_OP_REDUCESCATTER && a->recvcounts != NULL) {
        return nb_issue_rs_v(ctx, comm, a, dt, ro, es);
    }
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
