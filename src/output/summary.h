/*
 * The outputs of a run, written by rank 0 as each cell completes (so a
 * killed run keeps every completed cell): the nccl-tests-style table on
 * stdout, the text summary collprof_<UTC timestamp>_w<N>[_j<job>_s<step>].txt
 * and, with HDF5, the result file of the same name ending in .h5.  Both
 * names are reserved exclusively: an existing file is never overwritten,
 * and a name taken in the same second gets a _2, _3 ... suffix.
 */
#ifndef COLLPROF_OUTPUT_SUMMARY_H
#define COLLPROF_OUTPUT_SUMMARY_H

#include <stdio.h>

#include "boot/boot.h"
#include "cli/cli.h"
#include "plan/plan.h"
#include "runner/runner.h"
#include "plugin/loader.h"

typedef struct cp_run_info {
    const cp_options_t *opt;
    const cp_boot_t *boot;
    const cp_plugin_t *plugins;
    int nplugins;
    const cp_plan_t *plan;
    int argc;
    char **argv;
    const char (*affinity)[256]; /**< per rank CPU list, e.g. "0-3" (may be NULL) */
} cp_run_info_t;

/** Row i of /backends: plugin i of ri, its state, variants, effective options, study. */
void cp_run_backend_row(const cp_run_info_t *ri, int i, collprof_backend_row_t *r);

typedef struct cp_summary cp_summary_t;

/** The output directory: --output-dir, else $SLURM_SUBMIT_DIR, else ".". */
const char *cp_output_dir(const cp_options_t *opt);

/** 0 when dir is an existing writable directory, else -1 and a reason. */
int cp_output_dir_check(const char *dir, const char *option, char *err, size_t errlen);

/** Reserve dir/<base>.txt (opened: the descriptor is returned) and, with HDF5, dir/<base>.h5
 *  (created empty) with O_EXCL, trying _2, _3 ... until both names are free; -1 (errno). */
int cp_output_create(const char *dir, const char *base, char *path, size_t len, char *h5path,
                     size_t h5len);

/** The text summary's header lines: the job, the backends, the method (summary_head.c). */
void cp_summary_print_head(FILE *f, const cp_run_info_t *ri);
/** A replay's policies in words: "5 replays (--replay-iters), --gaps none, --check
 *  last", into buf (summary_head.c). */
const char *cp_summary_replay_policy(const cp_options_t *o, char *buf, size_t len);

/** The link sweep's matrices of rows[0..n) on f, each bandwidth matrix with its pairs' path
 *  check (summary_links.c). */
void cp_summary_print_links(FILE *f, const cp_run_info_t *ri, const collprof_link_row_t *rows,
                            size_t n);

/** Create the summary file and print both headers.  -1 and a reason on failure. */
int cp_summary_open(const cp_run_info_t *ri, cp_summary_t **out, char *err, size_t errlen);
/** One finished cell: its row, and the result for per-rank details.
 *  -1 when a file could not be written (cp_summary_error says why). */
int cp_summary_cell(cp_summary_t *s, const collprof_result_row_t *row, const cp_result_t *r);
/** The link sweep's rows (the /links table, the matrices in both summaries);
 *  -1 when a file could not be written. */
int cp_summary_links(cp_summary_t *s, const collprof_link_row_t *rows, size_t n);
/** The screen's verdict: the /screen table, the text block on the summary and the console
 * (with the pairs the path check flags among its /links rows links[0..nlinks)).
 * 0, or -1 when a file could not be written. */
int cp_summary_screen(cp_summary_t *s, const collprof_screen_row_t *rows, size_t n,
                      const collprof_link_row_t *links, size_t nlinks);
/** Footer, close.  exit_status is what collprof will return. */
void cp_summary_close(cp_summary_t *s, int exit_status);
/** at: where rows go in the result file's /replay table (at collprof --replay writes
 *  rows[n] as its rows [at, at + n)), or CP_REPLAY_PRINT: rows[n] are every backend's type,
 *  trace and rank rows and the critical path's parts (replay_fold.h), printed
 *  in both summaries.  -1 when a file could not be written. */
#define CP_REPLAY_PRINT UINT64_MAX
int cp_summary_replay(cp_summary_t *s, const collprof_replay_row_t *rows, size_t n, uint64_t at);
/** Footer saying the run stopped early (why), close; the HDF5 file keeps
 *  status "incomplete".  Safe on the watchdog thread under the writer lock. */
void cp_summary_stop(cp_summary_t *s, int exit_status, const char *why);
/** The first write error, e.g. "writing x.h5: No space left on device". */
const char *cp_summary_error(const cp_summary_t *s);
const char *cp_summary_path(const cp_summary_t *s);
/** The HDF5 file's path, or NULL when collprof was built without HDF5. */
const char *cp_summary_h5_path(const cp_summary_t *s);

#endif /* COLLPROF_OUTPUT_SUMMARY_H */
