/*
 * What `collprof-report links`' files share: cmd_links.c (the command: matrices, verdicts,
 * baselines) and links_map.c (the heatmaps `plot` draws).  Internal to src/report.
 */
#ifndef COLLPROF_REPORT_LINKS_INT_H
#define COLLPROF_REPORT_LINKS_INT_H

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

#endif
