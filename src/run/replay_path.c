/*
 * Skew, stragglers and the critical path of a replay (replay_path.h; docs/replay.md, "The
 * report").  An op's instance is the k-th replayed collective of its group on each member
 * (the order every backend matches collectives in); point-to-point ops and ops of a group of
 * one depend on their own rank's previous op alone.
 *
 * The critical path is computed on a model of the replay: each rank issues its next op as
 * soon as its previous one is done (back to back, as --gaps none replays), an instance starts
 * when the last of its members has issued it, and it then costs the least replayed time of
 * its members (the member that waited least: its time is the op's own once every member is
 * in).  The path is the chain of ops that ends last, followed back from the last instance to
 * the member that issued it last, that member's previous op, and so on; its length is the sum
 * of the costs on it, the time the trace's order forces when no rank waits for anything else.
 *
 * The model steps one rank at a time as far as it goes without waiting, the ranks an instance
 * frees stacked in rank order (the last stepped first); a rank whose cursor runs dry waits on
 * top of the stack for the next pull, so the order, and with it every tie, is the same
 * whatever the cursors hold.  Each rank's ops end in order (the model's times only grow), so
 * an op is kept only while a chain that can still become the path holds it.
 */
#include "config.h"

#include "run/replay_path_int.h"

#include "colls/colls.h"

#include <stdlib.h>
#include <string.h>

void cp_prec_of(const collprof_replay_row_t *r, cp_prec_t *p)
{
    int timed = r->issue_us >= 0 && !strcmp(r->what, "op");
    int coll = cp_coll_from_name(r->op) >= 0;
    *p = (cp_prec_t){.group = r->group,
                     .kind = !timed                                       ? CP_PREC_SKIP
                             : r->group >= 0 && r->group_size > 1 && coll ? CP_PREC_COLL
                                                                          : CP_PREC_OWN,
                     .time_p50_us = r->time_p50_us,
                     .issue_us = r->issue_us};
}

cp_path_t *cp_path_new(int nranks, const uint64_t *rows, size_t per)
{
    cp_path_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->nr = nranks;
    p->per = per > 0 ? per : 1;
    p->rk = calloc((size_t)nranks + 1, sizeof(*p->rk));
    p->stack = calloc((size_t)nranks + 1, sizeof(int));
    p->best_rank = -1;
    for (int r = 0; p->rk != NULL && p->stack != NULL && r < nranks; r++) {
        prk_t *q = &p->rk[r];
        q->n = rows[r];
        q->cap = q->n < 2 * p->per ? (size_t)q->n : 2 * p->per;
        q->buf = calloc(q->cap + 1, sizeof(cp_prec_t));
        if (q->buf == NULL) {
            p->oom = 1;
        }
    }
    if (p->rk == NULL || p->stack == NULL || p->oom) {
        cp_path_free(p);
        return NULL;
    }
    return p;
}

int cp_path_counts(cp_path_t *p, int rank, const cp_gcount_t *c, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        if (c[i].group < 0 || c[i].count <= 0) {
            continue;
        }
        if ((size_t)c[i].group >= p->ng) {
            size_t ng = 2 * (size_t)c[i].group + 16;
            pgrp_t *g = realloc(p->g, ng * sizeof(*g));
            if (g == NULL) {
                return -1;
            }
            memset(g + p->ng, 0, (ng - p->ng) * sizeof(*g));
            p->g = g;
            p->ng = ng;
        }
        pgrp_t *g = &p->g[c[i].group];
        if (g->nmem == g->capmem) {
            size_t cap = g->capmem > 0 ? 2 * g->capmem : 4;
            pmem_t *mem = realloc(g->mem, cap * sizeof(*mem));
            if (mem == NULL) {
                return -1;
            }
            g->mem = mem;
            g->capmem = cap;
        }
        g->mem[g->nmem++] = (pmem_t){.rank = rank, .count = c[i].count};
        g->kmax = c[i].count > g->kmax ? c[i].count : g->kmax;
    }
    return 0;
}

int cp_path_feed(cp_path_t *p, int rank, const cp_prec_t *recs, size_t m)
{
    prk_t *q = &p->rk[rank];
    if (q->pos > 0 && q->len > q->pos) { /* (no buffer yet: nothing to move) */
        memmove(q->buf, q->buf + q->pos, (q->len - q->pos) * sizeof(*q->buf));
    }
    q->base += q->pos;
    q->len -= q->pos;
    q->pos = 0;
    if (q->len + m > q->cap) { /* (the drain: every remaining record) */
        cp_prec_t *b = realloc(q->buf, (q->len + m) * sizeof(*b));
        if (b == NULL) {
            p->oom = 1;
            return -1;
        }
        q->buf = b;
        q->cap = q->len + m;
    }
    if (m > 0) {
        memcpy(q->buf + q->len, recs, m * sizeof(*recs));
    }
    q->len += m;
    q->fetched += m;
    return 0;
}

/* A new op on rank's chain after prev (referenced); NULL when out of memory. */
static pnode_t *node_new(cp_path_t *p, int rank, int64_t idx, double cost, pnode_t *prev)
{
    pnode_t *x = malloc(sizeof(*x));
    if (x == NULL) {
        p->oom = 1;
        return NULL;
    }
    *x = (pnode_t){.prev = prev, .idx = idx, .cost = cost, .rank = rank, .refs = 1};
    if (prev != NULL) {
        prev->refs++;
    }
    return x;
}

/* Rank q's op idx ends at fin, on the chain x: the rank's last op, and its best so far. */
static void ended(prk_t *q, int64_t idx, double fin, pnode_t *x)
{
    x->refs += 2;
    cp_pnode_drop(q->last);
    q->last = x;
    if (fin >= 0 && (q->best == NULL || fin > q->best_fin)) {
        cp_pnode_drop(q->best);
        q->best = x;
        q->best_fin = fin;
        q->best_idx = idx;
    } else {
        x->refs--;
    }
    q->avail = fin;
}

/* Rank r arrives at group g's pending instance with record c. */
static void arrive(cp_path_t *p, pgrp_t *g, int r, const cp_prec_t *c)
{
    prk_t *q = &p->rk[r];
    if (g->arrived == 0) {
        g->expect = 0;
        for (size_t i = 0; i < g->nmem; i++) {
            g->expect += g->mem[i].count > g->k;
        }
    }
    if (g->arrived == 0 || q->avail > g->ready) {
        g->ready = q->avail;
        g->last_rank = r;
        g->last_idx = (int64_t)(q->base + q->pos);
        cp_pnode_drop(g->last_prev);
        g->last_prev = q->last;
        if (q->last != NULL) {
            q->last->refs++;
        }
    }
    double t = c->time_p50_us, is = c->issue_us;
    g->cost = g->arrived == 0 || t < g->cost ? t : g->cost;
    g->lo = g->arrived == 0 || is < g->lo ? is : g->lo;
    if (g->arrived == 0 || is > g->hi || (is == g->hi && r < g->hi_rank)) {
        g->hi = is;
        g->hi_rank = r;
    }
    g->arrived++;
    q->waiting = 1;
}

/* Group g's pending instance is complete: its members end at its ready + cost and go on, on
 * the stack in rank order.  0, or -1. */
static int complete(cp_path_t *p, pgrp_t *g)
{
    double f = g->ready + g->cost;
    pnode_t *x = node_new(p, g->last_rank, g->last_idx, g->cost, g->last_prev);
    if (x == NULL) {
        return -1;
    }
    cp_pnode_drop(g->last_prev);
    g->last_prev = NULL;
    if (g->k < g->kmax) {
        g->skew[g->k] = g->hi - g->lo;
        g->strag[g->k] = g->expect > 1 ? g->hi_rank : -1;
    }
    for (size_t i = 0; i < g->nmem; i++) { /* its members, every one arrived: in rank order */
        if (g->mem[i].count > g->k) {
            prk_t *q = &p->rk[g->mem[i].rank];
            ended(q, (int64_t)(q->base + q->pos), f, x);
            q->pos++;
            q->waiting = 0;
            p->stack[p->top++] = g->mem[i].rank; /* (a rank is on the stack once at most) */
        }
    }
    cp_pnode_drop(x);
    g->k++;
    g->arrived = 0;
    return 0;
}

/* Advance rank r in the model as far as it goes without waiting: 0, 1 when its cursor ran
 * dry, -1 when out of memory. */
static int step(cp_path_t *p, int r)
{
    prk_t *q = &p->rk[r];
    while (q->base + q->pos < q->n) {
        if (q->pos == q->len) {
            return 1;
        }
        const cp_prec_t *c = &q->buf[q->pos];
        if (c->kind == CP_PREC_OWN || (c->kind == CP_PREC_COLL && (size_t)c->group >= p->ng)) {
            int64_t idx = (int64_t)(q->base + q->pos);
            pnode_t *x = node_new(p, r, idx, c->time_p50_us, q->last);
            if (x == NULL) {
                return -1;
            }
            ended(q, idx, q->avail + c->time_p50_us, x);
            cp_pnode_drop(x);
        }
        if (c->kind != CP_PREC_COLL || (size_t)c->group >= p->ng) {
            q->pos++;
            continue;
        }
        pgrp_t *g = &p->g[c->group];
        if (!q->waiting) {
            arrive(p, g, r, c);
        }
        return g->arrived < g->expect ? 0 : complete(p, g);
    }
    return 0;
}

static int cmp_mem(const void *a, const void *b)
{
    return ((const pmem_t *)a)->rank - ((const pmem_t *)b)->rank;
}

/* The groups' members in rank order, their instances' skews and stragglers.  0, or -1. */
static int prepare(cp_path_t *p)
{
    for (size_t i = 0; i < p->ng; i++) {
        pgrp_t *g = &p->g[i];
        if (g->nmem > 1) { /* (a group with no member seen has no array: qsort wants one) */
            qsort(g->mem, g->nmem, sizeof(*g->mem), cmp_mem);
        }
        g->skew = calloc((size_t)g->kmax + 1, sizeof(double));
        g->strag = calloc((size_t)g->kmax + 1, sizeof(int32_t));
        if (g->skew == NULL || g->strag == NULL) {
            return -1;
        }
    }
    return 0;
}

double cp_path_run(cp_path_t *p, cp_path_pull_fn pull, void *arg)
{
    if (p->oom || prepare(p) != 0) {
        return -1;
    }
    for (int r = 0; r < p->nr; r++) {
        p->stack[p->top++] = r;
    }
    while (p->top > 0) {
        int r = p->stack[--p->top];
        int s = step(p, r);
        if (s < 0 || (s == 1 && pull(arg, p) != 0)) {
            return -1;
        }
        if (s == 1) {
            p->stack[p->top++] = r;
        } else if (p->rk[r].base + p->rk[r].pos == p->rk[r].n && !p->rk[r].waiting) {
            cp_path_finish(p, r);
        }
    }
    int stalled = 0;
    for (int r = 0; r < p->nr; r++) {
        stalled |= !p->rk[r].done;
    }
    if (stalled && cp_path_drain(p, pull, arg) != 0) {
        return -1;
    }
    for (int r = 0; r < p->nr; r++) {
        if (!p->rk[r].done) {
            cp_path_finish(p, r);
        }
    }
    return p->oom ? -1 : cp_path_walk(p);
}

void cp_path_row(const cp_path_t *p, int rank, uint64_t idx, const cp_prec_t *rec, int64_t k,
                 collprof_replay_row_t *r)
{
    if (rec->kind == CP_PREC_COLL && rec->group >= 0 && (size_t)rec->group < p->ng && k >= 0 &&
        k < p->g[rec->group].kmax) {
        r->skew_us = p->g[rec->group].skew[k];
        r->straggler = p->g[rec->group].strag[k];
    }
    pentry_t key = {.rank = rank, .idx = (int64_t)idx};
    const pentry_t *on =
        p->npath > 0 ? bsearch(&key, p->path, p->npath, sizeof(key), cp_pentry_cmp) : NULL;
    r->critical_us = rec->kind == CP_PREC_SKIP ? -1 : on != NULL ? on->cost : 0;
}

void cp_path_free(cp_path_t *p)
{
    if (p == NULL) {
        return;
    }
    for (int r = 0; p->rk != NULL && r < p->nr; r++) {
        cp_pnode_drop(p->rk[r].last);
        cp_pnode_drop(p->rk[r].best);
        free(p->rk[r].buf);
    }
    for (size_t i = 0; i < p->ng; i++) {
        cp_pnode_drop(p->g[i].last_prev);
        free(p->g[i].mem);
        free(p->g[i].skew);
        free(p->g[i].strag);
    }
    cp_pnode_drop(p->best);
    free(p->g);
    free(p->rk);
    free(p->stack);
    free(p->path);
    free(p);
}
