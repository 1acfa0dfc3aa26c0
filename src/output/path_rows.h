/*
 * The path check's rows of a cell (counters/path_check.h), on rank 0 just before the cell is
 * recorded: one check per node that has counter rows, its rows (source "path") after the
 * cell's own in /counters.
 */
#ifndef COLLPROF_OUTPUT_PATH_ROWS_H
#define COLLPROF_OUTPUT_PATH_ROWS_H

#include "chan/oob.h"
#include "runner/runner.h"

#include <collprof/schema.h>
#include <stddef.h>

/** A copy of res->counters with the path rows of every node after them (malloc'ed, *n rows),
 *  or NULL (*n = 0) when the cell has no counters, ran on one node, or out of memory. */
collprof_counter_row_t *cp_path_add_rows(const collprof_result_row_t *row, const cp_result_t *res,
                                         const cp_boot_t *b, int *n);

#endif /* COLLPROF_OUTPUT_PATH_ROWS_H */
