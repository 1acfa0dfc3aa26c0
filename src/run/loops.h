/*
 * The run loops of one rank: the cells of the plan, the link sweep, or the screen.
 */
#ifndef COLLPROF_RUN_LOOPS_H
#define COLLPROF_RUN_LOOPS_H

#include "run/rank_run.h"

/** Collective: every cell of the plan, each repeated as the options say;
 *  *stopped when rank 0 could not write.  Returns the exit status. */
int cp_loop_cells(cp_rank_run_t *rr, int *stopped);

/** Collective: every round of each link-sweep cell, then the /links table;
 *  *stopped when rank 0 could not write it.  Returns the exit status. */
int cp_loop_sweep(cp_rank_run_t *rr, int *stopped);
/** collprof --replay (replay_loop.c): the trace on every backend of the plan. */
int cp_loop_replay(cp_rank_run_t *rr, int *stopped);
/** Before any backend communicates: read --replay's trace into rr->trace and check it
 *  against the job; 0, or an exit status with the reason in err. */
int cp_replay_prepare(cp_rank_run_t *rr, char *err, size_t len);
void cp_replay_free(cp_rank_run_t *rr);

/** Collective (collprof --screen): the screen of each backend, then the /links and /screen
 *  tables; *stopped when rank 0 could not write them.  Returns the exit status: 0 healthy,
 *  1 something flagged or a round failed, 2 inconclusive (the same on every rank). */
int cp_loop_screen(cp_rank_run_t *rr, int *stopped);

#endif /* COLLPROF_RUN_LOOPS_H */
