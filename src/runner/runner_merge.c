#include "config.h"

#include "runner/runner.h"

#include "colls/colls.h"
#include "base/log.h"
#include "runner/overlap.h"
#include "runner/policy.h"
#include "runner/runner_int.h"
#include "runner/split.h"
#include "wd/watchdog.h"

#include <stdlib.h>
#include <string.h>

/* One gather's part: the record and up to GATHER_CHUNK samples. */
size_t cp_runner_gather_part(const cell_run_t *c)
{
    return sizeof(cell_rec_t) +
           sizeof(double) * (size_t)(c->iters < GATHER_CHUNK ? c->iters : GATHER_CHUNK);
}

/* Every rank's record and samples to rank 0 in one gather (more for cells of over GATHER_CHUNK
 * iterations: PMIx's store refuses one blob of several MB); the other ranks keep their own
 * samples only. */
static int gather_all(cell_run_t *c, cell_rec_t *recs, cp_result_t *res, int me)
{
    int n = c->n, iters = c->iters, oob = 0;
    size_t rl = sizeof(cell_rec_t);
    char *mine = c->gmine, *all = c->gall;
    /* every piece, whatever failed before (the ranks' calls stay in step): the first error */
    for (int off = 0; off == 0 || off < iters; off += GATHER_CHUNK) {
        int len = iters - off < GATHER_CHUNK ? iters - off : GATHER_CHUNK;
        size_t head = off == 0 ? rl : 0, bytes = sizeof(double) * (size_t)(len > 0 ? len : 0);
        memcpy(mine, &c->rec, head);
        memcpy(mine + head, c->mine + off, bytes);
        int rc = c->oob->gather(mine, all, head + bytes);
        oob = oob != 0 ? oob : rc;
        for (int q = 0; q < n && rc == 0 && me == 0; q++) {
            const char *from = all + (size_t)q * (head + bytes);
            memcpy(&recs[q], from, head);
            memcpy(res->samples + (size_t)q * (size_t)iters + (size_t)off, from + head, bytes);
        }
    }
    if (me != 0) {
        memcpy(res->samples, c->mine, sizeof(double) * (size_t)iters);
    }
    return oob;
}

/* What rank 0 merged from every rank's record and samples, for the other ranks. */
typedef struct cell_sum {
    int bad; /* the first failing rank (its message follows from it), or -1 */
    cp_figures_t fig;
} cell_sum_t;

/* Rank 0's result to every rank (a broadcast of its figures, not of the samples); *bad: the
 * first failing rank, or -1. */
static int share_result(cell_run_t *c, cp_result_t *res, int me, int *bad)
{
    cell_sum_t s;
    memset(&s, 0, sizeof(s));
    if (me == 0) {
        s.bad = *bad;
        s.fig = res->fig;
    }
    int oob = c->oob->bcast(&s, sizeof(s), 0);
    *bad = oob == 0 && s.bad >= 0 && s.bad < c->n ? s.bad : -1;
    if (oob == 0 && me != 0) {
        res->fig = s.fig;
        res->fig.reason[sizeof(res->fig.reason) - 1] = '\0';
        res->fig.allocation[sizeof(res->fig.allocation) - 1] = '\0';
    }
    return oob;
}

/* A non-blocking op's figures: the means over ranks of each rank's means, as OSU reports. */
static void merge_overlap(const cell_rec_t *recs, int n, cp_result_t *res)
{
    for (int q = 0; q < n; q++) {
        res->fig.comm_us += recs[q].nb_comm_us / n;
        res->fig.overall_us += recs[q].nb_overall_us / n;
        res->fig.compute_us += recs[q].nb_compute_us / n;
    }
    res->fig.overlap_pct =
        cp_overlap_pct(res->fig.overall_us, res->fig.compute_us, res->fig.comm_us);
}

/* The policy the cell applied, and (recs: rank 0) the core's allocation on every rank (--alloc). */
static void merge_policy(cell_run_t *c, const cell_rec_t *recs, cp_result_t *res)
{
    static int warned; /* the huge page fallback, said once per run */
    int fellback = 0;
    int slots, batch, core;
    cp_sync_t sync;
    cp_runner_policy(c->r->opt, c->be, c->memtype, &slots, &batch, &core, &sync);
    snprintf(res->sync, sizeof(res->sync), "%s", cp_sync_name(sync));
    res->batch = c->batch;
    res->rotate = c->slots;
    cp_runner_check_name(c->r->opt, c->cell->op, res->check, sizeof(res->check));
    for (int q = 0; recs != NULL && q < c->n && c->core; q++) {
        fellback |= recs[q].fellback;
        if (strcmp(recs[q].alloc, recs[0].alloc) != 0) {
            snprintf(res->fig.allocation, sizeof(res->fig.allocation), "per rank");
        } else if (q == 0) {
            snprintf(res->fig.allocation, sizeof(res->fig.allocation), "%s", recs[0].alloc);
        }
    }
    if (fellback && !warned && c->r->boot->rank == 0) {
        warned = 1;
        cp_log(CP_LOG_WARN,
               "--alloc hugepages: no explicit huge pages (MAP_HUGETLB; see "
               "/proc/sys/vm/nr_hugepages), transparent ones asked for instead: %s",
               recs[0].alloc);
    }
}

/* Status, #wrong and per-rank means from every rank's record (rank 0); the first failing rank,
 * whose message the reason takes (failure_reason), or -1. */
static int merge_records(cell_run_t *c, const cell_rec_t *recs, cp_result_t *res)
{
    int bad = -1;
    res->fig.status = COLLPROF_CELL_OK;
    res->rank_wrong = calloc((size_t)c->n, sizeof(uint64_t));
    for (int q = 0; q < c->n; q++) {
        const cell_rec_t *rq = &recs[q];
        res->fig.wrong += rq->wrong;
        if (res->rank_wrong != NULL) {
            res->rank_wrong[q] = rq->wrong;
        }
        if (rq->status != 0 && res->fig.status == COLLPROF_CELL_OK) {
            res->fig.status = rq->status == COLLPROF_ERR_NOT_SUPPORTED ? COLLPROF_CELL_UNSUPPORTED
                                                                       : COLLPROF_CELL_ERROR;
            bad = q;
        }
        double s = 0;
        for (int i = 0; i < c->iters; i++) {
            s += res->samples[(size_t)q * (size_t)c->iters + (size_t)i];
        }
        res->rank_mean[q] = s / c->iters;
    }
    if (cp_op_flags(c->cell->op) & COLLPROF_OPF_NONBLOCKING) {
        merge_overlap(recs, c->n, res);
    }
    if (res->fig.status == COLLPROF_CELL_OK && res->fig.wrong > 0) {
        res->fig.status = COLLPROF_CELL_WRONG;
        snprintf(res->fig.reason, sizeof(res->fig.reason), "%llu wrong elements",
                 (unsigned long long)res->fig.wrong);
    }
    return bad;
}

/* The reason of a cell that failed on rank bad: its message, from it, on every rank. */
static int failure_reason(cell_run_t *c, cp_result_t *res, int bad)
{
    int oob = c->oob->bcast(c->msg, sizeof(c->msg), bad);
    c->msg[sizeof(c->msg) - 1] = '\0';
    if (oob == 0) {
        snprintf(res->fig.reason, sizeof(res->fig.reason), "rank %d (%s): %s", bad,
                 cp_boot_host(c->r->boot, bad), c->msg);
    }
    return oob;
}

/* Figures of the cell from the gathered samples. */
static int compute_figures(cell_run_t *c, cp_result_t *res)
{
    int n = c->n;
    double *imax = calloc((size_t)c->iters, sizeof(double));
    if (imax == NULL) {
        return -1;
    }
    cp_stats_iter_max(res->samples, n, c->iters, imax);
    cp_stats_compute(imax, c->iters, &res->fig.stats);
    free(imax);
    if (res->fig.stats.mean > 0) {
        res->fig.algbw = (double)res->bytes / res->fig.stats.mean * 1e-3; /* bytes/us -> GB/s */
        res->fig.busbw = res->fig.algbw * collprof_busbw_factor(c->cell->op, c->gn);
    }
    return 0;
}

/* The ranks of rank 0's group: the job, or its split group's members (a new array). */
static int *group_of_rank0(const cell_run_t *c, int *gn)
{
    int me = 0;
    if (c->cell->split) {
        return cp_split_members(c->r->boot, c->cell->split, gn, &me);
    }
    int *all = malloc(sizeof(int) * (size_t)c->n);
    for (int q = 0; all != NULL && q < c->n; q++) {
        all[q] = q;
    }
    *gn = c->n;
    return all;
}

/* Rank 0, variable ops: alltoallv's S, the heaviest rank of rank 0's group (every rank's
 * record holds its own totals), and each rank's bytes (not for split cells: the groups'
 * traffic is not the job's).  -1 out of memory. */
static int merge_traffic(cell_run_t *c, const cell_rec_t *recs, cp_result_t *res)
{
    if (!(cp_op_flags(c->cell->op) & COLLPROF_OPF_VARIABLE)) {
        return 0;
    }
    size_t esz = collprof_dtype_size(c->cell->dtype);
    if (c->cell->op == COLLPROF_OP_ALLTOALLV) {
        int gn = 0, *g = group_of_rank0(c, &gn);
        if (g == NULL) {
            return -1;
        }
        uint64_t most = 0;
        for (int i = 0; i < gn; i++) {
            const cell_rec_t *rq = &recs[g[i]];
            uint64_t m = rq->send_elems > rq->recv_elems ? rq->send_elems : rq->recv_elems;
            most = m > most ? m : most;
        }
        free(g);
        res->bytes = most * esz;
    }
    if (c->cell->split) {
        return 0;
    }
    res->send_bytes = calloc((size_t)c->n, sizeof(uint64_t));
    res->recv_bytes = calloc((size_t)c->n, sizeof(uint64_t));
    for (int q = 0; q < c->n && res->send_bytes && res->recv_bytes; q++) {
        res->send_bytes[q] = recs[q].send_elems * esz;
        res->recv_bytes[q] = recs[q].recv_elems * esz;
    }
    return 0;
}

static void oob_failed(cp_result_t *res)
{
    res->fig.status = COLLPROF_CELL_ERROR;
    snprintf(res->fig.reason, sizeof(res->fig.reason), "out-of-band exchange failed");
}

/*
 * Every rank's record and samples to rank 0, which computes the result and sends its figures
 * to the others, then the first failing rank's message from it: rank 0 moves ranks x (record +
 * samples) bytes, where allgathers would make it move ranks^2 x that.  Only rank 0 writes the
 * results; the others keep their own samples (for the repeats' bookkeeping) and rank 0's
 * status, reason and figures.
 */
void cp_runner_finish(cell_run_t *c, cp_result_t *res)
{
    cp_wd_beat(CP_WD_GATHER, c->r->index, -1, c->cell->warmup, c->tmo);
    int me = cp_runner_me(c), bad = -1;
    res->bytes = cp_coll_bytes(&c->x); /* this rank's (a sweep's bystanders move one element) */
    cell_rec_t *recs = c->recs;        /* the room setup_results took (release frees it) */
    res->samples = c->samples;
    res->srows = me == 0 ? c->n : 1;
    res->rank_mean = c->rank_mean;
    c->samples = c->rank_mean = NULL;
    int oob = gather_all(c, recs, res, me);
    if (oob != 0) { /* on rank 0, in the summary that follows: the calls stay in step */
        oob_failed(res);
    } else if (me == 0) {
        bad = merge_records(c, recs, res);
        if (merge_traffic(c, recs, res) != 0 || compute_figures(c, res) != 0) {
            res->fig.status = COLLPROF_CELL_ERROR;
            snprintf(res->fig.reason, sizeof(res->fig.reason),
                     "out of memory computing the figures");
        }
    }
    merge_policy(c, me == 0 ? recs : NULL, res);
    int shared = share_result(c, res, me, &bad);
    shared = shared == 0 && bad >= 0 ? failure_reason(c, res, bad) : shared;
    if (oob != 0 || shared != 0) { /* whatever rank 0 said */
        oob_failed(res);
    }
}
