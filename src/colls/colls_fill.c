#include "config.h"

/*
 * The fills and checks that several operations share (colls.h): a reduction's
 * contributions and its exact result, one block per rank and the blocks
 * gathered.  The bottom of src/colls: the operation files call it, it calls
 * only data.c.
 */
#include "colls/colls.h"
#include "colls/data.h"

void cp_coll_fill_contrib(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t i = 0; i < x->count; i++) {
        cp_data_set(x->dtype, in, i, cp_data_contrib(x->dtype, x->redop, x->n, x->rank, i));
    }
}

uint64_t cp_coll_check_reduced(const cp_xfer_t *x, const void *recvbuf, uint64_t first,
                               uint64_t len)
{
    cp_reduced_t want;
    if (cp_data_reduced_init(&want, x->dtype, x->redop, x->n) != 0) {
        return len; /* no ranks: nothing can be right */
    }
    uint64_t wrong = 0, at = first % want.period;
    for (uint64_t j = 0; j < len; j++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, j, &v) != 0 || v != want.v[at]) {
            wrong++;
        }
        at = at + 1 == want.period ? 0 : at + 1;
    }
    return wrong;
}

void cp_coll_fill_block(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    uint64_t blk = x->count / (uint64_t)x->n;
    uint64_t off = x->in_place ? blk * (uint64_t)x->rank : 0;
    void *in = x->in_place ? recvbuf : sendbuf;
    for (uint64_t j = 0; j < blk; j++) {
        cp_data_set(x->dtype, in, off + j, cp_data_value(x->dtype, x->rank, j));
    }
}

uint64_t cp_coll_check_blocks(const cp_xfer_t *x, const void *recvbuf, uint64_t src_off)
{
    uint64_t blk = x->count / (uint64_t)x->n, wrong = 0;
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < blk; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, (uint64_t)s * blk + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, src_off + j)) {
                wrong++;
            }
        }
    }
    return wrong;
}
