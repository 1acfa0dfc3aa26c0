/* memory of the nccl backend: the mem_* slots, the buffer records, the device copy rate */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

/* ---- memory ----------------------------------------------------------------- */

nb_buf_t *nb_find_buf(nb_ctx_t *ctx, const void *p)
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

/* the memory and its record, with the allocator that made it */
int nb_buf_free(nb_ctx_t *ctx, nb_buf_t *b)
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

int nb_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
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

int nb_mem_free(void *vctx, int memtype, void *ptr)
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

int nb_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes, int to_device)
{
    nb_ctx_t *ctx = vctx;
    if (memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "mem_copy: device memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    /*
     * On the plugin's own (non-blocking) copy stream, then synchronised: a
     * plain cudaMemcpy from pageable memory may return before the DMA has
     * landed, and the legacy default stream does not order against ours.  Not
     * the operations' stream: a replay fills one op's buffers while others
     * are in flight (post), and a copy queued behind them would wait for them.
     */
    cudaError_t e = cudaMemcpyAsync(
        dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, ctx->cstream);
    if (e != cudaSuccess) {
        return nb_cuda_fail(ctx, "cudaMemcpyAsync", e);
    }
    e = cudaStreamSynchronize(ctx->cstream);
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
int nb_copy_rate(void *vctx, int memtype, size_t bytes, double *gbs)
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
