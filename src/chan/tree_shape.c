#include "config.h"

/*
 * The control tree's shape over the nodes (tree_shape.h): the arithmetic of a k-ary tree
 * whose node 0 is rank 0's, and COLLPROF_TREE_FANOUT.
 */

#include "chan/tree_shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int cp_tree_fanout(int *k, char *err, size_t len)
{
    const char *v = getenv("COLLPROF_TREE_FANOUT");
    if (v == NULL || v[0] == '\0') {
        *k = CP_TREE_FANOUT_DEFAULT;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || v[0] < '0' || v[0] > '9' || *end != '\0' || x < 2 || x > CP_TREE_FANOUT_MAX) {
        snprintf(err, len,
                 "COLLPROF_TREE_FANOUT=%.40s: expected an integer from 2 to %d (the control "
                 "tree's children per node leader; default %d)",
                 v, CP_TREE_FANOUT_MAX, CP_TREE_FANOUT_DEFAULT);
        return -1;
    }
    *k = (int)x;
    return 0;
}

int cp_tree_node_parent(int i, int k)
{
    return i <= 0 ? -1 : (i - 1) / k;
}

int cp_tree_node_kids(int i, int k, int nnodes, int *first)
{
    long lo = (long)k * i + 1, hi = lo + k; /* [lo, hi) */
    hi = hi < nnodes ? hi : nnodes;
    if (i < 0 || lo >= hi) {
        return 0;
    }
    *first = (int)lo;
    return (int)(hi - lo);
}

int cp_tree_node_levels(int nnodes, int k)
{
    int levels = 0;
    for (long width = 1, seen = 0; seen < nnodes; width *= k) {
        seen += width;
        levels++;
    }
    return levels;
}

int cp_tree_node_deep(int nnodes, int k)
{
    return nnodes > k + 1 ? nnodes - 1 - k : 0;
}

int cp_tree_node_swap(int i, int pos0)
{
    return i == pos0 ? 0 : i == 0 ? pos0 : i;
}
