/*
 * collprof-report: read collprof's HDF5 result files after the run.
 * See collprof-report(1) and docs/hdf5-schema.md.
 */
#include "config.h"

#include "report/report.h"

#include "report/read/reader.h"

#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CP_REPORT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CP_REPORT_SANITIZED 1
#endif
#endif

/* Limits on a hostile file: address space and CPU time, relative to the input's size. */
#define CP_REPORT_AS_BASE    (1024.0 * 1024 * 1024) /* bytes */
#define CP_REPORT_AS_PER_IN  64.0                   /* bytes of memory per byte of input */
#define CP_REPORT_CPU_BASE   120.0                  /* seconds */
#define CP_REPORT_CPU_PER_MB 1.0                    /* seconds per MB of input */

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *synopsis;
    const char *what;
} commands[] = {
    {"summary", cp_report_cmd_summary, "FILE|DIR...", "the text summary of each run"},
    {"compare", cp_report_cmd_compare, "BASE NEW [--threshold PCT] [--alpha A]",
     "regressions and improvements of NEW against BASE"},
    {"export", cp_report_cmd_export,
     "--csv|--json|--jsonl|--prom|--openmetrics FILE|DIR... [-o OUT]",
     "one row per cell for scripts, JSON lines, or Prometheus metrics"},
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
    {"counters", cp_report_cmd_counters, "FILE [--nonzero] [--source LIST]",
     "the hardware and host counters around each cell, and what they flag"},
    {"links", cp_report_cmd_links, "FILE [--threshold X] [--stat best|mean] [--baseline B]",
     "the link sweep's matrices; slow links and suspect nodes (or: against a baseline)"},
    {"screen", cp_report_cmd_screen,
     "FILE [--format text|slurm|drain|json] [--backend NAME] [--baseline B] [--apply]",
     "the screen's verdict (or judged again against a baseline); exclude list; drain lines"},
    {"baseline", cp_report_cmd_baseline, "FILE|DIR... -o BASE.h5",
     "healthy pairs of screens and link sweeps, for --baseline (collprof --screen, screen, links)"},
    {"import", cp_report_cmd_import, "[--from FORMAT] INPUT | --trace FORMAT FILE... -o OUT.h5",
     "nccl-tests or OSU results as a result file; or a job's trace (8 formats: import --help)"},
    {"replay", cp_report_cmd_replay, "FILE",
     "a replay's report (collprof --replay): per op x size x group, skew, critical path"},
    {"simulate", cp_report_cmd_simulate,
     "screen --nodes N [--slow I:F] [--noise P] [--seeds A-B] | screen --grid",
     "the screen's own judgement on a model cluster, over many seeds: how often it is right"},
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
               "Exit status: 0 success, 1 compare found a significant regression, links a\n"
               "slow link or node, or screen a flagged node or link; 2 bad usage, a file that\n"
               "cannot be read, an inconclusive screen, a baseline that does not fit, or a\n"
               "drain refused.  See collprof-report(1).\n");
}

#ifndef CP_REPORT_SANITIZED
/* A crash, or a limit hit, while a file is read: its one error line, exit status 2. */
static void on_fatal(int sig)
{
    cp_tmp_unlink(); /* a file half written under a temporary name goes too */
    const char *line = cp_report_crash_line();
    static const char other[] = "collprof-report: error: crashed or ran out of its memory or "
                                "time limit\n";
    if (line[0] != '\0') {
        ssize_t w = write(STDERR_FILENO, line, strlen(line));
        (void)w;
    } else {
        ssize_t w = write(STDERR_FILENO, other, sizeof(other) - 1);
        (void)w;
    }
    (void)sig;
    _exit(CP_REPORT_EXIT_BAD);
}

/* Bytes of input named by the operands: regular files, and the files of directories. */
static double input_bytes(int argc, char **argv)
{
    double sum = 0;
    struct stat st;
    for (int i = 1; i < argc; i++) {
        if (stat(argv[i], &st) != 0) {
            continue;
        }
        if (S_ISREG(st.st_mode)) {
            sum += (double)st.st_size;
            continue;
        }
        DIR *d = S_ISDIR(st.st_mode) ? opendir(argv[i]) : NULL;
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            if (fstatat(dirfd(d), e->d_name, &st, 0) == 0 && S_ISREG(st.st_mode)) {
                sum += (double)st.st_size;
            }
        }
        if (d != NULL) {
            closedir(d);
        }
    }
    return sum;
}

static void lower_limit(int res, double want)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) == 0 && (rl.rlim_cur == RLIM_INFINITY || (double)rl.rlim_cur > want)) {
        rl.rlim_cur = (rlim_t)want;
        setrlimit(res, &rl);
    }
}

/*
 * A hostile file must not take the machine: memory and CPU time are capped
 * relative to the input's size (far above what a real file needs), and a
 * crash or a limit becomes one error line naming the file.  Not under
 * AddressSanitizer or ThreadSanitizer, which reserve terabytes of address
 * space and report crashes themselves.
 */
static void guard(int argc, char **argv)
{
    double in = input_bytes(argc, argv);
    lower_limit(RLIMIT_AS, CP_REPORT_AS_BASE + CP_REPORT_AS_PER_IN * in);
    lower_limit(RLIMIT_CPU, CP_REPORT_CPU_BASE + CP_REPORT_CPU_PER_MB * in / 1e6);
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGXCPU, SIGABRT};
    /* a stack overflow (deep recursion on a hostile file) needs a stack of its own */
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        sigaction(sigs[i], &sa, NULL);
    }
}
#else
static void guard(int argc, char **argv)
{
    (void)argc;
    (void)argv;
}
#endif

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "simulate") != 0) {
        guard(argc, argv); /* simulate reads no file: it takes the time its seeds ask for */
    }
    cp_tmp_signals();
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
