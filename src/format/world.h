/*
 * Where the ranks ran, in one readable line: "4 ranks on 2 nodes: n1 ranks
 * 0-1, n2 ranks 2-3".  Shared by the run's text summary and by
 * collprof-report, which rebuilds it from the HDF5 ranks table.  Rank lists
 * are compressed into ranges; long lists (a thousand ranks, hundreds of
 * nodes) are capped and summarised so that the line stays short.
 */
#ifndef COLLPROF_OUTPUT_WORLD_H
#define COLLPROF_OUTPUT_WORLD_H

#include <stdio.h>

/** Node index (0..nnodes-1) of rank; *host is set to the rank's host name. */
typedef int (*cp_world_node_fn)(const void *arg, int rank, const char **host);

/**
 * Print label, then "N ranks on M nodes: host ranks a-b,c, ..." and a
 * newline.  Continuation lines are indented by strlen(label) and wrapped
 * before column 100.
 */
void cp_world_print(FILE *f, const char *label, int nranks, int nnodes, cp_world_node_fn node_of,
                    const void *arg);

#endif /* COLLPROF_OUTPUT_WORLD_H */
