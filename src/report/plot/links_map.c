/*
 * The link sweep's heatmaps for `collprof-report plot` (report.h, links_int.h): one node x
 * node bandwidth matrix per backend in SVG, each cell's value in its <title>, the slow links
 * framed in red and the suspect nodes outlined and named, as `collprof-report links` judges
 * them (cp_links_analyse, threshold 0.5, the fastest iteration); and the node x node grid
 * that the screen's heatmaps (screen_map.c) are drawn on too.
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

#define MAP_CELL  56 /* px per node, at most */
#define MAP_TOP   72
#define MAP_LEFT  90
#define MAP_RIGHT 210 /* the marks' labels */
#define MAP_FOOT  72  /* three lines under the matrix */
#define RED       "#d62728"
#define GREY      "#666666"

/* ---- the node x node grid ------------------------------------------------------------- */

void cp_map_geom(map_geom_t *g, int n, int width)
{
    g->n = n;
    g->cell = n > 0 ? (width - MAP_LEFT - MAP_RIGHT) / n : MAP_CELL;
    g->cell = g->cell > MAP_CELL ? MAP_CELL : g->cell < 6 ? 6 : g->cell;
    g->left = MAP_LEFT;
    g->top = MAP_TOP;
    g->width = width;
}

int cp_map_height(int n, int width)
{
    map_geom_t g;
    cp_map_geom(&g, n, width);
    return MAP_TOP + n * g.cell + MAP_FOOT;
}

void cp_map_colour(double x, char *buf, size_t len)
{
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    snprintf(buf, len, "#%02x%02x%02x", (int)(255 - 215 * x), (int)(245 - 145 * x),
             (int)(240 - 60 * x));
}

void cp_map_title(FILE *out, const map_geom_t *g, const char *title, const char *sub)
{
    fprintf(out,
            "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n"
            "<text x=\"16\" y=\"28\" font-size=\"18\" font-weight=\"bold\">",
            g->width, cp_map_height(g->n, g->width));
    cp_report_xml_text(out, title);
    fputs("</text>\n", out);
    if (sub != NULL) {
        fputs("<text x=\"16\" y=\"46\" font-size=\"12\" fill=\"#333333\">", out);
        cp_report_xml_text(out, sub);
        fputs("</text>\n", out);
    }
}

void cp_map_labels(FILE *out, const map_geom_t *g, const char *const *names, const int *mark)
{
    int every = g->cell >= 10 ? 1 : (10 + g->cell - 1) / g->cell;
    int size = g->cell >= 14 ? 12 : g->cell - 2 > 7 ? g->cell - 2 : 7;
    for (int a = 0; a < g->n; a++) {
        int m = mark != NULL ? mark[a] : MARK_NONE;
        if (a % every != 0 && m == MARK_NONE) {
            continue;
        }
        const char *style = m == MARK_FLAGGED   ? " fill=\"" RED "\" font-weight=\"bold\""
                            : m == MARK_CLEARED ? " fill=\"" GREY "\" font-weight=\"bold\""
                                                : "";
        fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"end\"%s>", g->left - 8,
                g->top + a * g->cell + g->cell / 2 + size / 3, size, style);
        cp_report_xml_text(out, names[a]);
        fprintf(out, "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"%d\" text-anchor=\"middle\"%s>",
                g->left + a * g->cell + g->cell / 2, g->top - 8, size, style);
        cp_report_xml_text(out, names[a]);
        fprintf(out, "</text>\n");
    }
}

static const char *mark_stroke(int mark, int *width, const char **dash)
{
    *width = mark == MARK_NONE ? 1 : 3;
    *dash = mark == MARK_CLEARED ? " stroke-dasharray=\"5 3\"" : "";
    return mark == MARK_FLAGGED ? RED : mark == MARK_CLEARED ? GREY : "#ffffff";
}

void cp_map_cell(FILE *out, const map_geom_t *g, int a, int b, const char *fill, int mark,
                 const char *text, int light_text)
{
    int x = g->left + b * g->cell, y = g->top + a * g->cell, w;
    const char *dash, *stroke = mark_stroke(mark, &w, &dash);
    fprintf(out,
            "<g class=\"cell%s\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
            "stroke=\"%s\" stroke-width=\"%d\"%s/>",
            mark == MARK_FLAGGED ? " slow" : "", x, y, g->cell - 2, g->cell - 2, fill, stroke, w,
            dash);
    if (g->cell >= 40 && text != NULL) {
        fprintf(out,
                "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" fill=\"%s\" "
                "pointer-events=\"none\">",
                x + g->cell / 2 - 1, y + g->cell / 2 + (mark != MARK_NONE ? 0 : 4),
                light_text ? "#ffffff" : "#222222");
        cp_report_xml_text(out, text);
        fputs("</text>", out);
        if (mark != MARK_NONE) { /* its label, in the cell */
            fprintf(out,
                    "<text x=\"%d\" y=\"%d\" font-size=\"10\" font-weight=\"bold\" "
                    "text-anchor=\"middle\" fill=\"%s\" pointer-events=\"none\">%s</text>",
                    x + g->cell / 2 - 1, y + g->cell / 2 + 14, light_text ? "#ffffff" : stroke,
                    mark == MARK_FLAGGED ? "slow" : "cleared");
        }
    }
}

void cp_map_empty(FILE *out, const map_geom_t *g, int a, int b)
{
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eeeeee\" "
            "stroke=\"#ffffff\" stroke-width=\"1\"/>\n",
            g->left + b * g->cell, g->top + a * g->cell, g->cell - 2, g->cell - 2);
}

void cp_map_mark_node(FILE *out, const map_geom_t *g, int i, int mark, const char *label)
{
    int w, n = g->n, c = g->cell;
    const char *dash, *stroke = mark_stroke(mark, &w, &dash);
    fprintf(out,
            "<g class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%d\"%s>"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/></g>\n",
            mark == MARK_FLAGGED ? "suspect" : "cleared", stroke, w, dash, g->left - 4,
            g->top + i * c - 3, n * c + 5, c + 4, g->left + i * c - 3, g->top - 4, c + 4,
            n * c + 5);
    fprintf(out,
            "<text class=\"mark-label\" x=\"%d\" y=\"%d\" font-size=\"12\" font-weight=\"bold\" "
            "fill=\"%s\">&#8592; ",
            g->left + n * c + 8, g->top + i * c + c / 2 + 4, stroke);
    cp_report_xml_text(out, label);
    fputs("</text>\n", out);
}

void cp_map_foot(FILE *out, const map_geom_t *g, int k, const char *text)
{
    fprintf(out, "<text x=\"16\" y=\"%d\" font-size=\"12\" fill=\"#333333\">",
            g->top + g->n * g->cell + 22 + 16 * k);
    cp_report_xml_text(out, text);
    fputs("</text>\n", out);
}

/* ---- the link sweep ------------------------------------------------------------------- */

int cp_report_has_screen(const cp_report_file_t *f, const char *backend)
{
    for (size_t i = 0; i < f->nscreen; i++) {
        if (!strcmp(f->screen[i].backend, backend)) {
            return 1;
        }
    }
    return 0;
}

/* 1 when rows[i] is the first of a backend of the link sweep (not of a screen) */
static int sweep_backend(const cp_report_file_t *f, size_t i)
{
    return cp_links_first_of_backend(f->links, i) && !cp_report_has_screen(f, f->links[i].backend);
}

int cp_report_links_nmaps(const cp_report_file_t *f)
{
    int k = 0;
    for (size_t i = 0; i < f->nlinks; i++) {
        k += sweep_backend(f, i);
    }
    return k;
}

int cp_report_links_map_height(const cp_report_file_t *f, int width)
{
    nodes_t nd;
    int n = cp_links_load_nodes(f, &nd) == 0 ? nd.n : 0;
    free(nd.names);
    return cp_map_height(n, width);
}

/* What a heatmap shows of one backend: its matrices (n x n) and their message sizes. */
typedef struct map {
    const char *backend;
    const nodes_t *nd;
    double *best, *mean, *lat; /* GB/s of the fastest iteration, of the mean time; us */
    unsigned long long bw_bytes, lat_bytes;
} map_t;

/* The values of link (a, b) for people, in the cell's <title>. */
static void map_title(FILE *out, const map_t *mp, int a, int b, int slow)
{
    int n = mp->nd->n;
    fputs("<title>", out);
    cp_report_xml_text(out, mp->nd->names[a]);
    fputs(" - ", out);
    cp_report_xml_text(out, mp->nd->names[b]);
    fputs(", ", out);
    cp_report_xml_text(out, mp->backend);
    fprintf(out, "\n%.4g GB/s of the fastest iteration, %.4g GB/s of the mean time (%llu B)",
            mp->best[a * n + b], mp->mean[a * n + b], mp->bw_bytes);
    if (mp->lat[a * n + b] > 0) {
        fprintf(out, "\nlatency %.2f us (mean, %llu B)", mp->lat[a * n + b], mp->lat_bytes);
    }
    if (slow) {
        fputs("\nslow link: below 0.5x the median of the other links", out);
    }
    fputs("</title>", out);
}

/* The cells of one matrix: colour, value, and a red frame round the slow links. */
static void map_cells(FILE *out, const map_geom_t *g, const map_t *mp, const cp_links_verdict_t *v)
{
    int n = mp->nd->n;
    const double *m = mp->best;
    double hi = 0;
    for (int i = 0; i < n * n; i++) {
        hi = m[i] > hi ? m[i] : hi;
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            if (a == b || !(m[a * n + b] > 0)) {
                cp_map_empty(out, g, a, b);
                continue;
            }
            char col[16], text[32];
            cp_map_colour(hi > 0 ? m[a * n + b] / hi : 0, col, sizeof(col));
            snprintf(text, sizeof(text), "%.2f", m[a * n + b]);
            int slow = v->slow[a * n + b];
            cp_map_cell(out, g, a, b, col, slow ? MARK_FLAGGED : MARK_NONE, text,
                        m[a * n + b] > hi / 2);
            map_title(out, mp, a, b, slow);
            fputs("</g>\n", out);
        }
    }
}

/* The suspect nodes outlined and named, and the marks' words under the matrix. */
static void map_marks(FILE *out, const map_geom_t *g, const nodes_t *nd,
                      const cp_links_verdict_t *v)
{
    char buf[512] = "", one[160];
    for (int a = 0; a < nd->n; a++) {
        if (v->suspect[a]) {
            snprintf(one, sizeof(one), "suspect node %s: %.2gx the median", nd->names[a],
                     v->node_bw[a] / v->node_ref[a]);
            cp_map_mark_node(out, g, a, MARK_FLAGGED, one);
        }
    }
    for (int a = 0; a < nd->n; a++) {
        for (int b = a + 1; b < nd->n; b++) {
            if (v->slow[a * nd->n + b] && strlen(buf) < 200) {
                snprintf(one, sizeof(one), "%s%s-%s", buf[0] ? ", " : "", nd->names[a],
                         nd->names[b]);
                strncat(buf, one, sizeof(buf) - strlen(buf) - 1);
            }
        }
    }
    snprintf(one, sizeof(one), "slow links (red frame): %d%s%.200s", v->nslow_links,
             buf[0] ? ": " : "", buf);
    cp_map_foot(out, g, 0, one);
    snprintf(one, sizeof(one), "suspect nodes (red outline, named on the right): %d", v->nsuspects);
    cp_map_foot(out, g, 1, one);
}

void cp_report_links_map(FILE *out, const cp_report_file_t *f, int k, int width)
{
    size_t i = 0;
    for (int seen = -1; i < f->nlinks; i++) {
        seen += sweep_backend(f, i);
        if (seen == k) {
            break;
        }
    }
    nodes_t nd;
    cp_links_verdict_t v;
    if (i == f->nlinks || cp_links_load_nodes(f, &nd) != 0) {
        return;
    }
    size_t nn = (size_t)nd.n * (size_t)nd.n + 1;
    double *m = calloc(3 * nn, sizeof(double));
    map_t mp = {f->links[i].backend, &nd, m, NULL, NULL, 0, 0};
    if (m != NULL) {
        mp.mean = m + nn;
        mp.lat = m + 2 * nn;
        cp_links_bw_matrix(f, mp.backend, STAT_MEAN, nd.n, mp.mean);
        cp_links_matrix(f->links, f->nlinks, mp.backend, "latency", 1, nd.n, mp.lat);
        mp.bw_bytes = cp_report_links_bytes(f, mp.backend, "bandwidth");
        mp.lat_bytes = cp_report_links_bytes(f, mp.backend, "latency");
        cp_links_bw_matrix(f, mp.backend, STAT_BEST, nd.n, mp.best);
    }
    if (m != NULL && cp_links_analyse(mp.best, nd.n, CP_LINKS_THRESHOLD, &v) == 0) {
        map_geom_t g;
        char title[96];
        cp_map_geom(&g, nd.n, width);
        snprintf(title, sizeof(title), "%s: link bandwidth between nodes", mp.backend);
        fputs("<g class=\"heatmap\">\n", out);
        cp_map_title(out, &g, title,
                     "GB/s of the fastest iteration, light: slow, dark: fast (red frame: "
                     "below 0.5x the median of the other links, as collprof-report links)");
        int *mark = calloc((size_t)nd.n + 1, sizeof(int));
        for (int a = 0; mark != NULL && a < nd.n; a++) {
            mark[a] = v.suspect[a] ? MARK_FLAGGED : MARK_NONE;
        }
        cp_map_labels(out, &g, nd.names, mark);
        map_cells(out, &g, &mp, &v);
        map_marks(out, &g, &nd, &v);
        fputs("</g>\n", out);
        free(mark);
        cp_links_verdict_free(&v);
    }
    free(m);
    free(nd.names);
}
