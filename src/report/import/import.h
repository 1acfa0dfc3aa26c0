/*
 * `collprof-report import`: other tools' results (nccl-tests JSON and text
 * tables, OSU micro-benchmark text) as collprof result files.  The readers
 * of each format (import_nccl.c, import_osu.c) fill one cp_import_t with
 * /results rows and what the source says about the run; import_write.c
 * writes it with the tables of include/collprof/schema.h (no /cells: the
 * sources keep no per-rank samples).  The mapping is in docs/hdf5-schema.md
 * ("Imported files").
 *
 * import/'s files, top to bottom (each calls only files below it; json.h is json.c's):
 * cmd_import > import_nccl > import_osu > import_write > import_rows > json
 */
#ifndef COLLPROF_REPORT_IMPORT_H
#define COLLPROF_REPORT_IMPORT_H

#include <collprof/schema.h>

#include "base/strset.h"

#include <stddef.h>

/* The largest input read (a year of nccl-tests runs in one JSON file is far less). */
#define CP_IMPORT_MAX_BYTES (64u * 1024 * 1024)
/* The most cells and ranks an import takes. */
#define CP_IMPORT_MAX_ROWS  100000
#define CP_IMPORT_MAX_RANKS (1 << 20)

typedef struct cp_import {
    /* the options */
    const char *backend; /**< NULL: the tool's library (nccl, mpi) */
    const char *variant; /**< NULL: "default" */
    const char *op;      /**< NULL: what the source says */
    int ranks;           /**< --ranks; 0: what the source says */
    /* the source */
    const char *shown; /**< the input's name as printed */
    char tool[32], version[64], format[32], library[128];
    char backend_name[32];
    char timing[256]; /**< what the times are */
    int nranks;       /**< 0: unknown */
    int iterations, warmup;
    collprof_rank_row_t *rank_rows; /**< [nrank_rows] */
    int nrank_rows, nnodes;
    cp_strset_t hosts; /**< the nodes' host names: node id by name in O(1) */
    int *node_ranks;   /**< [nnodes] ranks on each node so far (the next local rank) */
    size_t env_cap;
    collprof_env_row_t *env;
    size_t nenv;
    collprof_result_row_t *rows;
    size_t nrows, cap;
    char err[1024];
} cp_import_t;

/** Record "NAME:LINE: message" (line 0: no line) as the import's error; returns -1. */
int cp_import_fail(cp_import_t *im, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** A new zeroed row with the import's backend, variant and cell number; NULL after the error. */
collprof_result_row_t *cp_import_row(cp_import_t *im, int line);

/** collprof's name of an operation named as a tool does ("all_reduce", "Allreduce",
 *  "Reduce_scatter", "All-to-All"): its id, or -1. */
int cp_import_op(const char *name);

/**
 * A row's figures from its mean time: algBW = bytes / time, busBW by collprof's factor
 * (needs im->nranks, else 0), status ok or wrong from wrong.  Where the source printed
 * them (>= 0), its algBW and busBW must agree within rounding.  0, or -1 after the error.
 */
int cp_import_finish(cp_import_t *im, collprof_result_row_t *r, int line, double algbw,
                     double busbw);

/** Add a rank (rank = its index) on host, with device; 0 or -1 after the error. */
int cp_import_rank(cp_import_t *im, int line, const char *host, long pid, const char *device);

/** 1 when line (NUL-terminated) is valid UTF-8. */
int cp_import_valid_line(const char *line);

/** A finite, non-negative number of the text at s (the whole of it): 0, or -1. */
int cp_import_number(const char *s, double *out);

int cp_import_nccl_json(cp_import_t *im, const char *text, size_t len);
int cp_import_nccl_text(cp_import_t *im, const char *text, size_t len);
int cp_import_osu(cp_import_t *im, const char *text, size_t len);

/**
 * Write the import to out (which must not exist), through a temporary name in the same
 * directory: the file is complete or absent.  command is the import's command line.
 * 0, or -1 with the reason in im->err.
 */
int cp_import_write(cp_import_t *im, const char *out, const char *command);

/** The finished file tmp under the name out, which must not exist (a hard link, or where the
 *  file system has none, an O_EXCL reservation then a rename): 0, or -1 with errno. */
int cp_import_publish(const char *tmp, const char *out);

void cp_import_free(cp_import_t *im);

/** `import --trace FORMAT` (param, nccl-inspector, nccl-collprof, flight-recorder,
 *  collprof-trace, pytorch-et, chakra-json, chakra-et) of paths[0..n) into out (cmd_trace.c):
 *  0, or -1 after printing the error. */
int cp_import_trace(const char *format, char **paths, int n, const char *out, const char *command);

#endif /* COLLPROF_REPORT_IMPORT_H */
