/*
 * Baseline files (collprof-report baseline FILES -o BASE.h5; collprof --screen --baseline
 * BASE.h5): per backend, kind, message size and path class, the distribution of healthy
 * pairs (median, MAD of the logarithms), so that a screen judges a cluster against what it
 * should do, not only against itself: a uniformly slow cluster is caught too.  An HDF5 file
 * of one table, /baseline (include/collprof/schema.h), root attribute schema =
 * "collprof-baseline", schema_version = "1".
 */
#ifndef COLLPROF_OUTPUT_BASELINE_H
#define COLLPROF_OUTPUT_BASELINE_H

#include "screen/screen.h"

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>

#define CP_BASELINE_SCHEMA "collprof-baseline"

/** Write rows to path (a new file in its place, complete or not at all).  0, or -1 and a
 * one-line reason in err. */
int cp_baseline_write(const char *path, const collprof_baseline_row_t *rows, size_t n, char *err,
                      size_t errlen);

/** Read and check a baseline file: *rows (free them), *n.  0, or -1 and a reason in err. */
int cp_baseline_read(const char *path, collprof_baseline_row_t **rows, size_t *n, char *err,
                     size_t errlen);

/**
 * The screen's reference for backend with its latency message of lat_bytes and bandwidth
 * message of bw_bytes, from rows: the "any" rows' figures (required), and each other path
 * class's where the baseline has both of its rows (ref->cls[class].own; a pair of a class
 * without them is judged against "any").  0, or -1 with the reason in err when the baseline
 * has no "any" rows for them.
 */
int cp_baseline_ref(const collprof_baseline_row_t *rows, size_t n, const char *backend,
                    uint64_t lat_bytes, uint64_t bw_bytes, cp_screen_ref_t *ref, char *err,
                    size_t errlen);

#endif /* COLLPROF_OUTPUT_BASELINE_H */
