/*
 * The screen's validation halving (src/screen/halve.c) against a simulator, no processes: a
 * cluster of n nodes whose allreduce over a group runs at the healthy bus bandwidth times
 * the slowest member's factor, times a link's factor when both its ends are in the group,
 * times uniform noise; a node may return wrong data, and a "scale" fault slows any group
 * of more than a given size.  The halving runs level by level as the runner would, and its
 * culprits, links, outcome and levels are compared with what was injected: one culprit
 * among 16, 64 and 1,024 nodes in log2(n) + 1 levels, two culprits, none, a wrong-data
 * node, a link, a fault of the whole set only, too many culprits (bounded), too few nodes.
 */
#include "config.h"

#include "screen/halve.h"

#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sim {
    int n;
    double *f;          /* [n] bandwidth factor (1: healthy) */
    unsigned char *bad; /* [n] returns wrong data */
    int la, lb;         /* a slow link (-1: none) */
    int scale;          /* groups of more nodes than this run at 0.1x (0: none) */
    int once;           /* the first allreduce runs at 0.1x (a passing disturbance) */
    double jitter;      /* uniform noise in [1 - jitter, 1 + jitter] */
    uint64_t x;
} sim_t;

static double uniform(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return (double)((z ^ (z >> 31)) >> 11) / 9007199254740992.0;
}

static void sim_init(sim_t *c, int n, double jitter, uint64_t seed)
{
    memset(c, 0, sizeof(*c));
    c->n = n;
    c->f = malloc(sizeof(double) * (size_t)n);
    c->bad = calloc((size_t)n, 1);
    for (int i = 0; i < n; i++) {
        c->f[i] = 1.0;
    }
    c->la = c->lb = -1;
    c->jitter = jitter;
    c->x = seed * 104729 + 7;
}

static void sim_free(sim_t *c)
{
    free(c->f);
    free(c->bad);
}

#define HEALTHY_GBS 10.0

/* Run the halving over the nodes with in[i] (NULL: all) to the end; the levels run. */
static int run(sim_t *c, cp_halve_t *h, const unsigned char *in, double abs_thr, double rel_thr)
{
    cp_halve_opts_t o;
    cp_halve_opts_default(&o);
    o.ref_bw_gbs = HEALTHY_GBS;
    o.abs_thr = abs_thr;
    o.rel_thr = rel_thr;
    unsigned char *all = malloc((size_t)c->n);
    memset(all, 1, (size_t)c->n);
    int *group_of = malloc(sizeof(int) * (size_t)c->n);
    cp_halve_init(h, c->n, in != NULL ? in : all, &o);
    for (int planned = cp_halve_level(h, group_of); planned > 0;) {
        for (int k = 0; k < planned; k++) {
            double f = 1.0;
            int members = 0, wrong = 0, a = 0, b = 0;
            for (int i = 0; i < c->n; i++) {
                if (group_of[i] != k) {
                    continue;
                }
                members++;
                f = c->f[i] < f ? c->f[i] : f;
                wrong |= c->bad[i];
                a |= i == c->la;
                b |= i == c->lb;
            }
            if (a && b) {
                f *= 0.1;
            }
            if (c->scale > 0 && members > c->scale) {
                f *= 0.1;
            }
            if (c->once) {
                f *= 0.1;
                c->once = 0;
            }
            double bw = HEALTHY_GBS * f * (1 + c->jitter * (2 * uniform(&c->x) - 1));
            cp_halve_set(h, k, 0, wrong ? 3 : 0, bw);
        }
        if (cp_halve_next(h, 0) < 0) {
            break;
        }
        planned = cp_halve_level(h, group_of);
    }
    free(all);
    free(group_of);
    return h->levels;
}

/* 1 when the culprits are exactly the nodes with want[i]. */
static int same_culprits(const cp_halve_t *h, const unsigned char *want)
{
    for (int i = 0; i < h->n; i++) {
        if (!!h->culprit[i] != !!want[i]) {
            return 0;
        }
    }
    return 1;
}

static int log2i(int n)
{
    int l = 0;
    while ((1 << l) < n) {
        l++;
    }
    return l;
}

/* One slow (factor f) node among n, over trials seeds: found alone in log2(n) + 1 levels. */
static void one_culprit(int n, double f, double jitter, int trials)
{
    int found = 0, worst = 0;
    for (int t = 0; t < trials; t++) {
        sim_t c;
        sim_init(&c, n, jitter, (uint64_t)t + 1);
        int bad = (int)((uint64_t)(t * 7919 + 3) % (uint64_t)n);
        c.f[bad] = f;
        cp_halve_t h;
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        unsigned char *want = calloc((size_t)n, 1);
        want[bad] = 1;
        found += same_culprits(&h, want) && h.outcome == CP_HALVE_FOUND && h.nlinks == 0;
        worst = levels > worst ? levels : worst;
        if (t == 0 && n == 16) {
            char ev[512];
            cp_halve_evidence(&h, bad, NULL, ev, sizeof(ev));
            ok(strstr(ev, "allreduce over 16 nodes") != NULL && strstr(ev, "witnesses") != NULL,
               "evidence of the culprit: %s", ev);
        }
        free(want);
        cp_halve_free(&h);
        sim_free(&c);
    }
    ok(found == trials, "%d nodes, one at %.2fx, noise +-%.0f%%: found alone in %d of %d", n, f,
       jitter * 100, found, trials);
    ok(worst <= log2i(n) + 2, "%d nodes: at most %d levels (log2(n) + 2 = %d)", n, worst,
       log2i(n) + 2);
}

int main(void)
{
    cp_halve_t h;
    sim_t c;

    /* ---- the expectation: a ring of m nodes at the pairs' bandwidth and latency */
    {
        cp_halve_opts_t o;
        cp_halve_opts_default(&o);
        ok(cp_halve_expect(&o, 8) == 0, "no reference: no expectation");
        o.ref_bw_gbs = 0.238;
        ok(fabs(cp_halve_expect(&o, 8) - 0.238) < 1e-9, "no latency: the pairs' bandwidth");
        o.ref_lat_us = 594;
        o.bytes = 262144;
        double e8 = cp_halve_expect(&o, 8), e4 = cp_halve_expect(&o, 4);
        ok(fabs(e8 - 0.0448) < 0.0005 && e4 > e8,
           "8 nodes, 0.238 GB/s and 594 us pairs, 256 KiB: %.4f GB/s (4 nodes: %.4f)", e8, e4);
    }

    /* ---- nothing wrong: one level, passed */
    {
        int pass = 0, levels = 0;
        for (int t = 0; t < 20; t++) {
            sim_init(&c, 64, 0.2, (uint64_t)t + 100);
            levels += run(&c, &h, NULL, 0.4, 0.8);
            pass += h.outcome == CP_HALVE_PASSED;
            cp_halve_free(&h);
            sim_free(&c);
        }
        ok(pass == 20 && levels == 20,
           "64 healthy nodes, noise +-20%%: passed at level 0 in %d "
           "of 20 (%d levels in all)",
           pass, levels);
        sim_init(&c, 8, 0.1, 1);
        run(&c, &h, NULL, 0.4, 0.8);
        char ev[512];
        cp_halve_evidence(&h, -1, NULL, ev, sizeof(ev));
        ok(strstr(ev, "allreduce over 8 nodes") && strstr(ev, "passed"), "passed: %s", ev);
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- one culprit */
    one_culprit(16, 0.2, 0.1, 20);
    one_culprit(64, 0.2, 0.1, 20);
    one_culprit(1024, 0.2, 0.1, 5);
    one_culprit(16, 0.3, 0.2, 20);
    one_culprit(5, 0.1, 0.1, 10);

    /* ---- two culprits: in different halves, and in the same quarter */
    {
        int pairs[][2] = {{3, 40}, {3, 5}, {0, 63}, {17, 18}};
        for (int t = 0; t < 4; t++) {
            sim_init(&c, 64, 0.1, (uint64_t)t + 7);
            c.f[pairs[t][0]] = 0.2;
            c.f[pairs[t][1]] = 0.2;
            int levels = run(&c, &h, NULL, 0.4, 0.8);
            unsigned char want[64] = {0};
            want[pairs[t][0]] = want[pairs[t][1]] = 1;
            ok(same_culprits(&h, want) && h.outcome == CP_HALVE_FOUND && levels <= 8,
               "64 nodes, nodes %d and %d at 0.2x: both found (%s), %d levels", pairs[t][0],
               pairs[t][1], cp_halve_outcome_name(h.outcome), levels);
            cp_halve_free(&h);
            sim_free(&c);
        }
    }

    /* ---- wrong data on one node of 1,024 */
    {
        sim_init(&c, 1024, 0.1, 3);
        c.bad[700] = 1;
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        unsigned char *want = calloc(1024, 1);
        want[700] = 1;
        ok(same_culprits(&h, want) && levels <= 11,
           "1,024 nodes, node 700 returns wrong data: found alone in %d levels", levels);
        free(want);
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- a slow link: both ends pass with witnesses, the link is named */
    {
        sim_init(&c, 16, 0.1, 5);
        c.la = 6;
        c.lb = 7; /* neighbours in node order: they stay together down to a pair */
        run(&c, &h, NULL, 0.4, 0.8);
        ok(h.nlinks == 1 && h.link_a[0] == 6 && h.link_b[0] == 7 && h.culprit[6] == 0 &&
               h.culprit[7] == 0 && h.outcome == CP_HALVE_FOUND,
           "16 nodes, link 6-7 at 0.1x: the link named, no node (%s)",
           cp_halve_outcome_name(h.outcome));
        char ev[512];
        cp_halve_link_evidence(&h, 0, NULL, ev, sizeof(ev));
        ok(strstr(ev, "together they fail") != NULL, "link evidence: %s", ev);
        cp_halve_free(&h);
        sim_free(&c);
        /* ends in different halves: each half passes, the whole fails: unexplained */
        sim_init(&c, 16, 0.1, 5);
        c.la = 2;
        c.lb = 12;
        run(&c, &h, NULL, 0.4, 0.8);
        int named = 0;
        for (int i = 0; i < 16; i++) {
            named += h.culprit[i];
        }
        ok(named == 0 && h.outcome == CP_HALVE_UNEXPLAINED,
           "16 nodes, link 2-12 at 0.1x (split at level 1): nobody named, %s",
           cp_halve_outcome_name(h.outcome));
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- a fault of the whole set only: unexplained, nobody named, 2 levels */
    {
        sim_init(&c, 64, 0.1, 9);
        c.scale = 40;
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        char ev[512];
        cp_halve_evidence(&h, -1, NULL, ev, sizeof(ev));
        ok(h.outcome == CP_HALVE_UNEXPLAINED && levels == 3 && h.unexplained == 1,
           "64 nodes slow only all together: unexplained after %d levels: %s", levels, ev);
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- a passing disturbance in level 0: its second try passes */
    {
        sim_init(&c, 64, 0.1, 19);
        c.once = 1;
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        char ev[512];
        cp_halve_evidence(&h, -1, NULL, ev, sizeof(ev));
        ok(h.outcome == CP_HALVE_PASSED && levels == 2 && strstr(ev, "again") != NULL,
           "64 nodes, level 0 slow once: passed on its second try (%d levels): %s", levels, ev);
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- too many culprits: bounded, and no healthy node named */
    {
        sim_init(&c, 64, 0.1, 11);
        for (int i = 0; i < 64; i += 3) {
            c.f[i] = 0.2;
        }
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        int wrongly = 0;
        for (int i = 0; i < 64; i++) {
            wrongly += h.culprit[i] && c.f[i] == 1.0;
        }
        ok(levels <= 9 && wrongly == 0 && h.outcome != CP_HALVE_PASSED,
           "64 nodes, 22 at 0.2x: %d levels, no healthy node named, %s", levels,
           cp_halve_outcome_name(h.outcome));
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- survivors only: a node left out is never in a group */
    {
        sim_init(&c, 16, 0.1, 13);
        unsigned char in[16];
        memset(in, 1, sizeof(in));
        in[4] = 0;
        c.f[4] = 0.01; /* flagged by the rounds: left out */
        c.f[9] = 0.2;
        run(&c, &h, in, 0.4, 0.8);
        int used4 = 0;
        for (size_t k = 0; k < h.ng; k++) {
            for (int j = 0; j < h.g[k].count; j++) {
                used4 |= cp_halve_nodes(&h, k)[j] == 4;
            }
        }
        ok(!used4 && h.culprit[9] && !h.culprit[4] && h.g[0].count == 15,
           "16 nodes, node 4 left out, node 9 at 0.2x: 15 in level 0, node 4 never in a group, "
           "node 9 found");
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- too few nodes, and no witness left */
    {
        sim_init(&c, 4, 0.1, 15);
        unsigned char in[4] = {1, 0, 0, 0};
        ok(cp_halve_init(&h, 4, in, &(cp_halve_opts_t){.abs_thr = 0.4, .rel_thr = 0.8}) == 1 &&
               h.ng == 0 && cp_halve_level(&h, (int[4]){0}) == 0,
           "one survivor: nothing planned");
        cp_halve_free(&h);
        sim_free(&c);
        sim_init(&c, 3, 0.1, 15);
        c.f[1] = 0.1;
        int levels = run(&c, &h, NULL, 0.4, 0.8);
        ok(h.outcome == CP_HALVE_UNEXPLAINED && levels == 2,
           "3 nodes, one at 0.1x: no witness to resolve them with: unexplained after 2 levels");
        cp_halve_free(&h);
        sim_free(&c);
    }

    /* ---- a time budget spent: what still fails is unexplained */
    {
        sim_init(&c, 16, 0.1, 17);
        c.f[3] = 0.2;
        cp_halve_opts_t o;
        cp_halve_opts_default(&o);
        o.ref_bw_gbs = HEALTHY_GBS;
        unsigned char in[16];
        memset(in, 1, sizeof(in));
        cp_halve_init(&h, 16, in, &o);
        cp_halve_set(&h, 0, 0, 0, 2.0);
        ok(cp_halve_next(&h, 1) == 0 && h.outcome == CP_HALVE_UNEXPLAINED && h.levels == 1,
           "stopped after level 0: unexplained");
        cp_halve_free(&h);
        sim_free(&c);
    }
    return tap_done();
}
