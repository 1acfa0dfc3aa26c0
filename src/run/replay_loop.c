/*
 * collprof --replay TRACE (docs/replay.md): the trace read and checked against the job before any
 * backend communicates, then replayed on every backend of the plan in turn; rank 0 pulls what the
 * critical path needs of every rank's op rows as its model reaches them (replay_path.h), a few MiB
 * a round, then gathers the rows in rounds, folds them per op x size x group and for the whole
 * trace (replay_fold.h), writes them to /replay as they come and prints the report's rows last.
 */
#include "config.h"

#include "run/loops.h"

#include "base/log.h"
#include "base/stats.h"
#include "base/timeouts.h"
#include "chan/oob.h"
#include "colls/colls.h"
#include "output/summary.h"
#include "plan/plan.h"
#include "run/exit.h"
#include "runner/agree.h"
#include "run/replay_fold.h"
#include "run/replay_path.h"
#include "runner/replay.h"
#include "runner/replay_check.h"
#include "runner/replay_gaps.h"
#include "runner/replay_scan.h"
#include "schema/trace_read.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes on rank 0 of one round of a gather: every rank's block of rows. */
#define ROUND_BYTES (4u << 20)
/* What the guard lets the ranks of a node take of its memory (plan_mem.c's share). */
#define GUARD_SHARE 0.8

#ifdef CP_HAVE_HDF5
/* Rank 0's bytes per op of the trace (every rank's): the fold's medians' values (up to four
 * doubles, in arrays that grow by half again on average), an instance's skew and straggler. */
#define ROOT_OP_BYTES 64
/* Rank 0's bytes per op of its own, standing for the largest rank's: the critical path's ops
 * (replay_path.h: a chain's op, the path's entry; more where ranks never meet in a group). */
#define ROOT_PATH_BYTES 64
/* Rank 0's buffers: the pull's cursors (two rounds), its round, the rows' round and block. */
#define ROOT_BUF_BYTES (5 * (uint64_t)ROUND_BYTES)

/* The memory guard of a replay: this node's ranks (each as this one) and rank 0's figures of
 * every op where it runs, within GUARD_SHARE of the node's memory (cp_plan_node_this).  0, or
 * CP_EXIT_USAGE and why. */
static int replay_guard(const cp_rank_run_t *rr, const cp_trace_t *t, const cp_trace_scan_t *sc,
                        char *err, size_t len)
{
    const cp_boot_t *b = &rr->boot;
    cp_plan_node_t node;
    cp_plan_node_this(&node, b->local_size, b->node_ids[0] == b->node_id, b->nnodes);
    uint64_t mine = cp_replay_rank_bytes(t, b->rank, rr->opt->replay_iters);
    uint64_t ops = sc != NULL ? sc->nops : t->nops;
    uint64_t root =
        node.rank0_here ? ops * ROOT_OP_BYTES + t->nops * ROOT_PATH_BYTES + ROOT_BUF_BYTES : 0;
    double need = (double)mine * node.local_ranks + (double)root, mib = 1024.0 * 1024.0;
    if (node.host_bytes == 0 || need <= GUARD_SHARE * (double)node.host_bytes) {
        return 0;
    }
    char r0[96] = "";
    if (root > 0) {
        snprintf(r0, sizeof(r0), " + rank 0's %.1f MiB for the %llu ops of every rank",
                 (double)root / mib, (unsigned long long)ops);
    }
    snprintf(err, len,
             "--replay %s: needs about %.1f MiB of host memory on this node (%d rank%s x %.1f "
             "MiB: its ops, their results and its groups' buffers%s) but this node has %.1f MiB "
             "(%d %% of %.1f MiB%s): replay part of the trace (--replay-ops) or run fewer ranks "
             "per node",
             rr->opt->replay, need / mib, node.local_ranks, node.local_ranks == 1 ? "" : "s",
             (double)mine / mib, r0, GUARD_SHARE * (double)node.host_bytes / mib,
             (int)(GUARD_SHARE * 100 + 0.5), (double)node.host_bytes / mib,
             node.host_cgroup ? ", the cgroup's memory limit" : "");
    return CP_EXIT_USAGE;
}
#endif

int cp_replay_prepare(cp_rank_run_t *rr, char *err, size_t len)
{
#ifdef CP_HAVE_HDF5
    cp_trace_t *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, len, "out of memory");
        return CP_EXIT_FAILED;
    }
    rr->trace = t;
    const cp_trace_scan_t *sc = NULL; /* this rank's ops alone, unless --shrink folds them */
    if (cp_replay_read(rr->opt->replay, rr->opt->replay_ops, rr->boot.rank, rr->boot.nranks,
                       rr->opt->replay_shrink, t, &sc, err, len) != 0) {
        return CP_EXIT_USAGE;
    }
    if (t->nranks > rr->boot.nranks && !rr->opt->replay_shrink) {
        snprintf(err, len,
                 "--replay %s: the trace was recorded on %d ranks and this run has %d: run "
                 "it on %d or more, or fold it onto this run's ranks with --shrink",
                 rr->opt->replay, t->nranks, rr->boot.nranks, t->nranks);
        return CP_EXIT_USAGE;
    }
    if (t->nranks > rr->boot.nranks) { /* the same fold on every rank: the same trace */
        if (cp_trace_shrink(t, rr->boot.nranks) != 0) {
            snprintf(err, len, "--shrink: out of memory");
            return CP_EXIT_FAILED;
        }
        cp_log(CP_LOG_INFO,
               "replay: --shrink: the trace's %d ranks folded onto %d (rank r "
               "replayed by rank r mod %d), %zu ops kept",
               t->shrunk_from, t->nranks, t->nranks, t->nops);
    }
    if (cp_gaps_setup(rr->opt->gaps, rr->opt->replay_ops, t, sc, rr->boot.rank,
                      rr->opt->replay_iters, err, len) != 0) {
        return CP_EXIT_USAGE; /* (--replay-ops keeps only its ops of t) */
    }
    snprintf(rr->opt->replay_order, sizeof(rr->opt->replay_order), "%s", /* (the summary's) */
             cp_replay_order_setup(rr->opt->replay_order, t, rr->plugins, rr->nplugins,
                                   rr->plan.plugins_used));
    cp_log(CP_LOG_INFO, "replay: --replay-order %s", rr->opt->replay_order);
    char why[900]; /* the check before the replay (rank 0; a --shrink fold: the folded ops) */
    int ckd = rr->boot.rank == 0 && (sc != NULL || t->shrunk_from > 0);
    if (ckd && sc == NULL) {
        cp_replay_check_trace(t);
    }
    int ck = ckd ? cp_replay_check_end(t, why, sizeof(why)) : 0;
    if (ck > 0) {
        cp_log(CP_LOG_WARN, "replay: %s", why);
    }
    if (ck < 0) {
        snprintf(err, len, "--replay %s: %s", rr->opt->replay, why);
        return CP_EXIT_USAGE;
    }
    cp_gaps_cores(rr->boot.local_size);
    cp_replay_check_set(cp_check_applied(rr->opt->check, rr->opt->check_mode), rr->opt->check_k);
    return replay_guard(rr, t, sc, err, len);
#else
    (void)rr;
    snprintf(err, len, "--replay reads an HDF5 trace: this collprof was built without HDF5");
    return CP_EXIT_USAGE;
#endif
}

void cp_replay_free(cp_rank_run_t *rr)
{
#ifdef CP_HAVE_HDF5
    if (rr->trace != NULL) {
        cp_trace_free(rr->trace);
    }
#endif
    cp_gaps_free();
    cp_replay_scan_free();
    free(rr->trace);
    rr->trace = NULL;
}

/* Rank 0 takes a block of rank's items: [at, at + m) of its own (buf: rank 0's to change). */
typedef int (*block_fn)(void *arg, int rank, uint64_t at, void *items, size_t m);
/* A rank packs its items [at, at + m) into send. */
typedef void (*pack_fn)(void *arg, uint64_t at, size_t m, void *send);

/*
 * Collective over the job: every rank's n items of size bytes (packed by pack) to rank 0, in
 * rounds of at most ROUND_BYTES there (cnt[r]: rank r's n; most: the largest), rank 0 handing
 * each rank's block of a round to each(arg, ...) as it comes, rank after rank.  0, or -1 when
 * out of memory (agreed), the channel failed, or each() failed (on rank 0; the rounds go on).
 */
static int rounds(const cp_rank_run_t *rr, pack_fn pack, void *parg, size_t n, size_t size,
                  const uint64_t *cnt, uint64_t most, block_fn each, void *arg)
{
    int nr = rr->boot.nranks;
    size_t per = ROUND_BYTES / ((size_t)nr * size);
    per = per > 0 ? per : 1;
    char *send = calloc(per, size);
    char *recv = rr->boot.rank == 0 ? calloc((size_t)nr * per, size) : NULL;
    int ok = send != NULL && (rr->boot.rank != 0 || recv != NULL), rc = 0;
    cp_agreement_t a;
    ok =
        cp_agree(nr, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) == CP_AGREE_OK;
    for (uint64_t c = 0; ok && c < most; c += per) {
        size_t m = c < n ? (n - c < per ? n - c : per) : 0;
        if (m > 0) {
            pack(parg, c, m, send);
        }
        if (cp_oob_gather(send, recv, per * size) != 0) {
            ok = 0; /* (the channel's failure ends the job) */
        }
        for (int r = 0; ok && recv != NULL && r < nr; r++) {
            size_t k = c < cnt[r] ? (cnt[r] - c < per ? cnt[r] - c : per) : 0;
            if (k > 0 && each(arg, r, c, recv + (size_t)r * per * size, k) != 0) {
                rc = -1;
            }
        }
    }
    free(send);
    free(recv);
    return ok ? rc : -1;
}

/* An op row on its way to rank 0, with its index among its rank's collectives of its group. */
typedef struct orow {
    collprof_replay_row_t row;
    int64_t k;
} orow_t;

/* Rank 0's side of one backend's gathers. */
typedef struct gat {
    cp_rank_run_t *rr;
    uint64_t *cnt, *off; /* per rank: its op rows, the first's index among every rank's */
    uint64_t most, nall;
    cp_path_t *path;
    cp_rfold_t *fold;
    collprof_replay_row_t *rows; /* a block's rows */
    uint64_t base;               /* the backend's first row in /replay */
    int failed;                  /* a row could not be written */
} gat_t;

/* A rank's side of the gathers: its op rows, its collectives' counts per group. */
typedef struct mine {
    const collprof_replay_row_t *rows;
    size_t n, sent;
    int64_t *k; /* per group: the collectives packed */
    cp_gcount_t *gc;
    size_t ngc, ng;
    int nr;
    size_t per;         /* the pull's records per round */
    unsigned char *req; /* the pull's request: per rank, then "done" */
    cp_prec_t *send;    /* [per] */
    cp_prec_t *recv;    /* rank 0: [nranks * per] */
} mine_t;

static void pack_copy(void *arg, uint64_t at, size_t m, void *send)
{
    const mine_t *u = arg;
    if (m > 0) {
        memcpy(send, u->gc + at, m * sizeof(*u->gc));
    }
}

/* Op rows [at, at + m) with their k (the rows packed in order). */
static void pack_rows(void *arg, uint64_t at, size_t m, void *send)
{
    mine_t *u = arg;
    orow_t *o = send;
    for (size_t j = 0; j < m; j++) {
        const collprof_replay_row_t *r = &u->rows[at + j];
        cp_prec_t c;
        cp_prec_of(r, &c);
        o[j].row = *r;
        o[j].k = c.kind == CP_PREC_COLL && (size_t)c.group < u->ng ? u->k[c.group]++ : -1;
    }
}

static int take_counts(void *arg, int rank, uint64_t at, void *items, size_t m)
{
    (void)at;
    gat_t *g = arg;
    return g->path != NULL ? cp_path_counts(g->path, rank, items, m) : -1;
}

/* A block of op rows: the path's figures set, folded, written. */
static int take_rows(void *arg, int rank, uint64_t at, void *items, size_t m)
{
    gat_t *g = arg;
    const orow_t *o = items;
    uint64_t gi = g->off[rank] + at;
    if (g->path == NULL || g->fold == NULL || g->rows == NULL) {
        return -1;
    }
    for (size_t j = 0; j < m; j++) {
        cp_prec_t c;
        g->rows[j] = o[j].row;
        cp_prec_of(&g->rows[j], &c);
        cp_path_row(g->path, rank, at + j, &c, o[j].k, &g->rows[j]);
        if (cp_rfold_add(g->fold, gi + j, &g->rows[j]) != 0) {
            return -1;
        }
    }
    if (g->rr->sum != NULL && cp_summary_replay(g->rr->sum, g->rows, m, g->base + gi) != 0) {
        g->failed = 1;
    }
    return 0;
}

/* Every rank's count n: cnt (calloc'ed, *cnt), *most, *all.  0, or -1. */
static int counts_of(size_t n, int nr, uint64_t **cnt, uint64_t *most, uint64_t *all)
{
    uint64_t my = n;
    *cnt = calloc((size_t)nr + 1, sizeof(uint64_t));
    if (*cnt == NULL || cp_oob_allgather(&my, *cnt, sizeof(my)) != 0) {
        return -1; /* (out of memory: agreed in rounds(); the channel's failure ends the job) */
    }
    *most = *all = 0;
    for (int r = 0; r < nr; r++) {
        *all += (*cnt)[r];
        *most = (*cnt)[r] > *most ? (*cnt)[r] : *most;
    }
    return 0;
}

/* A rank's collectives per group (u's k, gc).  0, or -1. */
static int group_counts(mine_t *u)
{
    for (size_t i = 0; i < u->n; i++) {
        u->ng = u->rows[i].group + 1 > (int)u->ng ? (size_t)u->rows[i].group + 1 : u->ng;
    }
    u->k = calloc(u->ng + 1, sizeof(int64_t));
    u->gc = calloc(u->ng + 1, sizeof(cp_gcount_t));
    if (u->k == NULL || u->gc == NULL) {
        return -1;
    }
    for (size_t i = 0; i < u->n; i++) {
        cp_prec_t c;
        cp_prec_of(&u->rows[i], &c);
        if (c.kind == CP_PREC_COLL) {
            u->k[c.group]++;
        }
    }
    for (size_t gr = 0; gr < u->ng; gr++) {
        if (u->k[gr] > 0) {
            u->gc[u->ngc++] = (cp_gcount_t){.group = (int32_t)gr, .count = u->k[gr]};
        }
        u->k[gr] = 0; /* (counted again as the rows are packed) */
    }
    return 0;
}

/* This rank's next records of the pull, in u->send. */
static void pack_recs(mine_t *u)
{
    size_t m = u->n - u->sent < u->per ? u->n - u->sent : u->per;
    for (size_t i = 0; i < m; i++) {
        cp_prec_of(&u->rows[u->sent + i], &u->send[i]);
    }
    u->sent += m;
}

/* Rank 0: one round of the pull (cp_path_pull_fn). */
static int pull_round(void *arg, cp_path_t *p)
{
    mine_t *u = arg;
    int nr = u->nr;
    for (int r = 0; r < nr; r++) {
        u->req[r] = cp_path_want(p, r) > 0;
    }
    u->req[nr] = 0;
    if (cp_oob_bcast(u->req, (size_t)nr + 1, 0) != 0) {
        return -1;
    }
    if (u->req[0]) {
        pack_recs(u);
    }
    if (cp_oob_gather(u->send, u->recv, u->per * sizeof(cp_prec_t)) != 0) {
        return -1;
    }
    for (int r = 0; r < nr; r++) {
        size_t m = cp_path_want(p, r);
        if (u->req[r] && cp_path_feed(p, r, u->recv + (size_t)r * u->per, m) != 0) {
            return -1;
        }
    }
    return 0;
}

/* Collective over the job: rank 0 runs the model (*crit: the path's length, -1 when it
 * failed), pulling the other ranks' records as it goes; they serve its rounds till it is
 * done.  0, or -1 when the channel failed. */
static int pull_path(gat_t *g, mine_t *u, double *crit)
{
    int nr = g->rr->boot.nranks, me = g->rr->boot.rank;
    *crit = 0;
    if (me == 0) {
        *crit = cp_path_run(g->path, pull_round, u);
        u->req[nr] = 1;
        return cp_oob_bcast(u->req, (size_t)nr + 1, 0);
    }
    for (;;) {
        if (cp_oob_bcast(u->req, (size_t)nr + 1, 0) != 0) {
            return -1;
        }
        if (u->req[nr]) {
            return 0;
        }
        if (u->req[me]) {
            pack_recs(u);
        }
        if (cp_oob_gather(u->send, NULL, u->per * sizeof(cp_prec_t)) != 0) {
            return -1;
        }
    }
}

/* Collective over the job: this rank's counts per group, then the records of its op rows
 * mine[n] as rank 0's model pulls them, then the rows themselves, folded and written on rank
 * 0 as they come.  *crit: the path's length.  0, or -1. */
static int gather_ops(gat_t *g, const collprof_replay_row_t *mine, size_t n, double *crit)
{
    int root = g->rr->boot.rank == 0, nr = g->rr->boot.nranks;
    mine_t u = {.rows = mine, .n = n, .nr = nr};
    uint64_t *gcnt = NULL, gmost = 0, gall = 0;
    u.per = ROUND_BYTES / ((size_t)nr * sizeof(cp_prec_t));
    u.per = u.per > 0 ? u.per : 1;
    u.req = calloc((size_t)nr + 1, 1);
    u.send = calloc(u.per, sizeof(cp_prec_t));
    u.recv = root ? calloc((size_t)nr * u.per, sizeof(cp_prec_t)) : NULL;
    int ok = u.req != NULL && u.send != NULL && (!root || u.recv != NULL);
    ok = group_counts(&u) == 0 && ok;
    ok = counts_of(n, nr, &g->cnt, &g->most, &g->nall) == 0 && ok;
    ok = counts_of(u.ngc, nr, &gcnt, &gmost, &gall) == 0 && ok;
    g->off = calloc((size_t)nr + 1, sizeof(uint64_t));
    for (int r = 0; g->off != NULL && g->cnt != NULL && r < nr; r++) {
        g->off[r + 1] = g->off[r] + g->cnt[r];
    }
    if (root && ok) {
        g->path = cp_path_new(nr, g->cnt, u.per);
        g->fold = cp_rfold_new(nr, !g->rr->opt->check);
        g->rows = calloc(ROUND_BYTES / ((size_t)nr * sizeof(orow_t)) + 1, sizeof(*g->rows));
        ok = g->path != NULL && g->fold != NULL && g->rows != NULL;
    }
    ok = ok && g->off != NULL;
    cp_agreement_t a;
    int agreed =
        cp_agree(nr, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) == CP_AGREE_OK;
    int rc = agreed ? rounds(g->rr, pack_copy, &u, u.ngc, sizeof(cp_gcount_t), gcnt, gmost,
                             take_counts, g)
                    : -1;
    *crit = 0;
    if (agreed) { /* (every rank, whatever rank 0's rc: the pull and the rounds are collective) */
        rc |= pull_path(g, &u, crit);
        rc |= rounds(g->rr, pack_rows, &u, n, sizeof(orow_t), g->cnt, g->most, take_rows, g);
    }
    free(u.req);
    free(u.send);
    free(u.recv);
    free(u.k);
    free(u.gc);
    free(gcnt);
    return rc != 0 || *crit < 0 ? -1 : 0;
}

/* Collective over the job: the --gaps rank row of every rank that has one (mine: this rank's,
 * NULL: none) on rank 0, in rank order, into *rk (*nrk).  0, or -1. */
static int gather_rank_rows(const cp_rank_run_t *rr, const collprof_replay_row_t *mine,
                            collprof_replay_row_t **rk, size_t *nrk)
{
    int nr = rr->boot.nranks;
    collprof_replay_row_t one = mine != NULL ? *mine : (collprof_replay_row_t){.what = ""};
    collprof_replay_row_t *all = rr->boot.rank == 0 ? calloc((size_t)nr, sizeof(*all)) : NULL;
    int ok = rr->boot.rank != 0 || all != NULL;
    cp_agreement_t a;
    ok = cp_agree(nr, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) ==
             CP_AGREE_OK &&
         cp_oob_gather(&one, all, sizeof(one)) == 0;
    *nrk = 0;
    for (int r = 0; ok && all != NULL && r < nr; r++) {
        if (!strcmp(all[r].what, "rank")) {
            all[(*nrk)++] = all[r];
        }
    }
    *rk = all;
    return ok ? 0 : -1;
}

/* Every backend's report rows on rank 0 (the type, trace and rank rows, the path's), printed
 * once; the op rows went to /replay as they came (at: the rows written there). */
typedef struct acc {
    collprof_replay_row_t *rows;
    size_t n;
    uint64_t at;
} acc_t;

/* Rank 0: the report rows of one backend (g) after its op rows, in /replay and acc.  Its
 * exit status. */
static int report_rows(gat_t *g, const cp_trace_t *t, double whole, double crit,
                       const collprof_replay_row_t *rk, size_t nrk, acc_t *acc)
{
    size_t nhead = 0, n = 0;
    collprof_replay_row_t *out = cp_rfold_rows(g->fold, t, whole, crit, rk, nrk, &nhead, &n);
    int status = out == NULL || g->failed || cp_rfold_bad(g->fold) ? CP_EXIT_FAILED : CP_EXIT_OK;
    if (out != NULL && g->rr->sum != NULL &&
        cp_summary_replay(g->rr->sum, out + nhead, n - nhead, g->base + g->nall) != 0) {
        status = CP_EXIT_FAILED;
    }
    collprof_replay_row_t *grown =
        out != NULL ? realloc(acc->rows, (acc->n + n + 1) * sizeof(*out)) : NULL;
    if (grown != NULL) {
        memcpy(grown + acc->n, out, n * sizeof(*out));
        acc->rows = grown;
        acc->n += n;
    } else {
        status = CP_EXIT_FAILED;
    }
    acc->at += g->nall + (n - nhead);
    free(out);
    return status;
}

/* Replay the trace on plugin p; rank 0 writes its op rows and appends its report's rows to
 * acc.  Its exit status. */
static int replay_on(cp_rank_run_t *rr, cp_plugin_t *p, const char *variant, acc_t *acc)
{
    const cp_trace_t *t = rr->trace;
    collprof_replay_row_t *mine = NULL, *rk = NULL;
    size_t n = 0, nrk = 0;
    double whole = 0, crit = 0;
    const cp_trace_scan_t *sc = cp_replay_scan();
    cp_log(CP_LOG_INFO, "replay: %zu ops of %d ranks in %zu groups on %s (variant %s), %d times",
           sc != NULL ? sc->nops : t->nops, t->nranks, t->ngroups, p->name, variant,
           rr->opt->replay_iters);
    int rc = cp_replay_run(p, variant, t, &rr->boot, &rr->host, rr->opt->replay_iters,
                           cp_tmo_outer(rr->opt->timeout_s), &mine, &n, &whole);
    double *wholes = calloc((size_t)rr->boot.nranks, sizeof(double));
    if (wholes == NULL || cp_oob_allgather(&whole, wholes, sizeof(whole)) != 0) {
        rc = -1;
    }
    for (int r = 0; wholes != NULL && r < rr->boot.nranks; r++) {
        whole = wholes[r] > whole ? wholes[r] : whole;
    }
    free(wholes);
    int has_rank = n > 0 && !strcmp(mine[n - 1].what, "rank"); /* --gaps: its rank row, last */
    gat_t g = {.rr = rr, .base = acc->at};
    rc |= gather_ops(&g, mine, n - (size_t)has_rank, &crit);
    rc |= gather_rank_rows(rr, has_rank ? &mine[n - 1] : NULL, &rk, &nrk);
    int status = rc == 0 ? CP_EXIT_OK : CP_EXIT_FAILED;
    if (rr->boot.rank == 0 && g.fold != NULL) {
        int s = report_rows(&g, t, whole, crit, rk, nrk, acc);
        status = s != CP_EXIT_OK ? s : status;
    }
    cp_rfold_free(g.fold);
    cp_path_free(g.path);
    free(g.rows);
    free(g.cnt);
    free(g.off);
    free(mine);
    free(rk);
    return status;
}

/*
 * The variants the trace is replayed with on p, in v[]: the library's own choice ("default")
 * unless --variants was given; then each variant listed that p offers for some op ("default"
 * always), or with --variants all, "default" and every variant p lists: the matrix's list
 * (cp_plan_variants, a listed variant that "default" runs left out).  The same on every rank
 * (the same options, the same plugin).
 */
static int replay_variants(const cp_rank_run_t *rr, const cp_plugin_t *p, const char **v)
{
    const cp_spec_t *s = rr->opt->nspecs > 0 ? &rr->opt->specs[0] : NULL;
    const char *want[CP_MAX_LIST + 1];
    int n = 0, given = rr->opt->variants_given && s != NULL;
    int nwant = given ? cp_plan_variants(s, p, want, CP_MAX_LIST) : 0;
    if (!given) {
        v[n++] = "default";
    }
    for (int k = 0; k < nwant; k++) {
        int offered = !strcmp(want[k], "default");
        for (int op = 0; !offered && op < COLLPROF_OP_COUNT; op++) {
            offered = cp_plugin_has_variant(p, (collprof_op_t)op, want[k]);
        }
        if (offered) {
            v[n++] = want[k];
        } else if (rr->boot.rank == 0) {
            cp_log(CP_LOG_INFO, "replay: backend %s has no variant %s: not replayed with it",
                   p->name, want[k]);
        }
    }
    return n;
}

int cp_loop_replay(cp_rank_run_t *rr, int *stopped)
{
    (void)stopped;
    int status = CP_EXIT_OK, any = 0;
    acc_t acc = {NULL, 0, 0};
    for (int i = 0; i < rr->nplugins; i++) {
        cp_plugin_t *p = &rr->plugins[i];
        if (!rr->plan.plugins_used[i] || p->ctx == NULL) {
            continue;
        }
        any = 1;
        const char *v[CP_MAX_LIST + 1];
        int nv = replay_variants(rr, p, v);
        for (int k = 0; k < nv; k++) {
            int s = replay_on(rr, p, v[k], &acc);
            status = s != CP_EXIT_OK ? s : status;
        }
    }
    if (acc.n > 0 && rr->sum != NULL &&
        cp_summary_replay(rr->sum, acc.rows, acc.n, CP_REPLAY_PRINT) != 0) {
        status = CP_EXIT_FAILED;
    }
    free(acc.rows);
    if (!any && rr->boot.rank == 0) {
        fprintf(stderr, "collprof: error: no backend could run the replay (see the messages "
                        "above)\n");
    }
    return any ? status : CP_EXIT_FAILED;
}
