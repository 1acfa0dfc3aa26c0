/*
 * `summary`: the text summary of a run, rebuilt from its HDF5 file.  The
 * cell lines come from the same src/format/format.c functions the run
 * used, the tables of which backend wins from src/format/best.c (with the
 * p5 from the raw samples, as the run takes it from its own), and the
 * per-rank bytes line is printed as src/output/summary.c prints it, so
 * those lines match the run's .txt summary byte for byte.
 * The header is shorter: it shows what the file's attributes record.
 */
#include "config.h"

#include "format/cflags.h"
#include "report/report.h"

#include "format/best.h"
#include "format/format.h"
#include "format/overlap.h"
#include "format/replay_print.h"
#include "format/study.h"
#include "format/world.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report summary FILE|DIR...\n"
               "Print the text summary of each result file (a DIR stands for its\n"
               "collprof_*.h5 files, in name order): a header from the file's attributes,\n"
               "the per-cell lines of collprof's own text summary, the tables of which\n"
               "backend and variant wins (see 'collprof-report best'), and the totals.\n"
               "\n"
               "  -h, --help   this help\n"
               "\n"
               "Exit status: 0 success, 2 a file could not be read (the others are still\n"
               "printed) or bad usage.\n");
}

/* cp_world_node_fn over the file's ranks table. */
static int file_node_of(const void *arg, int rank, const char **host)
{
    const cp_report_file_t *f = arg;
    *host = f->ranks[rank].hostname;
    return f->ranks[rank].node_id;
}

static void print_world(const cp_report_file_t *f)
{
    if (f->trace_ops > 0) { /* a trace: its ranks and groups */
        printf("world:      %lld ranks (a trace)\n", f->root.world_size);
        printf("trace:      %llu operations in %llu process groups (docs/replay.md)\n",
               (unsigned long long)f->trace_ops, (unsigned long long)f->trace_groups);
        return;
    }
    if (f->nranks == 0 && f->root.imported_from[0]) { /* the source did not say */
        printf("world:      not recorded by %s\n", f->root.imported_from);
        return;
    }
    if (f->nranks != f->root.world_size || f->nranks == 0) { /* no ranks table: the counts */
        printf("world:      %lld ranks on %lld nodes\n", f->root.world_size, f->root.node_count);
        return;
    }
    cp_world_print(stdout, "world:      ", f->nranks, (int)f->root.node_count, file_node_of, f);
    if (f->ranks[0].log[0] != '\0') {
        char line[512];
        cp_format_logs_line(f->ranks[0].log, line, sizeof(line));
        printf("%s\n", line);
    }
}

/* The run's 'measured' lines of a backend, from the first row of each memory kind that has them
 * (the first with data to check: a barrier's check is none, the run's policy is the others'). */
static void print_provenance(const cp_report_file_t *f, const char *backend)
{
    for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
        const collprof_result_row_t *pick = NULL;
        for (size_t i = 0; i < f->nrows; i++) {
            const collprof_result_row_t *r = &f->rows[i];
            if (!strcmp(r->backend, backend) && !strcmp(r->memory, collprof_memtype_name(m)) &&
                r->timer[0] != '\0' && (pick == NULL || !strcmp(pick->check, "none"))) {
                pick = pick == NULL || strcmp(r->check, "none") ? r : pick;
            }
        }
        if (pick != NULL) {
            char line[512];
            cp_format_provenance(pick, line, sizeof(line));
            printf("%s\n", line);
        }
    }
}

static void print_header(const cp_report_file_t *f)
{
    printf("# collprof-report summary of %s\n", f->path);
    printf("schema:     %s %s (written by collprof %s)\n", f->root.schema, f->root.schema_version,
           f->root.collprof_version[0] ? f->root.collprof_version : "?");
    printf("created:    %s\n", f->root.created);
    printf("command:    %s\n", f->root.command_line);
    if (f->root.tag[0]) {
        printf("tag:        %s\n", f->root.tag);
    }
    print_world(f);
    printf("launcher:   %s%s%s\n", f->root.launcher, f->root.pmix_version[0] ? ", PMIx " : "",
           f->root.pmix_version);
    for (size_t i = 0; i < f->nbackends; i++) {
        const collprof_backend_row_t *b = &f->backends[i];
        if (!strcmp(b->state, "not used")) {
            continue;
        }
        int ready = !strcmp(b->state, "initialised");
        printf("backend:    %s %s (%s)%s%s\n", b->name,
               b->plugin_version[0] ? b->plugin_version : "?",
               b->library_version[0] ? b->library_version : "?",
               ready ? "" : " NOT INITIALISED: ", ready ? "" : b->state);
        print_provenance(f, b->name);
    }
    if (f->root.imported_from[0]) {
        printf("imported:   from %s%s%s (%s, %s): no per-rank samples\n", f->root.imported_from,
               f->root.imported_version[0] ? " " : "", f->root.imported_version,
               f->root.imported_format, f->root.imported_file);
    }
    if (f->root.timing[0]) {
        printf("timing:     %s\n", f->root.timing);
    }
    if (f->root.check[0]) {
        printf("check:      %s\n", f->root.check);
    }
    if (!strcmp(f->root.status, "complete")) {
        printf("status:     complete\n");
    } else if (!strcmp(f->root.status, "incomplete")) {
        printf("status:     incomplete: the run was killed or is still running; these are the\n"
               "            cells it completed\n");
    } else {
        printf("status:     %s\n", f->root.status[0] ? f->root.status : "unknown");
    }
    printf("\n");
}

/* the studies the backends declared, as src/output/summary.c appends them to the run's summary */
static void print_study(const cp_report_file_t *f)
{
    cp_study_print_all(stdout, f->rows, f->nrows, f->backends, f->nbackends, f->root.link_gbps);
}

/* which backend and variant wins, as src/output/summary.c ends the run's summary with it */
static void print_best(cp_report_file_t *f)
{
    size_t n;
    cp_best_cell_t *cells = cp_report_best_cells(&f, 1, &n);
    if (cells != NULL) {
        cp_best_print_summary(stdout, cells, n);
        free(cells);
    }
}

/* The /counters rows of cell r (the writer appends each cell's together, cells in the order of
 * /results): their notes as the run's summary printed them, and counted into t.  *at is a
 * cursor over f->counters that moves with the cells. */
static void counter_notes(const cp_report_file_t *f, const collprof_result_row_t *r, size_t *at,
                          cp_cflag_tally_t *t)
{
    size_t i = *at;
    while (i < f->ncounters && f->counters[i].cell != r->cell) {
        i++;
    }
    if (i == f->ncounters) {
        return; /* none for this cell: the cursor stays for the next one */
    }
    size_t end = i;
    while (end < f->ncounters && f->counters[end].cell == r->cell) {
        end++;
    }
    cp_cflag_notes(&f->counters[i], end - i, stdout);
    cp_cflag_tally_add(t, r->cell, &f->counters[i], end - i);
    *at = end;
}

static void print_file(cp_report_file_t *f)
{
    cp_format_state_t st;
    int ok = 0, wrong = 0, error = 0, unsupported = 0, skipped = 0, timeout = 0;
    unsigned long long nwrong = 0;
    size_t at = 0;
    cp_cflag_tally_t tally;
    memset(&tally, 0, sizeof(tally));
    memset(&st, 0, sizeof(st));
    print_header(f);
    for (size_t i = 0; i < f->nrows; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        const cp_report_cell_t *c = &f->cells[i];
        cp_format_summary_row(&st, r, stdout);
        counter_notes(f, r, &at, &tally);
        if (c->send_bytes != NULL && c->recv_bytes != NULL) {
            /* the same line as cp_summary_cell() in src/output/summary.c */
            printf("    bytes sent/received per rank:");
            for (int q = 0; q < f->nranks; q++) {
                printf(" r%d %llu/%llu", q, (unsigned long long)c->send_bytes[q],
                       (unsigned long long)c->recv_bytes[q]);
            }
            printf("\n");
        }
        ok += !strcmp(r->status, "ok");
        wrong += !strcmp(r->status, "wrong");
        error += !strcmp(r->status, "error");
        unsupported += !strcmp(r->status, "unsupported");
        skipped += !strcmp(r->status, "skipped");
        timeout += !strcmp(r->status, "timeout");
        nwrong += r->wrong;
    }
    print_study(f);
    cp_overlap_print(stdout, f->rows, f->nrows); /* the non-blocking ops, as the run's summary */
    print_best(f);
    if (f->nreplay > 0) { /* a replay's report, as the run printed it (collprof-report replay) */
        cp_replay_print(stdout, f->replay, f->nreplay, f->root.schema_version_minor);
    }
    printf("\n== totals ==\n");
    printf("cells:      %d ok, %d wrong, %d error, %d unsupported, %d skipped\n", ok, wrong, error,
           unsupported, skipped);
    if (timeout > 0) { /* the run's own summary has no such line: it predates timeouts */
        printf("timeouts:   %d\n", timeout);
    }
    if (f->nlinks > 0) {
        size_t bad = 0;
        for (size_t i = 0; i < f->nlinks; i++) {
            bad += strcmp(f->links[i].status, "ok") != 0;
        }
        /* as the run's own totals say it; collprof-report links prints the matrices */
        printf("links:      %zu measured (pairs x sizes x backends), %zu not ok\n", f->nlinks, bad);
    }
    if (f->ncounters > 0) { /* as the run's own totals say it */
        char buf[512];
        printf("counters:   %s flagged\n", cp_cflag_tally_text(&tally, buf, sizeof(buf)));
    }
    printf("#wrong:     %llu\n", nwrong);
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    int *printed = ctx;
    for (int i = 0; i < n; i++) {
        if ((*printed)++) {
            printf("\n");
        }
        print_file(files[i]);
        fflush(stdout);
    }
    return CP_REPORT_EXIT_OK;
}

int cp_report_cmd_summary(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"summary", usage, opts, NULL, NULL, CP_REPORT_FILES_EACH,
                                        run};
    int printed = 0;
    return cp_report_run(&cmd, &printed, argc, argv);
}
