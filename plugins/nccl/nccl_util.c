/* the nccl backend's shared helpers: the plan, errors (CUDA's and NCCL's), the clock, the
 * per-operation timeout and the nap between polls */
#include "config.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

#define NB_DEF_TIMEOUT_S    300.0
#define NB_SPINS_BEFORE_NAP 64

cp_nccl_plan_t nb_plan;
char nb_global_err[NB_ERR_LEN];

COLLPROF_DEFINE_SET_ERROR(nb_set_error, nb_ctx_t, err, nb_global_err);

int nb_cuda_fail(nb_ctx_t *ctx, const char *call, cudaError_t e)
{
    nb_set_error(ctx, "%s failed: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
    return cp_nccl_cuda_status((int)e);
}

int nb_nccl_fail(nb_ctx_t *ctx, ncclComm_t comm, const char *call, ncclResult_t r)
{
    const char *last = comm != NULL ? ncclGetLastError(comm) : NULL;
    for (int s = 0; comm != NULL && s < NB_MAX_COMMS; s++) {
        if (ctx != NULL && ctx->comms[s].live && ctx->comms[s].comm == comm) {
            ctx->comms[s].broken = 1; /* its errors may stick: never reused (B5) */
        }
    }
    nb_set_error(ctx, "%s failed: %s%s%s", call, ncclGetErrorString(r), last && last[0] ? ": " : "",
                 last ? last : "");
    return cp_nccl_status((int)r);
}

double nb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The per-operation timeout: -B timeout=S, else what the core answers for
 * the running cell (its watchdog's limit plus a margin), read again for
 * every cell; NB_DEF_TIMEOUT_S when there is none.
 */
void nb_read_timeout(nb_ctx_t *ctx)
{
    const char *tmo = ctx->host->get_option ? ctx->host->get_option("timeout") : NULL;
    char *end = NULL;
    double t = tmo != NULL ? strtod(tmo, &end) : 0.0;
    ctx->timeout_s = end != tmo && end != NULL && *end == '\0' && t > 0 ? t : NB_DEF_TIMEOUT_S;
}

/* between two polls: a short sleep after a while, except while a batch is timed */
void nb_nap(const nb_ctx_t *ctx, unsigned *spins)
{
    if (!ctx->spin && ++*spins > NB_SPINS_BEFORE_NAP) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}
