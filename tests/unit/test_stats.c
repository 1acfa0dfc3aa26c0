/* Aggregation: per-iteration max over ranks, then nearest-rank statistics. */
#include "config.h"

#include "base/stats.h"
#include "tap.h"

#include <math.h>

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

/* The interval of the median of 1, 2, ... n (sorted), for the coverage edge cases. */
static void interval_of(int n, cp_median_ci_t *ci)
{
    double v[64];
    for (int i = 0; i < n; i++) {
        v[i] = i + 1;
    }
    cp_stats_median_ci(v, n, ci);
}

static void test_intervals(void)
{
    cp_median_ci_t ci;
    interval_of(1, &ci);
    ok(ci.median == 1 && ci.k == 0 && ci.coverage == 0 && ci.lo == 0 && ci.hi == 0,
       "1 repeat: the median, no interval");
    interval_of(2, &ci);
    ok(ci.median == 1.5 && ci.k == 1 && ci.lo == 1 && ci.hi == 2 && near(ci.coverage, 0.5),
       "2 repeats: [min, max] covers 50 %%");
    interval_of(5, &ci);
    ok(ci.median == 3 && ci.k == 1 && ci.lo == 1 && ci.hi == 5 && near(ci.coverage, 0.9375),
       "5 repeats: [min, max] covers only 93.75 %%");
    ok(ci.coverage < CP_STATS_CI_LEVEL, "5 repeats: below the 95 %% level");
    interval_of(6, &ci);
    ok(ci.k == 1 && ci.lo == 1 && ci.hi == 6 && near(ci.coverage, 1 - 2.0 / 64),
       "6 repeats: [min, max] covers 96.875 %%, the first to reach 95 %%");
    interval_of(10, &ci);
    /* k = 2: 1 - 2 * (1 + 10) / 1024; k = 3 would be 1 - 2 * 56 / 1024 = 89 % */
    ok(ci.median == 5.5 && ci.k == 2 && ci.lo == 2 && ci.hi == 9 &&
           near(ci.coverage, 1 - 22.0 / 1024),
       "10 repeats: [x(2), x(9)] covers 97.85 %%");
    ok(near(cp_stats_median_ci_coverage(10, 3), 1 - 112.0 / 1024),
       "10 repeats: [x(3), x(8)] would cover 89 %%");
    interval_of(50, &ci);
    ok(ci.k == 18 && near(ci.lo, 18) && near(ci.hi, 33) && ci.coverage >= 0.95 &&
           cp_stats_median_ci_coverage(50, 19) < 0.95,
       "50 repeats: the narrowest interval still at 95 %% (k = 18, 96.7 %%; k = 19 covers 93.5 "
       "%%)");
    ok(cp_stats_median_ci_coverage(1, 1) == 0 && cp_stats_median_ci_coverage(6, 4) == 0,
       "no interval for 1 value or k past the middle");
}

static void test_bimodal(void)
{
    cp_modes_t m;
    double two[] = {4.0, 4.1, 4.2, 8.8, 8.9}; /* 3 near 4.1, 2 near 8.85 */
    ok(cp_stats_bimodal(two, 5, &m) == 1 && m.lo == 4.1 && m.lo_n == 3 && near(m.hi, 8.85) &&
           m.hi_n == 2,
       "bimodal: 4.1 (3 repeats) and 8.85 (2)");
    double one_out[] = {4.0, 4.1, 4.2, 4.3, 9.0}; /* one slow repeat is an outlier, not a mode */
    ok(cp_stats_bimodal(one_out, 5, &m) == 0 && m.lo_n == 0, "one outlier is not a mode");
    double spread[] = {1, 2, 3, 4, 5, 6}; /* even spread: the gap is not 3x the ranges */
    ok(cp_stats_bimodal(spread, 6, &m) == 0, "evenly spread repeats are not bimodal");
    double small[] = {100, 100.5, 101, 101.5}; /* gap 0.5 > 3 x 0 ranges? no: ranges 0.5 */
    ok(cp_stats_bimodal(small, 4, &m) == 0, "close repeats are not bimodal");
    double tight[] = {100, 100, 104, 104}; /* gap 4 > 3 x 0, but < 10 % of the median */
    ok(cp_stats_bimodal(tight, 4, &m) == 0, "a gap under 10 %% of the median is not bimodal");
    double wide[] = {100, 100, 120, 120}; /* gap 20 > 10 % of 110 and > 3 x 0 */
    ok(cp_stats_bimodal(wide, 4, &m) == 1 && m.lo == 100 && m.hi == 120,
       "a gap over 10 %% of the median with tight clusters is bimodal");
    double ranged[] = {100, 110, 140, 141}; /* gap 30 = 3 x range 10: not more than 3x */
    ok(cp_stats_bimodal(ranged, 4, &m) == 0, "a gap of exactly 3x the wider range is not enough");
    double three[] = {1, 1, 5};
    ok(cp_stats_bimodal(three, 3, &m) == 0, "3 repeats cannot hold 2 modes of 2");
}

int main(void)
{
    /* 3 ranks x 4 iterations; rank 2 is slow in iteration 1 */
    double s[12] = {1, 2, 3, 4, /* rank 0 */
                    2, 1, 1, 5, /* rank 1 */
                    1, 9, 2, 1 /* rank 2 */};
    double m[4];
    cp_stats_iter_max(s, 3, 4, m);
    ok(m[0] == 2 && m[1] == 9 && m[2] == 3 && m[3] == 5, "iteration max over ranks");

    cp_stats_t st;
    cp_stats_compute(m, 4, &st);
    ok(st.min == 2 && st.max == 9 && fabs(st.mean - 4.75) < 1e-12, "min/max/mean");
    ok(st.p50 == 3, "p50 nearest rank of {2,3,5,9} is 3");
    ok(st.p95 == 9 && st.p99 == 9, "p95/p99 are the max for 4 samples");

    double v[100];
    for (int i = 0; i < 100; i++) {
        v[i] = 100 - i; /* unsorted on purpose */
    }
    cp_stats_compute(v, 100, &st);
    ok(st.p50 == 50 && st.p95 == 95 && st.p99 == 99 && st.min == 1 && st.max == 100,
       "percentiles of 1..100");
    double one = 7;
    cp_stats_compute(&one, 1, &st);
    ok(st.p50 == 7 && st.p99 == 7 && st.mean == 7, "single sample");
    test_intervals();
    test_bimodal();
    return tap_done();
}
