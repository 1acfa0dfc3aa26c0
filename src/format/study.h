/*
 * The RMA-write all-to-all study table: one row per message size, one
 * column group per variant, in the layout
 *
 *   | Size | Count | <variant> | BusBW (%) | Lat (us) | <variant> | ...
 *
 * where the <variant> column is the algorithm bandwidth (algBW, GB/s),
 * "BusBW (%)" is busBW in GB/s with its share of the link rate in
 * parentheses ("n/a" without a link rate) and "Lat (us)" the mean time of
 * the cell (mean over iterations of the max over ranks).  Used by the run's
 * text summary (src/output/summary.c) and by `collprof-report study`; pure
 * formatting, no HDF5 or PMIx.
 */
#ifndef COLLPROF_OUTPUT_STUDY_H
#define COLLPROF_OUTPUT_STUDY_H

#include <stddef.h>
#include <stdio.h>

#include <collprof/schema.h>
#include <collprof/vocab.h>

/*
 * Which studies a file holds: a backend declares the ops whose variants it
 * wants side by side (collprof_backend_t.study_ops), recorded in the study
 * column of /backends (schema 1.2; earlier files declare none).
 */

/**
 * Print the table of the measured (ok or wrong) rows of backend/op in
 * rows[0..n).  link_gbps is the link rate in Gbit/s (1e9 bit/s), <= 0 when
 * unknown; link_from says where it came from ("--link-gbps", "provider").
 * The first cell of a (variant, bytes) pair is used.  Returns the number
 * of size rows printed (0: nothing matched, nothing printed).
 */
int cp_study_print(FILE *f, const collprof_result_row_t *rows, size_t n, const char *backend,
                   const char *op, double link_gbps, const char *link_from);

/**
 * Every study the backends declare, each under a "== BACKEND OP study ..."
 * heading, for the summary and `collprof-report summary`.  The link rate is
 * the backend's, else run_link_gbps (--link-gbps, <= 0 when not given).
 * Returns the number of tables printed.
 */
int cp_study_print_all(FILE *f, const collprof_result_row_t *rows, size_t n,
                       const collprof_backend_row_t *backends, size_t nbackends,
                       double run_link_gbps);

/**
 * The first study backends declare: *backend and *op point into the row
 * (op is copied into op_buf); 0, or -1 when none does.
 */
int cp_study_first(const collprof_backend_row_t *backends, size_t nbackends, const char **backend,
                   char *op_buf, size_t op_len);

/** BusBW as a percentage of a link of link_gbps Gbit/s; < 0 when link_gbps <= 0. */
double cp_study_link_pct(double busbw_gbs, double link_gbps);

#endif /* COLLPROF_OUTPUT_STUDY_H */
