/*
 * collprof: parse -> (launch) -> boot -> plan -> run -> write.
 *
 * The same binary is the launcher (collprof --np N with no PMIx server
 * around: validates everything, then starts N ranks of itself) and a rank
 * (under our embedded PMIx server, mpirun or srun).  Every rank parses the
 * same argv and builds the same plan, and the ranks agree over PMIx on any
 * input error before a backend communicates, so bad input gives exit
 * status 2 on every rank and no rank waits for another.
 */
#include "config.h"

#include "boot/boot.h"
#include "colls/colls.h"
#include "core/bopts.h"
#include "core/cli.h"
#include "core/data.h"
#include "core/fault.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/plan.h"
#include "core/prov.h"
#include "core/repeat.h"
#include "core/runner.h"
#include "core/split.h"
#include "core/sweep.h"
#include "core/util.h"
#include "core/watchdog.h"
#include "output/summary.h"
#include "plugin/loader.h"
#include "slurm/slurm_check.h"

#include <pmix.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

/* seconds a backend's own timeout ("timeout" option) adds to the watchdog's */
#define LIBRARY_TIMEOUT_MARGIN_S 5

static const cp_options_t *g_opt;
static const cp_plugin_t *g_plugins; /* the rank's, for the declared defaults */
static int g_nplugins;

/* The user's value (checked against the declarations), else the watchdog's
 * timeout, else the default a plugin declares. */
static const char *host_get_option(const char *key)
{
    const char *v = cp_bopts_given(g_opt, key);
    if (v != NULL) {
        return v;
    }
    /* the watchdog's (the cell's, else --timeout) plus a margin: the watchdog
     * must fire first, as it names the ranks that did not arrive; a library
     * that gave up at the same moment would send its ranks on to the next
     * step and the watchdog would see the hang there, a timeout later */
    if (!strcmp(key, "timeout")) {
        static char buf[32];
        double t = cp_current_timeout() > 0 ? cp_current_timeout() : g_opt->timeout_s;
        if (t > 0) {
            snprintf(buf, sizeof(buf), "%.0f", (t < 1 ? 1 : t) + LIBRARY_TIMEOUT_MARGIN_S);
            return buf;
        }
    }
    /* keys are one name space and the caller is not known: a default only
     * when every plugin that declares the key declares the same one */
    const char *def = NULL;
    for (int i = 0; i < g_nplugins; i++) {
        const collprof_option_t *o = cp_bopt_find(g_plugins[i].be, key);
        if (o != NULL && (o->def == NULL || (def != NULL && strcmp(def, o->def) != 0))) {
            return NULL;
        }
        def = o != NULL ? o->def : def;
    }
    return def;
}

/* ---- what the watchdog needs to close the outputs (rank 0) ---------- */
static struct {
    cp_summary_t *sum; /* NULL once closed */
    const cp_plan_t *plan;
    const cp_plugin_t *plugins;
    int done; /* cells written */
} g_run;

static void wd_describe(void *arg, int cell, char *buf, size_t len)
{
    (void)arg;
    if (g_run.plan == NULL || cell < 0 || cell >= g_run.plan->ncells) {
        snprintf(buf, len, "?");
        return;
    }
    const cp_cell_t *c = &g_run.plan->cells[cell];
    snprintf(buf, len, "%s/%s %s %s count %llu", g_run.plugins[c->plugin].name, c->variant,
             collprof_op_name(c->op), collprof_dtype_info(c->dtype)->name,
             (unsigned long long)c->count);
}

/* The cell a stop falls on: between cells (rank 0 wrote cell k and has not begun k+1, which
 * the other ranks may have) it is the next one to write, if there is one. */
static int stopped_cell(int cell)
{
    return cell < g_run.done && g_run.plan != NULL && g_run.done < g_run.plan->ncells ? g_run.done
                                                                                      : cell;
}

/* A row for the cell the run stopped in, unless it is written already (or none). */
static void record_stopped(int cell, collprof_cell_status_t status, const char *msg)
{
    if (cell >= g_run.done && g_run.plan != NULL && cell < g_run.plan->ncells) {
        const cp_cell_t *c = &g_run.plan->cells[cell];
        cp_result_t res;
        collprof_result_row_t row;
        memset(&res, 0, sizeof(res));
        res.status = status;
        res.nranks = g_run.plan->nranks;
        snprintf(res.reason, sizeof(res.reason), "%s", msg);
        cp_result_row(&g_run.plugins[c->plugin], c, &res, cell, &row);
        cp_summary_cell(g_run.sum, &row, &res);
    }
}

static void wd_timeout(void *arg, int cell, const char *msg)
{
    (void)arg;
    if (g_run.sum == NULL) {
        return;
    }
    char next[768];
    if (stopped_cell(cell) != cell) {
        /* rank 0 stopped after writing cell k: the others wait in cell k+1 */
        char desc[256];
        wd_describe(NULL, g_run.done, desc, sizeof(desc));
        snprintf(next, sizeof(next),
                 "cell %d (%s) timed out: rank 0 was stopped or frozen after writing cell %d",
                 g_run.done, desc, g_run.done - 1);
        cell = g_run.done;
        msg = next;
    }
    record_stopped(cell, COLLPROF_CELL_TIMEOUT, msg);
    cp_summary_stop(g_run.sum, CP_EXIT_TIMEOUT, "an operation timed out (see the timeout row)");
    g_run.sum = NULL;
}

static void wd_signal(void *arg, int sig, int cell)
{
    (void)arg;
    char why[128];
    snprintf(why, sizeof(why), "stopped by signal %d (%s) after %d of %d cells", sig,
             strsignal(sig), g_run.done, g_run.plan ? g_run.plan->ncells : 0);
    fprintf(stderr, "collprof: %s; completed cells are kept\n", why);
    if (g_run.sum != NULL) {
        record_stopped(stopped_cell(cell), COLLPROF_CELL_INCOMPLETE, why);
        cp_summary_stop(g_run.sum, 128 + sig, why);
        g_run.sum = NULL;
    }
}

/* Watchdog timeouts outside cells (start, finish): generous, never 0 unless asked. */
static double outer_timeout(const cp_options_t *opt)
{
    return opt->timeout_s < 0    ? 300.0
           : opt->timeout_s == 0 ? 0.0
           : opt->timeout_s < 60 ? 60.0
                                 : opt->timeout_s;
}

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vlog(level, NULL, fmt, ap);
    va_end(ap);
}

/* This process's CPU affinity as a list: "0-3,8". */
static void cpu_affinity(char *buf, size_t len)
{
    cpu_set_t set;
    buf[0] = '\0';
    if (sched_getaffinity(0, sizeof(set), &set) != 0) {
        snprintf(buf, len, "unknown");
        return;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set)) {
            continue;
        }
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) {
            e++;
        }
        char item[32];
        snprintf(item, sizeof(item), e > c ? "%s%d-%d" : "%s%d", buf[0] ? "," : "", c, e);
        strncat(buf, item, len - strlen(buf) - 1);
        c = e;
    }
}

/* --list: the names; --help-backend: each with its range, default and help */
static void print_options(const collprof_backend_t *be, int full)
{
    if (full) {
        cp_bopts_print(stdout, be);
        return;
    }
    printf("  options:   ");
    for (size_t i = 0; i < be->noptions; i++) {
        printf(" %s%s", be->options[i].flags & COLLPROF_OPTF_LONG ? "--" : "", be->options[i].name);
    }
    printf("%s\n", be->noptions ? "  (collprof --help-backend NAME)" : " none");
}

static void print_list(const cp_plugin_t *plugins, int n, int full)
{
    printf("collprof %s backends (plugins from %s):\n", PACKAGE_VERSION, cp_plugins_search_path());
    if (n == 0) {
        printf("  none found: build them, or set COLLPROF_PLUGIN_PATH to their directory\n");
    }
    for (int i = 0; i < n; i++) {
        const cp_plugin_t *p = &plugins[i];
        if (!p->usable) {
            printf("\n%s: NOT AVAILABLE: %s\n", p->name, p->error);
            continue;
        }
        printf("\n%s %s: %s\n", p->name, p->be->version, p->be->description);
        printf("  library:    %s\n", p->caps.library_version ? p->caps.library_version : "?");
        printf("  operations:");
        for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
            if (p->caps.ops & COLLPROF_BIT(op)) {
                printf(" %s", collprof_op_name(op));
            }
        }
        printf("\n  dtypes:    ");
        for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
            if (p->caps.dtypes & COLLPROF_BIT(t)) {
                printf(" %s", collprof_dtype_info((collprof_dtype_t)t)->name);
            }
        }
        printf("\n  reductions:");
        for (int r = 0; r < COLLPROF_REDOP_COUNT; r++) {
            if (p->caps.redops & COLLPROF_BIT(r)) {
                printf(" %s", collprof_redop_name((collprof_redop_t)r));
            }
        }
        static const char *mem[] = {"host", "pinned", "device"};
        printf("\n  memory:    ");
        for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
            if (p->caps.memtypes & COLLPROF_BIT(m)) {
                printf(" %s", mem[m]);
            }
        }
        if (p->caps.link_gbps > 0) {
            printf("\n  link:        %g Gbit/s (reported by the transport)", p->caps.link_gbps);
        } else {
            printf("\n  link:        not reported (give --link-gbps X for %%-of-link figures)");
        }
        printf("\n  variants:\n    %-24s %s\n", "default", "the library's own choice");
        for (size_t v = 0; v < p->caps.nvariants; v++) {
            const collprof_variant_t *var = &p->caps.variants[v];
            char ops[256] = "";
            for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
                if (var->ops & COLLPROF_BIT(op)) {
                    strncat(ops, ops[0] ? "," : "", sizeof(ops) - strlen(ops) - 1);
                    strncat(ops, collprof_op_name(op), sizeof(ops) - strlen(ops) - 1);
                }
            }
            printf("    %-24s [%s] %s\n", var->name, ops, var->description);
        }
        print_options(p->be, full);
    }
}

static char (*only_backends(const cp_options_t *opt, int *n))[64]
{
    /* load only what some spec names, unless one spec wants them all */
    static char names[CP_MAX_LIST][64];
    int k = 0;
    for (int i = 0; i < opt->nspecs; i++) {
        if (opt->specs[i].nbackends == 0) {
            *n = 0;
            return NULL;
        }
        for (int b = 0; b < opt->specs[i].nbackends; b++) {
            int dup = 0;
            for (int j = 0; j < k; j++) {
                dup |= !strcmp(names[j], opt->specs[i].backends[b]);
            }
            if (!dup && k < CP_MAX_LIST) {
                snprintf(names[k++], 64, "%s", opt->specs[i].backends[b]);
            }
        }
    }
    *n = k;
    return names;
}

static void report_unusable(const cp_plugin_t *plugins, int n, const cp_options_t *opt)
{
    int nonly;
    only_backends(opt, &nonly);
    for (int i = 0; i < n; i++) {
        if (!plugins[i].usable && plugins[i].be == NULL &&
            strstr(plugins[i].error, "no collprof_") == plugins[i].error && nonly > 0) {
            continue; /* an unknown name: the plan reports it as bad input */
        }
        if (!plugins[i].usable) {
            cp_error_once("backend %s skipped: %s", plugins[i].name, plugins[i].error);
        }
    }
}

/* --list, or --help-backend NAME */
static int list_backends(const cp_options_t *opt)
{
    cp_plugin_t *plugins = NULL;
    int n = 0, full = opt->help_backend[0] != '\0';
    char only[1][64];
    snprintf(only[0], sizeof(only[0]), "%s", opt->help_backend);
    cp_log_setup(-1, 0, NULL, opt->verbose);
    if (cp_plugins_load(full ? only : NULL, full, &plugins, &n) != 0) {
        return EXIT_FAILED;
    }
    int rc = EXIT_OK;
    if (full && (n != 1 || plugins[0].be == NULL)) {
        char avail[1024], msg[2048];
        cp_plugins_available(avail, sizeof(avail));
        snprintf(msg, sizeof(msg), "--help-backend: no backend '%s' loads (%s; found: %s)",
                 opt->help_backend, n == 1 ? plugins[0].error : "not found",
                 avail[0] ? avail : "none");
        cp_error_line("collprof", msg);
        rc = EXIT_USAGE;
    } else {
        print_list(plugins, n, full);
    }
    cp_plugins_unload(plugins, n);
    return rc;
}

/* The launcher process of --np N: check everything, then start the ranks. */
static int run_launcher(char **argv, cp_options_t *opt)
{
    char err[2048];
    cp_plugin_t *plugins = NULL;
    int nplugins = 0, nonly = 0, rc;
    char(*only)[64] = only_backends(opt, &nonly);
    cp_plan_t plan;
    cp_plan_node_t node;
    cp_launch_opts_t lo = {.mode = opt->launch_mode};

    if (opt->link_sweep && !opt->dry_run) {
        cp_log(CP_LOG_ERROR, "--link-sweep: --np starts every rank on this node: there is no "
                             "link between nodes to measure (run under srun -N 2 or more)");
        return EXIT_USAGE;
    }
    if (cp_plugins_load(only, nonly, &plugins, &nplugins) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory loading plugins");
        return EXIT_FAILED;
    }
    cp_plan_node_this(&node, opt->np, 1); /* every rank, rank 0 with them, on this node */
    if (cp_bopts_check(opt, plugins, nplugins, err, sizeof(err)) != 0 ||
        cp_plan_build(opt, plugins, nplugins, opt->np, &node, &plan, err, sizeof(err)) != 0) {
        cp_log(CP_LOG_ERROR, "%s", err);
        rc = EXIT_USAGE;
        goto unload;
    }
    if (opt->dry_run) {
        report_unusable(plugins, nplugins, opt);
        cp_plan_print(&plan, plugins, stdout);
        rc = EXIT_OK;
        goto free_plan;
    }
    if (cp_output_dir_check(cp_output_dir(opt), "--output-dir", err, sizeof(err)) != 0 ||
        (opt->log_dir[0] != '\0' &&
         cp_output_dir_check(opt->log_dir, "--log-dir", err, sizeof(err)) != 0)) {
        cp_log(CP_LOG_ERROR, "%s", err);
        rc = EXIT_USAGE;
        goto free_plan;
    }
    rc = cp_launch_self(opt->np, argv, &lo);
free_plan:
    cp_plan_free(&plan);
unload:
    cp_plugins_unload(plugins, nplugins);
    return rc;
}

/* Collective: initialise one backend on every rank; 0 when every rank has it. */
static int init_backend(cp_plugin_t *p, const cp_boot_t *b, collprof_host_t *host)
{
    cp_log(CP_LOG_INFO, "backend %s: initialising (%s)", p->name,
           p->caps.library_version ? p->caps.library_version : "?");
    void *ctx = NULL;
    int rc = p->be->init(host, &ctx);
    char why[480] = "";
    cp_agreement_t a;
    if (rc != COLLPROF_OK) {
        snprintf(why, sizeof(why), "%s: %s", collprof_status_string(rc), p->be->last_error(NULL));
    }
    if (cp_agree(b->nranks, rc, why, &a) != CP_AGREE_OK) {
        snprintf(p->error, sizeof(p->error), "initialisation failed on rank %d: %s", a.rank, a.msg);
        cp_error_once("backend %s skipped: %s", p->name, p->error);
        if (rc == COLLPROF_OK) {
            p->be->finalize(ctx);
        }
        return -1;
    }
    p->ctx = ctx;
    /* again now that the plugin knows its transport (the link rate in use) */
    collprof_caps_t caps;
    memset(&caps, 0, sizeof(caps));
    caps.size = sizeof(caps);
    if (p->be->query(ctx, &caps) == COLLPROF_OK) {
        p->caps = caps;
    }
    cp_log(CP_LOG_INFO, "backend %s: ready", p->name);
    return 0;
}

static int init_backends(cp_plugin_t *plugins, int n, const cp_plan_t *plan, const cp_boot_t *b,
                         collprof_host_t *host)
{
    int usable = 0;
    for (int i = 0; i < n; i++) {
        if (cp_plan_uses(plan, i) && init_backend(&plugins[i], b, host) == 0) {
            usable++;
        }
    }
    return usable;
}

static void finalize_backends(cp_plugin_t *plugins, int n)
{
    for (int i = 0; i < n; i++) {
        if (plugins[i].ctx != NULL) {
            plugins[i].be->finalize(plugins[i].ctx);
            plugins[i].ctx = NULL;
            cp_log(CP_LOG_DEBUG, "backend %s: finalized", plugins[i].name);
        }
    }
}

/* What one rank holds for the whole run. */
typedef struct rank_run {
    cp_options_t *opt;
    cp_boot_t boot;
    cp_plugin_t *plugins;
    int nplugins;
    cp_plan_t plan;
    char (*affinity)[256];
    cp_summary_t *sum;
    collprof_host_t host; /* what the plugins hold from init to finalize */
    cp_run_info_t ri;     /* what the summary holds until it is closed */
    int ready;            /* backends initialised */
    cp_limits_t limits;   /* the memory-copy limit per buffer size (rank 0) */
    unsigned split;       /* the --split kinds with cells */
} rank_run_t;

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
static int rank_prepare(rank_run_t *rr)
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
        status = EXIT_USAGE;
    }
    cp_log(CP_LOG_INFO, "rank %d of %d on %s (local rank %d, node %d of %d, launcher %s)", b->rank,
           b->nranks, b->hostname, b->local_rank, b->node_id, b->nnodes, b->launcher);
    int nonly = 0;
    char(*only)[64] = only_backends(rr->opt, &nonly);
    rr->split = split_kinds(rr->opt, b);
    if (status == 0 && cp_plugins_load(only, nonly, &rr->plugins, &rr->nplugins) != 0) {
        snprintf(err, sizeof(err), "out of memory loading plugins");
        status = EXIT_FAILED;
    }
    cp_plan_node_t node; /* this rank's node: each node checks its own ranks' memory */
    cp_plan_node_this(&node, b->local_size, b->node_ids[0] == b->node_id);
    if (status == 0 &&
        (cp_bopts_check(rr->opt, rr->plugins, rr->nplugins, err, sizeof(err)) != 0 ||
         cp_plan_build(rr->opt, rr->plugins, rr->nplugins, b->nranks, &node, &rr->plan, err,
                       sizeof(err)) != 0 ||
         cp_plan_split(rr->split, rr->plugins, b, &rr->plan, err, sizeof(err)) != 0)) {
        status = EXIT_USAGE;
    }
    g_plugins = rr->plugins;
    g_nplugins = rr->nplugins;
    if (status == 0 && rr->opt->link_sweep && b->nnodes < 2) {
        snprintf(err, sizeof(err),
                 "--link-sweep: all %d ranks run on one node (%s): there is no link between "
                 "nodes to measure (run on 2 or more nodes)",
                 b->nranks, b->hostname);
        status = EXIT_USAGE;
    }
    if (status == 0 && b->rank == 0 && !rr->opt->dry_run &&
        cp_output_dir_check(cp_output_dir(rr->opt), "--output-dir", err, sizeof(err)) != 0) {
        status = EXIT_USAGE;
    }
    if (rr->opt->log_dir[0] != '\0' && !rr->opt->dry_run &&
        open_rank_log(b, rr->opt->log_dir, status == 0, err, sizeof(err)) != 0) {
        status = EXIT_USAGE;
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, status, err, &a) != CP_AGREE_OK) {
        cp_log_hold_drop();
        if (b->rank == 0) {
            cp_error_line("collprof", a.msg);
        }
        return a.result == CP_AGREE_FAILED && status != EXIT_FAILED ? EXIT_USAGE : EXIT_FAILED;
    }
    cp_log_hold(0);
    if (b->rank == 0) {
        report_unusable(rr->plugins, rr->nplugins, rr->opt);
    }
    if (rr->opt->dry_run) {
        if (b->rank == 0) {
            cp_plan_print(&rr->plan, rr->plugins, stdout);
        }
        return EXIT_OK;
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
static int rank_open(rank_run_t *rr, int argc, char **argv)
{
    cp_boot_t *b = &rr->boot;
    rr->host = (collprof_host_t){.size = sizeof(rr->host),
                                 .rank = b->rank,
                                 .nranks = b->nranks,
                                 .local_rank = b->local_rank,
                                 .local_size = b->local_size,
                                 .node_id = b->node_id,
                                 .nnodes = b->nnodes,
                                 .hostname = b->hostname,
                                 .launcher = b->launcher,
                                 .log = host_log,
                                 .oob_allgather = cp_oob_allgather,
                                 .oob_bcast = cp_oob_bcast,
                                 .oob_barrier = cp_oob_barrier,
                                 .get_option = host_get_option,
                                 .oob_alltoall = cp_oob_alltoall};
    rr->ready = init_backends(rr->plugins, rr->nplugins, &rr->plan, b, &rr->host);
    cp_split_start(rr->plugins, rr->nplugins, rr->plan.plugins_used, rr->split, b, &rr->host);
    /* what every rank's cells will be measured with, before the first cell */
    if (cp_prov_gather(rr->plugins, rr->nplugins, &rr->plan, &cp_oob_pmix, b->rank, b->nranks) !=
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
    if (!rr->opt->link_sweep &&
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
    g_run.sum = rr->sum;
    g_run.plan = &rr->plan;
    g_run.plugins = rr->plugins;
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

/* Rank 0 records one finished cell; 0, or -1 when a file could not be written. */
static int record_cell(rank_run_t *rr, int i, const cp_result_t *res)
{
    const cp_cell_t *c = &rr->plan.cells[i];
    int rc = 0;
    cp_wd_beat(CP_WD_WRITE, i, -1, c->warmup, cp_cell_timeout(rr->opt, 0));
    if (rr->sum == NULL) {
        return 0;
    }
    collprof_result_row_t row;
    cp_result_row(&rr->plugins[c->plugin], c, res, i, &row);
    uint64_t bytes = c->count * collprof_dtype_size(c->dtype);
    if (c->memtype == COLLPROF_MEM_HOST) {
        cp_limits_of(&rr->limits, bytes, &row.copy1_gbs, &row.copy_gbs);
    } else if (c->memtype == COLLPROF_MEM_DEVICE) {
        row.dcopy_gbs = cp_limits_device(&rr->limits, c->plugin, c->memtype, bytes);
    }
    cp_wd_lock();
    if (cp_summary_cell(rr->sum, &row, res) != 0) {
        rc = -1;
    }
    g_run.done = i + 1;
    cp_wd_unlock();
    return rc;
}

/* 1 (after saying so on rank 0) when no backend could be initialised. */
static int no_backend(const rank_run_t *rr)
{
    if (rr->ready == 0 && rr->boot.rank == 0) {
        fprintf(stderr, "collprof: error: no backend could run (see the messages above)\n");
    }
    return rr->ready == 0;
}

/* One repeat of cell c (cp_run_cell) on a fresh context of its backend where it can start one. */
static void run_repeat(rank_run_t *rr, cp_runner_t *runner, const cp_cell_t *c, cp_result_t *one)
{
    cp_plugin_t *p = &rr->plugins[c->plugin];
    char why[320];
    /* split cells repeat on their group's context; a cell decided before it runs on none */
    if (c->split == 0 && c->pre_status == COLLPROF_CELL_PENDING && p->ctx != NULL) {
        cp_wd_beat(CP_WD_SETUP, runner->index, -1, c->warmup, cp_cell_timeout(rr->opt, 0));
        runner->ctx = cp_split_fresh(p, &rr->boot, &rr->host, why, sizeof(why));
        static unsigned char warned[CP_MAX_LIST];
        if (runner->ctx == NULL && rr->boot.rank == 0 && c->plugin < CP_MAX_LIST &&
            !warned[c->plugin]) {
            warned[c->plugin] = 1;
            cp_log(CP_LOG_WARN, "--repeats: %s; its repeats share one context", why);
        }
    }
    cp_run_cell(runner, c, one);
    if (runner->ctx != NULL) {
        p->be->finalize(runner->ctx);
        runner->ctx = NULL;
    }
}

/*
 * Where the repeats of cell c keep its buffers (NULL: each allocates its own): unless
 * --fresh-buffers, when they run on the backend's own context (split cells, backends that start
 * one context only) or on fresh ones that can use its buffers (COLLPROF_BACKEND_SHARED_BUFFERS);
 * the buffers of a backend that ties them to a context (registered memory) come with each one.
 */
static cp_kept_bufs_t *keep_buffers(const rank_run_t *rr, const cp_cell_t *c, cp_kept_bufs_t *k)
{
    const cp_plugin_t *p = &rr->plugins[c->plugin];
    int fresh = c->split == 0 && (p->be->flags & COLLPROF_BACKEND_GROUPS);
    if (rr->opt->fresh_buffers || (fresh && !(p->be->flags & COLLPROF_BACKEND_SHARED_BUFFERS))) {
        return NULL;
    }
    k->ctx = c->split ? p->gctx[c->split] : p->ctx;
    return k->ctx != NULL ? k : NULL;
}

/* Cell c, repeated as --repeats, --min-time, --target-ci and --max-time say: the merged
 * result in *res (one run when the run does not repeat). */
static void run_repeats(rank_run_t *rr, cp_runner_t *runner, const cp_cell_t *c, cp_result_t *res)
{
    memset(res, 0, sizeof(*res));
    if (!cp_repeat_on(rr->opt)) { /* one run on the backend's own context */
        cp_result_t one;
        runner->repeat = 0;
        cp_run_cell(runner, c, &one);
        cp_repeat_add(res, &one);
        cp_repeat_finish(res);
        return;
    }
    cp_kept_bufs_t keep = {.ctx = NULL};
    runner->keep = keep_buffers(rr, c, &keep);
    double t0 = cp_now_us();
    int more = 1;
    for (int k = 0; more; k++) {
        cp_result_t one;
        runner->repeat = k;
        run_repeat(rr, runner, c, &one);
        double p50 = one.stats.p50;
        int ran = one.samples != NULL;
        cp_repeat_add(res, &one);
        if (ran) {
            cp_log(CP_LOG_INFO, "cell %d/%d: repeat %d%s%d: p50 %.2f us", runner->index + 1,
                   rr->plan.ncells, k + 1, rr->opt->repeats > k + 1 ? "/" : " of at least ",
                   rr->opt->repeats, p50);
        }
        more = cp_repeat_more(rr->opt, res, (cp_now_us() - t0) * 1e-6);
        if (cp_oob_bcast(&more, sizeof(more), 0) != 0) {
            more = 0; /* the next cell's agreement reports the broken channel */
        }
    }
    if (runner->keep != NULL) {
        cp_kept_bufs_free(&rr->plugins[c->plugin], c->memtype, runner->keep);
        runner->keep = NULL;
    }
    cp_repeat_finish(res);
}

/* Every cell of the plan; *stopped when rank 0 could not write.  Returns the exit status. */
static int run_cells(rank_run_t *rr, int *stopped)
{
    int exit_status = EXIT_OK, stop_run = 0;
    cp_runner_t runner = {
        .opt = rr->opt, .boot = &rr->boot, .plugins = rr->plugins, .nplugins = rr->nplugins};
    for (int i = 0; i < rr->plan.ncells && !stop_run; i++) {
        runner.index = i;
        const cp_cell_t *c = &rr->plan.cells[i];
        cp_result_t res;
        cp_log(CP_LOG_INFO, "cell %d/%d: %s/%s %s %s count %llu", i + 1, rr->plan.ncells,
               rr->plugins[c->plugin].name, c->variant, collprof_op_name(c->op),
               collprof_dtype_name(c->dtype), (unsigned long long)c->count);
        run_repeats(rr, &runner, c, &res);
        cp_log(CP_LOG_INFO, "cell %d/%d: %s%s%s (#wrong %llu)", i + 1, rr->plan.ncells,
               collprof_cell_status_name(res.status), res.reason[0] ? ": " : "", res.reason,
               (unsigned long long)res.wrong);
        if (res.status == COLLPROF_CELL_WRONG || res.status == COLLPROF_CELL_ERROR) {
            exit_status = EXIT_FAILED;
        }
        /* a rank 0 that cannot write stops every rank after this cell */
        stop_run = record_cell(rr, i, &res) != 0;
        cp_result_free(&res);
        if (cp_oob_bcast(&stop_run, sizeof(stop_run), 0) != 0) {
            stop_run = 0; /* the next cell's agreement reports the broken channel */
        }
    }
    *stopped = stop_run;
    return stop_run || no_backend(rr) ? EXIT_FAILED : exit_status;
}

/* The link sweep: every round of each cell (backend x size), then the /links table. */
static int run_sweep(rank_run_t *rr, int *stopped)
{
    int exit_status = EXIT_OK;
    cp_sweep_rows_t rows = {NULL, 0, 0};
    cp_runner_t runner = {
        .opt = rr->opt, .boot = &rr->boot, .plugins = rr->plugins, .nplugins = rr->nplugins};
    for (int i = 0; i < rr->plan.ncells; i++) {
        runner.index = i;
        int rc =
            cp_sweep_cell(&runner, &rr->plan.cells[i], &rows, rr->boot.rank == 0 ? stdout : NULL);
        if (rc != 0) {
            exit_status = EXIT_FAILED;
        }
        g_run.done = i + 1;
    }
    cp_wd_lock();
    if (rr->sum != NULL && cp_summary_links(rr->sum, rows.rows, rows.nrows) != 0) {
        *stopped = 1;
    }
    cp_wd_unlock();
    cp_sweep_rows_free(&rows);
    return *stopped || no_backend(rr) ? EXIT_FAILED : exit_status;
}

/* Rank 0 closes its outputs (the footer says whether the run was stopped). */
static void close_outputs(rank_run_t *rr, int exit_status, int stopped)
{
    if (stopped && rr->boot.rank == 0) {
        char msg[2048];
        snprintf(msg, sizeof(msg), "stopped after %d of %d cells: %s", g_run.done, rr->plan.ncells,
                 rr->sum != NULL ? cp_summary_error(rr->sum) : "?");
        cp_error_line("collprof", msg);
    }
    cp_wd_lock();
    if (rr->sum != NULL) {
        if (stopped) {
            cp_summary_stop(rr->sum, exit_status, "the results could not be written");
        } else {
            cp_summary_close(rr->sum, exit_status);
        }
        g_run.sum = rr->sum = NULL;
    }
    cp_wd_unlock();
}

/* kB of a /proc/self/status line ("RssAnon:"), -1 when it is not there */
static long status_kb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t klen = strlen(key);
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, key, klen) == 0) {
            kb = strtol(line + klen, NULL, 10);
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

/* -v: what this process cost, for judging scale by CPU and memory per rank (bench/scale_np.sh):
 * the peak resident memory counts the shared pages it touched too (a shared-memory backend's
 * segment, the libraries); the private (anonymous) memory left at the end is its own alone */
static void log_resources(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6;
        double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
        cp_log(CP_LOG_INFO,
               "resources: CPU %.3f s (user %.3f, system %.3f), peak RSS %.1f MB, private %.1f "
               "MB at the end",
               user + sys, user, sys, (double)ru.ru_maxrss / 1024.0,
               (double)status_kb("RssAnon:") / 1024.0);
    }
}

static int run_rank(int argc, char **argv, cp_options_t *opt)
{
    rank_run_t rr;
    memset(&rr, 0, sizeof(rr));
    rr.opt = opt;
    cp_wd_hooks_t hooks = {
        .on_timeout = wd_timeout, .on_signal = wd_signal, .describe = wd_describe, .arg = NULL};
    cp_wd_start(&hooks);
    cp_wd_beat(CP_WD_START, -1, -1, 0, outer_timeout(opt));
    if (cp_boot_init(&rr.boot) != 0) {
        return EXIT_FAILED;
    }
    cp_wd_set_boot(&rr.boot);
    cp_log_setup(rr.boot.rank, rr.boot.nranks, rr.boot.hostname, opt->verbose);
    int exit_status = rank_prepare(&rr);
    if (exit_status < 0) {
        int stopped = 0;
        exit_status = rank_open(&rr, argc, argv) != 0 ? EXIT_FAILED
                      : opt->link_sweep               ? run_sweep(&rr, &stopped)
                                                      : run_cells(&rr, &stopped);
        close_outputs(&rr, exit_status, stopped);
        cp_wd_beat(CP_WD_FINISH, -1, -1, 0, outer_timeout(opt));
        cp_split_stop(rr.plugins, rr.nplugins);
        finalize_backends(rr.plugins, rr.nplugins);
    }
    cp_limits_free(&rr.limits);
    cp_prov_free(rr.plugins, rr.nplugins);
    cp_plugins_unload(rr.plugins, rr.nplugins);
    cp_plan_free(&rr.plan);
    free(rr.affinity);
    cp_log(CP_LOG_DEBUG, "finished: exit status %d", exit_status);
    cp_log_file_close();
    cp_boot_finalize(&rr.boot);
    log_resources();
    cp_wd_stop();
    return exit_status;
}

/*
 * Rank as the launcher's environment tells it, before PMIx is up, so that
 * an option error found by every rank is printed once; -1 when unknown.
 */
static int env_rank(void)
{
    static const char *vars[] = {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", NULL};
    for (int i = 0; vars[i]; i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    cp_options_t opt;
    char err[2048];

    if (cp_cli_parse(argc, argv, &opt, err, sizeof(err)) != 0) {
        if (env_rank() <= 0) {
            cp_error_line("collprof", err);
        }
        return EXIT_USAGE;
    }
    g_opt = &opt;
    int rc;
    if (opt.help) {
        cp_cli_usage(stdout);
        rc = EXIT_OK;
    } else if (opt.version) {
        printf("collprof %s (plugin ABI %u, PMIx %s)\n", PACKAGE_VERSION,
               COLLPROF_PLUGIN_ABI_VERSION, PMIx_Get_version());
        rc = EXIT_OK;
    } else if (opt.list || opt.help_backend[0] != '\0') {
        rc = list_backends(&opt);
    } else if (cp_slurm_check_launch(err, sizeof(err)) != 0 ||
               cp_fault_check(err, sizeof(err)) != 0) {
        if (env_rank() <= 0) {
            cp_error_line("collprof", err);
        }
        rc = EXIT_USAGE;
    } else if (opt.np > 0 && getenv("COLLPROF_SELF_LAUNCHED") == NULL && !cp_boot_have_pmix_env()) {
        cp_log_setup(-1, 0, NULL, opt.verbose);
        rc = run_launcher(argv, &opt);
    } else {
        /* before PMIx and the backends start threads: the watchdog takes
         * the signals; a full file system gives write errors, not SIGXFSZ */
        cp_wd_block_signals();
        signal(SIGXFSZ, SIG_IGN);
        rc = run_rank(argc, argv, &opt);
    }
    cp_cli_free(&opt);
    return rc;
}
