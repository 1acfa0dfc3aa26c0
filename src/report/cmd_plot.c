/*
 * `plot FILE... --out report.html|report.svg`: busBW against message size.
 *
 * One chart per operation, one line per backend/variant (and per file,
 * when several are given), on a log2 size axis because collprof's sizes
 * are powers of two.  Around each line a band spans the busBW of the p5
 * to the p95 of the per-iteration times; the fastest backend/variant of
 * each cell is ringed.  The output is plain SVG, inline in an HTML page or
 * standalone, with each point's values in its <title>: no font,
 * stylesheet or script from the network, so it can be mailed, attached
 * to a ticket or opened on an air-gapped cluster.  The HTML page adds a
 * small script of its own (plot_script.c): legend entries that hide and
 * show their line, a log busBW axis, switches for the bands and rings,
 * and tooltips at once; without it the page shows the same static
 * pictures.  The standalone SVG has no script.  A file with a link sweep
 * (collprof --link-sweep) also gets one heatmap per backend of its node x
 * node bandwidth matrix (cmd_links.c).
 */
#include "config.h"

#include "report/report.h"

#include "colls/colls.h"
#include "core/util.h"
#include "output/format.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* chart geometry, in SVG user units (px) */
#define CHART_W     900
#define PLOT_L      80 /* left margin: y tick labels and the axis title */
#define PLOT_R      30
#define PLOT_T      48 /* the chart title */
#define PLOT_H      300
#define AXIS_H      58 /* x tick labels and the axis title */
#define LEGEND_DY   18
#define LEGEND_COLS 2

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report plot FILE|DIR... --out report.html|report.svg\n"
               "Draw busBW (GB/s) against message size (bytes, log2 axis): one chart per\n"
               "operation, one line per backend/variant (and per file when several are\n"
               "given); and for a link sweep (collprof --link-sweep), a heatmap of the\n"
               "node x node bandwidth per backend, slow links framed in red.\n"
               "Where files have one world size, the fastest backend/variant of each\n"
               "cell is ringed (as 'collprof-report best' decides it; ties are not).\n"
               "The shaded band around a line spans the busBW of the p5 to the p95 of\n"
               "the per-iteration times; pointing at a point shows its values.\n"
               "OUT ending in .html gives a page with inline SVG and a small script of\n"
               "its own: click a legend entry to hide or show its line, switch the\n"
               "busBW axis to log, the bands and the rings off (without script the\n"
               "same pictures, static).  OUT ending in .svg gives a single static SVG\n"
               "image.  Either is self-contained: nothing is fetched.\n"
               "\n"
               "  -o, --out OUT  the file to write (required)\n"
               "  -h, --help     this help\n"
               "\n"
               "Exit status: 0 success, 2 bad usage or a file that cannot be read.\n");
}

/* Tableau 10: distinguishable, also for the common forms of colour blindness */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
#define N_COLOURS (sizeof(palette) / sizeof(palette[0]))
/* past ten lines the colours repeat with another dash pattern */
static const char *const dashes[] = {"", "7 4", "2 3", "10 3 2 3"};
#define N_DASHES (sizeof(dashes) / sizeof(dashes[0]))

typedef struct point {
    double bytes, busbw;
    const collprof_result_row_t *row;
    int winner; /* the fastest backend/variant of its cell, not a tie (collprof-report best) */
    /* the band: busBW lo..hi from the times t_hi_us..t_lo_us, what names where they come from */
    double lo, hi, t_lo_us, t_hi_us;
    const char *what;
} point_t;

typedef struct series {
    int file;
    const collprof_result_row_t *key; /* the first row: its attributes name the line */
    char label[400];
    int colour, dash; /* indices into palette[] and dashes[] */
    point_t *pts;
    size_t n, cap;
} series_t;

typedef struct chart {
    char op[16];
    int winners; /* points marked as the fastest of their cell */
    series_t *s;
    size_t n, cap;
} chart_t;

typedef struct plot {
    chart_t *c;
    size_t n, cap;
    cp_report_file_t **files;
    int nfiles;
} plot_t;

static void *grow(void *v, size_t *cap, size_t n, size_t elsize)
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

/* rows on one line: everything but the size is the same */
static int same_line(const collprof_result_row_t *a, const collprof_result_row_t *b)
{
    return !strcmp(a->backend, b->backend) && !strcmp(a->variant, b->variant) &&
           !strcmp(a->dtype, b->dtype) && !strcmp(a->redop, b->redop) && a->root == b->root &&
           a->in_place == b->in_place && !strcmp(a->imbalance, b->imbalance) &&
           !strcmp(a->split, b->split);
}

/*
 * The band around a point: the busBW of the p95 and of the p5 of the
 * per-iteration times (the minimum where the raw samples are absent), the
 * noise range `best` judges by.  Where rows come to carry an interval
 * across repeats (--repeats), this is the one place to take it instead
 * and to name it in what: the band, the tooltip and the chart's note
 * follow.
 */
static void point_band(const cp_report_cell_t *cell, point_t *pt)
{
    const collprof_result_row_t *r = pt->row;
    double p5 = cp_best_p5(cell->iter_max, r->iterations);
    pt->what = p5 >= 0                  ? "p5-p95 of the iterations"
               : cell->iter_max != NULL ? "min-p95 of the iterations"
                                        : "the row's min to p95 or max (no samples: imported)";
    pt->t_lo_us = p5 >= 0 ? p5 : r->time_min_us;
    /* an imported row may have a max but no p95 (OSU -f) */
    pt->t_hi_us = r->time_p95_us > 0 ? r->time_p95_us : r->time_max_us;
    /* busBW is in inverse proportion to the time it came from (the mean) */
    double k = pt->busbw * r->time_mean_us;
    pt->hi = pt->t_lo_us > 0 ? k / pt->t_lo_us : pt->busbw;
    pt->lo = pt->t_hi_us > 0 ? k / pt->t_hi_us : pt->busbw;
}

static void add_row(plot_t *p, int file, const collprof_result_row_t *r,
                    const cp_report_cell_t *cell)
{
    size_t ci = 0, si = 0;
    while (ci < p->n && strcmp(p->c[ci].op, r->op) != 0) {
        ci++;
    }
    if (ci == p->n) {
        p->c = grow(p->c, &p->cap, p->n, sizeof(*p->c));
        memset(&p->c[p->n], 0, sizeof(*p->c));
        snprintf(p->c[p->n].op, sizeof(p->c[p->n].op), "%s", r->op);
        p->n++;
    }
    chart_t *c = &p->c[ci];
    while (si < c->n && !(c->s[si].file == file && same_line(c->s[si].key, r))) {
        si++;
    }
    if (si == c->n) {
        c->s = grow(c->s, &c->cap, c->n, sizeof(*c->s));
        memset(&c->s[c->n], 0, sizeof(*c->s));
        c->s[c->n].file = file;
        c->s[c->n].key = r;
        c->n++;
    }
    series_t *s = &c->s[si];
    s->pts = grow(s->pts, &s->cap, s->n, sizeof(*s->pts));
    point_t *pt = &s->pts[s->n++];
    memset(pt, 0, sizeof(*pt));
    pt->bytes = (double)r->bytes;
    pt->busbw = r->busbw_gbs;
    pt->row = r;
    point_band(cell, pt);
}

static int by_bytes(const void *a, const void *b)
{
    double x = ((const point_t *)a)->bytes, y = ((const point_t *)b)->bytes;
    return (x > y) - (x < y);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* "mpi/ring (max, in-place), float64, <file>": only what tells the lines apart */
static void label_series(const plot_t *p, chart_t *c)
{
    int next_colour = 0;
    for (size_t i = 0; i < c->n; i++) {
        series_t *s = &c->s[i];
        int dtypes = 0;
        for (size_t j = 0; j < c->n; j++) {
            dtypes |= strcmp(c->s[j].key->dtype, s->key->dtype) != 0;
        }
        char op_label[256];
        cp_format_label(s->key, op_label, sizeof(op_label));
        const char *extra = strstr(op_label, " (");
        snprintf(s->label, sizeof(s->label), "%s/%s%s%s%s%s", s->key->backend, s->key->variant,
                 extra ? extra : "", dtypes ? ", " : "", dtypes ? s->key->dtype : "",
                 p->nfiles > 1 ? ", " : "");
        if (p->nfiles > 1) {
            strncat(s->label, base_name(p->files[s->file]->path),
                    sizeof(s->label) - strlen(s->label) - 1);
        }
        qsort(s->pts, s->n, sizeof(*s->pts), by_bytes);
        /* several files: one colour per line of the chart, one dash pattern per file,
         * so the same backend/variant of two runs is told apart at a glance */
        size_t group = 0;
        while (group < i && !same_line(c->s[group].key, s->key)) {
            group++;
        }
        if (p->nfiles > 1) {
            s->colour = group == i ? next_colour++ : c->s[group].colour;
            s->dash = s->file;
        } else {
            s->colour = (int)i;
            s->dash = (int)(i / N_COLOURS);
        }
    }
}

static void xml_text(FILE *out, const char *s)
{
    cp_report_xml_text(out, s);
}

static void size_label(int log2b, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = log2b >= 0 ? log2b / 10 : 0;
    u = u > 5 ? 5 : u;
    snprintf(buf, len, "%.0f %s", ldexp(1.0, log2b - 10 * u), units[u]);
}

static int chart_height(const chart_t *c)
{
    int rows = (int)((c->n + LEGEND_COLS - 1) / LEGEND_COLS);
    return PLOT_T + PLOT_H + AXIS_H + rows * LEGEND_DY + 12;
}

/* The axes of one chart: x is log2 of the size in bytes, y busBW from 0. */
typedef struct axes {
    int pw;       /* plot width */
    int xlo, xhi; /* the first and last size tick (log2 bytes) */
    double xmin, xmax;
    double ytop, step; /* y from 0 to ytop, ticks every step */
    int decimals;      /* of the y tick labels */
} axes_t;

static double ax_x(const axes_t *a, double v)
{
    return PLOT_L + (v - a->xmin) / (a->xmax - a->xmin) * a->pw;
}

static double ax_y(const axes_t *a, double v)
{
    return PLOT_T + PLOT_H - v / a->ytop * PLOT_H;
}

static void chart_axes(const chart_t *c, axes_t *a)
{
    double lo = INFINITY, hi = -INFINITY, ymax = 0;
    for (size_t i = 0; i < c->n; i++) {
        for (size_t k = 0; k < c->s[i].n; k++) {
            double lx = log2(c->s[i].pts[k].bytes);
            lo = lx < lo ? lx : lo;
            hi = lx > hi ? lx : hi;
            ymax = fmax(ymax, fmax(c->s[i].pts[k].busbw, c->s[i].pts[k].hi)); /* bands too */
        }
    }
    a->pw = CHART_W - PLOT_L - PLOT_R;
    a->xlo = (int)floor(lo);
    a->xhi = (int)ceil(hi);
    if (a->xhi - a->xlo < 2) { /* one size: show it between its neighbours */
        a->xlo--;
        a->xhi++;
    }
    /* a margin keeps the end points off the frame */
    a->xmin = a->xlo - 0.25;
    a->xmax = a->xhi + 0.25;
    /* y from 0 to a round number, ticks at 1, 2 or 5 x 10^k */
    double raw = (ymax > 0 ? ymax * 1.05 : 1) / 5, mag = pow(10, floor(log10(raw)));
    a->step = raw <= mag ? mag : raw <= 2 * mag ? 2 * mag : raw <= 5 * mag ? 5 * mag : 10 * mag;
    a->ytop = ceil((ymax > 0 ? ymax * 1.05 : 1) / a->step) * a->step;
    a->decimals = a->step >= 1 ? 0 : (int)ceil(-log10(a->step) - 1e-9);
}

/*
 * Mark the points that are the fastest backend/variant of their cell, as
 * `collprof-report best` decides it (src/output/best.c: ok cells, ties not
 * marked), when every file has the same world size.
 */
static void mark_winners(plot_t *p)
{
    size_t ncells;
    cp_best_t b;
    for (int i = 1; i < p->nfiles; i++) {
        if (p->files[i]->root.world_size != p->files[0]->root.world_size) {
            return; /* times of different world sizes are not compared */
        }
    }
    cp_best_cell_t *cells = cp_report_best_cells(p->files, p->nfiles, &ncells);
    if (cells == NULL || cp_best_compute(cells, ncells, &b) != 0) {
        free(cells);
        return; /* the marks are a convenience */
    }
    for (size_t r = 0; r < b.nrows; r++) {
        const cp_best_duel_t *d = &b.rows[r].d;
        for (size_t ci = 0; d->slow.row != NULL && !d->tie && ci < p->n; ci++) {
            chart_t *c = &p->c[ci];
            for (size_t si = 0; si < c->n; si++) {
                for (size_t k = 0; k < c->s[si].n; k++) {
                    if (c->s[si].pts[k].row == d->fast.row) {
                        c->s[si].pts[k].winner = 1;
                        c->winners++;
                    }
                }
            }
        }
    }
    cp_best_free(&b);
    free(cells);
}

static const char *op_label(const char *op)
{
    int k = cp_coll_from_name(op);
    return k >= 0 ? collprof_op_info(k)->label : op;
}

/* The title and the notes above the plot: what the rings and the bands mean. */
static void draw_title(FILE *out, const chart_t *c, const axes_t *a)
{
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", CHART_W, chart_height(c));
    fprintf(out, "<text x=\"%d\" y=\"26\" font-size=\"18\" font-weight=\"bold\">", PLOT_L);
    xml_text(out, op_label(c->op));
    fprintf(out, ": bus bandwidth against message size</text>\n");
    if (c->winners > 0) {
        fprintf(out,
                "<text x=\"%d\" y=\"26\" font-size=\"12\" text-anchor=\"end\" "
                "fill=\"#333333\">ringed: the fastest at that size (ties not ringed)</text>\n",
                PLOT_L + a->pw);
    }
    if (c->n > 0 && c->s[0].n > 0) {
        fprintf(out,
                "<text x=\"%d\" y=\"42\" font-size=\"11\" fill=\"#555555\">shaded: busBW of "
                "the ",
                PLOT_L);
        xml_text(out, c->s[0].pts[0].what);
        fprintf(out, "' times; line and points: of the mean time</text>\n");
    }
}

/* The title, the grid with its tick labels, the frame and the axis titles. */
static void draw_frame(FILE *out, const chart_t *c, const axes_t *a)
{
    draw_title(out, c, a);
    fprintf(out, "<g class=\"ygrid\" font-size=\"12\" fill=\"#333333\">\n");
    for (double y = 0; y <= a->ytop + a->step / 2; y += a->step) {
        fprintf(out,
                "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n",
                PLOT_L, PLOT_L + a->pw, ax_y(a, y), ax_y(a, y), PLOT_L - 8, ax_y(a, y) + 4,
                a->decimals, y);
    }
    fprintf(out, "</g>\n<g font-size=\"12\" fill=\"#333333\">\n");
    int every = (a->xhi - a->xlo + 11) / 12; /* at most a dozen size labels */
    for (int k = a->xlo; k <= a->xhi; k++) {
        char sz[32];
        size_label(k, sz, sizeof(sz));
        fprintf(out, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e3e3e3\"/>\n",
                ax_x(a, k), ax_x(a, k), PLOT_T, PLOT_T + PLOT_H);
        if ((k - a->xlo) % every == 0) {
            fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", ax_x(a, k),
                    PLOT_T + PLOT_H + 18, sz);
        }
    }
    fprintf(out, "</g>\n");
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#444444\"/>\n",
            PLOT_L, PLOT_T, a->pw, PLOT_H);
    fprintf(out,
            "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">message size "
            "(bytes, log2 scale)</text>\n",
            PLOT_L + a->pw / 2, PLOT_T + PLOT_H + 40);
    fprintf(out,
            "<text class=\"ytitle\" transform=\"translate(22 %d) rotate(-90)\" font-size=\"13\" "
            "text-anchor=\"middle\">busBW (GB/s)</text>\n",
            PLOT_T + PLOT_H / 2);
}

/* The values of a point for people, in its <title>: a tooltip, also without script. */
static void point_title(FILE *out, const chart_t *c, const series_t *s, const point_t *pt)
{
    char bytes[32], count[32];
    fputs("<title>", out);
    xml_text(out, op_label(c->op));
    fputs(", ", out);
    xml_text(out, s->label);
    fprintf(out, "\n%s B, %s elements of ", cp_fmt_thousands(pt->row->bytes, bytes, sizeof(bytes)),
            cp_fmt_thousands(pt->row->count, count, sizeof(count)));
    xml_text(out, pt->row->dtype);
    fprintf(out, "\ntime %.2f us (mean; ", pt->row->time_mean_us);
    xml_text(out, pt->what);
    fprintf(out, ": %.2f-%.2f us)\nbusBW %.4g GB/s (%.4g-%.4g), algBW %.4g GB/s", pt->t_lo_us,
            pt->t_hi_us, pt->busbw, pt->lo, pt->hi, pt->row->algbw_gbs);
    if (pt->winner) {
        fputs("\nthe fastest at this size", out);
    }
    fputs("</title>", out);
}

/* The band of a line: up along the p5 side, back along the p95 side. */
static void draw_band(FILE *out, const series_t *s, const axes_t *a)
{
    fprintf(out, "<polygon class=\"band\" stroke=\"none\" fill-opacity=\"0.15\" points=\"");
    for (size_t k = 0; k < 2 * s->n; k++) {
        const point_t *pt = &s->pts[k < s->n ? k : 2 * s->n - 1 - k];
        fprintf(out, "%s%.1f,%.1f", k ? " " : "", ax_x(a, log2(pt->bytes)),
                ax_y(a, k < s->n ? pt->hi : pt->lo));
    }
    fprintf(out, "\"/>\n");
}

/* Line i of chart c: its band, line, points and rings, then its legend entry. */
static void draw_series(FILE *out, const chart_t *c, size_t i, const axes_t *a)
{
    const series_t *s = &c->s[i];
    const char *colour = palette[(size_t)s->colour % N_COLOURS];
    const char *dash = dashes[(size_t)s->dash % N_DASHES];
    const char *dash_open = dash[0] ? " stroke-dasharray=\"" : "",
               *dash_close = dash[0] ? "\"" : "";
    fprintf(out, "<g class=\"series\" stroke=\"%s\" fill=\"%s\">\n", colour, colour);
    draw_band(out, s, a);
    fprintf(out, "<polyline class=\"line\" fill=\"none\" stroke-width=\"2\"%s%s%s points=\"",
            dash_open, dash, dash_close);
    for (size_t k = 0; k < s->n; k++) {
        fprintf(out, "%s%.1f,%.1f", k ? " " : "", ax_x(a, log2(s->pts[k].bytes)),
                ax_y(a, s->pts[k].busbw));
    }
    fprintf(out, "\"/>\n");
    for (size_t k = 0; k < s->n; k++) {
        const point_t *pt = &s->pts[k];
        double x = ax_x(a, log2(pt->bytes)), y = ax_y(a, pt->busbw);
        fprintf(out,
                "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" data-v=\"%.6g\" "
                "data-lo=\"%.6g\" data-hi=\"%.6g\">",
                x, y, pt->busbw, pt->lo, pt->hi);
        point_title(out, c, s, pt);
        fputs("</circle>\n", out);
        if (pt->winner) {
            fprintf(out,
                    "<circle class=\"winner\" cx=\"%.1f\" cy=\"%.1f\" r=\"7.5\" data-v=\"%.6g\" "
                    "fill=\"none\" stroke=\"#222222\" stroke-width=\"1.5\"><title>fastest at this "
                    "size: ",
                    x, y, pt->busbw);
            xml_text(out, s->label);
            fprintf(out, "</title></circle>\n");
        }
    }
    int lx = PLOT_L + (int)(i % LEGEND_COLS) * (a->pw / LEGEND_COLS);
    int ly = PLOT_T + PLOT_H + AXIS_H + (int)(i / LEGEND_COLS) * LEGEND_DY;
    fprintf(out,
            "</g>\n<g class=\"key\" data-s=\"%zu\" stroke=\"%s\" fill=\"%s\">"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" "
            "fill-opacity=\"0\" stroke=\"none\"/>"
            "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke-width=\"2\"%s%s%s/>"
            "<circle cx=\"%d\" cy=\"%d\" r=\"3.5\"/>\n",
            i, colour, colour, lx - 2, ly - LEGEND_DY / 2, a->pw / LEGEND_COLS - 8, LEGEND_DY, lx,
            lx + 28, ly, ly, dash_open, dash, dash_close, lx + 14, ly);
    fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" stroke=\"none\" fill=\"#222222\">",
            lx + 36, ly + 4);
    xml_text(out, s->label);
    fprintf(out, "</text>\n</g>\n");
}

/* One chart in a g.chart whose data-* attributes tell the page's script its geometry. */
static void draw_chart(FILE *out, const chart_t *c)
{
    axes_t a;
    chart_axes(c, &a);
    fprintf(out, "<g class=\"chart\" data-plot=\"%d %d %d %d\" data-ytop=\"%.17g\">\n", PLOT_L,
            PLOT_T, a.pw, PLOT_H, a.ytop);
    draw_frame(out, c, &a);
    for (size_t i = 0; i < c->n; i++) {
        draw_series(out, c, i, &a);
    }
    fputs("</g>\n", out);
}

static void describe_files(FILE *out, const plot_t *p, const char *open, const char *close)
{
    for (int i = 0; i < p->nfiles; i++) {
        const cp_report_file_t *f = p->files[i];
        fputs(open, out);
        xml_text(out, base_name(f->path));
        fprintf(out, ": %lld ranks on %lld node(s), created ", f->root.world_size,
                f->root.node_count);
        xml_text(out, f->root.created[0] ? f->root.created : "?");
        if (f->root.tag[0]) {
            fputs(", tag ", out);
            xml_text(out, f->root.tag);
        }
        if (strcmp(f->root.status, "complete") != 0) {
            fputs(" (incomplete run)", out);
        }
        fputs(close, out);
    }
}

/* The link sweep heatmaps of every file: one <svg> each (html), or <g>s from y down (svg);
 * returns y below the last (out NULL: only that). */
static int draw_maps(FILE *out, const plot_t *p, int html, int y)
{
    for (int i = 0; i < p->nfiles; i++) {
        const cp_report_file_t *f = p->files[i];
        int h = cp_report_links_map_height(f);
        for (int k = 0; k < cp_report_links_nmaps(f); k++) {
            if (out == NULL) {
                y += h + 16;
                continue;
            }
            if (html) {
                fprintf(out,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                        "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" role=\"img\">\n",
                        CHART_W, h, CHART_W, h);
            } else {
                fprintf(out, "<g transform=\"translate(0 %d)\">\n", y);
            }
            cp_report_links_map(out, f, k, CHART_W);
            fputs(html ? "</svg>\n" : "</g>\n", out);
            y += h + 16;
        }
    }
    return y;
}

static void write_html(FILE *out, const void *data)
{
    const plot_t *p = data;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>collprof busBW report</title>\n"
          "<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}"
          "svg{display:block;margin:16px 0;background:#fff;border:1px solid #ddd}"
          "li{margin:2px 0}.key{cursor:pointer}.key:focus{outline:1px dotted #444}"
          ".cp-nobands .band,.cp-norings .winner{display:none}"
          "#cp-controls label{margin-right:18px}"
          "#cp-tip{position:fixed;max-width:460px;padding:6px 8px;background:#fff;"
          "border:1px solid #888;border-radius:3px;font-size:12px;white-space:pre-line;"
          "pointer-events:none;box-shadow:0 1px 4px rgba(0,0,0,.25)}</style>\n"
          "</head>\n<body>\n"
          "<h1>collprof busBW report</h1>\n<ul>\n",
          out);
    describe_files(out, p, "<li>", "</li>\n");
    fputs("</ul>\n", out);
    if (p->n == 0 && draw_maps(NULL, p, 1, 0) == 0) { /* no chart and no heatmap */
        fputs("<p>No measured cell with a non-zero size: nothing to plot.</p>\n", out);
    }
    for (size_t i = 0; i < p->n; i++) {
        int h = chart_height(&p->c[i]);
        fprintf(out,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" role=\"img\">\n",
                CHART_W, h, CHART_W, h);
        draw_chart(out, &p->c[i]);
        fputs("</svg>\n", out);
    }
    draw_maps(out, p, 1, 0);
    fprintf(out, "<script>\n%s</script>\n</body>\n</html>\n", cp_report_plot_script);
}

static void write_svg(FILE *out, const void *data)
{
    const plot_t *p = data;
    int head = 40 + 18 * p->nfiles, total = head;
    for (size_t i = 0; i < p->n; i++) {
        total += chart_height(&p->c[i]) + 16;
    }
    total = draw_maps(NULL, p, 0, total);
    fprintf(out,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n"
            "<text x=\"16\" y=\"28\" font-size=\"22\" font-weight=\"bold\">collprof busBW "
            "report</text>\n",
            CHART_W, total, CHART_W, total);
    for (int i = 0; i < p->nfiles; i++) {
        plot_t one = *p;
        one.files = &p->files[i];
        one.nfiles = 1;
        fprintf(out, "<text x=\"16\" y=\"%d\" font-size=\"12\">", 50 + 18 * i);
        describe_files(out, &one, "", "");
        fputs("</text>\n", out);
    }
    int y = head;
    for (size_t i = 0; i < p->n; i++) {
        fprintf(out, "<g transform=\"translate(0 %d)\">\n", y);
        draw_chart(out, &p->c[i]);
        fputs("</g>\n", out);
        y += chart_height(&p->c[i]) + 16;
    }
    draw_maps(out, p, 0, y);
    fputs("</svg>\n", out);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

typedef struct settings {
    const char *output;
    int html;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    (void)k;
    ((settings_t *)ctx)->output = val;
    return 0;
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    if (s->output == NULL) {
        return "--out is required";
    }
    s->html = has_suffix(s->output, ".html") || has_suffix(s->output, ".htm");
    return !s->html && !has_suffix(s->output, ".svg") ? "--out must end in .html or .svg" : NULL;
}

static void free_plot(plot_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        for (size_t j = 0; j < p->c[i].n; j++) {
            free(p->c[i].s[j].pts);
        }
        free(p->c[i].s);
    }
    free(p->c);
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    plot_t p;
    memset(&p, 0, sizeof(p));
    p.files = files;
    p.nfiles = n;
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            const collprof_result_row_t *row = &files[i]->rows[r];
            /* a size of 0 (barrier) has no place on a log axis, nor a bandwidth */
            if (cp_report_measured(row) && row->bytes > 0) {
                add_row(&p, i, row, &files[i]->cells[r]);
            }
        }
    }
    for (size_t i = 0; i < p.n; i++) {
        label_series(&p, &p.c[i]);
    }
    mark_winners(&p);
    int rc = cp_report_write(s->output, s->html ? write_html : write_svg, &p);
    free_plot(&p);
    return rc;
}

int cp_report_cmd_plot(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0}, {"out", 'o', 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"plot", usage, opts, option, check, CP_REPORT_FILES_ALL,
                                        run};
    settings_t s = {NULL, 0};
    return cp_report_run(&cmd, &s, argc, argv);
}
