/*
 * Runs one cell on every rank: select the variant, allocate and fill
 * buffers, warm up, time every iteration on every rank, check the result
 * exactly, and gather everything to every rank over the out-of-band
 * channel.
 */
#ifndef COLLPROF_CORE_RUNNER_H
#define COLLPROF_CORE_RUNNER_H

#include <collprof/schema.h>

#include "boot/boot.h"
#include "core/cli.h"
#include "core/plan.h"
#include "core/stats.h"
#include "plugin/loader.h"

typedef struct cp_result {
    collprof_cell_status_t status;
    char reason[256];
    int nranks;
    int iters;
    uint64_t bytes;                    /**< S of algBW = S / t */
    uint64_t wrong;                    /**< summed over ranks */
    cp_stats_t stats;                  /**< of the per-iteration max over ranks, us */
    double algbw;                      /**< GB/s (1e9), from the mean time */
    double busbw;                      /**< GB/s */
    double *samples;                   /**< [rank * iters + i], us (NULL unless it ran) */
    double *rank_mean;                 /**< [rank], us */
    uint64_t *send_bytes, *recv_bytes; /**< alltoallv: per rank */
    double start_epoch;                /**< wall-clock start, seconds since 1970 */
} cp_result_t;

typedef struct cp_runner {
    const cp_options_t *opt;
    const cp_boot_t *boot;
    cp_plugin_t *plugins;
    int nplugins;
    int index; /**< the cell's position in the plan (for the watchdog) */
} cp_runner_t;

/** The watchdog timeout of a cell whose largest buffer has bytes bytes:
 *  --timeout when given (0: none), else 60 s + 1 s per 10 MB. */
double cp_cell_timeout(const cp_options_t *opt, uint64_t bytes);

/** The timeout of the cell running now, in seconds (what plugins read as
 *  their "timeout" option); 0 when none. */
double cp_current_timeout(void);

/** Collective over all ranks.  res is filled on every rank. */
void cp_run_cell(cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res);
void cp_result_free(cp_result_t *res);

/** The schema row of a finished cell (index = its position in the plan). */
void cp_result_row(const cp_plugin_t *plugin, const cp_cell_t *cell, const cp_result_t *res,
                   int index, collprof_result_row_t *row);

/**
 * Agree on a local status across ranks over OOB: returns the first
 * failing rank (and its message in msg), or -1 when every rank passed
 * status 0.  On an OOB failure returns -2.
 */
int cp_agree(int nranks, int status, const char *why, char *msg, size_t len);

#endif /* COLLPROF_CORE_RUNNER_H */
