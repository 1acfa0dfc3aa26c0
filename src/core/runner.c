#include "config.h"

#include "core/runner.h"

#include "colls/colls.h"
#include "core/data.h"
#include "core/fault.h"
#include "core/log.h"
#include "core/overlap.h"
#include "core/policy.h"
#include "core/split.h"
#include "core/util.h"
#include "core/watchdog.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* samples per rank in one out-of-band exchange (256 KiB of doubles) */
#define GATHER_CHUNK 32768

static double current_timeout;

double cp_cell_timeout(const cp_options_t *opt, uint64_t bytes)
{
    if (opt->timeout_s >= 0) {
        return opt->timeout_s;
    }
    return 60.0 + (double)bytes / 10e6;
}

double cp_current_timeout(void)
{
    return current_timeout;
}

/* ---- one cell, phase by phase ---------------------------------------- */

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
    uint64_t nb_loops;             /* non-blocking ops: the calibrated computation's loops */
    double nb_last_us;             /* ... and how long it took in the last iteration */
} cell_run_t;

__attribute__((format(printf, 4, 5))) static void fail(cell_run_t *c, int status, int phase,
                                                       const char *fmt, ...)
{
    if (c->rec.status != 0) {
        return; /* the first failure is the one reported */
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
    va_end(ap);
    c->rec.status = status;
    c->rec.phase = phase;
    cp_log(CP_LOG_DEBUG, "%s/%s %s: failed on this rank (%s): %s", c->p->name, c->cell->variant,
           collprof_op_name(c->cell->op), collprof_status_string(status), c->msg);
}

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

/* Host copy <-> the backend's buffer: the backend's mem_copy for device
 * memory, memcpy for host memory (the COLLPROF_TEST_STAGED path). */
static int stage_copy(cell_run_t *c, void *dst, const void *src, int to_device)
{
    if (c->memtype == COLLPROF_MEM_DEVICE) {
        return c->be->mem_copy(c->ctx, c->memtype, dst, src, c->bytes, to_device);
    }
    memcpy(dst, src, c->bytes);
    return COLLPROF_OK;
}

/* The filled host copies into the backend's buffers (one buffer in place). */
static int upload(cell_run_t *c)
{
    if (!c->staged) {
        return COLLPROF_OK;
    }
    int rc = stage_copy(c, c->recvbuf, c->hrecv, 1);
    if (rc == COLLPROF_OK && c->sendbuf != NULL && c->sendbuf != c->recvbuf) {
        rc = stage_copy(c, c->sendbuf, c->hsend, 1);
    }
    return rc;
}

/* Turn a failed agreement into the cell's result; 0 when every rank passed. */
static int agreed(cell_run_t *c, cp_result_t *res)
{
    cp_agreement_t a;
    if (cp_agree_over(c->oob, c->n, c->rec.status, c->msg, &a) == CP_AGREE_OK) {
        return 0;
    }
    res->status =
        a.status == COLLPROF_ERR_NOT_SUPPORTED ? COLLPROF_CELL_UNSUPPORTED : COLLPROF_CELL_ERROR;
    if (a.result == CP_AGREE_FAILED) { /* every rank reports the first failing rank's reason */
        snprintf(res->reason, sizeof(res->reason), "rank %d: %s", a.rank, a.msg);
    } else {
        snprintf(res->reason, sizeof(res->reason), "%s", a.msg);
    }
    return -1;
}

/* Local: the variant's selection result and the variable ops' traffic. */
static void setup_traffic(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    int rc = c->be->select_variant(c->ctx, cell->op, cell->variant);
    if (rc != COLLPROF_OK) {
        fail(c, rc, 1, "variant %s: %s", cell->variant, c->be->last_error(c->ctx));
    }
    if (c->rec.status == 0 && (cp_op_flags(cell->op) & COLLPROF_OPF_VARIABLE)) {
        rc = cp_a2av_build(&c->a2av, cell->op, cell->imb, c->gn, cell->count, cell->root, c->grank);
        if (rc == COLLPROF_ERR_INVALID) { /* the plan refuses such cells first */
            fail(c, rc, 1, "root %d is not in this group of %d ranks (or %s does not fit)",
                 cell->root, c->gn, cell->imb->label);
            return;
        }
        if (rc != COLLPROF_OK) {
            fail(c, COLLPROF_ERR_NO_MEMORY, 1, "out of memory for this rank's traffic (%d ranks)",
                 c->gn);
            return;
        }
        c->x.a2av = &c->a2av;
        c->rec.send_elems = c->a2av.send_total;
        c->rec.recv_elems = c->a2av.recv_total;
        if (cell->op == COLLPROF_OP_ALLTOALLV && cell->in_place && !c->a2av.symmetric) {
            fail(c, COLLPROF_ERR_NOT_SUPPORTED, 1,
                 "in-place alltoallv needs symmetric traffic; %s is not", cell->imb->label);
        }
    }
    /* room for the warm-up batch too, which a device backend times into the same array */
    int nsamples = c->iters > c->cell->warmup ? c->iters : c->cell->warmup;
    c->mine = calloc((size_t)nsamples, sizeof(double));
    if (c->mine == NULL) {
        fail(c, COLLPROF_ERR_NO_MEMORY, 1, "out of memory for samples");
    }
}

/* One gather's part: the record and up to GATHER_CHUNK samples. */
static size_t gather_part(const cell_run_t *c)
{
    return sizeof(cell_rec_t) +
           sizeof(double) * (size_t)(c->iters < GATHER_CHUNK ? c->iters : GATHER_CHUNK);
}

/* The room finish() needs, taken before the ranks agree on the set-up, so that a rank
 * without it fails the set-up with the others instead of leaving their gathers. */
static void setup_results(cell_run_t *c)
{
    int me = c->r->boot->rank, root = me == 0;
    size_t n = (size_t)c->n;
    c->recs = calloc(root ? n : 1, sizeof(cell_rec_t));
    c->samples = calloc((root ? n : 1) * (size_t)c->iters, sizeof(double));
    c->rank_mean = calloc(n, sizeof(double));
    c->gmine = malloc(gather_part(c));
    c->gall = root ? malloc(n * gather_part(c)) : NULL;
    if (!c->recs || !c->samples || !c->rank_mean || !c->gmine || (root && !c->gall) ||
        cp_fault_nomem(me, c->r->index)) {
        fail(c, COLLPROF_ERR_NO_MEMORY, 1,
             "out of memory for the results (%d ranks x %d iterations)", c->n, c->iters);
    }
}

/* Host copies of the buffers (staged), every page touched outside the timed loop. */
static void setup_host_copies(cell_run_t *c)
{
    if (!c->staged) {
        memset(c->rbase, 0, c->stride * (size_t)c->slots);
        if (c->sbase != NULL) {
            memset(c->sbase, 0, c->stride * (size_t)c->slots);
        }
        return;
    }
    c->hrecv = cp_alloc_pages(c->bytes);
    c->hsend = c->cell->in_place ? NULL : cp_alloc_pages(c->bytes);
    if (c->hrecv == NULL || (c->hsend == NULL && !c->cell->in_place)) {
        fail(c, COLLPROF_ERR_NO_MEMORY, 1, "out of memory for 2 x %zu bytes of host copies",
             c->bytes);
        return;
    }
    memset(c->hrecv, 0, c->bytes);
    if (c->hsend != NULL) {
        memset(c->hsend, 0, c->bytes);
    }
    if (upload(c) != COLLPROF_OK) {
        fail(c, COLLPROF_ERR_BACKEND, 1, "copying to %s memory: %s",
             collprof_memtype_name(c->memtype), c->be->last_error(c->ctx));
    }
}

/* Point the operation at slot k of the buffers (--rotate-buffers). */
static void set_slot(cell_run_t *c, int k)
{
    size_t off = c->stride * (size_t)k;
    c->recvbuf = (char *)c->rbase + off;
    c->sendbuf = c->sbase != NULL ? (char *)c->sbase + off : NULL;
    c->args.sendbuf = c->cell->in_place ? c->recvbuf : c->sendbuf;
    c->args.recvbuf = c->recvbuf;
}

/* Local (--alloc mmap|hugepages): the buffers from the core; 0 or a collprof_status_t. */
static int core_alloc(cell_run_t *c, size_t total)
{
    int fb = 0;
    if (cp_policy_alloc(c->r->opt->alloc, total, &c->rbase, &c->rmap, c->rec.alloc,
                        sizeof(c->rec.alloc), &fb) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    c->rec.fellback = fb;
    if (!c->cell->in_place && cp_policy_alloc(c->r->opt->alloc, total, &c->sbase, &c->smap,
                                              c->rec.alloc, sizeof(c->rec.alloc), &fb) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    return COLLPROF_OK;
}

/* The buffers: kept ones, the core's (--alloc) or the backend's (collective mem_alloc). */
static int alloc_buffers(cell_run_t *c, size_t total)
{
    cp_kept_bufs_t *k = c->r->keep;
    int rc = COLLPROF_OK;
    if (k != NULL && k->have) { /* a later repeat: the first one's buffers */
        c->rbase = k->recvbuf;
        c->sbase = k->sendbuf;
        c->kept = 2;
        if (k->core) {
            snprintf(c->rec.alloc, sizeof(c->rec.alloc), "%s", k->used);
        }
        return COLLPROF_OK;
    }
    if (c->core) {
        rc = core_alloc(c, total);
    } else {
        rc = c->be->mem_alloc(c->actx, c->memtype, total, &c->rbase);
        if (!c->cell->in_place) { /* the second allocation on every rank, whatever the first gave */
            int rc2 = c->be->mem_alloc(c->actx, c->memtype, total, &c->sbase);
            rc = rc != COLLPROF_OK ? rc : rc2;
        }
    }
    if (k != NULL && rc == COLLPROF_OK) { /* kept for the next repeats */
        *k = (cp_kept_bufs_t){.ctx = k->ctx,
                              .sendbuf = c->sbase,
                              .recvbuf = c->rbase,
                              .have = 1,
                              .core = c->core,
                              .smap = c->smap,
                              .rmap = c->rmap};
        snprintf(k->used, sizeof(k->used), "%s", c->rec.alloc);
        c->kept = 1;
    }
    return rc;
}

/* What a cell applies of the run's policy: device-timed backends time their own batch, back
 * to back on one buffer; the core allocates only plain host memory (shared-buffer backends). */
static void policy_of(const cp_options_t *o, const collprof_backend_t *be, int memtype, int *slots,
                      int *batch, int *core, cp_sync_t *sync)
{
    int devtimer = (be->flags & COLLPROF_BACKEND_DEVICE_TIMER) != 0;
    *slots = devtimer || o->rotate < 1 ? 1 : o->rotate;
    *batch = devtimer || o->sync != CP_SYNC_BATCH ? 1 : o->batch;
    *core = o->alloc != CP_ALLOC_MALLOC && memtype == COLLPROF_MEM_HOST &&
            (be->flags & COLLPROF_BACKEND_SHARED_BUFFERS);
    *sync = devtimer ? CP_SYNC_NONE : o->sync;
}

void cp_policy_row(const cp_options_t *o, const collprof_backend_t *be, int memtype,
                   collprof_result_row_t *row)
{
    int slots, batch, core, fb;
    cp_sync_t sync;
    policy_of(o, be, memtype, &slots, &batch, &core, &sync);
    snprintf(row->sync, sizeof(row->sync), "%s", cp_sync_name(sync));
    row->batch = batch;
    row->rotate = slots;
    void *p = NULL;
    size_t len = 0;
    if (core && cp_policy_alloc(o->alloc, 1, &p, &len, row->allocation, sizeof(row->allocation),
                                &fb) == 0) {
        cp_policy_free(p, len); /* a probe: what this rank gets now */
    }
}

/* Counts what setup_traffic, setup_results, setup_buffers, setup_host_copies, finish and
 * cp_repeat_add allocate: change them together. */
void cp_cell_mem(const cp_options_t *o, const collprof_backend_t *be, const cp_cell_t *c,
                 cp_cell_mem_t *out)
{
    int slots, batch, core;
    cp_sync_t sync;
    policy_of(o, be, c->memtype, &slots, &batch, &core, &sync);
    uint64_t n = (uint64_t)(c->group_n > 0 ? c->group_n : 1), it = (uint64_t)c->iters;
    uint64_t one = cp_mul_sat(c->count > 0 ? c->count : 1, collprof_dtype_size(c->dtype));
    if (c->op == COLLPROF_OP_ALLTOALLV) { /* skewed traffic can pile up on one rank */
        one = cp_mul_sat(one, 4);
    }
    memset(out, 0, sizeof(*out));
    out->nbuf = c->in_place ? 1 : 2;
    out->device = c->memtype == COLLPROF_MEM_DEVICE;
    out->buffer = slots > 1 && one < UINT64_MAX / 2
                      ? cp_mul_sat(cp_rotate_stride((size_t)one, slots), (uint64_t)slots)
                      : one;
    /* the repeats' samples pile up; merging one copies them all (cp_repeat_add) */
    uint64_t reps = o->repeats > 1 ? 2 * (uint64_t)o->repeats : 1;
    uint64_t samples = cp_mul_sat(cp_mul_sat(it, sizeof(double)), reps);
    uint64_t part = sizeof(cell_rec_t) + sizeof(double) * (it < GATHER_CHUNK ? it : GATHER_CHUNK);
    uint64_t warm = (uint64_t)(c->warmup > c->iters ? c->warmup : c->iters);
    out->book = samples + warm * sizeof(double) + n * sizeof(double) + part + sizeof(cell_rec_t);
    out->root = cp_add_sat(cp_mul_sat(n, samples), n * (sizeof(cell_rec_t) + part));
    if (cp_op_flags(c->op) & COLLPROF_OPF_VARIABLE) { /* the traffic view (cp_a2av_build) */
        out->book = cp_add_sat(out->book, cp_mul_sat(7 * n, sizeof(uint64_t)));
        out->root = cp_add_sat(out->root, 2 * n * sizeof(uint64_t));
    }
    out->hostbuf = out->device ? one : out->buffer; /* device: one host copy of each */
    out->host = cp_add_sat(cp_mul_sat(out->hostbuf, (uint64_t)out->nbuf), out->book);
}

static void choose_policy(cell_run_t *c)
{
    const cp_options_t *o = c->r->opt;
    cp_sync_t sync;
    policy_of(o, c->be, c->memtype, &c->slots, &c->batch, &c->core, &sync);
    static int warned; /* said once per run */
    if (o->alloc != CP_ALLOC_MALLOC && !c->core && !warned && c->r->boot->rank == 0) {
        warned = 1;
        cp_log(CP_LOG_WARN,
               "--alloc %s: backend %s allocates its own %s buffers (registered or device "
               "memory); its cells record that allocation",
               cp_alloc_name(o->alloc), c->p->name, collprof_memtype_name(c->memtype));
    }
}

/* Collective (mem_alloc): called on every rank once the ranks agreed on the set-up. */
static void setup_buffers(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    c->bytes = (size_t)(cp_coll_buffer_elems(&c->x) * collprof_dtype_size(cell->dtype));
    c->actx = c->r->keep != NULL ? c->r->keep->ctx : c->ctx;
    choose_policy(c);
    c->stride = cp_rotate_stride(c->bytes, c->slots);
    size_t total = c->stride * (size_t)c->slots;
    int rc = alloc_buffers(c, total);
    if (rc != COLLPROF_OK) {
        fail(c, rc, 1, "allocating 2 x %zu bytes of %s memory%s: %s", total,
             collprof_memtype_name(c->memtype), c->core ? " (--alloc)" : "",
             c->core ? "out of memory" : c->be->last_error(c->ctx));
        return;
    }
    int me = c->grank;
    c->args = (collprof_args_t){.op = cell->op,
                                .dtype = cell->dtype,
                                .redop = cell->redop,
                                .root = cell->root,
                                .in_place = cell->in_place,
                                .memtype = c->memtype,
                                .count = c->x.count,
                                .sendcounts = c->a2av.sendcounts,
                                .sdispls = c->a2av.sdispls,
                                .recvcounts = c->a2av.recvcounts,
                                .rdispls = c->a2av.rdispls,
                                .peer_send = cell->sweep ? cell->peer : (me + 1) % c->gn,
                                .peer_recv = cell->sweep ? cell->peer : (me - 1 + c->gn) % c->gn};
    if (c->a2av.bcounts != NULL) { /* gatherv, scatterv: every rank's block (plugin.h) */
        c->args.recvcounts = c->a2av.bcounts;
        c->args.rdispls = c->a2av.bdispls;
    }
    set_slot(c, 0);
    setup_host_copies(c);
    c->barrier = c->args;
    c->barrier.op = COLLPROF_OP_BARRIER;
}

/* The barrier before iteration i (--sync-barrier): the backend's, else the out-of-band one. */
static int sync_ranks(cell_run_t *c, int i)
{
    if (!c->r->opt->sync_barrier) {
        return COLLPROF_OK;
    }
    cp_wd_beat(CP_WD_SYNC, c->r->index, i, c->cell->warmup, c->tmo);
    return (c->p->caps.ops & COLLPROF_BIT(COLLPROF_OP_BARRIER)) ? c->be->run(c->ctx, &c->barrier)
                                                                : c->oob->barrier();
}

/* One operation, on the slot its turn gives it. */
static int run_op(cell_run_t *c)
{
    set_slot(c, cp_rotate_slot(c->ops++, c->slots));
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
        rc = run_one(c, i, slow_us, hang);
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
        rc = run_overlapped(c, i, &overall, &compute);
    }
    c->rec.nb_overall_us = overall / c->iters;
    c->rec.nb_compute_us = compute / c->iters;
    return rc;
}

/* Warm-up and timed iterations. */
static void run_timed(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    const int idx = c->r->index, me = c->r->boot->rank;
    long slow_us = cp_fault_slow_us(me) + cp_fault_slow_repeat_us(c->r->repeat);
    int hang = cp_fault_hang(me, idx);
    c->x.rank = c->grank;
    int rc = COLLPROF_OK;
    for (int k = 0; k < c->slots && rc == COLLPROF_OK; k++) { /* every slot holds the input */
        set_slot(c, k);
        cp_coll_get(cell->op)->fill(&c->x, c->staged ? c->hsend : c->sendbuf,
                                    c->staged ? c->hrecv : c->recvbuf);
        rc = upload(c);
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
            rc = c->be->run_batch(c->ctx, &c->args, c->iters, c->mine);
        }
    } else {
        for (int i = 0; i < cell->warmup + c->iters && rc == COLLPROF_OK; i++) {
            rc = run_one(c, i, slow_us, hang);
        }
    }
    if (rc != COLLPROF_OK) {
        fail(c, rc, 2, "%s", c->be->last_error(c->ctx));
    }
}

/* The exact check on a fresh run. */
static void run_check(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    if (c->rec.status != 0 || !c->r->opt->check || (cp_op_flags(cell->op) & COLLPROF_OPF_NODATA)) {
        return;
    }
    cp_wd_beat(CP_WD_CHECK, c->r->index, -1, cell->warmup, c->tmo);
    set_slot(c, cp_rotate_slot(c->ops - 1, c->slots)); /* the last timed operation's buffers */
    const cp_coll_t *coll = cp_coll_get(cell->op);
    void *fs = c->staged ? c->hsend : c->sendbuf, *fr = c->staged ? c->hrecv : c->recvbuf;
    memset(fr, 0xff, c->bytes);
    coll->fill(&c->x, fs, fr);
    int rc = upload(c);
    if (rc == COLLPROF_OK) {
        rc = c->be->run(c->ctx, &c->args);
    }
    if (rc == COLLPROF_OK && c->staged) {
        rc = stage_copy(c, c->hrecv, c->recvbuf, 0);
    }
    if (rc != COLLPROF_OK) {
        fail(c, rc, 3, "%s", c->be->last_error(c->ctx));
        return;
    }
    if (cp_fault_wrong(c->r->boot->rank)) {
        corrupt_one(&c->x, fr);
    }
    c->rec.wrong = coll->check(&c->x, fr);
    cp_log(c->rec.wrong > 0 ? CP_LOG_WARN : CP_LOG_INFO,
           "%s/%s %s: verification: %llu wrong elements on this rank", c->p->name, cell->variant,
           collprof_op_name(cell->op), (unsigned long long)c->rec.wrong);
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
    int status;
    int bad; /* the first failing rank (its message follows from it), or -1 */
    char reason[256];
    uint64_t wrong;
    cp_stats_t stats;
    double algbw, busbw, nb_overall_us, nb_comm_us, nb_compute_us, nb_overlap_pct;
    char allocation[64];
} cell_sum_t;

/* Rank 0's result to every rank (a broadcast of its figures, not of the samples); *bad: the
 * first failing rank, or -1. */
static int share_result(cell_run_t *c, cp_result_t *res, int me, int *bad)
{
    cell_sum_t s;
    _Static_assert(sizeof(s.reason) == sizeof(res->reason), "cell_sum_t.reason");
    _Static_assert(sizeof(s.allocation) == sizeof(res->allocation), "cell_sum_t.allocation");
    memset(&s, 0, sizeof(s));
    if (me == 0) {
        s = (cell_sum_t){.status = res->status,
                         .bad = *bad,
                         .wrong = res->wrong,
                         .stats = res->stats,
                         .algbw = res->algbw,
                         .busbw = res->busbw,
                         .nb_overall_us = res->nb_overall_us,
                         .nb_comm_us = res->nb_comm_us,
                         .nb_compute_us = res->nb_compute_us,
                         .nb_overlap_pct = res->nb_overlap_pct};
        memcpy(s.reason, res->reason, sizeof(s.reason));
        memcpy(s.allocation, res->allocation, sizeof(s.allocation));
    }
    int oob = c->oob->bcast(&s, sizeof(s), 0);
    *bad = oob == 0 && s.bad >= 0 && s.bad < c->n ? s.bad : -1;
    if (oob == 0 && me != 0) {
        res->status = (collprof_cell_status_t)s.status;
        res->wrong = s.wrong;
        res->stats = s.stats;
        res->algbw = s.algbw;
        res->busbw = s.busbw;
        res->nb_overall_us = s.nb_overall_us;
        res->nb_comm_us = s.nb_comm_us;
        res->nb_compute_us = s.nb_compute_us;
        res->nb_overlap_pct = s.nb_overlap_pct;
        memcpy(res->reason, s.reason, sizeof(s.reason));
        res->reason[sizeof(res->reason) - 1] = '\0';
        memcpy(res->allocation, s.allocation, sizeof(s.allocation));
        res->allocation[sizeof(res->allocation) - 1] = '\0';
    }
    return oob;
}

/* A non-blocking op's figures: the means over ranks of each rank's means, as OSU reports. */
static void merge_overlap(const cell_rec_t *recs, int n, cp_result_t *res)
{
    for (int q = 0; q < n; q++) {
        res->nb_comm_us += recs[q].nb_comm_us / n;
        res->nb_overall_us += recs[q].nb_overall_us / n;
        res->nb_compute_us += recs[q].nb_compute_us / n;
    }
    res->nb_overlap_pct = cp_overlap_pct(res->nb_overall_us, res->nb_compute_us, res->nb_comm_us);
}

/* The policy the cell applied, and (recs: rank 0) the core's allocation on every rank (--alloc). */
static void merge_policy(cell_run_t *c, const cell_rec_t *recs, cp_result_t *res)
{
    static int warned; /* the huge page fallback, said once per run */
    int fellback = 0;
    int slots, batch, core;
    cp_sync_t sync;
    policy_of(c->r->opt, c->be, c->memtype, &slots, &batch, &core, &sync);
    snprintf(res->sync, sizeof(res->sync), "%s", cp_sync_name(sync));
    res->batch = c->batch;
    res->rotate = c->slots;
    for (int q = 0; recs != NULL && q < c->n && c->core; q++) {
        fellback |= recs[q].fellback;
        if (strcmp(recs[q].alloc, recs[0].alloc) != 0) {
            snprintf(res->allocation, sizeof(res->allocation), "per rank");
        } else if (q == 0) {
            snprintf(res->allocation, sizeof(res->allocation), "%s", recs[0].alloc);
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
    res->status = COLLPROF_CELL_OK;
    res->rank_wrong = calloc((size_t)c->n, sizeof(uint64_t));
    for (int q = 0; q < c->n; q++) {
        const cell_rec_t *rq = &recs[q];
        res->wrong += rq->wrong;
        if (res->rank_wrong != NULL) {
            res->rank_wrong[q] = rq->wrong;
        }
        if (rq->status != 0 && res->status == COLLPROF_CELL_OK) {
            res->status = rq->status == COLLPROF_ERR_NOT_SUPPORTED ? COLLPROF_CELL_UNSUPPORTED
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
    if (res->status == COLLPROF_CELL_OK && res->wrong > 0) {
        res->status = COLLPROF_CELL_WRONG;
        snprintf(res->reason, sizeof(res->reason), "%llu wrong elements",
                 (unsigned long long)res->wrong);
    }
    return bad;
}

/* The reason of a cell that failed on rank bad: its message, from it, on every rank. */
static int failure_reason(cell_run_t *c, cp_result_t *res, int bad)
{
    int oob = c->oob->bcast(c->msg, sizeof(c->msg), bad);
    c->msg[sizeof(c->msg) - 1] = '\0';
    if (oob == 0) {
        snprintf(res->reason, sizeof(res->reason), "rank %d (%s): %s", bad,
                 c->r->boot->hostnames[bad], c->msg);
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
    cp_stats_compute(imax, c->iters, &res->stats);
    free(imax);
    if (res->stats.mean > 0) {
        res->algbw = (double)res->bytes / res->stats.mean * 1e-3; /* bytes/us -> GB/s */
        res->busbw = res->algbw * collprof_busbw_factor(c->cell->op, c->gn);
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
    res->status = COLLPROF_CELL_ERROR;
    snprintf(res->reason, sizeof(res->reason), "out-of-band exchange failed");
}

/*
 * Every rank's record and samples to rank 0, which computes the result and sends its figures
 * to the others, then the first failing rank's message from it: rank 0 moves ranks x (record +
 * samples) bytes, where allgathers would make it move ranks^2 x that.  Only rank 0 writes the
 * results; the others keep their own samples (for the repeats' bookkeeping) and rank 0's
 * status, reason and figures.
 */
static void finish(cell_run_t *c, cp_result_t *res)
{
    cp_wd_beat(CP_WD_GATHER, c->r->index, -1, c->cell->warmup, c->tmo);
    int me = c->r->boot->rank, bad = -1;
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
            res->status = COLLPROF_CELL_ERROR;
            snprintf(res->reason, sizeof(res->reason), "out of memory computing the figures");
        }
    }
    merge_policy(c, me == 0 ? recs : NULL, res);
    int shared = share_result(c, res, me, &bad);
    shared = shared == 0 && bad >= 0 ? failure_reason(c, res, bad) : shared;
    if (oob != 0 || shared != 0) { /* whatever rank 0 said */
        oob_failed(res);
    }
}

/* Collective (mem_free on every rank that allocated, which is every rank). */
static void release(cell_run_t *c)
{
    if (c->core && !c->kept) {
        cp_policy_free(c->sbase, c->smap);
        cp_policy_free(c->rbase, c->rmap);
    } else if (!c->kept) {
        if (c->sbase != NULL) {
            c->be->mem_free(c->actx, c->memtype, c->sbase);
        }
        if (c->rbase != NULL) {
            c->be->mem_free(c->actx, c->memtype, c->rbase);
        }
    }
    if (c->hsend != NULL) {
        cp_free_pages(c->hsend, c->bytes);
    }
    if (c->hrecv != NULL) {
        cp_free_pages(c->hrecv, c->bytes);
    }
    free(c->mine);
    free(c->recs);
    free(c->samples);
    free(c->rank_mean);
    free(c->gmine);
    free(c->gall);
    cp_a2av_free(&c->a2av);
}

/* What setup_buffers did, for --verbose. */
static void log_buffers(const cell_run_t *c)
{
    char copies[48] = "";
    if (c->slots > 1) {
        snprintf(copies, sizeof(copies), ", %d copies a page apart", c->slots);
    }
    cp_log(CP_LOG_INFO, "%s/%s %s: %s buffers of %zu bytes %s and touched (%s%s%s)", c->p->name,
           c->cell->variant, collprof_op_name(c->cell->op),
           c->cell->in_place ? "one in-place" : "send and receive", c->bytes,
           c->kept == 2 ? "kept from the first repeat" : "allocated",
           collprof_memtype_name(c->memtype), copies,
           c->staged ? ", filled and checked through host copies" : "");
}

/* A cell decided before it runs (at plan time, or its backend is not up). */
static int decided(const cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res)
{
    const cp_plugin_t *p = &r->plugins[cell->plugin];
    if (cell->pre_status != COLLPROF_CELL_PENDING) {
        res->status = cell->pre_status;
        snprintf(res->reason, sizeof(res->reason), "%s", cell->pre_reason);
        return 1;
    }
    if (p->ctx == NULL) {
        res->status = COLLPROF_CELL_SKIPPED;
        snprintf(res->reason, sizeof(res->reason), "backend %s is not initialised: %.160s", p->name,
                 p->error);
        return 1;
    }
    if (cell->split && p->gctx[cell->split] == NULL) {
        res->status = COLLPROF_CELL_SKIPPED;
        snprintf(res->reason, sizeof(res->reason), "backend %s: %.200s", p->name,
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
    c->tmo = current_timeout = cp_cell_timeout(c->r->opt, largest * (uint64_t)(c->n > 1 ? 2 : 1));
    cp_wd_beat(CP_WD_SETUP, c->r->index, -1, cell->warmup,
               c->tmo * (c->r->opt->rotate > 1 ? c->r->opt->rotate : 1));
}

void cp_run_cell(cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res)
{
    struct timeval tv;
    memset(res, 0, sizeof(*res));
    res->nranks = r->boot->nranks;
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
    c.oob = r->oob != NULL ? r->oob : &cp_oob_pmix;
    c.n = r->boot->nranks;
    c.ctx = r->ctx != NULL ? r->ctx : cell->split ? c.p->gctx[cell->split] : c.p->ctx;
    c.gn = cell->split ? cell->group_n : c.n;
    c.grank = cell->split ? cell->group_rank : r->boot->rank;
    c.iters = cell->iters;
    c.memtype = cell->memtype;
    /* device memory is filled and checked through host copies ("staged") */
    c.staged = c.memtype == COLLPROF_MEM_DEVICE || cp_fault_test_staged();
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
    if (cell->sweep && cell->peer == r->boot->rank) {
        /* a link sweep's bystander exchanges one element with itself: its figures are not
         * used, and filling, copying and checking the full size on every rank not in a pair
         * would only take the pairs' CPUs (the ranks of a node share its cores) */
        c.x.count = 1;
    }
    uint64_t largest = cell->count * collprof_dtype_size(cell->dtype) * (uint64_t)(c.n > 1 ? 2 : 1);
    c.tmo = current_timeout = cp_cell_timeout(r->opt, largest);
    /* set-up touches and fills every copy of the buffers (--rotate-buffers) */
    cp_wd_beat(CP_WD_SETUP, r->index, -1, cell->warmup,
               c.tmo * (r->opt->rotate > 1 ? r->opt->rotate : 1));

    /* every collective slot is called on every rank or on none: agree first */
    setup_traffic(&c);
    setup_results(&c);
    if (agreed(&c, res) == 0) {
        timeout_of_largest(&c);
        setup_buffers(&c);
        if (agreed(&c, res) == 0) {
            log_buffers(&c);
            cp_log(CP_LOG_DEBUG, "%s/%s %s: %d warm-up and %d timed iterations", c.p->name,
                   cell->variant, collprof_op_name(cell->op), cell->warmup, c.iters);
            run_timed(&c);
            run_check(&c);
            finish(&c, res);
        }
    }
    release(&c);
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
    res->rep_p50 = NULL;
    res->rep_iters = NULL;
    res->samples = res->rank_mean = NULL;
    res->send_bytes = res->recv_bytes = NULL;
}

void cp_kept_bufs_free(const cp_plugin_t *p, int memtype, cp_kept_bufs_t *k)
{
    if (k->core) {
        cp_policy_free(k->sendbuf, k->smap);
        cp_policy_free(k->recvbuf, k->rmap);
        memset(k, 0, sizeof(*k));
        return;
    }
    if (k->sendbuf != NULL) {
        p->be->mem_free(k->ctx, memtype, k->sendbuf);
    }
    if (k->recvbuf != NULL) {
        p->be->mem_free(k->ctx, memtype, k->recvbuf);
    }
    memset(k, 0, sizeof(*k));
}
