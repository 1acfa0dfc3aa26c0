/*
 * nccl_loop: the plain-NCCL reference for bench/nccl_compare.sh, the GPU
 * twin of bench/mpi_loop.c.
 *
 * It does, for each op and size, what collprof's runner and NCCL backend do
 * for one cell of --backends nccl --variants default, and nothing else:
 *
 *   - G processes forked from this one, rank r on CUDA device r (one GPU
 *     each, as collprof places them on one node); rank 0 makes the
 *     ncclUniqueId and hands it over through shared memory;
 *   - one blocking communicator (ncclCommInitRankConfig, the library's
 *     defaults), one non-blocking CUDA stream per rank;
 *   - two cudaMalloc buffers of the largest size, zeroed before timing, as
 *     nccl-tests allocates (-a once, the default), or two of exactly each
 *     op and size's bytes, allocated before its warm-up and freed after
 *     its timed batch, as collprof allocates a cell's (-a each: the control
 *     of bench/nccl_compare.sh --control); the same buffers every
 *     iteration, out of place but
 *     for broadcast, which has one buffer in collprof as in MPI (in place);
 *     sendrecv is ncclSend to rank+1 and ncclRecv from rank-1 in a group;
 *   - per op and size: W warm-up then N timed operations launched back to
 *     back, a CUDA event recorded before the first and after each one, one
 *     wait at the end (no sleep: cudaEventSynchronize on a busy-poll
 *     loop of cudaEventQuery); iteration i lasts
 *     cudaEventElapsedTime(ev[i], ev[i+1]);
 *   - per-rank samples through shared memory to rank 0; an iteration's time
 *     is its max over ranks; mean, min, max and nearest-rank p50/p95/p99 of
 *     those, in microseconds.
 *
 * What collprof does and this does not: PMIx bootstrap, dlopen of the
 * plugin, the exact check after each cell, the sample exchange.  All of it
 * is outside the timed region.
 *
 * Usage: nccl_loop [-g GPUS] [-o allreduce,allgather,reducescatter,broadcast,sendrecv]
 *                  [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP]
 *                  [-a once|each]
 * Output (rank 0), one line per op and size, key-value pairs:
 *   op allreduce bytes 8 count 2 ranks 1 iters 50 warmup 10 alloc once mean_us ... p50_us ...
 *   ... issue_us (the host's time per launch in the timed loop, max over ranks: where it is
 *   near mean_us, the GPU waited for the host)
 * Built against the real CUDA and NCCL (make bench/nccl_loop where configure
 * found them, or by bench/nccl_compare.sh), and against the project's
 * stand-in (bench/nccl_loop_mock, make check) so that it always compiles.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "bench_util.h"

#define MAX_RANKS 8
#define MAX_ITERS 100000
#define MAX_OPS   5

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_SENDRECV };
static const char *op_names[] = {"allreduce", "allgather", "reducescatter", "broadcast",
                                 "sendrecv"};

typedef struct shared {
    volatile int id_ready;
    ncclUniqueId id;
    volatile unsigned arrived, gen; /* a barrier for the sample exchange */
    double issue_us[MAX_RANKS];     /* host time per launch in the timed loop */
    double samples[MAX_RANKS][MAX_ITERS];
} shared_t;

typedef struct cfg {
    int g, iters, warmup, nops;
    int alloc_each; /* -a each: buffers of each op and size's bytes, as collprof's cells */
    int ops[MAX_OPS];
    long long minb, maxb, factor;
} cfg_t;

static shared_t *sh;

static void sh_barrier(int n)
{
    unsigned gen = __atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&sh->arrived, 1, __ATOMIC_ACQ_REL) == (unsigned)n) {
        __atomic_store_n(&sh->arrived, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&sh->gen, gen + 1, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE) == gen) {
        /* spin: the barrier is outside the timed region */
    }
}

/* nearest rank, as collprof's cp_stats_percentile */
static double percentile(const double *sorted, int len, double q)
{
    double pos = q * (double)len;
    int k = (int)pos;
    k += (double)k < pos;
    k--;
    return sorted[k < 0 ? 0 : k >= len ? len - 1 : k];
}

#define CUDA_OK(rank, call)                                                                        \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "nccl_loop: rank %d: %s failed: %s\n", rank, #call,                    \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define NCCL_OK(rank, call)                                                                        \
    do {                                                                                           \
        ncclResult_t r_ = (call);                                                                  \
        if (r_ != ncclSuccess) {                                                                   \
            fprintf(stderr, "nccl_loop: rank %d: %s failed: %s\n", rank, #call,                    \
                    ncclGetErrorString(r_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* collprof's layouts (<collprof/plugin.h>): broadcast has one buffer (the root's input, everyone's
 * output, as MPI_Bcast); sendrecv sends the whole buffer to rank+1 and receives from rank-1 */
static ncclResult_t launch(int op, const float *s, float *r, size_t count, int n, int rank,
                           ncclComm_t comm, cudaStream_t st)
{
    ncclResult_t e;
    switch (op) {
    case OP_ALLREDUCE: return ncclAllReduce(s, r, count, ncclFloat32, ncclSum, comm, st);
    case OP_ALLGATHER: return ncclAllGather(s, r, count / (size_t)n, ncclFloat32, comm, st);
    case OP_REDUCESCATTER:
        return ncclReduceScatter(s, r, count / (size_t)n, ncclFloat32, ncclSum, comm, st);
    case OP_SENDRECV:
        if ((e = ncclGroupStart()) != ncclSuccess) {
            return e;
        }
        e = ncclSend(s, count, ncclFloat32, (rank + 1) % n, comm, st);
        if (e == ncclSuccess) {
            e = ncclRecv(r, count, ncclFloat32, (rank + n - 1) % n, comm, st);
        }
        ncclResult_t end = ncclGroupEnd();
        return e != ncclSuccess ? e : end;
    default: return ncclBroadcast(r, r, count, ncclFloat32, 0, comm, st);
    }
}

/* rank 0: the statistics of the per-iteration max over ranks */
static void report(const cfg_t *c, int op, size_t bytes, size_t count)
{
    static double imax[MAX_ITERS];
    double sum = 0, issue = sh->issue_us[0];
    for (int r = 1; r < c->g; r++) {
        issue = sh->issue_us[r] > issue ? sh->issue_us[r] : issue;
    }
    for (int i = 0; i < c->iters; i++) {
        imax[i] = sh->samples[0][i];
        for (int r = 1; r < c->g; r++) {
            imax[i] = sh->samples[r][i] > imax[i] ? sh->samples[r][i] : imax[i];
        }
    }
    qsort(imax, (size_t)c->iters, sizeof(double), cmp_double);
    for (int i = 0; i < c->iters; i++) {
        sum += imax[i];
    }
    printf("op %s bytes %zu count %zu ranks %d iters %d warmup %d alloc %s mean_us %.2f "
           "p50_us %.2f p95_us %.2f p99_us %.2f min_us %.2f max_us %.2f issue_us %.2f\n",
           op_names[op], bytes, count, c->g, c->iters, c->warmup, c->alloc_each ? "each" : "once",
           sum / c->iters, percentile(imax, c->iters, 0.50), percentile(imax, c->iters, 0.95),
           percentile(imax, c->iters, 0.99), imax[0], imax[c->iters - 1], issue);
    fflush(stdout);
}

/* one op and size: warm-up, then the timed batch between CUDA events */
static void run_cell(const cfg_t *c, int rank, int op, size_t bytes, ncclComm_t comm,
                     cudaStream_t st, const float *s, float *r, cudaEvent_t *ev)
{
    size_t count = bytes / sizeof(float);
    for (int i = 0; i < c->warmup; i++) {
        NCCL_OK(rank, launch(op, s, r, count, c->g, rank, comm, st));
    }
    CUDA_OK(rank, cudaStreamSynchronize(st));
    double t0 = now_us();
    CUDA_OK(rank, cudaEventRecord(ev[0], st));
    for (int i = 0; i < c->iters; i++) {
        NCCL_OK(rank, launch(op, s, r, count, c->g, rank, comm, st));
        CUDA_OK(rank, cudaEventRecord(ev[i + 1], st));
    }
    sh->issue_us[rank] = (now_us() - t0) / c->iters;
    cudaError_t e;
    while ((e = cudaEventQuery(ev[c->iters])) == cudaErrorNotReady) {
        /* busy-poll, as collprof's backend does while a batch runs */
    }
    CUDA_OK(rank, e);
    for (int i = 0; i < c->iters; i++) {
        float ms = 0;
        CUDA_OK(rank, cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        sh->samples[rank][i] = (double)ms * 1000.0;
    }
    sh_barrier(c->g);
    if (rank == 0) {
        report(c, op, bytes, count);
    }
    sh_barrier(c->g);
}

/* two zeroed device buffers of bytes each */
static void buffers(int rank, size_t bytes, float **s, float **r)
{
    CUDA_OK(rank, cudaMalloc((void **)s, bytes));
    CUDA_OK(rank, cudaMalloc((void **)r, bytes));
    CUDA_OK(rank, cudaMemset(*s, 0, bytes));
    CUDA_OK(rank, cudaMemset(*r, 0, bytes));
    CUDA_OK(rank, cudaDeviceSynchronize());
}

static int rank_main(const cfg_t *c, int rank)
{
    ncclComm_t comm = NULL;
    cudaStream_t st;
    float *s = NULL, *r = NULL;
    cudaEvent_t *ev = calloc((size_t)c->iters + 1, sizeof(*ev));
    size_t maxb = (size_t)c->maxb;
    if (ev == NULL) {
        return 1;
    }
    CUDA_OK(rank, cudaSetDevice(rank));
    CUDA_OK(rank, cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (!c->alloc_each) {
        buffers(rank, maxb, &s, &r);
    }
    for (int i = 0; i <= c->iters; i++) {
        CUDA_OK(rank, cudaEventCreate(&ev[i]));
    }
    if (rank == 0) {
        NCCL_OK(rank, ncclGetUniqueId((ncclUniqueId *)&sh->id));
        __atomic_store_n(&sh->id_ready, 1, __ATOMIC_RELEASE);
    }
    while (!__atomic_load_n(&sh->id_ready, __ATOMIC_ACQUIRE)) {
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    NCCL_OK(rank, ncclCommInitRankConfig(&comm, c->g, sh->id, rank, &config));
    for (int k = 0; k < c->nops; k++) {
        for (long long b = c->minb; b <= c->maxb; b *= c->factor) {
            /* whole elements, a multiple of the ranks (allgather, reducescatter) */
            int per_rank = c->ops[k] == OP_ALLGATHER || c->ops[k] == OP_REDUCESCATTER;
            size_t unit = sizeof(float) * (per_rank ? (size_t)c->g : 1u);
            size_t bytes = (size_t)b < unit ? unit : (size_t)b / unit * unit;
            if (c->alloc_each) {
                buffers(rank, bytes, &s, &r);
            }
            run_cell(c, rank, c->ops[k], bytes, comm, st, s, r, ev);
            if (c->alloc_each) {
                cudaFree(s);
                cudaFree(r);
                s = r = NULL;
            }
            if (c->factor <= 1) {
                break;
            }
        }
    }
    NCCL_OK(rank, ncclCommFinalize(comm));
    NCCL_OK(rank, ncclCommDestroy(comm));
    for (int i = 0; i <= c->iters; i++) {
        cudaEventDestroy(ev[i]);
    }
    free(ev);
    cudaFree(s);
    cudaFree(r);
    cudaStreamDestroy(st);
    return 0;
}

static int parse_ops(const char *list, cfg_t *c)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", list);
    c->nops = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int k = 0; k < MAX_OPS; k++) {
            found = strcmp(t, op_names[k]) == 0 ? k : found;
        }
        if (found < 0 || c->nops == MAX_OPS) {
            fprintf(stderr,
                    "nccl_loop: unknown op '%s' (allreduce, allgather, reducescatter, "
                    "broadcast, sendrecv)\n",
                    t);
            return -1;
        }
        c->ops[c->nops++] = found;
    }
    return c->nops > 0 ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nccl_loop [-g GPUS] [-o allreduce,allgather,reducescatter,broadcast,"
               "sendrecv]\n"
               "                 [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS] [-w WARMUP]\n"
               "                 [-a once|each]\n");
}

static int parse_args(int argc, char **argv, cfg_t *c)
{
    long long v = 0;
    int opt;
    *c = (cfg_t){.g = 1, .iters = 50, .warmup = 10, .minb = 8, .maxb = 256LL << 20, .factor = 2};
    if (parse_ops("allreduce", c) != 0) {
        return 2;
    }
    while ((opt = getopt(argc, argv, "g:o:b:e:f:n:w:a:h")) != -1) {
        int bad = optarg != NULL && opt != 'o' && opt != 'a' && bench_parse_count(optarg, &v) != 0;
        switch (bad ? '?' : opt) {
        case 'g': c->g = (int)v; break;
        case 'o':
            if (parse_ops(optarg, c) != 0) {
                return 2;
            }
            break;
        case 'b': c->minb = v; break;
        case 'e': c->maxb = v; break;
        case 'f': c->factor = v; break;
        case 'n': c->iters = (int)v; break;
        case 'w': c->warmup = (int)v; break;
        case 'a':
            if (strcmp(optarg, "once") != 0 && strcmp(optarg, "each") != 0) {
                fprintf(stderr, "nccl_loop: -a: '%s' is not once or each\n", optarg);
                return 2;
            }
            c->alloc_each = optarg[0] == 'e';
            break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || c->g < 1 || c->g > MAX_RANKS || c->iters < 1 || c->iters > MAX_ITERS ||
        c->minb > c->maxb || c->factor < 1) {
        usage(stderr);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cfg_t c;
    pid_t pids[MAX_RANKS];
    int rc = parse_args(argc, argv, &c);
    if (rc != 0) {
        return rc;
    }
    /* before any CUDA call: every rank is a fresh child */
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        perror("nccl_loop: mmap");
        return 1;
    }
    for (int r = 0; r < c.g; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            _exit(rank_main(&c, r));
        }
        if (pids[r] < 0) {
            perror("nccl_loop: fork");
            return 1;
        }
    }
    /* a rank that fails leaves the others waiting for it: stop them */
    for (int left = c.g; left > 0; left--) {
        int st = 0;
        pid_t p = wait(&st);
        if (p < 0) {
            break;
        }
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "nccl_loop: rank process %d failed (status 0x%x)\n", (int)p, st);
            for (int r = 0; r < c.g && rc == 0; r++) {
                if (pids[r] != p) {
                    kill(pids[r], SIGTERM);
                }
            }
            rc = 1;
        }
    }
    return rc;
}
