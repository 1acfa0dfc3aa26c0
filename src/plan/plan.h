/*
 * The plan: the matrix expanded into cells, in run order
 * (spec, backend, variant, dtype, size, op, redop, in-place, imbalance).
 * Built identically on every rank from the same options and plugins.
 */
#ifndef COLLPROF_CORE_PLAN_H
#define COLLPROF_CORE_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "plugin/loader.h"

typedef struct cp_cell {
    int plugin; /**< index into the plugin list */
    char variant[64];
    collprof_op_t op;
    collprof_dtype_t dtype;
    collprof_redop_t redop;
    int root;
    int in_place;
    int memtype;               /**< collprof_memtype_t of both buffers */
    uint64_t count;            /**< elements actually used */
    uint64_t requested;        /**< elements asked for (before rounding to a multiple of n) */
    const cp_imbalance_t *imb; /**< alltoallv and allgatherv only */
    int iters;
    int warmup;
    int sweep;      /**< a link-sweep round (sweep.c): sendrecv with peer, not the ring */
    int peer;       /**< sweep: the rank this rank exchanges with (itself when it sits out) */
    int split;      /**< cp_split_t: the whole job, or this rank's node or cross group (--split) */
    int group_n;    /**< ranks of this rank's group (the job's for CP_SPLIT_WORLD) */
    int group_rank; /**< this rank's place in it (split cells) */
    collprof_cell_status_t pre_status; /**< COLLPROF_CELL_PENDING, or decided at plan time */
    char pre_reason[160];
} cp_cell_t;

typedef struct cp_plan {
    cp_cell_t *cells;
    int ncells;
    int nranks;
    unsigned char *plugins_used; /**< nplugins flags: plugin i has cells (see cp_plan_uses) */
    int nplugins;
} cp_plan_t;

/** The node a plan is built on, for its memory guard: what one node offers and how many
 *  of the job's ranks share it.  cp_plan_node_this() fills it; tests set their own. */
typedef struct cp_plan_node {
    uint64_t host_bytes; /**< the node's memory for the job; 0: unknown (host memory unchecked) */
    int host_cgroup;     /**< 1: host_bytes is this process's cgroup limit, below physical memory */
    uint64_t device_bytes; /**< one device's memory (each rank has one); 0: unknown (unchecked) */
    int local_ranks;       /**< the job's ranks on this node */
    int rank0_here;        /**< rank 0, which holds every rank's samples, runs on this node */
    int nnodes; /**< the job's nodes (for the start-up tables); 0: the ranks over local_ranks */
} cp_plan_node_t;

/** This machine's memory (sysconf), or this process's cgroup limit where it is smaller;
 *  local_ranks, rank0_here and nnodes as given.  device_bytes is 0: the plan is built before
 *  any backend opens its device, and no backend reports its device's memory. */
void cp_plan_node_this(cp_plan_node_t *node, int local_ranks, int rank0_here, int nnodes);

/** The memory limit of this process's control group, v1 or v2, the smallest from its own
 *  group up to the root (cgroup.c); 0 when there is none or it cannot be read. */
uint64_t cp_cgroup_mem_limit(void);

/**
 * Expand opt->specs over the usable plugins for nranks ranks.  Returns 0,
 * or -1 with a one-line error (unknown backend/variant, bad root, traffic
 * matrix size, memory) for exit status 2.  node: the memory guard refuses
 * a cell that cannot fit on it (host memory per node: its local ranks'
 * buffers and bookkeeping, the job's tables each rank holds, and rank 0's
 * samples and gathers where rank 0 runs; device memory per rank), and a job
 * whose start-up tables alone cannot (rank 0's records of every rank where
 * it runs), keeping 20 % for the rest; NULL checks no memory.
 */
int cp_plan_build(const cp_options_t *opt, const cp_plugin_t *plugins, int nplugins, int nranks,
                  const cp_plan_node_t *node, cp_plan_t *plan, char *err, size_t errlen);

/** The memory guard of cp_plan_build (plan_mem.c): 0 when every cell of plan fits on node,
 *  else -1 and the neediest refused cell in err. */
int cp_plan_memory_guard(const cp_options_t *opt, const cp_plugin_t *plugins,
                         const cp_plan_node_t *node, const cp_plan_t *plan, char *err,
                         size_t errlen);
void cp_plan_free(cp_plan_t *plan);

struct cp_boot;
/**
 * --split: after each cell, the same cell on this rank's group of each kind
 * in kinds (COLLPROF_BIT(cp_split_t), see src/runner/split.h).  Their counts
 * are rounded for the group's size; a backend that cannot run on groups, or
 * a root or traffic pattern the group cannot hold decides the cell at plan
 * time.  Returns 0, or -1 (out of memory) with err.
 */
int cp_plan_split(unsigned kinds, const cp_plugin_t *plugins, const struct cp_boot *b,
                  cp_plan_t *plan, char *err, size_t errlen);

/** The variant names to try for plugin p under spec s, in out[max]: its variants as listed
 *  (none listed: "default", then the plugin's own), less a listed one that is what "default"
 *  runs when "default" is listed too.  Their count. */
int cp_plan_variants(const cp_spec_t *s, const cp_plugin_t *p, const char **out, int max);
/** True when the plan has cells for plugin i (any number of plugins). */
int cp_plan_uses(const cp_plan_t *plan, int plugin);

/** Print the plan (--dry-run). */
void cp_plan_print(const cp_plan_t *plan, const cp_plugin_t *plugins, FILE *f);

#endif /* COLLPROF_CORE_PLAN_H */
