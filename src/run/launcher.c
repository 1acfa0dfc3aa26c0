/*
 * The launcher process of collprof --np N (no PMIx server around): it
 * checks the options, the plan and the output directories as a rank would,
 * prints the plan for --dry-run, and otherwise starts N ranks of itself
 * under the embedded PMIx server.
 */
#include "config.h"

#include "run/launcher.h"

#include "launch/launch.h"
#include "cli/bopts.h"
#include "base/log.h"
#include "plan/plan.h"
#include "output/summary.h"
#include "plugin/loader.h"
#include "run/backends.h"
#include "run/exit.h"

#include <stdio.h>

/* The launcher process of --np N: check everything, then start the ranks. */
int cp_launcher_run(char **argv, cp_options_t *opt)
{
    char err[2048];
    cp_plugin_t *plugins = NULL;
    int nplugins = 0, nonly = 0, rc;
    char(*only)[64] = cp_backends_only(opt, &nonly);
    cp_plan_t plan;
    cp_plan_node_t node;
    cp_launch_opts_t lo = {.mode = opt->launch_mode};

    if (opt->link_sweep && !opt->dry_run) {
        cp_log(CP_LOG_ERROR,
               "%s: --np starts every rank on this node: there is no "
               "link between nodes to measure (run under srun -N 2 or more)",
               opt->screen ? "--screen" : "--link-sweep");
        return CP_EXIT_USAGE;
    }
    if (cp_plugins_load(only, nonly, &plugins, &nplugins) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory loading plugins");
        return CP_EXIT_FAILED;
    }
    cp_plan_node_this(&node, opt->np, 1, 1); /* every rank, rank 0 with them, on this node */
    if (cp_bopts_check(opt, plugins, nplugins, err, sizeof(err)) != 0 ||
        cp_plan_build(opt, plugins, nplugins, opt->np, &node, &plan, err, sizeof(err)) != 0) {
        cp_log(CP_LOG_ERROR, "%s", err);
        rc = CP_EXIT_USAGE;
        goto unload;
    }
    if (opt->dry_run) {
        cp_backends_report_unusable(plugins, nplugins, opt);
        cp_plan_print(&plan, plugins, stdout);
        rc = CP_EXIT_OK;
        goto free_plan;
    }
    if (cp_output_dir_check(cp_output_dir(opt), "--output-dir", err, sizeof(err)) != 0 ||
        (opt->log_dir[0] != '\0' &&
         cp_output_dir_check(opt->log_dir, "--log-dir", err, sizeof(err)) != 0)) {
        cp_log(CP_LOG_ERROR, "%s", err);
        rc = CP_EXIT_USAGE;
        goto free_plan;
    }
    rc = cp_launch_self(opt->np, argv, &lo);
free_plan:
    cp_plan_free(&plan);
unload:
    cp_plugins_unload(plugins, nplugins);
    return rc;
}
