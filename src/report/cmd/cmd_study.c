/*
 * `study`: the study table of one run (by default the first study a backend
 * declared, e.g. a libfabric backend's RMA-write alltoall schedules): one row per
 * size, one column group per variant with algBW, busBW and its share of the
 * link rate, and latency.
 * The same table (src/format/study.c) ends the run's text summary.
 *
 * Link rate, first that applies: this command's --link-gbps, the rate the
 * backend reported (/backends link_gbps), the run's --link-gbps (root
 * attribute link_gbps); without any the % column says n/a.
 */
#include "config.h"

#include "report/report.h"

#include "format/study.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report study FILE [--backend NAME] [--op OP] [--link-gbps X]\n"
               "Print a variant study of a run: one row per message size,\n"
               "one column group per variant of the backend:\n"
               "  | Size | Count | <variant> | BusBW (%%) | Lat (us) | <variant> | ...\n"
               "<variant> is algBW (GB/s), BusBW (%%) busBW in GB/s with its percentage of\n"
               "the link rate, Lat (us) the mean time of the cell.\n"
               "\n"
               "  --backend NAME   backend (default: the first that declared a study;\n"
               "                   files before schema 1.2 declare none: name it)\n"
               "  --op OP          operation (default: the one it declared)\n"
               "  --link-gbps X    link rate in Gbit/s; default: the rate the backend\n"
               "                   reported, else the run's --link-gbps, else n/a\n"
               "  -h, --help       this help\n"
               "\n"
               "Exit status: 0 success (also when the run has no such cells: a note says so),\n"
               "2 bad usage or a file that cannot be read.\n");
}

typedef struct settings {
    const char *backend, *op;
    double link;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 3) {
        return cp_report_parse_double("study", "--link-gbps", val, 1e-6, 1e6, &s->link);
    }
    if (val[0] == '\0' || strlen(val) >= 32) {
        cp_report_error("study: %s '%s' is empty or too long", k == 1 ? "--backend" : "--op", val);
        return -1;
    }
    *(k == 1 ? &s->backend : &s->op) = val;
    return 0;
}

/* --backend and --op, else what the file's backends declare; -1 with a message when none. */
static int pick_study(settings_t *s, const cp_report_file_t *f, char *op_buf, size_t len)
{
    const char *declared = NULL;
    if (s->backend == NULL && cp_study_first(f->backends, f->nbackends, &declared, op_buf, len)) {
        cp_report_error("study: %s declares no study (files before schema 1.2 do not say "
                        "which); name one with --backend NAME --op OP",
                        f->path);
        return -1;
    }
    if (s->backend == NULL) {
        s->backend = declared;
    } else if (s->op == NULL) {
        for (size_t i = 0; i < f->nbackends && s->op == NULL; i++) {
            if (!strcmp(f->backends[i].name, s->backend) &&
                cp_study_first(&f->backends[i], 1, &declared, op_buf, len) == 0) {
                s->op = op_buf;
            }
        }
        if (s->op == NULL) {
            cp_report_error("study: %s declares no study of %s; name the operation with --op OP",
                            f->path, s->backend);
            return -1;
        }
    }
    if (s->op == NULL) {
        s->op = op_buf;
    }
    return 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    settings_t *s = ctx;
    const cp_report_file_t *f = files[0];
    char op_buf[32];
    if (pick_study(s, f, op_buf, sizeof(op_buf)) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    const char *from = "--link-gbps of this command";
    double link = s->link;
    (void)n;
    if (!(link > 0)) {
        for (size_t i = 0; i < f->nbackends; i++) {
            if (!strcmp(f->backends[i].name, s->backend) && f->backends[i].link_gbps > 0) {
                link = f->backends[i].link_gbps;
                from = "reported by the backend";
            }
        }
    }
    if (!(link > 0) && f->root.link_gbps > 0) {
        link = f->root.link_gbps;
        from = "the run's --link-gbps";
    }
    printf("# %s %s study of %s (%lld ranks)\n", s->backend, s->op, f->path, f->root.world_size);
    if (cp_study_print(stdout, f->rows, f->nrows, s->backend, s->op, link, from) == 0) {
        printf("no measured %s %s cells in this file\n", s->backend, s->op);
    }
    return CP_REPORT_EXIT_OK;
}

int cp_report_cmd_study(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"backend", 0, 1}, {"op", 0, 1}, {"link-gbps", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"study", usage, opts, option, NULL, CP_REPORT_FILES_ONE,
                                        run};
    settings_t s = {NULL, NULL, 0};
    return cp_report_run(&cmd, &s, argc, argv);
}
