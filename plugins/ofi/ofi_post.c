/*
 * post(), wait() and run() of the ofi backend (ABI 2.3, collprof --replay).
 *
 * The first post() of a context starts its worker thread, which from then on is the only
 * thread that touches the context's fabric (a domain opened FI_THREAD_DOMAIN) while it has
 * work: post() queues the op and returns at once; the worker takes the queue at each of its
 * progress rounds, posts the sends and recvs as tagged messages (ofi_p2p.c) and runs the
 * collectives one after the other, in the order posted (every rank posts a context's
 * collectives in the same order, so the workers' schedules pair up as run()'s do), with the
 * RMA-write schedules of run() (ofi_ops.c, ofi_nb.c).  While a collective waits for its peers,
 * its progress rounds go on posting and completing the sends and recvs, so a rank waiting on
 * one op never stalls a peer waiting on another.  wait() sleeps until the worker has finished
 * the op.  From the first post on, run() goes through the worker too (posted, its overlap()
 * on the calling thread, waited) while posted ops are in flight, and otherwise holds the
 * worker asleep and runs on the calling thread, as mem_alloc(), mem_free() and
 * select_variant() do while they use the fabric.  A wait on a send or recv gives up after the
 * context's wait limit (the "timeout" option, else 120 s), as a collective's own waits do;
 * the worker then cancels what of it the provider still holds (fi_cancel, ofi_p2p.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>

#include "ofi_internal.h"

/* ---- the worker ------------------------------------------------------------------- */

/* Sleep while there is nothing to do or the worker is held; 1 when it is to stop. */
static int ofi_worker_sleep(ofi_post_t *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->stop && (w->hold > 0 || (w->in_head == NULL && w->p2p == NULL && w->coll == NULL))) {
        w->asleep = 1;
        w->empty = w->in_head == NULL && w->p2p == NULL && w->coll == NULL;
        pthread_cond_broadcast(&w->done);
        pthread_cond_wait(&w->cv, &w->mu);
    }
    w->asleep = 0;
    int stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* One collective of the queue run, or one progress round of the sends and recvs. */
static void ofi_worker_step(ofi_ctx_t *ctx, int *broken)
{
    ofi_post_t *w = ctx->post;
    if (*broken) {
        ofi_p2p_fail_all(ctx, COLLPROF_ERR_BACKEND, ctx->werr);
        return;
    }
    ofi_p2p_poll(ctx); /* the queue taken */
    ofi_req_t *r = w->coll;
    if (r == NULL) {
        int rc = w->p2p != NULL ? ofi_progress(ctx) : COLLPROF_OK;
        if (rc != COLLPROF_OK) {
            *broken = 1;
            ofi_p2p_fail_all(ctx, rc, ctx->werr);
        }
        return;
    }
    w->coll = r->next;
    if (w->coll == NULL) {
        w->coll_tail = NULL;
    }
    r->rc = ofi_run_now(ctx, &r->a);
    if (r->rc != COLLPROF_OK) {
        snprintf(r->err, sizeof(r->err), "%s", ctx->werr);
    }
    ofi_p2p_finish(ctx, r);
}

static void *ofi_worker(void *arg)
{
    ofi_ctx_t *ctx = arg;
    int broken = 0;
    ofi_mark_worker();
    while (!ofi_worker_sleep(ctx->post)) {
        ofi_worker_step(ctx, &broken);
    }
    return NULL;
}

/* w's locks and sequence tables freed, and w (its thread joined or never started) */
static void ofi_post_free(ofi_post_t *w)
{
    pthread_cond_destroy(&w->done);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->rseq);
    free(w->sseq);
    free(w);
}

static int ofi_post_start(ofi_ctx_t *ctx)
{
    ofi_post_t *w = calloc(1, sizeof(*w));
    int rc;
    if (w == NULL || (w->sseq = calloc((size_t)ctx->n, sizeof(uint64_t))) == NULL ||
        (w->rseq = calloc((size_t)ctx->n, sizeof(uint64_t))) == NULL) {
        if (w != NULL) {
            free(w->sseq);
            free(w);
        }
        ofi_set_error(ctx, "post: out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->done, NULL);
    ctx->post = w;
    if ((rc = pthread_create(&w->th, NULL, ofi_worker, ctx)) != 0) {
        ctx->post = NULL;
        ofi_post_free(w);
        ofi_set_error(ctx, "post: the worker thread: %s", strerror(rc));
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

static void ofi_free_list(ofi_req_t *r)
{
    while (r != NULL) {
        ofi_req_t *next = r->next;
        free(r);
        r = next;
    }
}

void ofi_post_stop(ofi_ctx_t *ctx)
{
    ofi_post_t *w = ctx->post;
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    /* ops never waited (a failed replay) */
    ofi_free_list(w->in_head);
    ofi_free_list(w->p2p);
    ofi_free_list(w->coll);
    ofi_post_free(w);
    ctx->post = NULL;
}

void ofi_post_hold(ofi_ctx_t *ctx, int hold)
{
    ofi_post_t *w = ctx != NULL ? ctx->post : NULL;
    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->hold += hold ? 1 : -1;
    pthread_cond_broadcast(&w->cv);
    while (hold && !w->asleep) {
        pthread_cond_wait(&w->done, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

/* The worker asleep with nothing in flight: held so (1), the caller may run an op itself. */
static int ofi_post_hold_idle(ofi_ctx_t *ctx)
{
    ofi_post_t *w = ctx->post;
    pthread_mutex_lock(&w->mu);
    int idle = w->asleep && w->empty && w->in_head == NULL;
    w->hold += idle;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

/* ---- post, wait, run ---------------------------------------------------------------- */

/* A send or recv: its buffer's registration, channel and first message number. */
static int ofi_p2p_req(ofi_ctx_t *ctx, const collprof_args_t *a, ofi_req_t *r)
{
    size_t esz = ofi_dtsize(a->dtype);
    r->send = a->peer_recv < 0;
    r->peer = r->send ? a->peer_send : a->peer_recv;
    if (a->op != COLLPROF_OP_SENDRECV || (a->peer_send < 0) == (a->peer_recv < 0) || esz == 0 ||
        r->peer >= ctx->n || r->peer == ctx->rank) {
        ofi_set_error(ctx, "post: a send or recv to another rank only (op %d, peers %d %d)",
                      (int)a->op, a->peer_send, a->peer_recv);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (!ctx->tagged) {
        ofi_set_error(ctx, "post: provider %s has no tagged messages: no sends and recvs",
                      ctx->prov);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    r->buf = r->send ? (char *)(a->sendbuf != NULL ? a->sendbuf : a->recvbuf) : a->recvbuf;
    r->len = a->count * esz;
    ofi_buf_t *b = r->buf != NULL ? ofi_find(ctx, r->buf) : NULL;
    if (b == NULL || (size_t)(r->buf - b->base) + r->len > b->len) {
        ofi_set_error(ctx, "post: the %s buffer was not allocated through mem_alloc",
                      r->send ? "send" : "recv");
        return COLLPROF_ERR_INVALID;
    }
    r->desc = b->desc;
    r->ch = (r->peer + ctx->rank) % ctx->nch;
    r->nchunks = r->len == 0 ? 1 : (int)((r->len + ctx->chunk - 1) / ctx->chunk);
    r->src = (uint64_t)(r->send ? ctx->rank : r->peer);
    return COLLPROF_OK;
}

/* Queue op a (coll: a collective, else a send or recv) for the worker, started if need be. */
static int ofi_enqueue(ofi_ctx_t *ctx, const collprof_args_t *a, int coll, ofi_req_t **out)
{
    ofi_req_t *r = calloc(1, sizeof(*r));
    int rc = r != NULL ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY;
    if (r == NULL) {
        ofi_set_error(ctx, "post: out of memory");
    } else if (coll) {
        r->coll = 1;
        r->a = *a;
        r->a.overlap = NULL;
    } else {
        rc = ofi_p2p_req(ctx, a, r);
    }
    if (rc == COLLPROF_OK && ctx->post == NULL) {
        rc = ofi_post_start(ctx);
    }
    if (rc != COLLPROF_OK) {
        free(r);
        return rc;
    }
    ofi_post_t *w = ctx->post;
    if (!coll) { /* numbered in the order posted (this thread's counters) */
        uint64_t *seq = r->send ? &w->sseq[r->peer] : &w->rseq[r->peer];
        r->seq = *seq;
        *seq += (uint64_t)r->nchunks;
    }
    pthread_mutex_lock(&w->mu);
    if (w->in_tail != NULL) {
        w->in_tail->next = r;
    } else {
        w->in_head = r;
    }
    w->in_tail = r;
    __atomic_store_n(&w->inbox, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    *out = r;
    return COLLPROF_OK;
}

int ofi_post(void *vctx, const collprof_args_t *a, void **req)
{
    ofi_ctx_t *ctx = vctx;
    ofi_req_t *r = NULL;
    int coll = a->op != COLLPROF_OP_SENDRECV;
    if (coll && ((unsigned)a->op >= COLLPROF_OP_COUNT ||
                 (collprof_op_info(a->op)->flags & COLLPROF_OPF_NONBLOCKING))) {
        ofi_set_error(ctx, "post: operation %d is not posted by the ofi backend", (int)a->op);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    int rc = ofi_enqueue(ctx, a, coll, &r);
    if (rc == COLLPROF_OK) {
        *req = r;
    }
    return rc;
}

/* Until r is done (a send or recv: at most the wait limit; then r is left to the worker). */
static int ofi_wait_done(ofi_ctx_t *ctx, ofi_req_t *r)
{
    ofi_post_t *w = ctx->post;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)ctx->wait_limit_s;
    int late = 0;
    pthread_mutex_lock(&w->mu);
    while (!r->done && !late) {
        if (r->coll) {
            pthread_cond_wait(&w->done, &w->mu); /* run()'s waits have their own limits */
        } else {
            late = pthread_cond_timedwait(&w->done, &w->mu, &dl) == ETIMEDOUT && !r->done;
        }
    }
    r->orphan = late;
    if (late) { /* the worker cancels its messages (ofi_p2p.c) */
        __atomic_store_n(&w->cancel, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&w->mu);
    if (late) {
        ofi_set_error(ctx, "timed out after %.0f s waiting for a %s of %zu B %s rank %d",
                      ctx->wait_limit_s, r->send ? "send" : "recv", r->len, r->send ? "to" : "from",
                      r->peer);
        return COLLPROF_ERR_TIMEOUT;
    }
    return COLLPROF_OK;
}

int ofi_wait(void *vctx, void *req)
{
    ofi_ctx_t *ctx = vctx;
    ofi_req_t *r = req;
    if (ctx->post == NULL || r == NULL) {
        ofi_set_error(ctx, "wait: no such posted op");
        return COLLPROF_ERR_INVALID;
    }
    int rc = ofi_wait_done(ctx, r);
    if (rc != COLLPROF_OK) {
        return rc; /* r is the worker's now */
    }
    rc = r->rc;
    if (rc != COLLPROF_OK) {
        ofi_set_error(ctx, "%s", r->err);
    }
    free(r);
    return rc;
}

/* run(): on this thread while no posted op is in flight (the worker, if any, held asleep),
 * else through the worker, after the ops in flight (overlap() here) */
int ofi_run(void *vctx, const collprof_args_t *a)
{
    ofi_ctx_t *ctx = vctx;
    ofi_req_t *r = NULL;
    if (ctx->post == NULL) {
        return ofi_run_now(ctx, a);
    }
    if (ofi_post_hold_idle(ctx)) {
        int rc = ofi_run_now(ctx, a);
        ofi_post_hold(ctx, 0);
        return rc;
    }
    int rc = ofi_enqueue(ctx, a, 1, &r);
    if (rc == COLLPROF_OK && a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    return rc == COLLPROF_OK ? ofi_wait(ctx, r) : rc;
}

/* ---- the slots that use the fabric beside the worker --------------------------------- */

int ofi_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    ofi_ctx_t *ctx = vctx;
    ofi_post_hold(ctx, 1);
    int rc = ofi_mr_alloc(ctx, memtype, bytes, ptr);
    ofi_post_hold(ctx, 0);
    return rc;
}

int ofi_mem_free(void *vctx, int memtype, void *ptr)
{
    ofi_ctx_t *ctx = vctx;
    ofi_post_hold(ctx, 1);
    int rc = ofi_mr_free(ctx, memtype, ptr);
    ofi_post_hold(ctx, 0);
    return rc;
}
