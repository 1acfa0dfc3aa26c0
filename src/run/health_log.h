/*
 * The health check's window into its collective runs (src/run/health.c): when
 * COLLPROF_HEALTHCHECK_CELLS names a file, rank 0 appends a line as each cell starts and as it
 * ends, flushed at once, so that the check reads them while the run goes on, fails at the
 * first wrong or slow cell, and names the cell a run hung in.  Lines (tab-separated):
 *   S  INDEX  NAME
 *   D  INDEX  STATUS  WRONG  P50_US  BYTES  NAME  REASON
 * NAME is "backend/variant op dtype count"; STATUS collprof_cell_status_name()'s word.
 */
#ifndef COLLPROF_RUN_HEALTH_LOG_H
#define COLLPROF_RUN_HEALTH_LOG_H

#include "run/rank_run.h"
#include "runner/runner.h"

/** Rank 0, under the health check: cell i starts. */
void cp_health_log_start(const cp_rank_run_t *rr, int i);
/** Rank 0, under the health check: cell i ended with res. */
void cp_health_log_done(const cp_rank_run_t *rr, int i, const cp_result_t *res);
/** The file's lines are read with this many bytes at most. */
#define CP_HEALTH_LINE 1024

#endif /* COLLPROF_RUN_HEALTH_LOG_H */
