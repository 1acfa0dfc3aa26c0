/*
 * Command line and matrix files.  Parsing is pure: the same argv gives the
 * same result (or the same one-line error) on every rank, before any
 * communication.  Names (backends, variants) that depend on which plugins
 * load are checked later, by the plan.
 */
#ifndef COLLPROF_CORE_CLI_H
#define COLLPROF_CORE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "counters/counters.h"
#include "launch/launch.h"
#include "colls/imbalance.h"
#include "runner/policy.h"
#include <collprof/plugin.h>

#define CP_MAX_LIST 64
#define CP_MAX_IMB  8
/** Blocks (lines) a matrix file may hold: each is a few KiB, and a run of more is unreadable. */
#define CP_MAX_SPECS 4096
/** Repeats of one cell at most (--repeats, and the adaptive ones). */
#define CP_MAX_REPEATS 1000
/** --max-time when --min-time or --target-ci is given without it, seconds. */
#define CP_DEFAULT_MAX_TIME 60.0

/** One block of the matrix: the command line, or one line of --matrix. */
typedef struct cp_spec {
    int line; /**< matrix file line, 0 for the command line */
    int ops[COLLPROF_OP_COUNT];
    int nops;
    int dtypes[COLLPROF_DTYPE_COUNT];
    int ndtypes;
    int redops[COLLPROF_REDOP_COUNT];
    int nredops;
    uint64_t sizes[CP_MAX_LIST]; /**< elements, or bytes when sizes_are_bytes */
    int nsizes;
    int sizes_are_bytes;
    int inplace[2]; /**< 0 = out of place, 1 = in place */
    int ninplace;
    int mems[COLLPROF_MEM_COUNT]; /**< memory types; nmems == 0: each backend's natural one */
    int nmems;
    cp_imbalance_t imb[CP_MAX_IMB];
    int nimb;
    char backends[CP_MAX_LIST][64]; /**< nbackends == 0: every backend that loads */
    int nbackends;
    char variants[CP_MAX_LIST][64]; /**< nvariants == 0: all variants */
    int nvariants;
    int iters;
    int warmup;
    int root;
} cp_spec_t;

typedef struct cp_options {
    int np;      /**< --np N, 0 when not given */
    int list;    /**< --list */
    int dry_run; /**< --dry-run */
    int verbose; /**< -v count */
    int check;   /**< results are checked: --check other than 0 */

    cp_check_t check_mode; /**< --check last|every|sample:K|0|1 (runner/policy.h) */
    int check_k;           /**< K of --check sample:K, else 0 */

    int help;
    int version;
    int sync_barrier; /**< a barrier before each operation or batch (--sync barrier, batch) */
    cp_sync_t sync;   /**< --sync barrier|none|batch[:N] */
    int batch;        /**< operations per sample: N of --sync batch:N, else 1 */
    cp_alloc_t alloc; /**< --alloc malloc|mmap|hugepages (host buffers) */
    int rotate;       /**< --rotate-buffers N: buffer slots operations cycle through (1: none) */

    unsigned counters; /**< --counters: the CP_CNT_* sources read around each cell (0: none) */

    cp_launch_mode_t launch_mode;
    double timeout_s;      /**< --timeout: -1 derived per cell, 0 none, else seconds */
    int repeats;           /**< --repeats: runs of each cell, each on fresh communicators */
    double min_time_s;     /**< --min-time: repeat a cell until it ran this long (0: no) */
    double target_ci_pct;  /**< --target-ci: repeat until the interval is this narrow (0: no) */
    double max_time_s;     /**< --max-time: no further repeat past this (0: none) */
    int fresh_buffers;     /**< --fresh-buffers: new buffers for every repeat too */
    char output_dir[4096]; /**< "" = default */
    char log_dir[4096];    /**< --log-dir: one log per rank there ("" = none) */
    char tag[256];
    char matrix_file[4096];
    double link_gbps;           /**< --link-gbps, 0 when not given */
    int link_sweep;             /**< --link-sweep: every pair of nodes instead of the matrix */
    uint64_t sweep_bytes[2];    /**< --sweep-sizes: latency and bandwidth message, bytes */
    int screen;                 /**< --screen: find the bad nodes and links (implies link_sweep) */
    int screen_rounds;          /**< --screen-rounds: random rounds (0: default 3) */
    int seed;                   /**< --seed: the screen's pairings (0: rank 0 draws one) */
    double screen_thr;          /**< --screen-threshold: slow below this x the reference */
    int screen_validate;        /**< --screen-validate: 1 on (the default), 0 off (-1 while
                                     parsing: off given) */
    char baseline[4096];        /**< --baseline: judge the screen against this file ("": no) */
    char replay[4096];          /**< --replay: the trace to replay ("": run the matrix) */
    int replay_iters;           /**< --replay-iters: times the trace is replayed (0: default 5) */
    char gaps[40];              /**< --gaps: none, trace[:SCALE], compute[:SCALE] ("": none) */
    char replay_ops[64];        /**< --replay-ops: the seqs replayed, A-B, A-, -B, A ("": all) */
    int replay_shrink;          /**< --shrink: fold a trace of more ranks onto the run's */
    char replay_order[16];      /**< --replay-order: nccl, program ("": by the trace's source) */
    int variants_given;         /**< --variants was given (a replay then runs each variant) */
    unsigned split;             /**< --split: COLLPROF_BIT(cp_split_t) of the extra groupings */
    char backend_opts[32][256]; /**< -B key=value, and --key value (see bopts.h) */
    unsigned char backend_opt_long[32]; /**< 1: spelled --key (a backend must declare it so) */
    int nbackend_opts;
    char help_backend[64]; /**< --help-backend NAME */
    int healthcheck;       /**< --healthcheck: this node's own checks, one line, exit 0/1/2 */
    double hc_time_s;      /**< --healthcheck-time: the whole check's budget (0 while parsing) */
    int hc_drain;          /**< --healthcheck-drain: drain this node when it fails */
    int hc_confirm;        /**< --healthcheck-confirm: failures in a row before a drain */
    double hc_min_copy;    /**< --healthcheck-min-copy: host memcpy floor, GB/s */
    double hc_max_ms;      /**< --healthcheck-max-ms: the medium cells' p50 ceiling, ms */
    char hc_nics[1024];    /**< --healthcheck-nics: interfaces, "none", or "" (every one up) */
    char hc_state[4096];   /**< --healthcheck-state: the failures-in-a-row file ("": default) */
    cp_spec_t *specs;      /**< the blocks to run */
    int nspecs;
} cp_options_t;

/**
 * Parse argv.  Returns 0, or -1 with a one-line message in err (the caller
 * prints it and exits 2).  With --help/--version/--list the caller acts on
 * those flags.
 */
int cp_cli_parse(int argc, char **argv, cp_options_t *opt, char *err, size_t errlen);
void cp_cli_free(cp_options_t *opt);
void cp_cli_usage(FILE *f);

/** Parse one "key=value" matrix-file assignment into spec (exposed for tests). */
int cp_spec_set(cp_spec_t *spec, const char *key, const char *value, char *err, size_t errlen);

/** Read a matrix file into opt->specs, each line starting from base. */
int cp_matrix_load(const char *path, const cp_spec_t *base, cp_options_t *opt, char *err,
                   size_t errlen);

#endif /* COLLPROF_CORE_CLI_H */
