#include "config.h"

#include "core/screen.h"

#include "core/links.h"
#include "core/stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_screen_opts_default(cp_screen_opts_t *o)
{
    o->rounds = 3;
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
    int avail = cp_links_rounds(s->n);
    return s->opt.rounds < avail ? s->opt.rounds : avail;
}

void cp_screen_matching(const cp_screen_t *s, int k, int *partner)
{
    int n = s->n;
    for (int i = 0; i < n; i++) {
        partner[i] = -1;
    }
    for (int p = 0; k >= 0 && k < cp_screen_random_rounds(s) && p < n; p++) {
        int q = cp_links_partner(n, s->order[k], p);
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
    return p->phase == CP_SCREEN_RANDOM && p->status == CP_SCREEN_OK && x > 0 && s->reach[p->a] &&
           s->reach[p->b];
}

/*
 * The reference of the field (0: bandwidth, 1: latency): the median over the nodes of each
 * node's median pair (natural logarithms: noise is a factor), *mad the median distance of
 * those node medians from it.  Node medians, not pairs: with few nodes a bad node is in a
 * large share of the pairs (half of them at 4 nodes), but it is one node of several, and a
 * good node's median shrugs off one bad partner.  Over the pairs of path class cls alone
 * (cls < 0: every pair).  Returns the usable pairs.
 */
static int robust(const cp_screen_t *s, int lat, int cls, double *med, double *mad)
{
    int n = s->n, per = s->opt.rounds > 0 ? s->opt.rounds : 1, m = 0, pairs = 0;
    double *v = malloc(sizeof(double) * (size_t)n * (size_t)per + 1);
    double *nm = malloc(sizeof(double) * (size_t)n + 1);
    int *cnt = calloc((size_t)n + 1, sizeof(int));
    for (size_t i = 0; v != NULL && nm != NULL && cnt != NULL && i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        double x = lat ? p->lat_us : p->bw_gbs;
        if (!usable(s, p, lat) || (cls >= 0 && p->path != cls)) {
            continue;
        }
        pairs++;
        int ends[2] = {p->a, p->b};
        for (int e = 0; e < 2; e++) {
            if (cnt[ends[e]] < per) {
                v[(size_t)ends[e] * (size_t)per + (size_t)cnt[ends[e]]++] = log(x);
            }
        }
    }
    for (int i = 0; cnt != NULL && nm != NULL && v != NULL && i < n; i++) {
        if (cnt[i] > 0) {
            nm[m++] = cp_stats_median(v + (size_t)i * (size_t)per, (size_t)cnt[i]);
        }
    }
    double lm = cp_stats_median(nm, (size_t)m);
    for (int i = 0; i < m; i++) {
        nm[i] = fabs(nm[i] - lm);
    }
    *med = m > 0 ? exp(lm) : 0;
    *mad = cp_stats_median(nm, (size_t)m);
    free(v);
    free(nm);
    free(cnt);
    return pairs;
}

/* Score and slow flag of one pair against ref: slow when below thr x the reference and more
 * than z robust deviations (of the logarithm) below it, or when it failed. */
static void judge_pair(const cp_screen_opts_t *o, const cp_screen_ref_t *ref, cp_screen_pair_t *p)
{
    p->slow = 0;
    p->score = 0;
    if (p->status == CP_SCREEN_FAILED) {
        p->slow = 1;
        return;
    }
    if (p->status != CP_SCREEN_OK) {
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
        int mb = robust(s, 0, c, &r->bw_gbs, &r->bw_mad);
        int ml = robust(s, 1, c, &r->lat_us, &r->lat_mad);
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

int cp_screen_judge(cp_screen_t *s, const cp_screen_ref_t *baseline)
{
    if (baseline != NULL) {
        s->ref = *baseline;
        s->ref.source = 1;
    } else {
        memset(&s->ref, 0, sizeof(s->ref));
        int mb = robust(s, 0, -1, &s->ref.bw_gbs, &s->ref.bw_mad);
        int ml = robust(s, 1, -1, &s->ref.lat_us, &s->ref.lat_mad);
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

/* ---- attribution ------------------------------------------------------------------------- */

/* The other end of pair p seen from node, or -1 when node is not in it. */
static int other(const cp_screen_pair_t *p, int node)
{
    return p->a == node ? p->b : p->b == node ? p->a : -1;
}

/* Node's random-round pairs with reachable partners: *meas measured or failed, *slow slow. */
static void node_counts(const cp_screen_t *s, int node, int *meas, int *slow)
{
    *meas = *slow = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        int o = other(p, node);
        if (o < 0 || p->phase != CP_SCREEN_RANDOM || !s->reach[o] ||
            p->status == CP_SCREEN_TIMEOUT) {
            continue;
        }
        (*meas)++;
        *slow += p->slow;
    }
}

void cp_screen_node_stats(const cp_screen_t *s, int node, int *meas, int *slow, double *score)
{
    node_counts(s, node, meas, slow);
    double v[64];
    int m = 0;
    for (size_t i = 0; i < s->npairs && m < 64; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (other(p, node) >= 0 && p->status != CP_SCREEN_TIMEOUT) {
            v[m++] = p->score;
        }
    }
    *score = cp_stats_median(v, (size_t)m);
}

/* 1 when node met peer in any pair so far. */
static int met(const cp_screen_t *s, int node, int peer)
{
    for (size_t i = 0; i < s->npairs; i++) {
        if (other(&s->pairs[i], node) == peer) {
            return 1;
        }
    }
    return 0;
}

/* Record the slow random-round pairs between reachable non-suspects as suspect links. */
static int find_links(cp_screen_t *s)
{
    size_t cap = s->npairs ? s->npairs : 1;
    s->link_a = malloc(cap * sizeof(int));
    s->link_b = malloc(cap * sizeof(int));
    s->link_verdict = malloc(cap * sizeof(int));
    if (s->link_a == NULL || s->link_b == NULL || s->link_verdict == NULL) {
        return -1;
    }
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_RANDOM && p->slow && s->reach[p->a] && s->reach[p->b] &&
            !s->suspect[p->a] && !s->suspect[p->b]) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_INCONCLUSIVE;
        }
    }
    return 0;
}

/* A confirmation partner for suspect node: reachable, not a suspect, free in this round, and
 * not met before where there is one (else one met before: few nodes); searched from node + 1
 * on, so that suspects spread over the good nodes. */
static int good_partner(const cp_screen_t *s, int node, const int *partner)
{
    int again = -1;
    for (int k = 1; k < s->n; k++) {
        int g = (node + k) % s->n;
        if (s->reach[g] && !s->suspect[g] && partner[g] < 0) {
            if (!met(s, node, g)) {
                return g;
            }
            again = again < 0 ? g : again;
        }
    }
    return again;
}

/* The node that explains most of the slow pairs not yet explained by a suspect: the highest
 * share of slow pairs among its pairs with partners that are not suspects, two or more of
 * them (or all, when it has one); -1 when none is left.  meas and slow are scratch [n]. */
static int next_suspect(const cp_screen_t *s, int *meas, int *slow)
{
    memset(meas, 0, sizeof(int) * (size_t)s->n);
    memset(slow, 0, sizeof(int) * (size_t)s->n);
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase != CP_SCREEN_RANDOM || p->status == CP_SCREEN_TIMEOUT || !s->reach[p->a] ||
            !s->reach[p->b]) {
            continue;
        }
        if (!s->suspect[p->b]) { /* a pair with a suspect is explained by the suspect */
            meas[p->a]++;
            slow[p->a] += p->slow;
        }
        if (!s->suspect[p->a]) {
            meas[p->b]++;
            slow[p->b] += p->slow;
        }
    }
    int best = -1;
    for (int i = 0; i < s->n; i++) {
        if (s->suspect[i] || slow[i] == 0 || (slow[i] < 2 && slow[i] < meas[i])) {
            continue;
        }
        /* slow[i] / meas[i] > slow[best] / meas[best], ties to the more slow pairs */
        long lhs = (long)slow[i] * (best >= 0 ? meas[best] : 1);
        long rhs = best >= 0 ? (long)slow[best] * meas[i] : 0;
        if (best < 0 || lhs > rhs || (lhs == rhs && slow[i] > slow[best])) {
            best = i;
        }
    }
    return best;
}

int cp_screen_plan_confirm(cp_screen_t *s, int *partner)
{
    int *meas = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    int *slow = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (meas == NULL || slow == NULL) {
        free(meas);
        free(slow);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        partner[i] = -1;
        s->suspect[i] = 0;
    }
    for (int b; (b = next_suspect(s, meas, slow)) >= 0;) {
        s->suspect[b] = 1;
    }
    free(meas);
    free(slow);
    if (find_links(s) != 0) {
        return -1;
    }
    int planned = 0;
    for (int l = 0; l < s->nlinks; l++) { /* each end is in at most one: else it is a suspect */
        if (partner[s->link_a[l]] < 0 && partner[s->link_b[l]] < 0) {
            partner[s->link_a[l]] = s->link_b[l];
            partner[s->link_b[l]] = s->link_a[l];
            planned++;
        }
    }
    for (int i = 0; i < s->n; i++) {
        int g = s->suspect[i] ? good_partner(s, i, partner) : -1;
        if (g >= 0) {
            partner[i] = g;
            partner[g] = i;
            s->confirm_with[i] = g;
            planned++;
        }
    }
    return planned;
}

/* The confirmation pair of a and b, or NULL. */
static const cp_screen_pair_t *confirm_pair(const cp_screen_t *s, int a, int b)
{
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_CONFIRM && other(p, a) == b) {
            return p;
        }
    }
    return NULL;
}

/* The verdict of a suspect from its confirmation pair with peer (peer < 0: none). */
static int confirmed(const cp_screen_t *s, int node, int peer)
{
    const cp_screen_pair_t *p = peer >= 0 ? confirm_pair(s, node, peer) : NULL;
    if (!s->reach[node]) {
        return CP_SCREEN_UNREACHABLE;
    }
    if (p == NULL || p->status == CP_SCREEN_TIMEOUT) {
        return CP_SCREEN_INCONCLUSIVE;
    }
    return p->slow ? CP_SCREEN_SLOW : CP_SCREEN_HEALTHY;
}

/* 1 when (a, b) is a suspect link already. */
static int is_link(const cp_screen_t *s, int a, int b)
{
    for (int l = 0; l < s->nlinks; l++) {
        if ((s->link_a[l] == a && s->link_b[l] == b) || (s->link_a[l] == b && s->link_b[l] == a)) {
            return 1;
        }
    }
    return 0;
}

int cp_screen_plan_recheck(cp_screen_t *s, int *partner)
{
    int planned = 0;
    for (int i = 0; i < s->n; i++) {
        partner[i] = -1;
    }
    for (size_t i = 0; i < s->npairs && s->link_a != NULL; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase != CP_SCREEN_RANDOM || !p->slow || !s->reach[p->a] || !s->reach[p->b] ||
            is_link(s, p->a, p->b)) {
            continue;
        }
        /* a slow pair of a suspect its confirmation cleared, whose other end is not slow */
        int va = s->suspect[p->a] ? confirmed(s, p->a, s->confirm_with[p->a]) : -1;
        int vb = s->suspect[p->b] ? confirmed(s, p->b, s->confirm_with[p->b]) : -1;
        if ((va == CP_SCREEN_HEALTHY && vb != CP_SCREEN_SLOW) ||
            (vb == CP_SCREEN_HEALTHY && va != CP_SCREEN_SLOW)) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_INCONCLUSIVE;
        }
    }
    for (int l = 0; l < s->nlinks; l++) { /* every link not run again yet, where both are free */
        int a = s->link_a[l], b = s->link_b[l];
        if (confirm_pair(s, a, b) == NULL && s->reach[a] && s->reach[b] && partner[a] < 0 &&
            partner[b] < 0) {
            partner[a] = b;
            partner[b] = a;
            planned++;
        }
    }
    return planned;
}

/*
 * Node's median score over its judged pairs (the confirmation included), *m of them.  A node
 * that is not a suspect is judged by its pairs with partners that are not suspects, where it
 * has any: a pair with a suspect is explained by the suspect, as in next_suspect, and with
 * few nodes a good node may meet a bad one twice (a random round and the confirmation), half
 * of its pairs.  A suspect, and a node that met only suspects (a cluster slow as a whole), by
 * all of its pairs.
 */
static double judged_median(const cp_screen_t *s, int node, int *m)
{
    double v[64];
    for (int all = s->suspect[node]; all < 2; all++) {
        *m = 0;
        for (size_t i = 0; i < s->npairs && *m < 64; i++) {
            const cp_screen_pair_t *p = &s->pairs[i];
            int o = other(p, node);
            if (o >= 0 && s->reach[o] && p->status != CP_SCREEN_TIMEOUT &&
                (all || !s->suspect[o])) {
                v[(*m)++] = p->score;
            }
        }
        if (*m > 0) {
            break;
        }
    }
    return cp_stats_median(v, (size_t)*m);
}

/* Against a baseline, a node whose median pair is slow is slow, whoever it met. */
static void baseline_verdicts(cp_screen_t *s)
{
    for (int i = 0; s->opt.has_baseline && i < s->n; i++) {
        /* against a baseline, a node whose median pair is slow is slow, whoever it met: a
         * cluster slow as a whole has no good partner to confirm with, and needs none */
        int meas;
        double score = judged_median(s, i, &meas);
        /* the median of meas pairs spreads about 1.25 / sqrt(meas) times less than a pair */
        double spread = 1.25 / sqrt(meas > 0 ? meas : 1) * s->opt.baseline.bw_mad;
        if (s->reach[i] && meas >= 2 && score > 0 && score < s->opt.thr &&
            -log(score) > s->opt.z * 1.4826 * spread) {
            s->verdict[i] = CP_SCREEN_SLOW;
        }
    }
}

/* The exit status of the verdicts: 1 something flagged, 2 something inconclusive, else 0. */
static int verdict_status(const cp_screen_t *s, int unsure)
{
    int flagged = 0;
    for (int l = 0; l < s->nlinks; l++) {
        flagged |= s->link_verdict[l] == CP_SCREEN_SLOW;
        unsure |= s->link_verdict[l] == CP_SCREEN_INCONCLUSIVE;
    }
    for (int i = 0; i < s->n; i++) {
        flagged |= s->verdict[i] == CP_SCREEN_SLOW || s->verdict[i] == CP_SCREEN_UNREACHABLE;
        unsure |= s->verdict[i] == CP_SCREEN_INCONCLUSIVE || s->verdict[i] == CP_SCREEN_UNTESTED;
    }
    return flagged ? 1 : unsure ? 2 : 0;
}

int cp_screen_decide(cp_screen_t *s)
{
    for (int i = 0; i < s->n; i++) {
        int meas, slow;
        node_counts(s, i, &meas, &slow);
        s->verdict[i] = !s->reach[i]    ? CP_SCREEN_UNREACHABLE
                        : s->suspect[i] ? confirmed(s, i, s->confirm_with[i])
                        : meas == 0     ? CP_SCREEN_UNTESTED
                                        : CP_SCREEN_HEALTHY;
    }
    baseline_verdicts(s);
    for (int l = 0; l < s->nlinks; l++) {
        int a = s->link_a[l], b = s->link_b[l];
        int v = confirmed(s, a, b);
        s->link_verdict[l] = v == CP_SCREEN_UNREACHABLE ? CP_SCREEN_INCONCLUSIVE : v;
        if (!s->reach[b]) {
            s->link_verdict[l] = CP_SCREEN_INCONCLUSIVE;
        }
    }
    return verdict_status(s, s->ref.pairs == 0 && s->ref.source == 0);
}

/* ---- a record judged again --------------------------------------------------------------- */

int cp_screen_schedule_check(const cp_screen_t *s)
{
    int n = s->n, nr = cp_screen_random_rounds(s), bad = -1;
    int *pos = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (pos == NULL) {
        return -2;
    }
    for (int p = 0; p < n; p++) {
        pos[s->perm[p]] = p; /* where each node sits in the shuffled order */
    }
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase != CP_SCREEN_RANDOM) {
            continue;
        }
        int q = p->round >= 0 && p->round < nr ? cp_links_partner(n, s->order[p->round], pos[p->a])
                                               : -1;
        int r = p->round < 0 ? 0 : p->round;
        if ((q < 0 || s->perm[q] != p->b) && (bad < 0 || r < bad)) {
            bad = r;
        }
    }
    free(pos);
    return bad;
}

int cp_screen_replay(cp_screen_t *s)
{
    int *partner = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (partner == NULL || cp_screen_plan_confirm(s, partner) < 0) {
        free(partner);
        return -1;
    }
    for (int i = 0; i < s->n; i++) {
        int w = s->confirm_with[i];
        if (!s->suspect[i] || (w >= 0 && confirm_pair(s, i, w) != NULL)) {
            continue;
        }
        for (size_t k = 0; k < s->npairs; k++) { /* the confirmation the record holds */
            const cp_screen_pair_t *p = &s->pairs[k];
            int o = other(p, i);
            if (p->phase == CP_SCREEN_CONFIRM && o >= 0 && s->reach[o] && !s->suspect[o] &&
                p->status != CP_SCREEN_TIMEOUT) {
                s->confirm_with[i] = o;
                break;
            }
        }
    }
    cp_screen_plan_recheck(s, partner); /* the links a cleared suspect leaves */
    free(partner);
    return cp_screen_decide(s);
}

int cp_screen_decide_sweep(cp_screen_t *s)
{
    int *partner = malloc(sizeof(int) * (size_t)(s->n > 0 ? s->n : 1));
    if (partner == NULL || cp_screen_plan_confirm(s, partner) < 0) {
        free(partner);
        return -1;
    }
    free(partner);
    for (int i = 0; i < s->n; i++) {
        int meas, slow;
        node_counts(s, i, &meas, &slow);
        s->confirm_with[i] = -1; /* no confirmation round: the sweep's pairs are the evidence */
        s->verdict[i] = !s->reach[i]                                    ? CP_SCREEN_UNREACHABLE
                        : meas == 0                                     ? CP_SCREEN_UNTESTED
                        : s->suspect[i] && slow >= 2 && 2 * slow > meas ? CP_SCREEN_SLOW
                                                                        : CP_SCREEN_HEALTHY;
    }
    baseline_verdicts(s);
    s->nlinks = 0; /* the slow pairs that no slow node explains (room: one per pair) */
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->phase == CP_SCREEN_RANDOM && p->slow && s->reach[p->a] && s->reach[p->b] &&
            s->verdict[p->a] != CP_SCREEN_SLOW && s->verdict[p->b] != CP_SCREEN_SLOW &&
            !is_link(s, p->a, p->b)) {
            s->link_a[s->nlinks] = p->a;
            s->link_b[s->nlinks] = p->b;
            s->link_verdict[s->nlinks++] = CP_SCREEN_SLOW;
        }
    }
    return verdict_status(s, s->ref.pairs == 0 && s->ref.source == 0);
}

/* ---- words ------------------------------------------------------------------------------- */

void cp_screen_evidence(const cp_screen_t *s, int node, const char *const *names, char *buf,
                        size_t len)
{
    size_t at = 0;
    int by = cp_screen_by_class(&s->ref); /* the class where the pairs were judged by it */
    buf[0] = '\0';
    for (size_t i = 0; i < s->npairs && at < len; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        int o = other(p, node);
        if (o < 0) {
            continue;
        }
        char who[64];
        if (names != NULL && names[o] != NULL) {
            snprintf(who, sizeof(who), "%s", names[o]);
        } else {
            snprintf(who, sizeof(who), "node %d", o);
        }
        const char *what = p->status == CP_SCREEN_TIMEOUT  ? "timeout"
                           : p->status == CP_SCREEN_FAILED ? "failed"
                           : p->slow                       ? "slow"
                                                           : "ok";
        int w = snprintf(buf + at, len - at, "%s%s %.2fx with %s (%s%s%s)", at ? ", " : "",
                         p->phase == CP_SCREEN_CONFIRM ? "confirm" : what, p->score, who,
                         p->phase == CP_SCREEN_CONFIRM ? what : "random", by ? ", " : "",
                         by ? cp_path_name(p->path) : "");
        at += w > 0 ? (size_t)w : 0;
    }
}
