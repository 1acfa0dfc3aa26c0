/*
 * libcpreader: collprof's HDF5 result files (docs/hdf5-schema.md) loaded
 * and checked, for collprof-report and the tests.  It links HDF5 and
 * libcpformat (with the layers below it) only, never PMIx, MPI or an
 * accelerator runtime, so it runs on any machine the files are copied to.
 *
 * A file is loaded and checked completely by cp_report_open() and the HDF5
 * handle is closed again; callers work on the loaded copy.  The tables and
 * attributes are those declared once in include/collprof/schema.h.
 *
 * Its files, top to bottom (each calls only files below it; h5read_int.h):
 * h5read > h5read_cells > h5read_tables > h5read_util > rstats
 */
#ifndef COLLPROF_REPORT_READER_H
#define COLLPROF_REPORT_READER_H

#include <collprof/schema.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/h5schema.h"

/** One column of one row: s for strings, i, u or d for numbers (by kind). */
typedef struct cp_report_value {
    collprof_kind_t kind;
    const char *s;
    long long i; /**< I32 and I64 */
    uint64_t u;
    double d;
} cp_report_value_t;

/** Column c of record rec (a row of the table c belongs to). */
void cp_report_column_value(const cp_h5_column_t *c, const void *rec, cp_report_value_t *v);

/** Raw data of one /results row, from /cells/<cell>; all NULL when the group is absent. */
typedef struct cp_report_cell {
    double *iter_max;     /**< [row.iterations] per-iteration max over ranks (us) */
    double *rank_mean;    /**< [nranks] each rank's mean time (us), from rank_mean_us */
    double *rank_min;     /**< [nranks] each rank's fastest iteration (us) */
    double *rank_median;  /**< [nranks] each rank's median time (us) */
    uint64_t *send_bytes; /**< [nranks] alltoallv and allgatherv only */
    uint64_t *recv_bytes; /**< [nranks] alltoallv and allgatherv only */
    /** [nranks] each rank's timer, allocation, device and transport, where they differ
     *  (the row then says "per rank"); NULL otherwise and before 1.2 */
    collprof_provenance_row_t *prov;
    /** [row.repeats] each repeat's p50 (us) and timed iterations, in the order of the
     *  samples, checked against the row; NULL unless row.repeats > 1 (schema 1.4) */
    double *rep_p50;
    uint64_t *rep_iters;
} cp_report_cell_t;

/** A root attribute outside the schema's list (the writer's slurm_*), name and value. */
typedef struct cp_report_attr {
    char *name;
    char *value;
} cp_report_attr_t;

typedef struct cp_report_file {
    char *path; /* the name given, escaped for printing (cp_text_sanitize) */
    /** root attributes: strings "" when absent, numbers 0 (the reader owns the strings);
     *  schema_version_major/minor are also set from a file that has only the string */
    collprof_root_attrs_t root;

    collprof_result_row_t *rows;
    cp_report_cell_t *cells; /**< parallel to rows */
    size_t nrows;
    collprof_rank_row_t *ranks; /**< [nranks], index = rank */
    int nranks;
    collprof_backend_row_t *backends; /**< link_gbps 0 when the file has none */
    size_t nbackends;
    collprof_link_row_t *links; /**< the link sweep (/links, from 1.2); NULL when none */
    size_t nlinks;
    collprof_screen_row_t *screen; /**< the screen's verdict (/screen, from 1.7); NULL: none */
    size_t nscreen;
    collprof_counter_row_t *counters; /**< /counters (--counters, from 1.11); NULL: none */
    size_t ncounters;
    collprof_env_row_t *env; /**< /environment (secrets already <redacted> by the writer) */
    size_t nenv;
    cp_report_attr_t *slurm; /**< the root's string attributes slurm_*, by name */
    size_t nslurm;
    /** a trace file's (collprof-report import --trace) /trace_ops and /trace_groups rows,
     *  counted, not read; 0 in other files */
    uint64_t trace_ops, trace_groups;
    /** a replay's rows (collprof --replay, /replay, from 1.11; the bandwidths, skew and
     *  critical path from 1.12); NULL: none */
    collprof_replay_row_t *replay;
    size_t nreplay;
} cp_report_file_t;

/** The value of the root attribute slurm_<name> of f (e.g. "partition"); "" when absent. */
const char *cp_report_slurm(const cp_report_file_t *f, const char *name);

/**
 * Load and check a result file.  On failure returns -1 with a one-line
 * reason in err (without the path) and *out untouched.
 */
int cp_report_open(const char *path, cp_report_file_t **out, char *err, size_t errlen);

/**
 * While cp_report_open reads a file: the one error line (with its newline)
 * that names it, for a signal handler to write(2) when reading crashes or
 * hits a resource limit; "" otherwise.
 */
const char *cp_report_crash_line(void);
void cp_report_close(cp_report_file_t *f);

/** 1 when the row holds timings (status ok or wrong). */
int cp_report_measured(const collprof_result_row_t *r);

/** The host of a rank, "?" when unknown. */
const char *cp_report_host(const cp_report_file_t *f, int rank);

/* ---- statistics (rstats.c) ------------------------------------------------ */

/** Median of v[0..n) (mean of the two middle values when n is even); v is sorted in place. */
double cp_report_median(double *v, size_t n);

/**
 * Two-sided Mann-Whitney rank-sum test of a against b (normal approximation
 * with tie and continuity corrections).  Returns the p-value, 1 when the
 * samples cannot be told apart (all tied, or empty).
 */
double cp_report_mann_whitney(const double *a, size_t na, const double *b, size_t nb);

#endif /* COLLPROF_REPORT_READER_H */
