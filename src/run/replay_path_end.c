/*
 * The end of replay_path.c's model: what its cursors want, the chains' bookkeeping, the path
 * followed back from the op that ends last, and the instances a stalled model never completed
 * (their skews and stragglers are the report's all the same).
 */
#include "config.h"

#include "run/replay_path_int.h"

#include <stdlib.h>
#include <string.h>

void cp_pnode_drop(pnode_t *x)
{
    while (x != NULL && --x->refs == 0) {
        pnode_t *prev = x->prev;
        free(x);
        x = prev;
    }
}

/* Does op (fin, rank, idx) end after (bf, br, bi)?  Ties: the lower rank, then index (the
 * first of the ops in rank order that end last). */
static int later(double fin, int rank, int64_t idx, double bf, int br, int64_t bi)
{
    if (fin != bf) {
        return fin > bf;
    }
    return rank != br ? rank < br : idx < bi;
}

void cp_path_finish(cp_path_t *p, int r)
{
    prk_t *q = &p->rk[r];
    if (q->done) {
        return; /* (a rank that ends an instance is on the stack again) */
    }
    q->done = 1;
    cp_pnode_drop(q->last);
    q->last = NULL;
    if (q->best != NULL && (p->best == NULL || later(q->best_fin, r, q->best_idx, p->best_fin,
                                                     p->best_rank, p->best_idx))) {
        cp_pnode_drop(p->best);
        p->best = q->best;
        p->best_fin = q->best_fin;
        p->best_rank = r;
        p->best_idx = q->best_idx;
    } else {
        cp_pnode_drop(q->best);
    }
    q->best = NULL;
    if (!q->waiting) { /* (a stalled rank's records stay for the drain) */
        free(q->buf);
        q->buf = NULL;
        q->base += q->pos;
        q->len = q->pos = q->cap = 0;
    }
}

size_t cp_path_want(const cp_path_t *p, int rank)
{
    const prk_t *q = &p->rk[rank];
    uint64_t left = q->n - q->fetched;
    size_t m = left < p->per ? (size_t)left : p->per;
    if (m == 0 || q->done) {
        return 0;
    }
    return p->drain || q->cap - (q->len - q->pos) >= m ? m : 0;
}

int64_t cp_path_count_of(const pgrp_t *g, int rank)
{
    size_t lo = 0, hi = g->nmem;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->mem[mid].rank < rank) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < g->nmem && g->mem[lo].rank == rank ? g->mem[lo].count : 0;
}

/* A remaining member of an instance: its group, k, rank and issue time. */
typedef struct dkey {
    int32_t group, rank;
    int64_t k;
    double issue;
} dkey_t;

static int cmp_dkey(const void *a, const void *b)
{
    const dkey_t *x = a, *y = b;
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    if (x->k != y->k) {
        return x->k < y->k ? -1 : 1;
    }
    return x->rank - y->rank;
}

/* The remaining members' keys: each stalled rank's collectives from its next (the one it
 * waits in, if any), numbered on from what it had passed of each group (its count, or the
 * group's completed instances where fewer: it was in each of those).  *n of them. */
static dkey_t *remaining(cp_path_t *p, size_t *n)
{
    size_t nk = 0;
    for (int r = 0; r < p->nr; r++) {
        for (size_t i = p->rk[r].done ? p->rk[r].len : p->rk[r].pos; i < p->rk[r].len; i++) {
            nk += p->rk[r].buf[i].kind == CP_PREC_COLL;
        }
    }
    dkey_t *keys = calloc(nk + 1, sizeof(*keys));
    int64_t *ctr = calloc(p->ng + 1, sizeof(int64_t));
    int *at = malloc((p->ng + 1) * sizeof(int));
    *n = 0;
    for (size_t g = 0; at != NULL && g < p->ng; g++) {
        at[g] = -1;
    }
    for (int r = 0; keys != NULL && ctr != NULL && at != NULL && r < p->nr; r++) {
        const prk_t *q = &p->rk[r];
        for (size_t i = q->done ? q->len : q->pos; i < q->len; i++) {
            const cp_prec_t *c = &q->buf[i];
            if (c->kind != CP_PREC_COLL || c->group < 0 || (size_t)c->group >= p->ng) {
                continue;
            }
            const pgrp_t *g = &p->g[c->group];
            if (at[c->group] != r) {
                int64_t had = cp_path_count_of(g, r);
                ctr[c->group] = had < g->k ? had : g->k;
                at[c->group] = r;
            }
            keys[(*n)++] = (dkey_t){c->group, r, ctr[c->group]++, c->issue_us};
        }
    }
    int bad = ctr == NULL || at == NULL;
    free(ctr);
    free(at);
    if (bad) {
        free(keys);
        return NULL;
    }
    return keys;
}

int cp_path_drain(cp_path_t *p, cp_path_pull_fn pull, void *arg)
{
    p->drain = 1;
    for (;;) {
        int any = 0;
        for (int r = 0; r < p->nr; r++) {
            any |= cp_path_want(p, r) > 0;
        }
        if (!any) {
            break;
        }
        if (pull(arg, p) != 0) {
            return -1;
        }
    }
    size_t n = 0;
    dkey_t *keys = remaining(p, &n);
    if (keys == NULL) {
        p->oom = 1;
        return -1;
    }
    qsort(keys, n, sizeof(*keys), cmp_dkey);
    for (size_t j = 0, e; j < n; j = e) {
        double lo = keys[j].issue, hi = keys[j].issue;
        int last = keys[j].rank;
        for (e = j; e < n && keys[e].group == keys[j].group && keys[e].k == keys[j].k; e++) {
            lo = keys[e].issue < lo ? keys[e].issue : lo;
            if (keys[e].issue > hi) {
                hi = keys[e].issue;
                last = keys[e].rank;
            }
        }
        pgrp_t *g = &p->g[keys[j].group];
        if (keys[j].k < g->kmax) {
            g->skew[keys[j].k] = hi - lo;
            g->strag[keys[j].k] = e - j > 1 ? last : -1;
        }
    }
    free(keys);
    return 0;
}

int cp_pentry_cmp(const void *a, const void *b)
{
    const pentry_t *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

double cp_path_walk(cp_path_t *p)
{
    size_t n = 0;
    for (const pnode_t *x = p->best; x != NULL; x = x->prev) {
        n++;
    }
    p->path = calloc(n + 1, sizeof(*p->path));
    if (p->path == NULL) {
        return -1;
    }
    double len = 0;
    for (const pnode_t *x = p->best; x != NULL; x = x->prev) {
        p->path[p->npath++] = (pentry_t){.rank = x->rank, .idx = x->idx, .cost = x->cost};
        len += x->cost;
    }
    qsort(p->path, n, sizeof(*p->path), cp_pentry_cmp); /* (by rank, each rank's in order) */
    return len;
}
