/*
 * The screen on the job (collprof --screen): the rounds of src/screen/screen.h run as link
 * sweep rounds (src/screen/run/sweep.h): each node's local rank 0 exchanges with its partner
 * node's, at the latency and at the bandwidth size, every pair of a round at once; rank 0
 * judges the pairs, plans the confirmation round and sends its pairing to every rank.
 */
#ifndef COLLPROF_CORE_SCREEN_RUN_H
#define COLLPROF_CORE_SCREEN_RUN_H

#include "runner/runner.h"
#include "screen/screen.h"
#include "screen/run/sweep.h"

#include <collprof/schema.h>
#include <stdio.h>

/** What one backend's screen gives rank 0. */
typedef struct cp_screen_out {
    cp_sweep_rows_t pairs;       /**< every pair test, for /links */
    collprof_screen_row_t *rows; /**< the verdict, for /screen */
    size_t nrows;
    int broken; /**< a node became unreachable: no collective of the whole job may follow
                     (rank 0 and the leaders it reached; cp_screen_pairs) */
} cp_screen_out_t;

/**
 * Collective: the screen of one backend over the cells lat and bw (the plan's sendrecv cells
 * of that backend at the two sizes), rounds random rounds with seed, then the confirmation;
 * a pair is slow below thr x the reference: the screen's own median, or baseline (rank 0's;
 * NULL: none).
 * Rank 0 appends to out and prints progress (others pass NULL).  Returns 1 when a round was
 * wrong or failed, 0 when not, -1 when out of memory (on any rank: the pairing is agreed).
 */
int cp_screen_backend(cp_runner_t *r, const cp_cell_t *lat, const cp_cell_t *bw, int rounds,
                      double thr, uint64_t seed, const cp_screen_ref_t *baseline,
                      cp_screen_out_t *out, FILE *progress);

void cp_screen_out_free(cp_screen_out_t *out);

/**
 * Rank 0, the watchdog's thread, while the main thread is stuck in a screen's round: the
 * verdict so far, the nodes of the ranks silent[q] marks (of n) unreachable, the suspects of
 * the rounds done inconclusive unless confirmed, appended to the out being filled.  NULL when
 * no screen runs (or out of memory); the run ends after this.
 */
cp_screen_out_t *cp_screen_hang_verdict(const unsigned char *silent, int n);

#endif /* COLLPROF_CORE_SCREEN_RUN_H */
