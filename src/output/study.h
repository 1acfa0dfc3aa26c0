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

/* The rows the study is made of, for the summary and collprof-report: one
 * place until backends declare their studies (issue 12, part 3). */
#define CP_STUDY_BACKEND "ofi"
#define CP_STUDY_OP      collprof_op_name(COLLPROF_OP_ALLTOALL)

/**
 * Print the table of the measured (ok or wrong) rows of backend/op in
 * rows[0..n).  link_gbps is the link rate in Gbit/s (1e9 bit/s), <= 0 when
 * unknown; link_from says where it came from ("--link-gbps", "provider").
 * The first cell of a (variant, bytes) pair is used.  Returns the number
 * of size rows printed (0: nothing matched, nothing printed).
 */
int cp_study_print(FILE *f, const collprof_result_row_t *rows, size_t n, const char *backend,
                   const char *op, double link_gbps, const char *link_from);

/** BusBW as a percentage of a link of link_gbps Gbit/s; < 0 when link_gbps <= 0. */
double cp_study_link_pct(double busbw_gbs, double link_gbps);

#endif /* COLLPROF_OUTPUT_STUDY_H */
