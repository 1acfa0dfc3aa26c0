#include "config.h"

/*
 * collprof backend for libfabric (OFI), RMA write based.
 *
 * Every operation is built from one primitive: fi_writedata of a block
 * from a local registered buffer into a peer's registered buffer, with
 * immediate data (kind << 24 | source rank) that the target sees as an
 * FI_REMOTE_CQ_DATA completion.  Algorithms are direct (every rank writes
 * straight to the ranks that need its data); reductions are done on the
 * host once the blocks have arrived in a registered scratch area.
 *
 * Channels are separate endpoints (-B ofi-channels=N, default 4), each
 * with its own CQ, all in one domain and one AV.  The variants choose how
 * a block is spread over them: "single" (channel 0 only), "multichannel"
 * (every block split across all channels) and "roundrobin" (the block
 * for peer p goes on channel (p + rank) % channels).
 *
 * Synchronisation: a rank never writes into a peer's buffer before the
 * peer has entered the same run() call and said so with a READY write
 * (8 bytes of payload into the writer's control area, plus remote CQ
 * data).  collprof memsets and refills buffers between calls, so without
 * this a fast writer would race the peer's refill.  Completions are
 * counted per (kind, peer) cumulatively, so an early READY of the next
 * call from a fast peer is simply kept for later.
 *
 * Memory: mem_alloc registers every buffer (outside the timed loop) and
 * gives it a registered companion scratch buffer of the same size (for
 * reduction slots and in-place staging); it is called in the same order
 * on every rank, so it exchanges base addresses and keys with one
 * oob_allgather.  run() only looks registrations up.
 *
 * Device memory (built with CUDA, configure --with-ofi-cuda): when the CUDA
 * runtime sees a GPU, query offers COLLPROF_MEM_DEVICE and init asks the
 * provider for FI_HMEM (falling back to host memory only when it has
 * none).  Device buffers come from cudaMalloc and are registered with
 * fi_mr_regattr (iface FI_HMEM_CUDA, the rank's device); where libfabric
 * has FI_MR_DMABUF (>= 1.20) and the driver exports a dma-buf for the range
 * (cuMemGetHandleForAddressRange, a driver API function looked up with
 * dlopen("libcuda.so.1") at run time: the plugin links only -lcudart), the
 * registration goes through the dma-buf first.  Local copies in run() use
 * cudaMemcpy; reductions (allreduce, reducescatter, reduce) are done on the
 * host and are therefore not supported on device memory.  Without a GPU
 * (cudaGetDeviceCount fails, e.g. cudaErrorInsufficientDriver without a
 * driver) nothing of this is used and DEVICE is not offered.
 */

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <collprof/plugin.h>

#ifdef CP_OFI_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#endif

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

#define OFI_ERR_LEN            768
#define OFI_MAX_CH             64 /* collprof --ofi-channels checks 1..64 too */
#define OFI_ADDR_MAX           256
#define OFI_DEF_CH             4
#define OFI_CHUNK_MAX          ((size_t)1 << 30)
#define OFI_WAIT_LIMIT_S       120.0
#define OFI_CQ_BATCH           32
#define OFI_SPINS_BEFORE_YIELD 64

/* completion kinds carried in the immediate data */
enum { K_READY = 1, K_DATA = 2, K_DATA2 = 3, K_BARRIER = 4, K_NKINDS = 5 };

/* channel modes (variants) */
enum { M_SINGLE = 0, M_MULTI = 1, M_RR = 2 };

static char ofi_global_err[OFI_ERR_LEN];
static char ofi_libversion[64];
/* link rate of the provider in use (set by init), Gbit/s; < 0 = no init yet */
static double ofi_link_in_use = -1.0;
/* device memory usable with the provider in use (set by init); < 0 = no init yet */
static int ofi_hmem_in_use = -1;
static int ofi_ngpus = -1; /* cached cudaGetDeviceCount, 0 on any error */

/* GPUs the CUDA runtime sees; 0 without CUDA support, a driver or a device */
static int ofi_gpu_count(void)
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

/* remote view of one peer's buffer and of its companion scratch */
typedef struct ofi_rbuf {
    uint64_t addr, key;   /* address to use in fi_write (0-based unless FI_MR_VIRT_ADDR) */
    uint64_t saddr, skey; /* companion scratch */
} ofi_rbuf_t;

typedef struct ofi_buf {
    struct ofi_buf *next;
    char *base;
    size_t len;
    char *scr;
    size_t scrlen;
    struct fid_mr *mr, *smr;
    void *desc, *sdesc;
    ofi_rbuf_t *peer; /* [nranks] */
    int dev;          /* base and scr are device memory */
} ofi_buf_t;

/* one write (or a striped set of writes) to post in a run */
typedef struct ofi_send {
    int peer;
    int kind;
    int need_ready; /* wait for the peer's READY of this call first */
    int to_scratch; /* target: the peer's companion scratch, else its buffer */
    int add_payload;
    const char *src;
    void *desc;
    size_t len;
    uint64_t roff;
    int posted;
} ofi_send_t;

typedef struct ofi_ctx {
    const collprof_host_t *host;
    int rank, n, nch;
    char prov[64];
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_av *av;
    struct fid_ep *ep[OFI_MAX_CH];
    struct fid_cq *cq[OFI_MAX_CH];
    fi_addr_t *addr; /* [n * nch] */
    uint64_t mr_mode;
    int virt;
    uint64_t next_key;
    size_t chunk; /* largest single write */
    size_t inject;
    /* control area: [0, n) READY payload slots written by peers, [n, 2n) our sources */
    uint64_t *ctrl;
    struct fid_mr *ctrl_mr;
    void *ctrl_desc;
    uint64_t *peer_ctrl_addr, *peer_ctrl_key;
    /* completion accounting */
    uint64_t *cnt[K_NKINDS], *used[K_NKINDS];
    uint64_t tx_posted, tx_done;
    unsigned idle;      /* empty progress rounds in a row */
    char *got_ready;    /* [n] this call */
    uint64_t *rpayload; /* [n] READY payload of this call */
    ofi_send_t *sends;  /* [2n + 2] */
    int mode[COLLPROF_OP_COUNT];
    ofi_buf_t *bufs;
    int hmem;     /* the provider took FI_HMEM: device buffers can be registered */
    int cuda_dev; /* this rank's CUDA device */
    int dmabuf;   /* still worth trying dma-buf registration */
    int cur_dev;  /* the current run() is on device memory */
    int copy_err; /* a cudaMemcpy in the current run() failed */
    char err[OFI_ERR_LEN];
} ofi_ctx_t;

static const collprof_variant_t ofi_variants[] = {
#define OFI_VOPS                                                                                   \
    (COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_ALLGATHER) |                   \
     COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER) | COLLPROF_BIT(COLLPROF_OP_ALLTOALL) |                \
     COLLPROF_BIT(COLLPROF_OP_ALLTOALLV) | COLLPROF_BIT(COLLPROF_OP_BROADCAST) |                   \
     COLLPROF_BIT(COLLPROF_OP_REDUCE) | COLLPROF_BIT(COLLPROF_OP_GATHER) |                         \
     COLLPROF_BIT(COLLPROF_OP_SCATTER) | COLLPROF_BIT(COLLPROF_OP_SENDRECV))
    {"single", "every RMA write on one endpoint (channel 0)", OFI_VOPS},
    {"multichannel", "every block split across all channels (-B ofi-channels=N, default 4)",
     OFI_VOPS},
    {"roundrobin", "the block for peer p on channel (p + rank) % channels (also the default)",
     OFI_VOPS},
};

__attribute__((format(printf, 2, 3))) static void ofi_set_error(ofi_ctx_t *ctx, const char *fmt,
                                                                ...)
{
    char *buf = ctx ? ctx->err : ofi_global_err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, OFI_ERR_LEN, fmt, ap);
    va_end(ap);
}

static int ofi_fail(ofi_ctx_t *ctx, const char *call, long rc)
{
    ofi_set_error(ctx, "%s failed: %s (%ld)", call, fi_strerror((int)-rc), rc);
    return COLLPROF_ERR_BACKEND;
}

static double ofi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- query ---------------------------------------------------------------- */

static double ofi_default_link_gbps(void);

static int ofi_query(collprof_caps_t *caps)
{
    uint32_t v = fi_version();
    if (caps == NULL || caps->size < COLLPROF_CAPS_SIZE_V1) {
        ofi_set_error(NULL, "query: caps->size %zu is smaller than ABI 1's %zu",
                      caps ? caps->size : 0, (size_t)COLLPROF_CAPS_SIZE_V1);
        return COLLPROF_ERR_ABI;
    }
    snprintf(ofi_libversion, sizeof(ofi_libversion), "libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
    caps->library_version = ofi_libversion;
    caps->ops = OFI_VOPS | COLLPROF_BIT(COLLPROF_OP_BARRIER);
    caps->dtypes = COLLPROF_BIT(COLLPROF_DTYPE_INT8) | COLLPROF_BIT(COLLPROF_DTYPE_UINT8) |
                   COLLPROF_BIT(COLLPROF_DTYPE_INT32) | COLLPROF_BIT(COLLPROF_DTYPE_UINT32) |
                   COLLPROF_BIT(COLLPROF_DTYPE_INT64) | COLLPROF_BIT(COLLPROF_DTYPE_UINT64) |
                   COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32) | COLLPROF_BIT(COLLPROF_DTYPE_FLOAT64);
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM) | COLLPROF_BIT(COLLPROF_REDOP_PROD) |
                   COLLPROF_BIT(COLLPROF_REDOP_MIN) | COLLPROF_BIT(COLLPROF_REDOP_MAX);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    /* before init: a GPU is seen; after init: the provider took FI_HMEM too */
    if (ofi_hmem_in_use >= 0 ? ofi_hmem_in_use : ofi_gpu_count() > 0) {
        caps->memtypes |= COLLPROF_BIT(COLLPROF_MEM_DEVICE);
    }
    caps->variants = ofi_variants;
    caps->nvariants = sizeof(ofi_variants) / sizeof(ofi_variants[0]);
    if (COLLPROF_CAPS_HAS(caps, link_gbps)) {
        caps->link_gbps = ofi_link_in_use >= 0 ? ofi_link_in_use : ofi_default_link_gbps();
    }
    return COLLPROF_OK;
}

/* ---- provider selection ---------------------------------------------------- */

static struct fi_info *ofi_hints(const char *prov)
{
    struct fi_info *h = fi_allocinfo();
    if (h == NULL) {
        return NULL;
    }
    h->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE;
    h->mode = 0; /* we support no mode bits (no FI_CONTEXT, no FI_RX_CQ_DATA) */
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
    h->domain_attr->threading = FI_THREAD_DOMAIN;
    if (prov != NULL) {
        h->fabric_attr->prov_name = strdup(prov);
    }
    return h;
}

static int ofi_usable(const struct fi_info *i)
{
    return i->domain_attr->cq_data_size >= 4 && i->ep_attr->type == FI_EP_RDM;
}

/* "shm, tcp;ofi_rxm, ..." : the providers that offer what we need here, good ones first */
static void ofi_list_providers(char *out, size_t len)
{
    static const char *const good[] = {"shm", "tcp;ofi_rxm", "verbs;ofi_rxm", "efa", "psm3", "cxi"};
    struct fi_info *h = ofi_hints(NULL), *list = NULL;
    size_t o = 0;
    out[0] = '\0';
    if (h != NULL &&
        fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, h, &list) == 0) {
        /* pass 0: the well-tried ones, pass 1: the rest */
        for (int pass = 0; pass < 2; pass++) {
            for (struct fi_info *i = list; i != NULL; i = i->next) {
                const char *p = i->fabric_attr->prov_name;
                int dup = 0, known = 0;
                if (!ofi_usable(i)) {
                    continue;
                }
                for (size_t g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
                    known |= !strcmp(good[g], p);
                }
                if (known != (pass == 0)) {
                    continue;
                }
                for (struct fi_info *j = list; j != i; j = j->next) {
                    dup |= ofi_usable(j) && !strcmp(j->fabric_attr->prov_name, p);
                }
                if (!dup && o + strlen(p) + 16 < len) {
                    int slow = !strcmp(p, "sockets") || !strcmp(p, "udp;ofi_rxd");
                    o += (size_t)snprintf(out + o, len - o, "%s%s%s", o ? ", " : "", p,
                                          slow ? " (slow)" : "");
                }
            }
        }
    }
    if (o == 0) {
        snprintf(out, len, "none");
    }
    fi_freeinfo(list);
    fi_freeinfo(h);
}

/* Gbit/s from an entry's NIC link attributes (speed in bit/s), 0 when not reported */
static double ofi_info_link_gbps(const struct fi_info *i)
{
    if (i == NULL || i->nic == NULL || i->nic->link_attr == NULL) {
        return 0.0;
    }
    return (double)i->nic->link_attr->speed / 1e9;
}

/*
 * Before init (--list): the link of the first usable entry of $FI_PROVIDER,
 * else of shm (the one-node default).  After init, query reports the
 * provider actually opened instead.
 */
static double ofi_default_link_gbps(void)
{
    const char *prov = getenv("FI_PROVIDER");
    struct fi_info *h = ofi_hints(prov != NULL && prov[0] != '\0' ? prov : "shm"), *list = NULL;
    double g = 0.0;
    if (h != NULL &&
        fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, h, &list) == 0) {
        for (struct fi_info *i = list; i != NULL; i = i->next) {
            if (ofi_usable(i)) {
                g = ofi_info_link_gbps(i);
                break;
            }
        }
    }
    fi_freeinfo(list);
    fi_freeinfo(h);
    return g;
}

/* ---- completions ------------------------------------------------------------ */

static int ofi_progress(ofi_ctx_t *ctx)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    int got = 0;
    for (int c = 0; c < ctx->nch; c++) {
        for (;;) {
            ssize_t r = fi_cq_read(ctx->cq[c], e, OFI_CQ_BATCH);
            if (r == -FI_EAGAIN) {
                break;
            }
            if (r == -FI_EAVAIL) {
                struct fi_cq_err_entry ee;
                char buf[128];
                memset(&ee, 0, sizeof(ee));
                fi_cq_readerr(ctx->cq[c], &ee, 0);
                ofi_set_error(
                    ctx, "completion error on channel %d: %s (%s)", c, fi_strerror(ee.err),
                    fi_cq_strerror(ctx->cq[c], ee.prov_errno, ee.err_data, buf, sizeof(buf)));
                return COLLPROF_ERR_BACKEND;
            }
            if (r < 0) {
                return ofi_fail(ctx, "fi_cq_read", (long)r);
            }
            got = 1;
            for (ssize_t k = 0; k < r; k++) {
                if (e[k].flags & FI_REMOTE_CQ_DATA) {
                    unsigned kind = (unsigned)(e[k].data >> 24) & 0xffu;
                    unsigned src = (unsigned)e[k].data & 0xffffffu;
                    if (kind == 0 || kind >= K_NKINDS || src >= (unsigned)ctx->n) {
                        ofi_set_error(ctx, "unexpected remote CQ data 0x%llx",
                                      (unsigned long long)e[k].data);
                        return COLLPROF_ERR_BACKEND;
                    }
                    ctx->cnt[kind][src]++;
                } else {
                    ctx->tx_done++;
                }
            }
        }
    }
    /* ranks may outnumber cores (and share them with the launcher and PMIx):
     * after a while without news, let the peer we wait for run */
    if (got) {
        ctx->idle = 0;
    } else if (++ctx->idle >= OFI_SPINS_BEFORE_YIELD) {
        ctx->idle = 0;
        sched_yield();
    }
    return COLLPROF_OK;
}

static int ofi_check_time(ofi_ctx_t *ctx, double t0, const char *what)
{
    if (ofi_now() - t0 > OFI_WAIT_LIMIT_S) {
        ofi_set_error(ctx, "timed out after %.0f s waiting for %s", OFI_WAIT_LIMIT_S, what);
        return COLLPROF_ERR_TIMEOUT;
    }
    return COLLPROF_OK;
}

/* wait until `need` more completions of kind from peer arrived, and consume them */
static int ofi_wait_from(ofi_ctx_t *ctx, int kind, int peer, uint64_t need)
{
    double t0 = ofi_now();
    while (ctx->cnt[kind][peer] - ctx->used[kind][peer] < need) {
        int rc = ofi_progress(ctx);
        if (rc == COLLPROF_OK) {
            rc = ofi_check_time(ctx, t0, "data from a peer");
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    ctx->used[kind][peer] += need;
    return COLLPROF_OK;
}

static int ofi_wait_tx(ofi_ctx_t *ctx)
{
    double t0 = ofi_now();
    while (ctx->tx_done < ctx->tx_posted) {
        int rc = ofi_progress(ctx);
        if (rc == COLLPROF_OK) {
            rc = ofi_check_time(ctx, t0, "local write completions");
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    return COLLPROF_OK;
}

static uint64_t ofi_imm(const ofi_ctx_t *ctx, int kind)
{
    return ((uint64_t)kind << 24) | (uint64_t)ctx->rank;
}

/* one fi_writedata, retried while the provider says EAGAIN */
static int ofi_write1(ofi_ctx_t *ctx, int ch, int peer, const void *src, void *desc, size_t len,
                      uint64_t raddr, uint64_t key, int kind)
{
    double t0 = ofi_now();
    for (;;) {
        ssize_t r =
            fi_writedata(ctx->ep[ch], src, len, desc, ofi_imm(ctx, kind),
                         ctx->addr[(size_t)peer * (size_t)ctx->nch + (size_t)ch], raddr, key, NULL);
        if (r == 0) {
            ctx->tx_posted++;
            return COLLPROF_OK;
        }
        if (r != -FI_EAGAIN) {
            return ofi_fail(ctx, "fi_writedata", (long)r);
        }
        int rc = ofi_progress(ctx);
        if (rc == COLLPROF_OK) {
            rc = ofi_check_time(ctx, t0, "room in the transmit queue");
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
}

/* a small control write (READY, BARRIER) with an 8-byte payload into the peer's slot */
static int ofi_signal(ofi_ctx_t *ctx, int peer, int kind, uint64_t payload)
{
    uint64_t raddr = ctx->peer_ctrl_addr[peer] + (uint64_t)ctx->rank * 8u;
    uint64_t *src = &ctx->ctrl[ctx->n + peer];
    double t0 = ofi_now();
    *src = payload;
    if (ctx->inject < 8) {
        return ofi_write1(ctx, 0, peer, src, ctx->ctrl_desc, 8, raddr, ctx->peer_ctrl_key[peer],
                          kind);
    }
    for (;;) {
        ssize_t r = fi_inject_writedata(ctx->ep[0], src, 8, ofi_imm(ctx, kind),
                                        ctx->addr[(size_t)peer * (size_t)ctx->nch], raddr,
                                        ctx->peer_ctrl_key[peer]);
        if (r == 0) {
            return COLLPROF_OK;
        }
        if (r != -FI_EAGAIN) {
            return ofi_fail(ctx, "fi_inject_writedata", (long)r);
        }
        int rc = ofi_progress(ctx);
        if (rc == COLLPROF_OK) {
            rc = ofi_check_time(ctx, t0, "room to send a control message");
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
}

/*
 * A block of len bytes to peer, spread over the channels as the mode says.
 * With post == 0 only counts the writes (the target's expectation); both
 * sides compute the same number from the same length.
 */
static long ofi_block(ofi_ctx_t *ctx, int mode, int peer, const char *src, void *desc, size_t len,
                      uint64_t raddr, uint64_t key, int kind, int post)
{
    size_t part = len, step;
    long nw = 0;
    int ch = 0;
    if (len == 0) {
        return 0;
    }
    if (mode == M_MULTI && ctx->nch > 1) {
        part = (len + (size_t)ctx->nch - 1) / (size_t)ctx->nch;
        part = (part + 63) & ~(size_t)63;
    } else if (mode == M_RR) {
        ch = (peer + ctx->rank) % ctx->nch;
    }
    for (size_t off = 0; off < len; off += step) {
        step = len - off < part ? len - off : part;
        for (size_t o2 = 0; o2 < step;) {
            size_t s = step - o2 < ctx->chunk ? step - o2 : ctx->chunk;
            if (post) {
                int rc =
                    ofi_write1(ctx, ch, peer, src + off + o2, desc, s, raddr + off + o2, key, kind);
                if (rc != COLLPROF_OK) {
                    return rc;
                }
            }
            nw++;
            o2 += s;
        }
        if (mode == M_MULTI) {
            ch = (ch + 1) % ctx->nch;
        }
    }
    return nw;
}

/* ---- buffers ------------------------------------------------------------------ */

static ofi_buf_t *ofi_find(ofi_ctx_t *ctx, const void *p)
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

static int ofi_reg(ofi_ctx_t *ctx, void *p, size_t len, int dev, struct fid_mr **mr, void **desc)
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

static void ofi_buf_free(ofi_buf_t *b)
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
        if (cudaMemset(d, 0, len) != cudaSuccess) {
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

/* a copy inside run(): on device memory through CUDA (errors noted in ctx->copy_err) */
static void ofi_copy(ofi_ctx_t *ctx, void *dst, const void *src, size_t len)
{
#ifdef CP_OFI_HAVE_CUDA
    if (ctx->cur_dev) {
        cudaError_t e = cudaMemcpy(dst, src, len, cudaMemcpyDeviceToDevice);
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

static int ofi_mem_copy(void *vctx, int memtype, void *dst, const void *src, size_t bytes,
                        int to_device)
{
#ifdef CP_OFI_HAVE_CUDA
    ofi_ctx_t *ctx = vctx;
    if (memtype == COLLPROF_MEM_DEVICE && ctx != NULL && ctx->hmem) {
        cudaError_t e = cudaMemcpy(dst, src, bytes,
                                   to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
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

static int ofi_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    ofi_ctx_t *ctx = vctx;
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
    if (bytes == 0) {
        bytes = 1;
    }
    memset(&mine, 0, sizeof(mine));
    b = calloc(1, sizeof(*b));
    all = calloc((size_t)ctx->n, sizeof(*all));
    if (b == NULL || all == NULL) {
        rc = COLLPROF_ERR_NO_MEMORY;
        ofi_set_error(ctx, "out of memory");
    } else {
        b->len = bytes;
        /* room for n uneven reduction slots: n * (count/n + 1) elements */
        b->scrlen = (bytes + (size_t)ctx->n * 16u + 4095u) & ~(size_t)4095;
        b->peer = calloc((size_t)ctx->n, sizeof(*b->peer));
        b->dev = dev;
        if (b->peer == NULL || ofi_alloc(ctx, dev, bytes, (void **)&b->base) != 0 ||
            ofi_alloc(ctx, dev, b->scrlen, (void **)&b->scr) != 0) {
            rc = COLLPROF_ERR_NO_MEMORY;
            ofi_set_error(ctx, "out of %s memory for %zu bytes and their scratch",
                          dev ? "device" : "host", bytes);
        } else {
            rc = ofi_reg(ctx, b->base, bytes, dev, &b->mr, &b->desc);
            if (rc == COLLPROF_OK) {
                rc = ofi_reg(ctx, b->scr, b->scrlen, dev, &b->smr, &b->sdesc);
            }
        }
    }
    if (rc == COLLPROF_OK) {
        mine.ok = 1;
        mine.addr = ctx->virt ? (uint64_t)(uintptr_t)b->base : 0;
        mine.saddr = ctx->virt ? (uint64_t)(uintptr_t)b->scr : 0;
        mine.key = fi_mr_key(b->mr);
        mine.skey = fi_mr_key(b->smr);
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
    for (int q = 0; q < ctx->n && rc == COLLPROF_OK; q++) {
        if (!all[q].ok) {
            rc = COLLPROF_ERR_NO_MEMORY;
            ofi_set_error(ctx, "rank %d could not allocate or register its buffer", q);
            break;
        }
        b->peer[q].addr = all[q].addr;
        b->peer[q].key = all[q].key;
        b->peer[q].saddr = all[q].saddr;
        b->peer[q].skey = all[q].skey;
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

static int ofi_mem_free(void *vctx, int memtype, void *ptr)
{
    ofi_ctx_t *ctx = vctx;
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

static size_t ofi_dtsize(collprof_dtype_t dt)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8:
    case COLLPROF_DTYPE_UINT8: return 1;
    case COLLPROF_DTYPE_INT32:
    case COLLPROF_DTYPE_UINT32:
    case COLLPROF_DTYPE_FLOAT32: return 4;
    case COLLPROF_DTYPE_INT64:
    case COLLPROF_DTYPE_UINT64:
    case COLLPROF_DTYPE_FLOAT64: return 8;
    default: return 0;
    }
}

/* ---- the exchange engine --------------------------------------------------------- */

static ofi_send_t *ofi_add(ofi_ctx_t *ctx, int *ns, int peer, int kind, const void *src, void *desc,
                           size_t len, uint64_t roff)
{
    ofi_send_t *s = &ctx->sends[(*ns)++];
    memset(s, 0, sizeof(*s));
    s->peer = peer;
    s->kind = kind;
    s->need_ready = (kind == K_DATA);
    s->src = src;
    s->desc = desc;
    s->len = len;
    s->roff = roff;
    return s;
}

/*
 * Post sends[0..ns) (each as soon as its peer is READY when it needs to be)
 * into the peers' view of buffer b, then wait for every local completion.
 * Incoming data are waited for by the caller.
 */
static int ofi_post_all(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns)
{
    int left = ns;
    double t0 = ofi_now();
    while (left > 0) {
        for (int i = 0; i < ns; i++) {
            ofi_send_t *s = &ctx->sends[i];
            int q = s->peer;
            if (s->posted) {
                continue;
            }
            if (s->need_ready && !ctx->got_ready[q]) {
                if (ctx->cnt[K_READY][q] == ctx->used[K_READY][q]) {
                    continue;
                }
                ctx->used[K_READY][q]++;
                ctx->got_ready[q] = 1;
                ctx->rpayload[q] = __atomic_load_n(&ctx->ctrl[q], __ATOMIC_ACQUIRE);
            }
            uint64_t roff = s->roff + (s->add_payload ? ctx->rpayload[q] : 0);
            uint64_t raddr = (s->to_scratch ? b->peer[q].saddr : b->peer[q].addr) + roff;
            uint64_t key = s->to_scratch ? b->peer[q].skey : b->peer[q].key;
            long r = ofi_block(ctx, mode, q, s->src, s->desc, s->len, raddr, key, s->kind, 1);
            if (r < 0) {
                return (int)r;
            }
            s->posted = 1;
            left--;
        }
        if (left > 0) {
            int rc = ofi_progress(ctx);
            if (rc == COLLPROF_OK) {
                rc = ofi_check_time(ctx, t0, "peers to be ready");
            }
            if (rc != COLLPROF_OK) {
                return rc;
            }
        }
    }
    return COLLPROF_OK;
}

static int ofi_expect(ofi_ctx_t *ctx, int mode, int kind, int peer, size_t len)
{
    long nw = ofi_block(ctx, mode, peer, NULL, NULL, len, 0, 0, kind, 0);
    return nw > 0 ? ofi_wait_from(ctx, kind, peer, (uint64_t)nw) : COLLPROF_OK;
}

/* block r of count elements split n ways, uneven: offset and size in elements */
static void ofi_split(size_t count, int n, int r, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n, ur = (size_t)r;
    *off = ur * base + (ur < rem ? ur : rem);
    *len = base + (ur < rem ? 1 : 0);
}

/* reduce n slots of len bytes (slot q at scr + q*len) into out */
static int ofi_reduce_slots(ofi_ctx_t *ctx, const collprof_args_t *a, const char *scr, size_t len,
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

static int ofi_ready_all(ofi_ctx_t *ctx, const int *only, uint64_t payload)
{
    for (int q = 0; q < ctx->n; q++) {
        if (q == ctx->rank || (only != NULL && *only != q)) {
            continue;
        }
        int rc = ofi_signal(ctx, q, K_READY, payload);
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    return COLLPROF_OK;
}

/* reduce-scatter phase shared by allreduce, reducescatter and reduce:
 * rank r ends with its reduced block (boff(r), bsz(r)) at out */
static int ofi_rs_phase(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_buf_t *rb, const char *in,
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

static int ofi_run(void *vctx, const collprof_args_t *a)
{
    ofi_ctx_t *ctx = vctx;
    int n = ctx->n, me = ctx->rank, ns = 0, rc = COLLPROF_OK;
    int mode = ctx->mode[a->op];
    size_t esz = ofi_dtsize(a->dtype);
    ofi_buf_t *rb = NULL, *sb = NULL;
    char *recv = a->recvbuf;
    const char *send = a->in_place ? a->recvbuf : a->sendbuf;

    memset(ctx->got_ready, 0, (size_t)n);
    ctx->cur_dev = a->memtype == COLLPROF_MEM_DEVICE;
    ctx->copy_err = 0;
    if (ctx->cur_dev && (a->op == COLLPROF_OP_ALLREDUCE || a->op == COLLPROF_OP_REDUCESCATTER ||
                         a->op == COLLPROF_OP_REDUCE)) {
        ofi_set_error(ctx, "reductions run on the host: not supported on device memory");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (a->op == COLLPROF_OP_BARRIER) {
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_signal(ctx, q, K_BARRIER, 0);
        }
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_wait_from(ctx, K_BARRIER, q, 1);
        }
        return rc;
    }
    if (esz == 0) {
        ofi_set_error(ctx, "dtype %d is not supported", (int)a->dtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    rb = ofi_find(ctx, a->recvbuf);
    sb = send != NULL ? ofi_find(ctx, send) : NULL;
    if (rb == NULL || (send != NULL && sb == NULL && a->op != COLLPROF_OP_BROADCAST)) {
        ofi_set_error(ctx, "buffers were not allocated through this backend's mem_alloc");
        return COLLPROF_ERR_INVALID;
    }
    void *sdesc = sb != NULL ? sb->desc : NULL;
    size_t cnt = a->count, blk = cnt / (size_t)n * esz, all = cnt * esz;

    switch (a->op) {
    case COLLPROF_OP_ALLTOALL:
        if (a->in_place) { /* our input is overwritten by the peers: stage it */
            ofi_copy(ctx, rb->scr, recv, (size_t)n * blk);
            send = rb->scr;
            sdesc = rb->sdesc;
        }
        for (int i = 1; i < n; i++) {
            int q = (me + i) % n;
            ofi_add(ctx, &ns, q, K_DATA, send + (size_t)q * blk, sdesc, blk, (uint64_t)me * blk);
        }
        rc = ofi_ready_all(ctx, NULL, 0);
        if (!a->in_place) {
            ofi_copy(ctx, recv + (size_t)me * blk, send + (size_t)me * blk, blk);
        }
        if (rc == COLLPROF_OK) {
            rc = ofi_post_all(ctx, mode, rb, ns);
        }
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_expect(ctx, mode, K_DATA, q, blk);
        }
        break;
    case COLLPROF_OP_ALLTOALLV: {
        const size_t *sc = a->in_place ? a->recvcounts : a->sendcounts;
        const size_t *sd = a->in_place ? a->rdispls : a->sdispls;
        if (sc == NULL || sd == NULL || a->recvcounts == NULL || a->rdispls == NULL) {
            ofi_set_error(ctx, "alltoallv without counts or displacements");
            return COLLPROF_ERR_INVALID;
        }
        if (a->in_place) {
            size_t ext = 0;
            for (int q = 0; q < n; q++) {
                size_t e = (a->rdispls[q] + a->recvcounts[q]) * esz;
                ext = e > ext ? e : ext;
            }
            ofi_copy(ctx, rb->scr, recv, ext);
            send = rb->scr;
            sdesc = rb->sdesc;
        }
        for (int i = 1; i < n; i++) {
            int q = (me + i) % n;
            ofi_send_t *s = ofi_add(ctx, &ns, q, K_DATA, send + sd[q] * esz, sdesc, sc[q] * esz, 0);
            s->add_payload = 1; /* the target tells where: its rdispls[me] */
        }
        /* each peer gets its own READY payload: where its block goes here */
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_signal(ctx, q, K_READY, a->rdispls[q] * esz);
        }
        if (!a->in_place) {
            ofi_copy(ctx, recv + a->rdispls[me] * esz, send + sd[me] * esz, sc[me] * esz);
        }
        if (rc == COLLPROF_OK) {
            rc = ofi_post_all(ctx, mode, rb, ns);
        }
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_expect(ctx, mode, K_DATA, q, a->recvcounts[q] * esz);
        }
        break;
    }
    case COLLPROF_OP_ALLGATHER: {
        const char *mine = a->in_place ? recv + (size_t)me * blk : send;
        for (int i = 1; i < n; i++) {
            ofi_add(ctx, &ns, (me + i) % n, K_DATA, mine, a->in_place ? rb->desc : sdesc, blk,
                    (uint64_t)me * blk);
        }
        rc = ofi_ready_all(ctx, NULL, 0);
        if (!a->in_place) {
            ofi_copy(ctx, recv + (size_t)me * blk, send, blk);
        }
        if (rc == COLLPROF_OK) {
            rc = ofi_post_all(ctx, mode, rb, ns);
        }
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            rc = q == me ? COLLPROF_OK : ofi_expect(ctx, mode, K_DATA, q, blk);
        }
        break;
    }
    case COLLPROF_OP_BROADCAST:
        if (me == a->root) {
            for (int i = 1; i < n; i++) {
                ofi_add(ctx, &ns, (me + i) % n, K_DATA, recv, rb->desc, all, 0);
            }
            rc = ofi_post_all(ctx, mode, rb, ns);
        } else {
            rc = ofi_ready_all(ctx, &a->root, 0);
            if (rc == COLLPROF_OK) {
                rc = ofi_expect(ctx, mode, K_DATA, a->root, all);
            }
        }
        break;
    case COLLPROF_OP_GATHER:
        /* root: count elements; everyone sends count/n */
        if (me == a->root) {
            rc = ofi_ready_all(ctx, NULL, 0);
            if (!a->in_place) {
                ofi_copy(ctx, recv + (size_t)me * blk, send, blk);
            }
            for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
                rc = q == me ? COLLPROF_OK : ofi_expect(ctx, mode, K_DATA, q, blk);
            }
        } else {
            const char *mine = a->in_place ? recv + (size_t)me * blk : send;
            ofi_add(ctx, &ns, a->root, K_DATA, mine, a->in_place ? rb->desc : sdesc, blk,
                    (uint64_t)me * blk);
            rc = ofi_post_all(ctx, mode, rb, ns);
        }
        break;
    case COLLPROF_OP_SCATTER:
        if (me == a->root) {
            for (int i = 1; i < n; i++) {
                int q = (me + i) % n;
                ofi_add(ctx, &ns, q, K_DATA, send + (size_t)q * blk, sdesc, blk,
                        a->in_place ? (uint64_t)q * blk : 0);
            }
            if (!a->in_place) {
                ofi_copy(ctx, recv, send + (size_t)me * blk, blk);
            }
            rc = ofi_post_all(ctx, mode, rb, ns);
        } else {
            rc = ofi_ready_all(ctx, &a->root, 0);
            if (rc == COLLPROF_OK) {
                rc = ofi_expect(ctx, mode, K_DATA, a->root, blk);
            }
        }
        break;
    case COLLPROF_OP_SENDRECV:
        if (n == 1 || a->peer_send == me) {
            if (!a->in_place) {
                ofi_copy(ctx, recv, send, all);
            }
            break;
        }
        if (a->in_place) {
            ofi_copy(ctx, rb->scr, recv, all);
            send = rb->scr;
            sdesc = rb->sdesc;
        }
        ofi_add(ctx, &ns, a->peer_send, K_DATA, send, sdesc, all, 0);
        rc = ofi_ready_all(ctx, &a->peer_recv, 0);
        if (rc == COLLPROF_OK) {
            rc = ofi_post_all(ctx, mode, rb, ns);
        }
        if (rc == COLLPROF_OK) {
            rc = ofi_expect(ctx, mode, K_DATA, a->peer_recv, all);
        }
        break;
    case COLLPROF_OP_REDUCESCATTER:
        rc = ofi_rs_phase(ctx, a, rb, send, a->in_place ? rb->desc : sdesc, 1, recv, mode);
        break;
    case COLLPROF_OP_ALLREDUCE:
    case COLLPROF_OP_REDUCE: {
        size_t off, len;
        ofi_split(cnt, n, me, &off, &len);
        rc = ofi_rs_phase(ctx, a, rb, send, a->in_place ? rb->desc : sdesc, 0, recv + off * esz,
                          mode);
        if (rc != COLLPROF_OK) {
            break;
        }
        /* then every reduced block goes to everyone (allreduce) or to the root */
        for (int i = 1; i < n; i++) {
            int q = (me + i) % n;
            if (a->op == COLLPROF_OP_ALLREDUCE || q == a->root) {
                ofi_add(ctx, &ns, q, K_DATA2, recv + off * esz, rb->desc, len * esz, off * esz);
            }
        }
        rc = ofi_post_all(ctx, mode, rb, ns);
        if (a->op == COLLPROF_OP_ALLREDUCE || me == a->root) {
            for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
                size_t qo, ql;
                ofi_split(cnt, n, q, &qo, &ql);
                rc = q == me ? COLLPROF_OK : ofi_expect(ctx, mode, K_DATA2, q, ql * esz);
            }
        }
        break;
    }
    default:
        ofi_set_error(ctx, "operation %d is not supported by the ofi backend", (int)a->op);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx);
    }
    if (rc == COLLPROF_OK && ctx->copy_err) {
        rc = COLLPROF_ERR_BACKEND; /* the message is set */
    }
    return rc;
}

static int ofi_select_variant(void *vctx, collprof_op_t op, const char *variant)
{
    ofi_ctx_t *ctx = vctx;
    int m = -1;
    if ((unsigned)op >= COLLPROF_OP_COUNT) {
        ofi_set_error(ctx, "unknown operation %d", (int)op);
        return COLLPROF_ERR_INVALID;
    }
    if (variant == NULL || variant[0] == '\0' || !strcmp(variant, "default") ||
        !strcmp(variant, "roundrobin")) {
        m = M_RR;
    } else if (!strcmp(variant, "single")) {
        m = M_SINGLE;
    } else if (!strcmp(variant, "multichannel")) {
        m = M_MULTI;
    }
    if (m < 0) {
        ofi_set_error(ctx, "unknown variant '%s' (single, multichannel, roundrobin)", variant);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (op == COLLPROF_OP_BARRIER && m != M_RR) {
        ofi_set_error(ctx, "barrier has only the default variant");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    ctx->mode[op] = m;
    return COLLPROF_OK;
}

/* ---- init / finalize ------------------------------------------------------------ */

static void ofi_teardown(ofi_ctx_t *ctx)
{
    while (ctx->bufs != NULL) {
        ofi_buf_t *b = ctx->bufs;
        ctx->bufs = b->next;
        ofi_buf_free(b);
    }
    for (int c = 0; c < OFI_MAX_CH; c++) {
        if (ctx->ep[c] != NULL) {
            fi_close(&ctx->ep[c]->fid);
        }
    }
    for (int c = 0; c < OFI_MAX_CH; c++) {
        if (ctx->cq[c] != NULL) {
            fi_close(&ctx->cq[c]->fid);
        }
    }
    if (ctx->av != NULL) {
        fi_close(&ctx->av->fid);
    }
    if (ctx->ctrl_mr != NULL) {
        fi_close(&ctx->ctrl_mr->fid);
    }
    if (ctx->domain != NULL) {
        fi_close(&ctx->domain->fid);
    }
    if (ctx->fabric != NULL) {
        fi_close(&ctx->fabric->fid);
    }
    if (ctx->info != NULL) {
        fi_freeinfo(ctx->info);
    }
    for (int k = 0; k < K_NKINDS; k++) {
        free(ctx->cnt[k]);
        free(ctx->used[k]);
    }
    free(ctx->ctrl);
    free(ctx->addr);
    free(ctx->peer_ctrl_addr);
    free(ctx->peer_ctrl_key);
    free(ctx->got_ready);
    free(ctx->rpayload);
    free(ctx->sends);
    free(ctx);
}

/* what each rank publishes at init: this header, then nch ofi_xaddr_t */
typedef struct ofi_xinit {
    int32_t ok;
    int32_t nch;
    uint64_t ctrl_addr, ctrl_key;
} ofi_xinit_t;

typedef struct ofi_xaddr {
    uint64_t len;
    char addr[OFI_ADDR_MAX];
} ofi_xaddr_t;

static size_t ofi_xlen(int nch)
{
    return sizeof(ofi_xinit_t) + (size_t)nch * sizeof(ofi_xaddr_t);
}

static ofi_xaddr_t *ofi_xaddr(void *x, int c)
{
    return (ofi_xaddr_t *)(void *)((char *)x + sizeof(ofi_xinit_t)) + c;
}

/*
 * Provider name and channel count from the options; the same on every rank
 * (same options), so the exchange record has the same size everywhere even
 * when this fails.
 */
static int ofi_options(ofi_ctx_t *ctx)
{
    const collprof_host_t *h = ctx->host;
    const char *prov = h->get_option ? h->get_option("ofi-provider") : NULL;
    const char *chs = h->get_option ? h->get_option("ofi-channels") : NULL;

    if (prov == NULL || prov[0] == '\0') {
        prov = getenv("FI_PROVIDER");
    }
    if (prov == NULL || prov[0] == '\0') {
        prov = h->nnodes <= 1 ? "shm" : "tcp;ofi_rxm";
    }
    snprintf(ctx->prov, sizeof(ctx->prov), "%s", prov);
    ctx->nch = OFI_DEF_CH;
    if (chs != NULL) {
        char *end = NULL;
        long v = strtol(chs, &end, 10);
        if (end == chs || *end != '\0' || v < 1 || v > OFI_MAX_CH) {
            ofi_set_error(ctx, "ofi-channels=%s: expected 1..%d", chs, OFI_MAX_CH);
            return COLLPROF_ERR_INVALID;
        }
        ctx->nch = (int)v;
    }
    return COLLPROF_OK;
}

/* everything local: provider, domain, endpoints, control area */
static int ofi_setup(ofi_ctx_t *ctx, void *mine)
{
    const collprof_host_t *h = ctx->host;
    const char *prov = ctx->prov;
    const char *node = NULL;
    uint64_t flags = 0;
    struct fi_info *hints;
    int r, n = ctx->n;

    /* one node and a socket provider: keep the traffic on loopback */
    if (h->nnodes <= 1 && strcmp(prov, "shm") != 0 && getenv("FI_TCP_IFACE") == NULL &&
        getenv("FI_SOCKETS_IFACE") == NULL) {
        node = "127.0.0.1";
        flags = FI_SOURCE;
    }
    /* with a GPU, ask for FI_HMEM first; a provider without it still runs host memory */
    struct fi_info *pick = NULL;
    for (int hmem = ofi_gpu_count() > 0; hmem >= 0 && pick == NULL; hmem--) {
        hints = ofi_hints(prov);
        if (hints == NULL) {
            ofi_set_error(ctx, "fi_allocinfo failed");
            return COLLPROF_ERR_NO_MEMORY;
        }
        if (hmem) {
            hints->caps |= FI_HMEM;
            hints->domain_attr->mr_mode |= FI_MR_HMEM;
        }
        fi_freeinfo(ctx->info);
        ctx->info = NULL;
        r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, NULL, flags, hints,
                       &ctx->info);
        fi_freeinfo(hints);
        for (struct fi_info *i = (r == 0 ? ctx->info : NULL); i != NULL; i = i->next) {
            if (ofi_usable(i) && (!hmem || (i->caps & FI_HMEM))) {
                pick = i;
                ctx->hmem = hmem;
                break;
            }
        }
        if (pick == NULL && hmem && h->log != NULL && h->rank == 0) {
            h->log(COLLPROF_LOG_INFO, "ofi: provider '%s' has no FI_HMEM: host memory only", prov);
        }
    }
    if (pick == NULL) {
        char list[512];
        ofi_list_providers(list, sizeof(list));
        ofi_set_error(ctx,
                      "provider '%s' unusable (no RDM RMA write with CQ data; %s); usable "
                      "providers: %s (--ofi-provider NAME)",
                      prov, r != 0 ? fi_strerror(-r) : "no suitable entry", list);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    pick = fi_dupinfo(pick);
    fi_freeinfo(ctx->info);
    ctx->info = pick;
    if (pick == NULL) {
        ofi_set_error(ctx, "fi_dupinfo failed");
        return COLLPROF_ERR_NO_MEMORY;
    }
    ctx->mr_mode = pick->domain_attr->mr_mode;
#ifdef CP_OFI_HAVE_CUDA
    if (ctx->hmem) { /* one GPU per local rank, round robin */
        cudaError_t ce = cudaSetDevice(h->local_rank % ofi_gpu_count());
        if (ce == cudaSuccess) {
            ce = cudaGetDevice(&ctx->cuda_dev);
        }
        if (ce != cudaSuccess) {
            ofi_set_error(ctx, "cudaSetDevice(%d): %s", h->local_rank % ofi_gpu_count(),
                          cudaGetErrorString(ce));
            return COLLPROF_ERR_BACKEND;
        }
        ctx->dmabuf = 1;
    }
#endif
    ctx->virt = (ctx->mr_mode & FI_MR_VIRT_ADDR) != 0 || (ctx->mr_mode & FI_MR_BASIC) != 0;
    ctx->inject = pick->tx_attr->inject_size;
    ctx->chunk =
        pick->ep_attr->max_msg_size < OFI_CHUNK_MAX ? pick->ep_attr->max_msg_size : OFI_CHUNK_MAX;
    ctx->next_key = 1;
    if ((r = fi_fabric(pick->fabric_attr, &ctx->fabric, NULL)) != 0) {
        return ofi_fail(ctx, "fi_fabric", r);
    }
    if ((r = fi_domain(ctx->fabric, pick, &ctx->domain, NULL)) != 0) {
        return ofi_fail(ctx, "fi_domain", r);
    }
    struct fi_av_attr ava;
    memset(&ava, 0, sizeof(ava));
    ava.type = pick->domain_attr->av_type != FI_AV_UNSPEC ? pick->domain_attr->av_type : FI_AV_MAP;
    ava.count = (size_t)n * (size_t)ctx->nch;
    if ((r = fi_av_open(ctx->domain, &ava, &ctx->av, NULL)) != 0) {
        return ofi_fail(ctx, "fi_av_open", r);
    }
    for (int c = 0; c < ctx->nch; c++) {
        struct fi_cq_attr cqa;
        size_t al = OFI_ADDR_MAX;
        memset(&cqa, 0, sizeof(cqa));
        cqa.format = FI_CQ_FORMAT_DATA;
        cqa.wait_obj = FI_WAIT_NONE;
        if ((r = fi_cq_open(ctx->domain, &cqa, &ctx->cq[c], NULL)) != 0) {
            return ofi_fail(ctx, "fi_cq_open", r);
        }
        if ((r = fi_endpoint(ctx->domain, pick, &ctx->ep[c], NULL)) != 0) {
            return ofi_fail(ctx, "fi_endpoint", r);
        }
        if ((r = fi_ep_bind(ctx->ep[c], &ctx->cq[c]->fid, FI_TRANSMIT | FI_RECV)) != 0) {
            return ofi_fail(ctx, "fi_ep_bind(cq)", r);
        }
        if ((r = fi_ep_bind(ctx->ep[c], &ctx->av->fid, 0)) != 0) {
            return ofi_fail(ctx, "fi_ep_bind(av)", r);
        }
        if ((r = fi_enable(ctx->ep[c])) != 0) {
            return ofi_fail(ctx, "fi_enable", r);
        }
        if ((r = fi_getname(&ctx->ep[c]->fid, ofi_xaddr(mine, c)->addr, &al)) != 0) {
            return ofi_fail(ctx, "fi_getname", r);
        }
        ofi_xaddr(mine, c)->len = al;
    }
    if (posix_memalign((void **)&ctx->ctrl, 4096, (size_t)n * 16u) != 0) {
        ctx->ctrl = NULL;
        ofi_set_error(ctx, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    memset(ctx->ctrl, 0, (size_t)n * 16u);
    r = ofi_reg(ctx, ctx->ctrl, (size_t)n * 16u, 0, &ctx->ctrl_mr, &ctx->ctrl_desc);
    if (r != COLLPROF_OK) {
        return r;
    }
    ofi_xinit_t *x = mine;
    x->ctrl_addr = ctx->virt ? (uint64_t)(uintptr_t)ctx->ctrl : 0;
    x->ctrl_key = fi_mr_key(ctx->ctrl_mr);
    x->nch = ctx->nch;
    x->ok = 1;
    return COLLPROF_OK;
}

static int ofi_init(const collprof_host_t *host, void **out)
{
    ofi_ctx_t *ctx = calloc(1, sizeof(*ctx));
    char *mine = NULL, *all = NULL;
    int rc = COLLPROF_OK, n;
    size_t xlen;
    if (ctx == NULL || host == NULL) {
        free(ctx);
        ofi_set_error(NULL, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    n = host->nranks;
    ctx->host = host;
    ctx->rank = host->rank;
    ctx->n = n;
    ctx->nch = 1;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->mode[op] = M_RR;
    }
    int orc0 = ofi_options(ctx); /* sets nch (also when it fails) */
    xlen = ofi_xlen(ctx->nch);
    mine = calloc(1, xlen);
    all = calloc((size_t)n, xlen);
    ctx->addr = calloc((size_t)n * OFI_MAX_CH, sizeof(fi_addr_t));
    ctx->peer_ctrl_addr = calloc((size_t)n, sizeof(uint64_t));
    ctx->peer_ctrl_key = calloc((size_t)n, sizeof(uint64_t));
    ctx->got_ready = calloc((size_t)n, 1);
    ctx->rpayload = calloc((size_t)n, sizeof(uint64_t));
    ctx->sends = calloc((size_t)n * 2u + 2u, sizeof(ofi_send_t));
    int oom = !mine || !all || !ctx->addr || !ctx->peer_ctrl_addr || !ctx->peer_ctrl_key ||
              !ctx->got_ready || !ctx->rpayload || !ctx->sends;
    for (int k = 0; k < K_NKINDS; k++) {
        ctx->cnt[k] = calloc((size_t)n, sizeof(uint64_t));
        ctx->used[k] = calloc((size_t)n, sizeof(uint64_t));
        oom |= !ctx->cnt[k] || !ctx->used[k];
    }
    if (oom) {
        rc = COLLPROF_ERR_NO_MEMORY;
        ofi_set_error(ctx, "out of memory");
    } else if (orc0 != COLLPROF_OK) {
        rc = orc0;
    } else {
        rc = ofi_setup(ctx, mine);
    }
    if (all == NULL || mine == NULL) { /* cannot take part in the exchange at all */
        ofi_set_error(NULL, "out of memory");
        free(mine);
        ofi_teardown(ctx);
        return COLLPROF_ERR_NO_MEMORY;
    }
    /* always collective, so a rank that failed locally never strands the others */
    int orc = host->oob_allgather(mine, all, xlen);
    if (orc != 0 && rc == COLLPROF_OK) {
        rc = COLLPROF_ERR_BOOTSTRAP;
        ofi_set_error(ctx, "oob_allgather of endpoint addresses failed (%d)", orc);
    }
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        const ofi_xinit_t *xq = (const ofi_xinit_t *)(const void *)(all + (size_t)q * xlen);
        if (!xq->ok || xq->nch != ctx->nch) {
            rc = COLLPROF_ERR_BACKEND;
            ofi_set_error(ctx, "rank %d could not set up libfabric provider '%s'", q, ctx->prov);
            break;
        }
        ctx->peer_ctrl_addr[q] = xq->ctrl_addr;
        ctx->peer_ctrl_key[q] = xq->ctrl_key;
        for (int c = 0; c < ctx->nch && rc == COLLPROF_OK; c++) {
            fi_addr_t *fa = &ctx->addr[(size_t)q * (size_t)ctx->nch + (size_t)c];
            int r =
                fi_av_insert(ctx->av, ofi_xaddr(all + (size_t)q * xlen, c)->addr, 1, fa, 0, NULL);
            if (r != 1) {
                rc = ofi_fail(ctx, "fi_av_insert", r < 0 ? r : -FI_EINVAL);
            }
        }
    }
    free(all);
    free(mine);
    if (rc != COLLPROF_OK) {
        snprintf(ofi_global_err, sizeof(ofi_global_err), "%s", ctx->err);
        ofi_teardown(ctx);
        return rc;
    }
    ofi_link_in_use = ofi_info_link_gbps(ctx->info);
    ofi_hmem_in_use = ctx->hmem;
    if (host->log != NULL && host->rank == 0) {
        host->log(COLLPROF_LOG_INFO,
                  "ofi: provider %s, fabric %s, domain %s, %d channel(s), mr_mode 0x%llx, "
                  "inject %zu, link %.1f Gbit/s (0 = not reported)",
                  ctx->info->fabric_attr->prov_name, ctx->info->fabric_attr->name,
                  ctx->info->domain_attr->name, ctx->nch, (unsigned long long)ctx->mr_mode,
                  ctx->inject, ofi_link_in_use);
    }
    *out = ctx;
    return COLLPROF_OK;
}

static int ofi_finalize(void *vctx)
{
    ofi_ctx_t *ctx = vctx;
    if (ctx != NULL) {
        ofi_teardown(ctx);
    }
    return COLLPROF_OK;
}

static const char *ofi_last_error(void *vctx)
{
    ofi_ctx_t *ctx = vctx;
    return ctx != NULL ? ctx->err : ofi_global_err;
}

__attribute__((visibility("default"))) const collprof_backend_t collprof_backend_v1 = {
    .size = sizeof(collprof_backend_t),
    .abi_version = COLLPROF_PLUGIN_ABI_VERSION,
    .name = "ofi",
    .version = PACKAGE_VERSION,
    .description = "libfabric (OFI) RMA-write collectives over shm / tcp;ofi_rxm",
    .flags = 0,
    .query = ofi_query,
    .init = ofi_init,
    .finalize = ofi_finalize,
    .select_variant = ofi_select_variant,
    .mem_alloc = ofi_mem_alloc,
    .mem_free = ofi_mem_free,
    .mem_copy = ofi_mem_copy,
    .run = ofi_run,
    .run_batch = collprof_no_run_batch,
    .last_error = ofi_last_error,
};
