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

#include "report/plot_int.h"

#include "colls/colls.h"
#include "core/util.h"
#include "output/format.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

const char *plot_base_name(const char *path)
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
        char plot_op_label[256];
        cp_format_label(s->key, plot_op_label, sizeof(plot_op_label));
        const char *extra = strstr(plot_op_label, " (");
        snprintf(s->label, sizeof(s->label), "%s/%s%s%s%s%s", s->key->backend, s->key->variant,
                 extra ? extra : "", dtypes ? ", " : "", dtypes ? s->key->dtype : "",
                 p->nfiles > 1 ? ", " : "");
        if (p->nfiles > 1) {
            strncat(s->label, plot_base_name(p->files[s->file]->path),
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
    plot_describe_files(out, p, "<li>", "</li>\n");
    fputs("</ul>\n", out);
    if (p->n == 0 && plot_draw_maps(NULL, p, 1, 0) == 0) { /* no chart and no heatmap */
        fputs("<p>No measured cell with a non-zero size: nothing to plot.</p>\n", out);
    }
    for (size_t i = 0; i < p->n; i++) {
        int h = plot_chart_height(&p->c[i]);
        fprintf(out,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" role=\"img\">\n",
                CHART_W, h, CHART_W, h);
        plot_draw_chart(out, &p->c[i]);
        fputs("</svg>\n", out);
    }
    plot_draw_maps(out, p, 1, 0);
    fprintf(out, "<script>\n%s</script>\n</body>\n</html>\n", cp_report_plot_script);
}

static void write_svg(FILE *out, const void *data)
{
    const plot_t *p = data;
    int head = 40 + 18 * p->nfiles, total = head;
    for (size_t i = 0; i < p->n; i++) {
        total += plot_chart_height(&p->c[i]) + 16;
    }
    total = plot_draw_maps(NULL, p, 0, total);
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
    int y = head;
    for (size_t i = 0; i < p->n; i++) {
        fprintf(out, "<g transform=\"translate(0 %d)\">\n", y);
        plot_draw_chart(out, &p->c[i]);
        fputs("</g>\n", out);
        y += plot_chart_height(&p->c[i]) + 16;
    }
    plot_draw_maps(out, p, 0, y);
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
    plot_mark_winners(&p);
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
