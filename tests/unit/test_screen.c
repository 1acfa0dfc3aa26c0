/*
 * The screen's pure parts (src/screen/screen.c) and the simulator of the whole
 * method (src/screen/sim.h, shared with collprof-report simulate screen), no processes: a
 * cluster of n nodes with injected slow nodes, slow links and hung nodes, each pair's figures
 * multiplied by uniform noise; the screen's rounds and its validation run against it as the
 * runtime runs them, and the verdict is compared with what was injected.  Checks the schedule
 * (perfect matchings, no pair twice, different byes, deterministic by seed), the rounds used at 16,
 * 1,024 and 4,096 nodes, recall, the node/link class and false positives, and the Slurm host list.
 * Then a screen's pairs written as /links rows and judged again against a baseline (collprof-report
 * screen --baseline), and a link sweep's pairs judged against one (collprof-report links
 * --baseline).  Path classes: clusters on two leaf switches whose cross-switch pairs are 0.5x (or
 * 0.25x) a same-switch pair, judged by class and without classes, against the screen's own median
 * and against a baseline with rows per class.
 */
#include "config.h"

#include "screen/hostlist.h"
#include "screen/links.h"
#include "screen/path.h"
#include "screen/screen.h"
#include "screen/screen_out.h"
#include "screen/sim.h"

#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the simulated cluster (src/screen/sim.h) ------------------------------------------- */

/* The baseline of the simulated cluster's healthy pairs (NULL: none). */
static const cp_screen_ref_t *sim_baseline;

/* The whole screen against c as the runtime runs it (the shared simulator: the validation
 * collective too), its rounds and verdict into s; the rounds used (the validation's levels
 * counted); cp_screen_decide's status in *status. */
static int sim_screen(cp_sim_t *c, cp_screen_t *s, uint64_t seed, int *status)
{
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = seed;
    if (sim_baseline != NULL) {
        o.has_baseline = 1;
        o.baseline = *sim_baseline;
    }
    cp_sim_run_t r;
    if (cp_sim_screen(c, &o, 1, &r) != 0) {
        printf("Bail out! simulator: out of memory\n");
        exit(1);
    }
    *s = r.s; /* the caller frees it */
    memset(&r.s, 0, sizeof(r.s));
    *status = r.screen_status;
    int rounds = r.rounds;
    cp_sim_run_free(&r);
    return rounds;
}

/* 1 when exactly the nodes with want[i] have verdict v, and no link is flagged. */
static int flagged_exactly(const cp_screen_t *s, const unsigned char *want, int v)
{
    for (int i = 0; i < s->n; i++) {
        int is = s->verdict[i] == v;
        int other_flag = s->verdict[i] == CP_SCREEN_SLOW || s->verdict[i] == CP_SCREEN_UNREACHABLE;
        if (is != !!want[i] || (!want[i] && other_flag)) {
            return 0;
        }
    }
    for (int l = 0; l < s->nlinks; l++) {
        if (s->link_verdict[l] == CP_SCREEN_SLOW) {
            return 0;
        }
    }
    return 1;
}

/* ---- the schedule ------------------------------------------------------------------------- */

static void check_schedule(int n, uint64_t seed)
{
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = seed;
    cp_screen_t s;
    cp_screen_init(&s, n, &o);
    int rounds = cp_screen_random_rounds(&s), ok = 1, byes_seen = 0;
    int *p = malloc(sizeof(int) * (size_t)n), *q = malloc(sizeof(int) * (size_t)n);
    unsigned char *met = calloc((size_t)n * (size_t)n, 1), *bye = calloc((size_t)n, 1);
    for (int k = 0; k < rounds; k++) {
        cp_screen_matching(&s, k, p);
        cp_screen_matching(&s, k, q);
        int byes = 0;
        for (int a = 0; a < n; a++) {
            ok &= p[a] == q[a]; /* deterministic */
            if (p[a] < 0) {
                byes++;
                ok &= !bye[a]; /* a different node sits out each round */
                bye[a] = 1;
                continue;
            }
            ok &= p[a] != a && p[p[a]] == a && !met[a * n + p[a]];
            met[a * n + p[a]] = 1;
        }
        ok &= byes == n % 2;
        byes_seen += byes;
    }
    /* 3 rounds, one more for an odd count (every node gets 3 pairs), as the circle allows */
    ok(ok && rounds == (n > 4   ? 3 + n % 2
                        : n % 2 ? n
                                : n - 1),
       "n %d seed %llu: %d rounds of perfect matchings, no pair twice, %d different byes", n,
       (unsigned long long)seed, rounds, byes_seen);
    o.seed = seed + 1;
    cp_screen_t t;
    cp_screen_init(&t, n, &o);
    cp_screen_matching(&t, 0, q);
    cp_screen_matching(&s, 0, p);
    ok(n < 8 || memcmp(p, q, sizeof(int) * (size_t)n) != 0, "n %d: another seed, another matching",
       n);
    cp_screen_free(&t);
    cp_screen_free(&s);
    free(p);
    free(q);
    free(met);
    free(bye);
}

/* 4 nodes: the circle's 3 rounds twice (cp_screen_random_rounds), each pass perfect
 * matchings that meet every pair once; a pair's second measurement is folded into its first
 * by the judgement (geometric mean, no verdict of its own). */
static void check_twice(uint64_t seed)
{
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = seed;
    cp_screen_t s;
    cp_screen_init(&s, 4, &o);
    int rounds = cp_screen_random_rounds(&s), p[4], met[16] = {0}, good = rounds == 6;
    for (int k = 0; k < rounds; k++) {
        cp_screen_matching(&s, k, p);
        for (int a = 0; a < 4; a++) {
            good &= p[a] >= 0 && p[a] != a && p[p[a]] == a;
            met[a * 4 + (p[a] & 3)] += a < p[a] ? (k >= 3 ? 10 : 1) : 0;
        }
    }
    for (int a = 0; a < 4; a++) {
        for (int b = a + 1; b < 4; b++) {
            good &= met[a * 4 + b] == 11; /* once in each pass */
        }
    }
    ok(good, "n 4 seed %llu: %d rounds, the circle twice, every pair once in each pass",
       (unsigned long long)seed, rounds);
    for (int k = 0; k < rounds; k++) { /* every pair at 10 GB/s, pair 0-1 at 2.5 the second time */
        cp_screen_matching(&s, k, p);
        for (int a = 0; a < 4; a++) {
            if (a < p[a]) {
                cp_screen_pair_t q = {.a = a,
                                      .b = p[a],
                                      .round = k,
                                      .lat_us = 20,
                                      .bw_gbs = k >= 3 && a == 0 && p[a] == 1 ? 2.5 : 10};
                cp_screen_add(&s, &q);
            }
        }
    }
    int sched = cp_screen_schedule_check(&s);
    cp_screen_t old;
    cp_screen_init(&old, 4, &o); /* as written before: 3 rounds, then one confirmation pair */
    for (int k = 0; k < 3; k++) {
        cp_screen_matching(&old, k, p);
        for (int a = 0; a < 4; a++) {
            if (a < p[a]) {
                cp_screen_pair_t q = {.a = a, .b = p[a], .round = k, .lat_us = 20, .bw_gbs = 10};
                cp_screen_add(&old, &q);
            }
        }
    }
    cp_screen_pair_t c = {.a = 0, .b = p[0], .round = 3, .lat_us = 20, .bw_gbs = 10};
    cp_screen_add(&old, &c);
    ok(sched == -1 && cp_screen_schedule_check(&old) == 3,
       "n 4: the schedule check takes the second pass (%d) and refuses a confirmation pair in "
       "its place (round %d: the reader then reads the file as written before)",
       sched, cp_screen_schedule_check(&old));
    cp_screen_free(&old);
    cp_screen_judge(&s, NULL);
    int repeats = 0;
    double first01 = 0;
    for (size_t i = 0; i < s.npairs; i++) {
        repeats += s.pairs[i].phase == CP_SCREEN_REPEAT;
        first01 = s.pairs[i].phase == CP_SCREEN_RANDOM && s.pairs[i].a == 0 && s.pairs[i].b == 1
                      ? s.pairs[i].bw_gbs
                      : first01;
    }
    ok(repeats == 6 && first01 > 4.99 && first01 < 5.01,
       "n 4: the second pass folded into the first (%d repeats; pair 0-1 at %.2f GB/s, the "
       "geometric mean of 10 and 2.5)",
       repeats, first01);
    cp_screen_free(&s);
}

/* ---- scenarios ---------------------------------------------------------------------------- */

/* The scenarios' clusters on two leaf switches, a cross-switch pair sim_spine times as fast
 * (0: one switch), its pairs' path classes known when sim_classes. */
static double sim_spine;
static int sim_classes;

/* Runs of n nodes with nbad slow nodes at factor f (and hung ones), jitter; how many of runs
 * named exactly those (as slow, or unreachable when hung); the most rounds in *rmax. */
static int scenario(int n, int nbad, double f, int hung, double jitter, int runs, int *rmax)
{
    int hits = 0;
    *rmax = 0;
    for (int r = 0; r < runs; r++) {
        cp_sim_t c;
        cp_sim_init(&c, n, jitter, (uint64_t)r + 1);
        if (sim_spine > 0) {
            cp_sim_switches(&c, sim_spine, sim_classes);
        }
        unsigned char *want = calloc((size_t)n, 1);
        for (int k = 0; k < nbad; k++) {
            int node = (int)((uint64_t)(r * 977 + k * 131 + 5) % (uint64_t)n);
            want[node] = 1;
            if (hung) {
                c.hung[node] = 1;
            } else {
                c.node_f[node] = f;
            }
        }
        cp_screen_t s;
        int status, rounds = sim_screen(&c, &s, (uint64_t)r * 31 + 7, &status);
        int exact = flagged_exactly(&s, want, hung ? CP_SCREEN_UNREACHABLE : CP_SCREEN_SLOW);
        hits += exact && status == (nbad > 0 ? 1 : 0);
        *rmax = rounds > *rmax ? rounds : *rmax;
        cp_screen_free(&s);
        free(want);
        cp_sim_free(&c);
    }
    return hits;
}

/* A slow link between two nodes that a random round pairs: classed a link, no node flagged. */
static int link_scenario(int n, double f, double jitter, int runs, int flaky_end)
{
    int hits = 0;
    for (int r = 0; r < runs; r++) {
        uint64_t seed = (uint64_t)r * 31 + 7;
        cp_sim_t c;
        cp_sim_init(&c, n, jitter, (uint64_t)r + 1);
        cp_screen_opts_t o;
        cp_screen_opts_default(&o);
        o.seed = seed;
        cp_screen_t probe;
        cp_screen_init(&probe, n, &o);
        int *p = malloc(sizeof(int) * (size_t)n);
        cp_screen_matching(&probe, r % 3, p);
        int la = r % n, lb = p[la]; /* n is even here: everybody meets somebody */
        cp_sim_link(&c, la, lb, f);
        c.flaky = flaky_end ? la : -1;
        cp_screen_t s;
        int status;
        sim_screen(&c, &s, seed, &status);
        int link_ok = 1, slow_links = 0; /* the one slow link; the others cleared */
        for (int l = 0; l < s.nlinks; l++) {
            int it = (s.link_a[l] == la && s.link_b[l] == lb) ||
                     (s.link_a[l] == lb && s.link_b[l] == la);
            slow_links += s.link_verdict[l] == CP_SCREEN_SLOW;
            link_ok &= s.link_verdict[l] == (it ? CP_SCREEN_SLOW : CP_SCREEN_HEALTHY);
        }
        link_ok &= slow_links == 1;
        int nodes_clean = 1;
        for (int i = 0; i < n; i++) {
            nodes_clean &= s.verdict[i] == CP_SCREEN_HEALTHY;
        }
        hits += link_ok && nodes_clean && status == 1;
        cp_screen_free(&s);
        cp_screen_free(&probe);
        free(p);
        cp_sim_free(&c);
    }
    return hits;
}

/* Healthy clusters with jitter: runs with nothing flagged. */
static int healthy_scenario(int n, double jitter, int runs)
{
    int rmax;
    return scenario(n, 0, 1.0, 0, jitter, runs, &rmax);
}

static void check_hostlist(void)
{
    const char *names[] = {"n17", "n3", "n18", "gpu7", "n003", "login", "n19", "n3"};
    unsigned char all[] = {1, 1, 1, 1, 1, 1, 1, 1}, some[] = {1, 1, 1, 0, 0, 0, 0, 0};
    char buf[128];
    cp_hostlist(names, some, 8, buf, sizeof(buf));
    ok(strcmp(buf, "n[3,17-18]") == 0, "hostlist: n3,n17,n18 -> %s", buf);
    cp_hostlist(names, all, 8, buf, sizeof(buf));
    ok(strcmp(buf, "gpu7,login,n[3,17-19],n003") == 0,
       "hostlist: widths apart, repeats once, plain names -> %s", buf);
    int w = cp_hostlist(names, all, 8, buf, 8);
    ok(w > 7 && strlen(buf) == 7, "hostlist: truncated as snprintf (%d wanted)", w);
}

/* ---- judged again from /links rows ------------------------------------------------------- */

/* s's pairs as the /links rows a run writes (a latency and a bandwidth row each) into rows
 * (room for 2 x npairs); the count. */
static size_t pairs_to_rows(const cp_screen_t *s, collprof_link_row_t *rows)
{
    size_t m = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        for (int k = 0; k < 2; k++) {
            collprof_link_row_t *r = &rows[m++];
            memset(r, 0, sizeof(*r));
            snprintf(r->backend, sizeof(r->backend), "sim");
            snprintf(r->kind, sizeof(r->kind), "%s", k ? "bandwidth" : "latency");
            r->bytes = k ? 1048576 : 8;
            r->node_a = p->b; /* either order: the pair is the same */
            r->node_b = p->a;
            r->round = p->round;
            snprintf(r->path, sizeof(r->path), "%s", cp_path_name(p->path));
            snprintf(r->status, sizeof(r->status), "%s", cp_screen_outcome_status(p->outcome));
            r->time_p50_us = k ? (double)r->bytes * 1e-3 / p->bw_gbs : p->lat_us;
        }
    }
    return m;
}

/* The recorded screen s judged again from its rows against base into t: the status. */
static int rejudge(const cp_screen_t *s, const cp_screen_ref_t *base, cp_screen_t *t, int *sched)
{
    collprof_link_row_t *rows = malloc(sizeof(*rows) * 2 * (s->npairs + 1));
    size_t m = pairs_to_rows(s, rows);
    cp_screen_opts_t o = s->opt;
    o.has_baseline = 1;
    o.baseline = *base;
    cp_screen_init(t, s->n, &o);
    int added = cp_screen_add_rows(t, rows, m, "sim", cp_screen_random_rounds(t));
    *sched = cp_screen_schedule_check(t);
    free(rows);
    if (added != (int)s->npairs || *sched != -1) {
        return -1;
    }
    cp_screen_judge(t, base);
    return cp_screen_replay(t);
}

static void check_rejudge(void)
{
    cp_screen_ref_t base = {
        .bw_gbs = 12.0, .bw_mad = 0.05, .lat_us = 20.0, .lat_mad = 0.05, .source = 1};
    cp_sim_t c;
    cp_screen_t s, t;
    int status, st, sched;

    /* every node at 0.5x, screened against itself: nothing to tell; judged again: all slow */
    cp_sim_init(&c, 16, 0.10, 3);
    for (int i = 0; i < 16; i++) {
        c.node_f[i] = 0.5;
    }
    sim_baseline = NULL;
    sim_screen(&c, &s, 11, &status);
    st = rejudge(&s, &base, &t, &sched);
    int slow = 0;
    for (int i = 0; i < 16; i++) {
        slow += t.verdict[i] == CP_SCREEN_SLOW;
    }
    ok(status == 0 && st == 1 && slow == 16,
       "rejudge: 16 nodes at 0.5x, healthy against themselves (status %d), all slow against the "
       "baseline (%d slow, status %d)",
       status, slow, st);
    cp_screen_free(&t);
    base.bw_gbs = 6.0, base.lat_us = 40.0; /* the baseline of the cluster as it is */
    st = rejudge(&s, &base, &t, &sched);
    ok(st == 0, "rejudge: the same pairs against a baseline of their own figures: healthy (%d)",
       st);
    cp_screen_free(&t);
    cp_screen_free(&s);
    cp_sim_free(&c);
    base.bw_gbs = 12.0, base.lat_us = 20.0;

    /* a run against the baseline, judged again against it: the run's verdict, node by node */
    int same = 0, runs = 10;
    sim_baseline = &base;
    for (int r = 0; r < runs; r++) {
        cp_sim_init(&c, r % 2 ? 8 : 16, 0.10, (uint64_t)r + 40);
        c.node_f[r % 8] = 0.3;
        if (r % 3 == 0) { /* and a slow link */
            cp_sim_link(&c, (r + 3) % 8, (r + 5) % 8, 0.2);
        }
        sim_screen(&c, &s, (uint64_t)r * 7 + 1, &status);
        st = rejudge(&s, &base, &t, &sched);
        int eq = st == status && t.nlinks == s.nlinks;
        for (int i = 0; i < s.n; i++) {
            eq &= t.verdict[i] == s.verdict[i];
        }
        for (int l = 0; eq && l < s.nlinks; l++) {
            eq &= t.link_verdict[l] == s.link_verdict[l];
        }
        same += eq;
        cp_screen_free(&t);
        cp_screen_free(&s);
        cp_sim_free(&c);
    }
    sim_baseline = NULL;
    ok(same == runs,
       "rejudge: runs against the baseline judged again against it: the same "
       "verdicts in %d of %d",
       same, runs);

    /* a node slow in a run without a baseline, judged again: found alone, confirmation kept */
    cp_sim_init(&c, 16, 0.10, 5);
    c.node_f[6] = 0.3;
    sim_screen(&c, &s, 5, &status);
    st = rejudge(&s, &base, &t, &sched);
    unsigned char want[16] = {0};
    want[6] = 1;
    ok(st == 1 && flagged_exactly(&t, want, CP_SCREEN_SLOW) && t.confirm_with[6] >= 0 &&
           t.confirm_with[6] == s.confirm_with[6],
       "rejudge: node 6 at 0.3x, slow alone, confirmed with node %d as in the run (%d; status %d)",
       t.confirm_with[6], s.confirm_with[6], st);
    cp_screen_free(&t);

    /* a confirmation round taken for a random one is noticed, not judged */
    collprof_link_row_t *rows = malloc(sizeof(*rows) * 2 * (s.npairs + 1));
    size_t m = pairs_to_rows(&s, rows);
    cp_screen_opts_t o = s.opt;
    o.rounds = 4;
    cp_screen_init(&t, s.n, &o);
    cp_screen_add_rows(&t, rows, m, "sim", 4);
    sched = cp_screen_schedule_check(&t);
    ok(sched == 3,
       "rejudge: --screen-rounds read as 4 for a run of 3: round %d is not the "
       "schedule's",
       sched + 1);
    cp_screen_free(&t);
    rows[0].node_b = 16; /* a node the screen does not have */
    cp_screen_init(&t, s.n, &s.opt);
    ok(cp_screen_add_rows(&t, rows, m, "sim", 3) == -2 && t.npairs == 0,
       "rejudge: a row naming node 16 of 16: refused");
    ok(cp_screen_add_rows(&t, rows, m, "other", 3) == 0, "rejudge: another backend's: no pairs");
    cp_screen_free(&t);
    free(rows);
    cp_screen_free(&s);
    cp_sim_free(&c);
}

/* Every pair of n nodes once (the link sweep's rounds), against base: the status; t decided. */
static int sweep(cp_sim_t *c, const cp_screen_ref_t *base, cp_screen_t *t)
{
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.rounds = cp_links_rounds(c->n);
    o.has_baseline = 1;
    o.baseline = *base;
    cp_screen_init(t, c->n, &o);
    for (int k = 0; k < cp_links_rounds(c->n); k++) {
        for (int a = 0; a < c->n; a++) {
            int b = cp_links_partner(c->n, k, a);
            if (b > a) {
                cp_screen_pair_t p = cp_sim_pair(c, a, b, CP_SCREEN_RANDOM, k);
                cp_screen_add(t, &p);
            }
        }
    }
    cp_screen_judge(t, base);
    return cp_screen_decide_sweep(t);
}

static void check_sweep(void)
{
    cp_screen_ref_t base = {
        .bw_gbs = 12.0, .bw_mad = 0.05, .lat_us = 20.0, .lat_mad = 0.05, .source = 1};
    unsigned char want[7] = {0};
    cp_sim_t c;
    cp_screen_t t;
    cp_sim_init(&c, 7, 0.10, 9);
    int st = sweep(&c, &base, &t);
    ok(st == 0 && flagged_exactly(&t, want, CP_SCREEN_SLOW) && t.nlinks == 0,
       "sweep: 7 healthy nodes against the baseline: nothing flagged (%d)", st);
    cp_screen_free(&t);
    c.node_f[2] = 0.2;
    want[2] = 1;
    st = sweep(&c, &base, &t);
    ok(st == 1 && flagged_exactly(&t, want, CP_SCREEN_SLOW) && t.nlinks == 0,
       "sweep: node 2 at 0.2x: slow alone, no link (%d)", st);
    cp_screen_free(&t);
    c.node_f[2] = 1;
    want[2] = 0;
    cp_sim_link(&c, 1, 4, 0.2);
    st = sweep(&c, &base, &t);
    int healthy = 0;
    for (int i = 0; i < 7; i++) {
        healthy += t.verdict[i] == CP_SCREEN_HEALTHY;
    }
    ok(st == 1 && healthy == 7 && t.nlinks == 1 && t.link_a[0] == 1 && t.link_b[0] == 4 &&
           t.link_verdict[0] == CP_SCREEN_SLOW,
       "sweep: the 1-4 link at 0.2x: a slow link, no node (%d, %d links)", st, t.nlinks);
    cp_screen_free(&t);
    c.nlinks = 0;
    for (int i = 0; i < 7; i++) {
        c.node_f[i] = 0.5;
        want[i] = 1;
    }
    st = sweep(&c, &base, &t);
    ok(st == 1 && flagged_exactly(&t, want, CP_SCREEN_SLOW),
       "sweep: every node at 0.5x: all 7 slow against the baseline (%d)", st);
    cp_screen_free(&t);
    cp_sim_free(&c);
    cp_sim_init(&c, 2, 0.10, 9);
    c.node_f[1] = 0.2;
    st = sweep(&c, &base, &t);
    ok(st == 1 && t.verdict[0] == CP_SCREEN_HEALTHY && t.verdict[1] == CP_SCREEN_HEALTHY &&
           t.nlinks == 1,
       "sweep: 2 nodes, their pair slow: a slow link, neither node blamed (%d)", st);
    cp_screen_free(&t);
    cp_sim_free(&c);
}

/* A cross-switch pair's latency probe behind other cross-switch pairs' bulk on a spine
 * slower than the leaves (sim.h lat_with_bulk), against a baseline by class: the screen_paths.sh
 * miss of a clean-clone run (a link "confirmed slow" at 0.01x, the nodes all healthy).  With
 * each pair's bandwidth test right after its own latency test (before 2026-12-06) the model
 * names healthy links; with every latency probe of a round before any bandwidth test (the
 * runtime's lat_then_bulk, the simulator's default) nothing, and a slow node still alone. */
static void check_lat_behind_bulk(void)
{
    cp_sim_case_t k = {.n = 8,
                       .noise = 0.10,
                       .baseline = 1,
                       .spine = 0.5,
                       .validate = 1,
                       .seed_lo = 1,
                       .seed_hi = 50};
    cp_sim_counts_t now, before, node;
    int rc = cp_sim_case_run(&k, &now);
    k.lat_with_bulk = 1;
    rc |= cp_sim_case_run(&k, &before);
    k.lat_with_bulk = 0;
    k.slow_count = 1;
    k.factor = 0.5;
    rc |= cp_sim_case_run(&k, &node);
    ok(rc == 0 && before.false_positive >= 25 && now.false_positive == 0 && now.exact == now.runs &&
           node.exact == node.runs,
       "8 nodes on 2 switches, spine 0.5x, against a baseline by class: latency probes beside "
       "the round's bulk: healthy links named in %d of 50; every latency probe before any bulk "
       "(the runtime): nothing named in %d of 50, a node at 0.5x alone in %d of 50",
       before.false_positive, now.exact, node.exact);
}

/* ---- path classes ------------------------------------------------------------------------ */

/* The runs of scenario() with nothing flagged but what was injected, on two switches with a
 * spine of factor spine, classes known or not. */
static int spine_runs(int n, int nbad, double f, double spine, int classes, int runs)
{
    int rmax;
    sim_spine = spine;
    sim_classes = classes;
    int hits = scenario(n, nbad, f, 0, 0.10, runs, &rmax);
    sim_spine = 0;
    sim_classes = 0;
    return hits;
}

/* The cross-switch pairs of s. */
static int cross_pairs(const cp_screen_t *s)
{
    int m = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        m += s->pairs[i].path == CP_PATH_CROSS_SWITCH;
    }
    return m;
}

static void check_paths(void)
{
    int sw[4] = {0, 0, 1, -1};
    ok(cp_path_of(sw, 0, 1) == CP_PATH_SAME_SWITCH &&
           cp_path_of(sw, 1, 2) == CP_PATH_CROSS_SWITCH && cp_path_of(sw, 0, 3) == CP_PATH_ANY &&
           cp_path_of(NULL, 0, 1) == CP_PATH_ANY && cp_path_of(sw, 2, 2) == CP_PATH_SAME_NODE,
       "path classes: same-switch, cross-switch, any (a node outside the topology, or none), "
       "same-node");
    ok(cp_path_parse("") == CP_PATH_ANY && cp_path_parse("cross-switch") == CP_PATH_CROSS_SWITCH &&
           cp_path_parse("same-switch") == CP_PATH_SAME_SWITCH && cp_path_parse("spine") == -1 &&
           !strcmp(cp_path_name(CP_PATH_SAME_NODE), "same-node") && !strcmp(cp_path_name(9), "any"),
       "path class names: parsed back, \"\" (before 1.10) is any, unknown -1");

    /* 16 and 8 nodes on two switches whose cross-switch pairs are 2x slower (0.5x) */
    int hits = spine_runs(16, 0, 1.0, 0.5, 1, 20);
    ok(hits == 20,
       "16 nodes on 2 switches, cross-switch 0.5x, by class: nothing flagged in %d of 20", hits);
    hits = spine_runs(16, 1, 0.5, 0.5, 1, 20);
    ok(hits >= 19,
       "16 nodes on 2 switches, cross 0.5x, one node at 0.5x, by class: found alone in "
       "%d of 20",
       hits);
    hits = spine_runs(8, 0, 1.0, 0.5, 1, 20);
    ok(hits >= 19, "8 nodes on 2 switches, cross 0.5x, by class: nothing flagged in %d of 20",
       hits);
    hits = spine_runs(8, 1, 0.1, 0.5, 1, 20);
    ok(hits >= 19,
       "8 nodes on 2 switches, cross 0.5x, one node at 0.1x, by class: found alone in "
       "%d of 20",
       hits);
    /* the same clusters with no topology known: every pair judged against the median of all */
    int plain_h = spine_runs(16, 0, 1.0, 0.5, 0, 20);
    int plain_b = spine_runs(16, 1, 0.5, 0.5, 0, 20);
    int plain_h4 = spine_runs(16, 0, 1.0, 0.25, 0, 20);
    int class_h4 = spine_runs(16, 0, 1.0, 0.25, 1, 20);
    ok(plain_h <= 15 && plain_b <= 5 && plain_h4 <= 15 && class_h4 == 20,
       "no topology known, cross 0.5x: false positives (healthy right in %d of 20), a 0.5x node "
       "hidden (found alone in %d of 20); cross 0.25x: right in %d of 20 (by class: %d)",
       plain_h, plain_b, plain_h4, class_h4);

    /* against a baseline with rows per class (same-switch 12 GB/s 20 us, cross-switch half
     * that), and against one with the "any" row alone (the same-switch figures) */
    cp_screen_ref_t base = {
        .bw_gbs = 12.0, .bw_mad = 0.05, .lat_us = 20.0, .lat_mad = 0.05, .source = 1};
    cp_screen_ref_t plain = base;
    base.cls[CP_PATH_SAME_SWITCH] = (cp_screen_cref_t){
        .bw_gbs = 12.0, .bw_mad = 0.05, .lat_us = 20.0, .lat_mad = 0.05, .own = 1};
    base.cls[CP_PATH_CROSS_SWITCH] = (cp_screen_cref_t){
        .bw_gbs = 6.0, .bw_mad = 0.05, .lat_us = 40.0, .lat_mad = 0.05, .own = 1};
    sim_baseline = &base;
    int bh = spine_runs(16, 0, 1.0, 0.5, 1, 10);
    int ball = spine_runs(16, 16, 0.5, 0.5, 1, 10);
    int bone = spine_runs(16, 1, 0.5, 0.5, 1, 10);
    sim_baseline = &plain;
    int ph = spine_runs(16, 0, 1.0, 0.5, 1, 10);
    sim_baseline = NULL;
    ok(bh == 10 && ball == 10 && bone >= 9 && ph == 0,
       "16 nodes on 2 switches, cross 0.5x, against a baseline by class: nothing flagged in %d of "
       "10, all 16 at 0.5x slow in %d of 10, one at 0.5x alone in %d of 10; against its \"any\" "
       "row alone: healthy right in %d of 10",
       bh, ball, bone, ph);

    /* a run by class without a baseline, its /links rows judged again against the baseline by
     * class: the path column carries the classes (node 5 at 0.3x) */
    cp_sim_t c;
    cp_screen_t s, t;
    int status, sched, same = 0;
    for (int r = 0; r < 5; r++) {
        cp_sim_init(&c, 16, 0.10, (uint64_t)r + 60);
        cp_sim_switches(&c, 0.5, 1);
        c.node_f[5] = 0.3;
        sim_screen(&c, &s, (uint64_t)r + 3, &status);
        int st = rejudge(&s, &base, &t, &sched);
        unsigned char want[16] = {0};
        want[5] = 1;
        same += status == 1 && st == 1 && flagged_exactly(&s, want, CP_SCREEN_SLOW) &&
                flagged_exactly(&t, want, CP_SCREEN_SLOW) && cp_screen_by_class(&s.ref) &&
                cross_pairs(&t) == cross_pairs(&s) && cross_pairs(&s) > 0;
        cp_screen_free(&t);
        cp_screen_free(&s);
        cp_sim_free(&c);
    }
    ok(same == 5,
       "by class, node 5 at 0.3x, judged again from its /links rows against the baseline by "
       "class: node 5 alone both times in %d of 5",
       same);

    /* 4 nodes on 2 switches: 2 same-switch and 4 cross-switch pairs, too few for references of
     * their own (one bad node is in half of them): judged as without a topology */
    cp_sim_init(&c, 4, 0.10, 9);
    cp_sim_switches(&c, 0.5, 1);
    sim_screen(&c, &s, 7, &status);
    ok(!cp_screen_by_class(&s.ref) && s.ref.cls[CP_PATH_CROSS_SWITCH].pairs == 4 &&
           s.ref.cls[CP_PATH_SAME_SWITCH].pairs == 2,
       "4 nodes on 2 switches: classes of %d and %d pairs, fewer than %d: every pair against all",
       s.ref.cls[CP_PATH_SAME_SWITCH].pairs, s.ref.cls[CP_PATH_CROSS_SWITCH].pairs,
       CP_SCREEN_CLASS_MIN_PAIRS);
    cp_screen_free(&s);
    cp_sim_free(&c);

    /* the evidence names the classes where the pairs were judged by them */
    cp_sim_init(&c, 8, 0.10, 9);
    cp_sim_switches(&c, 0.5, 1);
    c.node_f[2] = 0.1;
    sim_screen(&c, &s, 4, &status);
    char ev[512], words[256];
    cp_screen_evidence(&s, 2, NULL, ev, sizeof(ev));
    cp_screen_class_words(&s.ref, words, sizeof(words));
    ok(strstr(ev, "(random, cross-switch)") != NULL || strstr(ev, "(random, same-switch)") != NULL,
       "evidence by class: %s", ev);
    ok(strstr(words, "same-switch ") == words && strstr(words, ", cross-switch ") != NULL,
       "class references: %s", words);
    cp_screen_free(&s);
    cp_sim_free(&c);
}

/* ---- outcomes: infrastructure is not slowness ---------------------------------------------- */

/* Pairs of s in phase ph. */
static int in_phase(const cp_screen_t *s, int ph)
{
    int m = 0;
    for (size_t i = 0; i < s->npairs; i++) {
        m += s->pairs[i].phase == ph;
    }
    return m;
}

/* The outcome of a pair of two rows of status x (latency) and y (bandwidth). */
static int merged(const char *x, const char *y)
{
    cp_screen_pair_t p = {.a = 0, .b = 1};
    collprof_link_row_t r = {.kind = "latency", .bytes = 8, .time_p50_us = 20};
    snprintf(r.status, sizeof(r.status), "%s", x);
    cp_screen_pair_merge(&p, &r);
    snprintf(r.kind, sizeof(r.kind), "bandwidth");
    snprintf(r.status, sizeof(r.status), "%s", y);
    cp_screen_pair_merge(&p, &r);
    return p.outcome;
}

static void check_outcomes(void)
{
    int round = 1;
    for (int o = 0; o <= CP_SCREEN_PARTNER_GONE; o++) {
        round &= cp_screen_outcome_of(cp_screen_outcome_status(o)) == o;
    }
    ok(round && cp_screen_outcome_of("ok") == CP_SCREEN_MEASURED &&
           cp_screen_outcome_of("wrong") == CP_SCREEN_WRONG &&
           cp_screen_outcome_of("timeout") == CP_SCREEN_TIMEOUT &&
           cp_screen_outcome_of("unreachable") == CP_SCREEN_PARTNER_GONE &&
           cp_screen_outcome_of("nosetup") == CP_SCREEN_NOSETUP &&
           cp_screen_outcome_of("error") == CP_SCREEN_NOSETUP &&
           cp_screen_outcome_of("skipped") == CP_SCREEN_NOSETUP,
       "outcome: every row status maps to its outcome and back (an old file's error: not set up)");
    ok(cp_screen_outcome_judged(CP_SCREEN_MEASURED) && cp_screen_outcome_judged(CP_SCREEN_WRONG) &&
           !cp_screen_outcome_judged(CP_SCREEN_NOSETUP) &&
           !cp_screen_outcome_judged(CP_SCREEN_TIMEOUT) &&
           !cp_screen_outcome_judged(CP_SCREEN_PARTNER_GONE),
       "outcome: only measured and wrong-data pairs are judged");
    ok(merged("ok", "ok") == CP_SCREEN_MEASURED && merged("ok", "nosetup") == CP_SCREEN_NOSETUP &&
           merged("wrong", "timeout") == CP_SCREEN_WRONG &&
           merged("nosetup", "unreachable") == CP_SCREEN_PARTNER_GONE &&
           merged("timeout", "error") == CP_SCREEN_TIMEOUT,
       "outcome: a pair's two rows merge to the one that says most against it");

    /* 8 nodes, node 2's pairs cannot be set up: re-paired, untested, never slow */
    cp_sim_t c;
    cp_sim_init(&c, 8, 0.10, 3);
    c.nosetup[2] = 1;
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = 9;
    cp_screen_t s;
    cp_screen_init(&s, 8, &o);
    int partner[8], nr = cp_screen_random_rounds(&s);
    for (int k = 0; k < nr; k++) {
        cp_screen_matching(&s, k, partner);
        cp_sim_round(&c, &s, partner, CP_SCREEN_RANDOM);
    }
    int planned = cp_screen_plan_repair(&s, partner), fresh = 1, lost = 0;
    for (size_t i = 0; i < s.npairs; i++) {
        const cp_screen_pair_t *p = &s.pairs[i];
        int other = p->a == 2 ? p->b : p->b == 2 ? p->a : -1;
        lost += other >= 0 && partner[other] >= 0; /* each of its partners meets another */
        fresh &= partner[p->a] != p->b;            /* nobody meets one it met */
    }
    ok(planned >= 3 && partner[2] >= 0 && lost == nr && fresh,
       "repair: node 2 and its %d partners re-paired (%d pairs planned), none with a node it met",
       lost, planned);
    cp_screen_free(&s);

    cp_sim_run_t r;
    cp_sim_screen(&c, &o, 1, &r);
    int healthy = 0;
    for (int i = 0; i < 8; i++) {
        healthy += i != 2 && r.verdict[i] == CP_SCREEN_HEALTHY;
    }
    char ev[512];
    cp_screen_evidence(&r.s, 2, NULL, ev, sizeof(ev));
    ok(r.verdict[2] == CP_SCREEN_UNTESTED && healthy == 7 && r.status == 2 &&
           r.screen_status == 2 && in_phase(&r.s, CP_SCREEN_REPAIR) > 0,
       "repair: node 2 untested (%s), the 7 others healthy (%d), exit 2 (%d), %d re-paired pairs",
       cp_screen_verdict_name(r.verdict[2]), healthy, r.status, in_phase(&r.s, CP_SCREEN_REPAIR));
    ok(strncmp(ev, "not tested: ", 12) == 0 && strstr(ev, "could not be set up") != NULL,
       "repair: node 2's evidence says why: %.60s", ev);

    /* read back from its rows: the re-pairing rounds found, the same verdict */
    cp_screen_ref_t base;
    cp_sim_baseline(&c, &base);
    cp_screen_t t;
    int sched, st = rejudge(&r.s, &base, &t, &sched);
    ok(st == 2 && t.verdict[2] == CP_SCREEN_UNTESTED &&
           in_phase(&t, CP_SCREEN_REPAIR) == in_phase(&r.s, CP_SCREEN_REPAIR),
       "repair: read back from its rows, %d re-paired pairs found (of %d), node 2 %s, status %d",
       in_phase(&t, CP_SCREEN_REPAIR), in_phase(&r.s, CP_SCREEN_REPAIR),
       cp_screen_verdict_name(t.verdict[2]), st);
    cp_screen_free(&t);
    cp_sim_run_free(&r);

    /* and a slow node beside it: slow alone, exit 1 */
    c.node_f[5] = 0.3;
    cp_sim_screen(&c, &o, 1, &r);
    int others = 0;
    for (int i = 0; i < 8; i++) {
        others += i != 2 && i != 5 && r.verdict[i] != CP_SCREEN_HEALTHY;
    }
    ok(r.verdict[2] == CP_SCREEN_UNTESTED && r.verdict[5] == CP_SCREEN_SLOW && others == 0 &&
           r.status == 1,
       "repair: node 5 at 0.3x beside node 2: node 5 slow, node 2 %s, status %d",
       cp_screen_verdict_name(r.verdict[2]), r.status);
    cp_sim_run_free(&r);
    cp_sim_free(&c);

    /* every pair of node 3 timed out or lost its partner: untested, not healthy */
    cp_screen_init(&s, 6, &o);
    for (int k = 0; k < cp_screen_random_rounds(&s); k++) {
        cp_screen_matching(&s, k, partner);
        for (int a = 0; a < 6; a++) {
            if (partner[a] > a) {
                cp_screen_pair_t p = {
                    .a = a, .b = partner[a], .round = k, .bw_gbs = 12, .lat_us = 20};
                p.outcome = a == 3 || partner[a] == 3 ? CP_SCREEN_TIMEOUT : CP_SCREEN_MEASURED;
                cp_screen_add(&s, &p);
            }
        }
    }
    cp_screen_judge_opt(&s);
    cp_screen_plan_confirm(&s, partner);
    st = cp_screen_decide(&s);
    ok(s.verdict[3] == CP_SCREEN_UNTESTED && s.verdict[0] == CP_SCREEN_HEALTHY && st == 2 &&
           cp_screen_plan_repair(&s, partner) == 0,
       "timeouts: node 3 untested (%s), not re-paired, status %d",
       cp_screen_verdict_name(s.verdict[3]), st);
    cp_screen_free(&s);
}

int main(void)
{
    check_schedule(16, 1);
    check_schedule(17, 5);
    check_schedule(3, 2);
    check_twice(3);
    check_schedule(1024, 9);
    check_hostlist();
    check_rejudge();
    check_sweep();
    check_paths();
    check_lat_behind_bulk();
    check_outcomes();

    int rmax, hits;
    hits = scenario(16, 1, 0.5, 0, 0.10, 20, &rmax);
    ok(hits == 20, "16 nodes, one at 0.5x, jitter 10%%: found alone in %d of 20 (%d rounds)", hits,
       rmax);
    hits = scenario(16, 1, 0.7, 0, 0.10, 20, &rmax);
    ok(hits >= 19, "16 nodes, one at 0.7x, jitter 10%%: found alone in %d of 20", hits);
    hits = scenario(16, 2, 0.5, 0, 0.10, 20, &rmax);
    ok(hits >= 19, "16 nodes, two at 0.5x: both found alone in %d of 20", hits);
    hits = link_scenario(16, 0.5, 0.10, 20, 0);
    ok(hits >= 19, "16 nodes, one link at 0.5x (in a random round): a link in %d of 20", hits);
    hits = link_scenario(16, 0.1, 0.10, 20, 1);
    ok(hits >= 19,
       "16 nodes, one link at 0.1x whose end is slow in the random rounds only: the link "
       "(rechecked), no node, in %d of 20",
       hits);
    hits = healthy_scenario(16, 0.20, 20);
    ok(hits >= 19, "16 healthy nodes, jitter 20%%: nothing flagged in %d of 20", hits);
    hits = scenario(16, 1, 0, 1, 0.10, 20, &rmax);
    ok(hits == 20, "16 nodes, one hung: unreachable, nothing else flagged, in %d of 20", hits);
    hits = scenario(8, 1, 0.5, 0, 0.10, 20, &rmax);
    ok(hits >= 19, "8 nodes, one at 0.5x: found alone in %d of 20", hits);
    hits = scenario(4, 1, 0.7, 0, 0.10, 20, &rmax);
    ok(hits >= 19, "4 nodes, one at 0.7x, jitter 10%%: found alone in %d of 20 (%d rounds)", hits,
       rmax);
    hits = scenario(4, 1, 0.1, 0, 0.30, 20, &rmax);
    ok(hits >= 19, "4 nodes, one at 0.1x, jitter 30%%: found alone in %d of 20 (%d rounds)", hits,
       rmax);

    /* against a baseline of the healthy figures (12 GB/s, 20 us, spread 0.05): a cluster
     * slow as a whole (every node at 0.5x) is all slow; a healthy one is still healthy */
    cp_screen_ref_t base = {
        .bw_gbs = 12.0, .bw_mad = 0.05, .lat_us = 20.0, .lat_mad = 0.05, .source = 1};
    sim_baseline = &base;
    hits = scenario(16, 16, 0.5, 0, 0.10, 10, &rmax);
    ok(hits == 10, "16 nodes all at 0.5x, against a baseline: all 16 slow in %d of 10", hits);
    hits = healthy_scenario(16, 0.10, 10);
    ok(hits >= 9, "16 healthy nodes against the baseline, jitter 10%%: nothing flagged in %d of 10",
       hits);
    hits = scenario(16, 1, 0.5, 0, 0.10, 10, &rmax);
    ok(hits >= 9, "16 nodes, one at 0.5x, against the baseline: found alone in %d of 10", hits);
    /* 4 nodes: the slow node's confirmation partner met it twice (a random round and the
     * confirmation), half of its pairs: its median is not what blames it */
    hits = scenario(4, 1, 0.05, 0, 0.10, 10, &rmax);
    ok(hits == 10, "4 nodes, one at 0.05x, against the baseline: found alone in %d of 10", hits);
    sim_baseline = NULL;
    hits = scenario(16, 16, 0.5, 0, 0.10, 10, &rmax);
    ok(hits == 0, "16 nodes all at 0.5x, no baseline: a screen cannot tell (%d of 10 flagged)",
       hits);

    hits = scenario(1024, 3, 0.5, 0, 0.10, 5, &rmax);
    ok(hits == 5 && rmax <= 6, "1,024 nodes, 3 at 0.5x: found in %d of 5, %d rounds (goal 6)", hits,
       rmax);
    hits = scenario(1024, 3, 0.7, 0, 0.10, 5, &rmax);
    ok(hits >= 4, "1,024 nodes, 3 at 0.7x: found in %d of 5", hits);
    hits = healthy_scenario(1024, 0.20, 5);
    ok(hits >= 4, "1,024 healthy nodes, jitter 20%%: nothing flagged in %d of 5", hits);
    hits = scenario(4096, 3, 0.5, 0, 0.10, 3, &rmax);
    ok(hits == 3 && rmax <= 7, "4,096 nodes, 3 at 0.5x: found in %d of 3, %d rounds (goal 7)", hits,
       rmax);
    hits = scenario(4096, 3, 0, 1, 0.10, 2, &rmax);
    ok(hits == 2, "4,096 nodes, 3 hung: unreachable in %d of 2, %d rounds", hits, rmax);
    return tap_done();
}
