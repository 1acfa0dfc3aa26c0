#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

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

/* ---- shared by several operations ---------------------------------- */

void cp_coll_fill_contrib(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_contrib(x->dtype, x->redop, x->n, x->rank, i));
    }
}

uint64_t cp_coll_check_reduced(const cp_xfer_t *x, const void *recvbuf, uint64_t first,
                               uint64_t len)
{
    cp_reduced_t want;
    if (cp_data_reduced_init(&want, x->dtype, x->redop, x->n) != 0) {
        return len; /* no ranks: nothing can be right */
    }
    uint64_t wrong = 0, at = first % want.period;
    for (uint64_t j = 0; j < len; j++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, j, &v) != 0 || v != want.v[at]) {
            wrong++;
        }
        at = at + 1 == want.period ? 0 : at + 1;
    }
    return wrong;
}

void cp_coll_fill_block(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n;
    uint64_t off = x->in_place ? blk * (uint64_t)x->rank : 0;
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t j = 0; j < blk; j++) {
        cp_data_set(x->dtype, in, off + j, cp_data_value(x->dtype, x->rank, j));
    }
}

uint64_t cp_coll_check_blocks(const cp_xfer_t *x, const void *recvbuf, uint64_t src_off)
{
    uint64_t blk = x->count / (uint64_t)x->n, wrong = 0;
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < blk; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, (uint64_t)s * blk + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, src_off + j)) {
                wrong++;
            }
        }
    }
    return wrong;
}
