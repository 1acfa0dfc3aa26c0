/*
 * The lines of `collprof-report plot`'s charts (plot_int.h), for the command and its views:
 * the arrays they grow in, which rows make one line, the points in size order, a file's base
 * name, and each line's label, colour and dash pattern.
 */
#include "config.h"

#include "report/plot/plot_int.h"

#include "format/format.h"

#include <stdlib.h>
#include <string.h>

void *plot_grow(void *v, size_t *cap, size_t n, size_t elsize)
{
    if (n < *cap) {
        return v;
    }
    size_t c = *cap ? *cap * 2 : 8;
    void *g = realloc(v, c * elsize);
    if (g == NULL) {
        cp_report_error("out of memory");
        exit(CP_REPORT_EXIT_BAD);
    }
    *cap = c;
    return g;
}

/* rows on one line: everything but the size is the same (what: LINE_EXACT), or everything
 * but the size and the variant (LINE_BACKEND), or but the size, backend and variant */
int plot_same_line(const collprof_result_row_t *a, const collprof_result_row_t *b, int what)
{
    return (what == LINE_OTHERS || !strcmp(a->backend, b->backend)) &&
           (what != LINE_EXACT || !strcmp(a->variant, b->variant)) && !strcmp(a->dtype, b->dtype) &&
           !strcmp(a->redop, b->redop) && a->root == b->root && a->in_place == b->in_place &&
           !strcmp(a->imbalance, b->imbalance) && !strcmp(a->split, b->split);
}

int plot_by_bytes(const void *a, const void *b)
{
    double x = ((const point_t *)a)->bytes, y = ((const point_t *)b)->bytes;
    return (x > y) - (x < y);
}

const char *plot_base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "mpi/ring (max, in-place), float64, <file>": only what tells the lines apart (the file
 * where the chart's lines are of several); without the variant, "mpi: fastest of 3
 * variants" (one variant: named as with it) */
static void label_one(const plot_t *p, const chart_t *c, series_t *s, int variant, int nfiles)
{
    int dtypes = 0;
    for (size_t j = 0; j < c->n; j++) {
        dtypes |= strcmp(c->s[j].key->dtype, s->key->dtype) != 0;
    }
    char op_label[256], name[96], files[320] = "";
    cp_format_label(s->key, op_label, sizeof(op_label));
    const char *extra = strstr(op_label, " (");
    if (variant || s->variants <= 1) {
        snprintf(name, sizeof(name), "%s/%s", s->key->backend, s->key->variant);
    } else {
        snprintf(name, sizeof(name), "%s", s->key->backend);
    }
    if (nfiles > 1) {
        snprintf(files, sizeof(files), ", %s", plot_base_name(p->files[s->file]->path));
    }
    snprintf(s->label, sizeof(s->label), "%s%s%s%s%s", name, extra ? extra : "", dtypes ? ", " : "",
             dtypes ? s->key->dtype : "", files);
    if (!variant && s->variants > 1) {
        char n[48];
        snprintf(n, sizeof(n), ": fastest of %d variants", s->variants);
        strncat(s->label, n, sizeof(s->label) - strlen(s->label) - 1);
    }
}

/* 1 when the lines of c come from one file only, else 2 */
static int chart_files(const chart_t *c)
{
    for (size_t i = 1; i < c->n; i++) {
        if (c->s[i].file != c->s[0].file) {
            return 2;
        }
    }
    return 1;
}

void plot_label_chart(const plot_t *p, chart_t *c, int variant)
{
    int nfiles = chart_files(c);
    for (size_t i = 0; i < c->n; i++) {
        series_t *s = &c->s[i];
        label_one(p, c, s, variant, nfiles);
        qsort(s->pts, s->n, sizeof(*s->pts), plot_by_bytes);
        /* each line its own colour; past the colour-blind-safe ones, also a dash pattern; with
         * several files one dash pattern per file, so that two runs are told apart at once */
        s->colour = (int)(i % N_COLOURS);
        s->dash = (nfiles > 1 ? s->file : 0) + (i >= N_CVD_COLOURS) + (int)(i / N_COLOURS);
    }
}
