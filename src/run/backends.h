/*
 * The backends of a run: which plugins to load, which cannot run, and
 * their initialisation and finalisation on every rank.
 */
#ifndef COLLPROF_RUN_BACKENDS_H
#define COLLPROF_RUN_BACKENDS_H

#include <collprof/plugin.h>

#include "boot/boot.h"
#include "cli/cli.h"
#include "plan/plan.h"
#include "plugin/loader.h"

/** The backends the specs name, to load only those (a static table of *n
 *  names); NULL with *n = 0 when some spec wants them all. */
char (*cp_backends_only(const cp_options_t *opt, int *n))[64];

/** Say once why each plugin that cannot run is skipped (a name no plugin
 *  has is left to the plan, which reports it as bad input). */
void cp_backends_report_unusable(const cp_plugin_t *plugins, int n, const cp_options_t *opt);

/** Collective: initialise every backend the plan uses on every rank, with
 *  host; how many every rank has.  One that fails is said once: a note when
 *  the first failing rank's status is COLLPROF_ERR_NO_DEVICE (nothing to run
 *  on: "collprof: note: backend NAME skipped: REASON"), an error otherwise. */
int cp_backends_init(cp_plugin_t *plugins, int n, const cp_plan_t *plan, const cp_boot_t *b,
                     collprof_host_t *host);

/** Finalise every initialised backend. */
void cp_backends_finalize(cp_plugin_t *plugins, int n);

#endif /* COLLPROF_RUN_BACKENDS_H */
