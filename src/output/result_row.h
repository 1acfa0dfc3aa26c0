/*
 * A finished cell's row of the results table (include/collprof/schema.h): the cell's
 * description from the plan, its figures from the runner's cp_result_t, its provenance.
 */
#ifndef COLLPROF_OUTPUT_RESULT_ROW_H
#define COLLPROF_OUTPUT_RESULT_ROW_H

#include <collprof/schema.h>

#include "plan/plan.h"
#include "runner/runner.h"
#include "plugin/loader.h"

/** The schema row of a finished cell (index = its position in the plan). */
void cp_result_row(const cp_plugin_t *plugin, const cp_cell_t *cell, const cp_result_t *res,
                   int index, collprof_result_row_t *row);

#endif /* COLLPROF_OUTPUT_RESULT_ROW_H */
