/*
 * The NCCL plugin driven the way the core drives a device backend, on 3
 * forked ranks, against the CUDA/NCCL stand-in of tests/nccl_mock (no GPU):
 * mem_alloc(DEVICE), fill on the host, mem_copy in, run_batch (warm-up and
 * timed), fresh inputs, run, mem_copy back, exact check with the core's own
 * fill/check code.  Every operation in and out of place, non-zero root,
 * variants default/graph/reg+graph/p2p/ring-ll/tree-ll, refused forced
 * algorithms, communicator eviction (nccl-max-comms=2), environment restore,
 * the no-GPU init failure and a timeout that aborts the communicator.
 */
#include "config.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <collprof/plugin.h>

#include "colls/colls.h"
#include "core/data.h"
#include "core/imbalance.h"
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

static const char *get_option(const char *key)
{
    if (!strcmp(key, "timeout")) {
        return opt_timeout;
    }
    if (!strcmp(key, "nccl-max-comms")) {
        return "2";
    }
    return NULL;
}

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
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
    int no_select; /* run on the variant selected earlier (the core always selects) */
} cell_t;

/* one cell as the core runs it on device memory; returns #wrong or -1 */
static long run_cell(const collprof_backend_t *be, void *ctx, const cell_t *c, int *status,
                     char *why, size_t whylen)
{
    const cp_coll_t *coll = cp_coll_get(c->op);
    const collprof_dtype_info_t *dt = collprof_dtype_info(c->dtype);
    cp_a2av_t a2av;
    cp_imbalance_t imb;
    char err[256];
    uint64_t count = cp_coll_effective_count(c->op, 3000, NR);
    memset(&a2av, 0, sizeof(a2av));
    cp_xfer_t x = {.op = c->op,
                   .dtype = c->dtype,
                   .redop = c->redop,
                   .root = 1,
                   .in_place = c->in_place,
                   .rank = my_rank,
                   .n = NR,
                   .count = count,
                   .a2av = NULL};
    if (c->op == COLLPROF_OP_ALLTOALLV) {
        uint64_t *m = calloc(NR * NR, sizeof(uint64_t));
        cp_imbalance_parse(c->in_place ? "uniform" : "linear", &imb, err, sizeof(err));
        cp_imbalance_matrix(&imb, NR, count, m);
        cp_a2av_build(&a2av, m, NR, my_rank);
        cp_imbalance_free(&imb);
        x.a2av = &a2av;
    }
    size_t bytes = (size_t)(cp_coll_buffer_elems(&x) * dt->size);
    void *hs = calloc(1, bytes + 1), *hr = calloc(1, bytes + 1), *ds = NULL, *dr = NULL;
    long wrong = -1;
    double times[4] = {-1, -1, -1, -1};
    *status = c->no_select ? COLLPROF_OK : be->select_variant(ctx, c->op, c->variant);
    if (*status != COLLPROF_OK) {
        snprintf(why, whylen, "%s", be->last_error(ctx));
        goto out;
    }
    if ((*status = be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, bytes, &dr)) != 0 ||
        (!c->in_place && (*status = be->mem_alloc(ctx, COLLPROF_MEM_DEVICE, bytes, &ds)) != 0)) {
        snprintf(why, whylen, "mem_alloc: %s", be->last_error(ctx));
        goto out;
    }
    collprof_args_t args = {.op = c->op,
                            .dtype = c->dtype,
                            .redop = c->redop,
                            .root = 1,
                            .in_place = c->in_place,
                            .memtype = COLLPROF_MEM_DEVICE,
                            .sendbuf = c->in_place ? dr : ds,
                            .recvbuf = dr,
                            .count = count,
                            .sendcounts = a2av.sendcounts,
                            .sdispls = a2av.sdispls,
                            .recvcounts = a2av.recvcounts,
                            .rdispls = a2av.rdispls,
                            .peer_send = (my_rank + 1) % NR,
                            .peer_recv = (my_rank - 1 + NR) % NR};
    for (int pass = 0; pass < 2; pass++) {
        memset(hr, 0xff, bytes);
        coll->fill(&x, c->in_place ? hr : hs, hr);
        if (!c->in_place) {
            be->mem_copy(ctx, COLLPROF_MEM_DEVICE, ds, hs, bytes, 1);
        }
        be->mem_copy(ctx, COLLPROF_MEM_DEVICE, dr, hr, bytes, 1);
        if (pass == 0) { /* warm-up and timed batches */
            *status = be->run_batch(ctx, &args, 2, times);
            if (*status == 0) {
                *status = be->run_batch(ctx, &args, 3, times);
            }
        } else {
            *status = be->run(ctx, &args);
        }
        if (*status != COLLPROF_OK) {
            snprintf(why, whylen, "%s: %s", pass ? "run" : "run_batch", be->last_error(ctx));
            goto out;
        }
    }
    if (times[0] < 0 || times[1] < 0 || times[2] < 0 || times[3] != -1) {
        snprintf(why, whylen, "run_batch times: %g %g %g %g", times[0], times[1], times[2],
                 times[3]);
        *status = COLLPROF_ERR_BACKEND;
        goto out;
    }
    memset(hr, 0x5a, bytes);
    be->mem_copy(ctx, COLLPROF_MEM_DEVICE, hr, dr, bytes, 0);
    wrong = c->op == COLLPROF_OP_BARRIER ? 0 : (long)coll->check(&x, hr);
out:
    if (dr != NULL) {
        be->mem_free(ctx, COLLPROF_MEM_DEVICE, dr);
    }
    if (ds != NULL) {
        be->mem_free(ctx, COLLPROF_MEM_DEVICE, ds);
    }
    free(hs);
    free(hr);
    if (x.a2av != NULL) {
        cp_a2av_free(&a2av);
    }
    return wrong;
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

static void rank_main(const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const collprof_backend_t *be = h ? dlsym(h, COLLPROF_BACKEND_SYMBOL) : NULL;
    void (*stats)(unsigned long *) = h ? (void (*)(unsigned long *))dlsym(h, "cpmock_stats") : NULL;
    void (*hang)(int) = h ? (void (*)(int))dlsym(h, "cpmock_hang_after") : NULL;
    check(be != NULL && stats != NULL && hang != NULL, "mock plugin loads (%s)",
          be ? path : dlerror());
    if (be == NULL || stats == NULL || hang == NULL) {
        return;
    }
    collprof_caps_t caps = {.size = sizeof(caps)};
    check(be->query(NULL, &caps) == 0 && caps.memtypes == COLLPROF_BIT(COLLPROF_MEM_DEVICE) &&
              (be->flags & COLLPROF_BACKEND_DEVICE_TIMER),
          "query: device memory, device timer");
    collprof_host_t host = oob_shm_host(host_log, get_option);
    void *ctx = NULL;

    /* no GPU on one rank only: every rank fails, nobody hangs */
    if (my_rank == 2) {
        setenv("CPMOCK_NO_GPU", "1", 1);
    }
    int rc = be->init(&host, &ctx);
    unsetenv("CPMOCK_NO_GPU");
    check(rc == COLLPROF_ERR_NO_DEVICE && ctx == NULL,
          "init with no GPU on rank 2 fails on every rank (%d)", rc);
    check(strstr(be->last_error(NULL), "no usable GPU: CUDA driver version is insufficient") !=
              NULL,
          "init failure message: %s", be->last_error(NULL));

    unsetenv("NCCL_SOCKET_IFNAME");
    rc = be->init(&host, &ctx);
    check(rc == COLLPROF_OK && ctx != NULL, "init (%s)", rc ? be->last_error(NULL) : "ok");
    if (rc != COLLPROF_OK) {
        return;
    }
    check(getenv("NCCL_SOCKET_IFNAME") && !strcmp(getenv("NCCL_SOCKET_IFNAME"), "lo"),
          "one node: NCCL_SOCKET_IFNAME=lo");
    void *p = NULL;
    check(be->mem_alloc(ctx, COLLPROF_MEM_HOST, 64, &p) == COLLPROF_ERR_NOT_SUPPORTED && !p,
          "host memory refused");
    check_describe(be, ctx);

    static const char *variants[] = {"default", "graph",   "reg+graph", "p2p",
                                     "p2p+reg", "ring-ll", "tree-ll",   "reg"};
    int cells = 0, clean = 0;
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
            for (int ip = 0; ip < 2; ip++) {
                cell_t c = {variants[v],
                            (collprof_op_t)op,
                            COLLPROF_DTYPE_FLOAT32,
                            COLLPROF_REDOP_SUM,
                            ip,
                            0};
                int found = 0;
                for (size_t k = 0; k < caps.nvariants; k++) {
                    found |= !strcmp(caps.variants[k].name, c.variant) &&
                             (caps.variants[k].ops & COLLPROF_BIT(op));
                }
                if ((!found && strcmp(c.variant, "default")) || (op == COLLPROF_OP_BARRIER && ip)) {
                    continue;
                }
                char why[512] = "";
                int st = 0;
                long w = run_cell(be, ctx, &c, &st, why, sizeof(why));
                cells++;
                clean += st == 0 && w == 0;
                check(st == 0 && w == 0, "%s %s %s: status %d, #wrong %ld %s", c.variant,
                      collprof_op_name(c.op), ip ? "in place" : "out of place", st, w, why);
                check(getenv("NCCL_ALGO") == NULL && getenv("NCCL_PROTO") == NULL,
                      "%s %s: NCCL_ALGO/NCCL_PROTO restored", c.variant, collprof_op_name(c.op));
            }
        }
    }
    check(cells > 100 && clean == cells, "%d of %d cells exact", clean, cells);

    /* other dtypes and reductions */
    static const struct {
        collprof_op_t op;
        collprof_dtype_t dt;
        collprof_redop_t r;
    } more[] = {{COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_INT64, COLLPROF_REDOP_MAX},
                {COLLPROF_OP_REDUCESCATTER, COLLPROF_DTYPE_INT8, COLLPROF_REDOP_SUM},
                {COLLPROF_OP_REDUCE, COLLPROF_DTYPE_FLOAT64, COLLPROF_REDOP_MIN},
                {COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_UINT32, COLLPROF_REDOP_PROD},
                {COLLPROF_OP_ALLTOALLV, COLLPROF_DTYPE_UINT8, COLLPROF_REDOP_SUM}};
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++) {
        for (int ip = 0; ip < 2; ip++) {
            cell_t c = {"default", more[i].op, more[i].dt, more[i].r, ip, 0};
            char why[512] = "";
            int st = 0;
            long w = run_cell(be, ctx, &c, &st, why, sizeof(why));
            check(st == 0 && w == 0, "%s %s %s %s: #wrong %ld %s", collprof_op_name(c.op),
                  collprof_dtype_info(c.dtype)->name, collprof_redop_name(c.redop),
                  ip ? "in place" : "out", w, why);
        }
    }

    /* forced algorithms the (mock) machine lacks: unsupported, agreed, cached */
    static const struct {
        const char *v;
        collprof_op_t op;
    } refused[] = {{"nvls-simple", COLLPROF_OP_ALLREDUCE},
                   {"pat-simple", COLLPROF_OP_ALLGATHER},
                   {"collnetdirect-simple+graph", COLLPROF_OP_REDUCESCATTER},
                   {"nvls-simple", COLLPROF_OP_ALLREDUCE}};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        rc = be->select_variant(ctx, refused[i].op, refused[i].v);
        check(rc == COLLPROF_ERR_NOT_SUPPORTED && (strstr(be->last_error(ctx), "NCCL has no") ||
                                                   strstr(be->last_error(ctx), "not available")),
              "%s for %s: unsupported (%s)", refused[i].v, collprof_op_name(refused[i].op),
              be->last_error(ctx));
        check(getenv("NCCL_ALGO") == NULL, "%s: NCCL_ALGO restored", refused[i].v);
    }
    check(be->select_variant(ctx, COLLPROF_OP_ALLTOALL, "tree-ll") == COLLPROF_ERR_NOT_SUPPORTED,
          "tree-ll does not apply to alltoall");
    check(be->select_variant(ctx, COLLPROF_OP_ALLREDUCE, "nosuch") == COLLPROF_ERR_NOT_SUPPORTED,
          "unknown variant refused");

    /* a variant whose communicator was evicted meanwhile (2 kept) is re-created */
    unsigned long s[5], before;
    stats(s);
    before = s[4];
    rc = be->select_variant(ctx, COLLPROF_OP_ALLREDUCE, "ring-ll");
    rc |= be->select_variant(ctx, COLLPROF_OP_ALLGATHER, "ring-simple");
    rc |= be->select_variant(ctx, COLLPROF_OP_BROADCAST, "ring-ll128");
    check(rc == 0, "three variants selected for three ops");
    {
        cell_t c = {"ring-ll", COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_SUM, 1,
                    1};
        char why[512] = "";
        int st = 0;
        long w = run_cell(be, ctx, &c, &st, why, sizeof(why));
        stats(s);
        check(st == 0 && w == 0 && s[4] > before,
              "evicted ring-ll re-created for allreduce without a new selection (%d %ld %s)", st, w,
              why);
    }
    stats(s);
    check(s[1] > 0, "graphs replayed (%lu launches)", s[1]);
    check(s[2] > 0 && s[2] == s[3], "every registration undone (%lu registered, %lu deregistered)",
          s[2], s[3]);
    check(s[4] >= 4, "communicators re-created after eviction (%lu inits with 2 kept)", s[4]);

    /* a hang: timeout, communicator aborted, the next call fails fast */
    opt_timeout = "1";
    rc = be->finalize(ctx);
    check(rc == COLLPROF_OK, "finalize");
    ctx = NULL;
    rc = be->init(&host, &ctx);
    check(rc == COLLPROF_OK, "init again with timeout=1");
    if (rc == COLLPROF_OK) {
        cell_t c = {"default", COLLPROF_OP_ALLREDUCE, COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_SUM, 0,
                    0};
        char why[512] = "";
        int st = 0;
        hang(2); /* the 2nd operation from now never completes, on every rank */
        run_cell(be, ctx, &c, &st, why, sizeof(why));
        check(st == COLLPROF_ERR_TIMEOUT && strstr(why, "did not complete within 1 s") &&
                  strstr(why, "aborted"),
              "hang: timeout, communicator aborted (%d: %s)", st, why);
        collprof_args_t a = {.op = COLLPROF_OP_ALLREDUCE,
                             .dtype = COLLPROF_DTYPE_FLOAT32,
                             .memtype = COLLPROF_MEM_DEVICE};
        st = be->run(ctx, &a);
        check(st == COLLPROF_ERR_BACKEND && strstr(be->last_error(ctx), "aborted"),
              "after the abort, without a new selection: fails at once (%d: %s)", st,
              be->last_error(ctx));
        st = 0;
        why[0] = '\0';
        long w = run_cell(be, ctx, &c, &st, why, sizeof(why));
        check(st == 0 && w == 0,
              "the next cell selects the variant again: a fresh communicator "
              "(%d %ld %s)",
              st, w, why);
        be->finalize(ctx);
    }
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
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED || oob_shm_create(NR) != 0) {
        perror("mmap");
        return 1;
    }
    memset(sh, 0, sizeof(*sh));
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_PROTO");
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
