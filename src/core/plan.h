/*
 * The plan: the matrix expanded into cells, in run order
 * (spec, backend, variant, dtype, size, op, redop, in-place, imbalance).
 * Built identically on every rank from the same options and plugins.
 */
#ifndef COLLPROF_CORE_PLAN_H
#define COLLPROF_CORE_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "core/cli.h"
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
    int sweep;      /**< a link-sweep round (src/core/sweep.c): sendrecv with peer, not the ring */
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

/**
 * Expand opt->specs over the usable plugins for nranks ranks.  Returns 0,
 * or -1 with a one-line error (unknown backend/variant, bad root, traffic
 * matrix size, memory) for exit status 2.
 */
int cp_plan_build(const cp_options_t *opt, const cp_plugin_t *plugins, int nplugins, int nranks,
                  cp_plan_t *plan, char *err, size_t errlen);
void cp_plan_free(cp_plan_t *plan);

struct cp_boot;
/**
 * --split: after each cell, the same cell on this rank's group of each kind
 * in kinds (COLLPROF_BIT(cp_split_t), see src/core/split.h).  Their counts
 * are rounded for the group's size; a backend that cannot run on groups, or
 * a root or traffic pattern the group cannot hold decides the cell at plan
 * time.  Returns 0, or -1 (out of memory) with err.
 */
int cp_plan_split(unsigned kinds, const cp_plugin_t *plugins, const struct cp_boot *b,
                  cp_plan_t *plan, char *err, size_t errlen);

/** True when the plan has cells for plugin i (any number of plugins). */
int cp_plan_uses(const cp_plan_t *plan, int plugin);

/** Print the plan (--dry-run). */
void cp_plan_print(const cp_plan_t *plan, const cp_plugin_t *plugins, FILE *f);

#endif /* COLLPROF_CORE_PLAN_H */
