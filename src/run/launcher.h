/*
 * The launcher process of collprof --np N.
 */
#ifndef COLLPROF_RUN_LAUNCHER_H
#define COLLPROF_RUN_LAUNCHER_H

#include "cli/cli.h"

/** Check everything a rank would, then start opt->np ranks of argv (or
 *  print the plan for --dry-run); the exit status. */
int cp_launcher_run(char **argv, cp_options_t *opt);

#endif /* COLLPROF_RUN_LAUNCHER_H */
