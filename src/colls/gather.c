#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Each rank contributes count/n elements; the root gets all n blocks in rank order. */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    return x->rank == x->root ? cp_coll_check_blocks(x, recvbuf, 0) : 0;
}

const cp_coll_t cp_coll_gather = {
    .op = COLLPROF_OP_GATHER, .fill = cp_coll_fill_block, .check = check};
