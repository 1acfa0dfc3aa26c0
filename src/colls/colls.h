/*
 * One file per operation in src/colls/: how to fill its inputs and count
 * wrong elements, and where its bytes or buffers differ from what its row
 * of COLLPROF_OP_TABLE says.  docs/metrics.md documents the busBW factors.
 * Order, top to bottom: colls.c (the table and the figures every operation
 * shares) > one file per operation > colls_fill.c (shared fills and checks),
 * imbalance.c (v-operations' traffic) > data.c (element types and patterns).
 */
#ifndef COLLPROF_COLLS_COLLS_H
#define COLLPROF_COLLS_COLLS_H

#include <collprof/plugin.h>
#include <stdint.h>

/**
 * alltoallv, allgatherv, gatherv and scatterv traffic for one cell, this
 * rank's view: its row (what it sends each rank) and its column (what each
 * rank sends it), O(n) bytes (src/colls/imbalance.c; no rank holds the
 * n x n matrix).
 */
typedef struct cp_a2av {
    int n;
    /* this rank's view, in elements (the plugin ABI's arrays) */
    size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
    /** alltoallv's data: element j of what rank s sends rank d holds
     *  value(s, d x stride + j); no block is larger than stride */
    uint64_t stride;
    uint64_t send_total, recv_total; /**< this rank */
    int symmetric; /**< cell(s, d) == cell(d, s) for every pair (the same on every rank) */
    /** gatherv, scatterv: every rank's block and its displacement in the
     *  root's buffer, the same on every rank (else NULL) */
    size_t *bcounts, *bdispls;
} cp_a2av_t;

/** Everything an init/check function needs to know about one run. */
typedef struct cp_xfer {
    collprof_op_t op;
    collprof_dtype_t dtype;
    collprof_redop_t redop;
    int root;
    int in_place;
    int rank;
    int n;
    uint64_t count;
    const cp_a2av_t *a2av; /**< variable ops (alltoallv, allgatherv, gatherv, scatterv) only */
    int paired;            /**< sendrecv: 1 when peer is this rank's partner (link sweep) */
    int peer;              /**< sendrecv with paired: the rank sent to and received from */
} cp_xfer_t;

/*
 * An operation's logic.  Its facts (name, flags, busBW factor, buffer
 * shapes) are its row of COLLPROF_OP_TABLE in <collprof/vocab.h>; the
 * optional hooks override what those facts give.
 */
typedef struct cp_coll {
    collprof_op_t op;
    /** Write this rank's inputs (into sendbuf, or recvbuf when in place). */
    void (*fill)(const cp_xfer_t *x, void *sendbuf, void *recvbuf);
    /** Count wrong elements of this rank's result. */
    uint64_t (*check)(const cp_xfer_t *x, const void *recvbuf);
    /** Optional: S of algBW = S / t (default: count x element size). */
    uint64_t (*bytes)(const cp_xfer_t *x);
    /** Optional: elements each buffer holds on this rank (default: count). */
    uint64_t (*buffer_elems)(const cp_xfer_t *x);
    /** Optional: index of the first element of this rank's result (default 0). */
    uint64_t (*result_at)(const cp_xfer_t *x);
} cp_coll_t;

const cp_coll_t *cp_coll_get(collprof_op_t op);
/** -1 when unknown; ignores case, '_' and '-', and accepts "bcast". */
int cp_coll_from_name(const char *name);

/** Flags (COLLPROF_OPF_*) of op. */
static inline unsigned cp_op_flags(collprof_op_t op)
{
    const collprof_op_info_t *i = collprof_op_info(op);
    return i != NULL ? i->flags : 0;
}

/** Bytes S used for algBW = S / t. */
uint64_t cp_coll_bytes(const cp_xfer_t *x);

/** Elements each of the send and receive buffers must hold on this rank. */
uint64_t cp_coll_buffer_elems(const cp_xfer_t *x);

/** Index of the first element of this rank's result in the receive buffer. */
uint64_t cp_coll_result_at(const cp_xfer_t *x);

/** The element count actually used for a requested one (rounded to a multiple of n). */
uint64_t cp_coll_effective_count(collprof_op_t op, uint64_t count, int n);

/* Shared fill and check steps (colls_fill.c, the bottom of src/colls). */
/** Every rank contributes count elements to a reduction. */
void cp_coll_fill_contrib(const cp_xfer_t *x, void *sendbuf, void *recvbuf);
/** Wrong elements among len reduced ones, element j holding result first + j. */
uint64_t cp_coll_check_reduced(const cp_xfer_t *x, const void *recvbuf, uint64_t first,
                               uint64_t len);
/** Each rank contributes its block of count/n elements (in place: at its offset). */
void cp_coll_fill_block(const cp_xfer_t *x, void *sendbuf, void *recvbuf);
/** Wrong elements of n blocks, block s holding rank s's values from src_off on. */
uint64_t cp_coll_check_blocks(const cp_xfer_t *x, const void *recvbuf, uint64_t src_off);

extern const cp_coll_t cp_coll_allreduce, cp_coll_allgather, cp_coll_reducescatter,
    cp_coll_alltoall, cp_coll_alltoallv, cp_coll_broadcast, cp_coll_reduce, cp_coll_gather,
    cp_coll_scatter, cp_coll_barrier, cp_coll_sendrecv, cp_coll_allgatherv, cp_coll_iallreduce,
    cp_coll_iallgather, cp_coll_ialltoall, cp_coll_ibroadcast, cp_coll_gatherv, cp_coll_scatterv;

#endif /* COLLPROF_COLLS_COLLS_H */
