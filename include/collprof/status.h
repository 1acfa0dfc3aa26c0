/*
 * collprof: status codes shared by the core and every backend plugin.
 *
 * Every function that can fail returns a collprof_status_t: 0 on success,
 * a negative code on failure.  Plugins translate their library's own codes
 * (MPI error classes, ncclResult_t, -FI_E*) into these and keep the
 * library's message for their last_error slot.
 */
#ifndef COLLPROF_STATUS_H
#define COLLPROF_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum collprof_status {
    COLLPROF_OK = 0,
    COLLPROF_ERR_NOT_SUPPORTED = -1, /**< operation/dtype/variant not offered */
    COLLPROF_ERR_INVALID = -2,       /**< bad argument */
    COLLPROF_ERR_NO_MEMORY = -3,     /**< allocation failed */
    COLLPROF_ERR_BACKEND = -4,       /**< the backend library reported an error */
    COLLPROF_ERR_BOOTSTRAP = -5,     /**< PMIx / out-of-band failure */
    COLLPROF_ERR_TIMEOUT = -6,       /**< an operation did not complete in time */
    COLLPROF_ERR_IO = -7,            /**< file system error */
    COLLPROF_ERR_NO_DEVICE = -8,     /**< no usable accelerator */
    COLLPROF_ERR_ABI = -9            /**< plugin built for another ABI */
} collprof_status_t;

/** Static text for a status code (never NULL). */
static inline const char *collprof_status_string(int status)
{
    switch (status) {
    case COLLPROF_OK: return "success";
    case COLLPROF_ERR_NOT_SUPPORTED: return "not supported";
    case COLLPROF_ERR_INVALID: return "invalid argument";
    case COLLPROF_ERR_NO_MEMORY: return "out of memory";
    case COLLPROF_ERR_BACKEND: return "backend library error";
    case COLLPROF_ERR_BOOTSTRAP: return "bootstrap (PMIx) error";
    case COLLPROF_ERR_TIMEOUT: return "timed out";
    case COLLPROF_ERR_IO: return "I/O error";
    case COLLPROF_ERR_NO_DEVICE: return "no usable device";
    case COLLPROF_ERR_ABI: return "plugin ABI mismatch";
    default: return "unknown status";
    }
}

#ifdef __cplusplus
}
#endif
#endif /* COLLPROF_STATUS_H */
