/*
 * collprof-report: post-analysis of collprof's HDF5 result files
 * (docs/hdf5-schema.md), loaded by libcpreader (reader.h).  The program
 * links libcpreader, HDF5 and libcputil only, never PMIx, MPI or an
 * accelerator runtime.
 */
#ifndef COLLPROF_REPORT_REPORT_H
#define COLLPROF_REPORT_REPORT_H

#include <stdio.h>

#include "report/reader.h"

/* exit statuses: 1 is reserved for "compare found a regression" */
#define CP_REPORT_EXIT_OK         0
#define CP_REPORT_EXIT_REGRESSION 1
#define CP_REPORT_EXIT_BAD        2

/* ---- command line helpers (args.c) --------------------------------------- */

/** Print "collprof-report: error: <message>" on stderr. */
void cp_report_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef struct cp_report_opt {
    const char *name; /**< long name without "--" */
    char short_name;  /**< 0 when none */
    int has_arg;
} cp_report_opt_t;

typedef struct cp_report_args {
    int argc;
    char **argv;
    int next;
    int only_operands; /**< after "--" */
    const char *cmd;   /**< subcommand, for messages */
} cp_report_args_t;

enum { CP_REPORT_ARG_END = -1, CP_REPORT_ARG_OPERAND = -2, CP_REPORT_ARG_ERROR = -3 };

/**
 * Next option (its index in opts, value in *val when it takes one), an
 * operand (CP_REPORT_ARG_OPERAND, in *val), CP_REPORT_ARG_END, or
 * CP_REPORT_ARG_ERROR after printing why.  opts ends with a NULL name.
 */
int cp_report_next_arg(cp_report_args_t *a, const cp_report_opt_t *opts, char **val);

/** Keep val as the one result file of a subcommand (*file NULL so far); a
 *  second operand prints an error and returns -1. */
int cp_report_one_file(const char *cmd, char **file, char *val);

/** -1 after printing "CMD: no result file given ..." unless given. */
int cp_report_need_file(const char *cmd, int given);

/** Parse a finite number in [lo, hi] for an option; prints the error and returns -1. */
int cp_report_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                           double *out);

/**
 * Expand operands: a directory stands for its collprof_*.h5 files in name
 * order, anything else for itself.  Returns the count (>= 0) or -1 after
 * printing an error; free with cp_report_free_paths().
 */
int cp_report_expand_paths(char **operands, int n, char ***out);
void cp_report_free_paths(char **paths, int n);

/** One file: the operand, or the only result file of a directory.  -1 after an error. */
int cp_report_single_path(const char *cmd, char *operand, char **out);

/**
 * Open every path; on the first failure prints the error, closes what was
 * opened and returns -1.
 */
int cp_report_open_all(char **paths, int n, cp_report_file_t ***out);
void cp_report_close_all(cp_report_file_t **files, int n);

/* ---- subcommands ---------------------------------------------------------- */

int cp_report_cmd_summary(int argc, char **argv);
int cp_report_cmd_compare(int argc, char **argv);
int cp_report_cmd_export(int argc, char **argv);
int cp_report_cmd_stragglers(int argc, char **argv);
int cp_report_cmd_plot(int argc, char **argv);
int cp_report_cmd_scaling(int argc, char **argv);
int cp_report_cmd_study(int argc, char **argv);

/* ---- text helpers (args.c) ------------------------------------------------ */

/** "mpi/default AllReduce (max) float32 4,096": a cell for people. */
void cp_report_cell_name(const collprof_result_row_t *r, char *buf, size_t len);

#endif /* COLLPROF_REPORT_REPORT_H */
