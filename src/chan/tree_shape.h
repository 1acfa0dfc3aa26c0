/*
 * The shape of the control tree over the nodes (pure functions, no I/O):
 * node 0 is rank 0's node, node i > 0 hangs below node (i - 1) / k, so
 * node i's children are nodes k i + 1 .. k i + k.  With k + 1 nodes or
 * fewer every node hangs below node 0: the two-level tree.  k comes from
 * COLLPROF_TREE_FANOUT (default CP_TREE_FANOUT_DEFAULT).  Internal to
 * src/chan (and collprof.c's check of the environment).
 */
#ifndef COLLPROF_CHAN_TREE_SHAPE_H
#define COLLPROF_CHAN_TREE_SHAPE_H

#include <stddef.h>

#define CP_TREE_FANOUT_DEFAULT 32
#define CP_TREE_FANOUT_MAX     65536

/** The fanout from COLLPROF_TREE_FANOUT (unset or empty: the default) into *k: 0, or -1 with
 * one line in err (not an integer from 2 to CP_TREE_FANOUT_MAX). */
int cp_tree_fanout(int *k, char *err, size_t len);
/** The parent of node i (0 <= i) in a tree of fanout k; -1 for node 0. */
int cp_tree_node_parent(int i, int k);
/** How many child nodes node i has among nnodes; the first in *first (when > 0). */
int cp_tree_node_kids(int i, int k, int nnodes, int *first);
/** Levels of nodes in the tree of nnodes (1: node 0 alone, 2: the two-level tree). */
int cp_tree_node_levels(int nnodes, int k);
/** The nodes whose leader hangs below another node's leader, not rank 0's: those past the
 * first k + 1 (each holds a side link to rank 0). */
int cp_tree_node_deep(int nnodes, int k);
/** Node i's place when rank 0's node is at position pos0 of the launcher's list: the two
 * swap places, the others keep theirs (its own inverse: a tree index back to a position). */
int cp_tree_node_swap(int i, int pos0);

#endif /* COLLPROF_CHAN_TREE_SHAPE_H */
