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
 * for peer p goes on channel (p + rank) % channels).  One more endpoint,
 * the control channel, carries READY, BARRIER and the direct variant's
 * notifications and never bulk data: shm holds the target region's
 * spinlock for the whole CMA copy of a fast-path write, so a control
 * message that shared an endpoint with a 4 MiB write waited behind it (a
 * time slice when the writer was preempted on an oversubscribed node).
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
 *
 * Non-blocking ops (iallreduce, iallgather, ialltoall, ibroadcast;
 * ofi_nb.c): the blocking twin's schedule, split around the core's host
 * computation: the post sends READY and posts the writes that need only
 * their target's READY, the wait does the rest.  Nothing progresses them
 * in between (manual progress, no hook in the ABI, no thread).
 *
 * Posted ops (post() and wait(), collprof --replay; ofi_post.c, ofi_p2p.c): a context's
 * worker thread, started by its first post, runs the posted collectives in the order posted
 * with run()'s schedules and progresses the sends and recvs, tagged messages (the provider is
 * asked for FI_TAGGED beside RMA; one without still runs everything else).
 *
 * The code is spread over several files; ofi_internal.h lists them.
 */

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

#ifdef CP_OFI_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif

static char ofi_libversion[64];

static const collprof_variant_t ofi_variants[] = {
    {"single", "every RMA write on one endpoint (channel 0)", OFI_VOPS | OFI_NBOPS},
    {"multichannel", "every block split across all channels (-B ofi-channels=N, default 4)",
     OFI_VOPS | OFI_NBOPS},
    {"roundrobin", "the block for peer p on channel (p + rank) % channels (also the default)",
     OFI_VOPS | OFI_NBOPS},
    {"direct",
     "roundrobin's channels, plain RMA writes (shm: CMA inside the call, no target progress) "
     "and one notification per block",
     OFI_VOPS | OFI_NBOPS},
};

/* ---- query ---------------------------------------------------------------- */

static int ofi_query(void *vctx, collprof_caps_t *caps)
{
    const ofi_ctx_t *ctx = vctx; /* after init: the provider in use */
    uint32_t v = fi_version();
    int rc = collprof_check_caps(caps, ofi_global_err, sizeof(ofi_global_err));
    if (rc != COLLPROF_OK) {
        return rc;
    }
    snprintf(ofi_libversion, sizeof(ofi_libversion), "libfabric %u.%u", FI_MAJOR(v), FI_MINOR(v));
    caps->library_version = ofi_libversion;
    caps->ops = OFI_VOPS | OFI_NBOPS | COLLPROF_BIT(COLLPROF_OP_BARRIER);
    caps->dtypes = OFI_DTYPES;
    caps->redops = COLLPROF_BIT(COLLPROF_REDOP_SUM) | COLLPROF_BIT(COLLPROF_REDOP_PROD) |
                   COLLPROF_BIT(COLLPROF_REDOP_MIN) | COLLPROF_BIT(COLLPROF_REDOP_MAX);
    caps->memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    /* before init: a GPU is seen; after init: the provider took FI_HMEM too */
    if (ctx != NULL ? ctx->hmem : ofi_gpu_count() > 0) {
        caps->memtypes |= COLLPROF_BIT(COLLPROF_MEM_DEVICE);
    }
    caps->variants = ofi_variants;
    caps->nvariants = sizeof(ofi_variants) / sizeof(ofi_variants[0]);
    if (COLLPROF_CAPS_HAS(caps, link_gbps)) {
        caps->link_gbps = ctx != NULL ? ofi_info_link_gbps(ctx->info) : ofi_default_link_gbps();
    }
    if (COLLPROF_CAPS_HAS(caps, default_variant)) {
        caps->default_variant = "roundrobin";
    }
    if (COLLPROF_CAPS_HAS(caps, post_ops)) { /* every blocking op; sends and recvs: FI_TAGGED */
        caps->post_ops = (OFI_VOPS | COLLPROF_BIT(COLLPROF_OP_BARRIER)) &
                         ~(ctx != NULL && !ctx->tagged ? COLLPROF_BIT(COLLPROF_OP_SENDRECV) : 0u);
    }
    return COLLPROF_OK;
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
    } else if (!strcmp(variant, "direct")) {
        m = M_DIRECT;
    }
    if (m < 0) {
        ofi_set_error(ctx, "unknown variant '%s' (single, multichannel, roundrobin, direct)",
                      variant);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (op == COLLPROF_OP_BARRIER && m != M_RR) {
        ofi_set_error(ctx, "barrier has only the default variant");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    ofi_post_hold(ctx, 1); /* the worker reads the modes */
    ctx->mode[op] = m;
    ofi_post_hold(ctx, 0);
    return COLLPROF_OK;
}

static COLLPROF_DEFINE_LAST_ERROR(ofi_last_error, ofi_ctx_t, err, ofi_global_err);

/* ---- provenance ------------------------------------------------------------ */

/* "cuda:0 <name> (<pci bus id>)" of this rank's device */
static void ofi_describe_gpu(const ofi_ctx_t *ctx, char *buf, size_t len)
{
#ifdef CP_OFI_HAVE_CUDA
    struct cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, ctx->cuda_dev) == cudaSuccess) {
        snprintf(buf, len, "cuda:%d %.32s (%04x:%02x:%02x.0)", ctx->cuda_dev, prop.name,
                 (unsigned)prop.pciDomainID, (unsigned)prop.pciBusID, (unsigned)prop.pciDeviceID);
        return;
    }
#endif
    snprintf(buf, len, "cuda:%d", ctx->cuda_dev);
}

/* The provider actually opened, its domain (the interface for tcp) and fabric. */
static int ofi_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    ofi_ctx_t *ctx = vctx;
    int dev = memtype == COLLPROF_MEM_DEVICE;
    if (ctx == NULL || out == NULL || ctx->info == NULL ||
        (memtype != COLLPROF_MEM_HOST && !(dev && ctx->hmem))) {
        ofi_set_error(ctx, "describe: host memory (or device memory with FI_HMEM) only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    const struct fi_info *i = ctx->info;
#ifdef FI_MR_DMABUF
    const char *devmem = "cudaMalloc, fi_mr_regattr (dma-buf, else FI_HMEM_CUDA)";
#else
    const char *devmem = "cudaMalloc, fi_mr_regattr FI_HMEM_CUDA";
#endif
    snprintf(out->memory, sizeof(out->memory), "%s",
             dev ? devmem : "posix_memalign 4096, fi_mr_reg");
    if (dev) {
        ofi_describe_gpu(ctx, out->device, sizeof(out->device));
    } else {
        snprintf(out->device, sizeof(out->device), "host");
    }
    /* "tcp;ofi_rxm on lo (fabric 127.0.0.0/8)"; "shm" where the three names agree */
    const char *prov =
        i->fabric_attr && i->fabric_attr->prov_name ? i->fabric_attr->prov_name : "?";
    const char *dom = i->domain_attr && i->domain_attr->name ? i->domain_attr->name : prov;
    const char *fab = i->fabric_attr && i->fabric_attr->name ? i->fabric_attr->name : dom;
    int same_dom = !strcmp(dom, prov), same_fab = !strcmp(fab, dom) || !strcmp(fab, prov);
    snprintf(out->transport, sizeof(out->transport), "%.40s%s%.40s%s%.30s%s", prov,
             same_dom ? "" : " on ", same_dom ? "" : dom, same_fab ? "" : " (fabric ",
             same_fab ? "" : fab, same_fab ? "" : ")");
    return COLLPROF_OK;
}

#define OFI_STR_(x) #x
#define OFI_STR(x)  OFI_STR_(x)
static const collprof_option_t ofi_options_decl[] = {
    {"ofi-provider", COLLPROF_OPT_STRING, NULL, 0, 0, NULL,
     "libfabric provider (default: FI_PROVIDER, else shm on one node, tcp;ofi_rxm across nodes)",
     COLLPROF_OPTF_LONG},
    {"ofi-channels", COLLPROF_OPT_INT, OFI_STR(OFI_DEF_CH), 1, OFI_MAX_CH, NULL,
     "endpoints per peer of the multichannel and roundrobin variants", COLLPROF_OPTF_LONG},
    {"ofi-yield", COLLPROF_OPT_CHOICE, "always", 0, 0, "always,auto,never,sleep",
     "sched_yield after 64 empty polls: always, never, auto (only when the node has more "
     "ranks than the CPUs a rank may run on), or sleep (yield, then sleep " OFI_STR(
         OFI_IDLE_SLEEP_US) " us: the CPU to the peers and the kernel's network work)",
     0},
};

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD("ofi", PACKAGE_VERSION,
                          "libfabric (OFI) RMA-write collectives over shm / tcp;ofi_rxm"),
    .flags = COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_LOCAL_GROUPS,
    COLLPROF_BACKEND_SLOTS(ofi, ofi_mem_copy, collprof_no_run_batch),
    /* the RMA-write all-to-all schedules, side by side */
    COLLPROF_BACKEND_EXTRAS(ofi_options_decl, COLLPROF_NROWS(ofi_options_decl),
                            COLLPROF_BIT(COLLPROF_OP_ALLTOALL), ofi_describe),
    .post = ofi_post,
    .wait = ofi_wait,
};
