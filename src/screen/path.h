/*
 * Path classes: what lies between two nodes, as far as the job can know it.  A pair of ranks
 * on one node is "same-node"; two nodes under one leaf switch of Slurm's tree topology
 * (topology.conf, TopologyPlugin=topology/tree; src/slurm/slurm_topo.h) are "same-switch",
 * under different leaf switches "cross-switch"; without a topology, or with a node that is
 * not in it, "any".  The screen judges a pair against the reference of its class where the
 * classes differ (src/screen/screen.h), a baseline keeps one row per class
 * (src/schema/baseline.h), and /links records each pair's class (its `path` column, 1.10).
 * Pure: no I/O.
 */
#ifndef COLLPROF_CORE_PATH_H
#define COLLPROF_CORE_PATH_H

/** The path classes (their numbers index cp_screen_ref_t.cls). */
typedef enum cp_path_class {
    CP_PATH_ANY = 0,          /**< no topology known for the pair */
    CP_PATH_SAME_NODE = 1,    /**< two ranks of one node (no screen pair: those are nodes') */
    CP_PATH_SAME_SWITCH = 2,  /**< two nodes under one leaf switch */
    CP_PATH_CROSS_SWITCH = 3, /**< two nodes under different leaf switches */
    CP_PATH_NCLASSES = 4
} cp_path_class_t;

/** "any", "same-node", "same-switch", "cross-switch"; "any" out of range. */
const char *cp_path_name(int cls);

/** The class named name; "" (a file before 1.10) is "any"; -1 for a name not known. */
int cp_path_parse(const char *name);

/**
 * The class of the pair of nodes a and b, from each node's leaf switch leaf[] (an index, -1:
 * not in the topology; leaf NULL: no topology): same-node when a == b, same-switch when both
 * have the same leaf, cross-switch when both have different ones, else any.
 */
int cp_path_of(const int *leaf, int a, int b);

#endif /* COLLPROF_CORE_PATH_H */
