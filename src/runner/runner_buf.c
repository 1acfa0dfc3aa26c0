#include "config.h"

#include "runner/runner.h"

#include "colls/colls.h"
#include "base/log.h"
#include "runner/policy.h"
#include "runner/runner_int.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A failure on this rank, in any phase (runner_int.h): the first one is kept. */
__attribute__((format(printf, 4, 5))) void cp_runner_fail(cell_run_t *c, int status, int phase,
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

/* Host copy <-> the backend's buffer: the backend's mem_copy for device
 * memory, memcpy for host memory (the COLLPROF_TEST_STAGED path). */
int cp_runner_stage_copy(cell_run_t *c, void *dst, const void *src, int to_device)
{
    if (c->memtype == COLLPROF_MEM_DEVICE) {
        return c->be->mem_copy(c->ctx, c->memtype, dst, src, c->bytes, to_device);
    }
    memcpy(dst, src, c->bytes);
    return COLLPROF_OK;
}

/* The filled host copies into the backend's buffers (one buffer in place). */
int cp_runner_upload(cell_run_t *c)
{
    if (!c->staged) {
        return COLLPROF_OK;
    }
    int rc = cp_runner_stage_copy(c, c->recvbuf, c->hrecv, 1);
    if (rc == COLLPROF_OK && c->sendbuf != NULL && c->sendbuf != c->recvbuf) {
        rc = cp_runner_stage_copy(c, c->sendbuf, c->hsend, 1);
    }
    return rc;
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
        cp_runner_fail(c, COLLPROF_ERR_NO_MEMORY, 1,
                       "out of memory for 2 x %zu bytes of host copies", c->bytes);
        return;
    }
    memset(c->hrecv, 0, c->bytes);
    if (c->hsend != NULL) {
        memset(c->hsend, 0, c->bytes);
    }
    if (cp_runner_upload(c) != COLLPROF_OK) {
        cp_runner_fail(c, COLLPROF_ERR_BACKEND, 1, "copying to %s memory: %s",
                       collprof_memtype_name(c->memtype), c->be->last_error(c->ctx));
    }
}

/* Point the operation at slot k of the buffers (--rotate-buffers). */
void cp_runner_set_slot(cell_run_t *c, int k)
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
void cp_runner_policy(const cp_options_t *o, const collprof_backend_t *be, int memtype, int *slots,
                      int *batch, int *core, cp_sync_t *sync)
{
    int devtimer = (be->flags & COLLPROF_BACKEND_DEVICE_TIMER) != 0;
    *slots = devtimer || o->rotate < 1 ? 1 : o->rotate;
    *batch = devtimer || o->sync != CP_SYNC_BATCH ? 1 : o->batch;
    *core = o->alloc != CP_ALLOC_MALLOC && memtype == COLLPROF_MEM_HOST &&
            (be->flags & COLLPROF_BACKEND_SHARED_BUFFERS);
    *sync = devtimer ? CP_SYNC_NONE : o->sync;
}

void cp_runner_check_name(const cp_options_t *o, int op, char *buf, size_t len)
{
    int none = !o->check || (cp_op_flags(op) & COLLPROF_OPF_NODATA);
    cp_check_name(none ? CP_CHECK_NONE : cp_check_applied(1, o->check_mode), o->check_k, buf, len);
}

void cp_policy_row(const cp_options_t *o, const collprof_backend_t *be, int memtype,
                   collprof_result_row_t *row)
{
    int slots, batch, core, fb;
    cp_sync_t sync;
    cp_runner_policy(o, be, memtype, &slots, &batch, &core, &sync);
    snprintf(row->sync, sizeof(row->sync), "%s", cp_sync_name(sync));
    cp_check_name(cp_check_applied(o->check, o->check_mode), o->check_k, row->check,
                  sizeof(row->check));
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
    cp_runner_policy(o, be, c->memtype, &slots, &batch, &core, &sync);
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
    cp_runner_policy(o, c->be, c->memtype, &c->slots, &c->batch, &c->core, &sync);
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
void cp_runner_setup_buffers(cell_run_t *c)
{
    const cp_cell_t *cell = c->cell;
    c->bytes = (size_t)(cp_coll_buffer_elems(&c->x) * collprof_dtype_size(cell->dtype));
    c->actx = c->r->keep != NULL ? c->r->keep->ctx : c->ctx;
    choose_policy(c);
    c->stride = cp_rotate_stride(c->bytes, c->slots);
    size_t total = c->stride * (size_t)c->slots;
    int rc = alloc_buffers(c, total);
    if (rc != COLLPROF_OK) {
        cp_runner_fail(c, rc, 1, "allocating 2 x %zu bytes of %s memory%s: %s", total,
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
    cp_runner_set_slot(c, 0);
    setup_host_copies(c);
    c->barrier = c->args;
    c->barrier.op = COLLPROF_OP_BARRIER;
}

/* Collective (mem_free on every rank that allocated, which is every rank). */
void cp_runner_release(cell_run_t *c)
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
void cp_runner_log_buffers(const cell_run_t *c)
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
