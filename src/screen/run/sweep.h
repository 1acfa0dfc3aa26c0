/*
 * The link sweep (collprof --link-sweep): every pair of nodes measured on
 * its own.  In each round of the schedule of src/screen/links.h, the rank
 * with local rank 0 on each node of a pair exchanges a message with its
 * partner's (sendrecv both ways at once, through the plugin ABI's
 * peer_send/peer_recv), while every other rank, and the node sitting the
 * round out, exchanges with itself: every rank calls every collective slot,
 * as the ABI requires, and only the pairs cross the network.  Each round is
 * a cell run by cp_run_cell (warm-up, timed iterations, exact check); a
 * pair's time of an iteration is the max of its two ranks'.
 */
#ifndef COLLPROF_CORE_SWEEP_H
#define COLLPROF_CORE_SWEEP_H

#include <collprof/schema.h>
#include <stdio.h>

#include "runner/runner.h"
#include "screen/screen.h"

/** The rows measured so far (one per backend x size x pair of nodes). */
typedef struct cp_sweep_rows {
    collprof_link_row_t *rows;
    size_t nrows, cap;
} cp_sweep_rows_t;

/**
 * Collective: every round of the schedule for cell (a sendrecv cell of the
 * plan: one backend, one size) and one row per pair appended to out; rank 0
 * prints a line per round on progress (others pass NULL).  Returns 1 when
 * a round was wrong or failed, 0 when none was, -1 when out of memory.
 */
int cp_sweep_cell(cp_runner_t *r, const cp_cell_t *cell, cp_sweep_rows_t *out, FILE *progress);
void cp_sweep_rows_free(cp_sweep_rows_t *out);

/** The job rank of each node's local rank 0 ([nnodes], -1 where none; free it), or NULL. */
int *cp_sweep_leaders(const cp_boot_t *b);

/**
 * Collective: one round of cell where node i's leader exchanges with node nodes[i]'s
 * (nodes[i] < 0: it sits out; symmetric), every other rank with itself; one row per pair
 * appended to out, round recorded as given; rank 0 prints "# TITLE backend kind bytes B,
 * WHAT: pairs" on progress.  Returns 1 when the round was wrong or failed, 0 when not, -1
 * when out of memory.
 */
int cp_sweep_round(cp_runner_t *r, const cp_cell_t *cell, const int *lead, const int *nodes,
                   int round, const char *title, const char *what, cp_sweep_rows_t *out,
                   FILE *progress);

/* Rank 0: the sweep rows [from, end) of one round of the screen (a latency and a bandwidth
 * row per pair) as screen pairs of s: measured when both rows are ok, failed when either is
 * wrong or an error, timed out when either timed out.  -1 when out of memory. */
int cp_screen_add_round(cp_screen_t *s, const cp_sweep_rows_t *rows, size_t from, int phase,
                        int round);

/** The kind of a sweep cell by its size: "latency" (the smaller) or "bandwidth". */
const char *cp_sweep_kind(const cp_options_t *opt, const cp_cell_t *cell);

/** Rank 0, a round run as a cell of the job (res: its result, with every node's counter rows,
 *  --counters): the path check of pair (na, nb)'s bandwidth row (screen_path.c; not for a
 *  latency row); nothing without rows. */
void cp_sweep_path(const cp_runner_t *r, const cp_cell_t *cell, const cp_result_t *res, int na,
                   int nb, collprof_link_row_t *row);

#endif /* COLLPROF_CORE_SWEEP_H */
