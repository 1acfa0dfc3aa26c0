/*
 * What one rank holds for the whole run (src/run/rank.c sets it up, the
 * loops of src/run/loops.c run on it).
 */
#ifndef COLLPROF_RUN_RANK_RUN_H
#define COLLPROF_RUN_RANK_RUN_H

#include "boot/boot.h"
#include "cli/cli.h"
#include "plan/limits.h"
#include "plan/plan.h"
#include "output/summary.h"
#include "plugin/loader.h"

/* What one rank holds for the whole run. */
typedef struct cp_rank_run {
    cp_options_t *opt;
    cp_boot_t boot;
    cp_plugin_t *plugins;
    int nplugins;
    cp_plan_t plan;
    char (*affinity)[256];
    cp_summary_t *sum;
    collprof_host_t host;   /* what the plugins hold from init to finalize */
    cp_run_info_t ri;       /* what the summary holds until it is closed */
    int ready;              /* backends initialised */
    cp_limits_t limits;     /* the memory-copy limit per buffer size (rank 0) */
    unsigned split;         /* the --split kinds with cells */
    struct cp_trace *trace; /* --replay's trace (replay_loop.c), else NULL */
    int broken;             /* the screen found a node unreachable: no collective of the whole job
                               follows; rank 0 ends the job's ranks once its outputs are closed */
} cp_rank_run_t;

#endif /* COLLPROF_RUN_RANK_RUN_H */
