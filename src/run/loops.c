/*
 * The run loops of one rank: every cell of the plan (each repeated as
 * --repeats, --min-time, --target-ci and --max-time say), or the link
 * sweep's rounds, with rank 0 recording each cell as it finishes.
 */
#include "config.h"

#include "run/loops.h"

#include "plan/limits.h"
#include "base/log.h"
#include "runner/repeat.h"
#include "screen/run/screen_run.h"
#include "runner/split.h"
#include "screen/run/sweep.h"
#include "base/util.h"
#include "wd/watchdog.h"
#include "schema/baseline.h"
#include "output/result_row.h"
#include "screen/screen_out.h"
#include "output/summary.h"
#include "output/path_rows.h"
#include "run/exit.h"
#include "run/health_log.h"
#include "run/wd_hooks.h"
#include "slurm/slurm_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Rank 0 records one finished cell; 0, or -1 when a file could not be written. */
static int record_cell(cp_rank_run_t *rr, int i, const cp_result_t *res)
{
    const cp_cell_t *c = &rr->plan.cells[i];
    int rc = 0;
    cp_wd_beat(CP_WD_WRITE, i, -1, c->warmup, cp_cell_timeout(rr->opt, 0));
    if (rr->sum == NULL) {
        return 0;
    }
    collprof_result_row_t row;
    cp_result_row(&rr->plugins[c->plugin], c, res, i, &row);
    uint64_t bytes = c->count * collprof_dtype_size(c->dtype);
    if (c->memtype == COLLPROF_MEM_HOST) {
        cp_limits_of(&rr->limits, bytes, &row.copy1_gbs, &row.copy_gbs);
    } else if (c->memtype == COLLPROF_MEM_DEVICE) {
        row.dcopy_gbs = cp_limits_device(&rr->limits, c->plugin, c->memtype, bytes);
    }
    /* the path check's rows after the node's counters (docs/metrics.md "Path check") */
    cp_result_t with = *res;
    collprof_counter_row_t *path = cp_path_add_rows(&row, res, &rr->boot, &with.ncounters);
    if (path != NULL) {
        with.counters = path;
    } else {
        with.ncounters = res->ncounters;
    }
    cp_wd_lock();
    if (cp_summary_cell(rr->sum, &row, &with) != 0) {
        rc = -1;
    }
    free(path);
    cp_wdh_set_done(i + 1);
    cp_wd_unlock();
    return rc;
}

/* 1 (after saying so on rank 0) when no backend could be initialised. */
static int no_backend(const cp_rank_run_t *rr)
{
    if (rr->ready == 0 && rr->boot.rank == 0) {
        fprintf(stderr, "collprof: error: no backend could run (see the messages above)\n");
    }
    return rr->ready == 0;
}

/* One repeat of cell c (cp_run_cell) on a fresh context of its backend where it can start one. */
static void run_repeat(cp_rank_run_t *rr, cp_runner_t *runner, const cp_cell_t *c, cp_result_t *one)
{
    cp_plugin_t *p = &rr->plugins[c->plugin];
    char why[320];
    /* split cells repeat on their group's context; a cell decided before it runs on none */
    if (c->split == 0 && c->pre_status == COLLPROF_CELL_PENDING && p->ctx != NULL) {
        cp_wd_beat(CP_WD_SETUP, runner->index, -1, c->warmup, cp_cell_timeout(rr->opt, 0));
        runner->ctx = cp_split_fresh(p, &rr->boot, &rr->host, why, sizeof(why));
        static unsigned char warned[CP_MAX_LIST];
        if (runner->ctx == NULL && rr->boot.rank == 0 && c->plugin < CP_MAX_LIST &&
            !warned[c->plugin]) {
            warned[c->plugin] = 1;
            cp_log(CP_LOG_WARN, "--repeats: %s; its repeats share one context", why);
        }
    }
    cp_run_cell(runner, c, one);
    if (runner->ctx != NULL) {
        p->be->finalize(runner->ctx);
        runner->ctx = NULL;
    }
}

/*
 * Where the repeats of cell c keep its buffers (NULL: each allocates its own): unless
 * --fresh-buffers, when they run on the backend's own context (split cells, backends that start
 * one context only) or on fresh ones that can use its buffers (COLLPROF_BACKEND_SHARED_BUFFERS);
 * the buffers of a backend that ties them to a context (registered memory) come with each one.
 */
static cp_kept_bufs_t *keep_buffers(const cp_rank_run_t *rr, const cp_cell_t *c, cp_kept_bufs_t *k)
{
    const cp_plugin_t *p = &rr->plugins[c->plugin];
    int fresh = c->split == 0 && (p->be->flags & COLLPROF_BACKEND_GROUPS);
    if (rr->opt->fresh_buffers || (fresh && !(p->be->flags & COLLPROF_BACKEND_SHARED_BUFFERS))) {
        return NULL;
    }
    k->ctx = c->split ? p->gctx[c->split] : p->ctx;
    return k->ctx != NULL ? k : NULL;
}

/* Cell c, repeated as --repeats, --min-time, --target-ci and --max-time say: the merged
 * result in *res (one run when the run does not repeat). */
static void run_repeats(cp_rank_run_t *rr, cp_runner_t *runner, const cp_cell_t *c,
                        cp_result_t *res)
{
    memset(res, 0, sizeof(*res));
    if (!cp_repeat_on(rr->opt)) { /* one run on the backend's own context */
        cp_result_t one;
        runner->repeat = 0;
        cp_run_cell(runner, c, &one);
        cp_repeat_add(res, &one);
        cp_repeat_finish(res);
        return;
    }
    cp_kept_bufs_t keep = {.ctx = NULL};
    runner->keep = keep_buffers(rr, c, &keep);
    double t0 = cp_now_us();
    int more = 1;
    for (int k = 0; more; k++) {
        cp_result_t one;
        runner->repeat = k;
        run_repeat(rr, runner, c, &one);
        double p50 = one.fig.stats.p50;
        int ran = one.samples != NULL;
        cp_repeat_add(res, &one);
        if (ran) {
            cp_log(CP_LOG_INFO, "cell %d/%d: repeat %d%s%d: p50 %.2f us", runner->index + 1,
                   rr->plan.ncells, k + 1, rr->opt->repeats > k + 1 ? "/" : " of at least ",
                   rr->opt->repeats, p50);
        }
        more = cp_repeat_more(rr->opt, res, (cp_now_us() - t0) * 1e-6);
        if (cp_oob_bcast(&more, sizeof(more), 0) != 0) {
            more = 0; /* the next cell's agreement reports the broken channel */
        }
    }
    if (runner->keep != NULL) {
        cp_kept_bufs_free(&rr->plugins[c->plugin], c->memtype, runner->keep);
        runner->keep = NULL;
    }
    cp_repeat_finish(res);
}

/* Every cell of the plan; *stopped when rank 0 could not write.  Returns the exit status. */
int cp_loop_cells(cp_rank_run_t *rr, int *stopped)
{
    int exit_status = CP_EXIT_OK, stop_run = 0;
    cp_runner_t runner = {
        .opt = rr->opt, .boot = &rr->boot, .plugins = rr->plugins, .nplugins = rr->nplugins};
    for (int i = 0; i < rr->plan.ncells && !stop_run; i++) {
        runner.index = i;
        const cp_cell_t *c = &rr->plan.cells[i];
        cp_result_t res;
        cp_log(CP_LOG_INFO, "cell %d/%d: %s/%s %s %s count %llu", i + 1, rr->plan.ncells,
               rr->plugins[c->plugin].name, c->variant, collprof_op_name(c->op),
               collprof_dtype_name(c->dtype), (unsigned long long)c->count);
        cp_health_log_start(rr, i);
        run_repeats(rr, &runner, c, &res);
        cp_health_log_done(rr, i, &res);
        cp_log(CP_LOG_INFO, "cell %d/%d: %s%s%s (#wrong %llu)", i + 1, rr->plan.ncells,
               collprof_cell_status_name(res.fig.status), res.fig.reason[0] ? ": " : "",
               res.fig.reason, (unsigned long long)res.fig.wrong);
        if (res.fig.status == COLLPROF_CELL_WRONG || res.fig.status == COLLPROF_CELL_ERROR) {
            exit_status = CP_EXIT_FAILED;
        }
        /* a rank 0 that cannot write stops every rank after this cell */
        stop_run = record_cell(rr, i, &res) != 0;
        cp_result_free(&res);
        if (cp_oob_bcast(&stop_run, sizeof(stop_run), 0) != 0) {
            stop_run = 0; /* the next cell's agreement reports the broken channel */
        }
    }
    *stopped = stop_run;
    return stop_run || no_backend(rr) ? CP_EXIT_FAILED : exit_status;
}

/* Rank 0: each node's leaf switch in Slurm's tree topology (src/slurm/slurm_topo.h) for the
 * pairs' path classes, said on the console when there is one; NULL when there is none (every
 * pair "any"), on other ranks, or out of memory. */
static int *node_leaves(const cp_rank_run_t *rr)
{
    const cp_boot_t *b = &rr->boot;
    if (b->rank != 0 || b->nnodes < 2) {
        return NULL;
    }
    int *lead = cp_sweep_leaders(b), *leaf = malloc(sizeof(int) * (size_t)b->nnodes);
    const char **hosts = calloc((size_t)b->nnodes, sizeof(char *));
    char why[256];
    int found = 0, placed = 0;
    if (lead != NULL && leaf != NULL && hosts != NULL) {
        for (int nd = 0; nd < b->nnodes; nd++) {
            hosts[nd] = lead[nd] >= 0 ? cp_boot_host(b, lead[nd]) : NULL;
        }
        found = cp_slurm_topo_leaves(hosts, b->nnodes, leaf, why, sizeof(why));
    }
    for (int nd = 0; found > 0 && nd < b->nnodes; nd++) {
        placed += leaf[nd] >= 0;
    }
    if (found > 0) {
        printf("# topology: %d of %d nodes under %d leaf switch%s (Slurm's topology/tree): pairs "
               "same-switch or cross-switch%s\n",
               placed, b->nnodes, found, found == 1 ? "" : "es",
               placed < b->nnodes ? ", \"any\" with a node outside it" : "");
        cp_log(CP_LOG_INFO, "topology: %d of %d nodes under %d leaf switches", placed, b->nnodes,
               found);
    } else if (lead != NULL && leaf != NULL && hosts != NULL) {
        cp_log(CP_LOG_INFO, "topology: none (%s): every pair's path class is \"any\"", why);
    }
    free(lead);
    free(hosts);
    if (found <= 0) {
        free(leaf);
        return NULL;
    }
    return leaf;
}

/* The link sweep: every round of each cell (backend x size), then the /links table. */
int cp_loop_sweep(cp_rank_run_t *rr, int *stopped)
{
    int exit_status = CP_EXIT_OK;
    cp_sweep_rows_t rows = {NULL, 0, 0};
    int *leaf = node_leaves(rr);
    cp_runner_t runner = {.opt = rr->opt,
                          .boot = &rr->boot,
                          .plugins = rr->plugins,
                          .nplugins = rr->nplugins,
                          .node_leaf = leaf};
    for (int i = 0; i < rr->plan.ncells; i++) {
        runner.index = i;
        int rc =
            cp_sweep_cell(&runner, &rr->plan.cells[i], &rows, rr->boot.rank == 0 ? stdout : NULL);
        if (rc != 0) {
            exit_status = CP_EXIT_FAILED;
        }
        cp_wd_lock(); /* the watchdog's hooks read it under the lock */
        cp_wdh_set_done(i + 1);
        cp_wd_unlock();
    }
    cp_wd_lock();
    if (rr->sum != NULL && cp_summary_links(rr->sum, rows.rows, rows.nrows) != 0) {
        *stopped = 1;
    }
    cp_wd_unlock();
    cp_sweep_rows_free(&rows);
    free(leaf);
    return *stopped || no_backend(rr) ? CP_EXIT_FAILED : exit_status;
}

/* The screen's seed: --seed, else drawn by rank 0 from the clock and its pid; every rank's. */
static uint64_t screen_seed(const cp_rank_run_t *rr)
{
    uint64_t seed = (uint64_t)rr->opt->seed;
    if (seed == 0 && rr->boot.rank == 0) {
        seed = ((uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid()) % 2147483647u + 1;
    }
    if (cp_oob_bcast(&seed, sizeof(seed), 0) != 0) {
        seed = 0; /* the first round's agreement reports the broken channel */
    }
    return seed;
}

/* The plan's latency and bandwidth cells of plugin p: 0, or -1 when it has not both. */
static int screen_cells(const cp_rank_run_t *rr, int p, const cp_cell_t **lat, const cp_cell_t **bw)
{
    *lat = *bw = NULL;
    for (int i = 0; i < rr->plan.ncells; i++) {
        const cp_cell_t *c = &rr->plan.cells[i];
        if (c->plugin == p) {
            *(strcmp(cp_sweep_kind(rr->opt, c), "latency") == 0 ? lat : bw) = c;
        }
    }
    return *lat != NULL && *bw != NULL ? 0 : -1;
}

/* Rank 0: backend p's reference from the --baseline rows (none: NULL); ok 0 when a baseline
 * was asked for and has no figures for it (said). */
static const cp_screen_ref_t *screen_baseline(const cp_rank_run_t *rr, int p, const void *rows,
                                              size_t n, cp_screen_ref_t *ref, int *ok)
{
    *ok = 1;
    if (rr->opt->baseline[0] == '\0' || rr->boot.rank != 0) {
        return NULL;
    }
#ifdef CP_HAVE_HDF5
    char err[512];
    if (cp_baseline_ref(rows, n, rr->plugins[p].name, rr->opt->sweep_bytes[0],
                        rr->opt->sweep_bytes[1], ref, err, sizeof(err)) == 0) {
        return ref;
    }
    cp_log(CP_LOG_ERROR, "--baseline %s: %s", rr->opt->baseline, err);
#else
    (void)p, (void)rows, (void)n, (void)ref;
    cp_log(CP_LOG_ERROR, "--baseline: this collprof was built without HDF5");
#endif
    *ok = 0;
    return NULL;
}

/* Rank 0: the --baseline file's rows (*n; NULL when none asked for); every rank: whether it
 * could be read (said on rank 0), the same everywhere. */
static void *screen_baseline_rows(const cp_rank_run_t *rr, size_t *n, int *ok)
{
    void *rows = NULL;
    *n = 0;
    *ok = 1;
    if (rr->opt->baseline[0] != '\0' && rr->boot.rank == 0) {
#ifdef CP_HAVE_HDF5
        char err[512];
        collprof_baseline_row_t *r = NULL;
        *ok = cp_baseline_read(rr->opt->baseline, &r, n, err, sizeof(err)) == 0;
        if (!*ok) {
            cp_log(CP_LOG_ERROR, "--baseline: %s", err);
        }
        rows = r;
#else
        *ok = 0;
        cp_log(CP_LOG_ERROR, "--baseline: this collprof was built without HDF5");
#endif
    }
    if (cp_oob_bcast(ok, sizeof(*ok), 0) != 0) {
        *ok = 0;
    }
    return rows;
}

int cp_loop_screen(cp_rank_run_t *rr, int *stopped)
{
    int exit_status = CP_EXIT_OK, done = 0;
    cp_screen_out_t out = {.rows = NULL};
    int *leaf = node_leaves(rr);
    cp_runner_t runner = {.opt = rr->opt,
                          .boot = &rr->boot,
                          .plugins = rr->plugins,
                          .nplugins = rr->nplugins,
                          .host = &rr->host,
                          .node_leaf = leaf};
    uint64_t seed = screen_seed(rr);
    size_t nbase;
    int ok;
    void *base = screen_baseline_rows(rr, &nbase, &ok);
    for (int p = 0; p < rr->nplugins && ok; p++) {
        const cp_cell_t *lat, *bw;
        cp_screen_ref_t ref;
        if (screen_cells(rr, p, &lat, &bw) != 0) {
            continue;
        }
        const cp_screen_ref_t *bref = screen_baseline(rr, p, base, nbase, &ref, &ok);
        if (cp_oob_bcast(&ok, sizeof(ok), 0) != 0 || !ok) {
            ok = 0;
            break;
        }
        runner.index = (int)(lat - rr->plan.cells);
        int rc = cp_screen_backend(&runner, lat, bw, rr->opt->screen_rounds, rr->opt->screen_thr,
                                   seed, bref, &out, rr->boot.rank == 0 ? stdout : NULL);
        exit_status = rc != 0 ? CP_EXIT_FAILED : exit_status;
        done += 2;
        cp_wd_lock();
        cp_wdh_set_done(done);
        cp_wd_unlock();
        if (out.broken) { /* a node stopped answering: no collective of the job from here */
            rr->broken = 1;
            break;
        }
    }
    free(base);
    free(leaf);
    if (!ok) { /* no baseline for a backend: nothing was measured */
        cp_screen_out_free(&out);
        return CP_EXIT_USAGE;
    }
    int verdict = out.nrows > 0 ? cp_screen_status(out.rows, out.nrows) : 2;
    cp_wd_lock();
    if (rr->sum != NULL &&
        (cp_summary_links(rr->sum, out.pairs.rows, out.pairs.nrows) != 0 ||
         cp_summary_screen(rr->sum, out.rows, out.nrows, out.pairs.rows, out.pairs.nrows) != 0)) {
        *stopped = 1;
    }
    cp_wd_unlock();
    cp_screen_out_free(&out);
    if (rr->broken) {
        verdict = rr->boot.rank == 0 && verdict != 0 ? verdict : 1; /* unreachable: flagged */
    } else if (cp_oob_bcast(&verdict, sizeof(verdict), 0) != 0) {
        verdict = 2;
    }
    if (*stopped || no_backend(rr)) {
        return CP_EXIT_FAILED;
    }
    /* the verdict is rank 0's to carry: under srun every other rank exits 0 unless it failed
     * itself, so that a flagged screen gives one srun error line, not one per node */
    return exit_status != CP_EXIT_OK ? exit_status : rr->boot.rank == 0 ? verdict : CP_EXIT_OK;
}
