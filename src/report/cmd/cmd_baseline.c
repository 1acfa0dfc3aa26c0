/*
 * collprof-report baseline FILE|DIR... -o BASE.h5: the healthy pairs of screens and link
 * sweeps (their /links rows that are ok, between nodes the file's /screen calls healthy where
 * it has one), per backend, kind and message size: the median and the MAD of the pairs'
 * logarithms, written as a baseline file (src/schema/baseline.h) that collprof --screen
 * --baseline judges against.  One row of path class "any" over every pair, and one per path
 * class the files' /links rows record (their `path` column, 1.10: same-switch, cross-switch
 * from Slurm's tree topology) over that class's pairs alone.
 */
#include "config.h"

#include "screen/path.h"
#include "base/stats.h"
#include "schema/baseline.h"
#include "report/read/reader.h"
#include "report/report.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct settings {
    const char *output;
} settings_t;

/* The values of one (backend, kind, bytes, path class): logarithms of the pairs' figures. */
typedef struct group {
    collprof_baseline_row_t row;
    double *v;
    size_t n, cap;
    int last_file;
} group_t;

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report baseline FILE|DIR... -o BASE.h5\n"
               "The healthy pairs of screens (collprof --screen) and link sweeps\n"
               "(--link-sweep): per backend, kind, message size and path class, their median\n"
               "and spread (a row over every pair, \"any\", and one per class the files record:\n"
               "same-switch, cross-switch, from Slurm's tree topology), as a baseline file\n"
               "for collprof --screen --baseline BASE.h5, which then judges a cluster against\n"
               "it rather than against itself (a uniformly slow cluster is caught too), each\n"
               "pair against its class's row where there is one, else against \"any\".\n"
               "Pairs with a node a screen did not call healthy are left out;\n"
               "make baselines from runs on a cluster known to be good.\n"
               "  -o, --output BASE.h5  the baseline file (required; replaced whole)\n"
               "Exit status: 0 written, 2 bad usage, a file that cannot be read, or no\n"
               "healthy pair.\n");
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    (void)k;
    s->output = val;
    return 0;
}

static const char *check(void *ctx)
{
    const settings_t *s = ctx;
    return s->output == NULL ? "-o BASE.h5 is required" : NULL;
}

/* 1 when node is healthy in f's screen of backend, or f has no screen of backend. */
static int healthy(const cp_report_file_t *f, const char *backend, int node)
{
    int screened = 0;
    for (size_t i = 0; i < f->nscreen; i++) {
        const collprof_screen_row_t *r = &f->screen[i];
        if (strcmp(r->backend, backend) != 0 || strcmp(r->what, "node") != 0) {
            continue;
        }
        screened = 1;
        if (r->node_a == node) {
            return strcmp(r->verdict, "healthy") == 0;
        }
    }
    return !screened;
}

/* The group of row r and path class cls (new when none), or NULL when out of memory. */
static group_t *group_of(group_t **g, size_t *ng, const collprof_link_row_t *r, int cls)
{
    for (size_t i = 0; i < *ng; i++) {
        if (!strcmp((*g)[i].row.backend, r->backend) && !strcmp((*g)[i].row.kind, r->kind) &&
            (*g)[i].row.bytes == r->bytes && !strcmp((*g)[i].row.path_class, cp_path_name(cls))) {
            return &(*g)[i];
        }
    }
    group_t *more = realloc(*g, (*ng + 1) * sizeof(**g));
    if (more == NULL) {
        return NULL;
    }
    *g = more;
    group_t *n = &more[(*ng)++];
    memset(n, 0, sizeof(*n));
    snprintf(n->row.backend, sizeof(n->row.backend), "%s", r->backend);
    snprintf(n->row.kind, sizeof(n->row.kind), "%s", r->kind);
    snprintf(n->row.path_class, sizeof(n->row.path_class), "%s", cp_path_name(cls));
    n->row.bytes = r->bytes;
    n->last_file = -1;
    return n;
}

/* Add figure x of file fi to grp (NULL: out of memory); -1 when out of memory. */
static int add_value(group_t *grp, double x, int fi)
{
    if (grp == NULL) {
        return -1;
    }
    if (grp->n == grp->cap) {
        size_t cap = grp->cap ? 2 * grp->cap : 64;
        double *v = realloc(grp->v, cap * sizeof(double));
        if (v == NULL) {
            return -1;
        }
        grp->v = v, grp->cap = cap;
    }
    grp->v[grp->n++] = log(x);
    grp->row.files += grp->last_file != fi;
    grp->last_file = fi;
    return 0;
}

/* Add file fi's healthy ok pairs to the groups (the "any" group of each, and its path
 * class's); -1 when out of memory. */
static int add_file(const cp_report_file_t *f, int fi, group_t **g, size_t *ng)
{
    for (size_t i = 0; i < f->nlinks; i++) {
        const collprof_link_row_t *r = &f->links[i];
        int bw = !strcmp(r->kind, "bandwidth");
        if (strcmp(r->status, "ok") != 0 || !(r->time_p50_us > 0) ||
            (!bw && strcmp(r->kind, "latency") != 0) || !healthy(f, r->backend, r->node_a) ||
            !healthy(f, r->backend, r->node_b)) {
            continue;
        }
        double x = bw ? (double)r->bytes / r->time_p50_us * 1e-3 : r->time_p50_us;
        int cls = cp_path_parse(r->path); /* a class not known here counts as "any" alone */
        if (add_value(group_of(g, ng, r, CP_PATH_ANY), x, fi) != 0 ||
            (cls > CP_PATH_ANY && add_value(group_of(g, ng, r, cls), x, fi) != 0)) {
            return -1;
        }
    }
    return 0;
}

/* The group's row: median and MAD of its logarithms. */
static void finish(group_t *g)
{
    double lm = cp_stats_median(g->v, g->n);
    for (size_t i = 0; i < g->n; i++) {
        g->v[i] = fabs(g->v[i] - lm);
    }
    g->row.median = exp(lm);
    g->row.mad_log = cp_stats_median(g->v, g->n);
    g->row.pairs = (int64_t)g->n;
}

static int run(void *ctx, cp_report_file_t **files, int nfiles)
{
    const settings_t *s = ctx;
    group_t *g = NULL;
    size_t ng = 0;
    int rc = CP_REPORT_EXIT_OK;
    for (int i = 0; i < nfiles && rc == CP_REPORT_EXIT_OK; i++) {
        rc = add_file(files[i], i, &g, &ng) == 0 ? rc : CP_REPORT_EXIT_BAD;
    }
    collprof_baseline_row_t *rows = calloc(ng + 1, sizeof(*rows));
    char err[512];
    if (rc != CP_REPORT_EXIT_OK || rows == NULL) {
        cp_report_error("baseline: out of memory");
        rc = CP_REPORT_EXIT_BAD;
    } else if (ng == 0) {
        cp_report_error("baseline: no healthy pair in the files (make a baseline from the "
                        "results of collprof --screen or --link-sweep)");
        rc = CP_REPORT_EXIT_BAD;
    } else {
        for (size_t i = 0; i < ng; i++) {
            finish(&g[i]);
            rows[i] = g[i].row;
            printf("%s %s %llu B%s%s: median %.4g %s, MAD %.3f (ln), %lld pairs from %d file%s\n",
                   rows[i].backend, rows[i].kind, (unsigned long long)rows[i].bytes,
                   strcmp(rows[i].path_class, "any") ? " " : "",
                   strcmp(rows[i].path_class, "any") ? rows[i].path_class : "", rows[i].median,
                   strcmp(rows[i].kind, "bandwidth") ? "us" : "GB/s", rows[i].mad_log,
                   (long long)rows[i].pairs, rows[i].files, rows[i].files == 1 ? "" : "s");
        }
        if (cp_baseline_write(s->output, rows, ng, err, sizeof(err)) != 0) {
            cp_report_error("baseline: %s", err);
            rc = CP_REPORT_EXIT_BAD;
        } else {
            printf("baseline: %s\n", s->output);
        }
    }
    for (size_t i = 0; i < ng; i++) {
        free(g[i].v);
    }
    free(g);
    free(rows);
    return rc;
}

int cp_report_cmd_baseline(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0}, {"output", 'o', 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"baseline",          usage, opts, option, check,
                                        CP_REPORT_FILES_ALL, run};
    settings_t s = {NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
