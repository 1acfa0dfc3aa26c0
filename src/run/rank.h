/*
 * One rank's run, from boot to teardown.
 */
#ifndef COLLPROF_RUN_RANK_H
#define COLLPROF_RUN_RANK_H

#include "cli/cli.h"

/** Boot, plan, initialise the backends, run the cells or the link sweep,
 *  write and close; the rank's exit status.  The watchdog is started and
 *  stopped here. */
int cp_rank_run(int argc, char **argv, cp_options_t *opt);

#endif /* COLLPROF_RUN_RANK_H */
