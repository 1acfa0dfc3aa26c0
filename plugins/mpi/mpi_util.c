/* the MPI backend's shared helpers: the process-wide state, errors and logging */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>

#include <mpi.h>

#include "mpi_internal.h"

mpi_be_state_t mpi_be;

COLLPROF_DEFINE_SET_ERROR(mpi_be_set_error, mpi_be_ctx_t, err, mpi_be.err);

__attribute__((format(printf, 3, 4))) void mpi_be_log(const mpi_be_ctx_t *ctx, int level,
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
int mpi_be_mpi_error(mpi_be_ctx_t *ctx, const char *call, int rc)
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
