/*
 * collprof --replay TRACE (docs/replay.md): the trace read and checked against the job before
 * any backend communicates, then replayed on every backend of the plan in turn; rank 0
 * gathers every rank's op rows, folds them per op x size x group and for the whole trace, and
 * writes them (/replay, the summaries).
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
#include "run/replay_path.h"
#include "runner/replay.h"
#include "runner/replay_gaps.h"
#include "runner/replay_scan.h"
#include "schema/trace_read.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return 0;
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

/* Rank 0: every rank's rows of one backend into *all (*nall); the others send theirs.
 * 0, or -1 (agreed) when out of memory or the channel failed. */
static int gather_rows(const cp_rank_run_t *rr, const collprof_replay_row_t *mine, size_t n,
                       collprof_replay_row_t **all, size_t *nall)
{
    int nr = rr->boot.nranks;
    uint64_t my = n, *counts = calloc((size_t)nr, sizeof(uint64_t)), most = 0;
    if (counts == NULL || cp_oob_allgather(&my, counts, sizeof(my)) != 0) {
        free(counts);
        return -1; /* (the channel's failure ends the job) */
    }
    for (int r = 0; r < nr; r++) {
        most = counts[r] > most ? counts[r] : most;
    }
    size_t rl = (size_t)(most > 0 ? most : 1) * sizeof(collprof_replay_row_t);
    collprof_replay_row_t *send = calloc(1, rl);
    collprof_replay_row_t *recv = rr->boot.rank == 0 ? calloc((size_t)nr, rl) : NULL;
    int ok = send != NULL && (rr->boot.rank != 0 || recv != NULL);
    if (ok && n > 0) {
        memcpy(send, mine, n * sizeof(*mine));
    }
    cp_agreement_t a;
    ok = cp_agree(nr, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) ==
             CP_AGREE_OK &&
         cp_oob_gather(send, recv, rl) == 0;
    size_t k = 0;
    for (int r = 0; ok && recv != NULL && r < nr; r++) { /* packed in rank order */
        memmove(&recv[k], (char *)recv + (size_t)r * rl, counts[r] * sizeof(*recv));
        k += counts[r];
    }
    *all = recv;
    *nall = k;
    free(send);
    free(counts);
    return ok ? 0 : -1;
}

static int cmp_key(const void *a, const void *b)
{
    const collprof_replay_row_t *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    if (c != 0) {
        return c;
    }
    if (x->bytes != y->bytes) {
        return x->bytes < y->bytes ? -1 : 1;
    }
    return x->group - y->group;
}

/* The worse of two statuses: error > wrong > unsupported > ok > skipped. */
static const char *worse(const char *a, const char *b)
{
    static const char *const order[] = {"error", "wrong", "unsupported", "ok", "skipped"};
    for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
        if (!strcmp(a, order[i]) || !strcmp(b, order[i])) {
            return order[i];
        }
    }
    return a;
}

/* Row r's algBW and busBW from its replayed_bytes and time (the matrix's factors). */
static void bandwidths(collprof_replay_row_t *r)
{
    int op = cp_coll_from_name(r->op);
    r->algbw_gbs = r->replayed_bytes > 0 && r->time_p50_us > 0
                       ? (double)r->replayed_bytes / r->time_p50_us * 1e-3 /* B/us -> GB/s */
                       : 0;
    r->busbw_gbs = op >= 0 ? r->algbw_gbs * collprof_busbw_factor(op, r->group_size) : 0;
}

/* The median of the op rows' double at offset off that are >= 0 (v: scratch), -1 when none. */
static double median_of(const collprof_replay_row_t *ops, size_t k, double *v, size_t off)
{
    size_t nv = 0;
    for (size_t i = 0; i < k; i++) {
        double x;
        memcpy(&x, (const char *)&ops[i] + off, sizeof(x));
        if (x >= 0) {
            v[nv++] = x;
        }
    }
    return nv > 0 ? cp_stats_median(v, nv) : -1.0;
}

/* A type row's cross-rank figures from its op rows (cp_replay_path's): the median skew, the
 * rank most often last (ties: the lowest) and how often, its ops' parts of the critical path,
 * the median exposed time. */
static void fold_ranks(const collprof_replay_row_t *ops, size_t k, double *v,
                       collprof_replay_row_t *r)
{
    r->issue_us = -1;
    r->skew_us = median_of(ops, k, v, offsetof(collprof_replay_row_t, skew_us));
    r->exposed_us = median_of(ops, k, v, offsetof(collprof_replay_row_t, exposed_us));
    r->straggler = -1;
    r->straggler_ops = 0;
    r->critical_us = -1;
    int nr = 0;
    for (size_t i = 0; i < k; i++) {
        nr = ops[i].rank + 1 > nr ? ops[i].rank + 1 : nr;
        if (ops[i].critical_us >= 0) {
            r->critical_us = (r->critical_us > 0 ? r->critical_us : 0) + ops[i].critical_us;
        }
    }
    int64_t *last = calloc((size_t)nr + 1, sizeof(int64_t)); /* per rank: the ops it was last in */
    for (size_t i = 0; last != NULL && i < k; i++) {
        last[ops[i].rank] += ops[i].straggler >= 0 && ops[i].straggler == ops[i].rank;
    }
    for (int q = 0; last != NULL && q < nr; q++) {
        if (last[q] > r->straggler_ops) {
            r->straggler = q;
            r->straggler_ops = last[q];
        }
    }
    free(last);
}

/* One type row from the op rows ops[0..k) of one key; v: scratch of k doubles. */
static void fold(const collprof_replay_row_t *ops, size_t k, double *v, collprof_replay_row_t *r)
{
    *r = ops[0];
    snprintf(r->what, sizeof(r->what), "type");
    r->rank = -1;
    r->seq = -1;
    r->ops = (int64_t)k;
    r->wrong = 0;
    size_t nt = 0, nrec = 0;
    for (size_t i = 0; i < k; i++) {
        if (!strcmp(ops[i].status, "ok") || !strcmp(ops[i].status, "wrong")) {
            v[nt++] = ops[i].time_p50_us;
        }
        r->wrong += ops[i].wrong;
        snprintf(r->status, sizeof(r->status), "%s", worse(r->status, ops[i].status));
    }
    r->time_p50_us = cp_stats_median(v, nt);
    for (size_t i = 0; i < k; i++) {
        if (ops[i].recorded_us > 0) {
            v[nrec++] = ops[i].recorded_us;
        }
    }
    r->recorded_us = nrec > 0 ? cp_stats_median(v, nrec) : -1;
    r->ratio = r->recorded_us > 0 && nt > 0 ? r->time_p50_us / r->recorded_us : 0;
    for (size_t i = 0; i < k; i++) {
        r->replayed_bytes =
            ops[i].replayed_bytes > r->replayed_bytes ? ops[i].replayed_bytes : r->replayed_bytes;
    }
    bandwidths(r);
    fold_ranks(ops, k, v, r);
    cp_gaps_fold(ops, k, r);
}

/* The recorded window of t: first issue to last completion, us; -1 when not recorded. */
static double window_us(const cp_trace_t *t)
{
    const cp_trace_scan_t *sc = cp_replay_scan(); /* every rank's, where t holds this rank's */
    int64_t lo = sc != NULL ? sc->first_ns : -1, hi = sc != NULL ? sc->end_ns : -1;
    for (size_t i = 0; sc == NULL && i < t->nops; i++) {
        const collprof_trace_op_row_t *o = &t->ops[i];
        if (o->t_issue_ns >= 0) {
            int64_t end = o->t_issue_ns + (o->dur_ns > 0 ? o->dur_ns : 0);
            lo = lo < 0 || o->t_issue_ns < lo ? o->t_issue_ns : lo;
            hi = end > hi ? end : hi;
        }
    }
    return lo >= 0 && hi > lo ? (double)(hi - lo) / 1e3 : -1;
}

/* The slowest rank's sum of its ops' exposed_us (--gaps compute), -1 when none measured. */
static double exposed_of(const collprof_replay_row_t *ops, size_t n)
{
    double most = -1, sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && ops[i].rank != ops[i - 1].rank) {
            sum = 0;
        }
        if (ops[i].exposed_us >= 0) {
            sum += ops[i].exposed_us;
            most = sum > most ? sum : most;
        }
    }
    return most;
}

/* Rank 0: all[n] op rows, then their type rows and the trace row appended; *nout rows. */
static collprof_replay_row_t *fold_all(const collprof_replay_row_t *all, size_t n,
                                       const cp_trace_t *t, double whole, size_t *nout)
{
    collprof_replay_row_t *out = calloc(2 * n + 1, sizeof(*out));
    collprof_replay_row_t *key = malloc((n + 1) * sizeof(*key));
    double *v = malloc((n + 1) * sizeof(double));
    if (out == NULL || key == NULL || v == NULL) {
        free(out);
        free(key);
        free(v);
        return NULL;
    }
    memcpy(out, all, n * sizeof(*all));
    double crit = cp_replay_path(out, n); /* skews, stragglers, the path's ops */
    for (size_t i = 0; i < n; i++) {
        bandwidths(&out[i]);
    }
    memcpy(key, out, n * sizeof(*all));
    qsort(key, n, sizeof(*key), cmp_key);
    size_t k = n;
    collprof_replay_row_t *tr = &out[2 * n]; /* the trace row, moved last below */
    *tr = n > 0 ? all[0] : (collprof_replay_row_t){.iterations = 0};
    snprintf(tr->what, sizeof(tr->what), "trace");
    snprintf(tr->status, sizeof(tr->status), "skipped");
    tr->op[0] = tr->dtype[0] = tr->note[0] = '\0';
    if (t->shrunk_from > 0) {
        snprintf(tr->note, sizeof(tr->note), "shrunk from %d ranks to %d (--shrink)",
                 t->shrunk_from, t->nranks);
    }
    tr->rank = tr->group = tr->group_size = -1;
    tr->seq = -1;
    tr->bytes = tr->wrong = tr->replayed_bytes = 0;
    tr->algbw_gbs = tr->busbw_gbs = 0;
    tr->issue_us = tr->skew_us = -1;
    tr->straggler = -1;
    tr->straggler_ops = 0;
    tr->critical_us = crit;
    tr->exposed_us = exposed_of(out, n);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && cmp_key(&key[i], &key[j]) == 0; j++) {
        }
        fold(&key[i], j - i, v, &out[k]);
        tr->wrong += out[k].wrong;
        tr->bytes += out[k].bytes * (uint64_t)out[k].ops;
        snprintf(tr->status, sizeof(tr->status), "%s", worse(tr->status, out[k].status));
        k++;
    }
    tr->ops = (int64_t)n;
    tr->time_p50_us = whole;
    tr->recorded_us = window_us(t);
    tr->ratio = tr->recorded_us > 0 ? whole / tr->recorded_us : 0;
    out[k++] = *tr;
    free(key);
    free(v);
    *nout = k;
    return out;
}

/* Every backend's rows on rank 0, written once (one /replay table). */
typedef struct acc {
    collprof_replay_row_t *rows;
    size_t n;
} acc_t;

/* Replay the trace on plugin p; rank 0 appends its rows to acc.  Its exit status. */
static int replay_on(cp_rank_run_t *rr, cp_plugin_t *p, const char *variant, acc_t *acc)
{
    const cp_trace_t *t = rr->trace;
    collprof_replay_row_t *mine = NULL, *all = NULL, *out = NULL;
    size_t n = 0, nall = 0, nout = 0;
    double whole = 0;
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
    if (gather_rows(rr, mine, n, &all, &nall) != 0) {
        rc = -1;
    }
    int status = rc == 0 ? CP_EXIT_OK : CP_EXIT_FAILED;
    if (rr->boot.rank == 0 && all != NULL) {
        size_t nrk = cp_gaps_partition(all, nall); /* --gaps' rank rows, last */
        out = fold_all(all, nall - nrk, t, whole, &nout);
        collprof_replay_row_t *big =
            out != NULL ? realloc(out, (nout + nrk + 1) * sizeof(*out)) : NULL;
        if (big == NULL) {
            free(out);
        }
        out = big;
        if (out != NULL) {
            memcpy(&out[nout], &all[nall - nrk], nrk * sizeof(*out));
            cp_gaps_trace_row(out, nout, &all[nall - nrk], nrk);
            nout += nrk;
        }
        status = out == NULL ? CP_EXIT_FAILED : status;
        for (size_t i = 0; out != NULL && i < nout; i++) {
            if (!strcmp(out[i].status, "wrong") || !strcmp(out[i].status, "error")) {
                status = CP_EXIT_FAILED;
            }
        }
        collprof_replay_row_t *grown =
            out != NULL ? realloc(acc->rows, (acc->n + nout) * sizeof(*out)) : NULL;
        if (grown != NULL) {
            memcpy(grown + acc->n, out, nout * sizeof(*out));
            acc->rows = grown;
            acc->n += nout;
        } else {
            status = CP_EXIT_FAILED;
        }
    }
    free(mine);
    free(all);
    free(out);
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
    acc_t acc = {NULL, 0};
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
    if (acc.n > 0 && rr->sum != NULL && cp_summary_replay(rr->sum, acc.rows, acc.n) != 0) {
        status = CP_EXIT_FAILED;
    }
    free(acc.rows);
    if (!any && rr->boot.rank == 0) {
        fprintf(stderr, "collprof: error: no backend could run the replay (see the messages "
                        "above)\n");
    }
    return any ? status : CP_EXIT_FAILED;
}
