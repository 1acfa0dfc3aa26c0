#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* The root holds count elements; rank r receives block r (count/n elements). */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    if (x->rank != x->root) {
        return;
    }
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_value(x->dtype, x->root, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n, base = blk * (uint64_t)x->rank, wrong = 0;
    /* in place, every rank's block sits at its own offset of the one buffer */
    uint64_t off = x->in_place ? base : 0;
    for (uint64_t j = 0; j < blk; j++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, off + j, &v) != 0 ||
            v != cp_data_value(x->dtype, x->root, base + j)) {
            wrong++;
        }
    }
    return wrong;
}

/* in place, this rank's result is its block of the one buffer */
static uint64_t result_at(const cp_xfer_t *x)
{
    return x->in_place ? x->count / (uint64_t)x->n * (uint64_t)x->rank : 0;
}

const cp_coll_t cp_coll_scatter = {
    .op = COLLPROF_OP_SCATTER, .fill = fill, .check = check, .result_at = result_at};
