#include "config.h"

/*
 * A case of the screen's simulator (sim.h) over a range of seeds: each seed's model cluster
 * (its faults, the random slow nodes it draws, its noise), the screen run on it, and what the
 * verdict got right: every bad node and link named as it should be (slow, unreachable, a slow
 * link; a node whose pairs cannot be set up "untested", never slow), nothing else, and the
 * exit status that follows (1 when something is bad, 2 when a node can only be untested, else
 * 0).
 */

#include "screen/sim.h"

#include <stdlib.h>
#include <string.h>

/* The verdict each node should get (cp_screen_verdict_t), and the links that should be named,
 * for one seed. */
typedef struct want {
    int *v;     /* [n] */
    int nlinks; /* links to name */
    int la[CP_SIM_MAX_LINKS], lb[CP_SIM_MAX_LINKS];
    int status; /* the exit status it should have */
    int large;  /* more than CP_SCREEN_LARGE_SLOW of the judged nodes slow, no baseline: the
                   verdict "judge against a baseline", exit status 2, its slow nodes not named */
} want_t;

/* The partner of node a in random round k of a screen of seed over n nodes (-1: none). */
static int partner_in(int n, uint64_t seed, int a, int k, int *partner)
{
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = seed;
    cp_screen_t s;
    if (cp_screen_init(&s, n, &o) != 0) {
        cp_screen_free(&s);
        return -1;
    }
    k %= cp_screen_random_rounds(&s);
    cp_screen_matching(&s, k, partner);
    int b = partner[a];
    cp_screen_free(&s);
    return b;
}

/* Draw k distinct nodes of n from *x into pick[] (a partial shuffle of idx[n]). */
static void draw(uint64_t *x, int n, int k, int *idx, unsigned char *pick)
{
    for (int i = 0; i < n; i++) {
        idx[i] = i;
    }
    for (int i = 0; i < k && i < n; i++) {
        int j = i + (int)(cp_sim_uniform(x) * (double)(n - i));
        j = j < n ? j : n - 1;
        int t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
        pick[idx[i]] = 1;
    }
}

/* The link fault f of case k on c for seed; -1 when it cannot be placed. */
static int place_link(const cp_sim_case_t *k, const cp_sim_fault_t *f, cp_sim_t *c, uint64_t seed,
                      int *scratch, want_t *w)
{
    int a = f->a, b = f->b;
    if (f->kind == CP_SIM_LINK_PAIRED) {
        b = partner_in(k->n, seed, a, (int)(seed % 3), scratch);
        if (b < 0) {
            return 0; /* a sits that round out: no link this time */
        }
    }
    if (cp_sim_link(c, a, b, f->f) != 0 || w->nlinks == CP_SIM_MAX_LINKS) {
        return -1;
    }
    if (f->f < 1) {
        w->la[w->nlinks] = a;
        w->lb[w->nlinks++] = b;
    }
    return 0;
}

/* The cluster of case k for seed into c, and what its verdict should be into w. */
static int build(const cp_sim_case_t *k, uint64_t seed, cp_sim_t *c, want_t *w, int *scratch)
{
    if (cp_sim_init(c, k->n, k->noise, seed) != 0) {
        return -1;
    }
    if (k->spine > 0 && cp_sim_switches(c, k->spine, 1) != 0) {
        return -1;
    }
    c->lat_with_bulk = k->lat_with_bulk;
    unsigned char *pick = calloc((size_t)k->n, 1);
    uint64_t x = seed * 104729 + 17; /* the random slow nodes' draw: not the noise's */
    if (pick == NULL) {
        return -1;
    }
    draw(&x, k->n, k->slow_count, scratch, pick);
    for (int i = 0; i < k->n; i++) {
        c->node_f[i] = pick[i] ? k->factor : 1.0;
    }
    free(pick);
    for (int j = 0; j < k->nfaults; j++) {
        const cp_sim_fault_t *f = &k->faults[j];
        if (f->a < 0 || f->a >= k->n || f->b >= k->n) {
            return -1;
        }
        if (f->kind == CP_SIM_SLOW && f->f < c->node_f[f->a]) {
            c->node_f[f->a] = f->f;
        } else if (f->kind == CP_SIM_HUNG) {
            c->hung[f->a] = 1;
        } else if (f->kind == CP_SIM_NOSETUP) {
            c->nosetup[f->a] = 1;
        } else if ((f->kind == CP_SIM_LINK || f->kind == CP_SIM_LINK_PAIRED) &&
                   place_link(k, f, c, seed, scratch, w) != 0) {
            return -1;
        }
    }
    int bad = w->nlinks > 0, unsure = 0, slow = 0, judged = 0;
    for (int i = 0; i < k->n; i++) {
        w->v[i] = c->hung[i]           ? CP_SCREEN_UNREACHABLE
                  : c->nosetup[i]      ? CP_SCREEN_UNTESTED
                  : c->node_f[i] < 1.0 ? CP_SCREEN_SLOW
                                       : CP_SCREEN_HEALTHY;
        bad |= w->v[i] == CP_SCREEN_UNREACHABLE || w->v[i] == CP_SCREEN_SLOW;
        unsure |= w->v[i] == CP_SCREEN_UNTESTED;
        slow += w->v[i] == CP_SCREEN_SLOW;
        judged += w->v[i] == CP_SCREEN_SLOW || w->v[i] == CP_SCREEN_HEALTHY;
    }
    w->large = !k->baseline && slow > CP_SCREEN_LARGE_SLOW * judged;
    w->status = w->large ? 2 : bad ? 1 : unsure ? 2 : 0;
    return 0;
}

/* 1 when link a-b is one w wants named. */
static int wanted_link(const want_t *w, int a, int b)
{
    for (int l = 0; l < w->nlinks; l++) {
        if ((w->la[l] == a && w->lb[l] == b) || (w->la[l] == b && w->lb[l] == a)) {
            return 1;
        }
    }
    return 0;
}

/* 1 when r names a slow link that w does not want. */
static int other_link(const cp_sim_run_t *r, const want_t *w)
{
    for (int l = 0; l < r->s.nlinks; l++) {
        if (r->s.link_verdict[l] == CP_SCREEN_SLOW &&
            !wanted_link(w, r->s.link_a[l], r->s.link_b[l])) {
            return 1;
        }
    }
    for (int l = 0; r->valid && l < r->h.nlinks; l++) {
        if (!wanted_link(w, r->h.link_a[l], r->h.link_b[l])) {
            return 1;
        }
    }
    return 0;
}

/* r against w, counted into out. */
static void count(const cp_sim_run_t *r, const want_t *w, int n, cp_sim_counts_t *out)
{
    int missed = 0, fp = other_link(r, w), odd = 0, setup_slow = 0;
    for (int i = 0; i < n; i++) {
        int v = r->verdict[i], named = v == CP_SCREEN_SLOW || v == CP_SCREEN_UNREACHABLE;
        if (w->v[i] == CP_SCREEN_SLOW && w->large) {
            continue; /* "judge against a baseline": the exit status tells */
        }
        if (w->v[i] == CP_SCREEN_SLOW || w->v[i] == CP_SCREEN_UNREACHABLE) {
            missed |= v != w->v[i];
        } else {
            fp |= named;
            setup_slow |= w->v[i] == CP_SCREEN_UNTESTED && v == CP_SCREEN_SLOW;
            odd |= w->v[i] == CP_SCREEN_UNTESTED && v != CP_SCREEN_UNTESTED;
        }
        out->untested += v == CP_SCREEN_UNTESTED;
    }
    for (int l = 0; l < w->nlinks; l++) {
        missed |= !cp_sim_link_named(r, w->la[l], w->lb[l]);
    }
    int st = r->status >= 0 && r->status <= 2 ? r->status : 2;
    out->runs++;
    out->missed += missed;
    out->false_positive += fp;
    out->setup_slow += setup_slow;
    out->exact += !missed && !fp && !odd && st == w->status;
    out->inconclusive += st == 2;
    out->status[st]++;
    out->rounds_sum += r->rounds;
    out->rounds_max = r->rounds > out->rounds_max ? r->rounds : out->rounds_max;
}

/* One seed of case k, counted into out. */
static int one_seed(const cp_sim_case_t *k, uint64_t seed, int *scratch, int *wv,
                    cp_sim_counts_t *out)
{
    cp_sim_t c;
    want_t w = {.v = wv};
    cp_sim_run_t r;
    int ret = build(k, seed, &c, &w, scratch);
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.seed = seed;
    if (ret == 0 && k->baseline) {
        o.has_baseline = 1;
        cp_sim_baseline(&c, &o.baseline);
    }
    if (ret == 0) {
        ret = cp_sim_screen(&c, &o, k->validate, &r);
        if (ret == 0) {
            count(&r, &w, k->n, out);
        }
        cp_sim_run_free(&r);
    }
    cp_sim_free(&c);
    return ret;
}

int cp_sim_case_run(const cp_sim_case_t *k, cp_sim_counts_t *out)
{
    memset(out, 0, sizeof(*out));
    if (k->n < 2) {
        return -1;
    }
    int *scratch = malloc(sizeof(int) * (size_t)k->n), *wv = malloc(sizeof(int) * (size_t)k->n);
    int ret = scratch == NULL || wv == NULL ? -1 : 0;
    for (uint64_t seed = k->seed_lo; ret == 0 && seed <= k->seed_hi; seed++) {
        ret = one_seed(k, seed, scratch, wv, out);
        if (seed == UINT64_MAX) {
            break;
        }
    }
    free(scratch);
    free(wv);
    return ret;
}
