#include "config.h"

#include "core/runner.h"

#include "colls/colls.h"
#include "core/data.h"
#include "core/log.h"
#include "core/util.h"
#include "core/watchdog.h"

#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define MSG_LEN 480
/* samples per rank in one out-of-band exchange (256 KiB of doubles) */
#define GATHER_CHUNK 32768

typedef struct agree_rec {
    int status;
    char msg[MSG_LEN];
} agree_rec_t;

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

int cp_agree(int n, int status, const char *why, char *msg, size_t len)
{
    agree_rec_t mine;
    memset(&mine, 0, sizeof(mine));
    mine.status = status;
    snprintf(mine.msg, sizeof(mine.msg), "%s", why ? why : "");
    agree_rec_t *all = calloc((size_t)n, sizeof(*all));
    if (all == NULL || cp_oob_allgather(&mine, all, sizeof(mine)) != 0) {
        free(all);
        return -2;
    }
    int first = -1;
    for (int r = 0; r < n; r++) {
        if (all[r].status != 0) {
            first = r;
            snprintf(msg, len, "%s", all[r].msg);
            break;
        }
    }
    free(all);
    return first;
}

/* Per-rank record gathered at the end of a cell; samples follow it. */
typedef struct cell_rec {
    int status; /* collprof_status_t of the first failure on this rank */
    int phase;  /* 0 ok, 1 setup, 2 run, 3 check */
    uint64_t wrong;
    char msg[MSG_LEN];
} cell_rec_t;

/*
 * Test hooks (collprof(1), ENVIRONMENT): COLLPROF_FAULT=wrong[:RANK]
 * corrupts one result element after each check run; exit[:RANK] makes that
 * rank die in the middle of the first cell's timed loop.  Returns the rank
 * the fault applies to, or -1.
 */
static int fault_rank(const char *kind)
{
    const char *f = getenv("COLLPROF_FAULT");
    size_t kl = strlen(kind);
    if (f == NULL || strncmp(f, kind, kl) != 0 || (f[kl] != '\0' && f[kl] != ':')) {
        return -1;
    }
    return f[kl] == ':' ? atoi(f + kl + 1) : 0;
}

/* COLLPROF_FAULT=slow[:RANK[:USEC]]: RANK (default every rank, "all") adds
 * USEC (default 2000) to each timed operation, to test stragglers and
 * regression detection. */
static long fault_slow_us(int rank)
{
    const char *f = getenv("COLLPROF_FAULT");
    if (f == NULL || strncmp(f, "slow", 4) != 0 || (f[4] != '\0' && f[4] != ':')) {
        return 0;
    }
    long us = 2000;
    if (f[4] == ':') {
        const char *r = f + 5, *colon = strchr(r, ':');
        if (strncmp(r, "all", 3) != 0 && atoi(r) != rank) {
            return 0;
        }
        if (colon != NULL) {
            us = atol(colon + 1);
        }
    }
    return us > 0 ? us : 0;
}

/* COLLPROF_FAULT=hang[:RANK[:CELL]]: RANK (default 0) stops before the
 * operation of the middle iteration of cell CELL (default 0) and never
 * comes back, as a rank stuck outside the collective would. */
static int fault_hang(int rank, int cell)
{
    const char *f = getenv("COLLPROF_FAULT");
    if (f == NULL || strncmp(f, "hang", 4) != 0 || (f[4] != '\0' && f[4] != ':')) {
        return 0;
    }
    int r = 0, c = 0;
    if (f[4] == ':') {
        r = atoi(f + 5);
        const char *colon = strchr(f + 5, ':');
        c = colon != NULL ? atoi(colon + 1) : 0;
    }
    return r == rank && c == cell;
}

static void corrupt_one(const cp_xfer_t *x, void *recvbuf)
{
    size_t at = (size_t)cp_coll_result_at(x);
    int64_t v = 0;
    cp_data_get(x->dtype, recvbuf, at, &v);
    cp_data_set(x->dtype, recvbuf, at, v + 1);
}

/* Host copy <-> the backend's buffer: the backend's mem_copy for device
 * memory, memcpy for host memory (the COLLPROF_TEST_STAGED path). */
static int stage_copy(const collprof_backend_t *be, void *ctx, int memtype, void *dst,
                      const void *src, size_t bytes, int to_device)
{
    if (memtype == COLLPROF_MEM_DEVICE) {
        return be->mem_copy(ctx, memtype, dst, src, bytes, to_device);
    }
    memcpy(dst, src, bytes);
    return COLLPROF_OK;
}

/* The filled host copies into the backend's buffers (one buffer in place). */
static int upload(const collprof_backend_t *be, void *ctx, int memtype, void *sendbuf,
                  void *recvbuf, const void *hsend, const void *hrecv, size_t bytes)
{
    int rc = stage_copy(be, ctx, memtype, recvbuf, hrecv, bytes, 1);
    if (rc == COLLPROF_OK && sendbuf != NULL && sendbuf != recvbuf) {
        rc = stage_copy(be, ctx, memtype, sendbuf, hsend, bytes, 1);
    }
    return rc;
}

void cp_run_cell(cp_runner_t *r, const cp_cell_t *cell, cp_result_t *res)
{
    const cp_boot_t *b = r->boot;
    cp_plugin_t *p = &r->plugins[cell->plugin];
    const collprof_backend_t *be = p->be;
    const cp_coll_t *coll = cp_coll_get(cell->op);
    const collprof_dtype_info_t *dt = collprof_dtype_info(cell->dtype);
    int n = b->nranks, iters = cell->iters;
    cp_a2av_t a2av;
    cell_rec_t rec;
    void *sendbuf = NULL, *recvbuf = NULL;
    double *mine = NULL;
    char agreed[MSG_LEN];
    struct timeval tv;

    memset(res, 0, sizeof(*res));
    memset(&a2av, 0, sizeof(a2av));
    memset(&rec, 0, sizeof(rec));
    res->nranks = n;
    res->iters = iters;
    gettimeofday(&tv, NULL);
    res->start_epoch = (double)tv.tv_sec + (double)tv.tv_usec * 1e-6;

    if (cell->pre_status != COLLPROF_CELL_PENDING) {
        res->status = cell->pre_status;
        snprintf(res->reason, sizeof(res->reason), "%s", cell->pre_reason);
        return;
    }
    if (p->ctx == NULL) {
        res->status = COLLPROF_CELL_SKIPPED;
        snprintf(res->reason, sizeof(res->reason), "backend %s is not initialised: %.160s", p->name,
                 p->error);
        return;
    }

    cp_xfer_t x = {.op = cell->op,
                   .dtype = cell->dtype,
                   .redop = cell->redop,
                   .root = cell->root,
                   .in_place = cell->in_place,
                   .rank = b->rank,
                   .n = n,
                   .count = cell->count,
                   .a2av = NULL};

    /* ---- setup: variant, traffic, buffers; then agree ---------------- */
    const int idx = r->index;
    double tmo = cp_cell_timeout(r->opt, cell->count * dt->size * (uint64_t)(n > 1 ? 2 : 1));
    current_timeout = tmo;
    cp_wd_beat(CP_WD_SETUP, idx, -1, cell->warmup, tmo);
    /* device memory is filled and checked through host copies ("staged");
     * COLLPROF_TEST_STAGED=1 stages host memory too, to test that path */
    const int memtype = cell->memtype;
    const int staged = memtype == COLLPROF_MEM_DEVICE || getenv("COLLPROF_TEST_STAGED") != NULL;
    void *hsend = NULL, *hrecv = NULL;
    int rc = be->select_variant(p->ctx, cell->op, cell->variant);
    if (rc != COLLPROF_OK) {
        rec.status = rc;
        rec.phase = 1;
        snprintf(rec.msg, sizeof(rec.msg), "variant %s: %s", cell->variant, be->last_error(p->ctx));
    }
    if (rec.status == 0 && (cp_op_flags(cell->op) & COLLPROF_OPF_VARIABLE)) {
        uint64_t *m = calloc((size_t)n * (size_t)n, sizeof(uint64_t));
        if (m != NULL) {
            cp_imbalance_matrix(cell->imb, n, cell->count, m);
        }
        if (m == NULL || cp_a2av_build(&a2av, m, n, b->rank) != 0) {
            rec.status = COLLPROF_ERR_NO_MEMORY;
            rec.phase = 1;
            snprintf(rec.msg, sizeof(rec.msg), "out of memory for the traffic matrix");
        } else {
            x.a2av = &a2av;
            if (cell->in_place && !a2av.symmetric) {
                rec.status = COLLPROF_ERR_NOT_SUPPORTED;
                rec.phase = 1;
                snprintf(rec.msg, sizeof(rec.msg),
                         "in-place alltoallv needs symmetric traffic; %s is not", cell->imb->label);
            }
        }
    }
    size_t bytes = (size_t)(cp_coll_buffer_elems(&x) * dt->size);
    if (rec.status == 0) {
        rc = be->mem_alloc(p->ctx, memtype, bytes, &recvbuf);
        if (rc == COLLPROF_OK && !cell->in_place) {
            rc = be->mem_alloc(p->ctx, memtype, bytes, &sendbuf);
        }
        if (rc != COLLPROF_OK) {
            rec.status = rc;
            rec.phase = 1;
            snprintf(rec.msg, sizeof(rec.msg), "allocating 2 x %zu bytes of %s memory: %s", bytes,
                     collprof_memtype_name(memtype), be->last_error(p->ctx));
        } else if (staged) {
            hrecv = cp_alloc_pages(bytes);
            hsend = cell->in_place ? NULL : cp_alloc_pages(bytes);
            if (hrecv == NULL || (hsend == NULL && !cell->in_place)) {
                rec.status = COLLPROF_ERR_NO_MEMORY;
                rec.phase = 1;
                snprintf(rec.msg, sizeof(rec.msg), "out of memory for 2 x %zu bytes of host copies",
                         bytes);
            } else { /* touch every page (on both sides) outside the timed loop */
                memset(hrecv, 0, bytes);
                if (hsend != NULL) {
                    memset(hsend, 0, bytes);
                }
                rc = upload(be, p->ctx, memtype, sendbuf, recvbuf, hsend, hrecv, bytes);
                if (rc != COLLPROF_OK) {
                    rec.status = rc;
                    rec.phase = 1;
                    snprintf(rec.msg, sizeof(rec.msg), "copying to %s memory: %s",
                             collprof_memtype_name(memtype), be->last_error(p->ctx));
                }
            }
        } else {
            /* touch every page outside the timed loop */
            memset(recvbuf, 0, bytes);
            if (sendbuf != NULL) {
                memset(sendbuf, 0, bytes);
            }
        }
    }
    mine = calloc((size_t)iters, sizeof(double));
    if (mine == NULL && rec.status == 0) {
        rec.status = COLLPROF_ERR_NO_MEMORY;
        rec.phase = 1;
        snprintf(rec.msg, sizeof(rec.msg), "out of memory for samples");
    }
    if (rec.status == COLLPROF_ERR_NOT_SUPPORTED) {
        char tagged[MSG_LEN];
        snprintf(tagged, sizeof(tagged), "[unsupported] %.460s", rec.msg);
        snprintf(rec.msg, sizeof(rec.msg), "%s", tagged);
    }
    int bad = cp_agree(n, rec.status, rec.msg, agreed, sizeof(agreed));
    if (bad != -1) {
        if (bad >= 0) {
            /* every rank reports the first failing rank's reason */
            int unsupported = !strncmp(agreed, "[unsupported] ", 14);
            res->status = unsupported ? COLLPROF_CELL_UNSUPPORTED : COLLPROF_CELL_ERROR;
            snprintf(res->reason, sizeof(res->reason), "rank %d: %s", bad,
                     agreed + (unsupported ? 14 : 0));
        } else {
            res->status = COLLPROF_CELL_ERROR;
            snprintf(res->reason, sizeof(res->reason), "out-of-band exchange failed");
        }
        goto out;
    }
    cp_log(CP_LOG_INFO, "%s/%s %s: %s buffers of %zu bytes allocated and touched (%s%s)", p->name,
           cell->variant, collprof_op_name(cell->op),
           cell->in_place ? "one in-place" : "send and receive", bytes,
           collprof_memtype_name(memtype),
           staged ? ", filled and checked through host copies" : "");

    collprof_args_t args = {.op = cell->op,
                            .dtype = cell->dtype,
                            .redop = cell->redop,
                            .root = cell->root,
                            .in_place = cell->in_place,
                            .memtype = memtype,
                            .sendbuf = cell->in_place ? recvbuf : sendbuf,
                            .recvbuf = recvbuf,
                            .count = cell->count,
                            .sendcounts = a2av.sendcounts,
                            .sdispls = a2av.sdispls,
                            .recvcounts = a2av.recvcounts,
                            .rdispls = a2av.rdispls,
                            .peer_send = (b->rank + 1) % n,
                            .peer_recv = (b->rank - 1 + n) % n};
    collprof_args_t barrier = args;
    barrier.op = COLLPROF_OP_BARRIER;
    int backend_barrier = (p->caps.ops & COLLPROF_BIT(COLLPROF_OP_BARRIER)) != 0;

    /* ---- warm-up and timed iterations -------------------------------- */
    long slow_us = fault_slow_us(b->rank);
    int hang = fault_hang(b->rank, idx);
    coll->fill(&x, staged ? hsend : sendbuf, staged ? hrecv : recvbuf);
    rc = staged ? upload(be, p->ctx, memtype, sendbuf, recvbuf, hsend, hrecv, bytes) : COLLPROF_OK;
    if (rc != COLLPROF_OK) {
        /* reported below as a run failure */
    } else if (be->flags & COLLPROF_BACKEND_DEVICE_TIMER) {
        /* one beat for the whole batch: the backend watches its own stream */
        cp_wd_beat(CP_WD_OP, idx, 0, cell->warmup, tmo * (double)(cell->warmup + iters + 1));
        rc = cell->warmup > 0 ? be->run_batch(p->ctx, &args, cell->warmup, mine) : COLLPROF_OK;
        if (rc == COLLPROF_OK) {
            rc = be->run_batch(p->ctx, &args, iters, mine);
        }
    } else {
        rc = COLLPROF_OK;
        for (int i = 0; i < cell->warmup + iters && rc == COLLPROF_OK; i++) {
            if (r->opt->sync_barrier) {
                cp_wd_beat(CP_WD_SYNC, idx, i, cell->warmup, tmo);
                rc = backend_barrier ? be->run(p->ctx, &barrier) : cp_oob_barrier();
                if (rc != COLLPROF_OK) {
                    break;
                }
            }
            if (i == cell->warmup + iters / 2 && fault_rank("exit") == b->rank) {
                cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d exits now", b->rank);
                _exit(3);
            }
            if (hang && i == cell->warmup + iters / 2) {
                cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rank %d hangs now", b->rank);
                for (;;) {
                    sleep(1000);
                }
            }
            cp_wd_beat(CP_WD_OP, idx, i, cell->warmup, tmo);
            double t0 = cp_now_us();
            rc = be->run(p->ctx, &args);
            if (slow_us > 0) { /* spin: sleeping overshoots by milliseconds here */
                double until = cp_now_us() + (double)slow_us;
                while (cp_now_us() < until) {
                }
            }
            double t1 = cp_now_us();
            cp_wd_beat(CP_WD_OP_DONE, idx, i, cell->warmup, tmo);
            if (i >= cell->warmup) {
                mine[i - cell->warmup] = t1 - t0;
            }
        }
    }
    if (rc != COLLPROF_OK) {
        rec.status = rc;
        rec.phase = 2;
        snprintf(rec.msg, sizeof(rec.msg), "%s", be->last_error(p->ctx));
    }

    /* ---- exact check on a fresh run ---------------------------------- */
    if (rec.status == 0 && r->opt->check && !(cp_op_flags(cell->op) & COLLPROF_OPF_NODATA)) {
        cp_wd_beat(CP_WD_CHECK, idx, -1, cell->warmup, tmo);
        void *fs = staged ? hsend : sendbuf, *fr = staged ? hrecv : recvbuf;
        memset(fr, 0xff, bytes);
        coll->fill(&x, fs, fr);
        rc = staged ? upload(be, p->ctx, memtype, sendbuf, recvbuf, hsend, hrecv, bytes)
                    : COLLPROF_OK;
        if (rc == COLLPROF_OK) {
            rc = be->run(p->ctx, &args);
        }
        if (rc == COLLPROF_OK && staged) {
            rc = stage_copy(be, p->ctx, memtype, hrecv, recvbuf, bytes, 0);
        }
        if (rc != COLLPROF_OK) {
            rec.status = rc;
            rec.phase = 3;
            snprintf(rec.msg, sizeof(rec.msg), "%s", be->last_error(p->ctx));
        } else {
            if (fault_rank("wrong") == b->rank) {
                corrupt_one(&x, fr);
            }
            rec.wrong = coll->check(&x, fr);
            cp_log(rec.wrong > 0 ? CP_LOG_WARN : CP_LOG_INFO,
                   "%s/%s %s: verification: %llu wrong elements on this rank", p->name,
                   cell->variant, collprof_op_name(cell->op), (unsigned long long)rec.wrong);
        }
    }

    /* ---- gather records and samples from every rank ------------------- */
    cp_wd_beat(CP_WD_GATHER, idx, -1, cell->warmup, tmo);
    cell_rec_t *recs = calloc((size_t)n, sizeof(cell_rec_t));
    res->samples = calloc((size_t)n * (size_t)iters, sizeof(double));
    res->rank_mean = calloc((size_t)n, sizeof(double));
    double *imax = calloc((size_t)iters, sizeof(double));
    double *chunk = calloc((size_t)n * GATHER_CHUNK, sizeof(double));
    if (!recs || !res->samples || !res->rank_mean || !imax || !chunk) {
        res->status = COLLPROF_CELL_ERROR;
        snprintf(res->reason, sizeof(res->reason), "out of memory gathering results");
        free(recs);
        free(imax);
        free(chunk);
        goto out;
    }
    int oob = cp_oob_allgather(&rec, recs, sizeof(rec));
    /* samples in bounded pieces: PMIx's store refuses one blob of several MB */
    for (int off = 0; off < iters && oob == 0; off += GATHER_CHUNK) {
        int len = iters - off < GATHER_CHUNK ? iters - off : GATHER_CHUNK;
        oob = cp_oob_allgather(mine + off, chunk, sizeof(double) * (size_t)len);
        for (int q = 0; q < n && oob == 0; q++) {
            memcpy(res->samples + (size_t)q * (size_t)iters + (size_t)off,
                   chunk + (size_t)q * (size_t)len, sizeof(double) * (size_t)len);
        }
    }
    free(chunk);
    if (oob != 0) {
        res->status = COLLPROF_CELL_ERROR;
        snprintf(res->reason, sizeof(res->reason), "out-of-band exchange failed");
        free(recs);
        free(imax);
        goto out;
    }
    res->status = COLLPROF_CELL_OK;
    for (int q = 0; q < n; q++) {
        const cell_rec_t *rq = &recs[q];
        res->wrong += rq->wrong;
        if (rq->status != 0 && res->status == COLLPROF_CELL_OK) {
            res->status = rq->status == COLLPROF_ERR_NOT_SUPPORTED ? COLLPROF_CELL_UNSUPPORTED
                                                                   : COLLPROF_CELL_ERROR;
            snprintf(res->reason, sizeof(res->reason), "rank %d (%s): %s", q, b->hostnames[q],
                     rq->msg);
        }
        double s = 0;
        for (int i = 0; i < iters; i++) {
            s += res->samples[(size_t)q * (size_t)iters + (size_t)i];
        }
        res->rank_mean[q] = s / iters;
    }
    if (res->status == COLLPROF_CELL_OK && res->wrong > 0) {
        res->status = COLLPROF_CELL_WRONG;
        snprintf(res->reason, sizeof(res->reason), "%llu wrong elements",
                 (unsigned long long)res->wrong);
    }
    cp_stats_iter_max(res->samples, n, iters, imax);
    cp_stats_compute(imax, iters, &res->stats);
    res->bytes = cp_coll_bytes(&x);
    if (res->stats.mean > 0) {
        res->algbw = (double)res->bytes / res->stats.mean * 1e-3; /* bytes/us -> GB/s */
        res->busbw = res->algbw * collprof_busbw_factor(cell->op, n);
    }
    if (cp_op_flags(cell->op) & COLLPROF_OPF_VARIABLE) {
        res->send_bytes = calloc((size_t)n, sizeof(uint64_t));
        res->recv_bytes = calloc((size_t)n, sizeof(uint64_t));
        if (res->send_bytes && res->recv_bytes) {
            for (int s = 0; s < n; s++) {
                for (int d = 0; d < n; d++) {
                    uint64_t e = a2av.matrix[(size_t)s * (size_t)n + (size_t)d] * dt->size;
                    res->send_bytes[s] += e;
                    res->recv_bytes[d] += e;
                }
            }
        }
    }
    free(recs);
    free(imax);
out:
    if (sendbuf != NULL) {
        be->mem_free(p->ctx, memtype, sendbuf);
    }
    if (recvbuf != NULL) {
        be->mem_free(p->ctx, memtype, recvbuf);
    }
    if (hsend != NULL) {
        cp_free_pages(hsend, bytes);
    }
    if (hrecv != NULL) {
        cp_free_pages(hrecv, bytes);
    }
    free(mine);
    cp_a2av_free(&a2av);
}

void cp_result_free(cp_result_t *res)
{
    free(res->samples);
    free(res->rank_mean);
    free(res->send_bytes);
    free(res->recv_bytes);
    res->samples = res->rank_mean = NULL;
    res->send_bytes = res->recv_bytes = NULL;
}

void cp_result_row(const cp_plugin_t *plugin, const cp_cell_t *cell, const cp_result_t *res,
                   int index, collprof_result_row_t *row)
{
    const collprof_dtype_info_t *dt = collprof_dtype_info(cell->dtype);
    memset(row, 0, sizeof(*row));
    row->cell = index;
    snprintf(row->backend, sizeof(row->backend), "%s", plugin->name);
    snprintf(row->variant, sizeof(row->variant), "%s", cell->variant);
    snprintf(row->op, sizeof(row->op), "%s", collprof_op_name(cell->op));
    snprintf(row->dtype, sizeof(row->dtype), "%s", dt->name);
    snprintf(row->redop, sizeof(row->redop), "%s",
             (cp_op_flags(cell->op) & COLLPROF_OPF_REDUCES) ? collprof_redop_name(cell->redop)
                                                            : "none");
    row->root = cell->root;
    row->in_place = cell->in_place;
    if (cell->imb != NULL) {
        snprintf(row->imbalance, sizeof(row->imbalance), "%s", cell->imb->label);
    }
    row->count = cell->count;
    row->bytes = res->bytes ? res->bytes : cell->count * dt->size;
    row->iterations = cell->iters;
    row->warmup = cell->warmup;
    row->time_mean_us = res->stats.mean;
    row->time_min_us = res->stats.min;
    row->time_p50_us = res->stats.p50;
    row->time_p95_us = res->stats.p95;
    row->time_p99_us = res->stats.p99;
    row->time_max_us = res->stats.max;
    row->algbw_gbs = res->algbw;
    row->busbw_gbs = res->busbw;
    row->wrong = res->wrong;
    snprintf(row->status, sizeof(row->status), "%s", collprof_cell_status_name(res->status));
    snprintf(row->error, sizeof(row->error), "%s", res->reason);
    row->start_time = res->start_epoch;
    snprintf(row->memory, sizeof(row->memory), "%s", collprof_memtype_name(cell->memtype));
}
