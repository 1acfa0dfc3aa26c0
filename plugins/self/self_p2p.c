#include "config.h"

/*
 * post() and wait() of the self backend (ABI 2.3): the sends and recvs of collprof
 * --replay through a ring per ordered pair of ranks in the segment (self_backend.c sizes
 * it).  A message is an 8-byte length and the payload, streamed through the ring by the
 * sender and taken out by the receiver; post() moves what fits and returns, wait() moves
 * every posted send and recv of this process (of every context) until its own is done, so
 * two ranks that each wait on a send to the other, their rings full, still go on.  Sends to one
 * peer leave, and recvs from one peer are matched, in the order posted.  (self_backend.c's
 * post() and wait() send a collective to self_async.c.)
 */

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "self_internal.h"

/* One ring: what the sender wrote and what the receiver read, in bytes since init. */
typedef struct self_ring {
    uint64_t head;
    char pad0[SELF_LINE - sizeof(uint64_t)];
    uint64_t tail;
    char pad1[SELF_LINE - sizeof(uint64_t)];
} self_ring_t;

/* A posted send or recv (coll 0: self_async.c's collectives have 1 there). */
typedef struct self_p2p {
    int coll;
    int send, peer;
    unsigned char *buf;
    size_t len;   /* its bytes */
    uint64_t msg; /* a recv: the message's length once its header is in */
    size_t pos;   /* bytes of header and payload moved */
    unsigned char hdr[8];
    int done;
    struct self_p2p *next;
} self_p2p_t;

size_t self_p2p_ring_bytes(int n)
{
    size_t r = (size_t)4 << 20; /* 4 MiB over every pair, 256 B to 64 KiB each */
    r /= (size_t)n * (size_t)n;
    r = r < 256 ? 256 : r > 65536 ? 65536 : r;
    return r / SELF_LINE * SELF_LINE;
}

size_t self_p2p_area_bytes(int n)
{
    return (size_t)n * (size_t)n * (sizeof(self_ring_t) + self_p2p_ring_bytes(n));
}

static self_ring_t *ring_of(const self_ctx_t *ctx, int from, int to)
{
    size_t one = sizeof(self_ring_t) + ctx->ring;
    return (self_ring_t *)(ctx->p2p + ((size_t)from * (size_t)ctx->n + (size_t)to) * one);
}

/* Copy len bytes between the ring's data (at stream offset at) and p. */
static void ring_copy(const self_ctx_t *ctx, self_ring_t *r, uint64_t at, unsigned char *p,
                      size_t len, int out)
{
    unsigned char *d = (unsigned char *)(r + 1);
    size_t o = (size_t)(at % ctx->ring), first = ctx->ring - o < len ? ctx->ring - o : len;
    if (out) {
        memcpy(d + o, p, first);
        memcpy(d, p + first, len - first);
    } else {
        memcpy(p, d + o, first);
        memcpy(p + first, d, len - first);
    }
}

/* Move what can move of send q: bytes moved. */
static size_t push(self_ctx_t *ctx, self_p2p_t *q)
{
    self_ring_t *r = ring_of(ctx, ctx->rank, q->peer);
    uint64_t h = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
    uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
    size_t room = ctx->ring - (size_t)(h - t), moved = 0;
    while (room > 0 && q->pos < 8 + q->len) {
        int in_hdr = q->pos < 8;
        size_t left = in_hdr ? 8 - q->pos : 8 + q->len - q->pos;
        size_t k = left < room ? left : room;
        ring_copy(ctx, r, h, in_hdr ? q->hdr + q->pos : q->buf + (q->pos - 8), k, 1);
        h += k;
        q->pos += k;
        room -= k;
        moved += k;
    }
    __atomic_store_n(&r->head, h, __ATOMIC_RELEASE);
    q->done = q->pos == 8 + q->len;
    return moved;
}

/* Move what can move of recv q: bytes moved.  Bytes beyond q->len are dropped. */
static size_t pull(self_ctx_t *ctx, self_p2p_t *q)
{
    self_ring_t *r = ring_of(ctx, q->peer, ctx->rank);
    uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_RELAXED);
    uint64_t h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    size_t have = (size_t)(h - t), moved = 0;
    unsigned char drop[256];
    while (have > 0 && (q->pos < 8 || q->pos < 8 + q->msg)) {
        int in_hdr = q->pos < 8;
        size_t left = in_hdr ? 8 - q->pos : (size_t)(8 + q->msg - q->pos);
        size_t k = left < have ? left : have, at = q->pos - (in_hdr ? 0 : 8);
        unsigned char *to = in_hdr ? q->hdr + q->pos : at < q->len ? q->buf + at : drop;
        k = !in_hdr && at < q->len && k > q->len - at ? q->len - at : k;
        k = to == drop && k > sizeof(drop) ? sizeof(drop) : k;
        ring_copy(ctx, r, t, to, k, 0);
        t += k;
        q->pos += k;
        have -= k;
        moved += k;
        if (q->pos == 8) {
            memcpy(&q->msg, q->hdr, 8);
        }
    }
    __atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
    q->done = q->pos >= 8 && q->pos == 8 + q->msg;
    return moved;
}

/* One pass over the posted ops in order (a later one to the same peer the same way waits
 * for the earlier): bytes moved. */
static size_t progress(self_ctx_t *ctx)
{
    size_t moved = 0;
    for (self_p2p_t *q = ctx->posted; q != NULL; q = q->next) {
        int first = !q->done;
        for (self_p2p_t *e = ctx->posted; first && e != q; e = e->next) {
            first = e->done || e->peer != q->peer || e->send != q->send;
        }
        if (first) {
            moved += q->send ? push(ctx, q) : pull(ctx, q);
        }
    }
    return moved;
}

/* Every context of this process with posted ops: a wait moves those of every context (the
 * group contexts of a replay side by side), so a rank waiting on one group never stalls a
 * peer that waits on another. */
static self_ctx_t *live;

size_t self_p2p_progress_all(void)
{
    size_t moved = 0;
    for (self_ctx_t *c = live; c != NULL; c = c->live_next) {
        moved += progress(c);
    }
    return moved;
}

static void live_add(self_ctx_t *ctx)
{
    self_ctx_t *c = live;
    while (c != NULL && c != ctx) {
        c = c->live_next;
    }
    if (c == NULL) {
        ctx->live_next = live;
        live = ctx;
    }
}

static void live_drop(self_ctx_t *ctx)
{
    self_ctx_t **p = &live;
    while (*p != NULL && *p != ctx) {
        p = &(*p)->live_next;
    }
    if (*p != NULL) {
        *p = ctx->live_next;
    }
}

int self_p2p_post(void *vctx, const collprof_args_t *a, void **req)
{
    self_ctx_t *ctx = vctx;
    int send = a->peer_recv < 0, peer = send ? a->peer_send : a->peer_recv;
    size_t es = collprof_dtype_size((int)a->dtype);
    if (a->op != COLLPROF_OP_SENDRECV || (a->peer_send < 0) == (a->peer_recv < 0) || es == 0 ||
        peer >= ctx->n || peer == ctx->rank || a->memtype != COLLPROF_MEM_HOST) {
        snprintf(ctx->err, sizeof(ctx->err),
                 "post: only a host send or recv to another rank (op %d, peers %d %d)", (int)a->op,
                 a->peer_send, a->peer_recv);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    self_p2p_t *q = calloc(1, sizeof(*q)), **end = &ctx->posted;
    if (q == NULL) {
        snprintf(ctx->err, sizeof(ctx->err), "post: out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    q->send = send;
    q->peer = peer;
    q->buf = send ? (unsigned char *)(uintptr_t)a->sendbuf : a->recvbuf;
    q->len = a->count * es;
    uint64_t l = q->len;
    memcpy(q->hdr, &l, 8);
    while (*end != NULL) {
        end = &(*end)->next;
    }
    *end = q;
    live_add(ctx);
    progress(ctx);
    *req = q;
    return COLLPROF_OK;
}

int self_p2p_wait(void *vctx, void *req)
{
    self_ctx_t *ctx = vctx;
    self_p2p_t *q = req, **p = &ctx->posted;
    while (!q->done) {
        if (self_p2p_progress_all() == 0) {
            sched_yield();
        }
    }
    while (*p != q) {
        p = &(*p)->next;
    }
    *p = q->next;
    if (ctx->posted == NULL) {
        live_drop(ctx);
    }
    int rc = COLLPROF_OK;
    if (!q->send && q->msg != q->len) {
        snprintf(ctx->err, sizeof(ctx->err), "recv of %zu B from rank %d: its message has %llu B",
                 q->len, q->peer, (unsigned long long)q->msg);
        rc = COLLPROF_ERR_BACKEND;
    }
    free(q);
    return rc;
}

void self_p2p_free(self_ctx_t *ctx)
{
    live_drop(ctx);
    while (ctx->posted != NULL) {
        self_p2p_t *q = ctx->posted;
        ctx->posted = q->next;
        free(q);
    }
}
