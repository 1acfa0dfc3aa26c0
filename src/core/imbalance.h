/*
 * alltoallv, allgatherv, gatherv and scatterv traffic generators.  For
 * alltoallv a generator turns the cell's count (the elements an average
 * rank sends) into an n x n matrix of element counts, matrix[s*n + d] =
 * elements rank s sends to rank d; for allgatherv, gatherv and scatterv the
 * same spec gives per-rank counts that sum to the cell's count (the
 * gathered or scattered total).  collprof(1), section TRAFFIC
 * PATTERNS, gives the formulas and the traffic-matrix file format.
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
    double spread;   /**< CP_IMB_SPREAD, 0..1 */
    int hot;         /**< CP_IMB_MOE: ranks 0..hot-1 are hot */
    double bias;     /**< CP_IMB_MOE: weight of a hot rank */
    int file_n;      /**< CP_IMB_FILE: matrix dimension */
    double *weights; /**< CP_IMB_FILE: file_n * file_n */
    char label[96];  /**< canonical text: "uniform", "spread:0.5", "moe:1:4", "file:NAME" */
} cp_imbalance_t;

/** Parse one spec (and load a file); one-line reason in err on failure. */
int cp_imbalance_parse(const char *spec, cp_imbalance_t *out, char *err, size_t errlen);
void cp_imbalance_free(cp_imbalance_t *imb);

/** Check that the generator can produce an n-rank matrix (file size). */
int cp_imbalance_validate(const cp_imbalance_t *imb, int n, char *err, size_t errlen);

/** Fill matrix (n*n) for an average of count elements sent per rank. */
void cp_imbalance_matrix(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *matrix);

/**
 * allgatherv, gatherv, scatterv: the elements of each rank's block,
 * counts[r] for rank r, summing to count (the gathered/scattered total).  Rank weights: uniform 1,
 * linear r+1, spread 1-S+2S*r/(n-1), moe BIAS for ranks below HOT else 1, file the sum of row r;
 * the rounding leftovers go one each to the ranks of non-zero weight, from rank 0 on.
 */
void cp_imbalance_counts(const cp_imbalance_t *imb, int n, uint64_t count, uint64_t *counts);

/**
 * The traffic matrix (n*n) of a cell of op: alltoallv's from
 * cp_imbalance_matrix; the others from cp_imbalance_counts: allgatherv's
 * sends rank s's count to every rank (itself included), matrix[s*n+d] =
 * counts[s]; gatherv's sends it to root only, matrix[s*n+root] = counts[s];
 * scatterv's has the root send rank d its count, matrix[root*n+d] =
 * counts[d] (the root's own block included).  root is ignored by the first
 * two.  -1 when op has none or root is outside 0..n-1.
 */
int cp_imbalance_op_matrix(collprof_op_t op, const cp_imbalance_t *imb, int n, uint64_t count,
                           int root, uint64_t *matrix);

/** Build this rank's counts/displacements from a matrix (takes ownership of matrix). */
int cp_a2av_build(cp_a2av_t *a, uint64_t *matrix, int n, int rank);
/**
 * gatherv, scatterv (rooted at root): every rank's block and its
 * displacement in the root's buffer, a->bcounts/bdispls, read from a built
 * view's matrix.  0 and nothing done for other ops; -1 out of memory.
 */
int cp_a2av_blocks(cp_a2av_t *a, collprof_op_t op, int root);
void cp_a2av_free(cp_a2av_t *a);

#endif /* COLLPROF_CORE_IMBALANCE_H */
