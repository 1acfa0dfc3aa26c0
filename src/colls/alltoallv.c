#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/*
 * Counts come from the cell's traffic (src/colls/imbalance.c): this rank's
 * row and column.  Element j of what rank s sends to rank d holds
 * value(s, d x stride + j), stride (the cell's count, or count x n for a
 * file's matrix) being at least any block, so every element a rank sends
 * has its own index, and the receiver d knows where s's values start in
 * O(1): fill and check cost O(n + elements) with no other rank's row.
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    void *in = x->in_place ? recvbuf : sendbuf;
    for (int d = 0; d < x->n; d++) {
        /* in place, send data sits at the receive displacements (symmetric traffic) */
        uint64_t at = x->in_place ? a->rdispls[d] : a->sdispls[d];
        uint64_t base = (uint64_t)d * a->stride;
        for (uint64_t j = 0; j < a->sendcounts[d]; j++) {
            cp_data_set(x->dtype, in, at + j, cp_data_value(x->dtype, x->rank, base + j));
        }
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    uint64_t wrong = 0, base = (uint64_t)x->rank * a->stride;
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < a->recvcounts[s]; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, a->rdispls[s] + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, base + j)) {
                wrong++;
            }
        }
    }
    return wrong;
}

/* algBW's S: the heaviest rank's bytes, sent or received.  This rank's here: rank 0 takes the
 * maximum over every rank's record once the cell ran (runner_merge.c), since no rank knows every
 * rank's row and column. */
static uint64_t bytes(const cp_xfer_t *x)
{
    if (x->a2av == NULL) {
        return 0;
    }
    uint64_t m =
        x->a2av->send_total > x->a2av->recv_total ? x->a2av->send_total : x->a2av->recv_total;
    return m * collprof_dtype_size(x->dtype);
}
/* each buffer holds this rank's larger side */
static uint64_t buffer_elems(const cp_xfer_t *x)
{
    if (x->a2av == NULL) {
        return 1;
    }
    uint64_t m =
        x->a2av->send_total > x->a2av->recv_total ? x->a2av->send_total : x->a2av->recv_total;
    return m > 0 ? m : 1;
}

const cp_coll_t cp_coll_alltoallv = {.op = COLLPROF_OP_ALLTOALLV,
                                     .fill = fill,
                                     .check = check,
                                     .bytes = bytes,
                                     .buffer_elems = buffer_elems};
