/*
 * `counters FILE`: the hardware and host counters read around each cell (/counters,
 * collprof --counters; docs/metrics.md): one line per cell, node and counter, then the rows
 * the text summary flags (link errors, retransmissions, CPU steal, a throttled GPU ...) and how
 * many cells each kind of trouble touched.
 */
#include "config.h"

#include "format/cflags.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: collprof-report counters FILE [--nonzero] [--source LIST]\n"
            "List the counters each node's first rank read just before and just after\n"
            "every cell (collprof --counters): cell, node, host, source, counter, unit,\n"
            "kind, delta (a counter's increase, a gauge's value after the cell), the\n"
            "increase per operation and the operations between the readings.  Then the\n"
            "rows a user must see (link errors, retransmissions, interface errors or\n"
            "drops, CPU steal above 3 %%, a throttled GPU, ECC or Xid errors, PCIe\n"
            "replays, a path check other than ok) and in how many cells.  Cells on\n"
            "several nodes end with the path check of each\n"
            "node (source path): its verdict (ok, other-nic, excess, unknown), the NIC\n"
            "bytes per operation against the lower bound, the interfaces that carried\n"
            "them and the expected ones (docs/metrics.md).\n"
            "\n"
            "  --nonzero      leave out counters that did not move\n"
            "  --source LIST  only these sources: net, ib, efa, host, gpu, path (comma-separated)\n"
            "  -h, --help     this help\n"
            "\n"
            "Exit status: 0 (also when something is flagged or the file has no counters),\n"
            "2 bad usage or a file that cannot be read.\n");
}

typedef struct settings {
    int nonzero;
    const char *sources; /* NULL: all */
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 1) {
        s->nonzero = 1;
    } else {
        s->sources = val;
    }
    return 0;
}

static int wanted(const settings_t *s, const collprof_counter_row_t *r)
{
    if (s->nonzero && r->delta == 0) {
        return 0;
    }
    if (s->sources == NULL) {
        return 1;
    }
    size_t len = strlen(r->source);
    for (const char *p = s->sources; *p != '\0';) {
        size_t n = strcspn(p, ",");
        if (n == len && strncmp(p, r->source, n) == 0) {
            return 1;
        }
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The kinds of trouble and the cells each touched. */
static void flagged(const cp_report_file_t *f)
{
    cp_cflag_tally_t t = {{0}, {0}};
    char buf[512];
    for (size_t i = 0; i < f->ncounters; i++) {
        cp_cflag_tally_add(&t, f->counters[i].cell, &f->counters[i], 1);
    }
    printf("flagged: %s\n", cp_cflag_tally_text(&t, buf, sizeof(buf)));
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    const cp_report_file_t *f = files[0];
    (void)n;
    if (f->ncounters == 0) {
        printf("%s: no counters (collprof --counters none, or a file before schema 1.11)\n",
               f->path);
        return 0;
    }
    printf("%5s %4s %-16s %-6s %-40s %-9s %-7s %16s %14s %8s\n", "cell", "node", "host", "source",
           "counter", "unit", "kind", "delta", "per op", "ops");
    for (size_t i = 0; i < f->ncounters; i++) {
        const collprof_counter_row_t *r = &f->counters[i];
        if (wanted(s, r)) {
            printf("%5d %4d %-16.16s %-6s %-40s %-9s %-7s %16.6g %14.6g %8lld\n", r->cell, r->node,
                   r->host, r->source, r->name, r->unit, r->kind, r->delta, r->per_op,
                   (long long)r->ops);
        }
    }
    for (size_t i = 0; i < f->ncounters; i++) { /* the path check of every cell and node */
        const collprof_counter_row_t *r = &f->counters[i];
        if (strcmp(r->source, "path") == 0 && strcmp(r->name, "verdict") == 0) {
            printf("cell %d:", r->cell);
            cp_cflag_path_note(f->counters, f->ncounters, i, stdout);
        }
    }
    for (size_t i = 0; i < f->ncounters; i++) {
        const char *why = cp_cflag(&f->counters[i]);
        if (why != NULL && strcmp(f->counters[i].source, "path") != 0) {
            printf("cell %d: ", f->counters[i].cell);
            cp_cflag_notes(&f->counters[i], 1, stdout);
        }
    }
    flagged(f);
    return 0;
}

int cp_report_cmd_counters(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"nonzero", 0, 0}, {"source", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"counters",          usage, opts, option, NULL,
                                        CP_REPORT_FILES_ONE, run};
    settings_t s = {0, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
