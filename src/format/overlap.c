#include "config.h"

#include "format/overlap.h"

#include <collprof/vocab.h>
#include <string.h>

int cp_overlap_row(const collprof_result_row_t *row)
{
    int op = collprof_op_from_name(row->op);
    return op >= 0 && (collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING) &&
           (!strcmp(row->status, "ok") || !strcmp(row->status, "wrong"));
}

/* Has a backend of an earlier row the name of rows[i]'s? */
static int seen_backend(const collprof_result_row_t *rows, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (cp_overlap_row(&rows[j]) && !strcmp(rows[j].backend, rows[i].backend)) {
            return 1;
        }
    }
    return 0;
}

static void print_backend(FILE *f, const collprof_result_row_t *rows, size_t n, const char *be)
{
    fprintf(f, "\nbackend %s\n", be);
    fprintf(f, "  %-11s %-16s %-7s %-8s %12s %11s %12s %10s %12s %11s\n", "op", "variant", "memory",
            "type", "size(B)", "count", "overall(us)", "comm(us)", "compute(us)", "overlap(%)");
    for (size_t i = 0; i < n; i++) {
        const collprof_result_row_t *r = &rows[i];
        if (!cp_overlap_row(r) || strcmp(r->backend, be) != 0) {
            continue;
        }
        fprintf(f, "  %-11s %-16s %-7s %-8s %12llu %11llu %12.1f %10.1f %12.1f %11.1f\n", r->op,
                r->variant, r->memory, r->dtype, (unsigned long long)r->bytes,
                (unsigned long long)r->count, r->overall_us, r->comm_us, r->compute_us,
                r->overlap_pct);
    }
}

void cp_overlap_print(FILE *f, const collprof_result_row_t *rows, size_t n)
{
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (!cp_overlap_row(&rows[i]) || seen_backend(rows, i)) {
            continue;
        }
        if (!any) {
            fprintf(f, "\n== non-blocking operations: communication/computation overlap ==\n");
            fprintf(f, "# OSU's method: comm = post + wait alone; compute = a host loop calibrated "
                       "to comm, run between post and wait;\n");
            fprintf(f, "# overall = post + compute + wait; overlap = 100 x (1 - (overall - "
                       "compute) / comm), within [0, 100];\n");
            fprintf(f, "# each the mean over ranks of the rank's mean over iterations\n");
            any = 1;
        }
        print_backend(f, rows, n, rows[i].backend);
    }
}
