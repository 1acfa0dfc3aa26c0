/*
 * Inside the screen's runner (screen_run.c, screen_pairs.c).
 */
#ifndef COLLPROF_CORE_SCREEN_RUN_INT_H
#define COLLPROF_CORE_SCREEN_RUN_INT_H

#include "screen/run/screen_run.h"
#include "screen/run/screen_valid.h"

/* Every pair by itself (screen_pairs.c): the backend keeps a deadline per peer, the control
 * channel is TCP with rank 0 reaching every node's leader directly, --timeout is not 0, and
 * there are 2 nodes or more.  The same answer on every rank. */
int cp_screen_pairs_usable(const cp_runner_t *r, const cp_cell_t *lat);

/* The screen's rounds, each pair by itself, rank 0 planning (s: its schedule, on rank 0 the
 * pairs and verdict filled), then the validation's levels (val, rank 0's), each group on a
 * context of its own; a node that stops answering is unreachable and the screen goes on.
 * out->broken set where the job is no longer whole.  0, or -1 (out of memory, rank 0 gone). */
int cp_screen_pairs(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, cp_screen_t *s,
                    const int *lead, cp_screen_out_t *out, cp_screen_valid_t *val, FILE *progress);

/* After the last recheck round the cap allows (nr: one per random round): planned, the
 * pairs still planned, are dropped, logged once (when log) with how many; 0, or planned when
 * negative (a failure). */
int cp_screen_recheck_cap(int planned, int nr, int log);

/* Rank 0, before re-pairing round k (from 0) with m pairs planned: 1, logged, when the cap
 * (CP_SCREEN_REPAIR_ROUNDS) stops it, else 0 (screen_pairs.c; both runners use it). */
int cp_screen_repair_capped(int k, int m);

#endif /* COLLPROF_CORE_SCREEN_RUN_INT_H */
