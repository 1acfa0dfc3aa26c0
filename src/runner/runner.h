/*
 * Runs one cell on every rank: select the variant, allocate and fill
 * buffers, warm up, time every iteration on every rank, check the result
 * exactly, and gather everything to every rank over the out-of-band
 * channel.
 */
#ifndef COLLPROF_CORE_RUNNER_H
#define COLLPROF_CORE_RUNNER_H

#include <collprof/schema.h>

#include "boot/boot.h"
#include "runner/agree.h"
#include "cli/cli.h"
#include "plan/plan.h"
#include "base/stats.h"
#include "plugin/loader.h"

/*
 * A cell's figures: what rank 0 makes of every rank's record and samples (runner_merge.c),
 * sent to every rank as one block, and written into the cell's /results row
 * (output/result_row.c).  The figures of CP_ROW_FIGURES go into the row's column of the same
 * name as they are: a new one of those is one X() here and one column in schema.h (the
 * field takes the column's type), plus the code that computes it.
 */
#define CP_ROW_FIGURES(X)                                                                          \
    X(wrong)       /* elements that differ from the exact result, summed over ranks */             \
    X(overall_us)  /* non-blocking ops, means over ranks of each rank's mean (else 0), us: */      \
    X(comm_us)     /*   post + overlapped computation + wait; post + wait alone; */                \
    X(compute_us)  /*   the calibrated computation; */                                             \
    X(overlap_pct) /*   cp_overlap_pct() of the three */

#define CP_FIGURE_FIELD(col) __typeof__(((collprof_result_row_t *)0)->col) col;
typedef struct cp_figures {
    collprof_cell_status_t status;
    char reason[256];
    cp_stats_t stats;    /**< of the per-iteration max over ranks, us */
    double algbw;        /**< GB/s (1e9), from the mean time */
    double busbw;        /**< GB/s */
    char allocation[64]; /**< the core's allocation (--alloc), "" where the backend's */
    CP_ROW_FIGURES(CP_FIGURE_FIELD)
} cp_figures_t;
#undef CP_FIGURE_FIELD

typedef struct cp_result {
    cp_figures_t fig; /**< rank 0's, on every rank once the cell ran */
    int nranks;
    int iters;
    uint64_t bytes; /**< S of algBW = S / t */
    /** [row * iters + i], us (NULL unless it ran): on rank 0 every rank's (row = rank,
     *  srows = nranks); on the others this rank's own alone (srows = 1), where the figures
     *  above and the status are rank 0's, broadcast; only rank 0 writes the results */
    double *samples;
    int srows;                         /**< rows of samples: nranks on rank 0, 1 elsewhere */
    double *rank_mean;                 /**< [rank], us (rank 0) */
    uint64_t *send_bytes, *recv_bytes; /**< alltoallv, allgatherv: per rank */
    /** [rank] the wrong elements each rank counted (rank 0, a cell that ran; NULL elsewhere or
     *  out of memory): a link sweep's pair takes its two ranks' (the first repeat's alone) */
    uint64_t *rank_wrong;
    double start_epoch; /**< wall-clock start, seconds since 1970 */
    /* repeats (src/runner/repeat.c): iters is then the sum of theirs, samples all of them */
    int repeats;         /**< repeats run; 0 for a cell that never ran, 1 for a single run */
    double *rep_p50;     /**< [repeats] each repeat's p50 (us); NULL unless it ran */
    uint64_t *rep_iters; /**< [repeats] each repeat's timed iterations */
    cp_median_ci_t ci;   /**< the median of rep_p50 and its interval */
    int bimodal;         /**< the repeats form two clusters ... */
    cp_modes_t modes;    /**< ... these */
    /** what the cell was measured with (borrowed from its plugin); NULL for a cell decided
     *  before it ran, or when the provenance could not be gathered */
    const struct cp_prov *prov;
    /* the policy the cell was measured with (runner/policy.h): what was really applied */
    char sync[16];  /**< barrier, none or batch; "" for a cell that never ran */
    int batch;      /**< operations per sample */
    int rotate;     /**< buffer slots the operations cycled through */
    char check[16]; /**< --check as applied: last, every, sample:K or none; "" never ran */
    /** rank 0: the nodes' counters around the cell (--counters, runner_counters.c), their
     *  cell column unset (the writer sets it); NULL, 0 where none */
    collprof_counter_row_t *counters;
    int ncounters;
} cp_result_t;

/* A cell's buffers kept across its repeats (collprof --repeats without --fresh-buffers): the
 * first repeat allocates them from ctx, the others run on them, the caller frees them. */
typedef struct cp_kept_bufs {
    void *ctx; /**< the context that allocates them: the backend's own (or its group's) */
    void *sendbuf, *recvbuf;
    int have;          /**< allocated */
    int core;          /**< by the core (--alloc mmap|hugepages), not the backend */
    size_t smap, rmap; /**< core: the mapping lengths */
    char used[64];     /**< core: the allocation that was made */
} cp_kept_bufs_t;

typedef struct cp_runner {
    const cp_options_t *opt;
    const cp_boot_t *boot;
    cp_plugin_t *plugins;
    int nplugins;
    int index;           /**< the cell's position in the plan (for the watchdog) */
    const cp_oob_t *oob; /**< NULL: cp_oob_world */
    int repeat;          /**< the repeat running now (--repeats), from 0 */
    void *ctx; /**< a fresh context of the cell's backend for this repeat; NULL: its own */
    cp_kept_bufs_t *keep; /**< buffers kept across repeats; NULL: the run's own */
    /** This rank runs the cell by itself (the screen's pair tests): its own samples, status
     *  and figures, no agreement, gather or barrier with the other ranks, which may be
     *  running other pairs or have stopped; the operation still spans the job's ranks (a
     *  paired sendrecv with cell->peer). */
    int alone;
    /** With alone: this rank (its node's leader) reads its node's counters (--counters) around
     *  the loop and keeps them as its result's rows, node and host its own (the screen's pair
     *  tests: the path check); nobody gathers them. */
    int read_counters;
    double tmo; /**< > 0: the watchdog's timeout for the cell's steps (else cp_cell_timeout) */
    /** the job's host table, from which the screen's pairs and validation make their
     *  groups' (NULL: none; a cell with r->ctx and a split kind runs on that context as its
     *  group's) */
    const collprof_host_t *host;
    int gn, grank; /**< gn > 0: ctx is a group's of gn ranks, this rank grank in it (the
                        screen's pairs); a sweep cell's peer is then a group rank too */
    /** Rank 0, the link sweep and the screen: each node's leaf switch in Slurm's tree
     *  topology ([nnodes], -1: not in it; NULL: no topology), for the /links rows' path
     *  class (src/screen/path.h, src/slurm/slurm_topo.h). */
    const int *node_leaf;
    /** Called after every iteration when not NULL (the screen's pair tests: a sign of life). */
    void (*on_iter)(void *arg);
    void *on_iter_arg;
} cp_runner_t;

/** The watchdog timeout of a cell whose largest buffer has bytes bytes:
 *  --timeout when given (0: none), else 60 s + 1 s per 10 MB. */
double cp_cell_timeout(const cp_options_t *opt, uint64_t bytes);

/** The timeout of the cell running now, in seconds (plugins read it, plus
 *  a margin that lets the watchdog fire first, as their "timeout" option);
 *  0 when none. */
double cp_current_timeout(void);

/** The memory one rank holds while it runs a cell, as the runner allocates it: for the
 *  plan's memory guard (cp_plan_build), kept here beside the allocations it counts. */
typedef struct cp_cell_mem {
    uint64_t buffer;  /**< bytes of one buffer, its --rotate-buffers slots included */
    uint64_t hostbuf; /**< bytes of each host buffer: buffer, or a device cell's host copy */
    int nbuf;         /**< buffers per rank: 2, or 1 in place */
    int device;       /**< the buffers are device memory (each rank one device) */
    uint64_t host;    /**< host bytes per rank: the buffers (a device cell: its host copies, which
                           fill and check it) and the bookkeeping */
    uint64_t book;    /**< of which bookkeeping: samples, the ranks' means, a traffic matrix */
    uint64_t root;    /**< more on rank 0: every rank's samples and records, the gathers' room */
} cp_cell_mem_t;

/** What cell c of backend be, on its group of ranks, needs under o (o->repeats runs of it;
 *  adaptive repeats past those are not foreseen). */
void cp_cell_mem(const cp_options_t *o, const collprof_backend_t *be, const cp_cell_t *c,
                 cp_cell_mem_t *out);

/** Collective over all ranks.  res is filled on every rank.  The phases are here, the buffers
 *  and the policy in runner_buf.c, the gathers, merge and figures in runner_merge.c
 *  (runner_int.h); the agreement in agree.c; the result's file row in output/result_row.c. */
void cp_run_cell(cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res);
void cp_result_free(cp_result_t *res);
/** Free kept buffers (on every rank that has them; memtype: the cell's). */
void cp_kept_bufs_free(const cp_plugin_t *p, int memtype, cp_kept_bufs_t *k);

/**
 * The policy columns (sync, batch, rotate, check) a cell of backend be on memtype gets under o, and
 * where the core allocates (--alloc mmap|hugepages) the allocation a probe gets on this rank
 * now (the cells record their own): for the summary's header before any cell ran.
 */
void cp_policy_row(const cp_options_t *o, const collprof_backend_t *be, int memtype,
                   collprof_result_row_t *row);

#endif /* COLLPROF_CORE_RUNNER_H */
