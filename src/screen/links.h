/*
 * The link sweep's pure parts (collprof --link-sweep, collprof-report
 * links): the round-robin schedule that pairs every two nodes once with no
 * node in two pairs at the same time, and the analysis that names the slow
 * links and nodes of a node x node bandwidth matrix.  No I/O, no
 * communication (printing goes to a FILE the caller gives): the runner
 * (src/screen/run/sweep.c), the text summary and collprof-report's links and plot
 * commands all use it, and tests/unit/test_links.c checks it.
 */
#ifndef COLLPROF_CORE_LINKS_H
#define COLLPROF_CORE_LINKS_H

#include <collprof/schema.h>
#include <stddef.h>
#include <stdio.h>

/**
 * Rounds of the schedule for nnodes nodes (the circle method): nnodes - 1
 * when even, nnodes when odd (each node sits one round out, its "bye"),
 * 0 below 2 nodes.
 */
int cp_links_rounds(int nnodes);

/** The node that node meets in round (0 <= round < cp_links_rounds), or -1: its bye. */
int cp_links_partner(int nnodes, int round, int node);

/** What cp_links_analyse found in one n x n matrix (arrays owned, cp_links_verdict_free). */
typedef struct cp_links_verdict {
    int n;
    double threshold;       /**< a link or node is slow below threshold x the reference */
    unsigned char *slow;    /**< [n*n] link (a,b) is slow (symmetric) */
    double *link_ref;       /**< [n*n] median bandwidth of the other links */
    double *node_bw;        /**< [n] median bandwidth of the node's links */
    double *node_ref;       /**< [n] median of the other nodes' node_bw */
    int *node_links;        /**< [n] measured links of the node */
    int *node_slow_links;   /**< [n] of those, slow */
    unsigned char *suspect; /**< [n] node_bw below threshold x node_ref */
    int nslow_links, nsuspects;
    int measured; /**< links with a bandwidth (> 0) */
} cp_links_verdict_t;

/**
 * Compare every link of bw[n*n] (GB/s, symmetric; <= 0 or NaN: not
 * measured, diagonal ignored) with the median of the other measured links,
 * and every node's median link bandwidth with the median of the other
 * nodes'.  With fewer than 3 nodes nothing can be told apart and nothing
 * is flagged.  0, or -1 when out of memory.
 */
int cp_links_analyse(const double *bw, int n, double threshold, cp_links_verdict_t *v);
void cp_links_verdict_free(cp_links_verdict_t *v);

/* ---- the /links rows as matrices ---------------------------------------- */

/** 1 when rows[i] is the first row of its (backend, kind): the start of a matrix. */
int cp_links_first_of(const collprof_link_row_t *rows, size_t i);

/**
 * The n x n matrix of (backend, kind) from rows: bw_gbs (time 0) or
 * time_mean_us (time 1) of each ok or wrong row at (node_a, node_b) and
 * (node_b, node_a); 0 where a pair has no such row and on the diagonal.
 */
void cp_links_matrix(const collprof_link_row_t *rows, size_t nrows, const char *backend,
                     const char *kind, int time, int n, double *m);

/**
 * Print m[n*n] as a table: a header of names[] and one line per node,
 * values with prec decimals, "-" where 0 (not measured), and a '*' after
 * the links marked in mark[n*n] (may be NULL).
 */
void cp_links_print(FILE *f, const char *const *names, int n, const double *m, int prec,
                    const unsigned char *mark);

#endif /* COLLPROF_CORE_LINKS_H */
