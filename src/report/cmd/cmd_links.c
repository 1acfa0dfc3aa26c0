/*
 * `links FILE`: the link sweep of a collprof --link-sweep run (/links): the
 * node x node bandwidth and latency matrices, and the slow links and nodes
 * named in plain words.
 *
 * A link is slow when its bandwidth is below --threshold times the median
 * of the other links; a node is suspect when its median link bandwidth is
 * below --threshold times the median of the other nodes' (src/screen/links.c).
 * One slow node makes all of its links slow while every other node keeps
 * most of its links fast, so the node is named and the others are not.
 *
 * Which bandwidth: by default the best iteration's (--stat best), as
 * stragglers does: a throttled or broken link is slow every time, while a
 * rank that lost its core to a neighbour for a moment is slow only then.
 *
 * With --baseline BASE.h5 the pairs are judged instead against a baseline file (collprof-report
 * baseline) by the screen's method (src/screen/screen.h): a pair is slow below --threshold
 * (default 0.8) times the baseline and beyond its spread, judged by its median iteration as
 * the baseline is; a node slow with two or more partners and most of those it met is a slow
 * node (the sweep met every pair: its pairs are the confirmation); a slow pair no slow node
 * explains is a slow link.  A cluster slow as a whole is caught, which the sweep's own
 * median cannot do.
 */
#include "config.h"

#include "report/plot/links_int.h"

#include "screen/hostlist.h"
#include "screen/links.h"
#include "screen/screen.h"
#include "screen/screen_out.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const stat_names[] = {"best", "mean"};

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report links FILE [--threshold X] [--stat best|mean]\n"
               "                             [--baseline BASE.h5]\n"
               "Print the link sweep of FILE (a collprof --link-sweep run): per backend, the\n"
               "node x node bandwidth and latency matrices; then name every link whose\n"
               "bandwidth is below X times the median of the other links, and every node\n"
               "whose median link bandwidth is below X times the median of the other\n"
               "nodes' (a suspect node).  Needs 3 nodes or more to tell a node apart.\n"
               "Under each bandwidth matrix, the pairs whose bytes the path check found on\n"
               "another NIC or far above the message ('nic path:' lines; --counters).\n"
               "On a screen's file (collprof --screen) it shows the pairs the screen\n"
               "measured; the screen's verdict is collprof-report screen FILE.\n"
               "\n"
               "  --threshold X  fraction of the median below which a link or node is\n"
               "                 slow, in (0, 1] (default 0.5; with --baseline: of the\n"
               "                 baseline, in (0, 1), default 0.8)\n"
               "  --stat S       best: bytes / the fastest iteration (default: a slow link\n"
               "                 is slow every time, a busy CPU only now and then); mean:\n"
               "                 bytes / the mean time, the figures of the text summary\n"
               "  --baseline BASE.h5  judge every pair against a baseline file\n"
               "                 (collprof-report baseline) by the screen's method instead:\n"
               "                 the pairs slower than the baseline (by their median\n"
               "                 iteration, * in the matrices), the slow nodes (slow with\n"
               "                 most of their partners) and the slow links; a cluster slow\n"
               "                 as a whole is caught.  The baseline must have the backends\n"
               "                 and message sizes of the sweep\n"
               "  -h, --help     this help\n"
               "\n"
               "Exit status: 0 nothing flagged, 1 a slow link or node (the status compare\n"
               "gives a regression), 2 bad usage, a file that cannot be read or one without\n"
               "link sweep data, a baseline that does not fit, or (with --baseline) a node\n"
               "that met nobody.\n");
}

/* The flags of one backend in words; the number of things flagged. */
static int say_verdict(const char *backend, const nodes_t *nd, const cp_links_verdict_t *v,
                       const double *m)
{
    int n = nd->n;
    for (int a = 0; a < n; a++) {
        for (int b = a + 1; b < n; b++) {
            if (v->slow[a * n + b]) {
                printf("%s: link %s-%s: %.3f GB/s, %.2gx the median of the other links (%.3f "
                       "GB/s): slow link\n",
                       backend, nd->names[a], nd->names[b], m[a * n + b],
                       m[a * n + b] / v->link_ref[a * n + b], v->link_ref[a * n + b]);
            }
        }
    }
    for (int a = 0; a < n; a++) {
        if (v->suspect[a]) {
            printf("%s: %s: %d of %d links at %.2gx the median bandwidth: suspect node %s\n",
                   backend, nd->names[a], v->node_slow_links[a], v->node_links[a],
                   v->node_bw[a] / v->node_ref[a], nd->names[a]);
        }
    }
    if (v->nslow_links + v->nsuspects == 0) {
        printf("%s: no slow link or node (%d links, threshold %gx the median)\n", backend,
               v->measured, v->threshold);
    }
    return v->nslow_links + v->nsuspects;
}

/* One (backend, kind) matrix as the summary prints it, with the slow links starred (the
 * bandwidth's; both kinds' when based, the pairs slower than the baseline). */
static void print_matrix(const cp_report_file_t *f, size_t first, const nodes_t *nd, int stat,
                         double *m, const unsigned char *mark, int based)
{
    const collprof_link_row_t *r = &f->links[first];
    int bw = !strcmp(r->kind, "bandwidth");
    if (bw) {
        cp_links_bw_matrix(f, r->backend, stat, nd->n, m);
    } else {
        cp_links_matrix(f->links, f->nlinks, r->backend, r->kind, 1, nd->n, m);
    }
    printf("\n%s %s, %llu B each way at once: %s%s\n", r->backend, r->kind,
           (unsigned long long)r->bytes,
           !bw                 ? "mean time in us"
           : stat == STAT_BEST ? "GB/s of the fastest iteration"
                               : "GB/s of the mean time",
           based ? " (* slower than the baseline)"
           : bw  ? " (* slow link)"
                 : "");
    cp_links_print(stdout, nd->names, nd->n, m, bw ? 2 : 1, bw || based ? mark : NULL);
    if (bw) { /* the pairs' path check, as the run printed it (files of 1.12 on) */
        cp_screen_print_nic_paths(stdout, f->links, f->nlinks, r->backend, nd->names, nd->n);
    }
}

/* Matrices and verdict of one backend; the number of things flagged, -1 out of memory. */
static int one_backend(const cp_report_file_t *f, size_t first, const nodes_t *nd, double thr,
                       int stat, double *m)
{
    const char *backend = f->links[first].backend;
    cp_links_verdict_t v;
    cp_links_bw_matrix(f, backend, stat, nd->n, m);
    if (cp_links_analyse(m, nd->n, thr, &v) != 0) {
        return -1;
    }
    for (size_t i = first; i < f->nlinks; i++) {
        if (!strcmp(f->links[i].backend, backend) && cp_links_first_of(f->links, i)) {
            print_matrix(f, i, nd, stat, m, v.slow, 0);
        }
    }
    cp_links_bw_matrix(f, backend, stat, nd->n, m);
    printf("\n");
    int flagged = say_verdict(backend, nd, &v, m);
    cp_links_verdict_free(&v);
    return flagged;
}

/* The distinct node pairs that f's /links rows measured (any backend or size). */
static int pairs_measured(const cp_report_file_t *f, int n)
{
    unsigned char *seen = calloc((size_t)n * (size_t)n + 1, 1);
    int k = 0;
    for (size_t i = 0; seen != NULL && i < f->nlinks; i++) {
        int a = f->links[i].node_a, b = f->links[i].node_b;
        if (a >= 0 && b >= 0 && a < n && b < n && a != b && !seen[a * n + b]) {
            seen[a * n + b] = seen[b * n + a] = 1;
            k++;
        }
    }
    free(seen);
    return k;
}

static int report(const cp_report_file_t *f, double thr, int stat)
{
    nodes_t nd;
    if (cp_links_load_nodes(f, &nd) != 0) {
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    double *m = calloc((size_t)nd.n * (size_t)nd.n + 1, sizeof(double));
    int flagged = 0, rc = m == NULL ? -1 : 0;
    if (f->nscreen > 0) {
        /* a screen measures a sample of the pairs (random rounds, then confirmations): its
         * matrices have holes, and its verdict is by path class with those confirmations */
        printf("# screen in %s: %d nodes, %d of their %d pairs measured (a sample, - where "
               "not); each measured link is judged below against the others, the screen's own "
               "verdict is: collprof-report screen %s\n",
               f->path, nd.n, pairs_measured(f, nd.n), nd.n * (nd.n - 1) / 2, f->path);
    } else {
        printf("# link sweep in %s: %d nodes, %d rounds of one pair per node\n", f->path, nd.n,
               cp_links_rounds(nd.n));
    }
    if (nd.n < 3) {
        printf("# with %d nodes there is one link and nothing to compare it with: nothing can "
               "be flagged\n",
               nd.n);
    }
    for (size_t i = 0; i < f->nlinks && rc >= 0; i++) {
        if (cp_links_first_of_backend(f->links, i)) {
            rc = one_backend(f, i, &nd, thr, stat, m);
            flagged += rc > 0 ? rc : 0;
        }
    }
    free(m);
    free(nd.names);
    if (rc < 0) {
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    return flagged > 0 ? CP_REPORT_EXIT_REGRESSION : CP_REPORT_EXIT_OK;
}

/* ---- judged against a baseline ------------------------------------------- */

/* The verdict of backend's pairs judged against the baseline (s decided), in words. */
static void say_based(const char *backend, const nodes_t *nd, const cp_screen_t *s,
                      const char *words)
{
    const char *const *names = nd->names;
    int counts[5] = {0}, n = s->n;
    printf("%s: judged against %s, slow below %.2fx (each pair by its median iteration, as the "
           "baseline), not against the sweep's own median\n",
           backend, words, s->opt.thr);
    for (size_t i = 0; i < s->npairs; i++) {
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->slow) {
            printf("%s: pair %s-%s: %.2fx the baseline (%.4g GB/s, %.4g us%s): slower than the "
                   "baseline\n",
                   backend, names[p->a], names[p->b], p->score, p->bw_gbs, p->lat_us,
                   p->outcome == CP_SCREEN_WRONG ? ", wrong data" : "");
        }
    }
    unsigned char *pick = calloc((size_t)n + 1, 1);
    for (int i = 0; i < n; i++) {
        int meas, slow;
        double score;
        counts[s->verdict[i] >= 0 && s->verdict[i] < 5 ? s->verdict[i] : 0]++;
        if (pick != NULL) {
            pick[i] = s->verdict[i] == CP_SCREEN_SLOW || s->verdict[i] == CP_SCREEN_UNREACHABLE;
        }
        if (s->verdict[i] != CP_SCREEN_HEALTHY) {
            cp_screen_node_stats(s, i, &meas, &slow, &score);
            printf("%s: node %s: slow with %d of %d partners, median %.2fx the baseline: %s "
                   "node %s\n",
                   backend, names[i], slow, meas, score, cp_screen_verdict_name(s->verdict[i]),
                   names[i]);
        }
    }
    for (int l = 0; l < s->nlinks; l++) {
        double score = 1;
        for (size_t i = 0; i < s->npairs; i++) {
            const cp_screen_pair_t *p = &s->pairs[i];
            if ((p->a == s->link_a[l] && p->b == s->link_b[l]) ||
                (p->a == s->link_b[l] && p->b == s->link_a[l])) {
                score = p->score < score ? p->score : score;
            }
        }
        printf("%s: link %s-%s: %.2fx the baseline, no slow node explains it: slow link\n", backend,
               names[s->link_a[l]], names[s->link_b[l]], score);
    }
    char ex[4096] = "";
    if (pick != NULL) {
        cp_hostlist(names, pick, n, ex, sizeof(ex));
    }
    free(pick);
    printf("%s: nodes: %d healthy, %d slow, %d unreachable, %d inconclusive, %d untested; "
           "links: %d slow; exclude: %s\n",
           backend, counts[CP_SCREEN_HEALTHY], counts[CP_SCREEN_SLOW],
           counts[CP_SCREEN_UNREACHABLE], counts[CP_SCREEN_INCONCLUSIVE],
           counts[CP_SCREEN_UNTESTED], s->nlinks, ex[0] ? ex : "(none)");
}

/* One backend's pairs judged against ref: matrices with the slow pairs starred, then the
 * verdict; its status (0 nothing flagged, 1 flagged, 2 a node untested), -1 out of memory. */
static int one_based(const cp_report_file_t *f, size_t first, const nodes_t *nd, int stat,
                     double thr, const cp_report_base_t *b, const cp_report_ref_t *ref, double *m)
{
    const char *backend = f->links[first].backend;
    int n = nd->n, status;
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.rounds = cp_links_rounds(n) > 0 ? cp_links_rounds(n) : 1;
    o.thr = thr;
    o.has_baseline = 1;
    o.baseline = ref->ref;
    cp_screen_t s;
    unsigned char *mark = calloc((size_t)n * (size_t)n + 1, 1);
    if (mark == NULL || cp_screen_init(&s, n, &o) != 0) {
        free(mark);
        return -1;
    }
    /* every round of a sweep is a random one: all its pairs are judged, none confirms */
    if (cp_screen_add_rows(&s, f->links, f->nlinks, backend, INT_MAX) < 0) {
        status = -1;
    } else {
        cp_screen_judge(&s, &ref->ref);
        status = cp_screen_decide_sweep(&s);
    }
    for (size_t i = 0; status >= 0 && i < s.npairs; i++) {
        const cp_screen_pair_t *p = &s.pairs[i];
        mark[p->a * n + p->b] = mark[p->b * n + p->a] |= (unsigned char)p->slow;
    }
    for (size_t i = first; status >= 0 && i < f->nlinks; i++) {
        if (!strcmp(f->links[i].backend, backend) && cp_links_first_of(f->links, i)) {
            print_matrix(f, i, nd, stat, m, mark, 1);
        }
    }
    if (status >= 0) {
        char words[1024];
        cp_report_base_words(b, backend, ref, words, sizeof(words));
        printf("\n");
        say_based(backend, nd, &s, words);
    }
    cp_screen_free(&s);
    free(mark);
    return status;
}

/* The sweep of f judged against the baseline b: the exit status. */
static int report_based(const cp_report_file_t *f, const cp_report_base_t *b, double thr, int stat)
{
    nodes_t nd;
    size_t nb = 0;
    for (size_t i = 0; i < f->nlinks; i++) {
        nb += cp_links_first_of_backend(f->links, i);
    }
    cp_report_ref_t *refs = calloc(nb + 1, sizeof(*refs));
    if (refs == NULL || cp_links_load_nodes(f, &nd) != 0) {
        free(refs);
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    int rc = 0;
    for (size_t i = 0, k = 0; i < f->nlinks && rc == 0; i++) { /* every backend fits first */
        if (cp_links_first_of_backend(f->links, i)) {
            rc = cp_report_base_ref("links", b, f, f->links[i].backend, &refs[k++]);
        }
    }
    double *m = calloc((size_t)nd.n * (size_t)nd.n + 1, sizeof(double));
    int flagged = 0, unsure = 0;
    if (rc == 0 && m != NULL) {
        printf("# link sweep in %s: %d nodes, %d rounds of one pair per node, judged against "
               "the baseline %s\n",
               f->path, nd.n, cp_links_rounds(nd.n), b->shown);
    }
    for (size_t i = 0, k = 0; rc == 0 && m != NULL && i < f->nlinks; i++) {
        if (cp_links_first_of_backend(f->links, i)) {
            int st = one_based(f, i, &nd, stat, thr, b, &refs[k++], m);
            rc = st < 0 ? -1 : 0;
            flagged |= st == 1;
            unsure |= st == 2;
        }
    }
    if (m == NULL || rc < 0) {
        cp_report_error("out of memory");
    }
    free(m);
    free(refs);
    free(nd.names);
    return rc != 0 || m == NULL ? CP_REPORT_EXIT_BAD
           : flagged            ? CP_REPORT_EXIT_REGRESSION
           : unsure             ? CP_REPORT_EXIT_BAD
                                : CP_REPORT_EXIT_OK;
}

typedef struct settings {
    double threshold; /* 0: the default (0.5; 0.8 against a baseline) */
    int stat;
    const char *baseline;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 1) {
        return cp_report_parse_double("links", "--threshold", val, 1e-9, 1, &s->threshold);
    }
    if (k == 3) {
        s->baseline = val;
        return 0;
    }
    s->stat = cp_report_parse_choice("links", "--stat", val, stat_names, 2, "best or mean");
    return s->stat < 0 ? -1 : 0;
}

static const char *check(void *ctx)
{
    const settings_t *s = ctx;
    return s->baseline != NULL && s->threshold >= 1
               ? "--threshold with --baseline: a fraction of the baseline below 1"
               : NULL;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    cp_report_base_t base;
    (void)n;
    if (s->baseline != NULL && cp_report_base_load("links", s->baseline, &base) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    int rc;
    if (files[0]->nlinks == 0) {
        cp_report_error("links: %s has no link sweep data (/links): run collprof --link-sweep "
                        "on 2 or more nodes",
                        files[0]->path);
        rc = CP_REPORT_EXIT_BAD;
    } else if (s->baseline != NULL && files[0]->nscreen > 0) {
        /* the sweep's judgement takes every pair as measured and none as a confirmation */
        cp_report_error("links --baseline: %s is a screen (a sample of the pairs, then "
                        "confirmations), not a link sweep: judge it with collprof-report screen "
                        "%s --baseline %s",
                        files[0]->path, files[0]->path, s->baseline);
        rc = CP_REPORT_EXIT_BAD;
    } else if (s->baseline != NULL) {
        rc = report_based(files[0], &base, s->threshold > 0 ? s->threshold : 0.8, s->stat);
    } else {
        rc = report(files[0], s->threshold > 0 ? s->threshold : CP_LINKS_THRESHOLD, s->stat);
    }
    if (s->baseline != NULL) {
        cp_report_base_free(&base);
    }
    return rc;
}

int cp_report_cmd_links(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"threshold", 0, 1}, {"stat", 0, 1}, {"baseline", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"links", usage, opts, option, check, CP_REPORT_FILES_ONE,
                                        run};
    settings_t s = {0, STAT_BEST, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
