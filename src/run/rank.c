/*
 * One rank's run: boot, load the plugins and build the plan (the ranks
 * agree on any input error before a backend communicates), bring the
 * backends up and open the outputs, run the loops, close and tear down.
 */
#include "config.h"

#include "run/rank.h"

#include "cli/bopts.h"
#include "plan/limits.h"
#include "base/log.h"
#include "runner/prov.h"
#include "runner/split.h"
#include "base/timeouts.h"
#include "base/util.h"
#include "wd/watchdog.h"
#include "output/summary.h"
#include "run/backends.h"
#include "run/exit.h"
#include "run/host.h"
#include "run/loops.h"
#include "run/rank_run.h"
#include "run/wd_hooks.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* kB of the /proc/self/status lines named in keys ("RssAnon:"), -1 where one is not there */
static void status_kb(const char *const *keys, long *kb, int nkeys)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    for (int k = 0; k < nkeys; k++) {
        kb[k] = -1;
    }
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        for (int k = 0; k < nkeys; k++) {
            size_t klen = strlen(keys[k]);
            if (strncmp(line, keys[k], klen) == 0) {
                kb[k] = strtol(line + klen, NULL, 10);
            }
        }
    }
    if (f != NULL) {
        fclose(f);
    }
}

/*
 * -v: where a rank's CPU and memory go, phase by phase (bench/scale_np.sh, docs/scaling.md):
 * per phase the CPU time (user + system), the context switches (voluntary: waits; involuntary:
 * the scheduler took the CPU away) and minor page faults since the previous mark, and the
 * resident memory at its end by kind: private (anonymous), files (the binary and libraries)
 * and shared memory (a shared-memory backend's segment, PMIx's store), as the kernel counts
 * them.  Fixed storage: a mark allocates nothing.
 */
enum { PH_START, PH_BOOT, PH_PREPARE, PH_BACKEND, PH_OPEN, PH_CELLS, PH_END, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"start", "boot",  "prepare", "backend",
                                                  "open",  "cells", "end"};
static struct phase {
    int set;
    double cpu;
    long vcs, ivcs, flt;
    long kb[3]; /* RssAnon, RssFile, RssShmem at the mark */
} phases[PH_COUNT];
static struct rusage phase_last; /* zero: the first mark counts from exec */
static int phase_on;             /* -v */

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
}

static void phase_mark(int ph)
{
    static const char *const keys[3] = {"RssAnon:", "RssFile:", "RssShmem:"};
    struct rusage ru;
    if (!phase_on || getrusage(RUSAGE_SELF, &ru) != 0) {
        return;
    }
    struct phase *p = &phases[ph];
    p->set = 1;
    p->cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime) - tv_s(phase_last.ru_utime) -
             tv_s(phase_last.ru_stime);
    p->vcs = ru.ru_nvcsw - phase_last.ru_nvcsw;
    p->ivcs = ru.ru_nivcsw - phase_last.ru_nivcsw;
    p->flt = ru.ru_minflt - phase_last.ru_minflt;
    status_kb(keys, p->kb, 3);
    phase_last = ru;
}

/* This process's CPU affinity as a list: "0-3,8". */
static void cpu_affinity(char *buf, size_t len)
{
    cpu_set_t set;
    int cpus[CPU_SETSIZE];
    int n = 0;
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            cpus[n++] = c;
        }
    }
    cp_fmt_ranges(cpus, n, buf, len);
}

/* The --split kinds that can tell something on this job's layout; rank 0 says why the others
 * run no cells. */
static unsigned split_kinds(const cp_options_t *opt, const cp_boot_t *b)
{
    unsigned kinds = 0;
    char why[160];
    for (int k = CP_SPLIT_NODE; k < CP_SPLIT_KINDS; k++) {
        if (!(opt->split & COLLPROF_BIT(k))) {
            continue;
        }
        if (cp_split_pointless(b, k, why, sizeof(why)) == NULL) {
            kinds |= COLLPROF_BIT(k);
        } else if (b->rank == 0) {
            fprintf(stderr, "collprof: warning: --split %s: %s; no %s cells\n", cp_split_name(k),
                    why, cp_split_name(k));
        }
    }
    return kinds;
}

/* Collective (--log-dir): rank 0 names the run, and each rank opens its log when open is set;
 * 0, or -1 with a one-line reason in err. */
static int open_rank_log(const cp_boot_t *b, const char *dir, int open, char *err, size_t len)
{
    char run[96] = "";
    if (b->rank == 0) {
        time_t now = time(NULL);
        struct tm tm;
        char ts[32];
        gmtime_r(&now, &tm);
        strftime(ts, sizeof(ts), "%Y%m%dT%H%M%SZ", &tm);
        snprintf(run, sizeof(run), "%s_p%ld", ts, (long)getpid());
    }
    if (cp_oob_bcast(run, sizeof(run), 0) != 0) {
        snprintf(err, len, "--log-dir: the run's name could not be shared");
        return -1;
    }
    return open ? cp_log_file_open(dir, run, b->rank, err, len) : 0;
}

/* Boot, load plugins, build the plan; the ranks agree on any input error
 * before a backend communicates.  Returns -1 to go on, else an exit status. */
static int rank_prepare(cp_rank_run_t *rr)
{
    char err[2048] = "";
    int status = 0;
    cp_boot_t *b = &rr->boot;
    cp_log_hold(1); /* warnings wait: a refused input gives its error line alone */
    if (!strcmp(b->launcher, "none") && !rr->opt->list) {
        cp_log(CP_LOG_WARN, "no PMIx launcher found: running as a single rank (use --np N, "
                            "mpirun or srun --mpi=pmix for more)");
    }
    if (rr->opt->np > 0 && getenv("COLLPROF_SELF_LAUNCHED") == NULL) {
        snprintf(err, sizeof(err),
                 "--np starts its own ranks; under mpirun or srun leave it out "
                 "(the launcher sets the number of ranks)");
        status = CP_EXIT_USAGE;
    }
    cp_log(CP_LOG_INFO, "rank %d of %d on %s (local rank %d, node %d of %d, launcher %s)", b->rank,
           b->nranks, b->hostname, b->local_rank, b->node_id, b->nnodes, b->launcher);
    int nonly = 0;
    char(*only)[64] = cp_backends_only(rr->opt, &nonly);
    rr->split = split_kinds(rr->opt, b);
    if (status == 0 && cp_plugins_load(only, nonly, &rr->plugins, &rr->nplugins) != 0) {
        snprintf(err, sizeof(err), "out of memory loading plugins");
        status = CP_EXIT_FAILED;
    }
    cp_plan_node_t node; /* this rank's node: each node checks its own ranks' memory */
    cp_plan_node_this(&node, b->local_size, b->node_ids[0] == b->node_id, b->nnodes);
    if (status == 0 &&
        (cp_bopts_check(rr->opt, rr->plugins, rr->nplugins, err, sizeof(err)) != 0 ||
         cp_plan_build(rr->opt, rr->plugins, rr->nplugins, b->nranks, &node, &rr->plan, err,
                       sizeof(err)) != 0 ||
         cp_plan_split(rr->split, rr->plugins, b, &rr->plan, err, sizeof(err)) != 0)) {
        status = CP_EXIT_USAGE;
    }
    if (status == 0 && rr->opt->link_sweep && b->nnodes < 2) {
        snprintf(err, sizeof(err),
                 "%s: all %d ranks run on one node (%s): there is no link between "
                 "nodes to measure (run on 2 or more nodes)",
                 rr->opt->screen ? "--screen" : "--link-sweep", b->nranks, b->hostname);
        status = CP_EXIT_USAGE;
    }
    if (status == 0 && rr->opt->replay[0] != '\0') {
        status = cp_replay_prepare(rr, err, sizeof(err));
    }
    if (status == 0 && b->rank == 0 && !rr->opt->dry_run &&
        cp_output_dir_check(cp_output_dir(rr->opt), "--output-dir", err, sizeof(err)) != 0) {
        status = CP_EXIT_USAGE;
    }
    if (rr->opt->log_dir[0] != '\0' && !rr->opt->dry_run &&
        open_rank_log(b, rr->opt->log_dir, status == 0, err, sizeof(err)) != 0) {
        status = CP_EXIT_USAGE;
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, status, err, &a) != CP_AGREE_OK) {
        cp_log_hold_drop();
        if (b->rank == 0) {
            cp_error_line("collprof", a.msg);
        }
        return a.result == CP_AGREE_FAILED && status != CP_EXIT_FAILED ? CP_EXIT_USAGE
                                                                       : CP_EXIT_FAILED;
    }
    cp_log_hold(0);
    if (b->rank == 0) {
        cp_backends_report_unusable(rr->plugins, rr->nplugins, rr->opt);
    }
    if (rr->opt->dry_run) {
        if (b->rank == 0) {
            cp_plan_print(&rr->plan, rr->plugins, stdout);
        }
        return CP_EXIT_OK;
    }
    return -1;
}

/* The outputs' names, for a rank that reports a timeout when rank 0 is stopped. */
static void publish_files(const cp_summary_t *sum)
{
    char files[CP_WD_FILES_LEN];
    const char *h5 = cp_summary_h5_path(sum);
    snprintf(files, sizeof(files), "%s%s%s", cp_summary_path(sum), h5 ? " and " : "", h5 ? h5 : "");
    cp_wd_publish_files(files);
}

/* Backends up, affinity gathered, outputs open (rank 0); -1 when the outputs failed. */
static int rank_open(cp_rank_run_t *rr, int argc, char **argv)
{
    cp_boot_t *b = &rr->boot;
    cp_host_fill(&rr->host, b, rr->opt, rr->plugins, rr->nplugins);
    rr->ready = cp_backends_init(rr->plugins, rr->nplugins, &rr->plan, b, &rr->host);
    phase_mark(PH_BACKEND);
    cp_split_start(rr->plugins, rr->nplugins, rr->plan.plugins_used, rr->split, b, &rr->host);
    /* what every rank's cells will be measured with, before the first cell */
    if (cp_prov_gather(rr->plugins, rr->nplugins, &rr->plan, &cp_oob_world, b->rank, b->nranks) !=
        0) {
        cp_log(CP_LOG_WARN, "the provenance of the backends could not be gathered: the result "
                            "file records none");
    }
    char mine[256], err[2048] = "";
    /* for rank 0's /ranks table alone: a gather, not an allgather (ranks^2 x 256 B); rank 0
     * says first whether it has room, so that every rank makes the same calls */
    rr->affinity = b->rank == 0 ? calloc((size_t)b->nranks, sizeof(*rr->affinity)) : NULL;
    int room = b->rank != 0 || rr->affinity != NULL;
    cpu_affinity(mine, sizeof(mine));
    if (cp_oob_bcast(&room, sizeof(room), 0) != 0 || !room ||
        cp_oob_gather(mine, rr->affinity, sizeof(mine)) != 0) {
        free(rr->affinity);
        rr->affinity = NULL;
    }
    if (!rr->opt->link_sweep && rr->opt->replay[0] == '\0' &&
        cp_limits_measure(&rr->plan, rr->plugins, rr->nplugins, b, &rr->limits) != 0) {
        cp_log(CP_LOG_WARN, "the memory-copy limit could not be measured");
    }
    cp_oob_log_stats("start-up");
    rr->ri = (cp_run_info_t){.opt = rr->opt,
                             .affinity = (const char(*)[256])rr->affinity,
                             .boot = b,
                             .plugins = rr->plugins,
                             .nplugins = rr->nplugins,
                             .plan = &rr->plan,
                             .argc = argc,
                             .argv = argv};
    int out_ok = 1;
    cp_wd_lock();
    if (b->rank == 0 && cp_summary_open(&rr->ri, &rr->sum, err, sizeof(err)) != 0) {
        out_ok = 0;
    } else if (b->rank == 0 && b->nranks > 1 && rr->sum != NULL) {
        publish_files(rr->sum);
    }
    cp_wdh_outputs(rr->sum, &rr->plan, rr->plugins);
    cp_wd_unlock();
    cp_agreement_t a;
    if (cp_agree(b->nranks, out_ok ? 0 : COLLPROF_ERR_IO, err, &a) != CP_AGREE_OK) {
        if (b->rank == 0) {
            cp_error_line("collprof", a.msg);
        }
        return -1;
    }
    return 0;
}

/* Rank 0 closes its outputs (the footer says whether the run was stopped). */
static void close_outputs(cp_rank_run_t *rr, int exit_status, int stopped)
{
    if (stopped && rr->boot.rank == 0) {
        char msg[2048];
        snprintf(msg, sizeof(msg), "stopped after %d of %d cells: %s", cp_wdh_done(),
                 rr->plan.ncells, rr->sum != NULL ? cp_summary_error(rr->sum) : "?");
        cp_error_line("collprof", msg);
    }
    cp_wd_lock();
    if (rr->sum != NULL) {
        if (stopped) {
            cp_summary_stop(rr->sum, exit_status, "the results could not be written");
        } else {
            cp_summary_close(rr->sum, exit_status);
        }
        rr->sum = NULL;
        cp_wdh_closed();
    }
    cp_wd_unlock();
}

/* The screen left a node unreachable (stopped, cut off): the job's collectives, the backends'
 * finalize and PMIx's would wait for it.  Rank 0, its outputs closed, has the launcher end
 * every rank (the stopped ones too, so that srun returns); a leader it reached leaves. */
static void leave_broken(cp_rank_run_t *rr, int exit_status)
{
    cp_log(CP_LOG_INFO, "leaving without the job's collectives: a node is unreachable");
    cp_log_file_close();
    fflush(stdout);
    fflush(stderr);
    if (rr->boot.rank == 0) {
        cp_oob_abort(exit_status, "collprof --screen: a node stopped answering; its verdict is "
                                  "written, ending the job's ranks");
    }
    _exit(exit_status);
}

/* -v: what this process cost, for judging scale by CPU and memory per rank (bench/scale_np.sh):
 * the peak resident memory counts the shared pages it touched too (a shared-memory backend's
 * segment, the libraries); the private (anonymous) memory left at the end is its own alone.
 * Then the phases: "phases: NAME CPU_ms/voluntary/involuntary switches/faults
 * anon+file+shmem_kB ..." */
static void log_resources(void)
{
    static const char *const keys[1] = {"RssAnon:"};
    struct rusage ru;
    long anon;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double user = tv_s(ru.ru_utime), sys = tv_s(ru.ru_stime);
        status_kb(keys, &anon, 1);
        cp_log(CP_LOG_INFO,
               "resources: CPU %.3f s (user %.3f, system %.3f), peak RSS %.1f MB, private %.1f "
               "MB at the end",
               user + sys, user, sys, (double)ru.ru_maxrss / 1024.0, (double)anon / 1024.0);
    }
    char line[1024] = "";
    size_t used = 0;
    for (int ph = 0; ph < PH_COUNT && used < sizeof(line); ph++) {
        const struct phase *p = &phases[ph];
        if (p->set) {
            int w = snprintf(line + used, sizeof(line) - used, " %s %.1f/%ld/%ld/%ld %ld+%ld+%ld",
                             phase_names[ph], p->cpu * 1e3, p->vcs, p->ivcs, p->flt, p->kb[0],
                             p->kb[1], p->kb[2]);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (line[0] != '\0') {
        cp_log(CP_LOG_INFO,
               "phases (CPU ms/voluntary/involuntary switches/minor faults, then anon+file+shmem "
               "kB resident at the end):%s",
               line);
    }
}

int cp_rank_run(int argc, char **argv, cp_options_t *opt)
{
    cp_rank_run_t rr;
    memset(&rr, 0, sizeof(rr));
    rr.opt = opt;
    phase_on = opt->verbose >= 1;
    phase_mark(PH_START); /* exec, the dynamic linker, the libraries' constructors, main */
    cp_wd_hooks_t hooks = cp_wdh_hooks();
    cp_wd_start(&hooks);
    cp_wd_beat(CP_WD_START, -1, -1, 0, cp_tmo_outer(opt->timeout_s));
    if (cp_boot_init(&rr.boot) != 0) {
        return CP_EXIT_FAILED;
    }
    cp_wd_set_boot(&rr.boot);
    cp_log_setup(rr.boot.rank, rr.boot.nranks, rr.boot.hostname, opt->verbose);
    phase_mark(PH_BOOT);
    int exit_status = rank_prepare(&rr);
    phase_mark(PH_PREPARE);
    if (exit_status < 0) {
        int stopped = 0;
        int opened = rank_open(&rr, argc, argv);
        phase_mark(PH_OPEN);
        exit_status = opened != 0       ? CP_EXIT_FAILED
                      : opt->replay[0]  ? cp_loop_replay(&rr, &stopped)
                      : opt->screen     ? cp_loop_screen(&rr, &stopped)
                      : opt->link_sweep ? cp_loop_sweep(&rr, &stopped)
                                        : cp_loop_cells(&rr, &stopped);
        phase_mark(PH_CELLS);
        close_outputs(&rr, exit_status, stopped);
        if (rr.broken) {
            leave_broken(&rr, exit_status);
        }
        cp_wd_beat(CP_WD_FINISH, -1, -1, 0, cp_tmo_outer(opt->timeout_s));
        cp_split_stop(rr.plugins, rr.nplugins);
        cp_backends_finalize(rr.plugins, rr.nplugins);
    }
    cp_replay_free(&rr);
    cp_limits_free(&rr.limits);
    cp_prov_free(rr.plugins, rr.nplugins);
    cp_plugins_unload(rr.plugins, rr.nplugins);
    cp_plan_free(&rr.plan);
    free(rr.affinity);
    cp_log(CP_LOG_DEBUG, "finished: exit status %d", exit_status);
    cp_log_file_close();
    cp_wd_set_boot(NULL); /* from here a timeout is reported without the tables freed below */
    cp_boot_finalize(&rr.boot);
    phase_mark(PH_END);
    log_resources();
    cp_wd_stop();
    return exit_status;
}
