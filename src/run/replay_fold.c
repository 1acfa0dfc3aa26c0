#include "config.h"

#include "run/replay_fold.h"

#include "base/stats.h"
#include "colls/colls.h"
#include "runner/replay_gaps.h"
#include "runner/replay_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing list of doubles (a median's values). */
typedef struct dvec {
    double *v;
    size_t n, cap;
} dvec_t;

/* One type row's fold: an operation x message size x group. */
typedef struct tkey {
    collprof_replay_row_t first; /* its first op row (the lowest at), as the path left it */
    uint64_t first_at;
    int64_t k;
    uint64_t wrong, replayed_bytes;
    char status[16];
    double crit; /* its ops' critical parts summed; -1: none */
    dvec_t time, rec, skew, exposed, overl;
    int64_t *last;              /* [nranks]: the ops each rank was last in; NULL: none yet */
    collprof_replay_row_t gaps; /* issue_err_*, late: the fold of --gaps */
} tkey_t;

/* A rank's or a group's part of the critical path. */
typedef struct part {
    int64_t ops;
    double us; /* summed in the order its rows come: each rank's in seq order */
} part_t;

/* An open-addressing index of the items of a list, by a hash of their key. */
typedef struct hidx {
    size_t *slot; /* item + 1; 0: empty */
    size_t nslot;
} hidx_t;

struct cp_rfold {
    int nranks;
    tkey_t *t;
    size_t nt, capt;
    hidx_t ti;
    part_t *pr, *pg; /* per rank, per group (npg of them) */
    size_t npg;
    double *exsum; /* per rank: its ops' exposed_us summed, -1: none measured */
    double *ovsum; /* per rank: its ops' overlapped_us summed (exsum's block) */
    collprof_replay_row_t first;
    uint64_t nops;
    int bad, oom;
    int unchecked; /* --check 0: no op's result was checked */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0x100000001b3ULL;
}

static uint64_t hash_type(const collprof_replay_row_t *r)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = r->op; *c; c++) {
        h = mix(h, (unsigned char)*c);
    }
    return mix(mix(h, r->bytes), (uint64_t)(uint32_t)r->group);
}

/* The slot of key h in x where eq(item) holds or the empty one it would take. */
static size_t probe(const hidx_t *x, uint64_t h, int (*eq)(const void *, size_t, const void *),
                    const void *list, const void *key)
{
    size_t s = (size_t)(h % x->nslot);
    while (x->slot[s] != 0 && !eq(list, x->slot[s] - 1, key)) {
        s = (s + 1) % x->nslot;
    }
    return s;
}

static int eq_type(const void *list, size_t i, const void *key)
{
    const collprof_replay_row_t *a = &((const tkey_t *)list)[i].first, *b = key;
    return a->bytes == b->bytes && a->group == b->group && !strcmp(a->op, b->op);
}

/* Make room in x for a list of n + 1 items (rehashed with hf when it grows).  0, or -1. */
static int grow_idx(hidx_t *x, size_t n, uint64_t (*hf)(const void *, size_t), const void *list)
{
    if (2 * (n + 1) < x->nslot) {
        return 0;
    }
    hidx_t y = {calloc(4 * (n + 1) + 16, sizeof(size_t)), 4 * (n + 1) + 16};
    if (y.slot == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t s = (size_t)(hf(list, i) % y.nslot);
        while (y.slot[s] != 0) {
            s = (s + 1) % y.nslot;
        }
        y.slot[s] = i + 1;
    }
    free(x->slot);
    *x = y;
    return 0;
}

static uint64_t hf_type(const void *list, size_t i)
{
    return hash_type(&((const tkey_t *)list)[i].first);
}

static int push(dvec_t *d, double x)
{
    if (d->n == d->cap) {
        size_t c = d->cap > 0 ? 2 * d->cap : 16;
        double *v = realloc(d->v, c * sizeof(double));
        if (v == NULL) {
            return -1;
        }
        d->v = v;
        d->cap = c;
    }
    d->v[d->n++] = x;
    return 0;
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

cp_rfold_t *cp_rfold_new(int nranks, int unchecked)
{
    cp_rfold_t *f = calloc(1, sizeof(*f));
    double *ex = calloc(2 * ((size_t)nranks + 1), sizeof(double));
    part_t *pr = calloc((size_t)nranks + 1, sizeof(part_t));
    if (f == NULL || ex == NULL || pr == NULL) {
        free(f);
        free(ex);
        free(pr);
        return NULL;
    }
    f->pr = pr;
    f->nranks = nranks;
    f->unchecked = unchecked;
    f->exsum = ex;
    f->ovsum = ex + nranks + 1;
    for (int r = 0; r < nranks; r++) {
        f->exsum[r] = -1;
    }
    return f;
}

/* The type of r, found or added; NULL when out of memory. */
static tkey_t *type_of(cp_rfold_t *f, uint64_t at, const collprof_replay_row_t *r)
{
    if (grow_idx(&f->ti, f->nt, hf_type, f->t) != 0) {
        return NULL;
    }
    size_t s = probe(&f->ti, hash_type(r), eq_type, f->t, r);
    if (f->ti.slot[s] != 0) {
        return &f->t[f->ti.slot[s] - 1];
    }
    if (f->nt == f->capt) {
        size_t c = f->capt > 0 ? 2 * f->capt : 16;
        tkey_t *t = realloc(f->t, c * sizeof(*t));
        if (t == NULL) {
            return NULL;
        }
        f->t = t;
        f->capt = c;
    }
    tkey_t *k = &f->t[f->nt];
    memset(k, 0, sizeof(*k));
    k->first = *r;
    k->first_at = at;
    k->crit = -1;
    snprintf(k->status, sizeof(k->status), "%s", r->status);
    k->replayed_bytes = r->replayed_bytes;
    k->gaps.issue_err_p50_us = k->gaps.issue_err_p99_us = k->gaps.issue_err_max_us = -1;
    f->ti.slot[s] = ++f->nt;
    return k;
}

/* Op r on the critical path: its rank's and its group's parts.  0, or -1. */
static int on_path(cp_rfold_t *f, const collprof_replay_row_t *r)
{
    if (!(r->critical_us > 0 && r->rank >= 0 && r->rank < f->nranks && r->group >= 0)) {
        return 0;
    }
    if ((size_t)r->group >= f->npg) {
        size_t c = 2 * (size_t)r->group + 16;
        part_t *g = realloc(f->pg, c * sizeof(*g));
        if (g == NULL) {
            return -1;
        }
        memset(g + f->npg, 0, (c - f->npg) * sizeof(*g));
        f->pg = g;
        f->npg = c;
    }
    f->pr[r->rank].ops++;
    f->pr[r->rank].us += r->critical_us;
    f->pg[r->group].ops++;
    f->pg[r->group].us += r->critical_us;
    return 0;
}

/* r's figures into its type k. */
static int fold_into(cp_rfold_t *f, tkey_t *k, uint64_t at, const collprof_replay_row_t *r)
{
    if (at < k->first_at) {
        k->first = *r;
        k->first_at = at;
    }
    k->k++;
    k->wrong += r->wrong;
    snprintf(k->status, sizeof(k->status), "%s", worse(k->status, r->status));
    k->replayed_bytes =
        r->replayed_bytes > k->replayed_bytes ? r->replayed_bytes : k->replayed_bytes;
    if (r->critical_us >= 0) {
        k->crit = (k->crit > 0 ? k->crit : 0) + r->critical_us;
    }
    if (r->straggler >= 0 && r->straggler == r->rank && r->rank < f->nranks) {
        k->last = k->last != NULL ? k->last : calloc((size_t)f->nranks, sizeof(int64_t));
        if (k->last == NULL) {
            return -1;
        }
        k->last[r->rank]++;
    }
    cp_gaps_fold_add(&k->gaps, r);
    int bad = 0;
    if (!strcmp(r->status, "ok") || !strcmp(r->status, "wrong")) {
        bad |= push(&k->time, r->time_p50_us);
    }
    bad |= r->recorded_us > 0 ? push(&k->rec, r->recorded_us) : 0;
    bad |= r->skew_us >= 0 ? push(&k->skew, r->skew_us) : 0;
    bad |= r->exposed_us >= 0 ? push(&k->exposed, r->exposed_us) : 0;
    bad |= r->overlapped_us >= 0 ? push(&k->overl, r->overlapped_us) : 0;
    return bad ? -1 : 0;
}

int cp_rfold_add(cp_rfold_t *f, uint64_t at, collprof_replay_row_t *r)
{
    bandwidths(r);
    if (at == 0) {
        f->first = *r;
    }
    f->nops++;
    f->bad |= !strcmp(r->status, "wrong") || !strcmp(r->status, "error");
    if (r->exposed_us >= 0 && r->rank >= 0 && r->rank < f->nranks) {
        f->exsum[r->rank] = (f->exsum[r->rank] > 0 ? f->exsum[r->rank] : 0) + r->exposed_us;
    }
    if (r->overlapped_us >= 0 && r->rank >= 0 && r->rank < f->nranks) {
        f->ovsum[r->rank] += r->overlapped_us;
    }
    tkey_t *k = type_of(f, at, r);
    if (k == NULL || fold_into(f, k, at, r) != 0 || on_path(f, r) != 0) {
        f->oom = 1;
        return -1;
    }
    return 0;
}

int cp_rfold_bad(const cp_rfold_t *f)
{
    return f->bad;
}

static int cmp_key(const void *a, const void *b)
{
    const collprof_replay_row_t *x = &((const tkey_t *)a)->first, *y = &((const tkey_t *)b)->first;
    int c = strcmp(x->op, y->op);
    if (c != 0) {
        return c;
    }
    if (x->bytes != y->bytes) {
        return x->bytes < y->bytes ? -1 : 1;
    }
    return x->group - y->group;
}

static double median_or(dvec_t *d, double none)
{
    return d->n > 0 ? cp_stats_median(d->v, d->n) : none;
}

/* Type k's row. */
static void type_row(const cp_rfold_t *f, tkey_t *k, collprof_replay_row_t *r)
{
    *r = k->first;
    snprintf(r->what, sizeof(r->what), "type");
    r->rank = -1;
    r->seq = -1;
    r->ops = k->k;
    r->wrong = k->wrong;
    snprintf(r->status, sizeof(r->status), "%s", k->status);
    r->time_p50_us = cp_stats_median(k->time.v, k->time.n);
    r->recorded_us = median_or(&k->rec, -1);
    r->ratio = r->recorded_us > 0 && k->time.n > 0 ? r->time_p50_us / r->recorded_us : 0;
    r->replayed_bytes = k->replayed_bytes;
    bandwidths(r);
    r->issue_us = -1;
    r->skew_us = median_or(&k->skew, -1);
    r->exposed_us = median_or(&k->exposed, -1);
    r->overlapped_us = median_or(&k->overl, -1);
    r->straggler = -1;
    r->straggler_ops = 0;
    r->critical_us = k->crit;
    for (int q = 0; k->last != NULL && q < f->nranks; q++) {
        if (k->last[q] > r->straggler_ops) {
            r->straggler = q;
            r->straggler_ops = k->last[q];
        }
    }
    r->issue_err_p50_us = k->gaps.issue_err_p50_us;
    r->issue_err_p99_us = k->gaps.issue_err_p99_us;
    r->issue_err_max_us = k->gaps.issue_err_max_us;
    r->late = k->gaps.late;
}

double cp_replay_window_us(const cp_trace_t *t)
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

/* The trace row, from the first op row and the type rows ty[nt]. */
static void trace_row(const cp_rfold_t *f, const cp_trace_t *t, double whole, double crit,
                      const collprof_replay_row_t *ty, size_t nt, collprof_replay_row_t *tr)
{
    *tr = f->nops > 0 ? f->first : (collprof_replay_row_t){.iterations = 0};
    snprintf(tr->what, sizeof(tr->what), "trace");
    snprintf(tr->status, sizeof(tr->status), "skipped");
    tr->op[0] = tr->dtype[0] = tr->note[0] = '\0';
    if (f->unchecked || t->shrunk_from > 0) { /* (replay_print.c reads the first words) */
        snprintf(tr->note, sizeof(tr->note), "%s%s", f->unchecked ? CP_RFOLD_UNCHECKED : "",
                 f->unchecked && t->shrunk_from > 0 ? "; " : "");
    }
    if (t->shrunk_from > 0) {
        size_t l = strlen(tr->note);
        snprintf(tr->note + l, sizeof(tr->note) - l, "shrunk from %d ranks to %d (--shrink)",
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
    tr->exposed_us = tr->overlapped_us = -1; /* the slowest rank's sums */
    for (int r = 0; r < f->nranks; r++) {
        if (f->exsum[r] > tr->exposed_us) {
            tr->exposed_us = f->exsum[r];
            tr->overlapped_us = f->ovsum[r];
        }
    }
    for (size_t i = 0; i < nt; i++) {
        tr->wrong += ty[i].wrong;
        tr->bytes += ty[i].bytes * (uint64_t)ty[i].ops;
        snprintf(tr->status, sizeof(tr->status), "%s", worse(tr->status, ty[i].status));
    }
    tr->ops = (int64_t)f->nops;
    tr->time_p50_us = whole;
    tr->recorded_us = cp_replay_window_us(t);
    tr->ratio = tr->recorded_us > 0 ? whole / tr->recorded_us : 0;
}

/* The path's rows: one per rank on it (group -1), one per group on it (rank -1): their ops
 * and part (format/replay_print.c's path line reads them as it reads the op rows); n. */
static size_t path_rows(const cp_rfold_t *f, collprof_replay_row_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < (size_t)f->nranks + f->npg; i++) {
        int rk = i < (size_t)f->nranks;
        const part_t *p = rk ? &f->pr[i] : &f->pg[i - (size_t)f->nranks];
        if (p->ops > 0) {
            out[n] = f->first; /* (its backend, iterations) */
            out[n].rank = rk ? (int)i : -1;
            out[n].group = rk ? -1 : (int)(i - (size_t)f->nranks);
            out[n].ops = p->ops;
            out[n].critical_us = p->us;
            n++;
        }
    }
    return n;
}

collprof_replay_row_t *cp_rfold_rows(cp_rfold_t *f, const cp_trace_t *t, double whole, double crit,
                                     const collprof_replay_row_t *rk, size_t nrk, size_t *nhead,
                                     size_t *n)
{
    *nhead = *n = 0;
    size_t np = (size_t)f->nranks + f->npg;
    collprof_replay_row_t *out = calloc(np + f->nt + 1 + nrk + 1, sizeof(*out));
    if (out == NULL || f->oom) {
        free(out);
        return NULL;
    }
    np = path_rows(f, out);
    qsort(f->t, f->nt, sizeof(*f->t), cmp_key); /* (the index is stale from here) */
    free(f->ti.slot);
    f->ti = (hidx_t){NULL, 0};
    collprof_replay_row_t *ty = out + np;
    for (size_t i = 0; i < f->nt; i++) {
        type_row(f, &f->t[i], &ty[i]);
        f->bad |= !strcmp(ty[i].status, "wrong") || !strcmp(ty[i].status, "error");
    }
    trace_row(f, t, whole, crit, ty, f->nt, &ty[f->nt]);
    memcpy(&ty[f->nt + 1], rk, nrk * sizeof(*rk));
    cp_gaps_trace_row(ty, f->nt + 1, rk, nrk);
    for (size_t i = f->nt; i < f->nt + 1 + nrk; i++) { /* the trace row, the rank rows */
        f->bad |= !strcmp(ty[i].status, "wrong") || !strcmp(ty[i].status, "error");
    }
    *nhead = np;
    *n = np + f->nt + 1 + nrk;
    return out;
}

void cp_rfold_free(cp_rfold_t *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < f->nt; i++) {
        free(f->t[i].time.v);
        free(f->t[i].rec.v);
        free(f->t[i].skew.v);
        free(f->t[i].exposed.v);
        free(f->t[i].overl.v);
        free(f->t[i].last);
    }
    free(f->t);
    free(f->ti.slot);
    free(f->pr);
    free(f->pg);
    free(f->exsum);
    free(f);
}
