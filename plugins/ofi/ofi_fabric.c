/* init/finalize of the ofi backend: options, fabric, endpoints, address exchange */
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

/* ---- init / finalize ------------------------------------------------------------ */

static void ofi_teardown(ofi_ctx_t *ctx)
{
    while (ctx->bufs != NULL) {
        ofi_buf_t *b = ctx->bufs;
        ctx->bufs = b->next;
        ofi_buf_free(b);
    }
    for (int c = 0; c <= OFI_MAX_CH; c++) {
        if (ctx->ep[c] != NULL) {
            fi_close(&ctx->ep[c]->fid);
        }
    }
    for (int c = 0; c <= OFI_MAX_CH; c++) {
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

/* what each rank publishes at init: this header, then nep ofi_xaddr_t */
typedef struct ofi_xinit {
    int32_t ok;
    int32_t nep;
    uint64_t ctrl_addr, ctrl_key;
    char why[160]; /* !ok: this rank's own reason, for the peers' messages */
} ofi_xinit_t;

typedef struct ofi_xaddr {
    uint64_t len;
    char addr[OFI_ADDR_MAX];
} ofi_xaddr_t;

static size_t ofi_xlen(int nep)
{
    return sizeof(ofi_xinit_t) + (size_t)nep * sizeof(ofi_xaddr_t);
}

static ofi_xaddr_t *ofi_xaddr(void *x, int c)
{
    return (ofi_xaddr_t *)(void *)((char *)x + sizeof(ofi_xinit_t)) + c;
}

/* the CPUs this process may run on (its affinity mask: taskset, cpusets, a launcher's
 * binding), else the online ones; 0 when neither is known */
static long ofi_usable_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        return CPU_COUNT(&set);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 0;
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
    const char *yld = h->get_option ? h->get_option("ofi-yield") : NULL;
    const char *tmo = h->get_option ? h->get_option("timeout") : NULL;
    double t = tmo != NULL ? strtod(tmo, NULL) : 0;
    ctx->wait_limit_s = t >= 1 ? t : OFI_WAIT_LIMIT_S;

    if (prov == NULL || prov[0] == '\0') {
        prov = getenv("FI_PROVIDER");
    }
    if (prov == NULL || prov[0] == '\0') {
        prov = h->nnodes <= 1 ? "shm" : "tcp;ofi_rxm";
    }
    snprintf(ctx->prov, sizeof(ctx->prov), "%s", prov);
    if (yld != NULL && strcmp(yld, "sleep") == 0) {
        ctx->yield_idle = 2;
    } else if (yld == NULL || strcmp(yld, "auto") != 0) {
        ctx->yield_idle = yld == NULL || strcmp(yld, "never") != 0; /* default: always */
    } else {
        long ncpu = ofi_usable_cpus();
        ctx->yield_idle = ncpu < 1 || h->local_size <= 0 || h->local_size > ncpu;
    }
    ctx->nch = OFI_DEF_CH;
    ctx->nep = ctx->nch + 1;
    if (chs != NULL) {
        char *end = NULL;
        long v = strtol(chs, &end, 10);
        if (end == chs || *end != '\0' || v < 1 || v > OFI_MAX_CH) {
            ofi_set_error(ctx, "ofi-channels=%s: expected 1..%d", chs, OFI_MAX_CH);
            return COLLPROF_ERR_INVALID;
        }
        ctx->nch = (int)v;
    }
    ctx->nep = ctx->nch + 1;
    return COLLPROF_OK;
}

/* fabric, domain and address vector of the picked provider */
static int ofi_open_domain(ofi_ctx_t *ctx)
{
    const struct fi_info *pick = ctx->info;
    struct fi_av_attr ava;
    int r;
    ctx->mr_mode = pick->domain_attr->mr_mode;
    ctx->virt = (ctx->mr_mode & FI_MR_VIRT_ADDR) != 0 || (ctx->mr_mode & FI_MR_BASIC) != 0;
    ctx->inject = pick->tx_attr->inject_size;
    ctx->chunk =
        pick->ep_attr->max_msg_size < OFI_CHUNK_MAX ? pick->ep_attr->max_msg_size : OFI_CHUNK_MAX;
    ctx->next_key = 1;
    /* direct variant: shm completes a plain write when its data is in place (CMA inside the
     * call, or the target's copy before the completion); elsewhere ask for that explicitly */
    ctx->direct_flags =
        pick->fabric_attr->prov_name != NULL && !strcmp(pick->fabric_attr->prov_name, "shm")
            ? 0
            : FI_DELIVERY_COMPLETE;
    if ((r = fi_fabric(pick->fabric_attr, &ctx->fabric, NULL)) != 0) {
        return ofi_fail(ctx, "fi_fabric", r);
    }
    if ((r = fi_domain(ctx->fabric, ctx->info, &ctx->domain, NULL)) != 0) {
        return ofi_fail(ctx, "fi_domain", r);
    }
    memset(&ava, 0, sizeof(ava));
    ava.type = pick->domain_attr->av_type != FI_AV_UNSPEC ? pick->domain_attr->av_type : FI_AV_MAP;
    ava.count = (size_t)ctx->n * (size_t)ctx->nep;
    if ((r = fi_av_open(ctx->domain, &ava, &ctx->av, NULL)) != 0) {
        return ofi_fail(ctx, "fi_av_open", r);
    }
    return COLLPROF_OK;
}

/* channel c: its CQ and endpoint, enabled; its address goes into the exchange record */
static int ofi_open_channel(ofi_ctx_t *ctx, int c, void *mine)
{
    struct fi_cq_attr cqa;
    size_t al = OFI_ADDR_MAX;
    int r;
    memset(&cqa, 0, sizeof(cqa));
    cqa.format = FI_CQ_FORMAT_DATA;
    cqa.wait_obj = FI_WAIT_NONE;
    if ((r = fi_cq_open(ctx->domain, &cqa, &ctx->cq[c], NULL)) != 0) {
        return ofi_fail(ctx, "fi_cq_open", r);
    }
    if ((r = fi_endpoint(ctx->domain, ctx->info, &ctx->ep[c], NULL)) != 0) {
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
    return COLLPROF_OK;
}

/* the registered control area the peers' READY and BARRIER payloads land in */
static int ofi_open_ctrl(ofi_ctx_t *ctx, void *mine)
{
    size_t len = (size_t)ctx->n * 24u;
    ofi_xinit_t *x = mine;
    if (posix_memalign((void **)&ctx->ctrl, 4096, len) != 0) {
        ctx->ctrl = NULL;
        ofi_set_error(ctx, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    memset(ctx->ctrl, 0, len);
    int r = ofi_reg(ctx, ctx->ctrl, len, 0, &ctx->ctrl_mr, &ctx->ctrl_desc);
    if (r != COLLPROF_OK) {
        return r;
    }
    x->ctrl_addr = ctx->virt ? (uint64_t)(uintptr_t)ctx->ctrl : 0;
    x->ctrl_key = fi_mr_key(ctx->ctrl_mr);
    return COLLPROF_OK;
}

/* The pid in a name of libfabric shm's regions, <pid>:<domain>:<endpoint>, else 0. */
static long ofi_shm_region_pid(const char *name)
{
    long pid = 0;
    int dom = 0, ep = 0, used = 0;
    if (sscanf(name, "%ld:%d:%d%n", &pid, &dom, &ep, &used) != 3 || name[used] != '\0') {
        return 0;
    }
    return pid;
}

/* everything local: provider, domain, endpoints, control area */
static int ofi_setup(ofi_ctx_t *ctx, void *mine)
{
    int rc = ofi_pick_provider(ctx);
    if (rc == COLLPROF_OK && !strcmp(ctx->prov, "shm")) {
        /* regions of killed processes stay; one whose pid this process now has makes
         * fi_enable fail with EBUSY (shm names them by pid and index) */
        collprof_shm_sweep(ofi_shm_region_pid, ctx->host, "ofi");
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_pick_device(ctx);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_open_domain(ctx);
    }
    for (int c = 0; c < ctx->nep && rc == COLLPROF_OK; c++) {
        rc = ofi_open_channel(ctx, c, mine);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_open_ctrl(ctx, mine);
    }
    if (rc == COLLPROF_OK) {
        ofi_xinit_t *x = mine;
        x->nep = ctx->nep;
        x->ok = 1;
    }
    return rc;
}

/* a context with its per-peer arrays (*oom: some are missing); NULL when out of memory */
static ofi_ctx_t *ofi_ctx_new(const collprof_host_t *host, int *oom)
{
    ofi_ctx_t *ctx = calloc(1, sizeof(*ctx));
    size_t n = (size_t)host->nranks;
    if (ctx == NULL) {
        return NULL;
    }
    ctx->host = host;
    ctx->rank = host->rank;
    ctx->n = host->nranks;
    ctx->nch = 1;
    ctx->nep = 2;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        ctx->mode[op] = M_RR;
    }
    ctx->addr = calloc(n * (OFI_MAX_CH + 1), sizeof(fi_addr_t));
    ctx->peer_ctrl_addr = calloc(n, sizeof(uint64_t));
    ctx->peer_ctrl_key = calloc(n, sizeof(uint64_t));
    ctx->got_ready = calloc(n, 1);
    ctx->rpayload = calloc(n, sizeof(uint64_t));
    ctx->sends = calloc(n * 2u + 2u, sizeof(ofi_send_t));
    *oom = !ctx->addr || !ctx->peer_ctrl_addr || !ctx->peer_ctrl_key || !ctx->got_ready ||
           !ctx->rpayload || !ctx->sends;
    for (int k = 0; k < K_NKINDS; k++) {
        ctx->cnt[k] = calloc(n, sizeof(uint64_t));
        ctx->used[k] = calloc(n, sizeof(uint64_t));
        *oom |= !ctx->cnt[k] || !ctx->used[k];
    }
    return ctx;
}

/* every rank's record (all, xlen bytes each): control area keys and endpoint addresses */
static int ofi_connect(ofi_ctx_t *ctx, char *all, size_t xlen)
{
    for (int q = 0; q < ctx->n; q++) {
        const ofi_xinit_t *xq = (const ofi_xinit_t *)(const void *)(all + (size_t)q * xlen);
        if (!xq->ok || xq->nep != ctx->nep) {
            char why[sizeof(xq->why)];
            memcpy(why, xq->why, sizeof(why));
            why[sizeof(why) - 1] = '\0';
            ofi_set_error(ctx, "rank %d could not set up libfabric provider '%s'%s%s", q, ctx->prov,
                          why[0] ? ": " : "", why);
            return COLLPROF_ERR_BACKEND;
        }
        ctx->peer_ctrl_addr[q] = xq->ctrl_addr;
        ctx->peer_ctrl_key[q] = xq->ctrl_key;
        for (int c = 0; c < ctx->nep; c++) {
            fi_addr_t *fa = &ctx->addr[(size_t)q * (size_t)ctx->nep + (size_t)c];
            const void *addr = ofi_xaddr(all + (size_t)q * xlen, c)->addr;
            int r = fi_av_insert(ctx->av, addr, 1, fa, 0, NULL);
            if (r != 1) {
                return ofi_fail(ctx, "fi_av_insert", r < 0 ? r : -FI_EINVAL);
            }
        }
    }
    return COLLPROF_OK;
}

static void ofi_log_setup(const ofi_ctx_t *ctx)
{
    const collprof_host_t *host = ctx->host;
    if (host->log != NULL && host->rank == 0) {
        host->log(COLLPROF_LOG_INFO,
                  "ofi: provider %s, fabric %s, domain %s, %d channel(s) + 1 for control, "
                  "yield when idle %s, mr_mode 0x%llx, "
                  "inject %zu, link %.1f Gbit/s (0 = not reported)",
                  ctx->info->fabric_attr->prov_name, ctx->info->fabric_attr->name,
                  ctx->info->domain_attr->name, ctx->nch,
                  ctx->yield_idle == 2 ? "yes, then sleeps"
                  : ctx->yield_idle    ? "yes"
                                       : "no",
                  (unsigned long long)ctx->mr_mode, ctx->inject, ofi_info_link_gbps(ctx->info));
    }
}

int ofi_init(const collprof_host_t *host, void **out)
{
    int oom = 0;
    ofi_ctx_t *ctx = host != NULL ? ofi_ctx_new(host, &oom) : NULL;
    char *mine = NULL, *all = NULL;
    int rc;
    size_t xlen;
    if (ctx == NULL) {
        ofi_set_error(NULL, "out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    rc = ofi_options(ctx); /* sets nch (also when it fails) */
    if (oom) {             /* still takes part in the exchange, to say so */
        rc = COLLPROF_ERR_NO_MEMORY;
        ofi_set_error(ctx, "out of memory");
    }
    xlen = ofi_xlen(ctx->nep);
    mine = calloc(1, xlen);
    all = calloc((size_t)ctx->n, xlen);
    if (all == NULL || mine == NULL) { /* cannot take part in the exchange at all */
        ofi_set_error(NULL, "out of memory");
        free(mine);
        free(all);
        ofi_teardown(ctx);
        return COLLPROF_ERR_NO_MEMORY;
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_setup(ctx, mine);
    }
    if (rc != COLLPROF_OK) { /* the others name this rank: say why too */
        ofi_xinit_t *x = (ofi_xinit_t *)(void *)mine;
        snprintf(x->why, sizeof(x->why), "%s", ctx->err);
    }
    /* always collective, so a rank that failed locally never strands the others */
    int orc = host->oob_allgather(mine, all, xlen);
    if (orc != 0 && rc == COLLPROF_OK) {
        rc = COLLPROF_ERR_BOOTSTRAP;
        ofi_set_error(ctx, "oob_allgather of endpoint addresses failed (%d)", orc);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_connect(ctx, all, xlen);
    }
    /* not at the first op's expense; a context of more ranks connects at first use, as a
     * connection-oriented provider holds a socket per peer and channel (1,022 for 512 ranks) */
    if (rc == COLLPROF_OK && ctx->n <= OFI_CONNECT_ALL_MAX) {
        rc = ofi_connect_all(ctx);
    }
    free(all);
    free(mine);
    if (rc != COLLPROF_OK) {
        snprintf(ofi_global_err, sizeof(ofi_global_err), "%s", ctx->err);
        ofi_teardown(ctx);
        return rc;
    }
    ofi_log_setup(ctx);
    *out = ctx;
    return COLLPROF_OK;
}

int ofi_finalize(void *vctx)
{
    ofi_ctx_t *ctx = vctx;
    if (ctx != NULL) {
        ofi_post_stop(ctx); /* the worker of posted ops, if one started */
        ofi_teardown(ctx);
    }
    return COLLPROF_OK;
}
