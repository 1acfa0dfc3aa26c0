#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Every rank contributes count elements; every rank gets the reduction. */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    return cp_coll_check_reduced(x, recvbuf, 0, x->count);
}

const cp_coll_t cp_coll_allreduce = {
    .op = COLLPROF_OP_ALLREDUCE, .fill = cp_coll_fill_contrib, .check = check};

/* the non-blocking op: the same data and check */
const cp_coll_t cp_coll_iallreduce = {
    .op = COLLPROF_OP_IALLREDUCE, .fill = cp_coll_fill_contrib, .check = check};
