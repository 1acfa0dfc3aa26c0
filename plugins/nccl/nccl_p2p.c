/*
 * collprof NCCL backend: the grouped send/recv schedules of alltoall,
 * alltoallv, allgatherv, gather(v), scatter(v) and sendrecv (see
 * cp_nccl_p2p_plan in nccl_plan.h); no GPU needed, as for nccl_plan.c.
 */
#include "config.h"

#include <stddef.h>

#include "nccl_plan.h"

static int xfer(cp_nccl_xfer_t *out, int k, int peer, int is_send, int buf, size_t off,
                size_t count)
{
    out[k].peer = peer;
    out[k].is_send = is_send;
    out[k].buf = buf;
    out[k].off = off;
    out[k].count = count;
    return k + 1;
}

static int plan_alltoall(const collprof_args_t *a, int n, size_t blk, cp_nccl_xfer_t *out,
                         size_t *stage_elems)
{
    int k = 0;
    if (a->in_place) {
        *stage_elems = blk * (size_t)n;
    }
    for (int p = 0; p < n; p++) {
        k = xfer(out, k, p, 1, a->in_place ? CP_NCCL_BUF_STAGE : CP_NCCL_BUF_SEND, (size_t)p * blk,
                 blk);
        k = xfer(out, k, p, 0, CP_NCCL_BUF_RECV, (size_t)p * blk, blk);
    }
    return k;
}

static int plan_alltoallv(const collprof_args_t *a, int n, cp_nccl_xfer_t *out, size_t *stage_elems)
{
    int k = 0;
    if (a->recvcounts == NULL || a->rdispls == NULL ||
        (!a->in_place && (a->sendcounts == NULL || a->sdispls == NULL))) {
        return -1;
    }
    for (int p = 0; p < n; p++) {
        /* in place: recvcounts/rdispls describe both sides */
        size_t sc = a->in_place ? a->recvcounts[p] : a->sendcounts[p];
        size_t so = a->in_place ? a->rdispls[p] : a->sdispls[p];
        if (a->in_place && so + sc > *stage_elems) {
            *stage_elems = so + sc;
        }
        if (sc > 0) {
            k = xfer(out, k, p, 1, a->in_place ? CP_NCCL_BUF_STAGE : CP_NCCL_BUF_SEND, so, sc);
        }
        if (a->recvcounts[p] > 0) {
            k = xfer(out, k, p, 0, CP_NCCL_BUF_RECV, a->rdispls[p], a->recvcounts[p]);
        }
    }
    return k;
}

/*
 * allgatherv as torch sends uneven all-gathers: every rank sends its block
 * to every rank (itself too, unless in place, where the block already sits
 * at rdispls[rank] and goes out from there) and receives rank p's block at
 * rdispls[p].  Empty blocks make no transfer.
 */
static int plan_allgatherv(const collprof_args_t *a, int rank, int n, cp_nccl_xfer_t *out)
{
    int k = 0;
    if (a->recvcounts == NULL || a->rdispls == NULL) {
        return -1;
    }
    size_t mine = a->recvcounts[rank];
    int sbuf = a->in_place ? CP_NCCL_BUF_RECV : CP_NCCL_BUF_SEND;
    size_t soff = a->in_place ? a->rdispls[rank] : 0;
    for (int p = 0; p < n; p++) {
        if (p == rank && a->in_place) {
            continue;
        }
        if (mine > 0) {
            k = xfer(out, k, p, 1, sbuf, soff, mine);
        }
        if (a->recvcounts[p] > 0) {
            k = xfer(out, k, p, 0, CP_NCCL_BUF_RECV, a->rdispls[p], a->recvcounts[p]);
        }
    }
    return k;
}

/*
 * gather (to_root) and scatter, mirror images: a non-root rank makes one
 * transfer with the root; the root one with every rank (its own block
 * through the send/recv pair unless in place, where it already sits).
 */
static int plan_rooted(const collprof_args_t *a, int rank, int n, size_t blk, int to_root,
                       cp_nccl_xfer_t *out)
{
    int k = 0;
    if (a->root < 0 || a->root >= n) {
        return -1;
    }
    if (rank != a->root) {
        /* in place: this rank's block sits at rank*blk of its one buffer */
        int buf = to_root && !a->in_place ? CP_NCCL_BUF_SEND : CP_NCCL_BUF_RECV;
        return xfer(out, k, a->root, to_root, buf, a->in_place ? (size_t)rank * blk : 0, blk);
    }
    for (int p = 0; p < n; p++) {
        if (p == rank) {
            if (a->in_place) {
                continue; /* already in place */
            }
            k = xfer(out, k, p, to_root, to_root ? CP_NCCL_BUF_SEND : CP_NCCL_BUF_RECV, 0, blk);
        }
        k = xfer(out, k, p, !to_root, to_root ? CP_NCCL_BUF_RECV : CP_NCCL_BUF_SEND,
                 (size_t)p * blk, blk);
    }
    return k;
}

static int plan_sendrecv(const collprof_args_t *a, int n, cp_nccl_xfer_t *out, size_t *stage_elems)
{
    int k = 0;
    if (a->peer_send < 0 || a->peer_send >= n || a->peer_recv < 0 || a->peer_recv >= n) {
        return -1;
    }
    if (a->in_place) {
        *stage_elems = a->count;
    }
    k = xfer(out, k, a->peer_send, 1, a->in_place ? CP_NCCL_BUF_STAGE : CP_NCCL_BUF_SEND, 0,
             a->count);
    return xfer(out, k, a->peer_recv, 0, CP_NCCL_BUF_RECV, 0, a->count);
}

/*
 * gatherv (to_root) and scatterv: plan_rooted's schedule with rank p's block
 * of recvcounts[p] at rdispls[p] of the root's buffer (a non-root rank's
 * sits at 0, or in place at its displacement).  Empty blocks make no
 * transfer on either side.
 */
static int plan_rooted_v(const collprof_args_t *a, int rank, int n, int to_root,
                         cp_nccl_xfer_t *out)
{
    int k = 0, ip = a->in_place;
    if (a->recvcounts == NULL || a->rdispls == NULL || a->root < 0 || a->root >= n) {
        return -1;
    }
    const size_t *cnt = a->recvcounts, *dsp = a->rdispls;
    int far = to_root ? CP_NCCL_BUF_RECV : CP_NCCL_BUF_SEND;  /* the root's whole buffer */
    int near = to_root ? CP_NCCL_BUF_SEND : CP_NCCL_BUF_RECV; /* a rank's own block */
    if (rank != a->root) {
        return cnt[rank] > 0 ? xfer(out, k, a->root, to_root, ip ? CP_NCCL_BUF_RECV : near,
                                    ip ? dsp[rank] : 0, cnt[rank])
                             : 0;
    }
    for (int p = 0; p < n; p++) {
        if (cnt[p] == 0 || (p == rank && ip)) {
            continue; /* nothing to move, or already in place */
        }
        if (p == rank) {
            k = xfer(out, k, p, to_root, near, 0, cnt[p]);
        }
        k = xfer(out, k, p, !to_root, far, dsp[p], cnt[p]);
    }
    return k;
}

int cp_nccl_p2p_plan(const collprof_args_t *a, int rank, int n, cp_nccl_xfer_t *out,
                     size_t *stage_elems)
{
    size_t blk = n > 0 ? a->count / (size_t)n : 0;
    *stage_elems = 0;
    if (n <= 0 || rank < 0 || rank >= n) {
        return -1;
    }
    switch (a->op) {
    case COLLPROF_OP_ALLTOALL: return plan_alltoall(a, n, blk, out, stage_elems);
    case COLLPROF_OP_ALLTOALLV: return plan_alltoallv(a, n, out, stage_elems);
    case COLLPROF_OP_ALLGATHERV: return plan_allgatherv(a, rank, n, out);
    case COLLPROF_OP_GATHERV: return plan_rooted_v(a, rank, n, 1, out);
    case COLLPROF_OP_SCATTERV: return plan_rooted_v(a, rank, n, 0, out);
    case COLLPROF_OP_GATHER: return plan_rooted(a, rank, n, blk, 1, out);
    case COLLPROF_OP_SCATTER: return plan_rooted(a, rank, n, blk, 0, out);
    case COLLPROF_OP_SENDRECV: return plan_sendrecv(a, n, out, stage_elems);
    default: return -1;
    }
}
