/* memory of the ofi backend: allocation and registration (host, CUDA, dma-buf); a run()'s
 * buffers looked up in the registrations */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

#ifdef CP_OFI_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

/* ---- buffers ------------------------------------------------------------------ */

ofi_buf_t *ofi_find(ofi_ctx_t *ctx, const void *p)
{
    for (ofi_buf_t *b = ctx->bufs; b != NULL; b = b->next) {
        if ((const char *)p >= b->base && (const char *)p < b->base + b->len) {
            return b;
        }
    }
    return NULL;
}

#if defined(CP_OFI_HAVE_CUDA) && defined(FI_MR_DMABUF)
/* cuMemGetHandleForAddressRange from the driver, or NULL (no driver, too old) */
typedef int (*ofi_cu_range_fn)(void *handle, unsigned long long dptr, size_t size, int type,
                               unsigned long long flags);
#define OFI_CU_DMA_BUF_FD 1 /* CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD */

static ofi_cu_range_fn ofi_cu_range(void)
{
    static int tried;
    static ofi_cu_range_fn fn;
    if (!tried) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        void *sym = h != NULL ? dlsym(h, "cuMemGetHandleForAddressRange") : NULL;
        tried = 1;
        memcpy(&fn, &sym, sizeof(fn)); /* object to function pointer, as dlsym needs */
    }
    return fn;
}

/* dma-buf registration of a device range; nonzero when it did not work (fall back) */
static int ofi_reg_dmabuf(ofi_ctx_t *ctx, struct fi_mr_attr *attr, void *p, size_t len,
                          struct fid_mr **mr)
{
    ofi_cu_range_fn fn = ofi_cu_range();
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p, mask = (uintptr_t)(pg > 0 ? pg : 4096) - 1u;
    uintptr_t base = a & ~mask;
    size_t off = (size_t)(a - base), span = (off + len + mask) & ~(size_t)mask;
    int fd = -1;
    if (fn == NULL || fn(&fd, (unsigned long long)base, span, OFI_CU_DMA_BUF_FD, 0) != 0 ||
        fd < 0) {
        return -1;
    }
    struct fi_mr_dmabuf db;
    memset(&db, 0, sizeof(db));
    db.fd = fd;
    db.offset = off;
    db.len = len;
    db.base_addr = (void *)base;
    attr->dmabuf = &db;
    attr->iov_count = 1;
    int r = fi_mr_regattr(ctx->domain, attr, FI_MR_DMABUF, mr);
    close(fd); /* the registration holds its own reference to the dma-buf */
    if (r != 0) {
        *mr = NULL;
    }
    return r;
}
#endif

#ifdef CP_OFI_HAVE_CUDA
/* a cudaMalloc'd range: dma-buf first where possible, else iface FI_HMEM_CUDA */
static int ofi_reg_dev(ofi_ctx_t *ctx, void *p, size_t len, uint64_t key, struct fid_mr **mr)
{
    struct fi_mr_attr attr;
    struct iovec iov;
    int r = -FI_ENOSYS;
    memset(&attr, 0, sizeof(attr));
    attr.access = FI_WRITE | FI_REMOTE_WRITE | FI_READ | FI_REMOTE_READ;
    attr.requested_key = key;
    attr.iface = FI_HMEM_CUDA;
    attr.device.cuda = ctx->cuda_dev;
#ifdef FI_MR_DMABUF
    if (ctx->dmabuf) {
        r = ofi_reg_dmabuf(ctx, &attr, p, len, mr);
        if (r != 0) {
            ctx->dmabuf = 0; /* once is enough to know */
            if (ctx->host->log != NULL && ctx->rank == 0) {
                ctx->host->log(COLLPROF_LOG_INFO,
                               "ofi: dma-buf registration unavailable (%d); registering device "
                               "memory with FI_HMEM_CUDA",
                               r);
            }
        }
    }
#endif
    if (r != 0) {
        iov.iov_base = p;
        iov.iov_len = len;
        attr.mr_iov = &iov;
        attr.iov_count = 1;
        r = fi_mr_regattr(ctx->domain, &attr, 0, mr);
    }
    return r;
}
#endif

int ofi_reg(ofi_ctx_t *ctx, void *p, size_t len, int dev, struct fid_mr **mr, void **desc)
{
    uint64_t key = (ctx->mr_mode & FI_MR_PROV_KEY) ? 0 : ctx->next_key++;
#ifdef CP_OFI_HAVE_CUDA
    if (dev) {
        int rd = ofi_reg_dev(ctx, p, len, key, mr);
        if (rd != 0) {
            *mr = NULL;
            return ofi_fail(ctx, "fi_mr_regattr(FI_HMEM_CUDA)", rd);
        }
        *desc = fi_mr_desc(*mr);
        return COLLPROF_OK;
    }
#else
    (void)dev;
#endif
    int r = fi_mr_reg(ctx->domain, p, len, FI_WRITE | FI_REMOTE_WRITE | FI_READ | FI_REMOTE_READ, 0,
                      key, 0, mr, NULL);
    if (r != 0) {
        *mr = NULL;
        return ofi_fail(ctx, "fi_mr_reg", r);
    }
    *desc = fi_mr_desc(*mr);
    return COLLPROF_OK;
}

void ofi_buf_free(ofi_buf_t *b)
{
    if (b == NULL) {
        return;
    }
    if (b->mr != NULL) {
        fi_close(&b->mr->fid);
    }
    if (b->smr != NULL) {
        fi_close(&b->smr->fid);
    }
#ifdef CP_OFI_HAVE_CUDA
    if (b->dev) {
        if (b->base != NULL) {
            cudaFree(b->base);
        }
        if (b->scr != NULL) {
            cudaFree(b->scr);
        }
        b->base = b->scr = NULL;
    }
#endif
    free(b->base);
    free(b->scr);
    free(b->peer);
    free(b);
}

/* page-aligned host memory or cudaMalloc'd device memory, zeroed (pages touched) */
static int ofi_alloc(ofi_ctx_t *ctx, int dev, size_t len, void **p)
{
    *p = NULL;
#ifdef CP_OFI_HAVE_CUDA
    if (dev) {
        void *d = NULL;
        if (cudaMalloc(&d, len) != cudaSuccess) {
            (void)cudaGetLastError();
            return -1;
        }
        /* the memset is asynchronous: done before the NIC or the host touches it */
        if (cudaMemset(d, 0, len) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess) {
            cudaFree(d);
            return -1;
        }
        *p = d;
        return 0;
    }
#else
    (void)dev;
#endif
    (void)ctx;
    if (posix_memalign(p, 4096, len) != 0) {
        *p = NULL;
        return -1;
    }
    memset(*p, 0, len); /* touched outside the timed loop */
    return 0;
}

/*
 * A copy inside run(): on device memory through CUDA (errors noted in
 * ctx->copy_err).  A device-to-device cudaMemcpy may return before the copy
 * has landed, and the NIC reads the buffer without CUDA's ordering: the
 * device is synchronised before the caller posts a transfer from it.
 */
void ofi_copy(ofi_ctx_t *ctx, void *dst, const void *src, size_t len)
{
#ifdef CP_OFI_HAVE_CUDA
    if (ctx->cur_dev) {
        cudaError_t e = cudaMemcpy(dst, src, len, cudaMemcpyDeviceToDevice);
        if (e == cudaSuccess) {
            e = cudaDeviceSynchronize();
        }
        if (e != cudaSuccess && !ctx->copy_err) {
            ctx->copy_err = 1;
            ofi_set_error(ctx, "cudaMemcpy (device to device): %s", cudaGetErrorString(e));
        }
        return;
    }
#else
    (void)ctx;
#endif
    memcpy(dst, src, len);
}

int ofi_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes, int to_device)
{
#ifdef CP_OFI_HAVE_CUDA
    ofi_ctx_t *ctx = vctx;
    if (memtype == COLLPROF_MEM_DEVICE && ctx != NULL && ctx->hmem) {
        cudaError_t e = cudaMemcpy(dst, src, bytes,
                                   to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
        /* from pageable memory, cudaMemcpy may return before the DMA has landed */
        if (e == cudaSuccess && to_device) {
            e = cudaDeviceSynchronize();
        }
        if (e != cudaSuccess) {
            ofi_set_error(ctx, "cudaMemcpy (%s): %s", to_device ? "to device" : "to host",
                          cudaGetErrorString(e));
            return COLLPROF_ERR_BACKEND;
        }
        return COLLPROF_OK;
    }
#endif
    return collprof_no_mem_copy(vctx, memtype, dst, src, bytes, to_device);
}

typedef struct ofi_xbuf {
    int64_t ok;
    uint64_t addr, key, saddr, skey;
} ofi_xbuf_t;

/* b's buffer of bytes and its scratch, allocated and registered; what to publish in *mine */
static int ofi_buf_open(ofi_ctx_t *ctx, ofi_buf_t *b, int dev, size_t bytes, ofi_xbuf_t *mine)
{
    int rc;
    b->len = bytes;
    /* room for n uneven reduction slots: n * (count/n + 1) elements */
    b->scrlen = (bytes + (size_t)ctx->n * 16u + 4095u) & ~(size_t)4095;
    b->peer = calloc((size_t)ctx->n, sizeof(*b->peer));
    b->dev = dev;
    if (b->peer == NULL || ofi_alloc(ctx, dev, bytes, (void **)&b->base) != 0 ||
        ofi_alloc(ctx, dev, b->scrlen, (void **)&b->scr) != 0) {
        ofi_set_error(ctx, "out of %s memory for %zu bytes and their scratch",
                      dev ? "device" : "host", bytes);
        return COLLPROF_ERR_NO_MEMORY;
    }
    rc = ofi_reg(ctx, b->base, bytes, dev, &b->mr, &b->desc);
    if (rc == COLLPROF_OK) {
        rc = ofi_reg(ctx, b->scr, b->scrlen, dev, &b->smr, &b->sdesc);
    }
    if (rc == COLLPROF_OK) {
        mine->ok = 1;
        mine->addr = ctx->virt ? (uint64_t)(uintptr_t)b->base : 0;
        mine->saddr = ctx->virt ? (uint64_t)(uintptr_t)b->scr : 0;
        mine->key = fi_mr_key(b->mr);
        mine->skey = fi_mr_key(b->smr);
    }
    return rc;
}

/* every rank's keys (all[n]) into b's view of its peers */
static int ofi_buf_connect(ofi_ctx_t *ctx, ofi_buf_t *b, const ofi_xbuf_t *all)
{
    for (int q = 0; q < ctx->n; q++) {
        if (!all[q].ok) {
            ofi_set_error(ctx, "rank %d could not allocate or register its buffer", q);
            return COLLPROF_ERR_NO_MEMORY;
        }
        b->peer[q].addr = all[q].addr;
        b->peer[q].key = all[q].key;
        b->peer[q].saddr = all[q].saddr;
        b->peer[q].skey = all[q].skey;
    }
    return COLLPROF_OK;
}

int ofi_mr_alloc(ofi_ctx_t *ctx, int memtype, size_t bytes, void **ptr)
{
    ofi_xbuf_t mine, *all = NULL;
    ofi_buf_t *b = NULL;
    int rc = COLLPROF_OK;
    int dev = memtype == COLLPROF_MEM_DEVICE;
    /* decided alike on every rank (same build, same provider): no exchange */
    if (memtype != COLLPROF_MEM_HOST && !(dev && ctx->hmem)) {
        ofi_set_error(ctx, dev ? "device memory needs a GPU, CUDA support (--with-ofi-cuda) and "
                                 "a provider with FI_HMEM"
                               : "only host (and, with FI_HMEM, device) memory is supported");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    memset(&mine, 0, sizeof(mine));
    b = calloc(1, sizeof(*b));
    all = calloc((size_t)ctx->n, sizeof(*all));
    if (b == NULL || all == NULL) {
        rc = COLLPROF_ERR_NO_MEMORY;
        ofi_set_error(ctx, "out of memory");
    } else {
        rc = ofi_buf_open(ctx, b, dev, bytes == 0 ? 1 : bytes, &mine);
    }
    /* collective whatever happened locally, so that no rank is left waiting */
    if (all == NULL) { /* cannot take part: out of memory for n small records */
        ofi_buf_free(b);
        return rc;
    }
    int orc = ctx->host->oob_allgather(&mine, all, sizeof(mine));
    if (orc != 0 && rc == COLLPROF_OK) {
        rc = COLLPROF_ERR_BOOTSTRAP;
        ofi_set_error(ctx, "oob_allgather of buffer keys failed (%d)", orc);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_buf_connect(ctx, b, all);
    }
    free(all);
    if (rc != COLLPROF_OK) {
        ofi_buf_free(b);
        return rc;
    }
    b->next = ctx->bufs;
    ctx->bufs = b;
    *ptr = b->base;
    return COLLPROF_OK;
}

int ofi_mr_free(ofi_ctx_t *ctx, int memtype, void *ptr)
{
    (void)memtype;
    for (ofi_buf_t **pp = &ctx->bufs; *pp != NULL; pp = &(*pp)->next) {
        if ((*pp)->base == ptr) {
            ofi_buf_t *b = *pp;
            *pp = b->next;
            ofi_buf_free(b);
            return COLLPROF_OK;
        }
    }
    ofi_set_error(ctx, "mem_free: %p was not allocated by this backend", ptr);
    return COLLPROF_ERR_INVALID;
}

/* the buffers of a data-moving op, looked up in the registrations */
int ofi_call_init(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_call_t *c)
{
    ofi_buf_t *sb;
    memset(c, 0, sizeof(*c));
    c->a = a;
    c->n = ctx->n;
    c->me = ctx->rank;
    c->mode = ctx->mode[a->op];
    c->esz = ofi_dtsize(a->dtype);
    c->recv = a->recvbuf;
    c->send = a->in_place ? a->recvbuf : a->sendbuf;
    if (c->esz == 0) {
        ofi_set_error(ctx, "dtype %d is not supported", (int)a->dtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->rb = ofi_find(ctx, a->recvbuf);
    sb = c->send != NULL ? ofi_find(ctx, c->send) : NULL;
    if (c->rb == NULL || (c->send != NULL && sb == NULL && a->op != COLLPROF_OP_BROADCAST)) {
        ofi_set_error(ctx, "buffers were not allocated through this backend's mem_alloc");
        return COLLPROF_ERR_INVALID;
    }
    c->sdesc = sb != NULL ? sb->desc : NULL;
    ctx->here = (uint64_t)(c->recv - c->rb->base);
    c->blk = a->count / (size_t)c->n * c->esz;
    c->all = a->count * c->esz;
    return COLLPROF_OK;
}
