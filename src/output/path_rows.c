/*
 * The path check's rows of a cell (path_rows.h).
 */
#include "config.h"

#include "output/path_rows.h"

#include "counters/path_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nodes of the job, the ranks of its largest node, and the node of rank root. */
static void shape(const cp_boot_t *b, int root, int *nodes, int *ppn, int *root_node)
{
    *nodes = b->nnodes > 0 ? b->nnodes : 1;
    *ppn = b->local_size > 0 ? b->local_size : 1;
    *root_node = 0;
    if (b->node_ids == NULL) {
        return;
    }
    int *per = calloc((size_t)*nodes, sizeof(int));
    for (int q = 0; per != NULL && q < b->nranks; q++) {
        if (b->node_ids[q] >= 0 && b->node_ids[q] < *nodes && ++per[b->node_ids[q]] > *ppn) {
            *ppn = per[b->node_ids[q]];
        }
    }
    free(per);
    *root_node = root >= 0 && root < b->nranks ? b->node_ids[root] : 0;
}

collprof_counter_row_t *cp_path_add_rows(const collprof_result_row_t *row, const cp_result_t *res,
                                         const cp_boot_t *b, int *n)
{
    *n = 0;
    if (res->ncounters <= 0 || b == NULL || b->nnodes < 2) {
        return NULL;
    }
    char exp[256];
    cp_path_cell_t c = {.op = row->op,
                        .bytes = row->bytes, /* count x size for every op the bound covers */
                        .expected = cp_path_expected(row->backend, exp, sizeof(exp))};
    shape(b, row->root, &c.nodes, &c.ppn, &c.root_node);
    size_t room = (size_t)res->ncounters + (size_t)c.nodes * CP_PATH_ROWS;
    collprof_counter_row_t *out = calloc(room, sizeof(*out));
    if (out == NULL) {
        return NULL;
    }
    memcpy(out, res->counters, (size_t)res->ncounters * sizeof(*out));
    int k = res->ncounters;
    for (int node = 0; node < c.nodes; node++) {
        const char *host = NULL;
        for (int i = 0; i < res->ncounters && host == NULL; i++) {
            host = res->counters[i].node == node ? res->counters[i].host : NULL;
        }
        if (host == NULL) {
            continue; /* no rows from this node */
        }
        cp_path_node_t p;
        cp_path_check(&c, res->counters, (size_t)res->ncounters, node, &p);
        k += cp_path_rows(&c, &p, host, &out[k]);
    }
    *n = k;
    return out;
}
