#include "config.h"

#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

void cp_stats_iter_max(const double *samples, int nranks, int iters, double *iter_max)
{
    for (int i = 0; i < iters; i++) {
        double m = samples[i];
        for (int r = 1; r < nranks; r++) {
            double v = samples[(size_t)r * (size_t)iters + (size_t)i];
            m = v > m ? v : m;
        }
        iter_max[i] = m;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cp_stats_median(double *v, size_t n)
{
    if (n == 0) {
        return 0;
    }
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double cp_stats_percentile(const double *sorted, int len, double q)
{
    int k = (int)ceil(q * (double)len) - 1;
    if (k < 0) {
        k = 0;
    }
    if (k >= len) {
        k = len - 1;
    }
    return sorted[k];
}

void cp_stats_compute(double *v, int len, cp_stats_t *out)
{
    qsort(v, (size_t)len, sizeof(double), cmp_double);
    double sum = 0;
    for (int i = 0; i < len; i++) {
        sum += v[i];
    }
    out->mean = sum / len;
    out->min = v[0];
    out->max = v[len - 1];
    out->p50 = cp_stats_percentile(v, len, 0.50);
    out->p95 = cp_stats_percentile(v, len, 0.95);
    out->p99 = cp_stats_percentile(v, len, 0.99);
}
