#include "config.h"

#include "colls/colls.h"
#include "core/data.h"

/* Each rank contributes count/n elements; the root gets all n blocks in rank order. */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n;
    uint64_t off = x->in_place ? blk * (uint64_t)x->rank : 0;
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t j = 0; j < blk; j++) {
        cp_data_set(x->dtype, in, off + j, cp_data_value(x->dtype, x->rank, j));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n, wrong = 0;
    if (x->rank != x->root) {
        return 0;
    }
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < blk; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, (uint64_t)s * blk + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, j)) {
                wrong++;
            }
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_gather = {.op = COLLPROF_OP_GATHER, .fill = fill, .check = check};
