/*
 * What `collprof-report plot`'s files share: cmd_plot.c (the command, the series from the
 * files' rows, the page) and plot_draw.c (one chart's SVG: axes, frame, bands, lines, points,
 * and the heatmaps' place).  Internal to src/report.
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

/* plot_draw.c */
void plot_draw_chart(FILE *out, const chart_t *c);
void plot_describe_files(FILE *out, const plot_t *p, const char *open, const char *close);
int plot_draw_maps(FILE *out, const plot_t *p, int html, int y);
int plot_chart_height(const chart_t *c);
void plot_mark_winners(plot_t *p);
const char *plot_op_label(const char *op);

/* cmd_plot.c */
const char *plot_base_name(const char *path);

#endif
