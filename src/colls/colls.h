/*
 * One descriptor per operation (one file each in src/colls/): how many
 * bytes it moves for algBW, its busBW factor, how to fill inputs and how
 * to count wrong elements.  The busBW factors live in one table
 * (colls.c) and are documented in docs/metrics.md.
 */
#ifndef COLLPROF_COLLS_COLLS_H
#define COLLPROF_COLLS_COLLS_H

#include <collprof/plugin.h>
#include <stdint.h>

/** alltoallv traffic for one cell: matrix[s*n+d] = elements rank s sends to d. */
typedef struct cp_a2av {
    int n;
    uint64_t *matrix;
    /* this rank's view, in elements (the plugin ABI's arrays) */
    size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
    uint64_t send_total, recv_total; /**< this rank */
    uint64_t max_rank_elems;         /**< max over ranks of max(send, recv) */
    int symmetric;
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
    const cp_a2av_t *a2av; /**< alltoallv only */
} cp_xfer_t;

enum {
    CP_COLL_REDUCES = 1u << 0, /**< takes a reduction operator */
    CP_COLL_ROOTED = 1u << 1,  /**< has a root */
    CP_COLL_SPLIT = 1u << 2    /**< count is split in n blocks: rounded down to a multiple of n */
};

typedef struct cp_coll {
    collprof_op_t op;
    const char *name;  /**< command-line name: "allreduce" */
    const char *label; /**< display name: "AllReduce" */
    unsigned flags;
    /** Write this rank's inputs (into sendbuf, or recvbuf when in place). */
    void (*fill)(const cp_xfer_t *x, void *sendbuf, void *recvbuf);
    /** Count wrong elements of this rank's result. */
    uint64_t (*check)(const cp_xfer_t *x, const void *recvbuf);
} cp_coll_t;

const cp_coll_t *cp_coll_get(collprof_op_t op);
/** -1 when unknown; accepts "bcast" and "all_reduce"-style spellings. */
int cp_coll_from_name(const char *name);

/** busBW = algBW * factor (nccl-tests conventions). */
double cp_coll_busbw_factor(collprof_op_t op, int n);

/** Bytes S used for algBW = S / t. */
uint64_t cp_coll_bytes(const cp_xfer_t *x);

/** Elements each of the send and receive buffers must hold on this rank. */
uint64_t cp_coll_buffer_elems(const cp_xfer_t *x);

/** The element count actually used for a requested one (rounded to a multiple of n). */
uint64_t cp_coll_effective_count(collprof_op_t op, uint64_t count, int n);

extern const cp_coll_t cp_coll_allreduce, cp_coll_allgather, cp_coll_reducescatter,
    cp_coll_alltoall, cp_coll_alltoallv, cp_coll_broadcast, cp_coll_reduce, cp_coll_gather,
    cp_coll_scatter, cp_coll_barrier, cp_coll_sendrecv;

#endif /* COLLPROF_COLLS_COLLS_H */
