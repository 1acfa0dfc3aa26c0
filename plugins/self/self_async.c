#include "config.h"

/*
 * The self backend's posted collectives (ABI 2.3, collprof --replay's async ops): each context
 * has a second lane in its segment (its own barrier, header, slots and result areas: nothing
 * of the lane the blocking run() uses), and a worker thread, started at the first collective
 * post, that runs the context's posted collectives on it one after the other, in the order
 * posted (every rank posts a context's collectives in the same order, so the lanes' barriers
 * pair up).  post() queues the op and returns; the rank goes on with its next ops (run() on
 * the first lane, sends and recvs on the rings) while the worker moves the data; wait() moves
 * the posted sends and recvs of every context until the worker has finished the op.
 */

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "self_internal.h"

/* A posted collective (its first member says so: self_p2p.c's requests start with 0). */
typedef struct self_job {
    int coll; /* 1 */
    collprof_args_t a;
    int done;
    struct self_job *next;
} self_job_t;

/* The worker of a context: its queue, and whether it runs. */
struct self_async {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    self_job_t *head, *tail;
    int started, stop;
};

static void *worker(void *arg)
{
    self_ctx_t *ctx = arg;
    struct self_async *w = ctx->async;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->head == NULL && !w->stop) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        self_job_t *j = w->head;
        if (j == NULL) { /* stopping, nothing queued */
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
        w->head = j->next;
        w->tail = w->head != NULL ? w->tail : NULL;
        pthread_mutex_unlock(&w->mu);
        self_run_op(ctx->lane, &j->a);
        __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    }
}

int self_async_init(self_ctx_t *ctx, unsigned char *at, size_t hdr)
{
    self_ctx_t *l = calloc(1, sizeof(*l));
    struct self_async *w = calloc(1, sizeof(*w));
    if (l == NULL || w == NULL) {
        free(l);
        free(w);
        return COLLPROF_ERR_NO_MEMORY;
    }
    l->host = ctx->host;
    l->rank = ctx->rank;
    l->n = ctx->n;
    l->slot = ctx->slot;
    l->bar = (self_bar_t *)(void *)at;
    l->most = (size_t *)(l->bar + 1);
    l->slots = at + hdr;
    l->results = l->slots + (size_t)ctx->n * ctx->slot;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    ctx->lane = l;
    ctx->async = w;
    return COLLPROF_OK;
}

int self_post_coll(self_ctx_t *ctx, const collprof_args_t *a, void **req)
{
    struct self_async *w = ctx->async;
    self_job_t *j = calloc(1, sizeof(*j));
    if (j == NULL) {
        snprintf(ctx->err, sizeof(ctx->err), "post: out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    j->coll = 1;
    j->a = *a;
    j->a.overlap = NULL;
    if (!w->started) {
        if (pthread_create(&w->th, NULL, worker, ctx) != 0) {
            free(j);
            snprintf(ctx->err, sizeof(ctx->err), "post: cannot start the worker thread");
            return COLLPROF_ERR_BACKEND;
        }
        w->started = 1;
    }
    pthread_mutex_lock(&w->mu);
    if (w->tail != NULL) {
        w->tail->next = j;
    } else {
        w->head = j;
    }
    w->tail = j;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    *req = j;
    return COLLPROF_OK;
}

int self_wait_coll(self_ctx_t *ctx, void *req)
{
    (void)ctx;
    self_job_t *j = req;
    while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)) {
        if (self_p2p_progress_all() == 0) { /* a peer may wait on this rank's sends */
            sched_yield();
        }
    }
    free(j);
    return COLLPROF_OK;
}

void self_async_free(self_ctx_t *ctx)
{
    struct self_async *w = ctx->async;
    if (w == NULL) {
        return;
    }
    if (w->started) {
        pthread_mutex_lock(&w->mu);
        w->stop = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL); /* (the ops still queued run first: every rank's do) */
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
    free(ctx->lane);
    ctx->async = NULL;
    ctx->lane = NULL;
}
