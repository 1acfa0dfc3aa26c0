#include "config.h"

#include "colls/colls.h"
#include "core/data.h"

/* Every rank contributes count elements; every rank gets the reduction. */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_contrib(x->dtype, x->redop, x->n, x->rank, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < x->count; i++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, i, &v) != 0 ||
            v != cp_data_reduced(x->dtype, x->redop, x->n, i)) {
            wrong++;
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_allreduce = {.op = COLLPROF_OP_ALLREDUCE, .fill = fill, .check = check};
