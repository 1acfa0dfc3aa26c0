#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Like allreduce, but only the root holds (and checks) the result. */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    return x->rank == x->root ? cp_coll_check_reduced(x, recvbuf, 0, x->count) : 0;
}

const cp_coll_t cp_coll_reduce = {
    .op = COLLPROF_OP_REDUCE, .fill = cp_coll_fill_contrib, .check = check};
