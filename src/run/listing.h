/*
 * collprof --list and --help-backend NAME.
 */
#ifndef COLLPROF_RUN_LISTING_H
#define COLLPROF_RUN_LISTING_H

#include "cli/cli.h"

/** Load the plugins (only NAME for --help-backend), print them on stdout;
 *  the exit status (CP_EXIT_USAGE when NAME does not load). */
int cp_listing_run(const cp_options_t *opt);

#endif /* COLLPROF_RUN_LISTING_H */
