/* host reductions of the ofi backend and the reduce-scatter phase they share */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

/* ---- reductions --------------------------------------------------------------- */

#define OFI_RED(T)                                                                                 \
    do {                                                                                           \
        T *d = dst;                                                                                \
        const T *s = src;                                                                          \
        switch (op) {                                                                              \
        case COLLPROF_REDOP_SUM:                                                                   \
            for (size_t i = 0; i < n; i++)                                                         \
                d[i] = (T)(d[i] + s[i]);                                                           \
            break;                                                                                 \
        case COLLPROF_REDOP_PROD:                                                                  \
            for (size_t i = 0; i < n; i++)                                                         \
                d[i] = (T)(d[i] * s[i]);                                                           \
            break;                                                                                 \
        case COLLPROF_REDOP_MIN:                                                                   \
            for (size_t i = 0; i < n; i++)                                                         \
                d[i] = s[i] < d[i] ? s[i] : d[i];                                                  \
            break;                                                                                 \
        case COLLPROF_REDOP_MAX:                                                                   \
            for (size_t i = 0; i < n; i++)                                                         \
                d[i] = s[i] > d[i] ? s[i] : d[i];                                                  \
            break;                                                                                 \
        default: return -1;                                                                        \
        }                                                                                          \
    } while (0)

static int ofi_reduce_into(collprof_dtype_t dt, collprof_redop_t op, void *dst, const void *src,
                           size_t n)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8: OFI_RED(int8_t); break;
    case COLLPROF_DTYPE_UINT8: OFI_RED(uint8_t); break;
    case COLLPROF_DTYPE_INT32: OFI_RED(int32_t); break;
    case COLLPROF_DTYPE_UINT32: OFI_RED(uint32_t); break;
    case COLLPROF_DTYPE_INT64: OFI_RED(int64_t); break;
    case COLLPROF_DTYPE_UINT64: OFI_RED(uint64_t); break;
    case COLLPROF_DTYPE_FLOAT32: OFI_RED(float); break;
    case COLLPROF_DTYPE_FLOAT64: OFI_RED(double); break;
    default: return -1;
    }
    return 0;
}

/* block r of count elements split n ways, uneven: offset and size in elements */
void ofi_split(size_t count, int n, int r, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n, ur = (size_t)r;
    *off = ur * base + (ur < rem ? ur : rem);
    *len = base + (ur < rem ? 1 : 0);
}

/* reduce n slots of len bytes (slot q at scr + q*len) into out */
int ofi_reduce_slots(ofi_ctx_t *ctx, const collprof_args_t *a, const char *scr, size_t len,
                     size_t esz, char *out)
{
    memcpy(out, scr, len);
    for (int q = 1; q < ctx->n; q++) {
        if (ofi_reduce_into(a->dtype, a->redop, out, scr + (size_t)q * len, len / esz) != 0) {
            ofi_set_error(ctx, "dtype %d / reduction %d not supported", (int)a->dtype,
                          (int)a->redop);
            return COLLPROF_ERR_NOT_SUPPORTED;
        }
    }
    return COLLPROF_OK;
}

/* reduce-scatter phase shared by allreduce, reducescatter and reduce:
 * rank r ends with its reduced block (boff(r), bsz(r)) at out */
int ofi_rs_phase(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_buf_t *rb, const char *in,
                 void *indesc, int even, char *out, int mode)
{
    size_t esz = ofi_dtsize(a->dtype), off, len;
    int n = ctx->n, me = ctx->rank, ns = 0, rc;
    for (int i = 1; i < n; i++) {
        int q = (me + i) % n;
        if (even) {
            off = a->count / (size_t)n * (size_t)q;
            len = a->count / (size_t)n;
        } else {
            ofi_split(a->count, n, q, &off, &len);
        }
        ofi_send_t *s = ofi_add(ctx, &ns, q, K_DATA, in + off * esz, indesc, len * esz,
                                (uint64_t)me * len * esz);
        s->to_scratch = 1;
    }
    rc = ofi_ready_all(ctx, NULL, 0);
    if (rc == COLLPROF_OK) {
        rc = ofi_post_all(ctx, mode, rb, ns);
    }
    if (even) {
        off = a->count / (size_t)n * (size_t)me;
        len = a->count / (size_t)n;
    } else {
        ofi_split(a->count, n, me, &off, &len);
    }
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        if (q != me) {
            rc = ofi_expect(ctx, mode, K_DATA, q, len * esz);
        }
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx); /* our input may be overwritten from here on */
    }
    if (rc == COLLPROF_OK) {
        memcpy(rb->scr + (size_t)me * len * esz, in + off * esz, len * esz);
        rc = ofi_reduce_slots(ctx, a, rb->scr, len * esz, esz, out);
    }
    return rc;
}
