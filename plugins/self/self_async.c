#include "config.h"

/*
 * The self backend's posted collectives (ABI 2.3, collprof --replay's async ops): a context
 * has a second lane (its own barrier, header, slots and result areas: nothing of the lane the
 * blocking run() uses), and a worker thread, started at the first collective post, that runs
 * the context's posted collectives on it one after the other, in the order posted (every rank
 * posts a context's collectives in the same order, so the lanes' barriers pair up).  post()
 * queues the op and returns; the rank goes on with its next ops (run() on the first lane,
 * sends and recvs on the rings) while the worker moves the data; wait() moves the posted
 * sends and recvs of every context until the worker has finished the op.
 *
 * The lane is a segment of its own, made by the workers before their first op (lane_make), so
 * that a run that posts no collective (a matrix, most replays) has none: rank 0's worker
 * creates it with every page allocated (a /dev/shm too small fails there, not with a SIGBUS)
 * and names it in run()'s segment (self_lane_ctl_t), every worker maps it and counts itself
 * there, and when all have counted rank 0 unlinks it.  Where a rank could not, every rank's
 * posted collectives fail with the reason, at their wait().  No out-of-band call: the host's
 * are the main thread's.
 */

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "self_internal.h"

/* A posted collective (its first member says so: self_p2p.c's requests start with 0). */
typedef struct self_job {
    int coll; /* 1 */
    collprof_args_t a;
    int done;
    int rc; /* its status, once done */
    struct self_job *next;
} self_job_t;

/* The worker of a context: its queue, and whether it runs. */
struct self_async {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    self_job_t *head, *tail;
    int started, stop;
    int made;      /* the lane: 0 not yet, 1 mapped, -1 it could not be (why says) */
    void *seg;     /* its segment */
    size_t seglen; /* and length */
    char why[SELF_ERR_LEN];
};

/* Wait until *p (a counter in run()'s segment that only grows) reaches at least v. */
static uint32_t await_at_least(uint32_t *p, uint32_t v)
{
    uint32_t x;
    while ((x = __atomic_load_n(p, __ATOMIC_ACQUIRE)) < v) {
        sched_yield();
    }
    return x;
}

/* The worker, before its first op: the lane's segment, made with the other ranks' workers. */
static void lane_make(self_ctx_t *ctx)
{
    struct self_async *w = ctx->async;
    self_lane_ctl_t *c = ctx->ctl;
    self_ctx_t *l = ctx->lane;
    size_t hdr = self_header_bytes(ctx->n);
    char name[SELF_NAME_LEN];
    w->seglen = hdr + ((size_t)ctx->n + 2) * ctx->slot;
    int err = 0; /* rank 0's creation */
    if (ctx->rank == 0) {
        err = self_shm_create(w->seglen, name, w->why, sizeof(w->why));
        if (err == 0) {
            memcpy(c->name, name, sizeof(name));
        }
        __atomic_store_n(&c->state, err == 0 ? 1u : 2u, __ATOMIC_RELEASE);
    }
    uint32_t st = await_at_least(&c->state, 1);
    w->seg = st == 1 ? self_shm_map(c->name, w->seglen, w->why, sizeof(w->why)) : NULL;
    __atomic_add_fetch(w->seg != NULL ? &c->mapped : &c->failed, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&c->mapped, __ATOMIC_ACQUIRE) +
               __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE) <
           (uint32_t)ctx->n) { /* (both only grow) */
        sched_yield();
    }
    if (ctx->rank == 0 && st == 1) {
        shm_unlink(c->name); /* every rank has it mapped, or gave up */
    }
    if (st != 1 || __atomic_load_n(&c->failed, __ATOMIC_ACQUIRE) > 0) {
        /* (short: the replay's note of the op holds about 100 characters of it) */
        char was[SELF_ERR_LEN];
        snprintf(was, sizeof(was), "%s", w->why);
        if (err != 0) {
            snprintf(w->why, sizeof(w->why), "post: the %zu-byte segment of posted collectives: %s",
                     w->seglen, strerror(err));
        } else if (st != 1) {
            snprintf(w->why, sizeof(w->why),
                     "post: rank 0 could not create the %zu-byte segment of posted collectives",
                     w->seglen);
        } else if (w->seg != NULL) {
            snprintf(w->why, sizeof(w->why),
                     "post: another rank could not map the segment of posted collectives");
        } else {
            snprintf(w->why, sizeof(w->why), "post: the segment of posted collectives: %s", was);
        }
        if (w->seg != NULL) {
            munmap(w->seg, w->seglen);
            w->seg = NULL;
        }
        w->made = -1;
        return;
    }
    l->bar = w->seg;
    l->ctl = (self_lane_ctl_t *)(l->bar + 1);
    l->most = (size_t *)(l->ctl + 1);
    l->slots = (unsigned char *)w->seg + hdr;
    l->results = l->slots + (size_t)ctx->n * ctx->slot;
    w->made = 1;
    if (ctx->rank == 0 && ctx->host->log != NULL) {
        ctx->host->log(COLLPROF_LOG_INFO,
                       "self: a %zu-byte shared memory segment for posted collectives", w->seglen);
    }
}

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
        if (w->made == 0) {
            lane_make(ctx);
        }
        j->rc = w->made > 0 ? COLLPROF_OK : COLLPROF_ERR_BACKEND;
        if (w->made > 0) {
            self_run_op(ctx->lane, &j->a);
        }
        __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    }
}

int self_async_init(self_ctx_t *ctx)
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
    self_job_t *j = req;
    while (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)) {
        if (self_p2p_progress_all() == 0) { /* a peer may wait on this rank's sends */
            sched_yield();
        }
    }
    int rc = j->rc;
    if (rc != COLLPROF_OK) {
        snprintf(ctx->err, sizeof(ctx->err), "%s", ctx->async->why);
    }
    free(j);
    return rc;
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
    if (w->seg != NULL) {
        munmap(w->seg, w->seglen);
    }
    free(w);
    free(ctx->lane);
    ctx->async = NULL;
    ctx->lane = NULL;
}
