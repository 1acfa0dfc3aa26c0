/*
 * The views of `collprof-report plot` built from the every-variant charts (plot_int.h):
 *
 *   - the fastest-variant view: per chart, one line per backend (and file, dtype, reduction,
 *     root, in-place...: everything but the variant), whose point at each size is the point
 *     of the variant with the highest busBW there, that is the shortest mean time (the sizes
 *     and the operation are the same); the point keeps its row, so its tooltip names the
 *     variant and its ring says whether it is the fastest of the cell;
 *   - the ratio charts: per operation whose fastest-variant chart has two backends or more,
 *     each line's busBW over the reference backend's line of the same file and attributes,
 *     size by size (only the sizes both measured).
 */
#include "config.h"

#include "report/plot/plot_int.h"

#include <stdlib.h>
#include <string.h>

/* A new, empty chart at the end of v, for op. */
static chart_t *new_chart(charts_t *v, const char *op, int kind)
{
    v->c = plot_grow(v->c, &v->cap, v->n, sizeof(*v->c));
    chart_t *c = &v->c[v->n++];
    memset(c, 0, sizeof(*c));
    snprintf(c->op, sizeof(c->op), "%s", op);
    c->kind = kind;
    return c;
}

/* A new, empty line at the end of c, named by key, of file. */
static series_t *new_series(chart_t *c, const collprof_result_row_t *key, int file)
{
    c->s = plot_grow(c->s, &c->cap, c->n, sizeof(*c->s));
    series_t *s = &c->s[c->n++];
    memset(s, 0, sizeof(*s));
    s->key = key;
    s->file = file;
    return s;
}

static point_t *new_point(series_t *s, const point_t *from)
{
    s->pts = plot_grow(s->pts, &s->cap, s->n, sizeof(*s->pts));
    point_t *pt = &s->pts[s->n++];
    *pt = *from;
    return pt;
}

/* Line s of an every-variant chart into its backend's line of b: its faster points. */
static void merge_variant(chart_t *b, const series_t *s)
{
    size_t g = 0;
    while (g < b->n &&
           !(b->s[g].file == s->file && plot_same_line(b->s[g].key, s->key, LINE_BACKEND))) {
        g++;
    }
    series_t *line = g < b->n ? &b->s[g] : new_series(b, s->key, s->file);
    line->variants++;
    for (size_t k = 0; k < s->n; k++) {
        const point_t *pt = &s->pts[k];
        size_t j = 0;
        while (j < line->n && line->pts[j].bytes != pt->bytes) {
            j++;
        }
        if (j == line->n) {
            new_point(line, pt)->nvariants = 1;
        } else {
            int nv = line->pts[j].nvariants + 1;
            if (pt->busbw > line->pts[j].busbw) {
                line->pts[j] = *pt;
            }
            line->pts[j].nvariants = nv;
        }
    }
}

/* 1 when lines a and b are of one backend and file */
static int same_backend(const series_t *a, const series_t *b)
{
    return a->file == b->file && !strcmp(a->key->backend, b->key->backend);
}

/*
 * One colour per backend (and file) across the charts, so that a backend keeps its colour
 * from one operation to the next and in the ratio charts, where every chart has one line
 * per backend and file and all of them together need no more colours than the palette has;
 * else each chart keeps its own, as labelled.
 */
static void same_colours(charts_t *v)
{
    const series_t *seen[N_COLOURS];
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) {
        for (size_t k = 0; k < v->c[i].n; k++) {
            const series_t *s = &v->c[i].s[k];
            for (size_t o = 0; o < k; o++) {
                if (same_backend(&v->c[i].s[o], s)) {
                    return; /* two lines of a backend on a chart (in-place and not...) */
                }
            }
            size_t j = 0;
            while (j < n && !same_backend(seen[j], s)) {
                j++;
            }
            if (j == n && n == N_COLOURS) {
                return;
            }
            seen[j] = s;
            n += j == n;
        }
    }
    for (size_t i = 0; i < v->n; i++) {
        for (size_t k = 0; k < v->c[i].n; k++) {
            series_t *s = &v->c[i].s[k];
            for (size_t j = 0; j < n; j++) {
                if (same_backend(seen[j], s)) {
                    s->dash += (j >= N_CVD_COLOURS) - (s->colour >= N_CVD_COLOURS);
                    s->colour = (int)j;
                }
            }
        }
    }
}

void plot_build_best(plot_t *p)
{
    for (size_t i = 0; i < p->all.n; i++) {
        const chart_t *all = &p->all.c[i];
        chart_t *b = new_chart(&p->best, all->op, CHART_BUSBW);
        for (size_t k = 0; k < all->n; k++) {
            merge_variant(b, &all->s[k]);
        }
        plot_label_chart(p, b, 0);
    }
    same_colours(&p->best);
}

/* 1 when chart c has lines of two backends or more. */
static int several_backends(const chart_t *c)
{
    for (size_t k = 1; k < c->n; k++) {
        if (strcmp(c->s[k].key->backend, c->s[0].key->backend) != 0) {
            return 1;
        }
    }
    return 0;
}

/* The reference's line for s in chart c: same file and attributes, backend p->ref. */
static const series_t *ref_line(const plot_t *p, const chart_t *c, const series_t *s)
{
    for (size_t k = 0; k < c->n; k++) {
        const series_t *r = &c->s[k];
        if (r->file == s->file && !strcmp(r->key->backend, p->ref) &&
            plot_same_line(r->key, s->key, LINE_OTHERS)) {
            return r;
        }
    }
    return NULL;
}

/* Line s over line r, size by size, into a new line of chart q (none when no size is common). */
static void ratio_line(chart_t *q, const series_t *s, const series_t *r)
{
    series_t *line = NULL;
    for (size_t k = 0; k < s->n; k++) {
        const point_t *pt = &s->pts[k];
        for (size_t j = 0; j < r->n; j++) {
            if (r->pts[j].bytes != pt->bytes || r->pts[j].busbw <= 0 || pt->busbw <= 0) {
                continue;
            }
            if (line == NULL) {
                line = new_series(q, s->key, s->file);
                memcpy(line->label, s->label, sizeof(line->label));
                line->colour = s->colour; /* the colour of the backend's busBW line */
                line->dash = s->dash;
                line->variants = s->variants;
            }
            point_t *np = new_point(line, pt);
            np->busbw = pt->busbw / r->pts[j].busbw;
            np->ref = r->pts[j].row;
            np->winner = 0;
        }
    }
}

static void free_chart(chart_t *c)
{
    for (size_t j = 0; j < c->n; j++) {
        free(c->s[j].pts);
    }
    free(c->s);
}

/* The first file's first measured backend (the first of its --backends). */
static const char *first_backend(const plot_t *p)
{
    for (size_t i = 0; i < p->all.n; i++) {
        for (size_t k = 0; k < p->all.c[i].n; k++) {
            if (p->all.c[i].s[k].file == 0) {
                return p->all.c[i].s[k].key->backend;
            }
        }
    }
    return NULL;
}

void plot_build_ratio(plot_t *p)
{
    if (p->ref == NULL) {
        p->ref = first_backend(p);
    }
    for (size_t i = 0; p->ref != NULL && i < p->best.n; i++) {
        const chart_t *b = &p->best.c[i];
        if (!several_backends(b)) {
            continue;
        }
        chart_t *q = new_chart(&p->ratio, b->op, CHART_RATIO);
        snprintf(q->ref, sizeof(q->ref), "%s", p->ref);
        for (size_t k = 0; k < b->n; k++) {
            const series_t *r = ref_line(p, b, &b->s[k]);
            if (r != NULL && strcmp(b->s[k].key->backend, p->ref) != 0) {
                ratio_line(q, &b->s[k], r);
            }
        }
        if (q->n == 0) { /* the reference has not that operation */
            free_chart(q);
            p->ratio.n--;
        }
    }
}

void plot_free_charts(charts_t *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free_chart(&v->c[i]);
    }
    free(v->c);
    v->c = NULL;
    v->n = v->cap = 0;
}
