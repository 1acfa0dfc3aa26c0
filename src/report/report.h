/*
 * collprof-report: post-analysis of collprof's HDF5 result files
 * (docs/hdf5-schema.md).  The program links HDF5 and libcputil only, never
 * PMIx, MPI or an accelerator runtime, so it runs on any machine the files
 * are copied to.
 *
 * A file is loaded and checked completely by cp_report_open() and the HDF5
 * handle is closed again; the subcommands work on the loaded copy.
 */
#ifndef COLLPROF_REPORT_REPORT_H
#define COLLPROF_REPORT_REPORT_H

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* exit statuses: 1 is reserved for "compare found a regression" */
#define CP_REPORT_EXIT_OK         0
#define CP_REPORT_EXIT_REGRESSION 1
#define CP_REPORT_EXIT_BAD        2

/* ---- the columns of /results (COLLPROF_RESULT_COLUMNS), for generic code ---- */

enum { CP_REPORT_STR, CP_REPORT_I32, CP_REPORT_U64, CP_REPORT_F64 };

typedef struct cp_report_column {
    const char *name;
    int kind;      /**< CP_REPORT_STR ... */
    size_t offset; /**< in collprof_result_row_t */
    size_t size;   /**< bytes of the field */
} cp_report_column_t;

/** One column of one row: s for strings, i, u or d for numbers (by kind). */
typedef struct cp_report_value {
    int kind;
    const char *s;
    long long i;
    uint64_t u;
    double d;
} cp_report_value_t;

/** The schema's columns in schema order. */
extern const cp_report_column_t cp_report_columns[];
extern const size_t cp_report_ncolumns;
void cp_report_column_value(const cp_report_column_t *c, const collprof_result_row_t *r,
                            cp_report_value_t *v);

/* ---- a loaded result file ------------------------------------------------ */

typedef struct cp_report_rank {
    int32_t rank;
    char hostname[64];
    int32_t node_id;
} cp_report_rank_t;

typedef struct cp_report_backend {
    char name[32];
    char plugin_version[32];
    char library_version[128];
    char state[256];
    double link_gbps; /**< link rate the backend reported, Gbit/s; 0 = none (or older file) */
} cp_report_backend_t;

/** Raw data of one /results row, from /cells/<cell>; all NULL when the group is absent. */
typedef struct cp_report_cell {
    double *iter_max;     /**< [row.iterations] per-iteration max over ranks (us) */
    double *rank_mean;    /**< [nranks] each rank's mean time (us), from rank_mean_us */
    double *rank_min;     /**< [nranks] each rank's fastest iteration (us) */
    double *rank_median;  /**< [nranks] each rank's median time (us) */
    uint64_t *send_bytes; /**< [nranks] alltoallv only */
    uint64_t *recv_bytes; /**< [nranks] alltoallv only */
} cp_report_cell_t;

typedef struct cp_report_file {
    char *path;
    /* root attributes, "" when absent */
    char *schema;
    char *schema_version;
    char *collprof_version;
    char *created;
    char *command_line;
    char *launcher;
    char *pmix_version;
    char *tag;
    char *timing;
    char *check;
    char *status;
    long long major, minor;
    long long world_size, node_count;
    double link_gbps; /**< the run's --link-gbps, 0 when not given (or older file) */

    collprof_result_row_t *rows;
    cp_report_cell_t *cells; /**< parallel to rows */
    size_t nrows;
    cp_report_rank_t *ranks; /**< [nranks], index = rank */
    int nranks;
    cp_report_backend_t *backends;
    size_t nbackends;
} cp_report_file_t;

/**
 * Load and check a result file.  On failure returns -1 with a one-line
 * reason in err (without the path) and *out untouched.
 */
int cp_report_open(const char *path, cp_report_file_t **out, char *err, size_t errlen);
void cp_report_close(cp_report_file_t *f);

/** 1 when the row holds timings (status ok or wrong). */
int cp_report_measured(const collprof_result_row_t *r);

/** The host of a rank, "?" when unknown. */
const char *cp_report_host(const cp_report_file_t *f, int rank);

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

/* ---- statistics (rstats.c) ------------------------------------------------ */

/** Median of v[0..n) (mean of the two middle values when n is even); v is sorted in place. */
double cp_report_median(double *v, size_t n);

/**
 * Two-sided Mann-Whitney rank-sum test of a against b (normal approximation
 * with tie and continuity corrections).  Returns the p-value, 1 when the
 * samples cannot be told apart (all tied, or empty).
 */
double cp_report_mann_whitney(const double *a, size_t na, const double *b, size_t nb);

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
