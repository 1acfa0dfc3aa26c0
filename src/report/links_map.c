/*
 * The link sweep's heatmaps for `collprof-report plot` (report.h, links_int.h): one node x
 * node bandwidth matrix per backend in SVG, each cell's value in its <title>, the slow links
 * and the suspect nodes framed in red.
 */
#include "config.h"

#include "report/links_int.h"

#include "core/hostlist.h"
#include "core/links.h"
#include "core/screen.h"
#include "output/screen_out.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAP_CELL 56 /* px per node */
#define MAP_TOP  72
#define MAP_LEFT 90

int cp_report_links_nmaps(const cp_report_file_t *f)
{
    int k = 0;
    for (size_t i = 0; i < f->nlinks; i++) {
        k += cp_links_first_of_backend(f->links, i);
    }
    return k;
}

int cp_report_links_map_height(const cp_report_file_t *f)
{
    nodes_t nd;
    int n = cp_links_load_nodes(f, &nd) == 0 ? nd.n : 0;
    free(nd.names);
    return MAP_TOP + n * MAP_CELL + 40;
}

/* Light (slow) to dark blue (fast): the colour of v against the fastest link, hi. */
static void map_colour(double v, double hi, char *buf, size_t len)
{
    double x = hi > 0 ? v / hi : 0;
    x = x < 0 ? 0 : x > 1 ? 1 : x;
    snprintf(buf, len, "#%02x%02x%02x", (int)(255 - 215 * x), (int)(245 - 145 * x),
             (int)(240 - 60 * x));
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
static void map_cells(FILE *out, const map_t *mp, const cp_links_verdict_t *v)
{
    int n = mp->nd->n;
    const double *m = mp->best;
    double hi = 0;
    for (int i = 0; i < n * n; i++) {
        hi = m[i] > hi ? m[i] : hi;
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            char col[16] = "#eeeeee";
            int x = MAP_LEFT + b * MAP_CELL, y = MAP_TOP + a * MAP_CELL, slow = v->slow[a * n + b];
            int measured = a != b && m[a * n + b] > 0;
            if (measured) {
                map_colour(m[a * n + b], hi, col, sizeof(col));
            }
            fprintf(out,
                    "<rect%s x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
                    "stroke=\"%s\" stroke-width=\"%d\"",
                    measured ? " class=\"cell\"" : "", x, y, MAP_CELL - 2, MAP_CELL - 2, col,
                    slow ? "#d62728" : "#ffffff", slow ? 3 : 1);
            if (!measured) {
                fputs("/>\n", out);
                continue;
            }
            fputs(">", out);
            map_title(out, mp, a, b, slow);
            fprintf(out,
                    "</rect>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" "
                    "fill=\"%s\" pointer-events=\"none\">%.2f</text>\n",
                    x + MAP_CELL / 2 - 1, y + MAP_CELL / 2 + 4,
                    m[a * n + b] > hi / 2 ? "#ffffff" : "#222222", m[a * n + b]);
        }
    }
}

/* The node names along both sides. */
static void map_labels(FILE *out, const nodes_t *nd)
{
    for (int a = 0; a < nd->n; a++) {
        fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">", MAP_LEFT - 8,
                MAP_TOP + a * MAP_CELL + MAP_CELL / 2 + 4);
        cp_report_xml_text(out, nd->names[a]);
        fprintf(out,
                "</text>\n<text x=\"%d\" y=\"%d\" font-size=\"12\" "
                "text-anchor=\"middle\">",
                MAP_LEFT + a * MAP_CELL + MAP_CELL / 2, MAP_TOP - 8);
        cp_report_xml_text(out, nd->names[a]);
        fprintf(out, "</text>\n");
    }
}

unsigned long long cp_report_links_bytes(const cp_report_file_t *f, const char *backend,
                                         const char *kind)
{
    for (size_t i = 0; i < f->nlinks; i++) {
        if (!strcmp(f->links[i].backend, backend) && !strcmp(f->links[i].kind, kind)) {
            return (unsigned long long)f->links[i].bytes;
        }
    }
    return 0;
}

void cp_report_links_map(FILE *out, const cp_report_file_t *f, int k, int width)
{
    size_t i = 0;
    for (int seen = -1; i < f->nlinks; i++) {
        seen += cp_links_first_of_backend(f->links, i);
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
    if (m != NULL && cp_links_analyse(mp.best, nd.n, 0.5, &v) == 0) {
        fprintf(out, "<g class=\"heatmap\"><rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                width, cp_report_links_map_height(f));
        fprintf(out, "<text x=\"16\" y=\"28\" font-size=\"18\" font-weight=\"bold\">");
        cp_report_xml_text(out, mp.backend);
        fprintf(out, ": link bandwidth between nodes</text>\n<text x=\"16\" y=\"46\" "
                     "font-size=\"12\" fill=\"#333333\">GB/s of the fastest iteration (red "
                     "frame: below 0.5x the median of the other links)</text>\n");
        map_labels(out, &nd);
        map_cells(out, &mp, &v);
        fputs("</g>\n", out);
        cp_links_verdict_free(&v);
    }
    free(m);
    free(nd.names);
}
