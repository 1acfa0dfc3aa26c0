/*
 * `study`: the RMA-write all-to-all study table of one run (by default the
 * ofi backend's alltoall cells): one row per size, one column group per
 * variant with algBW, busBW and its share of the link rate, and latency.
 * The same table (src/output/study.c) ends the run's text summary.
 *
 * Link rate, first that applies: this command's --link-gbps, the rate the
 * backend reported (/backends link_gbps), the run's --link-gbps (root
 * attribute link_gbps); without any the % column says n/a.
 */
#include "config.h"

#include "report/report.h"

#include "output/study.h"

#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report study FILE [--backend NAME] [--op OP] [--link-gbps X]\n"
               "Print the RMA-write all-to-all study of a run: one row per message size,\n"
               "one column group per variant of the backend:\n"
               "  | Size | Count | <variant> | BusBW (%%) | Lat (us) | <variant> | ...\n"
               "<variant> is algBW (GB/s), BusBW (%%) busBW in GB/s with its percentage of\n"
               "the link rate, Lat (us) the mean time of the cell.\n"
               "\n"
               "  --backend NAME   backend (default: ofi)\n"
               "  --op OP          operation (default: alltoall)\n"
               "  --link-gbps X    link rate in Gbit/s; default: the rate the backend\n"
               "                   reported, else the run's --link-gbps, else n/a\n"
               "  -h, --help       this help\n"
               "\n"
               "Exit status: 0 success (also when the run has no such cells: a note says so),\n"
               "2 bad usage or a file that cannot be read.\n");
}

int cp_report_cmd_study(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"backend", 0, 1}, {"op", 0, 1}, {"link-gbps", 0, 1}, {NULL, 0, 0}};
    cp_report_args_t a = {argc, argv, 1, 0, "study"};
    const char *backend = "ofi", *op = "alltoall";
    double link = 0;
    char *file = NULL, *val;
    int k;
    while ((k = cp_report_next_arg(&a, opts, &val)) != CP_REPORT_ARG_END) {
        if (k == CP_REPORT_ARG_ERROR) {
            return CP_REPORT_EXIT_BAD;
        } else if (k == CP_REPORT_ARG_OPERAND) {
            if (cp_report_one_file("study", &file, val) != 0) {
                return CP_REPORT_EXIT_BAD;
            }
        } else if (k == 0) {
            usage(stdout);
            return CP_REPORT_EXIT_OK;
        } else if (k == 1 || k == 2) {
            if (val[0] == '\0' || strlen(val) >= 32) {
                cp_report_error("study: %s '%s' is empty or too long",
                                k == 1 ? "--backend" : "--op", val);
                return CP_REPORT_EXIT_BAD;
            }
            *(k == 1 ? &backend : &op) = val;
        } else if (cp_report_parse_double("study", "--link-gbps", val, 1e-6, 1e6, &link) != 0) {
            return CP_REPORT_EXIT_BAD;
        }
    }
    if (cp_report_need_file("study", file != NULL) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    cp_report_file_t *f;
    char err[1024], *path;
    if (cp_report_single_path("study", file, &path) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    if (cp_report_open(path, &f, err, sizeof(err)) != 0) {
        cp_report_error("%s: %s", path, err);
        free(path);
        return CP_REPORT_EXIT_BAD;
    }
    const char *from = "--link-gbps of this command";
    if (!(link > 0)) {
        for (size_t i = 0; i < f->nbackends; i++) {
            if (!strcmp(f->backends[i].name, backend) && f->backends[i].link_gbps > 0) {
                link = f->backends[i].link_gbps;
                from = "reported by the backend";
            }
        }
    }
    if (!(link > 0) && f->root.link_gbps > 0) {
        link = f->root.link_gbps;
        from = "the run's --link-gbps";
    }
    printf("# %s %s study of %s (%lld ranks)\n", backend, op, path, f->root.world_size);
    if (cp_study_print(stdout, f->rows, f->nrows, backend, op, link, from) == 0) {
        printf("no measured %s %s cells in this file\n", backend, op);
    }
    free(path);
    cp_report_close(f);
    return CP_REPORT_EXIT_OK;
}
