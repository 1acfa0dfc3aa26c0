/*
 * collprof-report simulate screen, below the command (cmd_simulate.c): the built-in grid of
 * cases (--grid), a case's label, running the cases on the screen's simulator
 * (src/screen/sim.h), and the table or JSON document of what they gave.
 */
#include "config.h"

#include "report/report.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The grid's seeds per node count: 100 up to 128 nodes, fewer at 1,024 and 4,096 (time). */
#define GRID_SEEDS       100
#define GRID_SEEDS_1024  50
#define GRID_SEEDS_4096  10
#define GRID_NOISE_KSLOW 0.10 /* the noise of the k-slow, link, hung and set-up cases */
#define GRID_SPINE       0.5  /* two leaf switches, the spine's cases: cross-switch at 0.5x */
#define GRID_SPINE_NODES 8    /* from this many nodes (a class of 6 pairs: its own reference) */

typedef struct grid {
    cp_report_sim_t *v;
    size_t n, cap;
    int nodes;
    uint64_t seeds;
    int failed;
} grid_t;

/* A case of g's node count at noise, with one fault (kind < 0: none); NULL when out of
 * memory. */
static cp_report_sim_t *add(grid_t *g, double noise, int kind, int a, double f)
{
    if (g->n == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 256;
        cp_report_sim_t *v = realloc(g->v, cap * sizeof(*v));
        if (v == NULL) {
            g->failed = 1;
            return NULL;
        }
        g->v = v;
        g->cap = cap;
    }
    cp_report_sim_t *c = &g->v[g->n];
    memset(c, 0, sizeof(*c));
    c->k.n = g->nodes;
    c->k.noise = noise;
    c->k.validate = 1;
    c->k.seed_lo = 1;
    c->k.seed_hi = g->seeds;
    if (kind >= 0) {
        cp_sim_fault_t *ft = malloc(sizeof(*ft));
        if (ft == NULL) {
            g->failed = 1;
            return NULL;
        }
        *ft = (cp_sim_fault_t){.kind = kind, .a = a, .b = -1, .f = f};
        c->k.faults = ft;
        c->k.nfaults = 1;
    }
    g->n++;
    return c;
}

/* k nodes at factor f, drawn from each seed. */
static void add_random(grid_t *g, double noise, int k, double f, int baseline)
{
    cp_report_sim_t *c = add(g, noise, -1, 0, 0);
    if (c != NULL) {
        c->k.slow_count = k;
        c->k.factor = f;
        c->k.baseline = baseline;
    }
}

/* The cases of one node count. */
static void grid_nodes(grid_t *g)
{
    static const double factors[] = {0.3, 0.5, 0.7, 0.9}, noises[] = {0.05, 0.10, 0.20, 0.30};
    int n = g->nodes;
    for (int i = 0; i < 4; i++) { /* healthy */
        add_random(g, noises[i], 0, 1.0, 0);
    }
    for (int fi = 0; fi < 4; fi++) { /* one slow node */
        for (int ni = 0; ni < 4; ni++) {
            add_random(g, noises[ni], 1, factors[fi], 0);
        }
    }
    if (n <= 64) { /* k slow nodes at 0.5x: every k (k = 1 is a row above) */
        for (int k = 2; k <= n / 2; k++) {
            add_random(g, GRID_NOISE_KSLOW, k, 0.5, 0);
        }
    } else {
        int ks[] = {2, n / 8, n / 4, n / 2};
        for (int i = 0; i < 4; i++) {
            add_random(g, GRID_NOISE_KSLOW, ks[i], 0.5, 0);
        }
    }
    add(g, GRID_NOISE_KSLOW, CP_SIM_LINK_PAIRED, 0, 0.5); /* a link a random round covers */
    add(g, GRID_NOISE_KSLOW, CP_SIM_HUNG, 0, 1.0);
    add(g, GRID_NOISE_KSLOW, CP_SIM_NOSETUP, 0, 1.0);
    for (int fi = 0; n <= 5 && fi <= 4; fi++) { /* against a baseline, on few nodes */
        add_random(g, GRID_NOISE_KSLOW, fi < 4, fi < 4 ? factors[fi] : 1.0, 1);
    }
    for (int i = 0; n >= GRID_SPINE_NODES && i < 5 && !g->failed; i++) { /* a slower spine */
        add_random(g, GRID_NOISE_KSLOW, i % 2, 0.5, i >= 2); /* by class; against a baseline */
        if (g->failed) {
            return;
        }
        g->v[g->n - 1].k.spine = GRID_SPINE;
        g->v[g->n - 1].k.lat_with_bulk = i == 4; /* the tests as before 2026-12-06 */
    }
}

int cp_report_sim_grid(cp_report_sim_t **cases, size_t *n)
{
    grid_t g = {.v = NULL};
    static const int large[] = {128, 1024, 4096};
    for (int i = 0; i < 63 + 3; i++) {
        g.nodes = i < 63 ? i + 2 : large[i - 63];
        g.seeds = g.nodes == 4096   ? GRID_SEEDS_4096
                  : g.nodes == 1024 ? GRID_SEEDS_1024
                                    : GRID_SEEDS;
        grid_nodes(&g);
    }
    if (g.failed) {
        cp_report_sim_free(g.v, g.n);
        cp_report_error("simulate: out of memory");
        return -1;
    }
    *cases = g.v;
    *n = g.n;
    return 0;
}

void cp_report_sim_free(cp_report_sim_t *cases, size_t n)
{
    for (size_t i = 0; cases != NULL && i < n; i++) {
        free((void *)cases[i].k.faults);
    }
    free(cases);
}

/* ---- labels ------------------------------------------------------------------------------ */

/* Append part to buf (at *at of len), a ", " before all but the first. */
static void put(char *buf, size_t len, size_t *at, const char *part)
{
    int w = *at < len ? snprintf(buf + *at, len - *at, "%s%s", *at ? ", " : "", part) : 0;
    *at += w > 0 ? (size_t)w : 0;
}

void cp_report_sim_label(const cp_sim_case_t *k, char *buf, size_t len)
{
    size_t at = 0;
    char part[96];
    buf[0] = '\0';
    if (k->slow_count > 0) {
        snprintf(part, sizeof(part), "%d random at %gx", k->slow_count, k->factor);
        put(buf, len, &at, part);
    }
    for (int i = 0; i < k->nfaults; i++) {
        const cp_sim_fault_t *f = &k->faults[i];
        if (f->kind == CP_SIM_SLOW) {
            snprintf(part, sizeof(part), "node %d at %gx", f->a, f->f);
        } else if (f->kind == CP_SIM_LINK) {
            snprintf(part, sizeof(part), "link %d-%d at %gx", f->a, f->b, f->f);
        } else if (f->kind == CP_SIM_LINK_PAIRED) {
            snprintf(part, sizeof(part), "link %d-partner at %gx", f->a, f->f);
        } else {
            snprintf(part, sizeof(part), "%s %d", f->kind == CP_SIM_HUNG ? "hung" : "setup-fail",
                     f->a);
        }
        put(buf, len, &at, part);
    }
    if (k->spine > 0) {
        snprintf(part, sizeof(part), "spine %gx%s", k->spine,
                 k->lat_with_bulk ? " (latency with bulk)" : "");
        put(buf, len, &at, part);
    }
    if (at == 0) {
        snprintf(buf, len, "healthy");
    }
}

/* ---- running and output -------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int cp_report_sim_run(cp_report_sim_t *cases, size_t n, double *secs)
{
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        if (cases[i].label[0] == '\0') {
            cp_report_sim_label(&cases[i].k, cases[i].label, sizeof(cases[i].label));
        }
        if (cp_sim_case_run(&cases[i].k, &cases[i].counts) != 0) {
            cp_report_error("simulate: out of memory (case %s on %d nodes)", cases[i].label,
                            cases[i].k.n);
            return CP_REPORT_EXIT_BAD;
        }
    }
    *secs = now_s() - t0;
    return 0;
}

void cp_report_sim_text(FILE *out, const cp_report_sim_t *cases, size_t n, double secs)
{
    long runs = 0;
    fprintf(out, "%5s  %-30s %5s %4s %9s %5s %5s %6s %5s %5s %8s %6s %3s %5s %5s %5s\n", "nodes",
            "case", "noise", "base", "seeds", "runs", "exact", "missed", "fp", "incon", "untested",
            "rounds", "max", "exit0", "exit1", "exit2");
    for (size_t i = 0; i < n; i++) {
        const cp_report_sim_t *c = &cases[i];
        const cp_sim_counts_t *k = &c->counts;
        char seeds[32];
        snprintf(seeds, sizeof(seeds), "%llu-%llu", (unsigned long long)c->k.seed_lo,
                 (unsigned long long)c->k.seed_hi);
        fprintf(out,
                "%5d  %-30s %4.0f%% %4s %9s %5d %5d %6d %5d %5d %8ld %6.2f %3d %5d %5d %5d %10d\n",
                c->k.n, c->label, c->k.noise * 100, c->k.baseline ? "yes" : "no", seeds, k->runs,
                k->exact, k->missed, k->false_positive, k->inconclusive, k->untested,
                k->runs > 0 ? (double)k->rounds_sum / k->runs : 0.0, k->rounds_max, k->status[0],
                k->status[1], k->status[2], k->setup_slow);
        runs += k->runs;
    }
    fprintf(out, "# %zu case%s, %ld screens simulated in %.1f s\n", n, n == 1 ? "" : "s", runs,
            secs);
}

/* The faults of kind of case k as a JSON array: node numbers (hung, set-up failures) or
 * objects with their factor. */
static void json_faults(FILE *out, const cp_sim_case_t *k, int kind)
{
    int first = 1;
    fputc('[', out);
    for (int i = 0; i < k->nfaults; i++) {
        const cp_sim_fault_t *f = &k->faults[i];
        char v[32];
        if (f->kind != kind) {
            continue;
        }
        cp_report_fmt_double(f->f, v, sizeof(v));
        fputs(first ? "" : ", ", out);
        first = 0;
        if (kind == CP_SIM_HUNG || kind == CP_SIM_NOSETUP) {
            fprintf(out, "%d", f->a);
        } else if (kind == CP_SIM_LINK) {
            fprintf(out, "{\"a\": %d, \"b\": %d, \"factor\": %s}", f->a, f->b, v);
        } else {
            fprintf(out, "{\"node\": %d, \"factor\": %s}", f->a, v);
        }
    }
    fputc(']', out);
}

static void json_case(FILE *out, const cp_report_sim_t *c)
{
    const cp_sim_case_t *k = &c->k;
    const cp_sim_counts_t *r = &c->counts;
    char noise[32], factor[32], mean[32], spine[32];
    cp_report_fmt_double(k->noise, noise, sizeof(noise));
    cp_report_fmt_double(k->slow_count > 0 ? k->factor : 1.0, factor, sizeof(factor));
    cp_report_fmt_double(r->runs > 0 ? (double)r->rounds_sum / r->runs : 0, mean, sizeof(mean));
    cp_report_fmt_double(k->spine, spine, sizeof(spine));
    fprintf(out, "    {\"label\": ");
    cp_report_json_string(out, c->label);
    fprintf(out, ", \"nodes\": %d, \"slow\": ", k->n);
    json_faults(out, k, CP_SIM_SLOW);
    fprintf(out, ", \"slow_count\": %d, \"factor\": %s, \"links\": ", k->slow_count, factor);
    json_faults(out, k, CP_SIM_LINK);
    fprintf(out, ", \"paired_links\": ");
    json_faults(out, k, CP_SIM_LINK_PAIRED);
    fprintf(out, ", \"hung\": ");
    json_faults(out, k, CP_SIM_HUNG);
    fprintf(out, ", \"setup_fail\": ");
    json_faults(out, k, CP_SIM_NOSETUP);
    fprintf(out,
            ", \"noise\": %s, \"baseline\": %s, \"spine\": %s, \"lat_with_bulk\": %s, "
            "\"seeds\": [%llu, %llu], "
            "\"runs\": %d, \"exact\": %d, \"missed\": %d, \"false_positive\": %d, "
            "\"inconclusive\": %d, \"untested\": %ld, \"setup_slow\": %d, \"rounds_mean\": %s, "
            "\"rounds_max\": %d, \"exit_status\": {\"0\": %d, \"1\": %d, \"2\": %d}}",
            noise, k->baseline ? "true" : "false", spine, k->lat_with_bulk ? "true" : "false",
            (unsigned long long)k->seed_lo, (unsigned long long)k->seed_hi, r->runs, r->exact,
            r->missed, r->false_positive, r->inconclusive, r->untested, r->setup_slow, mean,
            r->rounds_max, r->status[0], r->status[1], r->status[2]);
}

void cp_report_sim_json(FILE *out, const cp_report_sim_t *cases, size_t n)
{
    fprintf(out, "{\"format\": \"collprof-simulate\", \"version\": 1, \"what\": \"screen\", "
                 "\"cases\": [\n");
    for (size_t i = 0; i < n; i++) {
        json_case(out, &cases[i]);
        fprintf(out, "%s\n", i + 1 < n ? "," : "");
    }
    fprintf(out, "]}\n");
}
