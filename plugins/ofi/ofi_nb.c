/*
 * run() of the ofi backend's non-blocking operations: iallreduce,
 * iallgather, ialltoall and ibroadcast, with the buffers, data and schedule
 * of their blocking twins (ofi_ops.c) split in two halves around the core's
 * host computation (args->overlap):
 *
 *   post  READY to the peers, our own block copied, and every RMA write
 *         that needs nothing but the target's READY posted (waiting for
 *         READYs only: a write must not land before its target entered the
 *         call).  The direct variant's notifications go out at once when
 *         one round of progress shows the writes complete, else in the wait.
 *   wait  the rest: due notifications, the incoming blocks, and for
 *         iallreduce the reduction and its all-gather phase, whose writes
 *         depend on it.
 *
 * Nothing runs between the halves: the ABI's overlap() is the core's loop,
 * with no hook to poll from, and no progress thread is started.  shm and
 * tcp;ofi_rxm progress data manually (FI_PROGRESS_MANUAL), so what moves
 * during the computation is what the post itself or the kernel carries:
 * shm performs a plain write (direct) by CMA inside fi_write, and tcp
 * hands the bytes to the socket until its buffer is full.  The overlap
 * figure shows that, no more.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>

#include "ofi_internal.h"

typedef struct ofi_nb_op {
    int (*post)(ofi_ctx_t *ctx, ofi_call_t *c);
    int (*wait)(ofi_ctx_t *ctx, ofi_call_t *c);
} ofi_nb_op_t;

/* wait for `bytes` of kind from every peer but us */
static int ofi_nb_expect_all(ofi_ctx_t *ctx, const ofi_call_t *c, int kind, size_t bytes)
{
    int rc = COLLPROF_OK;
    for (int q = 0; q < c->n && rc == COLLPROF_OK; q++) {
        rc = q == c->me ? COLLPROF_OK : ofi_expect(ctx, c->mode, kind, q, bytes);
    }
    return rc;
}

/* post the sends set up in c->ns; direct: notify now if the writes already completed */
static int ofi_nb_post_sends(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int rc = ofi_post_deferred(ctx, c->mode, c->rb, c->ns);
    return rc == COLLPROF_OK ? ofi_notify_deferred(ctx, c->ns, 0) : rc;
}

/* READY to everyone, our own block (own) copied in place, the sends posted */
static int ofi_nb_exchange(ofi_ctx_t *ctx, ofi_call_t *c, const char *own)
{
    int rc = ofi_ready_all(ctx, NULL, 0);
    if (!c->a->in_place) {
        ofi_copy(ctx, c->recv + (size_t)c->me * c->blk, own, c->blk);
    }
    return rc == COLLPROF_OK ? ofi_nb_post_sends(ctx, c) : rc;
}

/* the wait of the exchanges: due notifications, then every peer's block */
static int ofi_nb_exchange_wait(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int rc = ofi_notify_deferred(ctx, c->ns, 1);
    return rc == COLLPROF_OK ? ofi_nb_expect_all(ctx, c, K_DATA, c->blk) : rc;
}

static int ofi_nb_alltoall(ofi_ctx_t *ctx, ofi_call_t *c)
{
    if (c->a->in_place) { /* the peers overwrite our input: send from a copy */
        ofi_copy(ctx, c->rb->scr, c->recv, (size_t)c->n * c->blk);
        c->send = c->rb->scr;
        c->sdesc = c->rb->sdesc;
    }
    for (int i = 1; i < c->n; i++) {
        int q = (c->me + i) % c->n;
        ofi_add(ctx, &c->ns, q, K_DATA, c->send + (size_t)q * c->blk, c->sdesc, c->blk,
                (uint64_t)c->me * c->blk);
    }
    return ofi_nb_exchange(ctx, c, c->send + (size_t)c->me * c->blk);
}

static int ofi_nb_allgather(ofi_ctx_t *ctx, ofi_call_t *c)
{
    void *desc = c->a->in_place ? c->rb->desc : c->sdesc;
    const char *mine = c->a->in_place ? c->recv + (size_t)c->me * c->blk : c->send;
    for (int i = 1; i < c->n; i++) {
        ofi_add(ctx, &c->ns, (c->me + i) % c->n, K_DATA, mine, desc, c->blk,
                (uint64_t)c->me * c->blk);
    }
    return ofi_nb_exchange(ctx, c, c->send);
}

/* root: its buffer written to every peer; the others: READY to the root */
static int ofi_nb_broadcast(ofi_ctx_t *ctx, ofi_call_t *c)
{
    if (c->me != c->a->root) {
        return ofi_ready_all(ctx, &c->a->root, 0);
    }
    for (int i = 1; i < c->n; i++) {
        ofi_add(ctx, &c->ns, (c->me + i) % c->n, K_DATA, c->recv, c->rb->desc, c->all, 0);
    }
    return ofi_nb_post_sends(ctx, c);
}

static int ofi_nb_broadcast_wait(ofi_ctx_t *ctx, ofi_call_t *c)
{
    if (c->me != c->a->root) {
        return ofi_expect(ctx, c->mode, K_DATA, c->a->root, c->all);
    }
    return ofi_notify_deferred(ctx, c->ns, 1);
}

/* iallreduce, as allreduce: block q of the input (uneven split) to q's scratch, slot me */
static int ofi_nb_allreduce(ofi_ctx_t *ctx, ofi_call_t *c)
{
    void *desc = c->a->in_place ? c->rb->desc : c->sdesc;
    int rc;
    for (int i = 1; i < c->n; i++) {
        int q = (c->me + i) % c->n;
        size_t off, len;
        ofi_split(c->a->count, c->n, q, &off, &len);
        ofi_send_t *s = ofi_add(ctx, &c->ns, q, K_DATA, c->send + off * c->esz, desc, len * c->esz,
                                (uint64_t)c->me * len * c->esz);
        s->to_scratch = 1;
    }
    rc = ofi_ready_all(ctx, NULL, 0);
    return rc == COLLPROF_OK ? ofi_nb_post_sends(ctx, c) : rc;
}

/* the rest of iallreduce: our slots reduced into our block, then it goes to everyone */
static int ofi_nb_allreduce_wait(ofi_ctx_t *ctx, ofi_call_t *c)
{
    size_t off, len, esz = c->esz;
    int n = c->n, me = c->me, ns = 0;
    ofi_split(c->a->count, n, me, &off, &len);
    size_t bytes = len * esz;
    int rc = ofi_notify_deferred(ctx, c->ns, 1);
    if (rc == COLLPROF_OK) {
        rc = ofi_nb_expect_all(ctx, c, K_DATA, bytes);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx); /* our input may be overwritten from here on */
    }
    if (rc == COLLPROF_OK) {
        memcpy(c->rb->scr + (size_t)me * bytes, c->send + off * esz, bytes);
        rc = ofi_reduce_slots(ctx, c->a, c->rb->scr, bytes, esz, c->recv + off * esz);
    }
    if (rc != COLLPROF_OK) {
        return rc;
    }
    for (int i = 1; i < n; i++) {
        ofi_add(ctx, &ns, (me + i) % n, K_DATA2, c->recv + off * esz, c->rb->desc, bytes,
                off * esz);
    }
    rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        size_t qo, ql;
        ofi_split(c->a->count, n, q, &qo, &ql);
        rc = q == me ? COLLPROF_OK : ofi_expect(ctx, c->mode, K_DATA2, q, ql * esz);
    }
    return rc;
}

static const ofi_nb_op_t *ofi_nb_lookup(collprof_op_t op)
{
    static const ofi_nb_op_t ar = {ofi_nb_allreduce, ofi_nb_allreduce_wait};
    static const ofi_nb_op_t ag = {ofi_nb_allgather, ofi_nb_exchange_wait};
    static const ofi_nb_op_t aa = {ofi_nb_alltoall, ofi_nb_exchange_wait};
    static const ofi_nb_op_t bc = {ofi_nb_broadcast, ofi_nb_broadcast_wait};
    switch (op) {
    case COLLPROF_OP_IALLREDUCE: return &ar;
    case COLLPROF_OP_IALLGATHER: return &ag;
    case COLLPROF_OP_IALLTOALL: return &aa;
    case COLLPROF_OP_IBROADCAST: return &bc;
    default: return NULL;
    }
}

/* a non-blocking op: post, the core's computation (a->overlap, when set), wait */
int ofi_run_nb(ofi_ctx_t *ctx, const collprof_args_t *a)
{
    const ofi_nb_op_t *op = ofi_nb_lookup(a->op);
    collprof_args_t twin = *a;
    ofi_call_t c;
    int rc;
    if (op == NULL) {
        ofi_set_error(ctx, "operation %d is not supported by the ofi backend", (int)a->op);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    twin.op = (collprof_op_t)collprof_op_blocking(a->op);
    rc = ofi_call_init(ctx, &twin, &c);
    c.mode = ctx->mode[a->op]; /* the variant selected for the i-op */
    if (rc == COLLPROF_OK) {
        rc = op->post(ctx, &c);
    }
    if (rc == COLLPROF_OK && a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    if (rc == COLLPROF_OK) {
        rc = op->wait(ctx, &c);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx);
    }
    if (rc == COLLPROF_OK && ctx->copy_err) {
        rc = COLLPROF_ERR_BACKEND; /* the message is set */
    }
    return rc;
}
