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

#endif /* COLLPROF_CORE_STATS_H */
