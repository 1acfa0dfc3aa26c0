/*
 * trace_loop: the MPI program tests/integration/record.sh records with
 * collprof-trace and replays (issue 40 item 5).  Three communicators: the
 * world, its two halves (MPI_Comm_split) and pairs of neighbours (a split of
 * the halves), with collectives of several types and sizes on each, compute
 * gaps between them (a busy loop of G microseconds), a non-blocking
 * allreduce overlapped with compute, and a pair's Isend/Irecv/Waitall.
 * Every result is checked (exit 1 when one is wrong).  Rank 0 prints the
 * ops each rank issues and the loop's wall time:
 *
 *   trace_loop ranks 4 iters 3 gap_us 200 ops_per_rank 44 wall_us 1234.5
 *
 * Usage: mpirun -np 4 trace_loop [-i ITERS] [-g GAP_US] [-r REQUESTS]   (4, 8, 12 or 16 ranks)
 * -r N: then N point-to-point requests alive at once, completed in a shuffled order.
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
        for (int i = 0; i < 100; i++) {
            x = x * 1.000001 + 1e-9;
        }
    }
}

static int bad;

static void expect(int ok, const char *what, int rank)
{
    if (!ok && bad++ < 5) {
        fprintf(stderr, "trace_loop: rank %d: %s is wrong\n", rank, what);
    }
}

/* one iteration: 14 ops per rank (the Waitall completes 2 requests: 2 wait rows) */
static void iteration(MPI_Comm world, MPI_Comm half, MPI_Comm pair, int rank, int n, double gap)
{
    static float f[4096], g[4096];
    static double d[1024], e[1024];
    static int32_t a[1024], b[1024];
    static int64_t l[512], m[512];
    static unsigned char bytes[4096];
    for (int i = 0; i < 4096; i++) {
        f[i] = 1.0f;
    }
    MPI_Allreduce(f, g, 1024, MPI_FLOAT, MPI_SUM, world); /* 4 KiB */
    expect(g[7] == (float)n, "allreduce (world)", rank);
    busy(gap);
    int hr;
    MPI_Comm_rank(half, &hr);
    memset(bytes, hr == 1 ? 7 : 0, sizeof(bytes));
    MPI_Bcast(bytes, 4096, MPI_BYTE, 1, half);
    expect(bytes[4095] == 7, "broadcast (half, root 1)", rank);
    for (int i = 0; i < 256; i++) {
        a[i] = rank;
    }
    MPI_Allgather(a, 256, MPI_INT, b, 256, MPI_INT, pair);
    expect(b[0] == (rank & ~1) && b[511] == (rank | 1), "allgather (pair)", rank);
    busy(gap * 1.5);
    for (int i = 0; i < 64 * n; i++) {
        d[i] = rank;
    }
    MPI_Alltoall(d, 64, MPI_DOUBLE, e, 64, MPI_DOUBLE, world);
    expect(e[64 * (n - 1)] == n - 1, "alltoall (world)", rank);
    for (int i = 0; i < 512; i++) {
        l[i] = 2;
    }
    MPI_Reduce(l, m, 512, MPI_INT64_T, MPI_SUM, 0, half);
    expect(hr != 0 || m[3] == 2 * (n / 2), "reduce (half, root 0)", rank);
    MPI_Request q[2];
    MPI_Iallreduce(f, g, 2048, MPI_FLOAT, MPI_SUM, pair, &q[0]);
    busy(gap);
    MPI_Wait(&q[0], MPI_STATUS_IGNORE);
    expect(g[2047] == 2.0f * f[2047], "iallreduce (pair)", rank);
    MPI_Reduce_scatter_block(f, g, 128, MPI_FLOAT, MPI_SUM, world);
    expect(g[127] == (float)n, "reduce_scatter_block (world)", rank);
    int rcs[16]; /* unequal blocks: rank i's 8 (i + 1) elements */
    for (int i = 0; i < n && i < 16; i++) {
        rcs[i] = 8 * (i + 1);
    }
    MPI_Reduce_scatter(f, g, rcs, MPI_FLOAT, MPI_SUM, world);
    expect(g[rcs[rank] - 1] == (float)n, "reduce_scatter of unequal blocks (world)", rank);
    a[0] = rank;
    MPI_Irecv(b, 100, MPI_INT, rank ^ 1, 5, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(a, 100, MPI_INT, rank ^ 1, 5, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    expect(b[0] == (rank ^ 1), "isend/irecv (pair partner)", rank);
    MPI_Barrier(world);
    busy(gap);
}

/* -r N: N sends to the partner and N receives from it, outstanding at once, completed in a
 * shuffled order by every completion call (Wait, Waitany, Waitsome, Testany, Test, Waitall):
 * many requests alive together, and (Open MPI) sends finished at once sharing one handle */
static void requests(int n, int rank)
{
    int *buf = calloc((size_t)n, sizeof(int));
    MPI_Request *q = malloc((size_t)n * sizeof(*q));
    int *idx = malloc((size_t)n * sizeof(int));
    if (buf == NULL || q == NULL || idx == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < n; i++) {
        if ((rank & 1) == (i & 1)) {
            MPI_Isend(&buf[i], 1, MPI_INT, rank ^ 1, i, MPI_COMM_WORLD, &q[i]);
        } else {
            MPI_Irecv(&buf[i], 1, MPI_INT, MPI_ANY_SOURCE, i, MPI_COMM_WORLD, &q[i]);
        }
    }
    srand(7 + (unsigned)rank);
    for (int k = 0; k < n / 5; k++) {
        MPI_Wait(&q[rand() % n], MPI_STATUS_IGNORE);
    }
    for (int k = 0, i; k < n / 5; k++) {
        MPI_Waitany(n, q, &i, MPI_STATUS_IGNORE);
    }
    for (int k = 0, m = 0; k < n / 10; k++) {
        MPI_Waitsome(n, q, &m, idx, MPI_STATUSES_IGNORE);
    }
    for (int k = 0, i, f; k < n / 10; k++) {
        MPI_Testany(n, q, &i, &f, MPI_STATUS_IGNORE);
        MPI_Test(&q[rand() % n], &f, MPI_STATUS_IGNORE);
    }
    MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
    free(idx);
    free(q);
    free(buf);
}

int main(int argc, char **argv)
{
    int iters = 3, reqs = 0, opt;
    double gap = 200;
    while ((opt = getopt(argc, argv, "i:g:r:")) != -1) {
        if (opt == 'i') {
            iters = atoi(optarg);
        } else if (opt == 'r') {
            reqs = atoi(optarg);
        } else if (opt == 'g') {
            gap = atof(optarg);
        } else {
            fprintf(stderr, "usage: trace_loop [-i ITERS] [-g GAP_US] [-r REQUESTS]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n % 4 != 0 || n > 16 || iters < 1) {
        if (rank == 0) {
            fprintf(stderr, "trace_loop: 4, 8, 12 or 16 ranks, -i 1 or more\n");
        }
        MPI_Finalize();
        return 2;
    }
    MPI_Comm half, pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < n / 2, rank, &half);
    MPI_Comm_split(half, rank / 2, rank, &pair);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = now_us();
    for (int i = 0; i < iters; i++) {
        iteration(MPI_COMM_WORLD, half, pair, rank, n, gap);
    }
    t = now_us() - t;
    if (reqs > 0) {
        requests(reqs, rank);
    }
    if (rank == 0) {
        printf("trace_loop ranks %d iters %d gap_us %.0f ops_per_rank %d wall_us %.1f\n", n, iters,
               gap, 14 * iters + 2, t);
    }
    MPI_Comm_free(&pair);
    MPI_Comm_free(&half);
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
