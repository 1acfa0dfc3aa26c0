/*
 * The screen's validation collective, its pure part (collprof --screen, docs/screen.md
 * "Validation"): which nodes run which allreduce at each level, how a level's groups are
 * judged, and which node (or link) the halving names.  No I/O and no communication: the
 * runner (src/screen/run/screen_valid.c) runs each level's groups at once and hands back their
 * figures; the simulator of tests/unit/test_halve.c does the same without processes.
 *
 *  Level 0: one allreduce of every survivor (the nodes the screen's rounds call healthy);
 *  when it fails by its bandwidth alone (not its data), it runs once more before anything
 *  is halved: a passing disturbance does not repeat, a fault at full scale does.
 *  A group fails when its data is wrong or its backend erred, when its bus bandwidth is
 *  below abs_thr x what the pairs predict for its size (cp_halve_expect: a ring allreduce of
 *  m nodes, each link at the reference bandwidth B, each of its 2(m - 1) steps paying the
 *  reference latency L: busbw = 1 / (1/B + m L / S) for S bytes), or -- from level 1 on --
 *  when its share of that is below rel_thr x its best sibling's (the halves of one parent
 *  run at once and compare with each other, which noise shared by the whole cluster does
 *  not upset).
 *  A failing group of 4 nodes or more is split in halves (node order), all failing groups
 *  of a level at once, each on its own group: log2(n) levels down to groups of 2 or 3.
 *  A failing group of 2 or 3 nodes is resolved with witnesses: each of its nodes runs a
 *  2-node allreduce with a node that passed at an earlier level, all at once; a node whose
 *  witness allreduce fails is the culprit.  Two nodes that pass with witnesses but failed
 *  together name their link.
 *  A failure that no child reproduces (the halves of a failing group both pass, or a
 *  group of 3 whose witnesses all pass), one that no witness is left for, and failing
 *  groups past max_fail in a level are unexplained: the validation is then inconclusive
 *  unless it named someone.
 */
#ifndef COLLPROF_CORE_HALVE_H
#define COLLPROF_CORE_HALVE_H

#include <stddef.h>
#include <stdint.h>

/** The halving's knobs. */
typedef struct cp_halve_opts {
    double ref_bw_gbs; /**< the pairs' reference bandwidth (0: none: then only failures and
                            the siblings' raw comparison judge) */
    double ref_lat_us; /**< the pairs' reference latency (0: none) */
    double bytes;      /**< the allreduce's size */
    double abs_thr;    /**< a group fails below abs_thr x cp_halve_expect (default 0.4) */
    double rel_thr;    /**< a child fails below rel_thr x its best sibling (default 0.8) */
    int max_fail;      /**< failing groups followed per level (default 8) */
    int max_levels;    /**< levels at most, level 0 included (0: ceil(log2 n) + 3) */
} cp_halve_opts_t;

/** The bus bandwidth (GB/s) the pairs predict for an allreduce of m nodes (0: no
 *  reference). */
double cp_halve_expect(const cp_halve_opts_t *o, int m);

/** Defaults: no expectation, abs 0.4, rel 0.8, 8 failing groups per level. */
void cp_halve_opts_default(cp_halve_opts_t *o);

/** A group's verdict. */
typedef enum cp_halve_verdict {
    CP_HALVE_PENDING = 0, /**< planned, not judged yet */
    CP_HALVE_PASS = 1,
    CP_HALVE_FAIL = 2,
} cp_halve_verdict_t;

/** Why a group failed. */
typedef enum cp_halve_why {
    CP_HALVE_WHY_NONE = 0,
    CP_HALVE_WHY_ERROR = 1,    /**< wrong data or a backend error */
    CP_HALVE_WHY_ABSOLUTE = 2, /**< below abs_thr x the expectation */
    CP_HALVE_WHY_SIBLING = 3,  /**< below rel_thr x its best sibling */
} cp_halve_why_t;

/** One allreduce of one level. */
typedef struct cp_halve_group {
    int level;
    int parent;       /**< the failing group it comes from, -1 at level 0 */
    int first, count; /**< its nodes: h->nodes[first .. first + count), ascending; a witness
                           group: the node tried, then its witness */
    int witness;      /**< 1: a node of a small failing group with a witness */
    int retry;        /**< 1: level 0's group again (it failed by its bandwidth alone) */
    int failed;       /**< measured: wrong data or a backend error */
    uint64_t wrong;   /**< wrong elements */
    double busbw;     /**< GB/s (0: not measured) */
    int verdict;      /**< cp_halve_verdict_t */
    int why;          /**< cp_halve_why_t */
} cp_halve_group_t;

/** The outcome of the validation. */
typedef enum cp_halve_outcome {
    CP_HALVE_RUNNING = 0,
    CP_HALVE_PASSED = 1,      /**< level 0 passed */
    CP_HALVE_FOUND = 2,       /**< failed, and every failure was explained by a culprit */
    CP_HALVE_PARTLY = 3,      /**< failed, some culprits found, some failures unexplained */
    CP_HALVE_UNEXPLAINED = 4, /**< failed, nobody named */
} cp_halve_outcome_t;

/** "running", "passed", "found", "partly", "unexplained"; "?" out of range. */
const char *cp_halve_outcome_name(int o);

/** The halving over n nodes (cp_halve_init / cp_halve_free). */
typedef struct cp_halve {
    int n;
    cp_halve_opts_t opt;
    int *nodes; /**< every group's nodes */
    size_t nnodes, capn;
    cp_halve_group_t *g; /**< every group so far, level by level */
    size_t ng, capg;
    size_t lfirst, lend;    /**< the current level's groups */
    int level;              /**< the current level (-1: none) */
    int levels;             /**< levels run (judged) */
    unsigned char *good;    /**< [n] in a group that passed */
    unsigned char *culprit; /**< [n] named by the halving */
    int *culprit_group;     /**< [n] the failing group that named it, -1 */
    int nlinks;             /**< links named: two nodes that fail together, not apart */
    int link_a[8], link_b[8], link_group[8]; /**< their ends, the failing pair's group */
    int unexplained;                         /**< failing groups left unexplained */
    int first_unexplained;                   /**< the first of them (-1: none) */
    int outcome;                             /**< cp_halve_outcome_t */
} cp_halve_t;

/**
 * Start over n nodes: level 0 is one group of the nodes with in[i] set, ascending.  Returns
 * the nodes in it; fewer than 2 plan nothing (nothing to validate), -1 when out of memory.
 */
int cp_halve_init(cp_halve_t *h, int n, const unsigned char *in, const cp_halve_opts_t *o);
void cp_halve_free(cp_halve_t *h);

/** The current level's groups (0: none, the halving is over); group_of[node] the group's
 *  index in the level (0 ..), -1 for a node that sits this level out. */
int cp_halve_level(const cp_halve_t *h, int *group_of);

/** The current level's group k (0 ..): failed (wrong data or a backend error), wrong
 *  elements, bus bandwidth in GB/s. */
void cp_halve_set(cp_halve_t *h, int k, int failed, uint64_t wrong, double busbw);

/** Judge the current level and plan the next.  Returns the groups planned (0: the halving
 *  is over, outcome set), -1 when out of memory.  stop: plan nothing more (a time budget
 *  spent): what is still failing is unexplained. */
int cp_halve_next(cp_halve_t *h, int stop);

/** The current level could not run: its parents' failures are unexplained, the halving is
 *  over (outcome set). */
void cp_halve_abort(cp_halve_t *h);

/** The nodes of group k of h (the whole list), for messages. */
static inline const int *cp_halve_nodes(const cp_halve_t *h, size_t k)
{
    return h->nodes + h->g[k].first;
}

/**
 * The evidence of node (or, node < 0, of the validation as a whole) in buf: the failing
 * groups from level 0 down to the one that named it, with their siblings, e.g.
 * "allreduce over 8 nodes 0.05 GB/s busbw (0.12x the pairs' 0.40), halves n[1-4] 0.04 |
 * n[5-8] 0.38, ..., n3 with witness n7 0.03 | n4 with n8 0.36".  names[node]: host names.
 */
void cp_halve_evidence(const cp_halve_t *h, int node, const char *const *names, char *buf,
                       size_t len);

/** The evidence of named link l (0 .. nlinks - 1). */
void cp_halve_link_evidence(const cp_halve_t *h, int l, const char *const *names, char *buf,
                            size_t len);

#endif /* COLLPROF_CORE_HALVE_H */
