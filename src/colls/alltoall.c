#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/*
 * Each rank sends block d (count/n elements) to rank d.  Element j of the
 * block rank s sends to rank d holds value(s, d*blk + j), so a block that
 * lands in the wrong place is caught.
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    uint64_t blk = x->count / (uint64_t)x->n;
    for (uint64_t i = 0; i < blk * (uint64_t)x->n; i++) {
        cp_data_set(x->dtype, in, i, cp_data_value(x->dtype, x->rank, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    return cp_coll_check_blocks(x, recvbuf, (uint64_t)x->rank * (x->count / (uint64_t)x->n));
}

const cp_coll_t cp_coll_alltoall = {.op = COLLPROF_OP_ALLTOALL, .fill = fill, .check = check};

/* the non-blocking op: the same data and check */
const cp_coll_t cp_coll_ialltoall = {.op = COLLPROF_OP_IALLTOALL, .fill = fill, .check = check};
