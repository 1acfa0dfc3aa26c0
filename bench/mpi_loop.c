/*
 * mpi_loop: the plain-MPI reference for bench/overhead.sh.
 *
 * It does, for each op, what collprof's runner and MPI backend do for one
 * cell of --backends mpi --variants default, and nothing else:
 *
 *   - OMPI_MCA_coll_tuned_use_dynamic_rules=1 (no overwrite) before MPI
 *     starts, MPI_Init_thread(MPI_THREAD_SERIALIZED), errors returned;
 *   - per op, a communicator duplicated from MPI_COMM_WORLD (collprof's
 *     "default" variant: coll/tuned's own decision rules on a fresh dup);
 *   - two page-aligned buffers (posix_memalign 4096) of count elements,
 *     every page touched with memset, then the send buffer initialised,
 *     all before timing; the same buffers every iteration;
 *   - W warm-up then N timed iterations; each iteration is MPI_Barrier on
 *     MPI_COMM_WORLD (not timed) and one blocking call timed with
 *     clock_gettime(CLOCK_MONOTONIC): MPI_Allreduce(float, sum, out of
 *     place, count) or MPI_Alltoall(count/n floats per peer);
 *   - per-rank samples gathered to rank 0 after the loop; an iteration's
 *     time is its max over ranks; mean, min, max and nearest-rank
 *     p50/p95/p99 of those, in microseconds.
 *
 * What collprof does and this does not: it bootstraps through PMIx, loads
 * the backend with dlopen, and after each cell runs one more call to check
 * the result and exchanges the samples through a PMIx fence.  All of that
 * is outside the timed region.
 *
 * Usage: mpirun -np 2 mpi_loop [-o allreduce,alltoall] [-c 4M] [-n 50] [-w 10]
 *        [-s barrier|none] [-W]   (-W: time on MPI_COMM_WORLD, no dup)
 * Output (rank 0), one line per op, key-value pairs:
 *   op allreduce count 4194304 bytes 16777216 ranks 2 iters 50 warmup 10 mean_us ... p50_us ...
 */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

enum { OP_ALLREDUCE, OP_ALLTOALL };

/* nearest rank, as collprof's cp_stats_percentile */
static double percentile(const double *sorted, int len, double q)
{
    int k = 0;
    double pos = q * (double)len;
    k = (int)pos;
    if ((double)k < pos) {
        k++; /* ceil */
    }
    k--;
    if (k < 0) {
        k = 0;
    }
    if (k >= len) {
        k = len - 1;
    }
    return sorted[k];
}

static int parse_int(const char *s, int min, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > 100000000L) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: mpirun -np N mpi_loop [-o allreduce,alltoall] [-c COUNT[K|M|G]] [-n ITERS]\n"
               "                [-w WARMUP] [-s barrier|none] [-W]\n");
}

static void die(int rank, const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) {
        snprintf(msg, sizeof(msg), "MPI error %d", rc);
    }
    fprintf(stderr, "mpi_loop: rank %d: %s failed: %s\n", rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* Rank 0: statistics of the per-iteration max over ranks of all[rank * iters + i] (imax: room
 * for iters values). */
static void report(const char *name, long long count, size_t bytes, int n, int iters, int warmup,
                   int sync, int world, const double *all, double *imax)
{
    double sum = 0;
    for (int i = 0; i < iters; i++) {
        double m = all[i];
        for (int r = 1; r < n; r++) {
            double v = all[(size_t)r * (size_t)iters + (size_t)i];
            m = v > m ? v : m;
        }
        imax[i] = m;
    }
    qsort(imax, (size_t)iters, sizeof(double), cmp_double);
    for (int i = 0; i < iters; i++) {
        sum += imax[i];
    }
    printf("op %s count %lld bytes %zu ranks %d iters %d warmup %d sync %s comm %s"
           " mean_us %.1f p50_us %.1f p95_us %.1f p99_us %.1f min_us %.1f max_us %.1f\n",
           name, count, bytes, n, iters, warmup, sync ? "barrier" : "none", world ? "world" : "dup",
           sum / iters, percentile(imax, iters, 0.50), percentile(imax, iters, 0.95),
           percentile(imax, iters, 0.99), imax[0], imax[iters - 1]);
    fflush(stdout);
}

/* One cell: returns 0, or exits through die(). */
static int run_cell(int op, long long count, int iters, int warmup, int sync, int world, int rank,
                    int n)
{
    const char *name = op == OP_ALLREDUCE ? "allreduce" : "alltoall";
    size_t bytes = (size_t)count * sizeof(float);
    int cnt = (int)count, blk = cnt / n, rc;
    void *sendbuf = NULL, *recvbuf = NULL;
    MPI_Comm comm = MPI_COMM_WORLD;

    if (op == OP_ALLTOALL && cnt % n != 0) {
        if (rank == 0) {
            fprintf(stderr, "mpi_loop: alltoall count %d is not a multiple of %d ranks\n", cnt, n);
        }
        return -1;
    }
    if (!world && (rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm)) != MPI_SUCCESS) {
        die(rank, "MPI_Comm_dup", rc);
    }
    if (posix_memalign(&recvbuf, 4096, bytes) != 0 || posix_memalign(&sendbuf, 4096, bytes) != 0) {
        fprintf(stderr, "mpi_loop: rank %d: posix_memalign(%zu) failed\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return -1;
    }
    /* touch every page outside the timed loop, then initialise the input */
    memset(recvbuf, 0, bytes);
    memset(sendbuf, 0, bytes);
    float *in = sendbuf;
    for (long long i = 0; i < count; i++) {
        in[i] = (float)((rank + 1) * (int)(i % 1000));
    }

    double *mine = calloc((size_t)iters, sizeof(double));
    double *all = rank == 0 ? calloc((size_t)iters * (size_t)n, sizeof(double)) : NULL;
    if (mine == NULL || (rank == 0 && all == NULL)) {
        fprintf(stderr, "mpi_loop: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return -1;
    }

    for (int i = 0; i < warmup + iters; i++) {
        if (sync && (rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS) {
            die(rank, "MPI_Barrier", rc);
        }
        double t0 = now_us();
        if (op == OP_ALLREDUCE) {
            rc = MPI_Allreduce(sendbuf, recvbuf, cnt, MPI_FLOAT, MPI_SUM, comm);
        } else {
            rc = MPI_Alltoall(sendbuf, blk, MPI_FLOAT, recvbuf, blk, MPI_FLOAT, comm);
        }
        double t1 = now_us();
        if (rc != MPI_SUCCESS) {
            die(rank, op == OP_ALLREDUCE ? "MPI_Allreduce" : "MPI_Alltoall", rc);
        }
        if (i >= warmup) {
            mine[i - warmup] = t1 - t0;
        }
    }

    rc = MPI_Gather(mine, iters, MPI_DOUBLE, all, iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        die(rank, "MPI_Gather", rc);
    }
    if (rank == 0) {
        report(name, count, bytes, n, iters, warmup, sync, world, all, mine);
    }
    free(all);
    free(mine);
    free(sendbuf);
    free(recvbuf);
    if (!world) {
        MPI_Comm_free(&comm);
    }
    return 0;
}

#define MAX_OPS 16

/* The op list into list[MAX_OPS]: how many, or -1 after saying why. */
static int parse_ops(const char *ops, int *list)
{
    int nops = 0;
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", ops);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        if (nops == MAX_OPS) {
            fprintf(stderr, "mpi_loop: too many ops\n");
            return -1;
        }
        if (strcmp(t, "allreduce") == 0) {
            list[nops++] = OP_ALLREDUCE;
        } else if (strcmp(t, "alltoall") == 0) {
            list[nops++] = OP_ALLTOALL;
        } else {
            fprintf(stderr, "mpi_loop: unknown op '%s' (allreduce, alltoall)\n", t);
            return -1;
        }
    }
    if (nops == 0) {
        fprintf(stderr, "mpi_loop: no op given\n");
        return -1;
    }
    return nops;
}

int main(int argc, char **argv)
{
    const char *ops = "allreduce,alltoall";
    long long count = 4LL * 1024 * 1024;
    int iters = 50, warmup = 10, sync = 1, world = 0, c;
    int provided = 0, rank = 0, n = 0, ret = 0;

    while ((c = getopt(argc, argv, "o:c:n:w:s:Wh")) != -1) {
        switch (c) {
        case 'o': ops = optarg; break;
        case 'c':
            if (bench_parse_count(optarg, &count) != 0 || count > 2147483647LL) {
                fprintf(stderr, "mpi_loop: bad count '%s'\n", optarg);
                return 2;
            }
            break;
        case 'n':
            if (parse_int(optarg, 1, &iters) != 0) {
                fprintf(stderr, "mpi_loop: bad iteration count '%s'\n", optarg);
                return 2;
            }
            break;
        case 'w':
            if (parse_int(optarg, 0, &warmup) != 0) {
                fprintf(stderr, "mpi_loop: bad warm-up count '%s'\n", optarg);
                return 2;
            }
            break;
        case 's':
            if (strcmp(optarg, "barrier") != 0 && strcmp(optarg, "none") != 0) {
                fprintf(stderr, "mpi_loop: --sync is barrier or none\n");
                return 2;
            }
            sync = strcmp(optarg, "barrier") == 0;
            break;
        case 'W': world = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    /* validate the op list before starting MPI */
    int list[MAX_OPS], nops = parse_ops(ops, list);
    if (nops < 0) {
        return 2;
    }

    /* as collprof's MPI backend: before MPI registers its variables, no overwrite */
    setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "mpi_loop: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    for (int k = 0; k < nops && ret == 0; k++) {
        ret = run_cell(list[k], count, iters, warmup, sync, world, rank, n);
    }
    MPI_Finalize();
    return ret == 0 ? 0 : 1;
}
