/*
 * Repeats of one cell (collprof --repeats, --min-time, --target-ci,
 * --max-time): each repeat is a whole run of the cell (buffers, warm-up,
 * timed iterations, check) on a fresh context of its backend; their
 * results are merged into one, whose figure is the median of the repeats'
 * p50s with its interval and, when they form two clusters, the two modes
 * (src/base/stats.h).
 */
#ifndef COLLPROF_CORE_REPEAT_H
#define COLLPROF_CORE_REPEAT_H

#include "cli/cli.h"
#include "runner/runner.h"

/** Does the run repeat its cells (--repeats above 1, --min-time or --target-ci)? */
int cp_repeat_on(const cp_options_t *opt);

/** Append the result of one repeat to acc (zeroed before the first) and free one.
 *  0, or -1 when out of memory (acc then says so as an error). */
int cp_repeat_add(cp_result_t *acc, cp_result_t *one);

/** The figures of acc once its repeats are in: the statistics over every iteration, the
 *  median of the repeats' p50s and its interval, the modes. */
void cp_repeat_finish(cp_result_t *acc);

/** LOCAL: should another repeat follow, after elapsed_s seconds in the cell?  The ranks'
 *  clocks differ: rank 0 decides and tells the others. */
int cp_repeat_more(const cp_options_t *opt, const cp_result_t *acc, double elapsed_s);

/** The interval's width in percent of the median; -1 when there is none. */
double cp_repeat_ci_pct(const cp_median_ci_t *ci);

#endif /* COLLPROF_CORE_REPEAT_H */
