/*
 * collprof: parse -> (launch) -> boot -> plan -> run -> write.
 *
 * The same binary is the launcher (collprof --np N with no PMIx server
 * around: validates everything, then starts N ranks of itself) and a rank
 * (under our embedded PMIx server, mpirun or srun).  Every rank parses the
 * same argv and builds the same plan, and the ranks agree over PMIx on any
 * input error before a backend communicates, so bad input gives exit
 * status 2 on every rank and no rank waits for another.
 *
 * This file parses and dispatches; the work is in src/run/: listing.c
 * (--list, --help-backend), health.c (--healthcheck), launcher.c (--np N), rank.c (one rank's run),
 * loops.c (the cells, their repeats, the link sweep), backends.c (which to
 * load, init, finalize), host.c (the plugins' host table and option
 * policy), wd_hooks.c (the watchdog's hooks and the state they read).
 */
#include "config.h"

#include "boot/boot.h"
#include "chan/tree_shape.h"
#include "cli/cli.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/util.h"
#include "wd/watchdog.h"
#include "run/exit.h"
#include "run/health.h"
#include "run/launcher.h"
#include "run/listing.h"
#include "run/rank.h"
#include "slurm/slurm_check.h"

#include <collprof/plugin.h>
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

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
        return CP_EXIT_USAGE;
    }
    int rc, fanout;
    if (opt.help) {
        cp_cli_usage(stdout);
        rc = CP_EXIT_OK;
    } else if (opt.version) {
        printf("collprof %s (plugin ABI %u, PMIx %s)\n", PACKAGE_VERSION,
               COLLPROF_PLUGIN_ABI_VERSION, PMIx_Get_version());
        rc = CP_EXIT_OK;
    } else if (opt.list || opt.help_backend[0] != '\0') {
        rc = cp_listing_run(&opt);
    } else if (opt.healthcheck && getenv("COLLPROF_SELF_LAUNCHED") == NULL &&
               cp_fault_check(err, sizeof(err)) == 0) {
        rc = cp_health_run(&opt); /* this node alone, whatever started it: its own ranks */
    } else if (cp_slurm_check_launch(err, sizeof(err)) != 0 ||
               cp_fault_check(err, sizeof(err)) != 0 ||
               cp_tree_fanout(&fanout, err, sizeof(err)) != 0) {
        if (env_rank() <= 0) {
            cp_error_line("collprof", err);
        }
        rc = CP_EXIT_USAGE;
    } else if (opt.np > 0 && getenv("COLLPROF_SELF_LAUNCHED") == NULL && !cp_boot_have_pmix_env()) {
        cp_log_setup(-1, 0, NULL, opt.verbose);
        rc = cp_launcher_run(argv, &opt);
    } else {
        /* before PMIx and the backends start threads: the watchdog takes
         * the signals; a full file system gives write errors, not SIGXFSZ */
        cp_wd_block_signals();
        signal(SIGXFSZ, SIG_IGN);
        /* and spare environment entries, for the variables the backends set per communicator */
        cp_env_reserve();
        rc = cp_rank_run(argc, argv, &opt);
    }
    cp_cli_free(&opt);
    return rc;
}
