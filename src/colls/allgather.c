#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Each rank contributes count/n elements; every rank gets all n blocks in rank order. */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    return cp_coll_check_blocks(x, recvbuf, 0);
}

const cp_coll_t cp_coll_allgather = {
    .op = COLLPROF_OP_ALLGATHER, .fill = cp_coll_fill_block, .check = check};

/* the non-blocking op: the same data and check */
const cp_coll_t cp_coll_iallgather = {
    .op = COLLPROF_OP_IALLGATHER, .fill = cp_coll_fill_block, .check = check};
