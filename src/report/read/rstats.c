/*
 * The statistics collprof-report needs beyond base/stats.c: a median that
 * averages the two middle values (for robust z-scores) and the
 * Mann-Whitney rank-sum test used by `compare`.
 *
 * Why Mann-Whitney: per-iteration times are far from normal (a floor, then
 * a long tail of scheduling hiccups), so a t-test on means would call one
 * hiccup a regression.  The rank-sum test only asks whether one sample
 * tends to be larger than the other, which is what "slower" means.
 */
#include "config.h"

#include "report/report.h"

#include "base/stats.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cp_report_median(double *v, size_t n)
{
    return cp_stats_median(v, n);
}

typedef struct tagged {
    double v;
    int from_a;
} tagged_t;

static int cmp_tagged(const void *a, const void *b)
{
    return cmp_double(&((const tagged_t *)a)->v, &((const tagged_t *)b)->v);
}

double cp_report_mann_whitney(const double *a, size_t na, const double *b, size_t nb)
{
    size_t n = na + nb;
    if (na == 0 || nb == 0) {
        return 1;
    }
    tagged_t *all = malloc(sizeof(*all) * n);
    if (all == NULL) {
        return 1; /* "cannot tell" is the safe answer: it never claims a regression */
    }
    for (size_t i = 0; i < na; i++) {
        all[i] = (tagged_t){a[i], 1};
    }
    for (size_t i = 0; i < nb; i++) {
        all[na + i] = (tagged_t){b[i], 0};
    }
    qsort(all, n, sizeof(*all), cmp_tagged);
    /* ranks 1..n, tied values share their average rank */
    double rank_sum_a = 0, ties = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && all[j].v == all[i].v) {
            j++;
        }
        double t = (double)(j - i), avg = ((double)i + 1 + (double)j) / 2;
        for (size_t k = i; k < j; k++) {
            rank_sum_a += all[k].from_a ? avg : 0;
        }
        ties += t * t * t - t;
        i = j;
    }
    free(all);
    double dna = (double)na, dnb = (double)nb, dn = (double)n;
    double u = rank_sum_a - dna * (dna + 1) / 2;
    double mu = dna * dnb / 2;
    double var = dna * dnb / 12 * ((dn + 1) - ties / (dn * (dn - 1)));
    if (!(var > 0)) {
        return 1; /* every value tied */
    }
    /* continuity correction: U moves in steps of 1/2 */
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    if (z < 0) {
        z = 0;
    }
    return erfc(z / sqrt(2.0));
}
