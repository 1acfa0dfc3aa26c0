#include "config.h"

/*
 * The screen's method (screen.h), pure: options, the random matchings of the rounds, the
 * pairs and their judgement against a robust reference or a baseline.  Attribution to nodes
 * and links, confirmation, rechecks, the verdict and its words: screen_attr.c.
 */

#include "screen/screen.h"

#include "screen/links.h"
#include "base/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_screen_opts_default(cp_screen_opts_t *o)
{
    o->rounds = 3;
    o->small_round = 1;
    o->seed = 1;
    o->thr = 0.8;
    o->z = 3.0;
    o->has_baseline = 0;
    memset(&o->baseline, 0, sizeof(o->baseline));
}

const char *cp_screen_verdict_name(int v)
{
    static const char *const names[] = {"healthy", "slow", "unreachable", "inconclusive",
                                        "untested"};
    return v >= 0 && v < (int)(sizeof(names) / sizeof(names[0])) ? names[v] : "?";
}

static void shuffle(uint64_t *x, int *v, int m);

int cp_screen_init(cp_screen_t *s, int n, const cp_screen_opts_t *o)
{
    memset(s, 0, sizeof(*s));
    s->n = n;
    s->opt = *o;
    size_t k = (size_t)(n > 0 ? n : 1);
    int avail = cp_links_rounds(n);
    s->verdict = calloc(k, sizeof(int));
    s->suspect = calloc(k, 1);
    s->reach = malloc(k);
    s->confirm_with = malloc(k * sizeof(int));
    s->perm = malloc(k * sizeof(int));
    s->order = malloc((size_t)(avail > 0 ? avail : 1) * sizeof(int));
    if (s->verdict == NULL || s->suspect == NULL || s->reach == NULL || s->confirm_with == NULL ||
        s->perm == NULL || s->order == NULL) {
        cp_screen_free(s);
        return -1;
    }
    memset(s->reach, 1, k);
    for (int i = 0; i < n; i++) {
        s->confirm_with[i] = -1;
    }
    uint64_t x = o->seed;
    shuffle(&x, s->perm, n);      /* position p holds node perm[p] */
    shuffle(&x, s->order, avail); /* the circle's rounds, in a random order */
    return 0;
}

void cp_screen_free(cp_screen_t *s)
{
    free(s->pairs);
    free(s->verdict);
    free(s->suspect);
    free(s->reach);
    free(s->confirm_with);
    free(s->link_a);
    free(s->link_b);
    free(s->link_verdict);
    free(s->perm);
    free(s->order);
    memset(s, 0, sizeof(*s));
}

/* ---- the schedule ------------------------------------------------------------------------ */

/* splitmix64: a small, well-mixed generator that gives the same numbers everywhere. */
static uint64_t next_u64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* A uniform integer below m (m > 0), without the modulo's bias. */
static int below(uint64_t *x, int m)
{
    uint64_t lim = UINT64_MAX - UINT64_MAX % (uint64_t)m, v;
    do {
        v = next_u64(x);
    } while (v >= lim);
    return (int)(v % (uint64_t)m);
}

/* v[0..m) = 0..m-1 shuffled by the generator (Fisher-Yates). */
static void shuffle(uint64_t *x, int *v, int m)
{
    for (int i = 0; i < m; i++) {
        v[i] = i;
    }
    for (int i = m - 1; i > 0; i--) {
        int j = below(x, i + 1), t = v[i];
        v[i] = v[j];
        v[j] = t;
    }
}

int cp_screen_random_rounds(const cp_screen_t *s)
{
    /* with an odd count each round leaves one node out: one more round gives every node as
     * many pairs as the rounds asked for (the byes of the rounds are distinct) */
    int avail = cp_links_rounds(s->n), want = s->opt.rounds + (s->n % 2 == 1 && s->opt.rounds > 0);
    /* and a small screen one more: its few pairs tell a pair's noise from a fault poorly */
    want += s->opt.small_round && s->n <= CP_SCREEN_SMALL_NODES && s->opt.rounds > 0;
    /* and where that exhausts the circle from 4 nodes up (at 4 only: every pair met in 3
     * rounds), the circle twice: each pair's two measurements are folded into one
     * (cp_screen_judge), its noise about sqrt(2) smaller, where a node at 0.7x has only 3
     * partners (simulated: 0.7x at +-10 % found in 93 % of the screens, 99.6 % twice).  Not
     * at 2 or 3 nodes, which need a baseline whatever the rounds (docs/screen.md). */
    if (want > avail && s->n >= 4 && s->opt.small_round) {
        return 2 * avail;
    }
    return want < avail ? want : avail;
}

void cp_screen_matching(const cp_screen_t *s, int k, int *partner)
{
    int n = s->n;
    for (int i = 0; i < n; i++) {
        partner[i] = -1;
    }
    for (int p = 0; k >= 0 && k < cp_screen_random_rounds(s) && p < n; p++) {
        int q = cp_links_partner(n, s->order[k % cp_links_rounds(n)], p);
        partner[s->perm[p]] = q < 0 ? -1 : s->perm[q];
    }
}

/* ---- pairs and judgement ----------------------------------------------------------------- */

int cp_screen_add(cp_screen_t *s, const cp_screen_pair_t *p)
{
    if (s->npairs == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        cp_screen_pair_t *g = realloc(s->pairs, cap * sizeof(*g));
        if (g == NULL) {
            return -1;
        }
        s->pairs = g;
        s->cap = cap;
    }
    cp_screen_pair_t *q = &s->pairs[s->npairs++];
    *q = *p;
    if (q->a > q->b) {
        int t = q->a;
        q->a = q->b;
        q->b = t;
    }
    return 0;
}

void cp_screen_unreachable(cp_screen_t *s, int node)
{
    if (node >= 0 && node < s->n) {
        s->reach[node] = 0;
    }
}

/* 1 when p is a measured random-round pair between reachable nodes with a value of field. */
static int usable(const cp_screen_t *s, const cp_screen_pair_t *p, int lat)
{
    double x = lat ? p->lat_us : p->bw_gbs;
    return p->phase == CP_SCREEN_RANDOM && p->outcome == CP_SCREEN_MEASURED && x > 0 &&
           s->reach[p->a] && s->reach[p->b];
}

/* The quantile of the nodes' fastest pairs that gives the healthy end's first estimate (high:
 * a fault only slows, and noise of +-30 % leaves every good node's fastest pair within thr^2 of
 * it). */
#define REF_QUANTILE 0.95

/* The q-quantile of v[0..m) (sorted here), interpolated; 0 when m is 0. */
static double quantile(double *v, int m, double q)
{
    if (m <= 0) {
        return 0;
    }
    (void)cp_stats_median(v, (size_t)m); /* which sorts v */
    double at = q * (m - 1);
    int lo = (int)at;
    return lo + 1 < m ? v[lo] + (at - lo) * (v[lo + 1] - v[lo]) : v[m - 1];
}

/* Every node's usable pairs of one field: per node at most per values (natural logarithms
 * signed so that larger is faster: noise is a factor, a fault only slows) and partners. */
typedef struct node_pairs {
    int n, per;
    double *v; /* [n * per] */
    int *with; /* [n * per] the partner of each */
    int *cnt;  /* [n] */
} node_pairs_t;

static void node_pairs_free(node_pairs_t *np)
{
    free(np->v);
    free(np->with);
    free(np->cnt);
}

/* np of the field (0: bandwidth, 1: latency) over the pairs of path class cls alone (cls < 0:
 * every pair): 0, or -1 when out of memory; *pairs the usable pairs. */
static int node_pairs(const cp_screen_t *s, int lat, int cls, node_pairs_t *np, int *pairs)
{
    np->n = s->n;
    np->per = cp_screen_random_rounds(s) > 0 ? cp_screen_random_rounds(s) : 1;
    np->v = malloc(sizeof(double) * (size_t)np->n * (size_t)np->per + 1);
    np->with = malloc(sizeof(int) * (size_t)np->n * (size_t)np->per + 1);
    np->cnt = calloc((size_t)np->n + 1, sizeof(int));
    *pairs = 0;
    if (np->v == NULL || np->with == NULL || np->cnt == NULL) {
        return -1;
    }
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        double x = lat ? p->lat_us : p->bw_gbs;
        if (!usable(s, p, lat) || (cls >= 0 && p->path != cls)) {
            continue;
        }
        (*pairs)++;
        int ends[2] = {p->a, p->b};
        for (int e = 0; e < 2; e++) {
            size_t at = (size_t)ends[e] * (size_t)np->per + (size_t)np->cnt[ends[e]];
            if (np->cnt[ends[e]] < np->per) {
                np->v[at] = lat ? -log(x) : log(x);
                np->with[at] = ends[1 - e];
                np->cnt[ends[e]]++;
            }
        }
    }
    return 0;
}

/* healthy[i] = 1 for each node at the healthy end: its fastest pair within thr^2 of the 95th
 * percentile of the nodes' fastest pairs.  A node's fastest pair shows what it can do: a good
 * node's is good unless every partner it met was slow, a slow node's is slow whoever it met;
 * so the percentile stands among good nodes while more than one node in twenty met a good
 * partner, up to three quarters of the nodes slow and past (the upper quartile, used before,
 * fell to the slow nodes' figures with three quarters slow, and a screen with most of its
 * nodes slow called them healthy).  Returns the nodes with pairs, *h those at the healthy end. */
static int healthy_end(const node_pairs_t *np, double thr, unsigned char *healthy, int *h)
{
    double *mx = malloc(sizeof(double) * (size_t)np->n + 1), top;
    int m = 0;
    *h = 0;
    for (int i = 0; mx != NULL && i < np->n; i++) {
        double best = -INFINITY;
        for (int k = 0; k < np->cnt[i]; k++) {
            best = fmax(best, np->v[(size_t)i * (size_t)np->per + (size_t)k]);
        }
        healthy[i] = 0;
        if (np->cnt[i] > 0) {
            mx[m++] = best;
        }
    }
    top = quantile(mx, m, REF_QUANTILE) + 2 * log(thr);
    for (int i = 0; mx != NULL && i < np->n; i++) {
        for (int k = 0; k < np->cnt[i] && !healthy[i]; k++) {
            healthy[i] = np->v[(size_t)i * (size_t)np->per + (size_t)k] >= top;
        }
        *h += healthy[i];
    }
    free(mx);
    return m;
}

/* The spread of the pairs between core nodes: healthy-end nodes whose median over their
 * healthy-end partners is within lthr (log thr, < 0) of the reference lm.  The mean distance
 * of those pairs from lm, the largest eighth left out (of a uniform or normal noise about the
 * MAD; steadier than a median with the few pairs of a small screen): a pair's own noise, which
 * a pair is judged against. */
static double core_spread(const node_pairs_t *np, const unsigned char *good, double lm, double lthr,
                          double *scratch)
{
    unsigned char *core = malloc((size_t)np->n + 1);
    double *dev = malloc(sizeof(double) * (size_t)np->n * (size_t)np->per + 1);
    int d = 0;
    for (int i = 0; core != NULL && i < np->n; i++) {
        int c = 0;
        for (int j = 0; good[i] && j < np->cnt[i]; j++) {
            size_t at = (size_t)i * (size_t)np->per + (size_t)j;
            if (good[np->with[at]]) {
                scratch[c++] = np->v[at];
            }
        }
        core[i] = c > 0 && cp_stats_median(scratch, (size_t)c) - lm >= lthr;
    }
    for (int i = 0; core != NULL && dev != NULL && i < np->n; i++) {
        for (int j = 0; core[i] && j < np->cnt[i]; j++) {
            size_t at = (size_t)i * (size_t)np->per + (size_t)j;
            if (core[np->with[at]] && np->with[at] > i) {
                dev[d++] = np->v[at] - lm; /* signed: below the reference < 0 */
            }
        }
    }
    /* the pairs below thr^2 left out while they are few (at most an eighth, at least one): a
     * slow link's pair among a small screen's few would widen it; many such pairs are the
     * class's own long tail (a shared, shaped spine's latency), which the spread must keep */
    int low = 0;
    for (int i = 0; i < d; i++) {
        low += dev[i] < 2 * lthr;
    }
    int cut = low <= (d >= 2 && d < 8 ? 1 : d / 8), keep = 0;
    double sum = 0;
    for (int i = 0; i < d; i++) {
        if (!cut || dev[i] >= 2 * lthr) {
            sum += fabs(dev[i]);
            keep++;
        }
    }
    double mad = keep > 0 ? sum / keep : 0;
    free(core);
    free(dev);
    return mad;
}

/*
 * The reference of the field (0: bandwidth, 1: latency) from the healthy end (healthy_end):
 * faults only slow nodes down, so the estimate must hold however many nodes are slow, up to
 * half of them and past.  Each healthy node's median over its pairs with healthy partners
 * (node medians, not pairs: with few nodes a bad node is in a large share of the pairs), their
 * median is the reference; the spread (*mad) is that of the pairs between core nodes
 * (core_spread): what a pair is judged against is a pair's noise, not a node median's, which
 * is about sqrt(3) times smaller (judged against that, 3.5 % of healthy screens with +-20 %
 * noise flagged something).  Slow nodes neither pull the reference down nor widen the spread.
 * *healthy: the share of the nodes
 * with pairs at the healthy end.  Over the pairs of path class cls alone (cls < 0: every
 * pair).  Returns the usable pairs.
 */
static int robust(const cp_screen_t *s, int lat, int cls, double *med, double *mad, double *healthy)
{
    node_pairs_t np = {0};
    int pairs = 0, h = 0, m = 0, k = 0;
    unsigned char *good = malloc((size_t)s->n + 1);
    double *nm = malloc(sizeof(double) * (size_t)s->n + 1), *v = NULL;
    if (good != NULL && nm != NULL && node_pairs(s, lat, cls, &np, &pairs) == 0 &&
        (v = malloc(sizeof(double) * (size_t)np.per)) != NULL) {
        m = healthy_end(&np, s->opt.thr, good, &h);
    }
    for (int i = 0; m > 0 && i < s->n; i++) {
        int c = 0;
        for (int j = 0; good[i] && j < np.cnt[i]; j++) {
            size_t at = (size_t)i * (size_t)np.per + (size_t)j;
            if (good[np.with[at]]) {
                v[c++] = np.v[at];
            }
        }
        if (c > 0) {
            nm[k++] = cp_stats_median(v, (size_t)c);
        }
    }
    double lm = cp_stats_median(nm, (size_t)k);
    *med = k > 0 ? exp(lat ? -lm : lm) : 0;
    *mad = k > 0 ? core_spread(&np, good, lm, log(s->opt.thr), v) : 0;
    for (int i = 0; i < k; i++) {
        nm[i] = fabs(nm[i] - lm);
    }
    /* and never below the node medians' own spread: where a class's pairs have a long tail
     * (the latency of pairs that share a shaped spine with the round's bandwidth), the core
     * nodes are the few quiet ones, and the medians of the others still show the tail */
    *mad = fmax(*mad, cp_stats_median(nm, (size_t)k));
    *healthy = m > 0 ? (double)h / m : 0;
    node_pairs_free(&np);
    free(good);
    free(nm);
    free(v);
    return pairs;
}

/* Score and slow flag of one pair against ref: slow when below thr x the reference and more
 * than z robust deviations (of the logarithm) below it, or when its data was wrong; a pair
 * with no figure (not set up, timed out, partner unreachable) is never slow. */
static void judge_pair(const cp_screen_opts_t *o, const cp_screen_ref_t *ref, cp_screen_pair_t *p)
{
    p->slow = 0;
    p->score = 0;
    if (p->outcome == CP_SCREEN_WRONG) {
        p->slow = 1;
        return;
    }
    if (p->outcome != CP_SCREEN_MEASURED) {
        return;
    }
    /* the pair's path class's figures where the reference has them, else every pair's */
    const cp_screen_cref_t *c = p->path >= 0 && p->path < CP_PATH_NCLASSES && ref->cls[p->path].own
                                    ? &ref->cls[p->path]
                                    : NULL;
    double rbw = c != NULL ? c->bw_gbs : ref->bw_gbs, bmad = c != NULL ? c->bw_mad : ref->bw_mad;
    double rlat = c != NULL ? c->lat_us : ref->lat_us, lmad = c != NULL ? c->lat_mad : ref->lat_mad;
    double sb = rbw > 0 && p->bw_gbs > 0 ? p->bw_gbs / rbw : INFINITY;
    double sl = rlat > 0 && p->lat_us > 0 ? rlat / p->lat_us : INFINITY;
    int slow_bw = sb < o->thr && -log(sb) > o->z * 1.4826 * bmad;
    int slow_lat = sl < o->thr && -log(sl) > o->z * 1.4826 * lmad;
    p->score = sb < sl ? sb : sl;
    p->score = isinf(p->score) ? 1.0 : p->score;
    p->slow = slow_bw || slow_lat;
}

/*
 * The screen's own reference per path class: when its random rounds' measured pairs are of
 * two classes or more (a topology that puts some pairs under one switch and some across), each
 * class with CP_SCREEN_CLASS_MIN_PAIRS measured pairs gets the median and MAD of its own pairs
 * (node medians as in robust, over the class's pairs alone): a slower spine is the cross-switch
 * pairs' normal, not a fault.  A class with fewer pairs is judged against every pair's figures:
 * a few pairs' median would be as much a bad node's as the class's.
 */
static void class_refs(cp_screen_t *s)
{
    int count[CP_PATH_NCLASSES] = {0}, classes = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->path >= 0 && p->path < CP_PATH_NCLASSES && (usable(s, p, 0) || usable(s, p, 1))) {
            classes += count[p->path]++ == 0;
        }
    }
    for (int c = 0; c < CP_PATH_NCLASSES && classes >= 2; c++) {
        cp_screen_cref_t *r = &s->ref.cls[c];
        if (count[c] == 0) {
            continue;
        }
        double hb, hl;
        int mb = robust(s, 0, c, &r->bw_gbs, &r->bw_mad, &hb);
        int ml = robust(s, 1, c, &r->lat_us, &r->lat_mad, &hl);
        r->pairs = mb > ml ? mb : ml;
        r->own = r->pairs >= CP_SCREEN_CLASS_MIN_PAIRS;
    }
}

int cp_screen_by_class(const cp_screen_ref_t *ref)
{
    for (int c = 0; c < CP_PATH_NCLASSES; c++) {
        if (ref->cls[c].own) {
            return 1;
        }
    }
    return 0;
}

void cp_screen_class_words(const cp_screen_ref_t *ref, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int c = 0; c < CP_PATH_NCLASSES && cp_screen_by_class(ref) && at < len; c++) {
        const cp_screen_cref_t *r = &ref->cls[c];
        int w = 0;
        if (r->own && ref->source) {
            w = snprintf(buf + at, len - at, "%s%s %.4g GB/s %.4g us", at ? ", " : "",
                         cp_path_name(c), r->bw_gbs, r->lat_us);
        } else if (r->own) {
            w = snprintf(buf + at, len - at, "%s%s %.4g GB/s %.4g us (%d pairs)", at ? ", " : "",
                         cp_path_name(c), r->bw_gbs, r->lat_us, r->pairs);
        } else if (r->pairs > 0) {
            w = snprintf(buf + at, len - at, "%s%s (%d pair%s: any)", at ? ", " : "",
                         cp_path_name(c), r->pairs, r->pairs == 1 ? "" : "s");
        }
        at += w > 0 ? (size_t)w : 0;
    }
}

/*
 * The second pass of a screen that went round the circle twice (cp_screen_random_rounds):
 * each random pair of a round past the circle's is folded into the same two nodes' pair of
 * the first pass and marked CP_SCREEN_REPEAT: the geometric mean of two measured figures, a
 * wrong one wrong, a measured one replacing one that was not.  Idempotent.
 */
static void fold_repeats(cp_screen_t *s)
{
    int avail = cp_links_rounds(s->n);
    for (size_t i = 0; avail > 0 && i < s->npairs; i++) {
        cp_screen_pair_t *r = &s->pairs[i], *f = NULL;
        if (r->phase != CP_SCREEN_RANDOM || r->round < avail) {
            continue;
        }
        for (size_t j = 0; j < s->npairs && f == NULL; j++) {
            cp_screen_pair_t *q = &s->pairs[j];
            f = q->phase == CP_SCREEN_RANDOM && q->round < avail && q->a == r->a && q->b == r->b
                    ? q
                    : NULL;
        }
        r->phase = CP_SCREEN_REPEAT;
        if (f == NULL) {
            continue;
        }
        if (r->outcome == CP_SCREEN_MEASURED && f->outcome == CP_SCREEN_MEASURED) {
            f->bw_gbs = f->bw_gbs > 0 && r->bw_gbs > 0 ? sqrt(f->bw_gbs * r->bw_gbs) : f->bw_gbs;
            f->lat_us = f->lat_us > 0 && r->lat_us > 0 ? sqrt(f->lat_us * r->lat_us) : f->lat_us;
        } else if (r->outcome == CP_SCREEN_WRONG ||
                   (r->outcome == CP_SCREEN_MEASURED && f->outcome != CP_SCREEN_WRONG)) {
            f->outcome = r->outcome; /* wrong data stays wrong; a figure replaces none */
            f->bw_gbs = r->bw_gbs;
            f->lat_us = r->lat_us;
        }
    }
}

int cp_screen_judge(cp_screen_t *s, const cp_screen_ref_t *baseline)
{
    fold_repeats(s);
    if (baseline != NULL) {
        s->ref = *baseline;
        s->ref.source = 1;
    } else {
        memset(&s->ref, 0, sizeof(s->ref));
        double hb, hl;
        int mb = robust(s, 0, -1, &s->ref.bw_gbs, &s->ref.bw_mad, &hb);
        int ml = robust(s, 1, -1, &s->ref.lat_us, &s->ref.lat_mad, &hl);
        s->ref.healthy = hb < hl ? hb : hl;
        s->ref.pairs = mb > ml ? mb : ml;
        if (s->ref.pairs < 3) {
            memset(&s->ref, 0, sizeof(s->ref));
            return 0;
        }
        class_refs(s);
    }
    for (size_t i = 0; i < s->npairs; i++) {
        judge_pair(&s->opt, &s->ref, &s->pairs[i]);
    }
    return baseline != NULL ? 1 : s->ref.pairs;
}

int cp_screen_judge_opt(cp_screen_t *s)
{
    return cp_screen_judge(s, s->opt.has_baseline ? &s->opt.baseline : NULL);
}
