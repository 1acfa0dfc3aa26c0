/*
 * NCCL's entry points: one table per profiler API version whose layouts
 * differ (v6, v5, v4, v3; NCCL takes the newest it knows), each turning its
 * descriptors into an np_desc_t for ncclprof_rec.c.  What NCCL sends (NCCL
 * 2.29's src/plugin/profiler.cc): a Group event per kernel plan, a Coll or
 * P2p event per op of the plan (started and stopped on the host around the
 * plan's launch), and from v4 on, a KernelCh event per channel of the op's
 * kernel with the GPU's start and stop times (its parent is the op).  v6 adds
 * copy-engine collectives (CeColl).
 */
#include "ncclprof.h"
#include "ncclprof_api.h"

#include <stdint.h>
#include <string.h>

#define NP_EXPORT __attribute__((visibility("default")))

static void desc_init(np_desc_t *o, int rank)
{
    memset(o, 0, sizeof(*o));
    o->seq = UINT64_MAX;
    o->root = o->peer = -1;
    o->rank = rank;
}

/* A Group or KernelCh event, the same in every version that has it: a handle, or NULL.  (The
 * handles NCCL passes back are looked up, never followed: ncclprof_reg.c.) */
static void *other_start(void *ctx, uint64_t type, void *parent, uint64_t gpu_ns)
{
    if (type == NP_EV_GROUP) {
        return np_group_start(ctx);
    }
    if (type == NP_EV_KERNEL_CH) {
        return np_kch_start(parent, gpu_ns);
    }
    return NULL;
}

/* ---- v5 and v6 ---- */
static np_result_t start5(void *ctx, void **h, np_descr5_t *d)
{
    np_desc_t o;
    *h = NULL;
    desc_init(&o, d->rank);
    if (d->type == NP_EV_COLL) {
        o.seq = d->u.coll.seq;
        o.func = d->u.coll.func;
        o.dtype = d->u.coll.dtype;
        o.count = d->u.coll.count;
        o.root = d->u.coll.root;
        o.nchannels = d->u.coll.nchannels;
        o.algo = d->u.coll.algo;
        o.proto = d->u.coll.proto;
        o.group = d->u.coll.group;
    } else if (d->type == NP_EV_P2P) {
        o.p2p = 1;
        o.func = d->u.p2p.func;
        o.dtype = d->u.p2p.dtype;
        o.count = d->u.p2p.count;
        o.peer = d->u.p2p.peer;
        o.nchannels = d->u.p2p.nchannels;
        o.group = d->u.p2p.group;
    } else if (d->type == NP_EV_CE_COLL) {
        o.ce = 1;
        o.seq = d->u.cecoll.seq;
        o.func = d->u.cecoll.func;
        o.dtype = d->u.cecoll.dtype;
        o.count = d->u.cecoll.count;
        o.root = d->u.cecoll.root;
    } else {
        *h = other_start(ctx, d->type, d->parent, d->u.kch.gpu_start_ns);
        return NP_SUCCESS;
    }
    *h = np_op_start(ctx, &o);
    return NP_SUCCESS;
}

static np_result_t init5(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes,
                         int nranks, int rank, np_logger_t log)
{
    (void)log;
    *ctx = np_comm_new(5, hash, name, nnodes, nranks, rank, mask);
    return NP_SUCCESS;
}

static np_result_t init6(void **ctx, uint64_t hash, int *mask, const char *name, int nnodes,
                         int nranks, int rank, np_logger_t log)
{
    (void)log;
    *ctx = np_comm_new(6, hash, name, nnodes, nranks, rank, mask);
    return NP_SUCCESS;
}

static np_result_t stop_any(void *h)
{
    np_stop(h);
    return NP_SUCCESS;
}

static np_result_t state_any(void *h, int state, np_state_args_t *a)
{
    if (state == NP_STATE_KERNEL_CH_STOP && a != NULL) {
        np_kch_state(h, a->gpu_stop_ns);
    }
    return NP_SUCCESS;
}

static np_result_t finalize_any(void *ctx)
{
    np_comm_end(ctx);
    return NP_SUCCESS;
}

NP_EXPORT const np_table5_t ncclProfiler_v6 = {"collprof", init6,     start5,
                                               stop_any,   state_any, finalize_any};
NP_EXPORT const np_table5_t ncclProfiler_v5 = {"collprof", init5,     start5,
                                               stop_any,   state_any, finalize_any};

/* ---- v4 ---- */
static np_result_t start4(void *ctx, void **h, np_descr4_t *d)
{
    np_desc_t o;
    *h = NULL;
    desc_init(&o, d->rank);
    o.group = d->parent; /* v4: the op's parent is its group */
    if (d->type == NP_EV_COLL) {
        o.seq = d->u.coll.seq;
        o.func = d->u.coll.func;
        o.dtype = d->u.coll.dtype;
        o.count = d->u.coll.count;
        o.root = d->u.coll.root;
        o.nchannels = d->u.coll.nchannels;
        o.algo = d->u.coll.algo;
        o.proto = d->u.coll.proto;
    } else if (d->type == NP_EV_P2P) {
        o.p2p = 1;
        o.func = d->u.p2p.func;
        o.dtype = d->u.p2p.dtype;
        o.count = d->u.p2p.count;
        o.peer = d->u.p2p.peer;
        o.nchannels = d->u.p2p.nchannels;
    } else {
        *h = other_start(ctx, d->type, d->parent, d->u.kch.gpu_start_ns);
        return NP_SUCCESS;
    }
    *h = np_op_start(ctx, &o);
    return NP_SUCCESS;
}

static np_result_t init4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                         int nranks, int rank, np_logger_t log)
{
    (void)log;
    *ctx = np_comm_new(4, hash, name, nnodes, nranks, rank, mask);
    return NP_SUCCESS;
}

NP_EXPORT const np_table4_t ncclProfiler_v4 = {"collprof", init4,     start4,
                                               stop_any,   state_any, finalize_any};

/* ---- v3: no GPU times; the communicator comes with each op ---- */
static np_result_t start3(void *ctx, void **h, np_descr3_t *d)
{
    np_desc_t o;
    *h = NULL;
    desc_init(&o, d->rank);
    o.group = d->parent;
    if (d->type == NP_EV_COLL) {
        o.v3_hash = d->u.coll.comm_hash;
        o.v3_name = d->u.coll.comm_name;
        o.seq = d->u.coll.seq;
        o.func = d->u.coll.func;
        o.dtype = d->u.coll.dtype;
        o.count = d->u.coll.count;
        o.root = d->u.coll.root;
        o.algo = d->u.coll.algo;
        o.proto = d->u.coll.proto;
    } else if (d->type == NP_EV_P2P) {
        o.p2p = 1;
        o.v3_hash = d->u.p2p.comm_hash;
        o.v3_name = d->u.p2p.comm_name;
        o.func = d->u.p2p.func;
        o.dtype = d->u.p2p.dtype;
        o.count = d->u.p2p.count;
        o.peer = d->u.p2p.peer;
    } else {
        *h = d->type == NP_EV_GROUP ? np_group_start(ctx) : NULL;
        return NP_SUCCESS;
    }
    *h = np_op_start(ctx, &o);
    return NP_SUCCESS;
}

static np_result_t init3(void **ctx, int *mask)
{
    *ctx = np_comm_new(3, 0, NULL, 0, 0, -1, mask);
    return NP_SUCCESS;
}

static np_result_t state3(void *h, int state, void *a)
{
    (void)h, (void)state, (void)a;
    return NP_SUCCESS;
}

NP_EXPORT const np_table3_t ncclProfiler_v3 = {"collprof", init3,  start3,
                                               stop_any,   state3, finalize_any};
