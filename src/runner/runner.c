#include "config.h"

#include "runner/runner.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "base/fault.h"
#include "base/log.h"
#include "runner/overlap.h"
#include "runner/runner_int.h"
#include "base/timeouts.h"
#include "base/util.h"
#include "wd/watchdog.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static double current_timeout;

double cp_cell_timeout(const cp_options_t *opt, uint64_t bytes)
{
    if (opt->timeout_s >= 0) {
        return opt->timeout_s;
    }
    return CP_TMO_CELL_BASE_S + (double)bytes / CP_TMO_CELL_BYTES_PER_S;
}

double cp_current_timeout(void)
{
    return current_timeout;
}

/* ---- one cell, phase by phase ---------------------------------------- */

static void corrupt_one(const cp_xfer_t *x, void *recvbuf)
{
    size_t at = (size_t)cp_coll_result_at(x);
    if (at >= cp_coll_buffer_elems(x)) {
        return; /* an empty last block (scatterv in place): no element of this rank's result */
    }
    int64_t v = 0;
    cp_data_get(x->dtype, recvbuf, at, &v);
    cp_data_set(x->dtype, recvbuf, at, v + 1);
}

/* ---- the exact check: --check last (after the loop), every, sample:K (in it) ---- */

/* Does the cell check the output of iteration i (counting the warm-up) in its timed loop
 * (--check every or sample:K; the warm-up never)? */
static int checks_iteration(const cell_run_t *c, int i)
{
    const cp_options_t *o = c->r->opt;
    int t = i - c->cell->warmup;
    return t >= 0 && !(cp_op_flags(c->cell->op) & COLLPROF_OPF_NODATA) &&
           cp_check_iteration(cp_check_applied(o->check, o->check_mode), o->check_k, t, c->iters);
}

/* Fresh inputs, and the output poisoned, in the slot the next operation uses (not timed). */
static int refill(cell_run_t *c)
{
    cp_runner_set_slot(c, cp_rotate_slot(c->ops, c->slots));
    void *fs = c->staged ? c->hsend : c->sendbuf, *fr = c->staged ? c->hrecv : c->recvbuf;
    memset(fr, 0xff, c->bytes);
    cp_coll_get(c->cell->op)->fill(&c->x, fs, fr);
    int rc = cp_runner_upload(c);
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 3, "%s", c->be->last_error(c->ctx));
    }
    return rc;
}

/* The output of the operation that just ran on fresh inputs (its slot's, staged: copied back)
 * against the exact result; corrupt: COLLPROF_FAULT wrongiter names it.  #wrong is the worst
 * output's count on this rank. */
static int verify(cell_run_t *c, int corrupt)
{
    const cp_coll_t *coll = cp_coll_get(c->cell->op);
    void *fr = c->staged ? c->hrecv : c->recvbuf;
    int rc = COLLPROF_OK;
    if (c->staged) {
        rc = cp_runner_stage_copy(c, c->hrecv, c->recvbuf, 0);
    }
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 3, "%s", c->be->last_error(c->ctx));
        return rc;
    }
    if (corrupt || c->fault_wrong) {
        corrupt_one(&c->x, fr);
    }
    uint64_t wrong = coll->check(&c->x, fr);
    c->rec.wrong = wrong > c->rec.wrong ? wrong : c->rec.wrong;
    c->wrong_outputs += wrong > 0;
    return COLLPROF_OK;
}

/* Before iteration i (counting the warm-up): fresh inputs when its output is checked. */
static int before_iteration(cell_run_t *c, int i)
{
    if (!checks_iteration(c, i)) {
        return COLLPROF_OK;
    }
    cp_wd_beat(CP_WD_FILL, c->r->index, i, c->cell->warmup, c->tmo);
    return refill(c);
}

/* After iteration i: COLLPROF_FAULT wrongiter, and the check when its output is checked. */
static int after_iteration(cell_run_t *c, int i)
{
    int t = i - c->cell->warmup;
    int corrupt = t >= 0 && t + 1 == c->fault_iter;
    if (corrupt && !c->staged) { /* the buffer itself (staged: the host copy, when checked) */
        corrupt_one(&c->x, c->recvbuf);
        corrupt = 0;
    }
    if (!checks_iteration(c, i)) {
        return COLLPROF_OK;
    }
    cp_wd_beat(CP_WD_VERIFY, c->r->index, i, c->cell->warmup, c->tmo);
    c->checks++;
    return verify(c, corrupt);
}

/* Turn a failed agreement into the cell's result; 0 when every rank passed. */
static int agreed(cell_run_t *c, cp_result_t *res)
{
    cp_agreement_t a;
    if (cp_agree_over(c->oob, c->n, c->rec.status, c->msg, &a) == CP_AGREE_OK) {
        return 0;
    }
    res->fig.status =
        a.status == COLLPROF_ERR_NOT_SUPPORTED ? COLLPROF_CELL_UNSUPPORTED : COLLPROF_CELL_ERROR;
    if (a.result == CP_AGREE_FAILED) { /* every rank reports the first failing rank's reason */
        snprintf(res->fig.reason, sizeof(res->fig.reason), "rank %d: %s", a.rank, a.msg);
    } else {
        snprintf(res->fig.reason, sizeof(res->fig.reason), "%s", a.msg);
    }
    return -1;
}

/* Local: the variant's selection result and the variable ops' traffic. */
static void setup_traffic(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    int rc = c->be->select_variant(c->ctx, cell->op, cell->variant);
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 1, "variant %s: %s", cell->variant, c->be->last_error(c->ctx));
    }
    if (c->rec.status == 0 && (cp_op_flags(cell->op) & COLLPROF_OPF_VARIABLE)) {
        rc = cp_a2av_build(&c->a2av, cell->op, cell->imb, c->gn, cell->count, cell->root, c->grank);
        if (rc == COLLPROF_ERR_INVALID) { /* the plan refuses such cells first */
            cp_runner_fail(c, rc, 1,
                           "root %d is not in this group of %d ranks (or %s does not fit)",
                           cell->root, c->gn, cell->imb->label);
            return;
        }
        if (rc != COLLPROF_OK) {
            cp_runner_fail(c, COLLPROF_ERR_NO_MEMORY, 1,
                           "out of memory for this rank's traffic (%d ranks)", c->gn);
            return;
        }
        c->x.a2av = &c->a2av;
        c->rec.send_elems = c->a2av.send_total;
        c->rec.recv_elems = c->a2av.recv_total;
        if (cell->op == COLLPROF_OP_ALLTOALLV && cell->in_place && !c->a2av.symmetric) {
            cp_runner_fail(c, COLLPROF_ERR_NOT_SUPPORTED, 1,
                           "in-place alltoallv needs symmetric traffic; %s is not",
                           cell->imb->label);
        }
    }
    /* room for the warm-up batch too, which a device backend times into the same array */
    int nsamples = c->iters > c->cell->warmup ? c->iters : c->cell->warmup;
    c->mine = calloc((size_t)nsamples, sizeof(double));
    if (c->mine == NULL) {
        cp_runner_fail(c, COLLPROF_ERR_NO_MEMORY, 1, "out of memory for samples");
    }
}

/* The room cp_runner_finish() needs, taken before the ranks agree on the set-up, so that a rank
 * without it fails the set-up with the others instead of leaving their gathers. */
static void setup_results(cell_run_t *c)
{
    int me = cp_runner_me(c), root = me == 0;
    size_t n = (size_t)c->n;
    c->recs = calloc(root ? n : 1, sizeof(cell_rec_t));
    c->samples = calloc((root ? n : 1) * (size_t)c->iters, sizeof(double));
    c->rank_mean = calloc(n, sizeof(double));
    c->gmine = malloc(cp_runner_gather_part(c));
    c->gall = root ? malloc(n * cp_runner_gather_part(c)) : NULL;
    if (!c->recs || !c->samples || !c->rank_mean || !c->gmine || (root && !c->gall) ||
        cp_fault_nomem(me, c->r->index)) {
        cp_runner_fail(c, COLLPROF_ERR_NO_MEMORY, 1,
                       "out of memory for the results (%d ranks x %d iterations)", c->n, c->iters);
    }
}

/* The barrier before iteration i (--sync-barrier): the backend's, else the out-of-band one. */
static int sync_ranks(cell_run_t *c, int i)
{
    if (!c->r->opt->sync_barrier || c->r->alone) { /* alone: the pair's exchange is the sync */
        return COLLPROF_OK;
    }
    cp_wd_beat(CP_WD_SYNC, c->r->index, i, c->cell->warmup, c->tmo);
    return (c->p->caps.ops & COLLPROF_BIT(COLLPROF_OP_BARRIER)) ? c->be->run(c->ctx, &c->barrier)
                                                                : c->oob->barrier();
}

/* One operation, on the slot its turn gives it. */
static int run_op(cell_run_t *c)
{
    cp_runner_set_slot(c, cp_rotate_slot(c->ops++, c->slots));
    return c->be->run(c->ctx, &c->args);
}

/* Iteration i of the host-timed loop: barrier, faults, the timed operation (or, for a timed
 * iteration under --sync batch:N, N operations back to back: one sample, their mean). */
static int run_one(cell_run_t *c, int i, long slow_us, int hang)
{
    const cp_cell_t *cell = c->cell;
    const int idx = c->r->index, me = c->r->boot->rank;
    int rc = sync_ranks(c, i);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    if (i == cell->warmup + c->iters / 2) {
        if (cp_fault_exit(me)) {
            cp_fault_exit_now(me);
        }
        if (hang) {
            cp_fault_hang_now(me);
        }
    }
    int ops = i >= cell->warmup ? c->batch : 1;
    cp_wd_beat(CP_WD_OP, idx, i, cell->warmup, c->tmo * ops);
    double t0 = cp_now_us();
    rc = COLLPROF_OK;
    for (int k = 0; k < ops && rc == COLLPROF_OK; k++) {
        rc = run_op(c);
        if (slow_us > 0) {
            cp_fault_spin(slow_us);
        }
    }
    double t1 = cp_now_us();
    cp_wd_beat(CP_WD_OP_DONE, idx, i, cell->warmup, c->tmo);
    if (i >= cell->warmup) {
        c->mine[i - cell->warmup] = cp_batch_per_op(t0, t1, ops);
    }
    if (c->r->on_iter != NULL) {
        c->r->on_iter(c->r->on_iter_arg);
    }
    return rc;
}

/* overlap() of a non-blocking op: the calibrated computation, timed. */
static void nb_compute(void *arg)
{
    cell_run_t *c = arg;
    double t0 = cp_now_us();
    cp_overlap_spin(c->nb_loops);
    c->nb_last_us = cp_now_us() - t0;
}

/* Iteration i with the computation overlapped: its overall and compute times added up. */
static int run_overlapped(cell_run_t *c, int i, double *overall, double *compute)
{
    const cp_cell_t *cell = c->cell;
    int rc = sync_ranks(c, i);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    cp_wd_beat(CP_WD_OP, c->r->index, i, cell->warmup, c->tmo);
    c->nb_last_us = 0;
    double t0 = cp_now_us();
    rc = run_op(c);
    double t1 = cp_now_us();
    cp_wd_beat(CP_WD_OP_DONE, c->r->index, i, cell->warmup, c->tmo);
    if (i >= cell->warmup) {
        *overall += t1 - t0;
        *compute += c->nb_last_us;
    }
    return rc;
}

/*
 * A non-blocking op, as OSU's osu_i* benchmarks measure it: first post +
 * wait alone (the samples: the pure communication time), then, with a
 * computation calibrated to this rank's mean of those, post + compute +
 * wait.  Host timed on every backend (a device backend's run() waits for
 * its stream).
 */
static int run_nonblocking(cell_run_t *c, long slow_us, int hang)
{
    const cp_cell_t *cell = c->cell;
    int rc = COLLPROF_OK;
    c->args.overlap = NULL;
    for (int i = 0; i < cell->warmup + c->iters && rc == COLLPROF_OK; i++) {
        rc = before_iteration(c, i);
        rc = rc == COLLPROF_OK ? run_one(c, i, slow_us, hang) : rc;
        rc = rc == COLLPROF_OK ? after_iteration(c, i) : rc;
    }
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double comm = 0, overall = 0, compute = 0;
    for (int i = 0; i < c->iters; i++) {
        comm += c->mine[i];
    }
    c->rec.nb_comm_us = comm / c->iters;
    c->nb_loops = cp_overlap_calibrate(c->rec.nb_comm_us);
    cp_log(CP_LOG_DEBUG, "%s/%s %s: %.1f us of communication, %llu loops of computation",
           c->p->name, cell->variant, collprof_op_name(cell->op), c->rec.nb_comm_us,
           (unsigned long long)c->nb_loops);
    c->args.overlap = nb_compute; /* also for the check that follows */
    c->args.overlap_arg = c;
    for (int i = 0; i < cell->warmup + c->iters && rc == COLLPROF_OK; i++) {
        rc = before_iteration(c, i);
        rc = rc == COLLPROF_OK ? run_overlapped(c, i, &overall, &compute) : rc;
        rc = rc == COLLPROF_OK ? after_iteration(c, i) : rc;
    }
    c->rec.nb_overall_us = overall / c->iters;
    c->rec.nb_compute_us = compute / c->iters;
    return rc;
}

/* A device-timed backend's timed iterations: one batch, or, where --check every|sample:K
 * checks some, the batches between them and each checked one alone (a batch of 1). */
static int run_device_timed(cell_run_t *c)
{
    const int w = c->cell->warmup;
    int rc = COLLPROF_OK;
    for (int t = 0; t < c->iters && rc == COLLPROF_OK;) {
        int next = t; /* the next checked iteration, or iters */
        while (next < c->iters && !checks_iteration(c, w + next)) {
            next++;
        }
        if (next > t) {
            cp_wd_beat(CP_WD_OP, c->r->index, w + t, w, c->tmo * (double)(next - t + 1));
            rc = c->be->run_batch(c->ctx, &c->args, next - t, c->mine + t);
        }
        if (next < c->iters && rc == COLLPROF_OK) {
            rc = before_iteration(c, w + next);
            if (rc == COLLPROF_OK) {
                cp_wd_beat(CP_WD_OP, c->r->index, w + next, w, c->tmo * 2);
                rc = c->be->run_batch(c->ctx, &c->args, 1, c->mine + next);
            }
            rc = rc == COLLPROF_OK ? after_iteration(c, w + next) : rc;
        }
        t = next + 1;
    }
    return rc;
}

/* Warm-up and timed iterations. */
static void run_timed(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    const int idx = c->r->index, me = c->r->boot->rank;
    long slow_us = cp_fault_slow_us(me) + cp_fault_slow_repeat_us(c->r->repeat) +
                   (cell->sweep ? 0 : cp_fault_slowcoll_us(me));
    int hang = cp_fault_hang(me, idx);
    c->x.rank = c->grank;
    int rc = COLLPROF_OK;
    for (int k = 0; k < c->slots && rc == COLLPROF_OK; k++) { /* every slot holds the input */
        cp_runner_set_slot(c, k);
        cp_coll_get(cell->op)->fill(&c->x, c->staged ? c->hsend : c->sendbuf,
                                    c->staged ? c->hrecv : c->recvbuf);
        rc = cp_runner_upload(c);
    }
    c->ops = 0;
    if (rc != COLLPROF_OK) {
        /* reported below as a run failure */
    } else if (cp_op_flags(cell->op) & COLLPROF_OPF_NONBLOCKING) {
        rc = run_nonblocking(c, slow_us, hang);
    } else if (c->be->flags & COLLPROF_BACKEND_DEVICE_TIMER) {
        /* one beat for the whole batch: the backend watches its own stream */
        cp_wd_beat(CP_WD_OP, idx, 0, cell->warmup, c->tmo * (double)(cell->warmup + c->iters + 1));
        rc = cell->warmup > 0 ? c->be->run_batch(c->ctx, &c->args, cell->warmup, c->mine)
                              : COLLPROF_OK;
        if (rc == COLLPROF_OK) {
            rc = run_device_timed(c);
        }
    } else {
        for (int i = 0; i < cell->warmup + c->iters && rc == COLLPROF_OK; i++) {
            rc = before_iteration(c, i);
            rc = rc == COLLPROF_OK ? run_one(c, i, slow_us, hang) : rc;
            rc = rc == COLLPROF_OK ? after_iteration(c, i) : rc;
        }
    }
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 2, "%s", c->be->last_error(c->ctx));
    }
}

/* --check last: the exact check on a fresh run after the timed loop. */
static void run_check(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    if (c->rec.status != 0 || !c->r->opt->check || (cp_op_flags(cell->op) & COLLPROF_OPF_NODATA)) {
        return;
    }
    if (cp_check_applied(1, c->r->opt->check_mode) != CP_CHECK_LAST) { /* checked in the loop */
        cp_log(c->rec.wrong > 0 ? CP_LOG_WARN : CP_LOG_INFO,
               "%s/%s %s: verification: %d of %d timed outputs checked, %d wrong (at most %llu "
               "wrong elements in one) on this rank",
               c->p->name, cell->variant, collprof_op_name(cell->op), c->checks, c->iters,
               c->wrong_outputs, (unsigned long long)c->rec.wrong);
        return;
    }
    cp_wd_beat(CP_WD_CHECK, c->r->index, -1, cell->warmup, c->tmo);
    cp_runner_set_slot(
        c, cp_rotate_slot(c->ops - 1, c->slots)); /* the last timed operation's buffers */
    const cp_coll_t *coll = cp_coll_get(cell->op);
    void *fs = c->staged ? c->hsend : c->sendbuf, *fr = c->staged ? c->hrecv : c->recvbuf;
    memset(fr, 0xff, c->bytes);
    coll->fill(&c->x, fs, fr);
    int rc = cp_runner_upload(c);
    if (rc == COLLPROF_OK) {
        rc = c->be->run(c->ctx, &c->args);
    }
    if (rc == COLLPROF_OK && c->staged) {
        rc = cp_runner_stage_copy(c, c->hrecv, c->recvbuf, 0);
    }
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 3, "%s", c->be->last_error(c->ctx));
        return;
    }
    if (c->fault_wrong) {
        corrupt_one(&c->x, fr);
    }
    c->rec.wrong = coll->check(&c->x, fr);
    cp_log(c->rec.wrong > 0 ? CP_LOG_WARN : CP_LOG_INFO,
           "%s/%s %s: verification: %llu wrong elements on this rank", c->p->name, cell->variant,
           collprof_op_name(cell->op), (unsigned long long)c->rec.wrong);
}

/* A cell decided before it runs (at plan time, or its backend is not up). */
static int decided(const cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res)
{
    const cp_plugin_t *p = &r->plugins[cell->plugin];
    if (cell->pre_status != COLLPROF_CELL_PENDING) {
        res->fig.status = cell->pre_status;
        snprintf(res->fig.reason, sizeof(res->fig.reason), "%s", cell->pre_reason);
        return 1;
    }
    /* a cell on a context of its own (a screen pair's, a validation group's, a repeat's)
     * needs no job-wide context: a foreign connection that broke the job-wide init (Gloo's
     * pair listeners take the first connection that comes) must not skip every pair */
    if (p->ctx == NULL && r->ctx == NULL) {
        res->fig.status = COLLPROF_CELL_SKIPPED;
        snprintf(res->fig.reason, sizeof(res->fig.reason), "backend %s is not initialised: %.160s",
                 p->name, p->error);
        return 1;
    }
    if (cell->split && r->ctx == NULL && p->gctx[cell->split] == NULL) {
        res->fig.status = COLLPROF_CELL_SKIPPED;
        snprintf(res->fig.reason, sizeof(res->fig.reason), "backend %s: %.200s", p->name,
                 p->gerror[cell->split][0] ? p->gerror[cell->split] : "no group context");
        return 1;
    }
    return 0;
}

/* The variable ops' buffers differ between ranks (alltoallv's heaviest receiver holds several
 * times the cell's count): once the ranks agreed on the set-up, the cell's timeout from the
 * largest of them, the same on every rank, since a light rank waits as long as the heaviest
 * works.  Rank 0 takes the maximum in the room of its record gather (gall: nranks parts of more
 * than 8 bytes); every rank makes the same calls (the op and --timeout are the cell's). */
static void timeout_of_largest(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    if (!(cp_op_flags(cell->op) & COLLPROF_OPF_VARIABLE) || c->r->opt->timeout_s >= 0) {
        return;
    }
    uint64_t mine = cp_coll_buffer_elems(&c->x) * collprof_dtype_size(cell->dtype), largest = 0;
    int rc =
        c->oob->gather(&mine, c->gall != NULL ? (void *)c->gall : (void *)c->gmine, sizeof(mine));
    for (int q = 0; rc == 0 && c->gall != NULL && q < c->n; q++) {
        uint64_t b;
        memcpy(&b, c->gall + (size_t)q * sizeof(b), sizeof(b));
        largest = b > largest ? b : largest;
    }
    rc |= c->oob->bcast(&largest, sizeof(largest), 0);
    if (rc != 0) {
        return; /* the next exchange fails the cell */
    }
    c->tmo = current_timeout = cp_cell_timeout(c->r->opt, largest * (uint64_t)(c->gn > 1 ? 2 : 1));
    cp_wd_beat(CP_WD_SETUP, c->r->index, -1, cell->warmup,
               c->tmo * (c->r->opt->rotate > 1 ? c->r->opt->rotate : 1));
}

void cp_run_cell(cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res)
{
    struct timeval tv;
    memset(res, 0, sizeof(*res));
    res->nranks = r->alone ? 1 : r->boot->nranks;
    res->iters = cell->iters;
    gettimeofday(&tv, NULL);
    res->start_epoch = (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;
    if (decided(r, cell, res)) {
        return;
    }
    res->prov = r->plugins[cell->plugin].prov[cell->memtype];
    cell_run_t c;
    memset(&c, 0, sizeof(c));
    c.r = r;
    c.cell = cell;
    c.p = &r->plugins[cell->plugin];
    c.be = c.p->be;
    c.oob = r->alone ? &cp_oob_alone : r->oob != NULL ? r->oob : &cp_oob_world;
    c.n = r->alone ? 1 : r->boot->nranks;
    c.ctx = r->ctx != NULL ? r->ctx : cell->split ? c.p->gctx[cell->split] : c.p->ctx;
    c.gn = r->gn > 0 ? r->gn : cell->split ? cell->group_n : r->boot->nranks;
    c.grank = r->gn > 0 ? r->grank : cell->split ? cell->group_rank : r->boot->rank;
    c.iters = cell->iters;
    c.memtype = cell->memtype;
    /* device memory is filled and checked through host copies ("staged") */
    c.staged = c.memtype == COLLPROF_MEM_DEVICE || cp_fault_test_staged();
    c.fault_wrong = cp_fault_wrong(r->boot->rank); /* not in the loop: getenv walks the env */
    c.fault_iter = cp_fault_wrong_iter(r->boot->rank);
    c.x = (cp_xfer_t){.op = cell->op,
                      .dtype = cell->dtype,
                      .redop = cell->redop,
                      .root = cell->root,
                      .in_place = cell->in_place,
                      .rank = c.grank,
                      .n = c.gn,
                      .count = cell->count,
                      .paired = cell->sweep,
                      .peer = cell->peer};
    if (cell->sweep && cell->peer == c.grank) {
        /* a link sweep's bystander exchanges one element with itself: its figures are not
         * used, and filling, copying and checking the full size on every rank not in a pair
         * would only take the pairs' CPUs (the ranks of a node share its cores) */
        c.x.count = 1;
    }
    uint64_t largest =
        cell->count * collprof_dtype_size(cell->dtype) * (uint64_t)(c.gn > 1 ? 2 : 1);
    c.tmo = current_timeout = r->tmo > 0 ? r->tmo : cp_cell_timeout(r->opt, largest);
    /* set-up touches and fills every copy of the buffers (--rotate-buffers) */
    cp_wd_beat(CP_WD_SETUP, r->index, -1, cell->warmup,
               c.tmo * (r->opt->rotate > 1 ? r->opt->rotate : 1));

    /* every collective slot is called on every rank or on none: agree first */
    setup_traffic(&c);
    setup_results(&c);
    if (agreed(&c, res) == 0) {
        timeout_of_largest(&c);
        cp_runner_setup_buffers(&c);
        if (agreed(&c, res) == 0) {
            cp_runner_log_buffers(&c);
            cp_log(CP_LOG_DEBUG, "%s/%s %s: %d warm-up and %d timed iterations", c.p->name,
                   cell->variant, collprof_op_name(cell->op), cell->warmup, c.iters);
            cp_runner_counters_before(&c); /* --counters: a node's first rank, not timed */
            run_timed(&c);
            cp_runner_counters_after(&c);
            run_check(&c);
            cp_runner_finish(&c, res);
            cp_runner_counters_gather(&c, res);
        }
    }
    cp_runner_release(&c);
}

void cp_result_free(cp_result_t *res)
{
    free(res->samples);
    free(res->rank_mean);
    free(res->send_bytes);
    free(res->recv_bytes);
    free(res->rank_wrong);
    res->rank_wrong = NULL;
    free(res->rep_p50);
    free(res->rep_iters);
    free(res->counters);
    res->counters = NULL;
    res->ncounters = 0;
    res->rep_p50 = NULL;
    res->rep_iters = NULL;
    res->samples = res->rank_mean = NULL;
    res->send_bytes = res->recv_bytes = NULL;
}
