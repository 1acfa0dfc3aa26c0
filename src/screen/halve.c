#include "config.h"

/*
 * The validation's parallel halving (halve.h), pure: the groups of each level, their
 * judgement against the pairs' prediction, the split of failing groups, witnesses, the
 * outcome.  The evidence in words: halve_words.c.
 */

#include "screen/halve.h"

#include "screen/hostlist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_halve_opts_default(cp_halve_opts_t *o)
{
    o->ref_bw_gbs = 0;
    o->ref_lat_us = 0;
    o->bytes = 0;
    o->abs_thr = 0.4;
    o->rel_thr = 0.8;
    o->max_fail = 8;
    o->max_levels = 0;
}

double cp_halve_expect(const cp_halve_opts_t *o, int m)
{
    if (o->ref_bw_gbs <= 0) {
        return 0;
    }
    double per_byte = 1.0 / (o->ref_bw_gbs * 1e3); /* us per byte at the link's bandwidth */
    if (o->ref_lat_us > 0 && o->bytes > 0) {
        per_byte += (double)m * o->ref_lat_us / o->bytes;
    }
    return 1.0 / per_byte * 1e-3;
}

/* Group g's bandwidth as a share of what the pairs predict for it (its raw busbw when
 * there is no reference). */
static double share(const cp_halve_t *h, const cp_halve_group_t *g)
{
    double e = cp_halve_expect(&h->opt, g->count);
    return e > 0 ? g->busbw / e : g->busbw;
}

const char *cp_halve_outcome_name(int o)
{
    static const char *const names[] = {"running", "passed", "found", "partly", "unexplained"};
    return o >= 0 && o < (int)(sizeof(names) / sizeof(names[0])) ? names[o] : "?";
}

/* ceil(log2(n)) for n >= 1. */
static int log2_up(int n)
{
    int l = 0;
    while ((1L << l) < (long)n) {
        l++;
    }
    return l;
}

/* A new group of level with count nodes (copied from nodes) at the end; its index, or -1. */
static long add_group(cp_halve_t *h, int level, int parent, const int *nodes, int count,
                      int witness)
{
    if (h->ng == h->capg) {
        size_t cap = h->capg ? 2 * h->capg : 16;
        cp_halve_group_t *g = realloc(h->g, cap * sizeof(*g));
        if (g == NULL) {
            return -1;
        }
        h->g = g;
        h->capg = cap;
    }
    if (h->nnodes + (size_t)count > h->capn) {
        size_t cap = h->capn ? 2 * h->capn : 64;
        while (cap < h->nnodes + (size_t)count) {
            cap *= 2;
        }
        int *v = realloc(h->nodes, cap * sizeof(int));
        if (v == NULL) {
            return -1;
        }
        h->nodes = v;
        h->capn = cap;
    }
    memcpy(h->nodes + h->nnodes, nodes, sizeof(int) * (size_t)count);
    cp_halve_group_t *g = &h->g[h->ng];
    memset(g, 0, sizeof(*g));
    g->level = level;
    g->parent = parent;
    g->first = (int)h->nnodes;
    g->count = count;
    g->witness = witness;
    h->nnodes += (size_t)count;
    return (long)h->ng++;
}

int cp_halve_init(cp_halve_t *h, int n, const unsigned char *in, const cp_halve_opts_t *o)
{
    memset(h, 0, sizeof(*h));
    h->n = n;
    h->opt = *o;
    h->level = -1;
    h->first_unexplained = -1;
    if (h->opt.max_levels <= 0) {
        h->opt.max_levels = log2_up(n > 1 ? n : 1) + 3;
    }
    size_t k = (size_t)(n > 0 ? n : 1);
    int *v = malloc(k * sizeof(int));
    h->good = calloc(k, 1);
    h->culprit = calloc(k, 1);
    h->culprit_group = malloc(k * sizeof(int));
    if (v == NULL || h->good == NULL || h->culprit == NULL || h->culprit_group == NULL) {
        free(v);
        cp_halve_free(h);
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        h->culprit_group[i] = -1;
        if (in[i]) {
            v[m++] = i;
        }
    }
    if (m >= 2) {
        if (add_group(h, 0, -1, v, m, 0) < 0) {
            free(v);
            cp_halve_free(h);
            return -1;
        }
        h->level = 0;
        h->lfirst = 0;
        h->lend = 1;
    } else {
        h->outcome = CP_HALVE_PASSED; /* nothing to validate: nothing failed */
    }
    free(v);
    return m;
}

void cp_halve_free(cp_halve_t *h)
{
    free(h->nodes);
    free(h->g);
    free(h->good);
    free(h->culprit);
    free(h->culprit_group);
    memset(h, 0, sizeof(*h));
}

int cp_halve_level(const cp_halve_t *h, int *group_of)
{
    for (int i = 0; i < h->n; i++) {
        group_of[i] = -1;
    }
    for (size_t k = h->lfirst; k < h->lend; k++) {
        const cp_halve_group_t *g = &h->g[k];
        for (int j = 0; j < g->count; j++) {
            group_of[h->nodes[g->first + j]] = (int)(k - h->lfirst);
        }
    }
    return (int)(h->lend - h->lfirst);
}

void cp_halve_set(cp_halve_t *h, int k, int failed, uint64_t wrong, double busbw)
{
    if (k < 0 || (size_t)k >= h->lend - h->lfirst) {
        return;
    }
    cp_halve_group_t *g = &h->g[h->lfirst + (size_t)k];
    g->failed = failed;
    g->wrong = wrong;
    g->busbw = busbw;
}

/* ---- judging ----------------------------------------------------------------------------- */

/* The best busbw among group k's siblings (itself included) that measured, 0 when none. */
static double best_sibling(const cp_halve_t *h, size_t k)
{
    double best = 0;
    for (size_t j = h->lfirst; j < h->lend; j++) {
        const cp_halve_group_t *s = &h->g[j];
        if (s->parent == h->g[k].parent && !s->failed && s->wrong == 0 && share(h, s) > best) {
            best = share(h, s);
        }
    }
    return best;
}

static void judge(cp_halve_t *h, size_t k)
{
    cp_halve_group_t *g = &h->g[k];
    double best = g->parent >= 0 ? best_sibling(h, k) : 0;
    g->verdict = CP_HALVE_FAIL;
    if (g->failed || g->wrong > 0 || g->busbw <= 0) {
        g->why = CP_HALVE_WHY_ERROR;
    } else if (h->opt.ref_bw_gbs > 0 && share(h, g) < h->opt.abs_thr) {
        g->why = CP_HALVE_WHY_ABSOLUTE;
    } else if (best > 0 && share(h, g) < h->opt.rel_thr * best) {
        g->why = CP_HALVE_WHY_SIBLING;
    } else {
        g->verdict = CP_HALVE_PASS;
        g->why = CP_HALVE_WHY_NONE;
    }
}

/* The order of failing groups: errors first, then the slowest. */
static int worse(const cp_halve_group_t *a, const cp_halve_group_t *b)
{
    int ea = a->why == CP_HALVE_WHY_ERROR, eb = b->why == CP_HALVE_WHY_ERROR;
    return ea != eb ? ea > eb : a->busbw < b->busbw;
}

static void unexplained(cp_halve_t *h, size_t k)
{
    if (h->unexplained++ == 0) {
        h->first_unexplained = (int)k;
    }
}

/* A node that passed, not used this level (used[]), nearest after node: a witness, or -1. */
static int witness_for(const cp_halve_t *h, int node, const unsigned char *used)
{
    for (int d = 1; d < h->n; d++) {
        int w = (node + d) % h->n;
        if (h->good[w] && !h->culprit[w] && !used[w]) {
            return w;
        }
    }
    return -1;
}

/* Witness groups for the members of failing group k (parent of them) that tried none yet:
 * each with a node that passed, not used this level.  Returns the members left without one
 * (then unexplained), -1 when out of memory. */
static int witnesses(cp_halve_t *h, size_t k, unsigned char *used)
{
    int members[3], m = 0, lacking = 0, pair[2];
    for (int j = 0; j < h->g[k].count && m < 3; j++) {
        int node = h->nodes[h->g[k].first + j], tried = 0;
        for (size_t c = k + 1; c < h->ng && !tried; c++) {
            tried = h->g[c].parent == (int)k && h->g[c].witness && h->nodes[h->g[c].first] == node;
        }
        if (!tried) {
            members[m++] = node;
        }
    }
    for (int j = 0; j < m; j++) {
        int w = witness_for(h, members[j], used);
        if (w < 0) {
            lacking++;
            continue;
        }
        used[w] = 1;
        pair[0] = members[j];
        pair[1] = w;
        if (add_group(h, h->g[k].level + 1, (int)k, pair, 2, 1) < 0) {
            return -1;
        }
    }
    return lacking;
}

/* The next level's groups for the failing group k; -1 when out of memory. */
static int follow(cp_halve_t *h, size_t k, unsigned char *used)
{
    cp_halve_group_t g = h->g[k]; /* add_group moves h->g */
    if (g.count >= 4) {
        int a = (g.count + 1) / 2;
        int *copy = malloc(sizeof(int) * (size_t)g.count);
        if (copy == NULL) {
            return -1;
        }
        memcpy(copy, h->nodes + g.first, sizeof(int) * (size_t)g.count);
        int rc = add_group(h, g.level + 1, (int)k, copy, a, 0) < 0 ||
                 add_group(h, g.level + 1, (int)k, copy + a, g.count - a, 0) < 0;
        free(copy);
        return rc ? -1 : 0;
    }
    size_t before = h->ng;
    int lacking = witnesses(h, k, used);
    if (lacking > 0 && h->ng == before) { /* not one witness: nothing left to try */
        unexplained(h, k);
    }
    return lacking < 0 ? -1 : 0;
}

/* A failing parent p of this level's groups, once they are judged: explained when a child
 * failed; when all its children passed, the members of a small group that had no witness yet
 * get one now (the nodes that just passed can be), else two nodes name their link, else the
 * failure is unexplained (it needs the whole group).  Returns -1 when out of memory. */
static int children_judged(cp_halve_t *h, size_t p, unsigned char *used, int last)
{
    int kids = 0, witnessed = 0, failing = 0;
    for (size_t j = p + 1; j < h->ng; j++) {
        if (h->g[j].parent == (int)p) {
            kids++;
            witnessed += h->g[j].witness;
            failing += h->g[j].verdict == CP_HALVE_FAIL;
        }
    }
    if (kids == 0 || failing > 0) {
        return 0;
    }
    if (witnessed > 0 && witnessed < h->g[p].count) {
        size_t before = h->ng;
        int lacking = last ? 1 : witnesses(h, p, used);
        if (lacking < 0) {
            return -1;
        }
        if (h->ng == before) {
            unexplained(h, p);
        }
        return 0;
    }
    if (h->g[p].count == 2 && witnessed == 2 && h->nlinks < 8) {
        h->link_a[h->nlinks] = h->nodes[h->g[p].first];
        h->link_b[h->nlinks] = h->nodes[h->g[p].first + 1];
        h->link_group[h->nlinks++] = (int)p;
    } else {
        unexplained(h, p);
    }
    return 0;
}

static int cmp_worse_idx(const void *a, const void *b, const cp_halve_t *h)
{
    const cp_halve_group_t *x = &h->g[*(const size_t *)a], *y = &h->g[*(const size_t *)b];
    return worse(x, y) ? -1 : worse(y, x) ? 1 : 0;
}

/* Insertion sort of idx[m] worst first (few failing groups per level). */
static void sort_worst(const cp_halve_t *h, size_t *idx, size_t m)
{
    for (size_t i = 1; i < m; i++) {
        size_t v = idx[i], j = i;
        while (j > 0 && cmp_worse_idx(&v, &idx[j - 1], h) < 0) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = v;
    }
}

static void finish(cp_halve_t *h)
{
    int named = h->nlinks;
    for (int i = 0; i < h->n; i++) {
        named += h->culprit[i];
    }
    h->outcome = named == 0       ? CP_HALVE_UNEXPLAINED
                 : h->unexplained ? CP_HALVE_PARTLY
                                  : CP_HALVE_FOUND;
    h->lfirst = h->lend = h->ng;
}

/* Level 0's group k failed its first try: the same nodes again at the next level, before
 * anything is halved.  0, or -1 out of memory. */
static int retry_root(cp_halve_t *h, size_t k)
{
    cp_halve_group_t root = h->g[k];
    int *copy = malloc(sizeof(int) * (size_t)root.count); /* add_group moves nodes */
    if (copy == NULL) {
        return -1;
    }
    memcpy(copy, h->nodes + root.first, sizeof(int) * (size_t)root.count);
    long at = add_group(h, root.level + 1, -1, copy, root.count, 0);
    free(copy);
    if (at < 0) {
        return -1;
    }
    h->g[at].retry = 1;
    return 0;
}

int cp_halve_next(cp_halve_t *h, int stop)
{
    if (h->lend <= h->lfirst) {
        return 0;
    }
    for (size_t k = h->lfirst; k < h->lend; k++) {
        judge(h, k);
    }
    h->levels++;
    size_t nf = 0;
    for (size_t k = h->lfirst; k < h->lend; k++) {
        const cp_halve_group_t *g = &h->g[k];
        for (int j = 0; g->verdict == CP_HALVE_PASS && j < g->count; j++) {
            h->good[h->nodes[g->first + j]] = 1;
        }
        nf += g->verdict == CP_HALVE_FAIL;
    }
    if (h->g[h->lfirst].parent < 0 && nf == 0) { /* level 0, or its second try, passed */
        h->outcome = CP_HALVE_PASSED;
        h->lfirst = h->lend = h->ng;
        return 0;
    }
    size_t *idx = malloc(sizeof(size_t) * (nf > 0 ? nf : 1));
    unsigned char *used = calloc((size_t)(h->n > 0 ? h->n : 1), 1);
    if (idx == NULL || used == NULL) {
        free(idx);
        free(used);
        return -1;
    }
    size_t m = 0, end = h->lend;
    for (size_t k = h->lfirst; k < end; k++) {
        if (h->g[k].verdict == CP_HALVE_FAIL) {
            idx[m++] = k;
        }
    }
    sort_worst(h, idx, m);
    int last = stop || h->level + 1 >= h->opt.max_levels, rc = 0, followed = 0;
    for (size_t k = h->lfirst; k < end && rc == 0; k++) { /* each parent once: its first child */
        int p = h->g[k].parent;
        if (p >= 0 && (k == h->lfirst || h->g[k - 1].parent != p)) {
            rc = children_judged(h, (size_t)p, used, last);
        }
    }
    for (size_t i = 0; i < m && rc == 0; i++) {
        size_t k = idx[i];
        const cp_halve_group_t *g = &h->g[k];
        if (g->witness) { /* the node tried, with a witness that passed before */
            int node = h->nodes[g->first];
            h->culprit[node] = 1;
            h->culprit_group[node] = (int)k;
        } else if (g->parent < 0 && !g->retry && g->why != CP_HALVE_WHY_ERROR && !last) {
            rc = retry_root(h, k);
        } else if (last || followed >= h->opt.max_fail) {
            unexplained(h, k);
        } else {
            followed++;
            rc = follow(h, k, used);
        }
    }
    free(idx);
    free(used);
    if (rc != 0) {
        return -1;
    }
    h->lfirst = end;
    h->lend = h->ng;
    h->level++;
    if (h->lend == h->lfirst) {
        finish(h);
        return 0;
    }
    return (int)(h->lend - h->lfirst);
}

void cp_halve_abort(cp_halve_t *h)
{
    for (size_t k = h->lfirst; k < h->lend; k++) {
        int p = h->g[k].parent;
        if (p < 0 || k == h->lfirst || h->g[k - 1].parent != p) {
            unexplained(h, p >= 0 ? (size_t)p : k);
        }
    }
    if (h->lend > h->lfirst) {
        finish(h);
    }
}
