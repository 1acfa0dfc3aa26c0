#include "config.h"

#include "colls/colls.h"
#include "core/data.h"

/*
 * Counts come from the cell's traffic matrix (src/core/imbalance.c).
 * Element j of what rank s sends to rank d holds value(s, sdispl_s(d) + j),
 * where sdispl_s(d) is s's send displacement for d (derived from the
 * matrix: a->sdispls for this rank's own sends, a->sbase[s] for what s
 * sends here), so fill and check cost O(n + elements).
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    void *in = x->in_place ? recvbuf : sendbuf;
    for (int d = 0; d < x->n; d++) {
        /* in place, send data sits at the receive displacements (symmetric traffic) */
        uint64_t at = x->in_place ? a->rdispls[d] : a->sdispls[d];
        uint64_t base = a->sdispls[d];
        uint64_t cnt = a->matrix[(size_t)x->rank * (size_t)x->n + (size_t)d];
        for (uint64_t j = 0; j < cnt; j++) {
            cp_data_set(x->dtype, in, at + j, cp_data_value(x->dtype, x->rank, base + j));
        }
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    uint64_t wrong = 0;
    for (int s = 0; s < x->n; s++) {
        uint64_t base = a->sbase[s];
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

/* algBW's S: the heaviest rank's bytes (sent or received) */
static uint64_t bytes(const cp_xfer_t *x)
{
    return x->a2av ? x->a2av->max_rank_elems * collprof_dtype_size(x->dtype) : 0;
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
