#include "config.h"

#include "colls/colls.h"
#include "core/data.h"

#include <string.h>
#include <strings.h>

static const cp_coll_t *const table[COLLPROF_OP_COUNT] = {
    [COLLPROF_OP_ALLREDUCE] = &cp_coll_allreduce,
    [COLLPROF_OP_ALLGATHER] = &cp_coll_allgather,
    [COLLPROF_OP_REDUCESCATTER] = &cp_coll_reducescatter,
    [COLLPROF_OP_ALLTOALL] = &cp_coll_alltoall,
    [COLLPROF_OP_ALLTOALLV] = &cp_coll_alltoallv,
    [COLLPROF_OP_BROADCAST] = &cp_coll_broadcast,
    [COLLPROF_OP_REDUCE] = &cp_coll_reduce,
    [COLLPROF_OP_GATHER] = &cp_coll_gather,
    [COLLPROF_OP_SCATTER] = &cp_coll_scatter,
    [COLLPROF_OP_BARRIER] = &cp_coll_barrier,
    [COLLPROF_OP_SENDRECV] = &cp_coll_sendrecv,
};

const cp_coll_t *cp_coll_get(collprof_op_t op)
{
    return (unsigned)op < COLLPROF_OP_COUNT ? table[op] : NULL;
}

int cp_coll_from_name(const char *name)
{
    /* compare ignoring case, '_' and '-' so all_reduce, all-reduce, AllReduce work */
    char canon[32];
    size_t o = 0;
    for (const char *p = name; *p && o + 1 < sizeof(canon); p++) {
        if (*p != '_' && *p != '-') {
            canon[o++] = *p;
        }
    }
    canon[o] = '\0';
    if (!strcasecmp(canon, "bcast")) {
        return COLLPROF_OP_BROADCAST;
    }
    for (int i = 0; i < COLLPROF_OP_COUNT; i++) {
        if (!strcasecmp(canon, table[i]->name)) {
            return i;
        }
    }
    return -1;
}

/*
 * busBW factors, the one table (docs/metrics.md explains them):
 * a ring allreduce moves 2(n-1)/n of the buffer over each rank's link;
 * allgather, reducescatter, alltoall(v), gather and scatter (n-1)/n;
 * broadcast, reduce and sendrecv are bound by one link: 1.
 */
double cp_coll_busbw_factor(collprof_op_t op, int n)
{
    double nd = (double)n;
    switch (op) {
    case COLLPROF_OP_ALLREDUCE: return 2.0 * (nd - 1.0) / nd;
    case COLLPROF_OP_ALLGATHER:
    case COLLPROF_OP_REDUCESCATTER:
    case COLLPROF_OP_ALLTOALL:
    case COLLPROF_OP_ALLTOALLV:
    case COLLPROF_OP_GATHER:
    case COLLPROF_OP_SCATTER: return (nd - 1.0) / nd;
    case COLLPROF_OP_BROADCAST:
    case COLLPROF_OP_REDUCE:
    case COLLPROF_OP_SENDRECV: return 1.0;
    case COLLPROF_OP_BARRIER:
    default: return 0.0;
    }
}

uint64_t cp_coll_bytes(const cp_xfer_t *x)
{
    uint64_t sz = cp_dtype_info(x->dtype)->size;
    switch (x->op) {
    case COLLPROF_OP_BARRIER: return 0;
    case COLLPROF_OP_ALLTOALLV: return x->a2av ? x->a2av->max_rank_elems * sz : 0;
    default: return x->count * sz;
    }
}

uint64_t cp_coll_buffer_elems(const cp_xfer_t *x)
{
    if (x->op == COLLPROF_OP_ALLTOALLV && x->a2av != NULL) {
        uint64_t m =
            x->a2av->send_total > x->a2av->recv_total ? x->a2av->send_total : x->a2av->recv_total;
        return m > 0 ? m : 1;
    }
    return x->count > 0 ? x->count : 1;
}

uint64_t cp_coll_effective_count(collprof_op_t op, uint64_t count, int n)
{
    if (op == COLLPROF_OP_BARRIER) {
        return 0;
    }
    if (table[op]->flags & CP_COLL_SPLIT) {
        return count / (uint64_t)n * (uint64_t)n;
    }
    return count;
}
