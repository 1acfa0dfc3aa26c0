/*
 * Which backend and variant wins: the tables that end the run's text
 * summary (src/output/summary.c) and `collprof-report summary`, and that
 * `collprof-report best` prints from one or several files.  Pure
 * computation and text on result rows (no HDF5, no PMIx), so the run and
 * the report print the same tables from the same cells.
 *
 * - Only cells with status "ok" take part.
 * - A comparison is between cells that differ only in backend and
 *   variant: every /results column is part of a cell's identity except
 *   those that name it (cell, backend, variant), measure it (every F64
 *   column, wrong, status, error) or say how it was measured (iterations,
 *   warmup, timer, allocation, device, repeats, check: a run with --repeats
 *   or another --check, or an import that does not record them, is the same
 *   cell).  So split and group_ranks (schema
 *   1.3) are, and copy_gbs is not; a column the schema gains later is part
 *   of the identity unless it is an F64 or is added to that list.
 * - A candidate is one backend/variant on one such cell.  Its time is the
 *   cell's mean (over iterations of the max over ranks), and its noise
 *   range runs from the 5th to the 95th percentile of those per-iteration
 *   times (the minimum stands in for p5 where the raw samples are absent).
 *   Where one backend/variant has several results for the cell (several
 *   files, or a cell repeated in a run), the median one by time stands for
 *   it and the noise range spans them all.
 * - Two candidates tie when their noise ranges overlap: the table then
 *   says "tie" instead of naming a winner, and still shows the ratio.
 */
#ifndef COLLPROF_OUTPUT_BEST_H
#define COLLPROF_OUTPUT_BEST_H

#include <stddef.h>
#include <stdio.h>

#include <collprof/schema.h>

/** One result: its row and the p5 of its per-iteration times (< 0 when unknown). */
typedef struct cp_best_cell {
    const collprof_result_row_t *row;
    double p5_us;
} cp_best_cell_t;

/** Nearest-rank 5th percentile of iter_max[0..iters) (not modified); -1 when iters < 1. */
double cp_best_p5(const double *iter_max, int iters);

/** 0 when a and b are the same cell but for backend and variant; else an order. */
int cp_best_key_cmp(const collprof_result_row_t *a, const collprof_result_row_t *b);

/** One backend/variant on one cell. */
typedef struct cp_best_cand {
    const collprof_result_row_t *row; /**< the result that stands for it; NULL: none */
    double lo_us, hi_us;              /**< noise range (p5 .. p95) */
    int repeats;                      /**< results of this backend/variant on the cell */
} cp_best_cand_t;

/** Two candidates of one cell: the faster (by time) and the other. */
typedef struct cp_best_duel {
    cp_best_cand_t fast;
    cp_best_cand_t slow; /**< slow.row NULL: nothing to compare with */
    double ratio;        /**< slow time / fast time (>= 1); 0 without slow */
    int tie;             /**< the noise ranges overlap */
} cp_best_duel_t;

/** Best-of: per cell, the fastest backend/variant and the runner-up. */
typedef struct cp_best_row {
    cp_best_duel_t d;
    int ncand; /**< backend/variants that measured the cell */
} cp_best_row_t;

/** Backend against backend: each one's fastest variant on a cell both measured. */
typedef struct cp_best_pair {
    const char *a, *b; /**< the two backends, in run order (a first) */
    cp_best_duel_t d;  /**< d.fast is a's or b's fastest variant */
} cp_best_pair_t;

/** A backend's fastest variant against its default, on a cell it ran in 2+ variants. */
typedef struct cp_best_gain {
    cp_best_duel_t d; /**< fast: the fastest variant; slow: the default, or when the default is
                           the fastest, the next variant; slow.row NULL: no default cell */
    int default_fastest;
} cp_best_gain_t;

typedef struct cp_best {
    cp_best_row_t *rows; /**< one per cell, in the order of cp_best_key_cmp */
    size_t nrows;
    cp_best_pair_t *pairs; /**< per pair of backends, per cell */
    size_t npairs;
    cp_best_gain_t *gains; /**< per backend, per cell */
    size_t ngains;
    int nbackends;   /**< backends with ok cells */
    int comparisons; /**< rows with two candidates or more */
} cp_best_t;

/** The tables of cells[0..n) (rows must outlive *out).  0, or -1 when out of memory. */
int cp_best_compute(const cp_best_cell_t *cells, size_t n, cp_best_t *out);
void cp_best_free(cp_best_t *b);

/** "1.30x faster", "tie (1.03x)", "only candidate"... the verdict of row i of each table. */
void cp_best_row_verdict(const cp_best_row_t *r, char *buf, size_t len);
void cp_best_pair_verdict(const cp_best_pair_t *p, char *buf, size_t len);
void cp_best_gain_verdict(const cp_best_gain_t *g, char *buf, size_t len);

/** "1M", "64K", "1000": an element count, short. */
const char *cp_best_fmt_count(uint64_t count, char *buf, size_t len);

/** The three tables as text, each under its "== ... ==" heading. */
void cp_best_print(FILE *f, const cp_best_t *b);

/**
 * What the text summary ends with, in the run and in `collprof-report
 * summary`: the tables of cells[0..n).  Prints nothing when no cell is ok.
 */
void cp_best_print_summary(FILE *f, const cp_best_cell_t *cells, size_t n);

#endif /* COLLPROF_OUTPUT_BEST_H */
