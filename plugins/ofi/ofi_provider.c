/*
 * The ofi plugin's providers (ofi_internal.h): the hints, which fi_info entries are usable,
 * their link rate, and the provider and device a context takes.
 */
#include "config.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

#ifdef CP_OFI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* ---- provider selection ---------------------------------------------------- */

struct fi_info *ofi_hints(const char *prov)
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

int ofi_usable(const struct fi_info *i)
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
double ofi_info_link_gbps(const struct fi_info *i)
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
double ofi_default_link_gbps(void)
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

/* ---- the provider and device of a context ----------------------------------------- */

/* *pick: the first usable entry for the provider, with FI_HMEM when hmem and tagged messages
 * (post()'s sends and recvs) when tagged; NULL if none (*r: fi_getinfo's code) */
static int ofi_try_provider(ofi_ctx_t *ctx, const char *node, uint64_t flags, int hmem, int tagged,
                            int *r, struct fi_info **pick)
{
    struct fi_info *hints = ofi_hints(ctx->prov);
    *pick = NULL;
    if (hints == NULL) {
        ofi_set_error(ctx, "fi_allocinfo failed");
        return COLLPROF_ERR_NO_MEMORY;
    }
    if (hmem) {
        hints->caps |= FI_HMEM;
        hints->domain_attr->mr_mode |= FI_MR_HMEM;
    }
    if (tagged) {
        hints->caps |= FI_TAGGED | FI_SEND | FI_RECV;
    }
    fi_freeinfo(ctx->info);
    ctx->info = NULL;
    *r = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, NULL, flags, hints,
                    &ctx->info);
    fi_freeinfo(hints);
    for (struct fi_info *i = (*r == 0 ? ctx->info : NULL); i != NULL; i = i->next) {
        if (ofi_usable(i) && (!hmem || (i->caps & FI_HMEM))) {
            ctx->hmem = hmem;
            ctx->tagged = tagged;
            *pick = i;
            break;
        }
    }
    return COLLPROF_OK;
}

/* ctx->info becomes the provider entry to open; with a GPU, FI_HMEM is asked for first
 * (a provider without it still runs host memory) */
int ofi_pick_provider(ofi_ctx_t *ctx)
{
    const collprof_host_t *h = ctx->host;
    const char *node = NULL;
    uint64_t flags = 0;
    struct fi_info *pick = NULL;
    int r = 0;

    /* one node and a socket provider: keep the traffic on loopback */
    if (h->nnodes <= 1 && strcmp(ctx->prov, "shm") != 0 && getenv("FI_TCP_IFACE") == NULL &&
        getenv("FI_SOCKETS_IFACE") == NULL) {
        node = "127.0.0.1";
        flags = FI_SOURCE;
    }
    for (int hmem = ofi_gpu_count() > 0; hmem >= 0 && pick == NULL; hmem--) {
        /* tagged messages when the provider has them (else no posted sends and recvs) */
        for (int tagged = 1; tagged >= 0 && pick == NULL; tagged--) {
            int rc = ofi_try_provider(ctx, node, flags, hmem, tagged, &r, &pick);
            if (rc != COLLPROF_OK) {
                return rc;
            }
        }
        if (pick == NULL && hmem && h->log != NULL && h->rank == 0) {
            h->log(COLLPROF_LOG_INFO, "ofi: provider '%s' has no FI_HMEM: host memory only",
                   ctx->prov);
        }
    }
    if (pick == NULL) {
        char list[512];
        ofi_list_providers(list, sizeof(list));
        ofi_set_error(ctx,
                      "provider '%s' unusable (no RDM RMA write with CQ data; %s); usable "
                      "providers: %s (--ofi-provider NAME)",
                      ctx->prov, r != 0 ? fi_strerror(-r) : "no suitable entry", list);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    pick = fi_dupinfo(pick);
    fi_freeinfo(ctx->info);
    ctx->info = pick;
    if (pick == NULL) {
        ofi_set_error(ctx, "fi_dupinfo failed");
        return COLLPROF_ERR_NO_MEMORY;
    }
    return COLLPROF_OK;
}

/* one GPU per local rank, round robin (with FI_HMEM only) */
int ofi_pick_device(ofi_ctx_t *ctx)
{
#ifdef CP_OFI_HAVE_CUDA
    if (ctx->hmem) {
        int dev = ctx->host->local_rank % ofi_gpu_count();
        cudaError_t ce = cudaSetDevice(dev);
        if (ce == cudaSuccess) {
            ce = cudaGetDevice(&ctx->cuda_dev);
        }
        if (ce != cudaSuccess) {
            ofi_set_error(ctx, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(ce));
            return COLLPROF_ERR_BACKEND;
        }
        ctx->dmabuf = 1;
    }
#else
    (void)ctx;
#endif
    return COLLPROF_OK;
}
