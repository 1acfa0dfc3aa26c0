#include "config.h"

#include "base/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* P(X <= k) for X ~ Binomial(n, 1/2), exactly enough for n <= 1000 (log-space terms). */
static double binom_half_cdf(int n, int k)
{
    double sum = 0, lp = -(double)n * log(2.0); /* log C(n,0) / 2^n */
    for (int j = 0; j <= k && j <= n; j++) {
        sum += exp(lp);
        lp += log((double)(n - j)) - log((double)(j + 1));
    }
    return sum;
}

double cp_stats_median_ci_coverage(int n, int k)
{
    if (n < 2 || k < 1 || 2 * k > n + 1) {
        return 0;
    }
    return 1.0 - 2.0 * binom_half_cdf(n, k - 1);
}

void cp_stats_median_ci(const double *sorted, int n, cp_median_ci_t *out)
{
    memset(out, 0, sizeof(*out));
    out->n = n;
    if (n < 1) {
        return;
    }
    out->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    if (n < 2) {
        return; /* one repeat: no interval */
    }
    /* the narrowest symmetric order-statistic interval that still covers 95 %; [min, max]
     * (the widest there is) when none does */
    int k = 1;
    while (2 * (k + 1) <= n + 1 && cp_stats_median_ci_coverage(n, k + 1) >= CP_STATS_CI_LEVEL) {
        k++;
    }
    out->k = k;
    out->lo = sorted[k - 1];
    out->hi = sorted[n - k];
    out->coverage = cp_stats_median_ci_coverage(n, k);
}

/* Median of sorted v[0..n). */
static double sorted_median(const double *v, int n)
{
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int cp_stats_bimodal(const double *sorted, int n, cp_modes_t *out)
{
    memset(out, 0, sizeof(*out));
    if (n < 2 * CP_STATS_MODE_MIN) {
        return 0;
    }
    /* the largest gap that leaves CP_STATS_MODE_MIN repeats or more on each side */
    int cut = -1; /* the first index of the upper cluster */
    double gap = -1;
    for (int i = CP_STATS_MODE_MIN; i <= n - CP_STATS_MODE_MIN; i++) {
        if (sorted[i] - sorted[i - 1] > gap) {
            gap = sorted[i] - sorted[i - 1];
            cut = i;
        }
    }
    double range_lo = sorted[cut - 1] - sorted[0], range_hi = sorted[n - 1] - sorted[cut];
    double wider = range_lo > range_hi ? range_lo : range_hi;
    double median = sorted_median(sorted, n);
    if (!(gap > CP_STATS_MODE_GAP_RANGE * wider) || !(gap > CP_STATS_MODE_GAP_MEDIAN * median)) {
        return 0;
    }
    out->lo = sorted_median(sorted, cut);
    out->lo_n = cut;
    out->hi = sorted_median(sorted + cut, n - cut);
    out->hi_n = n - cut;
    return 1;
}
