/* Aggregation: per-iteration max over ranks, then nearest-rank statistics. */
#include "config.h"

#include "core/stats.h"
#include "tap.h"

#include <math.h>

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
    return tap_done();
}
