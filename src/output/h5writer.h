/*
 * The HDF5 result file (docs/hdf5-schema.md): root attributes with the
 * provenance, /ranks, /backends, /environment, the /results table (one row
 * per cell, columns from include/collprof/schema.h) and /cells/<n> with the
 * raw samples.  Written by rank 0; flushed after every cell so that a
 * killed run leaves a readable file holding every completed cell, with
 * status "incomplete".
 */
#ifndef COLLPROF_OUTPUT_H5WRITER_H
#define COLLPROF_OUTPUT_H5WRITER_H

#include <collprof/schema.h>

#include "runner/runner.h"
#include "output/summary.h"

typedef struct cp_h5 cp_h5_t;

/** Create the file at path (which must not exist, or be empty and ours). */
int cp_h5_open(const char *path, const cp_run_info_t *ri, cp_h5_t **out, char *err, size_t errlen);
/** Append a cell and flush. */
int cp_h5_cell(cp_h5_t *h, const collprof_result_row_t *row, const cp_result_t *r);
/** Write the /links table (the link sweep) and flush. */
int cp_h5_links(cp_h5_t *h, const collprof_link_row_t *rows, size_t n);
/** The screen's verdict (/screen): 0, or -1 (the file is then broken). */
int cp_h5_screen(cp_h5_t *h, const collprof_screen_row_t *rows, size_t n);
/** A replay's rows (/replay, collprof --replay): rows[n] as its rows [at, at + n), the table
 *  extended to hold them.  0, or -1 (the file is then broken). */
int cp_h5_replay(cp_h5_t *h, uint64_t at, const collprof_replay_row_t *rows, size_t n);
/** Set the final status ("complete", "incomplete", "aborted") and close. */
void cp_h5_close(cp_h5_t *h, const char *status);

#endif /* COLLPROF_OUTPUT_H5WRITER_H */
