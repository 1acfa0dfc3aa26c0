/*
 * `plot FILE... --out report.html|report.svg`: busBW against message size.
 *
 * One chart per operation on a log2 size axis (collprof's sizes are powers
 * of two).  The default view (--variants best) draws one line per backend
 * (and per file, when several are given): at each size the busBW of its
 * fastest variant there, the variant named in the point's <title>; the
 * other view (--variants all) one line per backend/variant.  Around each
 * line a band spans the busBW of the p5 to the p95 of the per-iteration
 * times; the fastest backend/variant of each cell is ringed.  Where an
 * operation has two backends or more, a ratio chart divides each
 * backend's fastest busBW by the reference backend's (--reference; the
 * first file's first backend by default), per size, around a marked 1.0.
 * A link sweep (collprof --link-sweep) gets one heatmap per backend of its
 * node x node bandwidth and a screen (collprof --screen) one of its pairs'
 * scores, the suspects marked as `links` and `screen` judge them
 * (links_map.c, screen_map.c).
 *
 * The output is plain SVG, inline in an HTML page or standalone, with each
 * point's values in its <title>: no font, stylesheet or script from the
 * network, so it can be mailed, attached to a ticket or opened on an
 * air-gapped cluster.  The HTML page holds both views of the busBW charts
 * (the other one hidden) and a small script of its own (plot_script.c):
 * a switch between the views, legend entries that hide and show their
 * line, a log busBW axis, switches for the bands and rings, and tooltips
 * at once; without it the page shows the --variants view statically.  The
 * standalone SVG has no script and holds the --variants view.
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

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report plot FILE|DIR... --out report.html|report.svg\n"
               "                           [--variants best|all] [--reference BACKEND]\n"
               "Draw busBW (GB/s) against message size (bytes, log2 axis): one chart per\n"
               "operation, one line per backend (and per file when several are given),\n"
               "at each size its fastest variant there, named in the point's tooltip;\n"
               "or, with --variants all, one line per backend/variant.  Per operation\n"
               "with two backends or more, a ratio chart: each backend's fastest busBW\n"
               "over the reference backend's, per size, the 1.0 line marked.  For a link\n"
               "sweep (collprof --link-sweep) a heatmap of the node x node bandwidth per\n"
               "backend, for a screen (collprof --screen) one of its pairs' scores; slow\n"
               "links framed in red, suspect nodes outlined and named.\n"
               "Where files have one world size, the fastest backend/variant of each\n"
               "cell is ringed (as 'collprof-report best' decides it; ties are not).\n"
               "The shaded band around a line spans the busBW of the p5 to the p95 of\n"
               "the per-iteration times; pointing at a point shows its values.\n"
               "OUT ending in .html gives a page with inline SVG and a small script of\n"
               "its own: switch between the fastest-variant and every-variant views,\n"
               "click a legend entry to hide or show its line, switch the busBW axis\n"
               "to log, the bands and the rings off (without script the --variants\n"
               "view, static).  OUT ending in .svg gives a single static SVG image of\n"
               "the --variants view.  Either is self-contained: nothing is fetched.\n"
               "\n"
               "  -o, --out OUT        the file to write (required)\n"
               "  --variants best|all  best: a line per backend, its fastest variant at\n"
               "                       each size (default); all: a line per variant\n"
               "  --reference BACKEND  the ratio charts' reference (default: the backend\n"
               "                       of the first file's first measured cell)\n"
               "  -h, --help           this help\n"
               "\n"
               "Exit status: 0 success, 2 bad usage or a file that cannot be read.\n");
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

static void add_row(charts_t *p, int file, const collprof_result_row_t *r,
                    const cp_report_cell_t *cell)
{
    size_t ci = 0, si = 0;
    while (ci < p->n && strcmp(p->c[ci].op, r->op) != 0) {
        ci++;
    }
    if (ci == p->n) {
        p->c = plot_grow(p->c, &p->cap, p->n, sizeof(*p->c));
        memset(&p->c[p->n], 0, sizeof(*p->c));
        snprintf(p->c[p->n].op, sizeof(p->c[p->n].op), "%s", r->op);
        p->n++;
    }
    chart_t *c = &p->c[ci];
    while (si < c->n && !(c->s[si].file == file && plot_same_line(c->s[si].key, r, LINE_EXACT))) {
        si++;
    }
    if (si == c->n) {
        c->s = plot_grow(c->s, &c->cap, c->n, sizeof(*c->s));
        memset(&c->s[c->n], 0, sizeof(*c->s));
        c->s[c->n].file = file;
        c->s[c->n].key = r;
        c->n++;
    }
    series_t *s = &c->s[si];
    s->pts = plot_grow(s->pts, &s->cap, s->n, sizeof(*s->pts));
    point_t *pt = &s->pts[s->n++];
    memset(pt, 0, sizeof(*pt));
    pt->bytes = (double)r->bytes;
    pt->busbw = r->busbw_gbs;
    pt->row = r;
    point_band(cell, pt);
}

/* One chart as an inline <svg> of the page. */
static void html_chart(FILE *out, const chart_t *c)
{
    int h = plot_chart_height(c);
    fprintf(out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" role=\"img\">\n",
            CHART_W, h, CHART_W, h);
    plot_draw_chart(out, c);
    fputs("</svg>\n", out);
}

/* A section of the page: a view's charts under a heading; hidden, shown by the script. */
static void html_view(FILE *out, const char *id, const char *heading, const charts_t *v, int hidden)
{
    if (v->n == 0) {
        return;
    }
    fprintf(out, "<section id=\"%s\" class=\"cp-view\"%s>\n<h2>%s</h2>\n", id,
            hidden ? " hidden" : "", heading);
    for (size_t i = 0; i < v->n; i++) {
        html_chart(out, &v->c[i]);
    }
    fputs("</section>\n", out);
}

static void html_maps(FILE *out, const plot_t *p, const char *id, const char *heading, int which)
{
    if (plot_draw_maps(NULL, p, 1, 0, which) == 0) {
        return;
    }
    fprintf(out, "<section id=\"%s\" class=\"cp-view\">\n<h2>%s</h2>\n", id, heading);
    plot_draw_maps(out, p, 1, 0, which);
    fputs("</section>\n", out);
}

static void write_html(FILE *out, const void *data)
{
    const plot_t *p = data;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<title>collprof busBW report</title>\n"
          "<style>body{font-family:sans-serif;margin:24px;color:#222;background:#fafafa}"
          "h2{font-size:17px;margin:20px 0 4px}"
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
    plot_describe_files(out, p, "<li>", "</li>\n");
    fputs("</ul>\n", out);
    if (p->all.n == 0 && plot_draw_maps(NULL, p, 1, 0, MAPS_LINKS) == 0 &&
        plot_draw_maps(NULL, p, 1, 0, MAPS_SCREEN) == 0) { /* no chart and no heatmap */
        fputs("<p>No measured cell with a non-zero size: nothing to plot.</p>\n", out);
    }
    html_view(out, "cp-best", "busBW: each backend's fastest variant at each size", &p->best,
              p->show_all);
    html_view(out, "cp-all", "busBW: every backend/variant", &p->all, !p->show_all);
    html_view(out, "cp-ratio", "Backend vs backend: busBW ratio of the fastest variants", &p->ratio,
              0);
    html_maps(out, p, "cp-links", "Link sweep: bandwidth between nodes", MAPS_LINKS);
    html_maps(out, p, "cp-screen", "Screen: the pairs measured and the verdict", MAPS_SCREEN);
    fprintf(out, "<script>\n%s</script>\n</body>\n</html>\n", cp_report_plot_script);
}

/* The charts of one view from y down; returns y below the last (out NULL: only that). */
static int svg_charts(FILE *out, const charts_t *v, int y)
{
    for (size_t i = 0; i < v->n; i++) {
        if (out != NULL) {
            fprintf(out, "<g transform=\"translate(0 %d)\">\n", y);
            plot_draw_chart(out, &v->c[i]);
            fputs("</g>\n", out);
        }
        y += plot_chart_height(&v->c[i]) + 16;
    }
    return y;
}

static void write_svg(FILE *out, const void *data)
{
    const plot_t *p = data;
    const charts_t *view = p->show_all ? &p->all : &p->best;
    int head = 40 + 18 * p->nfiles;
    int total = svg_charts(NULL, &p->ratio, svg_charts(NULL, view, head));
    total = plot_draw_maps(NULL, p, 0, plot_draw_maps(NULL, p, 0, total, MAPS_LINKS), MAPS_SCREEN);
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
        plot_describe_files(out, &one, "", "");
        fputs("</text>\n", out);
    }
    int y = svg_charts(out, &p->ratio, svg_charts(out, view, head));
    plot_draw_maps(out, p, 0, plot_draw_maps(out, p, 0, y, MAPS_LINKS), MAPS_SCREEN);
    fputs("</svg>\n", out);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

static const char *const variant_views[] = {"best", "all"};

typedef struct settings {
    const char *output;
    int html;
    int show_all;
    const char *ref;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 2) {
        s->show_all =
            cp_report_parse_choice("plot", "--variants", val, variant_views, 2, "best or all");
        return s->show_all < 0 ? -1 : 0;
    }
    if (k == 3) {
        s->ref = val;
    } else {
        s->output = val;
    }
    return 0;
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    if (s->output == NULL) {
        return "--out is required";
    }
    if (s->ref != NULL && s->ref[0] == '\0') {
        return "--reference: a backend name, not empty";
    }
    s->html = has_suffix(s->output, ".html") || has_suffix(s->output, ".htm");
    return !s->html && !has_suffix(s->output, ".svg") ? "--out must end in .html or .svg" : NULL;
}

/* 1 when some measured cell of the files is of backend */
static int has_backend(cp_report_file_t **files, int n, const char *backend)
{
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            if (!strcmp(files[i]->rows[r].backend, backend)) {
                return 1;
            }
        }
    }
    return 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    if (s->ref != NULL && !has_backend(files, n, s->ref)) {
        char shown[64];
        cp_text_sanitize(s->ref, shown, sizeof(shown));
        cp_report_error("plot: --reference %s: no cell of that backend in the files", shown);
        return CP_REPORT_EXIT_BAD;
    }
    plot_t p;
    memset(&p, 0, sizeof(p));
    p.files = files;
    p.nfiles = n;
    p.show_all = s->show_all;
    p.ref = s->ref;
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            const collprof_result_row_t *row = &files[i]->rows[r];
            /* a size of 0 (barrier) has no place on a log axis, nor a bandwidth */
            if (cp_report_measured(row) && row->bytes > 0) {
                add_row(&p.all, i, row, &files[i]->cells[r]);
            }
        }
    }
    for (size_t i = 0; i < p.all.n; i++) {
        plot_label_chart(&p, &p.all.c[i], 1);
    }
    plot_build_best(&p);
    plot_build_ratio(&p);
    plot_mark_winners(&p);
    int rc = cp_report_write(s->output, s->html ? write_html : write_svg, &p);
    plot_free_charts(&p.all);
    plot_free_charts(&p.best);
    plot_free_charts(&p.ratio);
    return rc;
}

int cp_report_cmd_plot(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"out", 'o', 1}, {"variants", 0, 1}, {"reference", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"plot", usage, opts, option, check, CP_REPORT_FILES_ALL,
                                        run};
    settings_t s = {NULL, 0, 0, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
