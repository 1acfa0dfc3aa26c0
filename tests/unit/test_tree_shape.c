/*
 * The control tree's shape over the nodes (src/chan/tree_shape.c): every node but node 0 has
 * one parent, below it in the order, and is among that parent's children exactly once; the
 * levels; the swap that puts rank 0's node first; COLLPROF_TREE_FANOUT's parsing (default,
 * accepted values, one clear line for anything else).
 */
#include "config.h"

#include "chan/tree_shape.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* For nnodes and k: each node i > 0 is the child of its parent exactly once, parents come
 * first, and the deepest node's level is levels - 1. */
static int consistent(int nnodes, int k)
{
    int *hits = calloc((size_t)nnodes, sizeof(int)), bad = hits == NULL, deepest = 0, below = 0;
    for (int i = 0; !bad && i < nnodes; i++) {
        int first = -1, c = cp_tree_node_kids(i, k, nnodes, &first);
        for (int j = 0; j < c; j++) {
            bad += first + j <= i || first + j >= nnodes || cp_tree_node_parent(first + j, k) != i;
            hits[first + j]++;
        }
        int level = 0;
        for (int p = i; p > 0; p = cp_tree_node_parent(p, k)) {
            level++;
        }
        deepest = level > deepest ? level : deepest;
        below += cp_tree_node_parent(i, k) > 0; /* a leader below a leader, not rank 0's */
    }
    for (int i = 0; !bad && i < nnodes; i++) {
        bad += hits[i] != (i > 0);
    }
    free(hits);
    return !bad && cp_tree_node_levels(nnodes, k) == deepest + 1 &&
           cp_tree_node_deep(nnodes, k) == below;
}

static int fanout_of(const char *v, int *k, char *err, size_t len)
{
    if (v == NULL) {
        unsetenv("COLLPROF_TREE_FANOUT");
    } else {
        setenv("COLLPROF_TREE_FANOUT", v, 1);
    }
    err[0] = '\0';
    return cp_tree_fanout(k, err, len);
}

int main(void)
{
    int all = 1;
    for (int k = 2; k <= 40; k++) {
        for (int n = 1; n <= 300; n += n < 40 ? 1 : 37) {
            all &= consistent(n, k);
        }
    }
    ok(all, "fanout 2-40, 1-300 nodes: each node below node 0 is its parent's child once");
    ok(cp_tree_node_parent(0, 4) == -1 && cp_tree_node_parent(4, 4) == 0 &&
           cp_tree_node_parent(5, 4) == 1 && cp_tree_node_parent(8, 4) == 1 &&
           cp_tree_node_parent(9, 4) == 2,
       "fanout 4: node 0 has no parent; nodes 1-4 below node 0, 5-8 below node 1, 9 below 2");
    int first = -1;
    ok(cp_tree_node_kids(1, 4, 7, &first) == 2 && first == 5 &&
           cp_tree_node_kids(2, 4, 7, &first) == 0,
       "fanout 4 over 7 nodes: node 1 has nodes 5 and 6, node 2 none");
    /* the two-level tree up to k + 1 nodes: every other node below node 0, none below them */
    int two = 1;
    for (int n = 2; n <= 33; n++) {
        two &= cp_tree_node_kids(0, 32, n, &first) == n - 1 && cp_tree_node_levels(n, 32) == 2;
        for (int i = 1; i < n; i++) {
            two &= cp_tree_node_kids(i, 32, n, &first) == 0;
        }
    }
    ok(two && cp_tree_node_levels(34, 32) == 3,
       "the default fanout 32: 2-33 nodes are the two-level tree, 34 nodes three levels");
    ok(cp_tree_node_levels(1, 2) == 1 && cp_tree_node_levels(4, 2) == 3 &&
           cp_tree_node_levels(16, 4) == 3 && cp_tree_node_levels(4096, 32) == 4 &&
           cp_tree_node_levels(4096, 4) == 7,
       "levels: 1 node 1; 4 nodes by 2: 3; 16 by 4: 3; 4,096 by 32: 4, by 4: 7");
    ok(cp_tree_node_swap(3, 3) == 0 && cp_tree_node_swap(0, 3) == 3 &&
           cp_tree_node_swap(2, 3) == 2 && cp_tree_node_swap(cp_tree_node_swap(5, 2), 2) == 5 &&
           cp_tree_node_swap(0, 0) == 0,
       "rank 0's node at list position 3 becomes node 0, the list's first takes its place");
    char err[256];
    int k = 0;
    ok(fanout_of(NULL, &k, err, sizeof(err)) == 0 && k == CP_TREE_FANOUT_DEFAULT,
       "COLLPROF_TREE_FANOUT unset: the default (%d)", CP_TREE_FANOUT_DEFAULT);
    ok(fanout_of("", &k, err, sizeof(err)) == 0 && k == CP_TREE_FANOUT_DEFAULT,
       "COLLPROF_TREE_FANOUT empty: the default");
    ok(fanout_of("2", &k, err, sizeof(err)) == 0 && k == 2 &&
           fanout_of("65536", &k, err, sizeof(err)) == 0 && k == 65536,
       "COLLPROF_TREE_FANOUT 2 and 65536 taken");
    static const char *bad[] = {"1", "0", "-4", "x", "4x", " 4", "65537", "99999999999999999999"};
    int refused = 1;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        k = 7;
        refused &= fanout_of(bad[i], &k, err, sizeof(err)) == -1 && k == 7 &&
                   strstr(err, "COLLPROF_TREE_FANOUT=") == err && strchr(err, '\n') == NULL;
    }
    ok(refused, "COLLPROF_TREE_FANOUT 1, 0, -4, x, 4x, ' 4', 65537, 10^20: one line each (%s)",
       err);
    return tap_done();
}
