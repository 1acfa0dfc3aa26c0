#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Every rank contributes count elements and receives block "rank" (count/n) of the reduction;
 * with per-rank blocks (a2av, collprof --replay's reduce-scatter of unequal blocks) block
 * "rank" is recvcounts[rank] elements from rdispls[rank] on, count their sum. */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    if (x->a2av != NULL) {
        return cp_coll_check_reduced(x, recvbuf, x->a2av->rdispls[x->rank],
                                     x->a2av->recvcounts[x->rank]);
    }
    uint64_t blk = x->count / (uint64_t)x->n;
    return cp_coll_check_reduced(x, recvbuf, blk * (uint64_t)x->rank, blk);
}

const cp_coll_t cp_coll_reducescatter = {
    .op = COLLPROF_OP_REDUCESCATTER, .fill = cp_coll_fill_contrib, .check = check};
