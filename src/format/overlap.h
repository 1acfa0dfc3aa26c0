/*
 * The non-blocking operations' table of the text summary: per backend, one
 * row per measured cell of iallreduce, iallgather, ialltoall or ibroadcast
 * with its overall, pure communication and compute times and the overlap
 * (OSU's osu_i* figures; docs/metrics.md).  Pure formatting of /results
 * rows, so that collprof-report can print the same from a file.
 */
#ifndef COLLPROF_OUTPUT_OVERLAP_H
#define COLLPROF_OUTPUT_OVERLAP_H

#include <stddef.h>
#include <stdio.h>

#include <collprof/schema.h>

/** Is row a measured (ok or wrong) cell of a non-blocking operation? */
int cp_overlap_row(const collprof_result_row_t *row);

/** The tables of those of rows[0..n) on f, a heading and one table per backend; nothing if none. */
void cp_overlap_print(FILE *f, const collprof_result_row_t *rows, size_t n);

#endif /* COLLPROF_OUTPUT_OVERLAP_H */
