/*
 * Statistics of one cell.  The duration of iteration i is the maximum over
 * ranks of what each rank measured (a collective is done when its last
 * rank is done); mean/min/percentiles/max are taken over those
 * per-iteration maxima.  Percentiles use the nearest-rank method.
 */
#ifndef COLLPROF_CORE_STATS_H
#define COLLPROF_CORE_STATS_H

#include <stddef.h>

typedef struct cp_stats {
    double mean, min, p50, p95, p99, max; /* microseconds */
} cp_stats_t;

/** samples[r * iters + i] = rank r's time of iteration i (us).  iter_max[iters] gets the maxima. */
void cp_stats_iter_max(const double *samples, int nranks, int iters, double *iter_max);

/** Statistics of v[0..len) (len >= 1); v is sorted in place. */
void cp_stats_compute(double *v, int len, cp_stats_t *out);

/** Median of v[0..n) (mean of the two middle values when n is even; 0 when n is 0); sorts v. */
double cp_stats_median(double *v, size_t n);
/** Nearest-rank percentile of sorted v: the value at index ceil(q*len)-1. */
double cp_stats_percentile(const double *sorted, int len, double q);

/*
 * Repeats (collprof --repeats): a cell run R times gives R medians (the
 * p50 of each repeat's per-iteration maxima).  The cell's figure is their
 * median, with a distribution-free interval for it: the order statistics
 * [x(k), x(R-k+1)] of the sorted medians cover the true median with
 * probability 1 - 2 P(Binomial(R, 1/2) <= k-1), whatever the distribution.
 * The largest k whose coverage is still >= 95 % gives the interval; that
 * needs R >= 6.  Below 6 the interval is [min, max] and its real coverage
 * (1 - 2^(1-R): 50 % for 2 repeats, 93.75 % for 5) is reported as it is.
 */
#define CP_STATS_CI_LEVEL 0.95

typedef struct cp_median_ci {
    int n;           /**< repeats */
    int k;           /**< the interval is [sorted[k-1], sorted[n-k]]; 0: none (n < 2) */
    double median;   /**< of the n values */
    double lo, hi;   /**< the interval (0 when none) */
    double coverage; /**< its exact coverage, e.g. 0.96875; 0 when none */
} cp_median_ci_t;

/** Coverage of [x(k), x(n-k+1)] as an interval for the median of n values; 0 when there is
 *  no such interval (n < 2, k < 1 or k past the middle). */
double cp_stats_median_ci_coverage(int n, int k);
/** The median of sorted[0..n) and its interval (see above). */
void cp_stats_median_ci(const double *sorted, int n, cp_median_ci_t *out);

/*
 * Bimodal repeats: sort the repeats' medians and split them at the largest
 * gap that leaves CP_STATS_MODE_MIN or more on each side.  The cell is
 * bimodal when that gap is wider than CP_STATS_MODE_GAP_RANGE times the
 * wider cluster's range (max - min) and than CP_STATS_MODE_GAP_MEDIAN
 * times the median of all.  Each mode is its cluster's median.
 */
#define CP_STATS_MODE_MIN        2
#define CP_STATS_MODE_GAP_RANGE  3.0
#define CP_STATS_MODE_GAP_MEDIAN 0.10

typedef struct cp_modes {
    double lo, hi;  /**< the two modes, us (lo < hi) */
    int lo_n, hi_n; /**< repeats in each */
} cp_modes_t;

/** 1 and the two modes when sorted[0..n) is bimodal (rule above), else 0 (*out zeroed). */
int cp_stats_bimodal(const double *sorted, int n, cp_modes_t *out);

#endif /* COLLPROF_CORE_STATS_H */
