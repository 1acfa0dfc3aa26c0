/*
 * Text forms of a result row, shared by the text summary written during a
 * run and by collprof-report, which prints the same tables from an HDF5
 * file.  Everything here works from collprof_result_row_t alone.
 */
#ifndef COLLPROF_OUTPUT_FORMAT_H
#define COLLPROF_OUTPUT_FORMAT_H

#include <stddef.h>
#include <stdio.h>

#include <collprof/schema.h>
#include <collprof/vocab.h>

/** "AllReduce (max, in-place)": the op's display name and its non-default attributes. */
void cp_format_label(const collprof_result_row_t *r, char *buf, size_t len);

/** " | BusBW N% of memcpy R GB/s" for a measured host cell with a memcpy rate (copy_gbs),
 *  " | BusBW N% of device copy R GB/s" for a device cell with a device rate (dcopy_gbs),
 *  AlgBW instead of BusBW where busBW is 0 (one rank: a copy, nothing on a link), else "". */
void cp_format_limit(const collprof_result_row_t *r, char *buf, size_t len);

/** Summary-file line of one cell (no newline). */
void cp_format_summary_line(const collprof_result_row_t *r, char *buf, size_t len);

/**
 * The header line of what a backend's cells on one memory kind were
 * measured with, from a row's memory, timer, allocation and device (no
 * newline): "  measured: host memory: timer CLOCK_MONOTONIC; buffers ...;
 * device host".  The run's summary prints it from the provenance it
 * gathered, collprof-report summary from the file's rows: the same text.
 */
void cp_format_provenance(const collprof_result_row_t *r, char *buf, size_t len);
/** "logs:       DIR/collprof_RUN_r*.log (one per rank)" from rank 0's log path (--log-dir). */
void cp_format_logs_line(const char *rank0_log, char *buf, size_t len);

/** The cells by status, the statuses that have any in the vocabulary's order and words
 *  (collprof/vocab.h): "3 ok, 1 unsupported, 1 timeout"; "none" when every count is 0.  counts
 *  has COLLPROF_CELL_STATUS_COUNT entries. */
void cp_format_status_counts(const int *counts, char *buf, size_t len);

/** The coverage an interval of the repeats must reach to be called a 95 % interval. */
#define CP_FORMAT_CI_LEVEL 0.95
/** A row's repeats (repeats >= 2; else ""): "    repeats 6: p50 41.2 us, 95% interval
 *  40.1 us .. 43.0 us (97% coverage)", or the range and its real coverage below 6 repeats. */
void cp_format_repeats(const collprof_result_row_t *r, char *buf, size_t len);
/** "    bimodal: 4.10 ms (3 repeats) and 8.90 ms (2)" for a bimodal row, else "". */
void cp_format_bimodal(const collprof_result_row_t *r, char *buf, size_t len);

/** "Tensor Size: 1,048,576 elements (4.00 MB), float32" for the row's count and dtype. */
void cp_format_tensor_header(const collprof_result_row_t *r, char *buf, size_t len);

/** The nccl-tests-style table: two header lines, then one line per cell. */
void cp_format_table_header(FILE *f);
void cp_format_table_row(const collprof_result_row_t *r, FILE *f);

/**
 * Summary body for a sequence of rows: group headers when the backend /
 * variant or the tensor (dtype, count) change.  *state starts at 0 and is
 * carried from call to call.
 */
typedef struct cp_format_state {
    char backend[32];
    char variant[64];
    char dtype[16];
    uint64_t count;
    int started;
} cp_format_state_t;
void cp_format_summary_row(cp_format_state_t *st, const collprof_result_row_t *r, FILE *f);

#endif /* COLLPROF_OUTPUT_FORMAT_H */
