/*
 * One chart of `collprof-report plot` in SVG (plot_int.h): the axes on a log2 size axis, the
 * frame and ticks, each series' p5-p95 band, line and points with their values in <title>,
 * the fastest of each cell ringed; a ratio chart on a log2 ratio axis around its marked 1.0;
 * the files' description; the heatmaps after the charts.
 */
#include "config.h"

#include "report/plot/plot_int.h"

#include "colls/colls.h"
#include "base/util.h"
#include "format/format.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int plot_chart_height(const chart_t *c)
{
    int rows = (int)((c->n + LEGEND_COLS - 1) / LEGEND_COLS);
    return PLOT_T + PLOT_H + AXIS_H + rows * LEGEND_DY + 12;
}

/* The axes of one chart: x is log2 of the size in bytes, y busBW from 0. */
typedef struct axes {
    int pw;       /* plot width */
    int xlo, xhi; /* the first and last size tick (log2 bytes) */
    double xmin, xmax;
    double ytop, step; /* y from 0 to ytop, ticks every step; a ratio: log2 from -ytop */
    int decimals;      /* of the y tick labels */
    int ratio;         /* a ratio chart: y is log2 of the ratio, 1.0 in the middle */
} axes_t;

static double ax_x(const axes_t *a, double v)
{
    return PLOT_L + (v - a->xmin) / (a->xmax - a->xmin) * a->pw;
}

static double ax_y(const axes_t *a, double v)
{
    if (a->ratio) {
        return PLOT_T + PLOT_H / 2.0 - log2(v > 0 ? v : 1e-300) / a->ytop * (PLOT_H / 2.0);
    }
    return PLOT_T + PLOT_H - v / a->ytop * PLOT_H;
}

static void chart_axes(const chart_t *c, axes_t *a)
{
    double lo = INFINITY, hi = -INFINITY, ymax = 0, span = 0.5;
    for (size_t i = 0; i < c->n; i++) {
        for (size_t k = 0; k < c->s[i].n; k++) {
            double lx = log2(c->s[i].pts[k].bytes);
            lo = lx < lo ? lx : lo;
            hi = lx > hi ? lx : hi;
            ymax = fmax(ymax, fmax(c->s[i].pts[k].busbw, c->s[i].pts[k].hi)); /* bands too */
            span = fmax(span, fabs(log2(c->s[i].pts[k].busbw)) * 1.1);
        }
    }
    a->ratio = c->kind == CHART_RATIO;
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
    if (a->ratio) { /* symmetric around 1.0: twice as fast as far above as half as fast below */
        a->ytop = fmin(span, 20);
    }
}

/*
 * Mark the points that are the fastest backend/variant of their cell, as
 * `collprof-report best` decides it (src/format/best.c: ok cells, ties not
 * marked), when every file has the same world size.
 */
static void mark_view(charts_t *v, const cp_best_t *b)
{
    for (size_t r = 0; r < b->nrows; r++) {
        const cp_best_duel_t *d = &b->rows[r].d;
        for (size_t ci = 0; d->slow.row != NULL && !d->tie && ci < v->n; ci++) {
            chart_t *c = &v->c[ci];
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
}

void plot_mark_winners(plot_t *p)
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
    mark_view(&p->all, &b);
    mark_view(&p->best, &b);
    cp_best_free(&b);
    free(cells);
}

const char *plot_op_label(const char *op)
{
    int k = cp_coll_from_name(op);
    return k >= 0 ? collprof_op_info(k)->label : op;
}

/* The title and the notes above the plot: what the rings and the bands mean. */
static void draw_title(FILE *out, const chart_t *c, const axes_t *a)
{
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", CHART_W,
            plot_chart_height(c));
    fprintf(out, "<text x=\"%d\" y=\"26\" font-size=\"18\" font-weight=\"bold\">", PLOT_L);
    xml_text(out, plot_op_label(c->op));
    if (a->ratio) {
        fputs(": busBW of each backend's fastest variant / ", out);
        xml_text(out, c->ref);
        fputs("'s</text>\n", out);
        fprintf(out,
                "<text x=\"%d\" y=\"42\" font-size=\"11\" fill=\"#555555\">above 1.0: "
                "faster than ",
                PLOT_L);
        xml_text(out, c->ref);
        fputs(" at that size (log scale: 2x as far above 1.0 as 0.5x below)</text>\n", out);
        return;
    }
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

/* One y tick of a ratio chart: its grid line and label ("1/16x" below 0.5, from a power of
 * two). */
static void ratio_tick(FILE *out, const axes_t *a, double v)
{
    char label[32];
    if (v < 0.5 && fabs(log2(v) - round(log2(v))) < 1e-9) {
        snprintf(label, sizeof(label), "1/%gx", 1 / v);
    } else {
        snprintf(label, sizeof(label), "%gx", v);
    }
    fprintf(out,
            "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
            PLOT_L, PLOT_L + a->pw, ax_y(a, v), ax_y(a, v), PLOT_L - 8, ax_y(a, v) + 4, label);
}

/* The y grid of a ratio chart: powers of two, or steps of 0.1 and so on near 1.0; then the
 * 1.0 line, marked, with the reference's name. */
static void ratio_grid(FILE *out, const chart_t *c, const axes_t *a)
{
    static const double fine[] = {0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2};
    if (a->ytop >= 1.5) {
        int top = (int)floor(a->ytop), every = top > 4 ? 2 : 1;
        for (int k = -top; k <= top; k++) {
            if (k % every == 0) {
                ratio_tick(out, a, exp2(k));
            }
        }
    } else {
        for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
            if (fabs(log2(fine[i])) <= a->ytop) {
                ratio_tick(out, a, fine[i]);
            }
        }
    }
    fprintf(out,
            "<line class=\"one\" x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#222222\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" font-weight=\"bold\">1.0 = ",
            PLOT_L, PLOT_L + a->pw, ax_y(a, 1), ax_y(a, 1), PLOT_L + a->pw - 6, ax_y(a, 1) - 6);
    xml_text(out, c->ref);
    fputs("</text>\n", out);
}

/* The title, the grid with its tick labels, the frame and the axis titles. */
static void draw_frame(FILE *out, const chart_t *c, const axes_t *a)
{
    draw_title(out, c, a);
    fprintf(out, "<g class=\"ygrid\" font-size=\"12\" fill=\"#333333\">\n");
    if (a->ratio) {
        ratio_grid(out, c, a);
    }
    for (double y = 0; !a->ratio && y <= a->ytop + a->step / 2; y += a->step) {
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
            "text-anchor=\"middle\">%s",
            PLOT_T + PLOT_H / 2, a->ratio ? "busBW / " : "busBW (GB/s)");
    if (a->ratio) {
        xml_text(out, c->ref);
        fputs("'s (log scale)", out);
    }
    fputs("</text>\n", out);
}

/* A ratio point's values: the two rows it divides. */
static void ratio_title(FILE *out, const point_t *pt)
{
    const collprof_result_row_t *r = pt->row, *q = pt->ref;
    fprintf(out, "\n%.3gx the busBW of ", pt->busbw);
    xml_text(out, q->backend);
    fputs("\n", out);
    xml_text(out, r->backend);
    fputc('/', out);
    xml_text(out, r->variant);
    fprintf(out, " %.4g GB/s (%.2f us) vs ", r->busbw_gbs, r->time_mean_us);
    xml_text(out, q->backend);
    fputc('/', out);
    xml_text(out, q->variant);
    fprintf(out, " %.4g GB/s (%.2f us)", q->busbw_gbs, q->time_mean_us);
}

/* The values of a point for people, in its <title>: a tooltip, also without script. */
static void point_title(FILE *out, const chart_t *c, const series_t *s, const point_t *pt)
{
    char bytes[32], count[32];
    fputs("<title>", out);
    xml_text(out, plot_op_label(c->op));
    fputs(", ", out);
    xml_text(out, s->label);
    fprintf(out, "\n%s B, %s elements of ", cp_fmt_thousands(pt->row->bytes, bytes, sizeof(bytes)),
            cp_fmt_thousands(pt->row->count, count, sizeof(count)));
    xml_text(out, pt->row->dtype);
    if (c->kind == CHART_RATIO) {
        ratio_title(out, pt);
        fputs("</title>", out);
        return;
    }
    if (pt->nvariants > 0) {
        fputs("\nvariant ", out);
        xml_text(out, pt->row->variant);
        if (pt->nvariants > 1) {
            fprintf(out, ": the fastest of the %d measured at this size", pt->nvariants);
        }
    }
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
    if (!a->ratio) {
        draw_band(out, s, a);
    }
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
void plot_draw_chart(FILE *out, const chart_t *c)
{
    axes_t a;
    chart_axes(c, &a);
    /* a ratio chart is no .chart: the page's log busBW axis is not for it */
    fprintf(out, "<g class=\"%s\" data-plot=\"%d %d %d %d\" data-ytop=\"%.17g\">\n",
            a.ratio ? "ratio" : "chart", PLOT_L, PLOT_T, a.pw, PLOT_H, a.ytop);
    draw_frame(out, c, &a);
    for (size_t i = 0; i < c->n; i++) {
        draw_series(out, c, i, &a);
    }
    fputs("</g>\n", out);
}

void plot_describe_files(FILE *out, const plot_t *p, const char *open, const char *close)
{
    for (int i = 0; i < p->nfiles; i++) {
        const cp_report_file_t *f = p->files[i];
        fputs(open, out);
        xml_text(out, plot_base_name(f->path));
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

/* The link sweep's heatmaps (which: MAPS_LINKS) or the screens' (MAPS_SCREEN) of every file:
 * one <svg> each (html), or <g>s from y down (svg); returns y below the last (out NULL: only
 * that). */
int plot_draw_maps(FILE *out, const plot_t *p, int html, int y, int which)
{
    for (int i = 0; i < p->nfiles; i++) {
        const cp_report_file_t *f = p->files[i];
        int screen = which == MAPS_SCREEN;
        int h = screen ? cp_report_screen_map_height(f, CHART_W)
                       : cp_report_links_map_height(f, CHART_W);
        int n = screen ? cp_report_screen_nmaps(f) : cp_report_links_nmaps(f);
        for (int k = 0; k < n; k++) {
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
            if (screen) {
                cp_report_screen_map(out, f, k, CHART_W);
            } else {
                cp_report_links_map(out, f, k, CHART_W);
            }
            fputs(html ? "</svg>\n" : "</g>\n", out);
            y += h + 16;
        }
    }
    return y;
}
