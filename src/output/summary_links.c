#include "config.h"

/*
 * The link sweep's text (summary.h): per backend and kind the node x node matrix of the
 * /links rows, the pairs that were not measured, and under each bandwidth matrix the pairs
 * whose bytes the path check found on another NIC or far above the message (the screen's
 * lines: cp_screen_print_nic_paths), as the run prints them on the summary and the console.
 */

#include "output/summary.h"

#include "screen/links.h"
#include "screen/screen_out.h"

#include <stdlib.h>
#include <string.h>

/* The matrices of one (backend, kind) of the link sweep on f. */
static void print_link_matrix(FILE *f, const collprof_link_row_t *rows, size_t n, size_t first,
                              const char *const *names, int nnodes, double *m)
{
    const collprof_link_row_t *r = &rows[first];
    int bw = !strcmp(r->kind, "bandwidth");
    cp_links_matrix(rows, n, r->backend, r->kind, !bw, nnodes, m);
    fprintf(f, "\n%s %s, %llu B each way at once: %s\n", r->backend, r->kind,
            (unsigned long long)r->bytes,
            bw ? "bandwidth in GB/s (bytes / mean time)" : "mean time in us");
    cp_links_print(f, names, nnodes, m, bw ? 2 : 1, NULL);
    for (size_t i = first; i < n; i++) {
        if (!strcmp(rows[i].backend, r->backend) && !strcmp(rows[i].kind, r->kind) &&
            strcmp(rows[i].status, "ok") != 0) {
            fprintf(f, "  %s-%s: %s%s%s\n", names[rows[i].node_a], names[rows[i].node_b],
                    rows[i].status, rows[i].error[0] ? ": " : "", rows[i].error);
        }
    }
    if (bw) { /* the path check of the bandwidth rows (docs/screen.md): it judges nothing */
        cp_screen_print_nic_paths(f, rows, n, r->backend, names, nnodes);
    }
}

void cp_summary_print_links(FILE *f, const cp_run_info_t *ri, const collprof_link_row_t *rows,
                            size_t n)
{
    const cp_boot_t *b = ri->boot;
    const char **names = calloc((size_t)b->nnodes + 1, sizeof(char *));
    double *m = calloc((size_t)b->nnodes * (size_t)b->nnodes + 1, sizeof(double));
    if (names == NULL || m == NULL) {
        free(names);
        free(m);
        return;
    }
    for (int q = b->nranks - 1; q >= 0; q--) {
        names[b->node_ids[q]] = cp_boot_host(b, q); /* the first rank of each node wins */
    }
    fprintf(f, "\n== link sweep: %d nodes, %d rounds, one pair per node at a time ==\n", b->nnodes,
            cp_links_rounds(b->nnodes));
    for (size_t i = 0; i < n; i++) {
        if (cp_links_first_of(rows, i)) {
            print_link_matrix(f, rows, n, i, names, b->nnodes, m);
        }
    }
    fprintf(f, "(collprof-report links FILE.h5 names the slow links and nodes)\n");
    free(names);
    free(m);
}
