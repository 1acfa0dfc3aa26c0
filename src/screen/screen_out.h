/*
 * The screen's verdict as rows of the /screen table (include/collprof/schema.h) and as text:
 * the run's summary and collprof-report screen print it from the same rows, so that what a
 * file says and what the run said are the same words.
 */
#ifndef COLLPROF_OUTPUT_SCREEN_OUT_H
#define COLLPROF_OUTPUT_SCREEN_OUT_H

#include "screen/screen.h"

#include <collprof/schema.h>
#include <stdio.h>

/**
 * The rows of s's verdict for backend: one per node, then one per suspect link, appended to
 * *rows (*n rows, reallocated); names[node] the host names.  0, or -1 when out of memory.
 */
int cp_screen_rows(const cp_screen_t *s, const char *backend, const char *const *names,
                   collprof_screen_row_t **rows, size_t *n);

/**
 * Merge one /links row of a pair, its latency or its bandwidth row, into p: the figure of a
 * row that is ok (lat_us: the latency row's p50; bw_gbs: bytes / the bandwidth row's p50);
 * the pair's outcome the row's (cp_screen_outcome_of) that says most against it (an end
 * unreachable, wrong data, a timeout, not set up, measured).  The runner and collprof-report
 * read rows into pairs the same way.
 */
void cp_screen_pair_merge(cp_screen_pair_t *p, const collprof_link_row_t *row);

/** The bandwidth the verdict judges a pair by (GB/s): bytes / the row's p50 (0: none).  The
 *  console's lines of a screen show it, not the row's bw_gbs (bytes / the mean). */
double cp_screen_row_bw_gbs(const collprof_link_row_t *row);

/**
 * The pairs of backend's /links rows added to s (cp_screen_init'ed for the nodes): a pair's
 * rows of one round make one pair, rounds below random in CP_SCREEN_RANDOM, the later ones in
 * CP_SCREEN_CONFIRM, ordered by round, then the re-pairing rounds among those marked
 * (cp_screen_mark_repairs); s->rounds_run the rounds seen.  Returns the pairs added,
 * -1 when out of memory, -2 when a row names a node outside s or a negative round.
 */
int cp_screen_add_rows(cp_screen_t *s, const collprof_link_row_t *rows, size_t n,
                       const char *backend, int random);

/** The exit status rows say: 0 healthy, 1 something flagged, 2 inconclusive (or no rows, or
 * a backend's screen with a large part of its nodes slow: cp_screen_large_slow). */
int cp_screen_status(const collprof_screen_row_t *rows, size_t n);

/**
 * 1 when the rows of the backend of row `at` (rows of one backend are consecutive) were judged
 * against the screen's own reference and more than CP_SCREEN_LARGE_SLOW of its judged nodes
 * (healthy or slow) are slow: what the screen calls healthy is then its fastest part, which a
 * baseline must confirm, and its slow nodes are not flagged (exit status 2, nothing drained).
 * *slow and *judged the counts (either may be NULL).
 */
int cp_screen_large_slow(const collprof_screen_row_t *rows, size_t n, size_t at, int *slow,
                         int *judged);

/** 1 when row is a node to exclude (slow or unreachable). */
int cp_screen_excluded(const collprof_screen_row_t *row);

/** The verdict as text: per backend, the flagged nodes and links with their evidence, the
 * unreachable, the counts, the pairs the path check flags (from the screen's /links rows
 * links[0..nlinks), NULL: none: a pair whose bytes went over an interface other than the
 * expected one, or far more than the message), and the Slurm exclude list. */
void cp_screen_print(FILE *f, const collprof_screen_row_t *rows, size_t n,
                     const collprof_link_row_t *links, size_t nlinks);

/** A /links row's path check (a pair's bandwidth row, schema 1.12): 0 not checked (nic_path
 * empty), 1 checked and not flagged (ok, or unknown: no counter saw the bytes), 2 flagged (its
 * bytes went over another interface than the expected one, or far more than the message). */
int cp_screen_nic_state(const collprof_link_row_t *l);

/**
 * The path check of backend's pairs among links[0..nl) on f (a screen's or a link sweep's):
 * each flagged pair on one line, "nic path: A-B (round R): other-nic: 1.01x the message per
 * operation, via IFACES (expected IFACES)", then "nic paths: K of N checked pairs ..." when
 * any was checked; names[node] (nnames of them) the hosts, "node N" where none.  It judges
 * nothing.  The number of pairs flagged.
 */
int cp_screen_print_nic_paths(FILE *f, const collprof_link_row_t *links, size_t nl,
                              const char *backend, const char *const *names, int nnames);

/** Slurm's host list of the nodes of backend's rows to exclude into buf (as snprintf);
 * backend NULL: every backend's. */
int cp_screen_exclude_list(const collprof_screen_row_t *rows, size_t n, const char *backend,
                           char *buf, size_t len);

#endif /* COLLPROF_OUTPUT_SCREEN_OUT_H */
