/*
 * What `collprof-report links`' files share: cmd_links.c (the command: matrices, verdicts,
 * baselines), links_map.c (the link sweep's heatmaps `plot` draws, and the node x node grid
 * that screen_map.c draws the screen's on); both read the sweep through links_data.h
 * (src/report/links_data.c, below them).  Internal to src/report.
 */
#ifndef COLLPROF_REPORT_LINKS_INT_H
#define COLLPROF_REPORT_LINKS_INT_H

#include "report/links_data.h"

/* `links`' default --threshold, and the one plot's heatmaps judge by */
#define CP_LINKS_THRESHOLD 0.5

/* ---- a node x node heatmap in SVG (links_map.c) ---------------------------------------- */

/* Where a heatmap of n nodes goes in width px: cells of cell px from (left, top). */
typedef struct map_geom {
    int n, cell, left, top, width;
} map_geom_t;

/* A node's or a link's mark: flagged (red, solid) or a suspect cleared (grey, dashed). */
enum { MARK_NONE, MARK_FLAGGED, MARK_CLEARED };

void cp_map_geom(map_geom_t *g, int n, int width);
/* The height in px of a heatmap of n nodes in width px, its title and foot included. */
int cp_map_height(int n, int width);
/* Light (slow) to dark blue (fast) for x in [0, 1]. */
void cp_map_colour(double x, char *buf, size_t len);
/* The white background and the title lines (printable text; sub may be NULL). */
void cp_map_title(FILE *out, const map_geom_t *g, const char *title, const char *sub);
/* The node names along both sides; mark[i] != MARK_NONE: in the mark's colour, bold. */
void cp_map_labels(FILE *out, const map_geom_t *g, const char *const *names, const int *mark);
/* A measured cell (a, b): <g class="cell"> with its square filled, framed by mark, and text
 * in it when the cell is large enough (white on dark fills: light_text), left open: the
 * caller writes its <title> and closes it with "</g>". */
void cp_map_cell(FILE *out, const map_geom_t *g, int a, int b, const char *fill, int mark,
                 const char *text, int light_text);
/* A cell without a value (the diagonal, a pair not measured). */
void cp_map_empty(FILE *out, const map_geom_t *g, int a, int b);
/* Node i's row and column outlined by mark, and label right of its row. */
void cp_map_mark_node(FILE *out, const map_geom_t *g, int i, int mark, const char *label);
/* Line k (0, 1, 2) of the text under the matrix: what the marks name. */
void cp_map_foot(FILE *out, const map_geom_t *g, int k, const char *text);

#endif
