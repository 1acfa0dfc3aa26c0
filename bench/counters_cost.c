/*
 * bench/counters_cost: what one --counters reading costs a node's first rank (src/counters):
 * per source (net, ib, host, gpu) and for all of them, the median and 95th percentile over
 * --reps readings of cp_counters_read() (and, for "all", of the reading plus
 * cp_counters_delta() against the one before: the work after a cell's loop), with the number
 * of counters read.  A cell pays two readings, outside its timed samples, plus the gather to
 * rank 0 (bench/counters.sh measures the whole).  A benchmark, not a test.
 *
 *   bench/counters_cost [--reps 200]
 * COLLPROF_SYSFS_ROOT and COLLPROF_NVML_LIB apply as in collprof.
 */
#include "config.h"

#include "counters/counters.h"

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void one(const char *label, unsigned mask, int reps)
{
    double *t = calloc((size_t)reps, sizeof(double));
    cp_cnt_snap_t a = {0}, b = {0};
    int n = cp_counters_read(mask, &a); /* also loads NVML once, outside the timing */
    cp_cnt_delta_t *d = calloc((size_t)(n > 0 ? n : 0) + 2, sizeof(*d));
    if (t == NULL || d == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now_us();
        cp_counters_read(mask, &b);
        if (mask == CP_CNT_ALL && b.n <= n) {
            cp_counters_delta(&a, &b, d);
        }
        t[r] = now_us() - t0;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    printf("%-6s %8d %12.1f %12.1f\n", label, n, t[reps / 2], t[(reps * 95) / 100]);
    cp_counters_free(&a);
    cp_counters_free(&b);
    free(d);
    free(t);
}

int main(int argc, char **argv)
{
    int reps = 200;
    if (argc == 3 && strcmp(argv[1], "--reps") == 0 && atoi(argv[2]) > 0) {
        reps = atoi(argv[2]);
    } else if (argc != 1) {
        fprintf(stderr, "usage: bench/counters_cost [--reps N]\n");
        return 2;
    }
    printf("%-6s %8s %12s %12s\n", "source", "counters", "median us", "p95 us");
    one("net", CP_CNT_NET, reps);
    one("ib", CP_CNT_IB, reps);
    one("host", CP_CNT_HOST, reps);
    one("gpu", CP_CNT_GPU, reps);
    one("all", CP_CNT_ALL, reps);
    return 0;
}
