/*
 * The screen's validation collective on the job (collprof --screen, docs/screen.md
 * "Validation"): after the pair rounds, every rank of the nodes the screen calls healthy
 * runs one allreduce on a group of its own (the backend's context for that group, as split
 * cells have); when it fails, the halving of src/screen/halve.h splits the failing groups, all
 * groups of a level at once, each on its own group, until a node (or a link) is named.
 * Every level is collective over the job: a rank outside the level's groups runs the
 * allreduce alone, on a group of its own.  Rank 0 plans and judges, and sends each level's
 * grouping (one int per node) to every rank.
 */
#ifndef COLLPROF_CORE_SCREEN_VALID_H
#define COLLPROF_CORE_SCREEN_VALID_H

#include "screen/halve.h"
#include "runner/runner.h"
#include "screen/screen.h"
#include "screen/run/screen_run.h"

#include <stdio.h>

/** What one backend's validation gives (rank 0 holds the figures and the words). */
typedef struct cp_screen_valid {
    int ran;              /**< 1: level 0 ran (h holds the halving), 0: not run (why) */
    char why[256];        /**< not run, or stopped: why */
    cp_halve_t h;         /**< rank 0: the levels, the groups and the culprits */
    double secs;          /**< wall time of the whole validation */
    char summary[512];    /**< rank 0: the validation's evidence */
    char (*node_ev)[512]; /**< rank 0: [n] each culprit node's evidence */
    char link_ev[8][512]; /**< rank 0: each named link's */
} cp_screen_valid_t;

/**
 * Collective: the validation of the screen s (its rounds done, rank 0's pairs judged) with
 * the allreduce of bw's size (the screen's bandwidth cell), lead[] the node leaders; not run
 * (v->why) when --screen-validate is off, the backend has no groups, or fewer than 2 nodes
 * are healthy.  Rank 0 prints each level on progress.  Returns 0, or -1 when out of memory
 * (the same on every rank).
 */
int cp_screen_validate(cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                       cp_screen_valid_t *v, FILE *progress);

/** How a level runs when rank 0 alone drives the validation (the screen's pairs,
 *  src/screen/run/screen_pairs.c): level() runs the groups of group_of[node] (groups of them; -1
 *  sits out) and sets each group's figures in h (cp_halve_set); 0, or -1 with why when the
 *  level could not run at all. */
typedef struct cp_valid_by {
    int (*level)(void *arg, const int *group_of, int level, int groups, cp_halve_t *h, char *why,
                 size_t wl);
    void *arg;
} cp_valid_by_t;

/** cp_screen_validate on rank 0 alone, each level run by by (no collective of the job). */
int cp_screen_validate_by(cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                          cp_screen_valid_t *v, FILE *progress, const cp_valid_by_t *by);

/** A validation group's bus bandwidth in GB/s: an allreduce of bytes over m members whose
 *  slowest member's median time is slowest_p50_us (0: not measured, or fewer than 2).  The
 *  one definition of a group's figure, whatever drives the level (run_level on a backend
 *  with a communicator of the job, the screen's pairs on one with groups of their own). */
double cp_screen_valid_busbw(double bytes, int m, double slowest_p50_us);

/** The allreduce cell of a level from the screen's bandwidth cell (float32, the same bytes),
 *  for a group of n ranks where this rank is me. */
cp_cell_t cp_screen_valid_cell(const cp_cell_t *bw, int n, int me);

/**
 * Rank 0: the verdict's rows of this backend (out->rows[first ..], as cp_screen_rows made
 * them) amended with the validation: each culprit node slow, its evidence extended; each
 * named link a row; the validation itself a row (what "verify": passed, failed,
 * inconclusive or skipped, with its evidence); rounds counted with the levels.  0, or -1
 * when out of memory.
 */
int cp_screen_valid_rows(const cp_screen_valid_t *v, const int *lead, const cp_boot_t *b,
                         cp_screen_out_t *out, size_t first);

void cp_screen_valid_free(cp_screen_valid_t *v);

#endif /* COLLPROF_CORE_SCREEN_VALID_H */
