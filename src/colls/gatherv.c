#include "config.h"

#include "colls/colls.h"
#include "colls/data.h"

/*
 * Rank r sends bcounts[r] elements (from the cell's --imbalance spec,
 * src/colls/imbalance.c) and the root receives them all, rank r's block at
 * bdispls[r].  Element j of rank r's block holds value(r, j).  In place,
 * every rank's block sits at its own displacement of the one buffer (the
 * root's is already where it belongs: MPI_IN_PLACE).  S is the gathered
 * total, count, as gather's; each buffer holds it.
 */
static void fill(const cp_xfer_t *x, void *sendbuf, void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    void *in = x->in_place ? recvbuf : sendbuf;
    uint64_t at = x->in_place ? a->bdispls[x->rank] : 0;
    for (uint64_t j = 0; j < a->bcounts[x->rank]; j++) {
        cp_data_set(x->dtype, in, at + j, cp_data_value(x->dtype, x->rank, j));
    }
}

/* only the root receives: the others have nothing to check */
static uint64_t check(const cp_xfer_t *x, const void *recvbuf)
{
    const cp_a2av_t *a = x->a2av;
    uint64_t wrong = 0;
    if (x->rank != x->root) {
        return 0;
    }
    for (int s = 0; s < x->n; s++) {
        for (uint64_t j = 0; j < a->bcounts[s]; j++) {
            int64_t v;
            if (cp_data_get(x->dtype, recvbuf, a->bdispls[s] + j, &v) != 0 ||
                v != cp_data_value(x->dtype, s, j)) {
                wrong++;
            }
        }
    }
    return wrong;
}

const cp_coll_t cp_coll_gatherv = {.op = COLLPROF_OP_GATHERV, .fill = fill, .check = check};
