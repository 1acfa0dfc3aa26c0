/*
 * The cells `best` decides from (src/format/best.h), for the commands best and summary and
 * for plot's rings (report.h): every row of some files with the p5 of its per-iteration times.
 */
#include "config.h"

#include "report/report.h"

#include "format/best.h"

#include <stdlib.h>

cp_best_cell_t *cp_report_best_cells(cp_report_file_t *const *files, int n, size_t *count)
{
    size_t total = 0, k = 0;
    for (int i = 0; i < n; i++) {
        total += files[i]->nrows;
    }
    cp_best_cell_t *cells = calloc(total + 1, sizeof(*cells));
    if (cells == NULL) {
        cp_report_error("out of memory");
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            const cp_report_cell_t *c = &files[i]->cells[r];
            cells[k].row = &files[i]->rows[r];
            cells[k++].p5_us = cp_best_p5(c->iter_max, files[i]->rows[r].iterations);
        }
    }
    *count = k;
    return cells;
}
