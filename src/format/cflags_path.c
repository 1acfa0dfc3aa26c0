/*
 * The text of the path check's flagged verdicts (cflags.h, counters/path_check.h).
 */
#include "config.h"

#include "format/cflags.h"

#include <string.h>

/* The per-op figure of the path row NAME of rows[k]'s cell and node; 0 when absent. */
static double per_op(const collprof_counter_row_t *rows, size_t n, size_t k, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cell == rows[k].cell && rows[i].node == rows[k].node &&
            strcmp(rows[i].source, "path") == 0 && strcmp(rows[i].name, name) == 0) {
            return rows[i].per_op;
        }
    }
    return 0;
}

/* The interfaces of rows "PREFIX/IFACE" of rows[k]'s cell and node, comma-separated. */
static void ifaces(const collprof_counter_row_t *rows, size_t n, size_t k, const char *prefix,
                   FILE *f)
{
    size_t len = strlen(prefix);
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].cell == rows[k].cell && rows[i].node == rows[k].node &&
            strcmp(rows[i].source, "path") == 0 && strncmp(rows[i].name, prefix, len) == 0) {
            fprintf(f, "%s%s", any ? "," : "", rows[i].name + len);
            any = 1;
        }
    }
    if (!any) {
        fputs("none", f);
    }
}

void cp_cflag_path_note(const collprof_counter_row_t *rows, size_t n, size_t k, FILE *f)
{
    const collprof_counter_row_t *v = &rows[k];
    fprintf(f, "    path: node %d (%s): %s: ", v->node, v->host, v->unit);
    if (v->delta > 0) {
        fprintf(f, "%.2fx the bound ", v->delta);
    }
    fprintf(f, "(NIC %.0f B/op, bound %.0f B/op), via ", per_op(rows, n, k, "nic"),
            per_op(rows, n, k, "bound"));
    ifaces(rows, n, k, "via/", f);
    fputs(" (expected ", f);
    ifaces(rows, n, k, "expected/", f);
    fputs(")\n", f);
}
