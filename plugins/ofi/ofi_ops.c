/* run() of the ofi backend: one schedule of RMA writes per operation */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

typedef int (*ofi_op_fn)(ofi_ctx_t *ctx, ofi_call_t *c);

/* wait for `bytes` from every peer but us */
static int ofi_expect_all(ofi_ctx_t *ctx, const ofi_call_t *c, size_t bytes)
{
    int rc = COLLPROF_OK;
    for (int q = 0; q < c->n && rc == COLLPROF_OK; q++) {
        rc = q == c->me ? COLLPROF_OK : ofi_expect(ctx, c->mode, K_DATA, q, bytes);
    }
    return rc;
}

/* our input is overwritten by the peers: stage `bytes` of it in the scratch */
static void ofi_stage(ofi_ctx_t *ctx, ofi_call_t *c, size_t bytes)
{
    ofi_copy(ctx, c->rb->scr, c->recv, bytes);
    c->send = c->rb->scr;
    c->sdesc = c->rb->sdesc;
}

/* READY to everyone, our own block (own) copied in place, the sends posted, every block waited for
 */
static int ofi_exchange(ofi_ctx_t *ctx, ofi_call_t *c, int ns, const char *own)
{
    int rc = ofi_ready_all(ctx, NULL, 0);
    if (!c->a->in_place) {
        ofi_copy(ctx, c->recv + (size_t)c->me * c->blk, own, c->blk);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    }
    return rc == COLLPROF_OK ? ofi_expect_all(ctx, c, c->blk) : rc;
}

static int ofi_op_alltoall(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int ns = 0;
    if (c->a->in_place) {
        ofi_stage(ctx, c, (size_t)c->n * c->blk);
    }
    for (int i = 1; i < c->n; i++) {
        int q = (c->me + i) % c->n;
        ofi_add(ctx, &ns, q, K_DATA, c->send + (size_t)q * c->blk, c->sdesc, c->blk,
                (uint64_t)c->me * c->blk);
    }
    return ofi_exchange(ctx, c, ns, c->send + (size_t)c->me * c->blk);
}

static int ofi_op_alltoallv(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    const size_t *sc = a->in_place ? a->recvcounts : a->sendcounts;
    const size_t *sd = a->in_place ? a->rdispls : a->sdispls;
    size_t esz = c->esz;
    int n = c->n, me = c->me, ns = 0, rc = COLLPROF_OK;
    if (sc == NULL || sd == NULL || a->recvcounts == NULL || a->rdispls == NULL) {
        ofi_set_error(ctx, "alltoallv without counts or displacements");
        return COLLPROF_ERR_INVALID;
    }
    if (a->in_place) {
        size_t ext = 0;
        for (int q = 0; q < n; q++) {
            size_t e = (a->rdispls[q] + a->recvcounts[q]) * esz;
            ext = e > ext ? e : ext;
        }
        ofi_stage(ctx, c, ext);
    }
    for (int i = 1; i < n; i++) {
        int q = (me + i) % n;
        /* (the target's READY tells where: its rdispls[me], past its here) */
        ofi_add(ctx, &ns, q, K_DATA, c->send + sd[q] * esz, c->sdesc, sc[q] * esz, 0);
    }
    /* each peer gets its own READY payload: where its block goes here */
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        rc = q == me ? COLLPROF_OK : ofi_signal(ctx, q, K_READY, ctx->here + a->rdispls[q] * esz);
    }
    if (!a->in_place) {
        ofi_copy(ctx, c->recv + a->rdispls[me] * esz, c->send + sd[me] * esz, sc[me] * esz);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    }
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        rc = q == me ? COLLPROF_OK : ofi_expect(ctx, c->mode, K_DATA, q, a->recvcounts[q] * esz);
    }
    return rc;
}

/* allgather and gather: this rank's block, in place at its offset in recvbuf */
static const char *ofi_my_block(const ofi_call_t *c, void **desc)
{
    *desc = c->a->in_place ? c->rb->desc : c->sdesc;
    return c->a->in_place ? c->recv + (size_t)c->me * c->blk : c->send;
}

static int ofi_op_allgather(ofi_ctx_t *ctx, ofi_call_t *c)
{
    void *desc;
    const char *mine = ofi_my_block(c, &desc);
    int ns = 0;
    for (int i = 1; i < c->n; i++) {
        ofi_add(ctx, &ns, (c->me + i) % c->n, K_DATA, mine, desc, c->blk, (uint64_t)c->me * c->blk);
    }
    return ofi_exchange(ctx, c, ns, c->send);
}

/*
 * allgatherv: this rank's block of recvcounts[me] to every peer, at
 * rdispls[me] there (every rank knows every displacement).  An empty block
 * is still "sent" (no write) so that it takes the peer's READY.
 */
static int ofi_op_allgatherv(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    if (a->recvcounts == NULL || a->rdispls == NULL) {
        ofi_set_error(ctx, "allgatherv without counts or displacements");
        return COLLPROF_ERR_INVALID;
    }
    size_t esz = c->esz, at = a->rdispls[c->me] * esz, mine = a->recvcounts[c->me] * esz;
    void *desc = a->in_place ? c->rb->desc : c->sdesc;
    const char *src = a->in_place ? c->recv + at : c->send;
    int n = c->n, me = c->me, ns = 0, rc;
    for (int i = 1; i < n; i++) {
        ofi_add(ctx, &ns, (me + i) % n, K_DATA, src, desc, mine, at);
    }
    rc = ofi_ready_all(ctx, NULL, 0);
    if (!a->in_place && mine > 0) {
        ofi_copy(ctx, c->recv + at, c->send, mine);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    }
    for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
        rc = q == me ? COLLPROF_OK : ofi_expect(ctx, c->mode, K_DATA, q, a->recvcounts[q] * esz);
    }
    return rc;
}

/* a non-root rank of a rooted op: READY to the root, then its `bytes` */
static int ofi_from_root(ofi_ctx_t *ctx, const ofi_call_t *c, size_t bytes)
{
    int rc = ofi_ready_all(ctx, &c->a->root, 0);
    return rc == COLLPROF_OK ? ofi_expect(ctx, c->mode, K_DATA, c->a->root, bytes) : rc;
}

static int ofi_op_broadcast(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int ns = 0;
    if (c->me != c->a->root) {
        return ofi_from_root(ctx, c, c->all);
    }
    for (int i = 1; i < c->n; i++) {
        ofi_add(ctx, &ns, (c->me + i) % c->n, K_DATA, c->recv, c->rb->desc, c->all, 0);
    }
    return ofi_post_all(ctx, c->mode, c->rb, ns);
}

/* root: count elements; everyone sends count/n */
static int ofi_op_gather(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int ns = 0, rc;
    if (c->me == c->a->root) {
        rc = ofi_ready_all(ctx, NULL, 0);
        if (!c->a->in_place) {
            ofi_copy(ctx, c->recv + (size_t)c->me * c->blk, c->send, c->blk);
        }
        return rc == COLLPROF_OK ? ofi_expect_all(ctx, c, c->blk) : rc;
    }
    void *desc;
    const char *mine = ofi_my_block(c, &desc);
    ofi_add(ctx, &ns, c->a->root, K_DATA, mine, desc, c->blk, (uint64_t)c->me * c->blk);
    return ofi_post_all(ctx, c->mode, c->rb, ns);
}

static int ofi_op_scatter(ofi_ctx_t *ctx, ofi_call_t *c)
{
    int ns = 0;
    if (c->me != c->a->root) {
        return ofi_from_root(ctx, c, c->blk);
    }
    for (int i = 1; i < c->n; i++) {
        int q = (c->me + i) % c->n;
        ofi_add(ctx, &ns, q, K_DATA, c->send + (size_t)q * c->blk, c->sdesc, c->blk,
                c->a->in_place ? (uint64_t)q * c->blk : 0);
    }
    if (!c->a->in_place) {
        ofi_copy(ctx, c->recv, c->send + (size_t)c->me * c->blk, c->blk);
    }
    return ofi_post_all(ctx, c->mode, c->rb, ns);
}

static int ofi_op_sendrecv(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    int ns = 0, rc;
    if (c->n == 1 || a->peer_send == c->me) {
        if (!a->in_place) {
            ofi_copy(ctx, c->recv, c->send, c->all);
        }
        return COLLPROF_OK;
    }
    if (a->in_place) {
        ofi_stage(ctx, c, c->all);
    }
    ofi_add(ctx, &ns, a->peer_send, K_DATA, c->send, c->sdesc, c->all, 0);
    rc = ofi_ready_all(ctx, &a->peer_recv, 0);
    if (rc == COLLPROF_OK) {
        rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    }
    return rc == COLLPROF_OK ? ofi_expect(ctx, c->mode, K_DATA, a->peer_recv, c->all) : rc;
}

static void *ofi_in_desc(const ofi_call_t *c)
{
    return c->a->in_place ? c->rb->desc : c->sdesc;
}

static int ofi_op_reducescatter(ofi_ctx_t *ctx, ofi_call_t *c)
{
    return ofi_rs_phase(ctx, c->a, c->rb, c->send, ofi_in_desc(c), 1, c->recv, c->mode);
}

/* allreduce and reduce: reduce-scatter, then every reduced block to everyone or to the root */
static int ofi_op_allreduce(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    size_t off, len, esz = c->esz;
    int n = c->n, me = c->me, ns = 0, rc;
    int everyone = a->op == COLLPROF_OP_ALLREDUCE;
    ofi_split(a->count, n, me, &off, &len);
    rc = ofi_rs_phase(ctx, a, c->rb, c->send, ofi_in_desc(c), 0, c->recv + off * esz, c->mode);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    for (int i = 1; i < n; i++) {
        int q = (me + i) % n;
        if (everyone || q == a->root) {
            ofi_add(ctx, &ns, q, K_DATA2, c->recv + off * esz, c->rb->desc, len * esz, off * esz);
        }
    }
    rc = ofi_post_all(ctx, c->mode, c->rb, ns);
    if (everyone || me == a->root) {
        for (int q = 0; q < n && rc == COLLPROF_OK; q++) {
            size_t qo, ql;
            ofi_split(a->count, n, q, &qo, &ql);
            rc = q == me ? COLLPROF_OK : ofi_expect(ctx, c->mode, K_DATA2, q, ql * esz);
        }
    }
    return rc;
}

/* ---- gatherv, scatterv: rank q's block of recvcounts[q] at rdispls[q] of the root's buffer ----
 */

/* The v ops' counts and displacements are there (the core always gives them). */
static int ofi_have_v(ofi_ctx_t *ctx, const collprof_args_t *a, const char *op)
{
    if (a->recvcounts == NULL || a->rdispls == NULL) {
        ofi_set_error(ctx, "%s without counts or displacements", op);
        return 0;
    }
    return 1;
}

/* gatherv: every other rank writes its block at its displacement of the root's buffer */
static int ofi_op_gatherv(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    if (!ofi_have_v(ctx, a, "gatherv")) {
        return COLLPROF_ERR_INVALID;
    }
    size_t esz = c->esz, at = a->rdispls[c->me] * esz, mine = a->recvcounts[c->me] * esz;
    int ns = 0, rc = COLLPROF_OK;
    if (c->me == a->root) {
        rc = ofi_ready_all(ctx, NULL, 0);
        if (!a->in_place && mine > 0) {
            ofi_copy(ctx, c->recv + at, c->send, mine);
        }
        for (int q = 0; q < c->n && rc == COLLPROF_OK; q++) {
            rc = q == c->me ? COLLPROF_OK
                            : ofi_expect(ctx, c->mode, K_DATA, q, a->recvcounts[q] * esz);
        }
        return rc;
    }
    /* in place, our block sits at our displacement; an empty one still takes the READY */
    void *desc = a->in_place ? c->rb->desc : c->sdesc;
    const char *src = a->in_place ? c->recv + at : c->send;
    ofi_add(ctx, &ns, a->root, K_DATA, src, desc, mine, at);
    return ofi_post_all(ctx, c->mode, c->rb, ns);
}

/* scatterv: the root writes every other rank its block (in place: at its displacement there) */
static int ofi_op_scatterv(ofi_ctx_t *ctx, ofi_call_t *c)
{
    const collprof_args_t *a = c->a;
    if (!ofi_have_v(ctx, a, "scatterv")) {
        return COLLPROF_ERR_INVALID;
    }
    size_t esz = c->esz;
    int ns = 0;
    if (c->me != a->root) {
        return ofi_from_root(ctx, c, a->recvcounts[c->me] * esz);
    }
    for (int i = 1; i < c->n; i++) {
        int q = (c->me + i) % c->n;
        ofi_add(ctx, &ns, q, K_DATA, c->send + a->rdispls[q] * esz, c->sdesc,
                a->recvcounts[q] * esz, a->in_place ? a->rdispls[q] * esz : 0);
    }
    if (!a->in_place && a->recvcounts[c->me] > 0) {
        ofi_copy(ctx, c->recv, c->send + a->rdispls[c->me] * esz, a->recvcounts[c->me] * esz);
    }
    return ofi_post_all(ctx, c->mode, c->rb, ns);
}

static const ofi_op_fn ofi_ops[COLLPROF_OP_COUNT] = {
    [COLLPROF_OP_ALLTOALL] = ofi_op_alltoall,
    [COLLPROF_OP_ALLTOALLV] = ofi_op_alltoallv,
    [COLLPROF_OP_ALLGATHER] = ofi_op_allgather,
    [COLLPROF_OP_BROADCAST] = ofi_op_broadcast,
    [COLLPROF_OP_GATHER] = ofi_op_gather,
    [COLLPROF_OP_SCATTER] = ofi_op_scatter,
    [COLLPROF_OP_SENDRECV] = ofi_op_sendrecv,
    [COLLPROF_OP_REDUCESCATTER] = ofi_op_reducescatter,
    [COLLPROF_OP_ALLREDUCE] = ofi_op_allreduce,
    [COLLPROF_OP_REDUCE] = ofi_op_allreduce,
    [COLLPROF_OP_ALLGATHERV] = ofi_op_allgatherv,
    [COLLPROF_OP_GATHERV] = ofi_op_gatherv,
    [COLLPROF_OP_SCATTERV] = ofi_op_scatterv,
};

static int ofi_barrier(ofi_ctx_t *ctx)
{
    int rc = COLLPROF_OK;
    for (int q = 0; q < ctx->n && rc == COLLPROF_OK; q++) {
        rc = q == ctx->rank ? COLLPROF_OK : ofi_signal(ctx, q, K_BARRIER, 0);
    }
    for (int q = 0; q < ctx->n && rc == COLLPROF_OK; q++) {
        rc = q == ctx->rank ? COLLPROF_OK : ofi_wait_from(ctx, K_BARRIER, q, 1);
    }
    return rc;
}

int ofi_run_now(ofi_ctx_t *ctx, const collprof_args_t *a)
{
    ofi_call_t c;
    int rc;
    int known = (unsigned)a->op < COLLPROF_OP_COUNT;

    memset(ctx->got_ready, 0, (size_t)ctx->n);
    ctx->cur_dev = a->memtype == COLLPROF_MEM_DEVICE;
    ctx->copy_err = 0;
    if (known && ctx->cur_dev && (collprof_op_info(a->op)->flags & COLLPROF_OPF_REDUCES)) {
        ofi_set_error(ctx, "reductions run on the host: not supported on device memory");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (a->op == COLLPROF_OP_BARRIER) {
        return ofi_barrier(ctx);
    }
    if (known && (collprof_op_info(a->op)->flags & COLLPROF_OPF_NONBLOCKING)) {
        return ofi_run_nb(ctx, a); /* ofi_nb.c */
    }
    if (!known || ofi_ops[a->op] == NULL) {
        ofi_set_error(ctx, "operation %d is not supported by the ofi backend", (int)a->op);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    rc = ofi_call_init(ctx, a, &c);
    if (rc == COLLPROF_OK) {
        rc = ofi_ops[a->op](ctx, &c);
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx);
    }
    if (rc == COLLPROF_OK && ctx->copy_err) {
        rc = COLLPROF_ERR_BACKEND; /* the message is set */
    }
    return rc;
}
