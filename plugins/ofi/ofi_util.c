/* the ofi backend's shared helpers: errors, the clock, the GPUs the CUDA runtime sees */
#include "config.h"

#include <stdarg.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "ofi_internal.h"

#ifdef CP_OFI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

char ofi_global_err[OFI_ERR_LEN];
static int ofi_ngpus = -1; /* cached cudaGetDeviceCount, 0 on any error */

static __thread int ofi_on_worker; /* this thread is a context's worker (ofi_post.c) */

void ofi_mark_worker(void)
{
    ofi_on_worker = 1;
}

/* ctx->err, or on a worker ctx->werr (the posting thread reads err meanwhile), or without a
 * context ofi_global_err */
void ofi_set_error(ofi_ctx_t *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (ctx == NULL) {
        collprof_errbuf_vset(ofi_global_err, sizeof(ofi_global_err), fmt, ap);
    } else {
        collprof_errbuf_vset(ofi_on_worker ? ctx->werr : ctx->err, OFI_ERR_LEN, fmt, ap);
    }
    va_end(ap);
}

int ofi_fail(ofi_ctx_t *ctx, const char *call, long rc)
{
    ofi_set_error(ctx, "%s failed: %s (%ld)", call, fi_strerror((int)-rc), rc);
    return COLLPROF_ERR_BACKEND;
}

double ofi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* GPUs the CUDA runtime sees; 0 without CUDA support, a driver or a device */
int ofi_gpu_count(void)
{
#ifdef CP_OFI_HAVE_CUDA
    if (ofi_ngpus < 0) {
        int n = 0; /* left unwritten on errors such as cudaErrorInsufficientDriver */
        if (cudaGetDeviceCount(&n) != cudaSuccess || n < 0) {
            n = 0;
            (void)cudaGetLastError(); /* clear it */
        }
        ofi_ngpus = n;
    }
    return ofi_ngpus;
#else
    ofi_ngpus = 0;
    return 0;
#endif
}
