/*
 * collprof --healthcheck: this node alone, one line, exit 0 ok, 1 failed, 2 inconclusive or
 * misconfigured (docs/user-guide.md, "Health check").  The files, entry first:
 *   health.c        the steps in order under one deadline, the line, the exit status
 *   health_drain.c  --healthcheck-drain: failures in a row counted, this node drained
 *   health_child.c  a collective run of this node's ranks (collprof --np N) watched cell by
 *                   cell (health_log.h), stopped at the first failure or at the deadline
 *   health_checks.c the host memory copy, the NICs, the check's shared state (health_int.h)
 */
#ifndef COLLPROF_RUN_HEALTH_H
#define COLLPROF_RUN_HEALTH_H

#include "cli/cli.h"

/** The whole health check of this node; returns the exit status (0, 1 or 2). */
int cp_health_run(const cp_options_t *opt);

#endif /* COLLPROF_RUN_HEALTH_H */
