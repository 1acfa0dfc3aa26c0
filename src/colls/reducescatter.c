#include "config.h"

#include "colls/colls.h"
#include "core/data.h"

/* Every rank contributes count elements and receives block "rank" (count/n) of the reduction. */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_contrib(x->dtype, x->redop, x->n, x->rank, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n, base = blk * (uint64_t)x->rank, wrong = 0;
    for (uint64_t j = 0; j < blk; j++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, j, &v) != 0 ||
            v != cp_data_reduced(x->dtype, x->redop, x->n, base + j)) {
            wrong++;
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_reducescatter = {
    .op = COLLPROF_OP_REDUCESCATTER, .fill = fill, .check = check};
