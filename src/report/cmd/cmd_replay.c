/*
 * `replay FILE`: the report of a replay (collprof --replay, docs/replay.md "The report")
 * printed again from its result file's /replay table, as the run printed it.
 */
#include "config.h"

#include "report/report.h"

#include "format/replay_print.h"

#include <stdio.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report replay FILE\n"
               "The report of a replay (collprof --replay TRACE) from its result file, as the\n"
               "run printed it: per backend, a line per op type x message size x group (the\n"
               "ops, replayed and recorded time, their ratio, busBW, the median issue skew\n"
               "across the group and the rank most often last, the worst status), the whole\n"
               "trace against the recorded window, and the critical path (its length, its\n"
               "share of the replay, the ranks and groups on it); with --gaps compute the\n"
               "exposed and overlapped communication.  Files written before schema 1.12\n"
               "print '-' for the bandwidth, skew and straggler and no critical path; before\n"
               "1.13, no overlapped line.  compare and best take replays too (rows by op x\n"
               "size x group).\n"
               "\n"
               "  -h, --help  this help\n"
               "\n"
               "Exit status: 0 success, 2 bad usage, a file that cannot be read, or a file\n"
               "without a replay.\n");
}

static int option(void *ctx, int k, char *val)
{
    (void)ctx;
    (void)k;
    (void)val;
    return 0;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    (void)ctx;
    (void)n;
    const cp_report_file_t *f = files[0];
    if (f->nreplay == 0) {
        cp_report_error("replay: %s has no replay (no /replay table: collprof --replay writes "
                        "one)",
                        f->path);
        return CP_REPORT_EXIT_BAD;
    }
    cp_replay_print(stdout, f->replay, f->nreplay, f->root.schema_version_minor);
    return CP_REPORT_EXIT_OK;
}

int cp_report_cmd_replay(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"replay", usage, opts, option, NULL, CP_REPORT_FILES_ONE,
                                        run};
    return cp_report_run(&cmd, NULL, argc, argv);
}
