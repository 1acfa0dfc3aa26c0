#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/*
 * The root holds every rank's block, rank r's of bcounts[r] elements (from
 * the cell's --imbalance spec) at bdispls[r], and rank r receives its own.
 * Element j of rank r's block holds value(r, j).  In place, the root's
 * input is the one buffer (its own block stays where it is: MPI_IN_PLACE)
 * and every other rank receives its block at its own displacement.  S is
 * the scattered total, count, as scatter's; each buffer holds it.
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    void *in = x->in_place ? recvbuf : sendbuf;
    if (x->rank != x->root) {
        return;
    }
    for (int r = 0; r < x->n; r++) {
        for (uint64_t j = 0; j < a->bcounts[r]; j++) {
            cp_data_set(x->dtype, in, a->bdispls[r] + j, cp_data_value(x->dtype, r, j));
        }
    }
}

static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    uint64_t off = x->in_place ? a->bdispls[x->rank] : 0, wrong = 0;
    for (uint64_t j = 0; j < a->bcounts[x->rank]; j++) {
        int64_t v;
        if (cp_data_get(x->dtype, recvbuf, off + j, &v) != 0 ||
            v != cp_data_value(x->dtype, x->rank, j)) {
            wrong++;
        }
    }
    return wrong;
}

/* in place, this rank's result is its block of the one buffer */
static uint64_t result_at(const cp_xfer_t *x)
{
    return x->in_place && x->a2av ? x->a2av->bdispls[x->rank] : 0;
}

const cp_coll_t cp_coll_scatterv = {
    .op = COLLPROF_OP_SCATTERV, .fill = fill, .check = check, .result_at = result_at};
