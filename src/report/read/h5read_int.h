/*
 * What the result-file reader's files share (reader.h): h5read.c (the root attributes, open
 * and close), h5read_cells.c (/cells/<cell>: samples, per-rank data, repeats, and the
 * cross-check of each row's statistics), h5read_tables.c (every table, the slurm_*
 * attributes) and h5read_util.c (values, errors, text checks, string attributes, the file's
 * size), each calling only those after it (the order in reader.h).  Internal to src/report.
 */
#ifndef COLLPROF_REPORT_H5READ_INT_H
#define COLLPROF_REPORT_H5READ_INT_H

#include "report/read/reader.h"

#include <hdf5.h>
#include <stddef.h>

/* Relative tolerance of the statistics cross-check.  The writer computes
 * them from the same doubles in the same order, so they agree exactly; the
 * slack only allows for another writer summing in another order. */
#define CP_REPORT_STATS_RTOL 1e-9

/* A dataset may unpack to at most this many times the bytes the file stores for it, plus
 * CP_REPORT_SLACK: a small hostile file cannot claim millions of rows and take gigabytes. */
#define CP_REPORT_MAX_EXPANSION 1024.0
#define CP_REPORT_SLACK         (4.0 * 1024 * 1024)
/* and no dataset unpacks to more than 64 times the whole file (gzip of zeros reaches 1000:1) */
#define CP_REPORT_FILE_EXPANSION 64.0

typedef int row_check_t(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                        size_t errlen);

/* h5read_cells.c */
int rd_read_cells(hid_t file, cp_report_file_t *f, char *err, size_t errlen);

/* h5read_tables.c */
int rd_read_environment(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_screen(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_counters(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_links(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
/** The rows of a trace file's /trace_ops and /trace_groups (1-D datasets), counted. */
int rd_read_trace_counts(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
/** A replay's /replay rows (collprof --replay), optional. */
int rd_read_replay(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_slurm(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_ranks(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_backends(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_results(hid_t file, cp_report_file_t *f, char *err, size_t errlen);
int rd_read_table(hid_t file, const cp_h5_table_t *tab, int optional, row_check_t *check,
                  const cp_report_file_t *f, void **out, size_t *n, char *err, size_t errlen);
int rd_size_plausible(hid_t d, hid_t ft, hsize_t elems, const char *what, char *err, size_t errlen);

/* h5read_util.c */
/* The size of the file being read (cp_report_open): the most its tables may unpack to. */
extern double rd_file_bytes;
int rd_read_str_raw(hid_t a, hid_t ft, const char *name, char **out, char *err, size_t errlen);
void rd_h5_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int rd_valid_text(const char *s, size_t max);

#endif
