#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/* The root's count elements reach every rank (one buffer: recvbuf). */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    (void)sendbuf;
    if (x->rank != x->root) {
        return;
    }
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, recvbuf, i, cp_data_value(x->dtype, x->root, i));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < x->count; i++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, i, &v) != 0 ||
            v != cp_data_value(x->dtype, x->root, i)) {
            wrong++;
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_broadcast = {.op = COLLPROF_OP_BROADCAST, .fill = fill, .check = check};

/* the non-blocking op: the same data and check */
const cp_coll_t cp_coll_ibroadcast = {.op = COLLPROF_OP_IBROADCAST, .fill = fill, .check = check};
