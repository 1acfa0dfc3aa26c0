#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* Ring exchange: rank r sends count elements to r+1 and receives from r-1;
 * or, paired (the link sweep), both ways with x->peer. */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_value(x->dtype, x->rank, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    int from = x->paired ? x->peer : (x->rank - 1 + x->n) % x->n;
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < x->count; i++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, i, &v) != 0 || v != cp_data_value(x->dtype, from, i)) {
            wrong++;
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_sendrecv = {.op = COLLPROF_OP_SENDRECV, .fill = fill, .check = check};
