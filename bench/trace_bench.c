/*
 * trace_bench: the per-call cost of collprof-trace (bench/trace_overhead.sh).
 *
 * W warm-up, then N MPI_Allreduce calls of one double (8 bytes, sum) on
 * MPI_COMM_WORLD, back to back, each timed with clock_gettime(CLOCK_MONOTONIC)
 * around the call.  Rank 0 prints its median, p10 and p90 per call and the
 * loop's mean (the whole loop over N), in microseconds:
 *
 *   trace_bench ranks 2 iters 100000 p50_us 1.234 p10_us ... p90_us ... mean_us ...
 *
 * With -g G, each call follows G microseconds of compute (a busy loop, not
 * timed per call; in the mean): a job of N steps, its loop time loop_s.
 * Run it with and without LD_PRELOAD=libcollprof-trace.so (COLLPROF_TRACE_DIR
 * set): the difference of the medians is what the recorder adds per call.
 * Usage: mpirun -np 2 trace_bench [-n N] [-w W] [-g G]
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* compute: a busy loop of us microseconds */
static void busy(double us)
{
    double end = now_us() + us;
    volatile double x = 1.0;
    while (now_us() < end) {
        for (int i = 0; i < 50; i++) {
            x = x * 1.000001 + 1e-9;
        }
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    long n = 100000, w = 1000;
    double gap = 0;
    int opt;
    while ((opt = getopt(argc, argv, "n:w:g:")) != -1) {
        if (opt == 'n') {
            n = atol(optarg);
        } else if (opt == 'w') {
            w = atol(optarg);
        } else if (opt == 'g') {
            gap = atof(optarg);
        } else {
            fprintf(stderr, "usage: trace_bench [-n N] [-w W] [-g GAP_US]\n");
            return 2;
        }
    }
    if (n < 1 || w < 0) {
        fprintf(stderr, "trace_bench: -n must be 1 or more, -w 0 or more\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *t = malloc((size_t)n * sizeof(*t)), x = 1.0, y = 0.0;
    if (t == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (long i = 0; i < w; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double start = now_us();
    for (long i = 0; i < n; i++) {
        if (gap > 0) {
            busy(gap);
        }
        double a = now_us();
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t[i] = now_us() - a;
    }
    double loop = now_us() - start;
    qsort(t, (size_t)n, sizeof(*t), cmp);
    if (rank == 0) {
        printf("trace_bench ranks %d iters %ld gap_us %.1f p50_us %.3f p10_us %.3f p90_us %.3f "
               "mean_us %.3f loop_s %.4f\n",
               size, n, gap, t[n / 2], t[n / 10], t[(n * 9) / 10], loop / (double)n, loop / 1e6);
    }
    free(t);
    MPI_Finalize();
    return y == (double)size ? 0 : 1;
}
