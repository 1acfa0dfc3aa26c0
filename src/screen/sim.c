#include "config.h"

/*
 * The screen on a model cluster (sim.h): the cluster, its pairs and rounds, the validation's
 * groups, and one whole screen driven as the runtime drives it.  A case over seeds and its
 * counts: sim_case.c.
 */

#include "screen/sim.h"

#include "screen/path.h"
#include "screen/screen_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_sim_init(cp_sim_t *c, int n, double noise, uint64_t seed)
{
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->node_f = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    c->hung = calloc((size_t)(n > 0 ? n : 1), 1);
    c->nosetup = calloc((size_t)(n > 0 ? n : 1), 1);
    c->flaky = -1;
    c->noise = noise;
    c->x = seed * 7919 + 13;
    c->spine = 1.0;
    if (c->node_f == NULL || c->hung == NULL || c->nosetup == NULL) {
        cp_sim_free(c);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        c->node_f[i] = 1.0;
    }
    return 0;
}

void cp_sim_free(cp_sim_t *c)
{
    free(c->node_f);
    free(c->hung);
    free(c->nosetup);
    free(c->sw);
    memset(c, 0, sizeof(*c));
}

int cp_sim_switches(cp_sim_t *c, double spine, int classes)
{
    c->sw = malloc(sizeof(int) * (size_t)(c->n > 0 ? c->n : 1));
    if (c->sw == NULL) {
        return -1;
    }
    for (int i = 0; i < c->n; i++) {
        c->sw[i] = i >= c->n / 2;
    }
    c->spine = spine;
    c->classes = classes;
    return 0;
}

int cp_sim_link(cp_sim_t *c, int a, int b, double f)
{
    if (c->nlinks == CP_SIM_MAX_LINKS) {
        return -1;
    }
    c->link_a[c->nlinks] = a;
    c->link_b[c->nlinks] = b;
    c->link_f[c->nlinks++] = f;
    return 0;
}

double cp_sim_uniform(uint64_t *x)
{
    const uint64_t step = UINT64_C(0x9e3779b97f4a7c15);
    uint64_t z = *x += step;
    z = (z ^ z >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ z >> 27) * UINT64_C(0x94d049bb133111eb);
    return (double)((z ^ z >> 31) >> 11) * 0x1p-53;
}

/* A factor of uniform noise: [1 - noise, 1 + noise]. */
static double noisy(cp_sim_t *c)
{
    return 1 + c->noise * (2 * cp_sim_uniform(&c->x) - 1);
}

/* The factor of the links between a and b (1: none slow). */
static double link_factor(const cp_sim_t *c, int a, int b)
{
    double f = 1.0;
    for (int l = 0; l < c->nlinks; l++) {
        if ((c->link_a[l] == a && c->link_b[l] == b) || (c->link_a[l] == b && c->link_b[l] == a)) {
            f *= c->link_f[l];
        }
    }
    return f;
}

cp_screen_pair_t cp_sim_pair(cp_sim_t *c, int a, int b, int phase, int round)
{
    cp_screen_pair_t p = {.a = a, .b = b, .phase = phase, .round = round};
    p.path = cp_path_of(c->classes ? c->sw : NULL, a, b);
    if (c->hung[a] || c->hung[b]) { /* as the runtime reports it: the end is gone */
        p.outcome = CP_SCREEN_PARTNER_GONE;
        return p;
    }
    if (c->nosetup[a] || c->nosetup[b]) { /* as the runtime reports it: not set up */
        p.outcome = CP_SCREEN_NOSETUP;
        return p;
    }
    double f = c->node_f[a] < c->node_f[b] ? c->node_f[a] : c->node_f[b];
    if ((a == c->flaky || b == c->flaky) && phase == CP_SCREEN_RANDOM && f > 0.2) {
        f = 0.2; /* a passing disturbance: its random rounds look like a slow node's */
    }
    f *= link_factor(c, a, b);
    if (cp_path_of(c->sw, a, b) == CP_PATH_CROSS_SWITCH) {
        f *= c->spine;
    }
    p.bw_gbs = CP_SIM_BW_GBS * f * noisy(c);
    p.lat_us = CP_SIM_LAT_US / f * noisy(c);
    return p;
}

/* 1 when the pair a-b of a round crosses a spine slower than the leaves and is measured (its
 * bandwidth test moves bulk over the spine). */
static int on_spine(const cp_sim_t *c, int a, int b)
{
    return c->spine < 1 && cp_path_of(c->sw, a, b) == CP_PATH_CROSS_SWITCH && !c->hung[a] &&
           !c->hung[b] && !c->nosetup[a] && !c->nosetup[b];
}

/* With lat_with_bulk, pair p (on the spine, with m such pairs in its round) measured its
 * latency while each of the m - 1 others moved bulk over the spine half the time: one
 * bandwidth message's time on the spine added when any did. */
static void lat_behind_bulk(cp_sim_t *c, cp_screen_pair_t *p, int m)
{
    double clear = 1.0;
    for (int k = 1; k < m; k++) {
        clear *= 0.5;
    }
    if (p->outcome == CP_SCREEN_MEASURED && cp_sim_uniform(&c->x) >= clear) {
        p->lat_us += CP_SIM_BYTES / (CP_SIM_BW_GBS * c->spine * 1e3);
    }
}

void cp_sim_round(cp_sim_t *c, cp_screen_t *s, int *partner, int phase)
{
    int round = s->rounds_run++, m = 0;
    for (int a = 0; a < c->n; a++) { /* nobody meets an unreachable node (screen_pairs.c) */
        int b = partner[a];
        if (b >= 0 && (!s->reach[a] || !s->reach[b])) {
            partner[a] = -1;
        }
        m += b > a && partner[a] == b && c->lat_with_bulk && on_spine(c, a, b);
    }
    for (int a = 0; a < c->n; a++) {
        int b = partner[a];
        if (b > a) {
            cp_screen_pair_t p = cp_sim_pair(c, a, b, phase, round);
            if (m >= 2 && on_spine(c, a, b)) {
                lat_behind_bulk(c, &p, m);
            }
            cp_screen_add(s, &p);
        }
        if (b >= 0 && c->hung[a]) {
            cp_screen_unreachable(s, a); /* its partner reports the deadline, it nothing */
        }
    }
}

void cp_sim_baseline(const cp_sim_t *c, cp_screen_ref_t *ref)
{
    memset(ref, 0, sizeof(*ref));
    ref->bw_gbs = CP_SIM_BW_GBS;
    ref->lat_us = CP_SIM_LAT_US;
    ref->bw_mad = ref->lat_mad = c->noise / 2;
    ref->source = 1;
    if (c->sw != NULL && c->classes) {
        ref->cls[CP_PATH_SAME_SWITCH] = (cp_screen_cref_t){.bw_gbs = ref->bw_gbs,
                                                           .bw_mad = ref->bw_mad,
                                                           .lat_us = ref->lat_us,
                                                           .lat_mad = ref->lat_mad,
                                                           .own = 1};
        ref->cls[CP_PATH_CROSS_SWITCH] = ref->cls[CP_PATH_SAME_SWITCH];
        ref->cls[CP_PATH_CROSS_SWITCH].bw_gbs *= c->spine;
        ref->cls[CP_PATH_CROSS_SWITCH].lat_us /= c->spine;
    }
}

/* ---- the validation collective ---------------------------------------------------------- */

/* The figures of the current level's groups (group_of[node], groups of them): a ring
 * allreduce of its m members at the healthy figures times its slowest member's factor, its
 * links' and the spine's when it spans both switches, times noise; failed when a member
 * cannot be set up. */
static int level_figures(cp_sim_t *c, cp_halve_t *h, const int *group_of, int groups)
{
    double *f = malloc(sizeof(double) * (size_t)groups);
    int *m = calloc((size_t)groups, sizeof(int)), *fail = calloc((size_t)groups, sizeof(int));
    int *sw = malloc(sizeof(int) * (size_t)groups);
    if (f == NULL || m == NULL || fail == NULL || sw == NULL) {
        free(f), free(m), free(fail), free(sw);
        return -1;
    }
    for (int k = 0; k < groups; k++) {
        f[k] = 1.0;
        sw[k] = -1;
    }
    for (int i = 0; i < c->n; i++) {
        int k = group_of[i];
        if (k < 0 || k >= groups) {
            continue;
        }
        m[k]++;
        f[k] = c->node_f[i] < f[k] ? c->node_f[i] : f[k];
        fail[k] |= c->nosetup[i] || c->hung[i];
        if (c->sw != NULL && sw[k] >= 0 && sw[k] != c->sw[i]) {
            sw[k] = 2; /* across the spine */
        } else if (c->sw != NULL && sw[k] < 0) {
            sw[k] = c->sw[i];
        }
    }
    for (int l = 0; l < c->nlinks; l++) {
        int k = group_of[c->link_a[l]];
        if (k >= 0 && k < groups && group_of[c->link_b[l]] == k) {
            f[k] *= c->link_f[l];
        }
    }
    for (int k = 0; k < groups; k++) {
        double g = sw[k] == 2 ? f[k] * c->spine : f[k];
        double us_per_byte =
            1.0 / (CP_SIM_BW_GBS * g * 1e3) + (double)m[k] * (CP_SIM_LAT_US / g) / CP_SIM_BYTES;
        double busbw = fail[k] || m[k] < 2 ? 0 : 1e-3 / us_per_byte * noisy(c);
        cp_halve_set(h, k, fail[k], 0, busbw);
    }
    free(f), free(m), free(fail), free(sw);
    return 0;
}

/* The validation of r's screen as screen_valid.c runs it (survivors, setup0, the levels). */
static int validate(cp_sim_t *c, cp_sim_run_t *r)
{
    cp_screen_t *s = &r->s;
    unsigned char *in = calloc((size_t)c->n, 1);
    int *group_of = malloc(sizeof(int) * (size_t)c->n);
    int ret = in == NULL || group_of == NULL ? -1 : 0;
    cp_screen_judge_opt(s); /* survivors(): the healthy nodes, less the ends of a slow link */
    cp_screen_decide(s);
    for (int i = 0; ret == 0 && i < s->n; i++) {
        in[i] = s->verdict[i] == CP_SCREEN_HEALTHY;
    }
    for (int l = 0; ret == 0 && l < s->nlinks; l++) {
        if (s->link_verdict[l] == CP_SCREEN_SLOW) {
            in[s->link_a[l]] = in[s->link_b[l]] = 0;
        }
    }
    cp_halve_opts_t o;
    cp_halve_opts_default(&o);
    o.ref_bw_gbs = s->ref.bw_gbs;
    o.ref_lat_us = s->ref.lat_us;
    o.bytes = CP_SIM_BYTES;
    o.abs_thr = s->opt.thr / 2;
    o.rel_thr = s->opt.thr;
    int m = ret == 0 ? cp_halve_init(&r->h, c->n, in, &o) : -1;
    ret = m < 0 ? -1 : 0;
    r->valid = m >= 2;
    for (int groups; r->valid && ret == 0 && (groups = cp_halve_level(&r->h, group_of)) > 0;) {
        if (level_figures(c, &r->h, group_of, groups) != 0 || cp_halve_next(&r->h, 0) < 0) {
            ret = -1;
        }
    }
    free(in);
    free(group_of);
    return ret;
}

/* ---- the whole screen ------------------------------------------------------------------- */

/* The exit status of r's verdict as cp_screen_status reads the rows the runtime writes: one
 * per node, one per suspect link and per link the validation named, the validation's. */
static int rows_status(const cp_sim_run_t *r)
{
    const cp_screen_t *s = &r->s;
    size_t n = (size_t)s->n + (size_t)s->nlinks + (size_t)r->h.nlinks + 1, k = 0;
    collprof_screen_row_t *rows = calloc(n, sizeof(*rows));
    if (rows == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        collprof_screen_row_t *w = &rows[i];
        snprintf(w->reference, sizeof(w->reference), "%s", s->ref.source ? "baseline" : "screen");
        w->ref_bw_gbs = s->ref.bw_gbs;
        w->ref_lat_us = s->ref.lat_us;
    }
    for (int i = 0; i < s->n; i++, k++) {
        snprintf(rows[k].what, sizeof(rows[k].what), "node");
        snprintf(rows[k].verdict, sizeof(rows[k].verdict), "%s",
                 cp_screen_verdict_name(r->verdict[i]));
    }
    for (int l = 0; l < s->nlinks + r->h.nlinks; l++, k++) {
        int v = l < s->nlinks ? s->link_verdict[l] : CP_SCREEN_SLOW;
        snprintf(rows[k].what, sizeof(rows[k].what), "link");
        snprintf(rows[k].verdict, sizeof(rows[k].verdict), "%s", cp_screen_verdict_name(v));
    }
    int o = r->h.outcome;
    snprintf(rows[k].what, sizeof(rows[k].what), "verify");
    snprintf(rows[k].verdict, sizeof(rows[k].verdict), "%s",
             !r->valid                                     ? "skipped"
             : o == CP_HALVE_PASSED                        ? "passed"
             : o == CP_HALVE_FOUND || o == CP_HALVE_PARTLY ? "failed"
                                                           : "inconclusive");
    int st = cp_screen_status(rows, n);
    free(rows);
    return st;
}

int cp_sim_screen(cp_sim_t *c, const cp_screen_opts_t *o, int validate_on, cp_sim_run_t *r)
{
    memset(r, 0, sizeof(*r));
    int *partner = malloc(sizeof(int) * (size_t)(c->n > 0 ? c->n : 1));
    r->verdict = malloc(sizeof(int) * (size_t)(c->n > 0 ? c->n : 1));
    if (partner == NULL || r->verdict == NULL || cp_screen_init(&r->s, c->n, o) != 0) {
        free(partner);
        return -1;
    }
    cp_screen_t *s = &r->s;
    int nr = cp_screen_random_rounds(s), ret = 0;
    for (int k = 0; k < nr; k++) {
        cp_screen_matching(s, k, partner);
        cp_sim_round(c, s, partner, CP_SCREEN_RANDOM);
    }
    for (int k = 0; k < CP_SCREEN_REPAIR_ROUNDS && cp_screen_plan_repair(s, partner) > 0; k++) {
        cp_sim_round(c, s, partner, CP_SCREEN_REPAIR); /* pairs that could not be set up */
    }
    cp_screen_judge_opt(s);
    int planned = cp_screen_plan_confirm(s, partner);
    for (int k = 0; planned > 0 && k <= nr; k++) { /* the confirmation, then rechecks */
        cp_sim_round(c, s, partner, CP_SCREEN_CONFIRM);
        cp_screen_judge_opt(s);
        planned = k < nr ? cp_screen_plan_recheck(s, partner) : 0;
    }
    if (planned < 0 || (validate_on && validate(c, r) != 0)) {
        ret = -1;
    }
    cp_screen_judge_opt(s); /* the verdict's rows */
    r->screen_status = cp_screen_decide(s);
    for (int i = 0; i < c->n; i++) {
        r->verdict[i] = r->valid && r->h.culprit[i] ? CP_SCREEN_SLOW : s->verdict[i];
    }
    r->rounds = s->rounds_run + (r->valid ? r->h.levels : 0);
    r->status = ret == 0 ? rows_status(r) : -1;
    free(partner);
    return ret == 0 && r->status >= 0 ? 0 : -1;
}

void cp_sim_run_free(cp_sim_run_t *r)
{
    cp_screen_free(&r->s);
    cp_halve_free(&r->h);
    free(r->verdict);
    memset(r, 0, sizeof(*r));
}

int cp_sim_link_named(const cp_sim_run_t *r, int a, int b)
{
    for (int l = 0; l < r->s.nlinks; l++) {
        int x = r->s.link_a[l], y = r->s.link_b[l];
        if (r->s.link_verdict[l] == CP_SCREEN_SLOW && ((x == a && y == b) || (x == b && y == a))) {
            return 1;
        }
    }
    for (int l = 0; r->valid && l < r->h.nlinks; l++) {
        int x = r->h.link_a[l], y = r->h.link_b[l];
        if ((x == a && y == b) || (x == b && y == a)) {
            return 1;
        }
    }
    return 0;
}
