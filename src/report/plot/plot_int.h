/*
 * What `collprof-report plot`'s files share: cmd_plot.c (the command, the series from the
 * files' rows, the page), plot_views.c (the fastest-variant view and the ratio charts built
 * from every variant's lines), plot_draw.c (one chart's SVG: axes, frame, bands, lines,
 * points, and the heatmaps' place) and plot_lines.c (the lines: growing arrays, which rows
 * make one, labels and colours).  The heatmaps are screen_map.c's and links_map.c's
 * (links_int.h); the page's script is plot_script.c's.  Internal to src/report.
 *
 * plot/'s files, top to bottom (each calls only files below it):
 * cmd_plot > plot_views > plot_draw > screen_map > links_map > plot_lines > plot_script
 */
#ifndef COLLPROF_REPORT_PLOT_INT_H
#define COLLPROF_REPORT_PLOT_INT_H

#include "report/report.h"

#include <stdio.h>

/* chart geometry, in SVG user units (px) */
#define CHART_W     900
#define PLOT_L      80 /* left margin: y tick labels and the axis title */
#define PLOT_R      30
#define PLOT_T      48 /* the chart title */
#define PLOT_H      300
#define AXIS_H      58 /* x tick labels and the axis title */
#define LEGEND_DY   18
#define LEGEND_COLS 2

/*
 * The lines' colours, each line of a chart its own: first the eight of Okabe and Ito's
 * palette (Color Universal Design), told apart in the common forms of colour blindness;
 * then six of Paul Tol's muted palette, drawn dashed as well (a chart of more than eight
 * lines is the every-variant view of many variants).  Past fourteen lines the colours
 * repeat with another dash pattern.
 */
static const char *const palette[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9",
                                      "#d55e00", "#000000", "#f0e442", "#332288", "#44aa99",
                                      "#999933", "#882255", "#cc6677", "#ddcc77"};
#define N_COLOURS     (sizeof(palette) / sizeof(palette[0]))
#define N_CVD_COLOURS 8 /* the first ones, told apart by colour alone */
static const char *const dashes[] = {"", "7 4", "2 3", "10 3 2 3"};
#define N_DASHES (sizeof(dashes) / sizeof(dashes[0]))

/* what a chart shows */
enum { CHART_BUSBW, CHART_RATIO };

typedef struct point {
    double bytes, busbw;
    const collprof_result_row_t *row;
    int winner; /* the fastest backend/variant of its cell, not a tie (collprof-report best) */
    /* the band: busBW lo..hi from the times t_hi_us..t_lo_us, what names where they come from */
    double lo, hi, t_lo_us, t_hi_us;
    const char *what;
    int nvariants;                    /* fastest-variant view: the variants measured at this size */
    const collprof_result_row_t *ref; /* ratio chart: the reference's row (busbw: the ratio) */
} point_t;

typedef struct series {
    int file;
    const collprof_result_row_t *key; /* the first row: its attributes name the line */
    char label[400];
    int colour, dash; /* indices into palette[] and dashes[] */
    int variants;     /* the fastest-variant view: the variants the line picks from */
    point_t *pts;
    size_t n, cap;
} series_t;

typedef struct chart {
    char op[16];
    int kind;     /* CHART_BUSBW, CHART_RATIO */
    int winners;  /* points marked as the fastest of their cell */
    char ref[40]; /* a ratio chart: the reference backend */
    series_t *s;
    size_t n, cap;
} chart_t;

/* One view: a chart per operation. */
typedef struct charts {
    chart_t *c;
    size_t n, cap;
} charts_t;

typedef struct plot {
    charts_t all;    /* a line per backend/variant (and file) */
    charts_t best;   /* a line per backend (and file): its fastest variant at each size */
    charts_t ratio;  /* per op with two backends or more: each best / the reference's best */
    int show_all;    /* --variants all: the every-variant view shown (the SVG: only it) */
    const char *ref; /* the ratio charts' reference backend */
    cp_report_file_t **files;
    int nfiles;
} plot_t;

/* plot_draw.c */
void plot_draw_chart(FILE *out, const chart_t *c);
void plot_describe_files(FILE *out, const plot_t *p, const char *open, const char *close);
/* which heatmaps plot_draw_maps draws */
enum { MAPS_LINKS, MAPS_SCREEN };
int plot_draw_maps(FILE *out, const plot_t *p, int html, int y, int which);
int plot_chart_height(const chart_t *c);
void plot_mark_winners(plot_t *p);
const char *plot_op_label(const char *op);

/* plot_lines.c */
const char *plot_base_name(const char *path);
void *plot_grow(void *v, size_t *cap, size_t n, size_t elsize);
/* what plot_same_line compares: everything, all but the variant, all but backend and variant */
enum { LINE_EXACT, LINE_BACKEND, LINE_OTHERS };
int plot_same_line(const collprof_result_row_t *a, const collprof_result_row_t *b, int what);
int plot_by_bytes(const void *a, const void *b);
/* each line of c its label (with its variant or not), its points in size order, its colour */
void plot_label_chart(const plot_t *p, chart_t *c, int variant);

/* plot_views.c */
void plot_build_best(plot_t *p);
/* the ratio charts against p->ref (NULL: the first file's first backend, set in p->ref) */
void plot_build_ratio(plot_t *p);
void plot_free_charts(charts_t *v);

#endif
