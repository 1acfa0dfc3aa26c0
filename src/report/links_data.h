/*
 * What a file's link sweep and screen are read as (links_data.c), for the commands links
 * (links_int.h) and screen, the baselines' references (rejudge.c), plot's heatmaps and
 * export.  Internal to src/report.
 */
#ifndef COLLPROF_REPORT_LINKS_DATA_H
#define COLLPROF_REPORT_LINKS_DATA_H

#include "report/report.h"

/* --stat: which bandwidth of a pair */
enum { STAT_BEST, STAT_MEAN };

/* The file's nodes: count and names (the host of the node's first rank). */
typedef struct nodes {
    int n;
    const char **names;
} nodes_t;

/* The file's nodes into nd (names borrowed from f); -1 out of memory. */
int cp_links_load_nodes(const cp_report_file_t *f, nodes_t *nd);
/* 1 when rows[i] is the first row of its backend. */
int cp_links_first_of_backend(const collprof_link_row_t *rows, size_t i);
/* The n x n bandwidth matrix of backend by stat into m. */
void cp_links_bw_matrix(const cp_report_file_t *f, const char *backend, int stat, int n, double *m);

/** The message size of backend's /links rows of kind ("latency", "bandwidth") in f; 0 when
 *  none. */
unsigned long long cp_report_links_bytes(const cp_report_file_t *f, const char *backend,
                                         const char *kind);
/** The --screen-rounds of a run's command line: the last one given, else 3 (the default). */
int cp_report_screen_rounds(const char *cmdline);

#endif
