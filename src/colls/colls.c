#include "config.h"

#include "colls/colls.h"

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
    [COLLPROF_OP_ALLGATHERV] = &cp_coll_allgatherv,
    /* non-blocking: the data and check of the blocking twin, under their own id */
    [COLLPROF_OP_IALLREDUCE] = &cp_coll_iallreduce,
    [COLLPROF_OP_IALLGATHER] = &cp_coll_iallgather,
    [COLLPROF_OP_IALLTOALL] = &cp_coll_ialltoall,
    [COLLPROF_OP_IBROADCAST] = &cp_coll_ibroadcast,
    [COLLPROF_OP_GATHERV] = &cp_coll_gatherv,
    [COLLPROF_OP_SCATTERV] = &cp_coll_scatterv,
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
    for (int i = 0; i < COLLPROF_OP_COUNT; i++) {
        const char *alias = collprof_op_info(i)->alias;
        if (!strcasecmp(canon, collprof_op_name(i)) || (alias[0] && !strcasecmp(canon, alias))) {
            return i;
        }
    }
    return -1;
}

uint64_t cp_coll_bytes(const cp_xfer_t *x)
{
    const cp_coll_t *c = cp_coll_get(x->op);
    if (cp_op_flags(x->op) & COLLPROF_OPF_NODATA) {
        return 0;
    }
    return c->bytes ? c->bytes(x) : x->count * collprof_dtype_size(x->dtype);
}

uint64_t cp_coll_buffer_elems(const cp_xfer_t *x)
{
    const cp_coll_t *c = cp_coll_get(x->op);
    if (c->buffer_elems) {
        return c->buffer_elems(x);
    }
    return x->count > 0 ? x->count : 1;
}

uint64_t cp_coll_result_at(const cp_xfer_t *x)
{
    const cp_coll_t *c = cp_coll_get(x->op);
    return c->result_at ? c->result_at(x) : 0;
}

uint64_t cp_coll_effective_count(collprof_op_t op, uint64_t count, int n)
{
    unsigned f = cp_op_flags(op);
    if (f & COLLPROF_OPF_NODATA) {
        return 0;
    }
    if (f & COLLPROF_OPF_SPLIT) {
        return count / (uint64_t)n * (uint64_t)n;
    }
    return count;
}
