/*
 * The NCCL plugin driven by the core's own cell driver (cp_run_cell, over
 * the shared-memory channel of oob_shm.h) on 3 forked ranks, against the
 * CUDA/NCCL stand-in of tests/nccl_mock (no GPU): mem_alloc(DEVICE), fill
 * on the host, mem_copy in, run_batch (warm-up and timed), fresh inputs,
 * run, mem_copy back, exact check.  What describe() tells the core, and the
 * device copy rate (copy_rate) it sets beside device cells' busBW.  Every
 * operation in and out of place, non-zero root,
 * variants default/graph/reg+graph/p2p/ring-ll/tree-ll, refused forced
 * algorithms, communicator eviction (nccl-max-comms=2), environment restore,
 * the init failures (nothing there: no GPU, no driver, a driver too old; or
 * a driver or a device that fails) and a timeout that aborts the communicator;
 * post() and wait() (sends and recvs held and launched as one group, a
 * collective posted behind them, waits out of order); compute() (the busy kernel loaded once,
 * one launch per gap).  The
 * stand-in refuses as NCCL 2.28 does (at once on blocking communicators,
 * later and sticky on non-blocking ones), so the tests also check that a
 * refused probe leaves the variant's other operations working, on blocking
 * and non-blocking communicators, and that nothing sleeps while operations
 * run.
 */
#include "config.h"

#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <collprof/plugin.h>

#include "colls/colls.h"
#include "colls/data.h"
#include "colls/imbalance.h"
#include "runner/runner.h"
#include "base/util.h"
#include "oob_shm.h"
#include "tap.h"

#define NR       3
#define MAX_RECS 1024

typedef struct rec {
    int ok;
    char what[200];
} rec_t;

typedef struct shared {
    int nrec[NR];
    rec_t recs[NR][MAX_RECS];
} shared_t;

static shared_t *sh;
static int my_rank;
static const char *opt_timeout = "30";
static const char *opt_blocking; /* NULL: the plugin's default */
static collprof_host_t host;     /* what the plugin holds from init to finalize */

static const char *get_option(const char *key)
{
    if (!strcmp(key, "timeout")) {
        return opt_timeout;
    }
    if (!strcmp(key, "nccl-max-comms")) {
        return "2";
    }
    if (!strcmp(key, "nccl-blocking")) {
        return opt_blocking;
    }
    return NULL;
}

static int saw_profiler_note; /* the plugin said NCCL_PROFILER_PLUGIN names another plugin */

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    saw_profiler_note |= level == COLLPROF_LOG_WARN && strstr(fmt, "one profiler plugin") != NULL;
    if (getenv("CPMOCK_VERBOSE") == NULL && level > COLLPROF_LOG_WARN) {
        return;
    }
    va_start(ap, fmt);
    fprintf(stderr, "# [rank %d] ", my_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

__attribute__((format(printf, 2, 3))) static void check(int cond, const char *fmt, ...)
{
    int k = sh->nrec[my_rank];
    if (k >= MAX_RECS) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sh->recs[my_rank][k].what, sizeof(sh->recs[my_rank][k].what), fmt, ap);
    va_end(ap);
    sh->recs[my_rank][k].ok = cond;
    if (getenv("CPMOCK_TRACE") != NULL) {
        fprintf(stderr, "# [rank %d] %s %s\n", my_rank, cond ? "ok" : "NOT OK",
                sh->recs[my_rank][k].what);
    }
    sh->nrec[my_rank] = k + 1;
}

typedef struct cell {
    const char *variant;
    collprof_op_t op;
    collprof_dtype_t dtype;
    collprof_redop_t redop;
    int in_place;
} cell_t;

/* one cell through the core's own driver (cp_run_cell) on device memory; returns #wrong or -1 */
static long run_cell(cp_runner_t *r, const cell_t *c, collprof_cell_status_t *status, char *why,
                     size_t whylen)
{
    cp_imbalance_t imb;
    cp_result_t res;
    char err[256];
    cp_cell_t cell;
    memset(&cell, 0, sizeof(cell));
    snprintf(cell.variant, sizeof(cell.variant), "%s", c->variant);
    cell.op = c->op;
    cell.dtype = c->dtype;
    cell.redop = c->redop;
    cell.root = (cp_op_flags(c->op) & COLLPROF_OPF_ROOTED) ? 1 : 0;
    cell.in_place = c->in_place;
    cell.memtype = COLLPROF_MEM_DEVICE;
    cell.count = cell.requested = cp_coll_effective_count(c->op, 3000, NR);
    cell.iters = 3;
    cell.warmup = 2;
    if (c->op == COLLPROF_OP_ALLTOALLV) {
        cp_imbalance_parse(c->in_place ? "uniform" : "linear", &imb, err, sizeof(err));
        cell.imb = &imb;
    } else if (cp_op_flags(c->op) & COLLPROF_OPF_VARIABLE) {
        /* allgatherv, gatherv, scatterv: in place, rank 0's block is empty */
        cp_imbalance_parse(c->in_place ? "spread:1" : "moe:1:4", &imb, err, sizeof(err));
        cell.imb = &imb;
    }
    cp_run_cell(r, &cell, &res);
    *status = res.fig.status;
    snprintf(why, whylen, "%s", res.fig.reason);
    long wrong = -1;
    if (res.samples != NULL) { /* 3 timed iterations from run_batch, of every rank on rank 0 */
        int timed = res.srows == (r->boot->rank == 0 ? NR : 1);
        for (int k = 0; k < res.srows * 3; k++) {
            timed &= res.samples[k] >= 0;
        }
        wrong = timed ? (long)res.fig.wrong : -1;
        if (!timed) {
            snprintf(why, whylen, "run_batch left a sample unset");
        }
    }
    cp_result_free(&res);
    if (cell.imb != NULL) {
        cp_imbalance_free(&imb);
    }
    return wrong;
}

/* every op of every variant it applies to, in and out of place */
static void run_matrix(cp_runner_t *r)
{
    static const char *variants[] = {"default", "graph",   "reg+graph", "p2p",
                                     "p2p+reg", "ring-ll", "tree-ll",   "reg"};
    const collprof_caps_t *caps = &r->plugins[0].caps;
    int cells = 0, clean = 0;
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
            int found = !strcmp(variants[v], "default");
            for (size_t k = 0; k < caps->nvariants; k++) {
                found |= !strcmp(caps->variants[k].name, variants[v]) &&
                         (caps->variants[k].ops & COLLPROF_BIT(op));
            }
            for (int ip = 0; found && ip < 2 - (op == COLLPROF_OP_BARRIER); ip++) {
                cell_t c = {variants[v], (collprof_op_t)op, COLLPROF_DTYPE_FLOAT32,
                            COLLPROF_REDOP_SUM, ip};
                char why[512] = "";
                collprof_cell_status_t st;
                long w = run_cell(r, &c, &st, why, sizeof(why));
                cells++;
                clean += st == COLLPROF_CELL_OK && w == 0;
                check(st == COLLPROF_CELL_OK && w == 0, "%s %s %s: %s, #wrong %ld %s", c.variant,
                      collprof_op_name(c.op), ip ? "in place" : "out of place",
                      collprof_cell_status_name(st), w, why);
                check(getenv("NCCL_ALGO") == NULL && getenv("NCCL_PROTO") == NULL,
                      "%s %s: NCCL_ALGO/NCCL_PROTO restored", c.variant, collprof_op_name(c.op));
            }
        }
    }
    check(cells > 100 && clean == cells, "%d of %d cells exact", clean, cells);
}

/* other dtypes and reductions */
static void run_more(cp_runner_t *r)
{
    static const struct {
        collprof_op_t op;
        collprof_dtype_t dt;
        collprof_redop_t r;
    } more[] = {{COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_INT64, COLLPROF_REDOP_MAX},
                {COLLPROF_OP_REDUCESCATTER, COLLPROF_DTYPE_INT8, COLLPROF_REDOP_SUM},
                {COLLPROF_OP_REDUCE, COLLPROF_DTYPE_FLOAT64, COLLPROF_REDOP_MIN},
                {COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_UINT32, COLLPROF_REDOP_PROD},
                {COLLPROF_OP_ALLTOALLV, COLLPROF_DTYPE_UINT8, COLLPROF_REDOP_SUM},
                {COLLPROF_OP_ALLGATHERV, COLLPROF_DTYPE_FLOAT16, COLLPROF_REDOP_SUM},
                {COLLPROF_OP_GATHERV, COLLPROF_DTYPE_INT64, COLLPROF_REDOP_SUM},
                {COLLPROF_OP_SCATTERV, COLLPROF_DTYPE_BFLOAT16, COLLPROF_REDOP_SUM}};
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        for (int ip = 0; ip < 2; ip++) {
            cell_t c = {"default", more[i].op, more[i].dt, more[i].r, ip};
            char why[512] = "";
            collprof_cell_status_t st;
            long w = run_cell(r, &c, &st, why, sizeof(why));
            check(st == COLLPROF_CELL_OK && w == 0, "%s %s %s %s: #wrong %ld %s",
                  collprof_op_name(c.op), collprof_dtype_info(c.dtype)->name,
                  collprof_redop_name(c.redop), ip ? "in place" : "out", w, why);
        }
    }
}

/* forced algorithms the (mock) machine lacks: unsupported, agreed, cached */
static void check_refused(const collprof_backend_t *be, void *ctx)
{
    static const struct {
        const char *v;
        collprof_op_t op;
    } refused[] = {{"nvls-simple", COLLPROF_OP_ALLREDUCE},
                   {"pat-simple", COLLPROF_OP_ALLGATHER},
                   {"collnetdirect-simple+graph", COLLPROF_OP_REDUCESCATTER},
                   {"nvls-simple", COLLPROF_OP_ALLREDUCE}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        int rc = be->select_variant(ctx, refused[i].op, refused[i].v);
        check(rc == COLLPROF_ERR_NOT_SUPPORTED && (strstr(be->last_error(ctx), "NCCL has no") ||
                                                   strstr(be->last_error(ctx), "not available")),
              "%s for %s: unsupported (%s)", refused[i].v, collprof_op_name(refused[i].op),
              be->last_error(ctx));
        check(getenv("NCCL_ALGO") == NULL, "%s: NCCL_ALGO restored", refused[i].v);
    }
    check(be->select_variant(ctx, COLLPROF_OP_ALLTOALL, "tree-ll") == COLLPROF_ERR_NOT_SUPPORTED,
          "tree-ll does not apply to alltoall");
    int rc = be->select_variant(ctx, COLLPROF_OP_ALLGATHER, "collnetdirect-simple");
    check(rc == COLLPROF_ERR_NOT_SUPPORTED &&
              strstr(be->last_error(ctx), "no algorithm/protocol available") != NULL,
          "collnetdirect-simple for allgather: unsupported with NCCL's reason (%s)",
          be->last_error(ctx));
    check(be->select_variant(ctx, COLLPROF_OP_ALLREDUCE, "nosuch") == COLLPROF_ERR_NOT_SUPPORTED,
          "unknown variant refused");
}

/* a variant whose communicator was evicted meanwhile (2 kept) is re-created by run() itself */
static void check_evicted(const collprof_backend_t *be, void *ctx, void (*stats)(unsigned long *))
{
    unsigned long s[8], before;
    void *buf = NULL;
    size_t count = 64 * NR;
    stats(s);
    before = s[4];
    int rc = be->select_variant(ctx, COLLPROF_OP_ALLREDUCE, "ring-ll");
    rc |= be->select_variant(ctx, COLLPROF_OP_ALLGATHER, "ring-simple");
    rc |= be->select_variant(ctx, COLLPROF_OP_BROADCAST, "ring-ll128");
    check(rc == 0, "three variants selected for three ops");
    rc = be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, count * sizeof(float), &buf);
    collprof_args_t a = {.op = COLLPROF_OP_ALLREDUCE,
                         .dtype = COLLPROF_DTYPE_FLOAT32,
                         .redop = COLLPROF_REDOP_SUM,
                         .in_place = 1,
                         .memtype = COLLPROF_MEM_DEVICE,
                         .sendbuf = buf,
                         .recvbuf = buf,
                         .count = count};
    if (rc == COLLPROF_OK) {
        rc = be->run(ctx, &a);
        be->mem_free(ctx, COLLPROF_MEM_DEVICE, buf);
    }
    stats(s);
    check(rc == 0 && s[4] > before,
          "evicted ring-ll re-created for allreduce without a new selection (%d %s)", rc,
          rc ? be->last_error(ctx) : "");
    check(s[1] > 0, "graphs replayed (%lu launches)", s[1]);
    check(s[2] > 0 && s[2] == s[3], "every registration undone (%lu registered, %lu deregistered)",
          s[2], s[3]);
    check(s[4] >= 4, "communicators re-created after eviction (%lu inits with 2 kept)", s[4]);
#ifdef HAVE_NCCLMEMALLOC
    check(s[6] > 0 && s[6] == s[7], "+reg buffers from ncclMemAlloc, all freed (%lu, %lu)", s[6],
          s[7]);
#endif
}

/* the stand-in's CollNetDirect has allreduce only: refused elsewhere, exact there */
static void check_after_refusal(cp_runner_t *r, const char *mode)
{
    const collprof_backend_t *be = r->plugins[0].be;
    void *ctx = r->plugins[0].ctx;
    int rc = be->select_variant(ctx, COLLPROF_OP_REDUCESCATTER, "collnetdirect-simple");
    check(rc == COLLPROF_ERR_NOT_SUPPORTED && strstr(be->last_error(ctx), "NCCL has no"),
          "%s: collnetdirect-simple refused for reducescatter (%s)", mode, be->last_error(ctx));
    cell_t c = {"collnetdirect-simple", COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_FLOAT32,
                COLLPROF_REDOP_SUM, 0};
    char why[512] = "";
    collprof_cell_status_t st;
    long w = run_cell(r, &c, &st, why, sizeof(why));
    check(st == COLLPROF_CELL_OK && w == 0,
          "%s: after the refusal, collnetdirect-simple allreduce runs exact (%s %ld %s)", mode,
          collprof_cell_status_name(st), w, why);
    c.variant = "default";
    w = run_cell(r, &c, &st, why, sizeof(why));
    check(st == COLLPROF_CELL_OK && w == 0, "%s: default allreduce still exact (%s %ld %s)", mode,
          collprof_cell_status_name(st), w, why);
}

/* non-blocking communicators: refusals arrive late and stick; nothing sleeps in operations */
static void check_nonblocking(cp_runner_t *r, void (*stats)(unsigned long *))
{
    cp_plugin_t *p = &r->plugins[0];
    const collprof_backend_t *be = p->be;
    unsigned long s0[8], s1[8];
    check(be->finalize(p->ctx) == COLLPROF_OK, "finalize");
    p->ctx = NULL;
    opt_blocking = "0";
    int rc = be->init(&host, &p->ctx);
    opt_blocking = NULL;
    check(rc == COLLPROF_OK, "init with nccl-blocking=0 (%s)", rc ? be->last_error(NULL) : "ok");
    if (rc != COLLPROF_OK) {
        return;
    }
    rc = be->select_variant(p->ctx, COLLPROF_OP_ALLREDUCE, "nvls-simple");
    check(rc == COLLPROF_ERR_NOT_SUPPORTED && strstr(be->last_error(p->ctx), "NCCL has no"),
          "non-blocking: nvls-simple refused for allreduce (%s)", be->last_error(p->ctx));
    check(getenv("NCCL_ALGO") == NULL, "non-blocking: NCCL_ALGO restored after the probe");
    check_after_refusal(r, "non-blocking");
    stats(s0);
    cell_t c = {"ring-simple", COLLPROF_OP_ALLGATHER, COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_SUM,
                1};
    char why[512] = "";
    collprof_cell_status_t st;
    long w = run_cell(r, &c, &st, why, sizeof(why));
    stats(s1);
    check(st == COLLPROF_CELL_OK && w == 0, "non-blocking: ring-simple allgather exact (%s %ld %s)",
          collprof_cell_status_name(st), w, why);
    check(s1[5] == s0[5], "non-blocking: no sleep while operations ran (%lu naps)", s1[5] - s0[5]);
}

/* a hang: timeout, communicator aborted, the next call fails fast */
static void check_hang(cp_runner_t *r, void (*hang)(int))
{
    cp_plugin_t *p = &r->plugins[0];
    const collprof_backend_t *be = p->be;
    opt_timeout = "1";
    check(be->finalize(p->ctx) == COLLPROF_OK, "finalize");
    p->ctx = NULL;
    int rc = be->init(&host, &p->ctx);
    check(rc == COLLPROF_OK, "init again with timeout=1");
    if (rc != COLLPROF_OK) {
        return;
    }
    cell_t c = {"default", COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_SUM, 0};
    char why[512] = "";
    collprof_cell_status_t st;
    hang(2); /* the 2nd operation from now never completes, on every rank */
    run_cell(r, &c, &st, why, sizeof(why));
    check(st == COLLPROF_CELL_ERROR && strstr(why, "did not complete within 1 s") &&
              strstr(why, "aborted"),
          "hang: timeout, communicator aborted (%s: %s)", collprof_cell_status_name(st), why);
    collprof_args_t a = {.op = COLLPROF_OP_ALLREDUCE,
                         .dtype = COLLPROF_DTYPE_FLOAT32,
                         .memtype = COLLPROF_MEM_DEVICE};
    rc = be->run(p->ctx, &a);
    check(rc == COLLPROF_ERR_BACKEND && strstr(be->last_error(p->ctx), "aborted"),
          "after the abort, without a new selection: fails at once (%d: %s)", rc,
          be->last_error(p->ctx));
    why[0] = '\0';
    long w = run_cell(r, &c, &st, why, sizeof(why));
    check(st == COLLPROF_CELL_OK && w == 0,
          "the next cell selects the variant again: a fresh communicator (%s %ld %s)",
          collprof_cell_status_name(st), w, why);
    be->finalize(p->ctx);
}

/* what the core records for nccl cells: CUDA events, cudaMalloc, this rank's GPU */
static void check_describe(const collprof_backend_t *be, void *ctx)
{
    collprof_provenance_t pv;
    char dev[64];
    memset(&pv, 0, sizeof(pv));
    pv.size = sizeof(pv);
    int rc = be->describe(ctx, COLLPROF_MEM_DEVICE, &pv);
    snprintf(dev, sizeof(dev), "cuda:%d mock GPU %d (0000:00:00.0)", my_rank, my_rank);
    check(rc == COLLPROF_OK && !strcmp(pv.timer, "cudaEventElapsedTime") &&
              !strncmp(pv.memory, "cudaMalloc", 10) && !strcmp(pv.device, dev),
          "describe(device): timer %s, memory %s, device %s", pv.timer, pv.memory, pv.device);
    memset(&pv, 0, sizeof(pv));
    pv.size = sizeof(pv);
    check(be->describe(ctx, COLLPROF_MEM_HOST, &pv) == COLLPROF_ERR_NOT_SUPPORTED &&
              pv.timer[0] == '\0' && pv.memory[0] == '\0',
          "describe(host): not supported, nothing claimed");
}

/* the device copy rate (the optional copy_rate slot): device to device on the stream,
 * timed by events; host memory has none */
static void check_copy_rate(const collprof_backend_t *be, void *ctx, void (*d2d)(unsigned long *))
{
    unsigned long before[2] = {0, 0}, after[2] = {0, 0};
    double gbs = -1;
    check(COLLPROF_BACKEND_HAS(be, copy_rate), "the plugin has the copy_rate slot");
    if (!COLLPROF_BACKEND_HAS(be, copy_rate) || d2d == NULL) {
        return;
    }
    d2d(before);
    int rc = be->copy_rate(ctx, COLLPROF_MEM_DEVICE, 1 << 20, &gbs);
    d2d(after);
    unsigned long n = after[0] - before[0];
    check(rc == COLLPROF_OK && gbs > 0 && isfinite(gbs), "copy_rate(device, 1 MiB): %.2f GB/s (%s)",
          gbs, rc ? be->last_error(ctx) : "ok");
    check(n >= 8 && after[1] - before[1] == n << 20,
          "copy_rate: a warm-up copy and 7 timed batches of device-to-device copies (%lu)", n);
    gbs = -1;
    check(be->copy_rate(ctx, COLLPROF_MEM_HOST, 1 << 20, &gbs) == COLLPROF_ERR_NOT_SUPPORTED &&
              gbs == -1,
          "copy_rate(host): not supported, no rate written");
    check(be->copy_rate(ctx, COLLPROF_MEM_DEVICE, 0, &gbs) == COLLPROF_ERR_INVALID && gbs == -1,
          "copy_rate(device, 0 B): refused");
    setenv("CPMOCK_DEVICE_BYTES", "65536", 1); /* a "device" too small for 1 MiB buffers */
    int rc2 = be->copy_rate(ctx, COLLPROF_MEM_DEVICE, 1 << 20, &gbs);
    unsetenv("CPMOCK_DEVICE_BYTES");
    check(rc2 != COLLPROF_OK && gbs == -1 &&
              strstr(be->last_error(ctx), "cudaMalloc (device copy rate) failed") != NULL,
          "copy_rate: buffers that do not fit fail with no rate (%s)", be->last_error(ctx));
}

/* the device compute (the optional compute slot, collprof --replay --gaps compute): set up once
 * (the busy kernel's PTX loaded, an empty launch timed 5 times and one of 1 ms), then one launch
 * per gap, back after about the gap */
static void check_compute(const collprof_backend_t *be, void *ctx, void (*kern)(unsigned long *))
{
    unsigned long a[2] = {0, 0}, b[2] = {0, 0}, c[2] = {0, 0};
    const char *how = NULL;
    check(COLLPROF_BACKEND_HAS(be, compute) && kern != NULL, "the plugin has the compute slot");
    if (!COLLPROF_BACKEND_HAS(be, compute) || kern == NULL) {
        return;
    }
    kern(a);
    int rc = be->compute(ctx, 0, &how);
    kern(b);
    check(rc == COLLPROF_OK && how != NULL && !strcmp(how, "busy kernel") && b[0] - a[0] == 1 &&
              b[1] - a[1] == 6,
          "compute(0): the kernel loaded once and timed by 6 launches (%lu, %lu): %s", b[0] - a[0],
          b[1] - a[1], rc ? be->last_error(ctx) : how);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = be->compute(ctx, 5000, &how);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    kern(c);
    double us = (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3;
    /* the kernel is asked for 5000 us less the empty launch's round trip timed at set-up: that
     * round trip on the stand-in (a thread's nanosleep) was 550 us once under the sanitizers,
     * the call 4449 us: 4000 us at least says the gap was filled */
    check(rc == COLLPROF_OK && c[0] == b[0] && c[1] - b[1] == 1 && us >= 4000 && us < 50000,
          "compute(5000 us): one launch, no new load, back after %.0f us (%lu launches)", us,
          c[1] - b[1]);
}

/*
 * One init on every rank with env=val set on rank who alone: it fails on
 * every rank (nobody hangs) with status want and a message that says
 * (at its start when nothing is there: that message names its rank itself).
 */
static void init_fails(const collprof_backend_t *be, int who, const char *env, const char *val,
                       int want, const char *says)
{
    void *ctx = NULL;
    if (my_rank == who) {
        setenv(env, val, 1);
    }
    int rc = be->init(&host, &ctx);
    unsetenv(env);
    const char *msg = be->last_error(NULL);
    int said = want == COLLPROF_ERR_NO_DEVICE ? strncmp(msg, says, strlen(says)) == 0
                                              : strstr(msg, says) != NULL;
    check(rc == want && ctx == NULL && said,
          "%s=%s on rank %d: init fails on every rank with %s (got %s): %s", env, val, who,
          collprof_status_string(want), collprof_status_string(rc), msg);
}

/* init fails on every rank when one has no GPU (a note), or a GPU that fails (an error); then a
 * real init; 0 when it worked */
static int init_all(const collprof_backend_t *be, void **ctx)
{
    int dmaj = 0, dmin = 0, rmaj = 0, rmin = 0;
    init_fails(be, 2, "CPMOCK_NO_GPU", "1", COLLPROF_ERR_NO_DEVICE,
               "GPU driver too old on rank 2: driver supports CUDA ");
    check(sscanf(be->last_error(NULL),
                 "GPU driver too old on rank 2: driver supports CUDA %d.%d, "
                 "runtime is %d.%d",
                 &dmaj, &dmin, &rmaj, &rmin) == 4 &&
              dmaj == rmaj - 1 && dmin == 2 && rmaj >= 12,
          "a driver too old: both versions said, the stand-in's x.2 under the runtime's x+1 (%s)",
          be->last_error(NULL));
    init_fails(be, 1, "CPMOCK_NO_GPU", "nodriver", COLLPROF_ERR_NO_DEVICE,
               "no GPU driver on rank 1: ");
    init_fails(be, 0, "CPMOCK_NO_GPU", "stub", COLLPROF_ERR_NO_DEVICE,
               "no GPU driver on rank 0: libcuda.so.1 is CUDA's stub, not a driver");
    init_fails(be, 2, "CPMOCK_NO_GPU", "nodev", COLLPROF_ERR_NO_DEVICE,
               "no GPU on rank 2: no CUDA device found");
    init_fails(be, 1, "CPMOCK_NO_GPU", "zero", COLLPROF_ERR_NO_DEVICE,
               "no GPU on rank 1: no CUDA device found");
    /* a driver or a device that is there and fails: an error, never "no device" */
    init_fails(be, 2, "CPMOCK_NO_GPU", "broken", COLLPROF_ERR_BACKEND,
               "cudaGetDeviceCount failed: ");
    init_fails(be, 1, "CPMOCK_SETDEVICE_FAIL", "1", COLLPROF_ERR_BACKEND, "cudaSetDevice failed: ");
    unsetenv("NCCL_SOCKET_IFNAME");
    int rc = be->init(&host, ctx);
    check(rc == COLLPROF_OK && *ctx != NULL, "init (%s)", rc ? be->last_error(NULL) : "ok");
    if (rc != COLLPROF_OK) {
        return -1;
    }
    check(getenv("NCCL_SOCKET_IFNAME") && !strcmp(getenv("NCCL_SOCKET_IFNAME"), "lo"),
          "one node: NCCL_SOCKET_IFNAME=lo");
    void *p = NULL;
    check(be->mem_alloc(*ctx, COLLPROF_MEM_HOST, 64, &p) == COLLPROF_ERR_NOT_SUPPORTED && !p,
          "host memory refused");
    check_describe(be, *ctx);
    return 0;
}

/* fill n floats of a device buffer with v + step * i (through a host copy) */
static int fill_dev(const collprof_backend_t *be, void *ctx, void *dev, size_t n, float v,
                    float step)
{
    float h[256];
    for (size_t i = 0; i < n && i < 256; i++) {
        h[i] = v + step * (float)i;
    }
    return be->mem_copy(ctx, COLLPROF_MEM_DEVICE, dev, h, n * sizeof(float), 1);
}

/* are the n floats of a device buffer v + step * i? */
static int dev_is(const collprof_backend_t *be, void *ctx, const void *dev, size_t n, float v,
                  float step)
{
    float h[256];
    if (be->mem_copy(ctx, COLLPROF_MEM_DEVICE, h, dev, n * sizeof(float), 0) != 0) {
        return 0;
    }
    for (size_t i = 0; i < n && i < 256; i++) {
        if (h[i] != v + step * (float)i) {
            return 0;
        }
    }
    return 1;
}

/*
 * group() around a coalesced call (collprof --replay): an allreduce, a send and a recv, an
 * allgather posted between group(1) and group(0) run as one ncclGroupEnd of 4 ops; exact.
 */
static void check_post_group(const collprof_backend_t *be, void *ctx, void *const *b,
                             const collprof_args_t *send, const collprof_args_t *recv,
                             const collprof_args_t *ar, void (*groups)(unsigned long *))
{
    int prev = (my_rank + NR - 1) % NR;
    unsigned long g0[2], g1[2];
    void *req[4] = {NULL, NULL, NULL, NULL};
    collprof_args_t ag = *ar;
    ag.op = COLLPROF_OP_ALLGATHER;
    ag.sendbuf = b[0];
    ag.recvbuf = b[4];
    ag.count = 16 * NR;
    if (groups == NULL || !COLLPROF_BACKEND_HAS(be, group)) {
        check(0, "group: the plugin has the slot, the stand-in counts group ends");
        return;
    }
    groups(g0);
    int rc = fill_dev(be, ctx, b[1], 64, -1.0f, 0.0f);
    rc = rc ? rc : fill_dev(be, ctx, b[3], 64, -1.0f, 0.0f);
    rc = rc ? rc : fill_dev(be, ctx, b[4], 64, -1.0f, 0.0f);
    rc = rc ? rc : be->group(ctx, 1);
    rc = rc ? rc : be->post(ctx, ar, &req[0]);
    rc = rc ? rc : be->post(ctx, send, &req[1]);
    rc = rc ? rc : be->post(ctx, recv, &req[2]);
    rc = rc ? rc : be->post(ctx, &ag, &req[3]);
    groups(g1);
    int held = g1[0] == g0[0];
    rc = rc ? rc : be->group(ctx, 0);
    groups(g1);
    for (int k = 0; rc == 0 && k < 4; k++) {
        rc = be->wait(ctx, req[k]);
    }
    check(rc == 0 && held && g1[0] == g0[0] + 1 && g1[1] >= 4 &&
              dev_is(be, ctx, b[1], 64, 100.0f * (float)prev, 1.0f) &&
              dev_is(be, ctx, b[3], 64, (float)(NR * (NR - 1) / 2), (float)NR),
          "group: an allreduce, a send, a recv and an allgather held to the call's end, then one "
          "group of %lu ops (%d, %lu group ends, %d %s)",
          g1[1], held, g1[0] - g0[0], rc, rc ? be->last_error(ctx) : "");
    float h[16 * NR];
    rc = be->mem_copy(ctx, COLLPROF_MEM_DEVICE, h, b[4], sizeof(h), 0);
    int good = rc == 0;
    for (int q = 0; q < NR; q++) {
        for (int i = 0; i < 16; i++) {
            good &= h[q * 16 + i] == 100.0f * (float)q + (float)i;
        }
    }
    check(good, "group: the allgather of the call exact");
}

/*
 * post() and wait() (ABI 2.3, collprof --replay): a ring of sends and recvs posted recv first,
 * then an allreduce posted behind them (which launches the held sends and recvs as one group),
 * the three waited in the opposite order; the data checked after the waits.  A second ring
 * waited on its recv first.  What post refuses.
 */
static void check_post(const collprof_backend_t *be, void *ctx, const collprof_caps_t *caps,
                       void (*groups)(unsigned long *))
{
    enum { N = 64 };
    int next = (my_rank + 1) % NR, prev = (my_rank + NR - 1) % NR;
    void *b[5] = {NULL, NULL, NULL, NULL, NULL}, *req[3] = {NULL, NULL, NULL};
    check(COLLPROF_BACKEND_HAS(be, post) && COLLPROF_BACKEND_HAS(be, wait) &&
              (caps->post_ops & COLLPROF_BIT(COLLPROF_OP_SENDRECV)) &&
              (caps->post_ops & COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)) &&
              !(caps->post_ops & COLLPROF_BIT(COLLPROF_OP_IALLREDUCE)),
          "post/wait: send, recv and the blocking collectives (post_ops 0x%x)", caps->post_ops);
    int rc = 0;
    for (int k = 0; k < 5; k++) {
        rc |= be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, N * sizeof(float), &b[k]);
    }
    rc |= fill_dev(be, ctx, b[0], N, 100.0f * (float)my_rank, 1.0f);
    rc |= fill_dev(be, ctx, b[1], N, -1.0f, 0.0f);
    rc |= fill_dev(be, ctx, b[2], N, (float)my_rank, 1.0f); /* summed: 0+1+2 + NR * i */
    collprof_args_t recv = {.op = COLLPROF_OP_SENDRECV,
                            .dtype = COLLPROF_DTYPE_FLOAT32,
                            .memtype = COLLPROF_MEM_DEVICE,
                            .recvbuf = b[1],
                            .count = N,
                            .peer_send = -1,
                            .peer_recv = prev};
    collprof_args_t send = recv;
    send.sendbuf = b[0];
    send.recvbuf = NULL;
    send.peer_send = next;
    send.peer_recv = -1;
    collprof_args_t ar = {.op = COLLPROF_OP_ALLREDUCE,
                          .dtype = COLLPROF_DTYPE_FLOAT32,
                          .redop = COLLPROF_REDOP_SUM,
                          .memtype = COLLPROF_MEM_DEVICE,
                          .sendbuf = b[2],
                          .recvbuf = b[3],
                          .count = N};
    rc = rc ? rc : be->post(ctx, &recv, &req[0]);
    rc = rc ? rc : be->post(ctx, &send, &req[1]);
    rc = rc ? rc : be->post(ctx, &ar, &req[2]);
    for (int k = 2; rc == 0 && k >= 0; k--) {
        rc = be->wait(ctx, req[k]);
    }
    check(rc == 0 && dev_is(be, ctx, b[1], N, 100.0f * (float)prev, 1.0f) &&
              dev_is(be, ctx, b[3], N, (float)(NR * (NR - 1) / 2), (float)NR),
          "post: recv and send in a ring, an allreduce behind them, waited in the opposite order: "
          "exact (%d %s)",
          rc, rc ? be->last_error(ctx) : "");
    rc = fill_dev(be, ctx, b[1], N, -1.0f, 0.0f);
    rc = rc ? rc : be->post(ctx, &send, &req[1]);
    rc = rc ? rc : be->post(ctx, &recv, &req[0]);
    rc = rc ? rc : be->wait(ctx, req[0]);
    rc = rc ? rc : be->wait(ctx, req[1]);
    check(rc == 0 && dev_is(be, ctx, b[1], N, 100.0f * (float)prev, 1.0f),
          "post: send then recv, the recv waited first: one group, exact (%d %s)", rc,
          rc ? be->last_error(ctx) : "");
    check_post_group(be, ctx, b, &send, &recv, &ar, groups);
    collprof_args_t bad = recv;
    bad.peer_send = next;
    check(be->post(ctx, &bad, &req[0]) == COLLPROF_ERR_INVALID, "post: a send and a recv at once "
                                                                "refused");
    bad = recv;
    bad.memtype = COLLPROF_MEM_HOST;
    check(be->post(ctx, &bad, &req[0]) == COLLPROF_ERR_NOT_SUPPORTED, "post: host memory refused");
    bad = ar;
    bad.op = COLLPROF_OP_IALLREDUCE;
    check(be->post(ctx, &bad, &req[0]) == COLLPROF_ERR_NOT_SUPPORTED, "post: iallreduce refused");
    for (int k = 0; k < 5; k++) {
        if (b[k] != NULL) {
            be->mem_free(ctx, COLLPROF_MEM_DEVICE, b[k]);
        }
    }
}

/*
 * A reducescatter of per-rank blocks (caps->var_ops, collprof --replay's reduce-scatter of
 * unequal blocks): blocks 4, 8, 4, rank c's block at the sum of those before it; an
 * ncclReduce of each to its owner in one ncclGroupEnd; run, then posted; exact.
 */
static void check_rsv(const collprof_backend_t *be, void *ctx, const collprof_caps_t *caps,
                      void (*groups)(unsigned long *))
{
    size_t cnt[NR], dsp[NR], total = 0;
    for (int c = 0; c < NR; c++) {
        cnt[c] = c == 1 ? 8 : 4; /* unequal: 4, 8, 4 */
        dsp[c] = total;
        total += cnt[c];
    }
    void *b[2] = {NULL, NULL}, *req = NULL;
    unsigned long g0[2] = {0, 0}, g1[2] = {0, 0};
    check(COLLPROF_CAPS_HAS(caps, var_ops) &&
              (caps->var_ops & COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER)) && groups != NULL,
          "var_ops: a reducescatter of per-rank blocks (0x%x)", caps->var_ops);
    int rc = be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, total * sizeof(float), &b[0]);
    rc |= be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, total * sizeof(float), &b[1]);
    collprof_args_t a = {.op = COLLPROF_OP_REDUCESCATTER,
                         .dtype = COLLPROF_DTYPE_FLOAT32,
                         .redop = COLLPROF_REDOP_SUM,
                         .memtype = COLLPROF_MEM_DEVICE,
                         .sendbuf = b[0],
                         .recvbuf = b[1],
                         .count = total,
                         .recvcounts = cnt,
                         .rdispls = dsp};
    /* element i of the sum: 0 + 1 + 2 + NR x i; this rank's block from dsp[me] on */
    float want = (float)(NR * (NR - 1) / 2) + (float)NR * (float)dsp[my_rank];
    for (int k = 0; k < 2; k++) {
        rc = rc ? rc : fill_dev(be, ctx, b[0], total, (float)my_rank, 1.0f);
        rc = rc ? rc : fill_dev(be, ctx, b[1], total, -1.0f, 0.0f);
        if (groups != NULL) {
            groups(g0);
        }
        if (k == 0) {
            rc = rc ? rc : be->run(ctx, &a);
        } else {
            rc = rc ? rc : be->post(ctx, &a, &req);
            rc = rc ? rc : be->wait(ctx, req);
        }
        if (groups != NULL) {
            groups(g1);
        }
        check(rc == 0 && dev_is(be, ctx, b[1], cnt[my_rank], want, (float)NR) &&
                  g1[0] == g0[0] + 1 && g1[1] >= NR,
              "%s: a reducescatter of blocks 4, 8, 4: one group of a reduce per block, exact "
              "(%d %s, %lu group ends)",
              k == 0 ? "run" : "post", rc, rc ? be->last_error(ctx) : "", g1[0] - g0[0]);
    }
    for (int k = 0; k < 2; k++) {
        if (b[k] != NULL) {
            be->mem_free(ctx, COLLPROF_MEM_DEVICE, b[k]);
        }
    }
}

static void rank_main(const char *path)
{
    static char hosts[NR][256] = {"h0", "h1", "h2"};
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const collprof_backend_t *be = h ? dlsym(h, COLLPROF_BACKEND_SYMBOL) : NULL;
    void (*stats)(unsigned long *) = h ? (void (*)(unsigned long *))dlsym(h, "cpmock_stats") : NULL;
    void (*hang)(int) = h ? (void (*)(int))dlsym(h, "cpmock_hang_after") : NULL;
    check(be != NULL && stats != NULL && hang != NULL, "mock plugin loads (%s)",
          be ? path : dlerror());
    if (be == NULL || stats == NULL || hang == NULL) {
        return;
    }
    cp_plugin_t p;
    memset(&p, 0, sizeof(p));
    snprintf(p.name, sizeof(p.name), "%s", be->name);
    p.be = be;
    p.caps.size = sizeof(p.caps);
    check(be->query(NULL, &p.caps) == 0 && p.caps.memtypes == COLLPROF_BIT(COLLPROF_MEM_DEVICE) &&
              (be->flags & COLLPROF_BACKEND_DEVICE_TIMER),
          "query: device memory, device timer");
    host = oob_shm_host(host_log, get_option);
    if (init_all(be, &p.ctx) != 0) {
        return;
    }
    check(saw_profiler_note == (my_rank == 0),
          "COLLPROF_TRACE_DIR with NCCL_PROFILER_PLUGIN naming another plugin: one warning (rank "
          "0) that collprof's NCCL profiler records nothing");
    /* before the cells, as the core measures it; the cells then run on the same stream */
    check_copy_rate(be, p.ctx, (void (*)(unsigned long *))dlsym(h, "cpmock_d2d"));
    check_post(be, p.ctx, &p.caps, (void (*)(unsigned long *))dlsym(h, "cpmock_groups"));
    check_rsv(be, p.ctx, &p.caps, (void (*)(unsigned long *))dlsym(h, "cpmock_groups"));
    check_compute(be, p.ctx, (void (*)(unsigned long *))dlsym(h, "cpmock_kernels"));
    oob_shm_runner_t k;
    oob_shm_runner(&k, &p, hosts);
    run_matrix(&k.r);
    run_more(&k.r);
    check_refused(be, p.ctx);
    check_after_refusal(&k.r, "blocking");
    check_evicted(be, p.ctx, stats);
    check_nonblocking(&k.r, stats);
    check_hang(&k.r, hang);
}

static int rank_entry(int rank, void *path)
{
    my_rank = rank;
    rank_main(path);
    return 0;
}

int main(void)
{
    const char *path = getenv("CP_NCCL_MOCK_PLUGIN");
    if (path == NULL) {
        path = CP_NCCL_MOCK_PLUGIN;
    }
    if (access(path, R_OK) != 0) {
        printf("1..0 # SKIP %s not built\n", path);
        return 0; /* "1..0 # SKIP": the TAP driver counts it as skipped */
    }
    cp_env_reserve(); /* as collprof does: variants swap their environment in and out */
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || oob_shm_create(NR) != 0) {
        perror("mmap");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
    setenv("COLLPROF_TRACE_DIR", "/nonexistent/cp-trace", 1); /* a recording asked for... */
    setenv("NCCL_PROFILER_PLUGIN", "inspector", 1);           /* ...and another plugin named */
    int st[NR];
    oob_shm_fork(rank_entry, (void *)path, 240, st);
    for (int r = 0; r < NR; r++) {
        ok(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0, "rank %d exited cleanly (status 0x%x)", r,
           st[r]);
    }
    for (int k = 0; k < sh->nrec[0]; k++) {
        ok(sh->recs[0][k].ok, "%s", sh->recs[0][k].what);
    }
    for (int r = 1; r < NR; r++) {
        int bad = 0;
        for (int k = 0; k < sh->nrec[r]; k++) {
            if (!sh->recs[r][k].ok) {
                printf("# rank %d: %s\n", r, sh->recs[r][k].what);
                bad++;
            }
        }
        ok(bad == 0 && sh->nrec[r] > 10, "rank %d: %d checks, %d failed", r, sh->nrec[r], bad);
    }
    return tap_done();
}
