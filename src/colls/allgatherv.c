#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/*
 * Rank r contributes recvcounts[r] elements (from the cell's --imbalance
 * spec, src/colls/imbalance.c), and every rank gathers them all, rank r's at
 * rdispls[r].  Element j of rank r's block holds value(r, j).  In place,
 * a rank's block sits at its own displacement in the receive buffer.
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    void *in = x->in_place ? recvbuf : sendbuf;
    uint64_t at = x->in_place ? a->rdispls[x->rank] : 0;
    for (uint64_t j = 0; j < a->recvcounts[x->rank]; j++) {
        cp_data_set(x->dtype, in, at + j, cp_data_value(x->dtype, x->rank, j));
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    uint64_t wrong = 0;
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < a->recvcounts[s]; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, a->rdispls[s] + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, j)) {
                wrong++;
            }
        }
    }
    return wrong;
}

/* algBW's S: the whole gathered output, as allgather's (nccl-tests) */
static uint64_t bytes(const cp_xfer_t *x)
{
    return x->a2av ? x->a2av->recv_total * collprof_dtype_size(x->dtype) : 0;
}

/* both buffers hold the gathered total (the send side uses its first recvcounts[rank]) */
static uint64_t buffer_elems(const cp_xfer_t *x)
{
    uint64_t m = x->a2av ? x->a2av->recv_total : 0;
    return m > 0 ? m : 1;
}

const cp_coll_t cp_coll_allgatherv = {.op = COLLPROF_OP_ALLGATHERV,
                                      .fill = fill,
                                      .check = check,
                                      .bytes = bytes,
                                      .buffer_elems = buffer_elems};
