/*
 * Runner internals (one cell on one rank), shared by the files of src/runner/runner*.c:
 *
 *   runner.c        cp_run_cell(): the phases (set-up, agreement, timed loop, check)
 *   runner_counters.c  --counters: the node leaders' readings around the loop, to rank 0
 *   runner_merge.c  the gathers to rank 0, the merge, the figures, rank 0's result to all
 *   runner_buf.c    the buffers: policy, allocation, slots, host copies, release; a failure
 *                   on this rank (cp_runner_fail)
 * in that order, top to bottom: a file calls only the files below it.
 */
#ifndef COLLPROF_CORE_RUNNER_INT_H
#define COLLPROF_CORE_RUNNER_INT_H

#include "colls/colls.h"
#include "counters/counters.h"
#include "runner/policy.h"
#include "runner/runner.h"

#include <stddef.h>

/* samples per rank in one out-of-band exchange (256 KiB of doubles) */
#define GATHER_CHUNK 32768

/* Per-rank record gathered to rank 0 at the end of a cell, the samples after it in the same
 * message.  The first failing rank's message follows, from it alone (cell_run_t's msg): not
 * every rank's, which would add 480 bytes per rank, most of it blank. */
typedef struct cell_rec {
    int status; /* collprof_status_t of the first failure on this rank */
    int phase;  /* 0 ok, 1 setup, 2 run, 3 check */
    uint64_t wrong;
    int fellback;   /* --alloc hugepages found no explicit huge pages */
    char alloc[64]; /* the core's allocation on this rank, "" where the backend's */
    /* non-blocking ops: this rank's means over the timed iterations, us */
    double nb_comm_us, nb_overall_us, nb_compute_us;
    /* variable ops: the elements this rank sends and receives (its row and column: rank 0
     * holds no rank's but its own) */
    uint64_t send_elems, recv_elems;
} cell_rec_t;

/* Everything one rank holds while it runs one cell. */
typedef struct cell_run {
    cp_runner_t *r;
    char msg[480]; /* the first failure on this rank */
    const cp_cell_t *cell;
    cp_plugin_t *p;
    const collprof_backend_t *be;
    const cp_oob_t *oob;
    void *ctx;     /* the backend's context: the job's, or this rank's group's (split cells) */
    void *actx;    /* the context that allocates the buffers (kept ones: another) */
    int kept;      /* the buffers are r->keep's, not freed here: 1 allocated now, 2 reused */
    int gn, grank; /* the operation's size and this rank's place in it */
    cp_xfer_t x;
    cp_a2av_t a2av;
    cell_rec_t rec;
    int n, iters, memtype, staged;
    double tmo;
    size_t bytes;              /* of each buffer */
    void *sendbuf, *recvbuf;   /* the slot in use of each buffer */
    void *sbase, *rbase;       /* the allocations: slots buffers of stride bytes each */
    size_t stride, smap, rmap; /* smap, rmap: the core's mapping lengths */
    int slots, core;           /* --rotate-buffers; core: --alloc mmap|hugepages */
    int batch;                 /* operations per timed sample */
    long ops;                  /* operations run, for the slot of the next one */
    void *hsend, *hrecv;       /* host copies when staged */
    double *mine;              /* this rank's samples, us */
    /* room for the results, taken before the set-up's agreement (a rank without it would
     * leave the gathers the others wait in): rank 0's records, the samples and means that
     * go to the cp_result_t, the gathers' buffers (gall on rank 0) */
    cell_rec_t *recs;
    double *samples, *rank_mean;
    char *gmine, *gall;
    collprof_args_t args, barrier; /* the operation, and the backend's barrier */
    int checks;                    /* --check every|sample:K: outputs checked in the loops */
    int wrong_outputs;             /* ... of which some elements were wrong */
    int fault_wrong, fault_iter;   /* COLLPROF_FAULT wrong, wrongiter's ITER (0: none), read once */
    uint64_t nb_loops;             /* non-blocking ops: the calibrated computation's loops */
    double nb_last_us;             /* ... and how long it took in the last iteration */
    /* --counters, on a node's first rank: the reading before the loop, then the deltas */
    cp_cnt_snap_t cnt_before;
    cp_cnt_delta_t *cnt;
    int ncnt;
    long cnt_ops;  /* operations run between the readings */
    double cnt_us; /* what the two readings took, us */
} cell_run_t;

/* This rank's place in the cell's gathers: 0 when it runs the cell alone (cp_runner_t.alone). */
static inline int cp_runner_me(const cell_run_t *c)
{
    return c->r->alone ? 0 : c->r->boot->rank;
}

/* ---- runner.c ------------------------------------------------------- */

/** Record this rank's first failure (status, phase 1 setup, 2 run, 3 check) and its message. */
__attribute__((format(printf, 4, 5))) void cp_runner_fail(cell_run_t *c, int status, int phase,
                                                          const char *fmt, ...);

/* ---- runner_buf.c --------------------------------------------------- */

/** What a cell applies of the run's policy (slots, batch, core allocation, sync). */
void cp_runner_policy(const cp_options_t *o, const collprof_backend_t *be, int memtype, int *slots,
                      int *batch, int *core, cp_sync_t *sync);
/** The cell's --check as applied (none for ops without data), for its /results row. */
void cp_runner_check_name(const cp_options_t *o, int op, char *buf, size_t len);
/** Host copy <-> the backend's buffer (staged cells). */
int cp_runner_stage_copy(cell_run_t *c, void *dst, const void *src, int to_device);
/** The filled host copies into the backend's buffers. */
int cp_runner_upload(cell_run_t *c);
/** Point the operation at slot k of the buffers (--rotate-buffers). */
void cp_runner_set_slot(cell_run_t *c, int k);
/** Collective: allocate, touch and (staged) copy the buffers, set the operation's arguments. */
void cp_runner_setup_buffers(cell_run_t *c);
/** Collective: free what the cell allocated. */
void cp_runner_release(cell_run_t *c);
/** What cp_runner_setup_buffers did, for --verbose. */
void cp_runner_log_buffers(const cell_run_t *c);

/* ---- runner_counters.c ---------------------------------------------- */

/** A node's first rank reads its counters (--counters) just before the loop ... */
void cp_runner_counters_before(cell_run_t *c);
/** ... and just after it, keeping the deltas. */
void cp_runner_counters_after(cell_run_t *c);
/** Collective (every rank of a cell that ran, with --counters): the leaders' deltas to rank 0,
 *  as res->counters rows. */
void cp_runner_counters_gather(cell_run_t *c, cp_result_t *res);

/* ---- runner_merge.c ------------------------------------------------- */

/** One gather's part: the record and up to GATHER_CHUNK samples. */
size_t cp_runner_gather_part(const cell_run_t *c);
/** Collective: every rank's record and samples to rank 0, its result to every rank. */
void cp_runner_finish(cell_run_t *c, cp_result_t *res);

#endif /* COLLPROF_CORE_RUNNER_INT_H */
