/*
 * `scaling FILE|DIR...`: one metric of the same cells across scale points.
 *
 * A scale point is a (node count, world size) pair, from the root
 * attributes of each file.  A campaign (a Slurm job array, or runs by
 * hand) writes one file per run into one directory, so the usual operand
 * is that directory.  Cells are matched by op, backend, variant, dtype,
 * redop, root, in-place, imbalance and count; per op a table has one line
 * per cell and one column per scale point.  Where several results fall on
 * one cell and scale point (repeated runs, or a cell repeated in a run) the
 * entry is their median, marked with a '*'.
 *
 * With busBW, whose ideal is to stay flat as the job grows, a last line per
 * op gives the parallel efficiency of each scale point: the median over the
 * op's cells of busBW there / busBW at the first (smallest) scale point.
 */
#include "config.h"

#include "report/report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report scaling FILE|DIR... [--metric busbw|time|algbw]\n"
               "Compare the same cells across scale points.  Every result file (a DIR stands\n"
               "for its collprof_*.h5 files, e.g. a campaign directory) belongs to the scale\n"
               "point of its node count and world size (2n/8r: 2 nodes, 8 ranks).  Per op, a\n"
               "table with one line per cell (backend/variant, op attributes, dtype, count) and\n"
               "one column per scale point, sorted by nodes then ranks.  Cells are matched by\n"
               "backend, variant, op, dtype, redop, root, in-place, imbalance and count; only\n"
               "cells with timings (status ok or wrong) are shown.  Where several results fall\n"
               "on one cell and scale point, the entry is their median, marked '*'.\n"
               "\n"
               "  --metric M   busbw: busBW in GB/s (default), with a line of parallel\n"
               "               efficiency per operation: the median over its cells of\n"
               "               busBW / busBW at the first scale point\n"
               "               time:  p50 time in us\n"
               "               algbw: algBW in GB/s\n"
               "  -h, --help   this help\n"
               "\n"
               "Exit status: 0 success, 2 a file could not be read (nothing is printed) or\n"
               "bad usage.\n");
}

enum { METRIC_BUSBW, METRIC_TIME, METRIC_ALGBW };

typedef struct scale {
    long long nodes, ranks;
    int files;
    char label[48];
} scale_t;

typedef struct ref {
    const collprof_result_row_t *r;
    int op;    /* index in the ops list: run order of first appearance */
    int scale; /* index in the sorted scale points */
    double v;
} ref_t;

static int cmp_scale(const void *pa, const void *pb)
{
    const scale_t *a = pa, *b = pb;
    if (a->nodes != b->nodes) {
        return a->nodes < b->nodes ? -1 : 1;
    }
    return a->ranks < b->ranks ? -1 : a->ranks > b->ranks;
}

/* the cell, without the scale point */
static int cmp_cell(const ref_t *a, const ref_t *b)
{
    const collprof_result_row_t *x = a->r, *y = b->r;
    int c;
    if (a->op != b->op) {
        return a->op < b->op ? -1 : 1;
    }
    if ((c = strcmp(x->backend, y->backend)) != 0 || (c = strcmp(x->variant, y->variant)) != 0 ||
        (c = strcmp(x->dtype, y->dtype)) != 0 || (c = strcmp(x->redop, y->redop)) != 0) {
        return c;
    }
    if (x->root != y->root) {
        return x->root < y->root ? -1 : 1;
    }
    if (x->in_place != y->in_place) {
        return x->in_place < y->in_place ? -1 : 1;
    }
    if ((c = strcmp(x->imbalance, y->imbalance)) != 0 || (c = strcmp(x->split, y->split)) != 0) {
        return c;
    }
    return x->count < y->count ? -1 : x->count > y->count;
}

static int cmp_ref(const void *pa, const void *pb)
{
    const ref_t *a = pa, *b = pb;
    int c = cmp_cell(a, b);
    if (c != 0) {
        return c;
    }
    return a->scale < b->scale ? -1 : a->scale > b->scale;
}

static double metric_of(const collprof_result_row_t *r, int metric)
{
    return metric == METRIC_TIME    ? r->time_p50_us
           : metric == METRIC_ALGBW ? r->algbw_gbs
                                    : r->busbw_gbs;
}

typedef struct table {
    int metric;
    const scale_t *scales;
    int nscales;
    int namew, colw;
    double *tmp;  /* scratch for medians, [max results of one entry] */
    double *eff;  /* [nscales * ncells of the op] efficiency ratios */
    size_t *neff; /* [nscales] */
    char *line;   /* the line being built, printed without trailing blanks */
    size_t cap, len;
} table_t;

static void put(table_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(table_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->line + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n > 0) {
        t->len += (size_t)n < t->cap - t->len ? (size_t)n : t->cap - t->len - 1;
    }
}

static void end_line(table_t *t)
{
    while (t->len > 0 && t->line[t->len - 1] == ' ') {
        t->len--;
    }
    t->line[t->len] = '\0';
    printf("%s\n", t->line);
    t->len = 0;
}

/*
 * One line of the table: refs [lo, hi) are one cell, sorted by scale point.
 * Adds the cell's ratios to the first column to t->eff (stride per scale point).
 */
static void print_cell(table_t *t, const ref_t *refs, size_t lo, size_t hi, size_t stride,
                       int *nmin, int *nmax)
{
    char name[512];
    double first = 0;
    cp_report_cell_name(refs[lo].r, name, sizeof(name));
    put(t, "%-*s", t->namew, name);
    size_t i = lo;
    for (int s = 0; s < t->nscales; s++) {
        size_t n = 0;
        while (i < hi && refs[i].scale == s) {
            t->tmp[n++] = refs[i++].v;
        }
        if (n == 0) {
            put(t, " %*s ", t->colw, "-");
            continue;
        }
        double v = cp_report_median(t->tmp, n);
        put(t, " %*.*f%s", t->colw, t->metric == METRIC_TIME ? 1 : 2, v, n > 1 ? "*" : " ");
        if (n > 1) {
            *nmin = *nmin == 0 || (int)n < *nmin ? (int)n : *nmin;
            *nmax = (int)n > *nmax ? (int)n : *nmax;
        }
        if (s == 0) {
            first = v;
        }
        if (t->metric == METRIC_BUSBW && first > 0) {
            t->eff[(size_t)s * stride + t->neff[s]++] = v / first;
        }
    }
    end_line(t);
}

/* The table of one op: refs [lo, hi), ncells cells. */
static void print_op(table_t *t, const ref_t *refs, size_t lo, size_t hi, size_t ncells)
{
    static const char *unit[] = {"busBW (GB/s)", "p50 time (us)", "algBW (GB/s)"};
    int nmin = 0, nmax = 0;
    printf("== %s: %s ==\n", refs[lo].r->op, unit[t->metric]);
    put(t, "%-*s", t->namew, "# cell");
    for (int s = 0; s < t->nscales; s++) {
        put(t, " %*s ", t->colw, t->scales[s].label);
    }
    end_line(t);
    memset(t->neff, 0, sizeof(size_t) * (size_t)t->nscales);
    for (size_t i = lo; i < hi;) {
        size_t j = i + 1;
        while (j < hi && cmp_cell(&refs[i], &refs[j]) == 0) {
            j++;
        }
        print_cell(t, refs, i, j, ncells, &nmin, &nmax);
        i = j;
    }
    if (t->metric == METRIC_BUSBW) {
        put(t, "%-*s", t->namew, "# efficiency");
        for (int s = 0; s < t->nscales; s++) {
            if (t->neff[s] == 0) {
                put(t, " %*s ", t->colw, "-");
            } else {
                double e = cp_report_median(t->eff + (size_t)s * ncells, t->neff[s]);
                put(t, " %*.2f ", t->colw, e);
            }
        }
        end_line(t);
    }
    if (nmax > 0) {
        if (nmin == nmax) {
            printf("# * median of %d results\n", nmax);
        } else {
            printf("# * median of %d to %d results\n", nmin, nmax);
        }
    }
}

static int scale_of(const scale_t *scales, int n, const cp_report_file_t *f)
{
    for (int s = 0; s < n; s++) {
        if (scales[s].nodes == f->root.node_count && scales[s].ranks == f->root.world_size) {
            return s;
        }
    }
    return -1;
}

/* The scale points of the files, sorted by nodes then ranks, with their labels: the count. */
static int collect_scales(cp_report_file_t **files, int nfiles, scale_t *scales, table_t *t)
{
    int nscales = 0;
    for (int i = 0; i < nfiles; i++) {
        int s = scale_of(scales, nscales, files[i]);
        if (s < 0) {
            s = nscales++;
            scales[s].nodes = files[i]->root.node_count;
            scales[s].ranks = files[i]->root.world_size;
        }
        scales[s].files++;
    }
    qsort(scales, (size_t)nscales, sizeof(*scales), cmp_scale);
    t->colw = 8;
    for (int s = 0; s < nscales; s++) {
        snprintf(scales[s].label, sizeof(scales[s].label), "%lldn/%lldr", scales[s].nodes,
                 scales[s].ranks);
        t->colw = (int)strlen(scales[s].label) > t->colw ? (int)strlen(scales[s].label) : t->colw;
    }
    t->scales = scales;
    t->nscales = nscales;
    return nscales;
}

/*
 * Every measured row, with its op in run order (ops[], *nops) and its scale
 * point, sorted by cell then scale point: the count.  *skipped counts the
 * rows without timings.
 */
static size_t collect_refs(cp_report_file_t **files, int nfiles, table_t *t, const char **ops,
                           ref_t *refs, size_t *skipped)
{
    size_t nrefs = 0;
    int nops = 0;
    t->namew = (int)strlen("# efficiency");
    for (int i = 0; i < nfiles; i++) {
        const cp_report_file_t *f = files[i];
        int s = scale_of(t->scales, t->nscales, f);
        for (size_t k = 0; k < f->nrows; k++) {
            const collprof_result_row_t *r = &f->rows[k];
            if (!cp_report_measured(r)) {
                (*skipped)++;
                continue;
            }
            int op = 0;
            while (op < nops && strcmp(ops[op], r->op) != 0) {
                op++;
            }
            if (op == nops) {
                ops[nops++] = r->op;
            }
            refs[nrefs++] = (ref_t){r, op, s, metric_of(r, t->metric)};
            char name[512];
            cp_report_cell_name(r, name, sizeof(name));
            t->namew = (int)strlen(name) > t->namew ? (int)strlen(name) : t->namew;
        }
    }
    qsort(refs, nrefs, sizeof(*refs), cmp_ref);
    return nrefs;
}

/* The header, one table per op, and the notes. */
static void print_report(table_t *t, int nfiles, const ref_t *refs, size_t nrefs, size_t skipped)
{
    printf("# collprof-report scaling: %d file%s, %d scale point%s (nodes n / ranks r)\n", nfiles,
           nfiles == 1 ? "" : "s", t->nscales, t->nscales == 1 ? "" : "s");
    for (int s = 0; s < t->nscales; s++) {
        printf("#   %-*s %d file%s\n", t->colw, t->scales[s].label, t->scales[s].files,
               t->scales[s].files == 1 ? "" : "s");
    }
    if (t->metric == METRIC_BUSBW) {
        printf("# efficiency: median over the op's cells of busBW / busBW in the first column\n");
    }
    for (size_t i = 0; i < nrefs;) {
        /* one op: [i, j), with ncells cells */
        size_t j = i + 1, ncells = 1;
        while (j < nrefs && refs[j].op == refs[i].op) {
            ncells += cmp_cell(&refs[j - 1], &refs[j]) != 0;
            j++;
        }
        printf("\n");
        print_op(t, refs, i, j, ncells);
        i = j;
    }
    if (nrefs == 0) {
        printf("\n# no cell with timings\n");
    }
    if (skipped > 0) {
        printf(
            "\n# %zu result%s without timings (error, unsupported, skipped, timeout) not shown\n",
            skipped, skipped == 1 ? "" : "s");
    }
}

static int report(cp_report_file_t **files, int nfiles, int metric)
{
    scale_t *scales = calloc((size_t)nfiles, sizeof(*scales));
    const char **ops = NULL;
    ref_t *refs = NULL;
    size_t total = 0, skipped = 0;
    int rc = CP_REPORT_EXIT_BAD;
    table_t t;
    memset(&t, 0, sizeof(t));
    t.metric = metric;
    for (int i = 0; i < nfiles; i++) {
        total += files[i]->nrows;
    }
    if (scales == NULL || (ops = calloc(total + 1, sizeof(*ops))) == NULL ||
        (refs = calloc(total + 1, sizeof(*refs))) == NULL) {
        goto oom;
    }
    size_t nscales = (size_t)collect_scales(files, nfiles, scales, &t);
    size_t nrefs = collect_refs(files, nfiles, &t, ops, refs, &skipped);
    if ((t.tmp = malloc(sizeof(double) * (nrefs + 1))) == NULL ||
        (t.eff = malloc(sizeof(double) * (nrefs + 1) * nscales)) == NULL ||
        (t.neff = calloc(nscales, sizeof(size_t))) == NULL ||
        (t.line = malloc(t.cap = (size_t)t.namew + nscales * ((size_t)t.colw + 64) + 64)) == NULL) {
        goto oom;
    }
    print_report(&t, nfiles, refs, nrefs, skipped);
    rc = CP_REPORT_EXIT_OK;
    goto out;
oom:
    cp_report_error("out of memory");
out:
    free(t.tmp);
    free(t.eff);
    free(t.neff);
    free(t.line);
    free(refs);
    free(ops);
    free(scales);
    return rc;
}

static int option(void *ctx, int k, char *val)
{
    static const char *const metrics[] = {"busbw", "time", "algbw"}; /* METRIC_* */
    int *metric = ctx;
    (void)k;
    *metric =
        cp_report_parse_choice("scaling", "--metric", val, metrics, 3, "busbw, time or algbw");
    return *metric < 0 ? -1 : 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    return report(files, n, *(int *)ctx);
}

int cp_report_cmd_scaling(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0}, {"metric", 0, 1}, {NULL, 0, 0}};
    /* all files are read before anything is printed: a bad one leaves no partial table */
    static const cp_report_cmd_t cmd = {"scaling",           usage, opts, option, NULL,
                                        CP_REPORT_FILES_ALL, run};
    int metric = METRIC_BUSBW;
    return cp_report_run(&cmd, &metric, argc, argv);
}
