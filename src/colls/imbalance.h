/*
 * alltoallv, allgatherv, gatherv and scatterv traffic generators.  For
 * alltoallv a generator turns the cell's count (the elements an average
 * rank sends) into a function cell(s, d) = elements rank s sends to rank d;
 * for allgatherv, gatherv and scatterv the same spec gives per-rank counts
 * that sum to the cell's count (the gathered or scattered total).
 * collprof(1), section TRAFFIC PATTERNS, gives the formulas and the
 * traffic-matrix file format.
 *
 * Scale: no rank holds an n x n array of the traffic.  cell(s, d) costs
 * O(1) after an O(n) set-up (cp_traffic_init), and a rank's view
 * (cp_a2av_build) is its own row and column, O(n) bytes.  The file kind is
 * the one exception: its n x n weights are the user's matrix (at most
 * 16,777,216 entries), read once per run, never copied per cell.
 */
#ifndef COLLPROF_CORE_IMBALANCE_H
#define COLLPROF_CORE_IMBALANCE_H

#include <stddef.h>
#include <stdint.h>

#include "colls/colls.h"

typedef enum cp_imb_kind {
    CP_IMB_UNIFORM = 0, /**< count/n to every peer */
    CP_IMB_LINEAR,      /**< weights 1..n, a permutation per row and column */
    CP_IMB_SPREAD,      /**< distance-weighted: 1-s for self .. 1+s for the farthest */
    CP_IMB_MOE,         /**< hot ranks receive bias times more */
    CP_IMB_FILE         /**< user weights from a file */
} cp_imb_kind_t;

typedef struct cp_imbalance {
    cp_imb_kind_t kind;
    double spread;     /**< CP_IMB_SPREAD, 0..1 */
    int hot;           /**< CP_IMB_MOE: ranks 0..hot-1 are hot */
    double bias;       /**< CP_IMB_MOE: weight of a hot rank */
    int file_n;        /**< CP_IMB_FILE: matrix dimension */
    double *weights;   /**< CP_IMB_FILE: file_n * file_n */
    double file_total; /**< CP_IMB_FILE: the sum of the weights, in file order */
    char label[96];    /**< canonical text: "uniform", "spread:0.5", "moe:1:4", "file:NAME" */
} cp_imbalance_t;

/** Parse one spec (and load a file); one-line reason in err on failure. */
int cp_imbalance_parse(const char *spec, cp_imbalance_t *out, char *err, size_t errlen);
void cp_imbalance_free(cp_imbalance_t *imb);

/** Check that the generator can produce an n-rank matrix (file size). */
int cp_imbalance_validate(const cp_imbalance_t *imb, int n, char *err, size_t errlen);

/**
 * allgatherv, gatherv, scatterv: the elements of each rank's block,
 * counts[r] for rank r, summing to count (the gathered/scattered total).  Rank weights: uniform 1,
 * linear r+1, spread 1-S+2S*r/(n-1), moe BIAS for ranks below HOT else 1, file the sum of row r;
 * the rounding leftovers go one each to the ranks of non-zero weight, from rank 0 on.
 */
void cp_imbalance_counts(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *counts);

/**
 * One cell's traffic as a function: cp_traffic_cell(t, s, d) = elements
 * rank s sends to rank d, O(1) each.  alltoallv, generated kinds: d's share
 * of rank s's count by weight, floor(count x w(s,d) / R), where R, a row's
 * weight sum, is the same for every row (uniform n, linear n(n+1)/2, moe
 * HOT x BIAS + n - HOT summed as row 0's loop, spread n: its mean weight
 * is 1), and the rounding leftover, also the
 * same for every row, stays on the diagonal (self); file:
 * floor(w(s,d) x count x n / the sum of all weights), no leftover.
 * allgatherv: counts[s] to every d; gatherv: counts[s] to the root;
 * scatterv: the root sends counts[d] to d (cp_imbalance_counts).
 */
typedef struct cp_traffic {
    collprof_op_t op;
    const cp_imbalance_t *imb;
    int n, root;
    uint64_t count;
    double rowsum;    /**< alltoallv, generated: every row's weight sum */
    uint64_t left;    /**< alltoallv, generated: every row's rounding leftover, to self */
    uint64_t *counts; /**< allgatherv, gatherv, scatterv: rank r's block, n of them */
} cp_traffic_t;

/**
 * Set t up for a cell of op on n ranks: O(n) time, O(n) bytes (the
 * per-rank counts of the v-ops).  COLLPROF_ERR_INVALID when op has no
 * traffic or a rooted op's root is outside 0..n-1; COLLPROF_ERR_NO_MEMORY.
 */
int cp_traffic_init(cp_traffic_t *t, collprof_op_t op, const cp_imbalance_t *imb, int n,
                    uint64_t count, int root);
/** Elements rank s sends to rank d (0 <= s, d < n). */
uint64_t cp_traffic_cell(const cp_traffic_t *t, int s, int d);
/** 1 when cell(s, d) == cell(d, s) for every pair: the same answer on every rank. */
int cp_traffic_symmetric(const cp_traffic_t *t);
void cp_traffic_free(cp_traffic_t *t);

/**
 * This rank's view of a cell of op: its row (sendcounts, sdispls) and
 * column (recvcounts, rdispls), gatherv's and scatterv's blocks, symmetry
 * and the block stride of alltoallv's data; O(n) time and bytes.  0,
 * COLLPROF_ERR_INVALID (cp_traffic_init) or COLLPROF_ERR_NO_MEMORY.
 */
int cp_a2av_build(cp_a2av_t *a, collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                  int root, int rank);
void cp_a2av_free(cp_a2av_t *a);

#endif /* COLLPROF_CORE_IMBALANCE_H */
