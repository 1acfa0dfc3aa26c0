/* the nccl backend's stream completion: the CUDA events and the wait for them under the
 * per-operation timeout */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

int nb_events(nb_ctx_t *ctx, int need)
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
 * Poll events ev[0..nev): each has timeout_s from the completion of the
 * one before it (a per-operation limit), with NCCL's async errors polled.
 */
static int nb_poll(nb_ctx_t *ctx, int slot, const collprof_args_t *a, const cudaEvent_t *ev,
                   int nev)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    double t0 = nb_now(), last = t0;
    unsigned spins = 0;
    int k = 0;
    while (k < nev) {
        cudaError_t e = cudaEventQuery(ev[k]);
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
    return COLLPROF_OK;
}

/* the stream's events ev[0..nev), then the whole stream */
int nb_wait(nb_ctx_t *ctx, int slot, const collprof_args_t *a, int nev)
{
    int rc = nb_poll(ctx, slot, a, ctx->ev, nev);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    cudaError_t e = cudaStreamSynchronize(ctx->stream);
    return e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaStreamSynchronize", e);
}

/* one posted operation's event alone: what the stream holds after it goes on */
int nb_wait_event(nb_ctx_t *ctx, int slot, const collprof_args_t *a, cudaEvent_t ev)
{
    return nb_poll(ctx, slot, a, &ev, 1);
}
