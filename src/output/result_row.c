#include "config.h"

#include "output/result_row.h"

#include "colls/colls.h"
#include "runner/prov.h"
#include "runner/split.h"

#include <stdio.h>
#include <string.h>

void cp_result_row(const cp_plugin_t *plugin, const cp_cell_t *cell, const cp_result_t *res,
                   int index, collprof_result_row_t *row)
{
    const collprof_dtype_info_t *dt = collprof_dtype_info(cell->dtype);
    memset(row, 0, sizeof(*row));
    row->cell = index;
    snprintf(row->backend, sizeof(row->backend), "%s", plugin->name);
    snprintf(row->variant, sizeof(row->variant), "%s", cell->variant);
    snprintf(row->op, sizeof(row->op), "%s", collprof_op_name(cell->op));
    snprintf(row->dtype, sizeof(row->dtype), "%s", dt->name);
    snprintf(row->redop, sizeof(row->redop), "%s",
             (cp_op_flags(cell->op) & COLLPROF_OPF_REDUCES) ? collprof_redop_name(cell->redop)
                                                            : "none");
    row->root = cell->root;
    row->in_place = cell->in_place;
    if (cell->imb != NULL) {
        snprintf(row->imbalance, sizeof(row->imbalance), "%s", cell->imb->label);
    }
    row->count = cell->count;
    row->bytes = res->bytes ? res->bytes : cell->count * dt->size;
    row->iterations = res->iters > 0 ? res->iters : cell->iters;
    row->warmup = cell->warmup;
    row->time_mean_us = res->fig.stats.mean;
    row->time_min_us = res->fig.stats.min;
    row->time_p50_us = res->fig.stats.p50;
    row->time_p95_us = res->fig.stats.p95;
    row->time_p99_us = res->fig.stats.p99;
    row->time_max_us = res->fig.stats.max;
    row->algbw_gbs = res->fig.algbw;
    row->busbw_gbs = res->fig.busbw;
    row->repeats = res->repeats;
    row->rep_p50_us = res->repeats > 0 ? res->ci.median : 0;
    row->ci_lo_us = res->ci.lo;
    row->ci_hi_us = res->ci.hi;
    row->ci_level = res->ci.coverage;
    row->bimodal = res->bimodal;
    row->mode_lo_us = res->modes.lo;
    row->mode_lo_n = res->modes.lo_n;
    row->mode_hi_us = res->modes.hi;
    row->mode_hi_n = res->modes.hi_n;
#define CP_ROW_FIGURE(col) row->col = res->fig.col;
    CP_ROW_FIGURES(CP_ROW_FIGURE)
#undef CP_ROW_FIGURE
    snprintf(row->status, sizeof(row->status), "%s", collprof_cell_status_name(res->fig.status));
    snprintf(row->error, sizeof(row->error), "%s", res->fig.reason);
    row->start_time = res->start_epoch;
    snprintf(row->memory, sizeof(row->memory), "%s", collprof_memtype_name(cell->memtype));
    if (cell->split) {
        snprintf(row->split, sizeof(row->split), "%s", cp_split_name(cell->split));
        row->group_ranks = cell->group_n;
    }
    if (res->prov != NULL) {
        cp_prov_row(res->prov, row);
    }
    if (cp_op_flags(cell->op) & COLLPROF_OPF_NONBLOCKING) { /* host timed on every backend */
        snprintf(row->timer, sizeof(row->timer), "%s", CP_PROV_HOST_TIMER);
    }
    if (res->fig.allocation[0]) { /* the core allocated (--alloc): not what the backend says */
        snprintf(row->allocation, sizeof(row->allocation), "%s", res->fig.allocation);
    }
    snprintf(row->sync, sizeof(row->sync), "%s", res->sync);
    row->batch = res->batch;
    row->rotate = res->rotate;
    snprintf(row->check, sizeof(row->check), "%s", res->check);
}
