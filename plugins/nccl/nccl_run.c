/* run() and run_batch() of the nccl backend: preparation, launches, the timings */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include "nccl_internal.h"

/* ---- running one operation and a timed batch ------------------------------- */

static int nb_same_args(const collprof_args_t *x, const collprof_args_t *y)
{
    return x->op == y->op && x->dtype == y->dtype && x->redop == y->redop && x->root == y->root &&
           x->in_place == y->in_place && x->sendbuf == y->sendbuf && x->recvbuf == y->recvbuf &&
           x->count == y->count && x->sendcounts == y->sendcounts &&
           x->recvcounts == y->recvcounts && x->sdispls == y->sdispls && x->rdispls == y->rdispls &&
           x->peer_send == y->peer_send && x->peer_recv == y->peer_recv;
}

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
static int nb_prepare(nb_ctx_t *ctx, const collprof_args_t *a, int warm, int capture,
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
    if (v->graph && capture) {
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

/*
 * run(): the operation on the stream, then the wait.  A non-blocking op
 * (iallreduce...) is its blocking twin enqueued the same way, with the
 * core's host computation (a->overlap) between the enqueue and the wait:
 * NCCL calls are asynchronous to the host, so the GPU works meanwhile.
 */
int nb_run(void *vctx, const collprof_args_t *ia)
{
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = NULL;
    nb_graph_t *g = NULL;
    int slot = -1;
    collprof_args_t twin = *ia;
    const collprof_args_t *a = &twin;
    twin.op = (collprof_op_t)collprof_op_blocking((int)ia->op);
    nb_launch_held(); /* posted sends and recvs go first (their waits get any failure) */
    int rc = nb_prepare(ctx, a, 0, 1, &v, &slot, &g);
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

int nb_run_batch(void *vctx, const collprof_args_t *a, int iters, double *times_us)
{
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = NULL;
    nb_graph_t *g = NULL;
    int slot = -1;
    char range[160];
    if (iters <= 0) {
        return COLLPROF_OK;
    }
    nb_launch_held();
    int rc = nb_prepare(ctx, a, 1, 1, &v, &slot, &g);
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

/* ---- post(): collprof --replay's posted operations (nccl_post.c holds the rest) ------------ */

/* the ops post() takes: send and recv (COLLPROF_OP_SENDRECV), every blocking collective */
uint32_t nb_post_ops(void)
{
    uint32_t ops = COLLPROF_BIT(COLLPROF_OP_SENDRECV);
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        const collprof_op_info_t *oi = collprof_op_info(op);
        if (op != COLLPROF_OP_SENDRECV && oi != NULL && !(oi->flags & COLLPROF_OPF_NONBLOCKING)) {
            ops |= COLLPROF_BIT(op);
        }
    }
    return ops;
}

/*
 * post(): a send or a recv is held (launched with the next call's group, nccl_post.c); a
 * collective goes on the stream at once, after the held ops, with an event behind it that
 * its wait polls; inside a coalesced call (group()) it is held too, until the call's end.
 * A +graph variant's collective is launched directly, not captured (a capture on a stream
 * with work in flight would be of no use: the replay has no batch).
 */
int nb_post(void *vctx, const collprof_args_t *a, void **req)
{
    nb_ctx_t *ctx = vctx;
    const cp_nccl_variant_t *v = NULL;
    nb_graph_t *g = NULL;
    int slot = -1;
    if (a->op == COLLPROF_OP_SENDRECV) {
        return nb_hold_p2p(ctx, a, req);
    }
    if ((unsigned)a->op >= COLLPROF_OP_COUNT || !(nb_post_ops() & COLLPROF_BIT(a->op))) {
        nb_set_error(ctx, "post: %s cannot be posted", collprof_op_name(a->op));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (!nb_grouping()) {
        nb_launch_held();
    }
    int rc = nb_prepare(ctx, a, 0, 0, &v, &slot, &g);
    nb_req_t *r = rc == COLLPROF_OK ? nb_req_new(ctx, a, slot) : NULL;
    if (r == NULL) {
        return rc != COLLPROF_OK ? rc : COLLPROF_ERR_NO_MEMORY;
    }
    if (nb_grouping()) { /* a coalesced call's: launched with the call's other ops at its end */
        r->v = v;
        nb_hold(r);
        *req = r;
        return COLLPROF_OK;
    }
    rc = nb_issue(ctx, v, slot, a);
    if (rc == COLLPROF_OK) {
        cudaError_t e = cudaEventRecord(r->ev, ctx->stream);
        rc = e == cudaSuccess ? COLLPROF_OK : nb_cuda_fail(ctx, "cudaEventRecord (posted)", e);
    }
    if (rc != COLLPROF_OK) {
        nb_req_free(r);
        return rc;
    }
    r->launched = 1;
    *req = r;
    return COLLPROF_OK;
}
