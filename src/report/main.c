/*
 * collprof-report: read collprof's HDF5 result files after the run.
 * See collprof-report(1) and docs/hdf5-schema.md.
 */
#include "config.h"

#include "report/report.h"

#include <errno.h>
#include <string.h>

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis;
    const char *what;
} commands[] = {
    {"summary", cp_report_cmd_summary, "FILE|DIR...", "the text summary of each run"},
    {"compare", cp_report_cmd_compare, "BASE NEW [--threshold PCT] [--alpha A]",
     "regressions and improvements of NEW against BASE"},
    {"export", cp_report_cmd_export, "--csv|--json FILE|DIR... [-o OUT]",
     "one row per cell, for spreadsheets and scripts"},
    {"stragglers", cp_report_cmd_stragglers, "FILE [--z Z] [--stat min|mean|median]",
     "ranks and hosts that are slower than their peers"},
    {"plot", cp_report_cmd_plot, "FILE|DIR... --out report.html|report.svg",
     "busBW against message size, one chart per operation"},
    {"scaling", cp_report_cmd_scaling, "FILE|DIR... [--metric busbw|time|algbw]",
     "one table per operation across scale points (nodes/ranks)"},
    {"study", cp_report_cmd_study, "FILE [--backend NAME] [--op OP] [--link-gbps X]",
     "the RMA-write all-to-all study: per size, each variant's BW, BusBW (% of link), latency"},
    {"best", cp_report_cmd_best, "FILE|DIR... [--csv|--json] [-o OUT]",
     "which backend/variant is fastest per cell; backend vs backend; variant vs default"},
    {"links", cp_report_cmd_links, "FILE [--threshold X] [--stat best|mean]",
     "the link sweep's node x node matrices; names slow links and suspect nodes"},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report COMMAND [ARGS]\n"
               "Analyse collprof's HDF5 result files (collprof_*.h5) after a run.\n"
               "\n"
               "Commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++) {
        fprintf(f, "  %-10s %s\n  %-10s   %s\n", commands[i].name, commands[i].synopsis, "",
                commands[i].what);
    }
    fprintf(f, "\n"
               "  -h, --help       this help ('collprof-report COMMAND --help' for a command)\n"
               "  -V, --version    version\n"
               "\n"
               "Exit status: 0 success, 1 compare found a significant regression or links a\n"
               "slow link or node, 2 bad usage or a file that cannot be read.  See\n"
               "collprof-report(1).\n");
}

int main(int argc, char **argv)
{
    int rc;
    if (argc < 2) {
        cp_report_error("no command given (see 'collprof-report --help')");
        return CP_REPORT_EXIT_BAD;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        rc = CP_REPORT_EXIT_OK;
    } else if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
        printf("collprof-report %s (schema %s %d.%d)\n", PACKAGE_VERSION, COLLPROF_SCHEMA_NAME,
               COLLPROF_SCHEMA_VERSION_MAJOR, COLLPROF_SCHEMA_VERSION_MINOR);
        rc = CP_REPORT_EXIT_OK;
    } else {
        size_t i = 0;
        while (i < N_COMMANDS && strcmp(commands[i].name, cmd) != 0) {
            i++;
        }
        if (i == N_COMMANDS) {
            cp_report_error("%s '%s' (see 'collprof-report --help')",
                            cmd[0] == '-' ? "unknown option" : "unknown command", cmd);
            return CP_REPORT_EXIT_BAD;
        }
        rc = commands[i].run(argc - 1, argv + 1);
    }
    /* output that did not reach its destination (a full disk, a closed pipe) is a failure */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cp_report_error("writing standard output: %s", strerror(errno));
        return CP_REPORT_EXIT_BAD;
    }
    return rc;
}
