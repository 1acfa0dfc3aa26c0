/*
 * The watchdog's hooks (rank 0): describe a cell, and on a timeout or a
 * signal record the cell the run stopped in and close the outputs.  The
 * state they read is set here by the main thread, under the writer lock
 * (cp_wd_lock) where the watchdog may read it at once.
 */
#ifndef COLLPROF_RUN_WD_HOOKS_H
#define COLLPROF_RUN_WD_HOOKS_H

#include "plan/plan.h"
#include "wd/watchdog.h"
#include "output/summary.h"
#include "plugin/loader.h"

/** The hooks, for cp_wd_start. */
cp_wd_hooks_t cp_wdh_hooks(void);

/** The outputs are open (sum NULL on ranks other than 0): the hooks may
 *  describe the plan's cells and close sum.  Writer lock held. */
void cp_wdh_outputs(cp_summary_t *sum, const cp_plan_t *plan, const cp_plugin_t *plugins);

/** The outputs were closed by the main thread.  Writer lock held. */
void cp_wdh_closed(void);

/** Cells written so far: set after each (writer lock held: the watchdog's hooks read it
 *  under that lock), read for the messages. */
void cp_wdh_set_done(int ncells);
int cp_wdh_done(void);

#endif /* COLLPROF_RUN_WD_HOOKS_H */
