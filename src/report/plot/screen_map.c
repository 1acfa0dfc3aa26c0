/*
 * The screen's heatmaps for `collprof-report plot` (report.h): per backend of a collprof
 * --screen run, a node x node grid of the pairs it measured (its /links rows), each cell
 * coloured by the pair's score, and the screen's verdict on it: the nodes it flagged (its
 * /screen rows: slow, unreachable, inconclusive) outlined in red and named, the suspects it
 * cleared outlined dashed in grey, its suspect links framed.
 *
 * The scores are the screen's own: the pairs are read back (cp_screen_add_rows, as
 * `collprof-report screen --baseline` reads them) and judged by cp_screen_judge against the
 * screen's own reference, its random rounds' median, which the run judged them by (for a
 * run judged against a baseline: against the reference figures its rows record).  The marks
 * are the verdict the run wrote, never decided again here.
 */
#include "config.h"

#include "report/plot/links_int.h"

#include "screen/screen.h"
#include "screen/screen_out.h"

#include <stdlib.h>
#include <string.h>

/* Rows [first, end) of f's screen of backend number k: 1, or 0 when it has no such backend. */
static int backend_rows(const cp_report_file_t *f, int k, size_t *first, size_t *end)
{
    int seen = -1;
    for (size_t i = 0; i < f->nscreen; i++) {
        if (i > 0 && !strcmp(f->screen[i].backend, f->screen[i - 1].backend)) {
            continue;
        }
        if (++seen == k) {
            size_t e = i + 1;
            while (e < f->nscreen && !strcmp(f->screen[e].backend, f->screen[i].backend)) {
                e++;
            }
            *first = i;
            *end = e;
            return 1;
        }
    }
    return 0;
}

int cp_report_screen_nmaps(const cp_report_file_t *f)
{
    size_t a, b;
    int k = 0;
    while (backend_rows(f, k, &a, &b)) {
        k++;
    }
    return k;
}

/* The nodes of rows [first, end): one more than the highest node index. */
static int node_count(const collprof_screen_row_t *rows, size_t first, size_t end)
{
    int n = 0;
    for (size_t i = first; i < end; i++) {
        if (strcmp(rows[i].what, "verify") != 0) {
            int top = rows[i].node_a > rows[i].node_b ? rows[i].node_a : rows[i].node_b;
            n = top + 1 > n ? top + 1 : n;
        }
    }
    return n;
}

int cp_report_screen_map_height(const cp_report_file_t *f, int width)
{
    return cp_map_height(node_count(f->screen, 0, f->nscreen), width);
}

/* One backend's screen: its rows, its nodes and their marks, its pairs judged. */
typedef struct smap {
    const collprof_screen_row_t *rows, *head;
    size_t first, end;
    int n;
    const char **names;
    int *mark;
    cp_screen_t s;
} smap_t;

/* The pairs of the screen judged again as the run judged them: 0, or -1. */
static int judge(const cp_report_file_t *f, smap_t *m)
{
    const collprof_screen_row_t *h = m->head;
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.rounds = cp_report_screen_rounds(f->root.command_line);
    o.seed = h->seed;
    o.thr = h->threshold;
    if (!strcmp(h->reference, "baseline")) { /* the figures the rows record, no spread */
        o.has_baseline = 1;
        o.baseline.bw_gbs = h->ref_bw_gbs;
        o.baseline.lat_us = h->ref_lat_us;
        o.baseline.source = 1;
    }
    if (cp_screen_init(&m->s, m->n, &o) != 0) {
        return -1;
    }
    if (cp_screen_add_rows(&m->s, f->links, f->nlinks, h->backend, cp_screen_random_rounds(&m->s)) <
        0) {
        cp_screen_free(&m->s);
        return -1;
    }
    cp_screen_judge_opt(&m->s);
    return 0;
}

static int load(const cp_report_file_t *f, int k, smap_t *m)
{
    memset(m, 0, sizeof(*m));
    if (!backend_rows(f, k, &m->first, &m->end)) {
        return -1;
    }
    m->rows = f->screen;
    m->head = &f->screen[m->first];
    m->n = node_count(f->screen, m->first, m->end);
    m->names = calloc((size_t)m->n + 1, sizeof(char *));
    m->mark = calloc((size_t)m->n + 1, sizeof(int));
    if (m->names == NULL || m->mark == NULL || judge(f, m) != 0) {
        free(m->names);
        free(m->mark);
        return -1;
    }
    for (int i = 0; i < m->n; i++) {
        m->names[i] = "?";
    }
    for (size_t i = m->first; i < m->end; i++) {
        const collprof_screen_row_t *r = &m->rows[i];
        if (!strcmp(r->what, "node") && r->node_a >= 0 && r->node_a < m->n) {
            m->names[r->node_a] = r->host_a;
            m->mark[r->node_a] = strcmp(r->verdict, "slow") == 0 ||
                                         strcmp(r->verdict, "unreachable") == 0 ||
                                         strcmp(r->verdict, "inconclusive") == 0
                                     ? MARK_FLAGGED
                                 : r->suspect ? MARK_CLEARED
                                              : MARK_NONE;
        }
    }
    return 0;
}

/* The mark of link (a, b): the screen's suspect links, flagged (slow) or cleared. */
static int link_mark(const smap_t *m, int a, int b)
{
    for (size_t i = m->first; i < m->end; i++) {
        const collprof_screen_row_t *r = &m->rows[i];
        if (!strcmp(r->what, "link") &&
            ((r->node_a == a && r->node_b == b) || (r->node_a == b && r->node_b == a))) {
            return !strcmp(r->verdict, "slow") ? MARK_FLAGGED : MARK_CLEARED;
        }
    }
    return MARK_NONE;
}

/* The pairs of cell (a, b) for people, in its <title>. */
static void cell_title(FILE *out, const smap_t *m, int a, int b, int mark)
{
    fputs("<title>", out);
    cp_report_xml_text(out, m->names[a]);
    fputs(" - ", out);
    cp_report_xml_text(out, m->names[b]);
    fputs(", ", out);
    cp_report_xml_text(out, m->head->backend);
    for (size_t i = 0; i < m->s.npairs; i++) {
        const cp_screen_pair_t *p = &m->s.pairs[i];
        if ((p->a == a && p->b == b) || (p->a == b && p->b == a)) {
            fprintf(out, "\nround %d (%s): ", p->round + 1,
                    p->phase == CP_SCREEN_CONFIRM  ? "confirmation"
                    : p->phase == CP_SCREEN_REPAIR ? "re-pairing"
                                                   : "random");
            if (!cp_screen_outcome_judged(p->outcome)) {
                fprintf(out, "%s, not judged", cp_screen_outcome_words(p->outcome));
                continue;
            }
            fprintf(out, "score %.2fx, %.4g GB/s, %.1f us%s%s", p->score, p->bw_gbs, p->lat_us,
                    p->outcome == CP_SCREEN_WRONG ? ", wrong data" : "", p->slow ? ", slow" : "");
        }
    }
    if (mark != MARK_NONE) {
        fprintf(out, "\nsuspect link: %s", mark == MARK_FLAGGED ? "slow (flagged)" : "cleared");
    }
    fputs("</title>", out);
}

/* The measured cells: the worst score of the pair's tests. */
static void cells(FILE *out, const map_geom_t *g, const smap_t *m)
{
    int n = m->n;
    double *worst = malloc(sizeof(double) * ((size_t)n * (size_t)n + 1));
    if (worst == NULL) {
        return;
    }
    for (int i = 0; i < n * n; i++) {
        worst[i] = -1; /* not measured */
    }
    for (size_t i = 0; i < m->s.npairs; i++) {
        const cp_screen_pair_t *p = &m->s.pairs[i];
        double v = !cp_screen_outcome_judged(p->outcome) ? 0 : p->score;
        for (int side = 0; side < 2; side++) {
            double *w = side ? &worst[p->b * n + p->a] : &worst[p->a * n + p->b];
            *w = *w < 0 || v < *w ? v : *w;
        }
    }
    for (int a = 0; a < n; a++) {
        for (int b = 0; b < n; b++) {
            double v = worst[a * n + b];
            if (v < 0) {
                continue;
            }
            char col[16], text[16];
            cp_map_colour(v, col, sizeof(col));
            snprintf(text, sizeof(text), "%.2f", v);
            int mark = link_mark(m, a, b);
            cp_map_cell(out, g, a, b, col, mark, text, v > 0.5);
            cell_title(out, m, a, b, mark);
            fputs("</g>\n", out);
        }
    }
    free(worst);
}

/* The flagged and cleared nodes outlined and named; the verdict in words under the grid. */
static void marks(FILE *out, const map_geom_t *g, const smap_t *m)
{
    char line[600], one[200], links[400] = "";
    for (size_t i = m->first; i < m->end; i++) {
        const collprof_screen_row_t *r = &m->rows[i];
        if (!strcmp(r->what, "node") && m->mark[r->node_a] != MARK_NONE) {
            if (m->mark[r->node_a] == MARK_FLAGGED) {
                snprintf(one, sizeof(one), "%s node %s: %.2fx", r->verdict, r->host_a, r->score);
            } else {
                snprintf(one, sizeof(one), "suspect %s, cleared", r->host_a);
            }
            cp_map_mark_node(out, g, r->node_a, m->mark[r->node_a], one);
        } else if (!strcmp(r->what, "link") && strlen(links) < 300) {
            snprintf(one, sizeof(one), "%s%s-%s %s", links[0] ? ", " : "", r->host_a, r->host_b,
                     !strcmp(r->verdict, "slow") ? "slow" : "cleared");
            strncat(links, one, sizeof(links) - strlen(links) - 1);
        }
    }
    char ex[256];
    cp_screen_exclude_list(m->rows + m->first, m->end - m->first, NULL, ex, sizeof(ex));
    snprintf(line, sizeof(line),
             "flagged nodes (red outline, named on the right; dashed grey: "
             "a suspect cleared): exclude %s",
             ex[0] ? ex : "none");
    cp_map_foot(out, g, 0, line);
    snprintf(line, sizeof(line), "suspect links (red frame: slow, dashed grey: cleared): %s",
             links[0] ? links : "none");
    cp_map_foot(out, g, 1, line);
    for (size_t i = m->first; i < m->end; i++) {
        if (!strcmp(m->rows[i].what, "verify")) {
            snprintf(line, sizeof(line), "validation collective: %s (%.180s)", m->rows[i].verdict,
                     m->rows[i].evidence);
            cp_map_foot(out, g, 2, line);
        }
    }
}

void cp_report_screen_map(FILE *out, const cp_report_file_t *f, int k, int width)
{
    smap_t m;
    if (load(f, k, &m) != 0) {
        return;
    }
    const collprof_screen_row_t *h = m.head;
    map_geom_t g;
    char title[160], sub[400];
    cp_map_geom(&g, m.n, width);
    snprintf(title, sizeof(title), "%s: screen of %d nodes, %d rounds (seed %llu)", h->backend, m.n,
             h->rounds, (unsigned long long)h->seed);
    snprintf(sub, sizeof(sub),
             "score of each pair: min(bw / ref, ref lat / lat), ref the %s (%.4g GB/s, "
             "%.1f us); light: slow; slow below %.2fx",
             !strcmp(h->reference, "baseline") ? "baseline" : "screen's median", h->ref_bw_gbs,
             h->ref_lat_us, h->threshold);
    fputs("<g class=\"heatmap screen\">\n", out);
    cp_map_title(out, &g, title, sub);
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#eeeeee\"/>\n", g.left,
            g.top, g.n * g.cell - 2, g.n * g.cell - 2);
    cp_map_labels(out, &g, m.names, m.mark);
    cells(out, &g, &m);
    marks(out, &g, &m);
    fputs("</g>\n", out);
    cp_screen_free(&m.s);
    free(m.names);
    free(m.mark);
}
