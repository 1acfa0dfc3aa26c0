/* run() of the MPI backend: every operation as one MPI call on the op's communicator */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpi_internal.h"

#define MPI_BE_TAG 7411 /* sendrecv tag; any constant both sides agree on */

/* ---- run -------------------------------------------------------------- */

/* Handles are not constant expressions in every MPI, hence switches. */
static MPI_Datatype mpi_be_dtype(collprof_dtype_t dt, size_t *esize)
{
    switch (dt) {
    case COLLPROF_DTYPE_INT8: *esize = 1; return MPI_INT8_T;
    case COLLPROF_DTYPE_UINT8: *esize = 1; return MPI_UINT8_T;
    case COLLPROF_DTYPE_INT32: *esize = 4; return MPI_INT32_T;
    case COLLPROF_DTYPE_UINT32: *esize = 4; return MPI_UINT32_T;
    case COLLPROF_DTYPE_INT64: *esize = 8; return MPI_INT64_T;
    case COLLPROF_DTYPE_UINT64: *esize = 8; return MPI_UINT64_T;
    case COLLPROF_DTYPE_FLOAT32: *esize = 4; return MPI_FLOAT;
    case COLLPROF_DTYPE_FLOAT64: *esize = 8; return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL; /* MPI has no standard 16-bit floats */
    }
}

static MPI_Op mpi_be_redop(collprof_redop_t op)
{
    switch (op) {
    case COLLPROF_REDOP_SUM: return MPI_SUM;
    case COLLPROF_REDOP_PROD: return MPI_PROD;
    case COLLPROF_REDOP_MIN: return MPI_MIN;
    case COLLPROF_REDOP_MAX: return MPI_MAX;
    default: return MPI_OP_NULL;
    }
}

/* size_t element counts/displacements into the preallocated int arrays. */
static int mpi_be_a2av_convert(mpi_be_ctx_t *ctx, const size_t *in, int *out, const char *what)
{
    for (int i = 0; i < ctx->nranks; i++) {
        if (in[i] > INT_MAX) {
            mpi_be_set_error(ctx, "%s[%d] = %zu exceeds INT_MAX (MPI-3 int counts)", what, i,
                             in[i]);
            return COLLPROF_ERR_NOT_SUPPORTED;
        }
        out[i] = (int)in[i];
    }
    return COLLPROF_OK;
}

static int mpi_be_run_alltoallv(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                                MPI_Comm comm)
{
    int st, rc;
    if (!a->recvcounts || !a->rdispls || (!a->in_place && (!a->sendcounts || !a->sdispls))) {
        mpi_be_set_error(ctx, "alltoallv: counts or displacements missing");
        return COLLPROF_ERR_INVALID;
    }
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    if (a->in_place) {
        /* recvcounts/rdispls describe both sides; send arguments are ignored. */
        rc = MPI_Alltoallv(MPI_IN_PLACE, ctx->a2av_rcounts, ctx->a2av_rdispls, dt, a->recvbuf,
                           ctx->a2av_rcounts, ctx->a2av_rdispls, dt, comm);
    } else {
        if ((st = mpi_be_a2av_convert(ctx, a->sendcounts, ctx->a2av_scounts, "sendcounts")) ||
            (st = mpi_be_a2av_convert(ctx, a->sdispls, ctx->a2av_sdispls, "sdispls"))) {
            return st;
        }
        rc = MPI_Alltoallv(a->sendbuf, ctx->a2av_scounts, ctx->a2av_sdispls, dt, a->recvbuf,
                           ctx->a2av_rcounts, ctx->a2av_rdispls, dt, comm);
    }
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Alltoallv", rc);
}

/* allgatherv: rank r's block of recvcounts[r] at rdispls[r]; in place, ours is already there */
static int mpi_be_run_allgatherv(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                                 MPI_Comm comm)
{
    int st;
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    const void *sbuf = a->in_place ? MPI_IN_PLACE : a->sendbuf;
    int rc = MPI_Allgatherv(sbuf, ctx->a2av_rcounts[ctx->rank], dt, a->recvbuf, ctx->a2av_rcounts,
                            ctx->a2av_rdispls, dt, comm);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Allgatherv", rc);
}

/*
 * gatherv and scatterv: rank r's block of recvcounts[r] at rdispls[r] of the
 * root's buffer.  In place, MPI_IN_PLACE at the root only (its block stays
 * where it is); the others send from, or receive into, their own
 * displacement of the one buffer.
 */
static int mpi_be_run_rooted_v(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                               MPI_Comm comm)
{
    int st, rc, me = ctx->rank, at_root = me == a->root;
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, ctx->a2av_rdispls, "rdispls"))) {
        return st;
    }
    const int *cnt = ctx->a2av_rcounts, *dsp = ctx->a2av_rdispls;
    size_t esz = collprof_dtype_size(a->dtype);
    char *mine = (char *)a->recvbuf + a->rdispls[me] * esz;
    if (a->op == COLLPROF_OP_GATHERV) {
        const void *sbuf = !a->in_place ? a->sendbuf : at_root ? MPI_IN_PLACE : mine;
        rc = MPI_Gatherv(sbuf, cnt[me], dt, at_root ? a->recvbuf : NULL, cnt, dsp, dt, a->root,
                         comm);
        return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Gatherv", rc);
    }
    const void *sbuf = !at_root ? NULL : a->in_place ? a->recvbuf : a->sendbuf;
    void *rbuf = !a->in_place ? a->recvbuf : at_root ? MPI_IN_PLACE : mine;
    rc = MPI_Scatterv(sbuf, cnt, dsp, dt, rbuf, cnt[me], dt, a->root, comm);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Scatterv", rc);
}

/* A reducescatter with per-rank blocks (caps->var_ops, never in place): MPI_Reduce_scatter,
 * rank r's recvcounts[r] elements of the reduction into its recvbuf. */
static int mpi_be_run_reducescatter_v(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Datatype dt,
                                      MPI_Op mop, MPI_Comm comm)
{
    int st = mpi_be_a2av_convert(ctx, a->recvcounts, ctx->a2av_rcounts, "recvcounts");
    if (st != COLLPROF_OK) {
        return st;
    }
    int rc = MPI_Reduce_scatter(a->sendbuf, a->recvbuf, ctx->a2av_rcounts, dt, mop, comm);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Reduce_scatter", rc);
}

/* One run(): the arguments in MPI's terms. */
typedef struct mpi_be_call {
    MPI_Datatype dt;
    MPI_Op mop; /* MPI_OP_NULL unless the op reduces */
    MPI_Comm comm;
    int cnt, blk, ip, root;
    const void *sbuf; /* sendbuf, or MPI_IN_PLACE */
    void *rbuf;
    char *mine; /* this rank's block of the in-place buffer */
    const char *call;
} mpi_be_call_t;

/* The checks every run() makes, then c filled in; the message is set on failure. */
static int mpi_be_prepare(mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    size_t esize = 0;
    const int n = ctx->nranks;
    const unsigned flags = collprof_op_info(a->op)->flags;
    if (a->memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "run: memory type %d is not offered (host only)", a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->dt = mpi_be_dtype(a->dtype, &esize);
    if (c->dt == MPI_DATATYPE_NULL) {
        mpi_be_set_error(ctx, "run: dtype %d has no MPI equivalent", (int)a->dtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->mop = (flags & COLLPROF_OPF_REDUCES) ? mpi_be_redop(a->redop) : MPI_OP_NULL;
    if ((flags & COLLPROF_OPF_REDUCES) && c->mop == MPI_OP_NULL) {
        mpi_be_set_error(ctx, "run: redop %d is not offered", (int)a->redop);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (a->count > INT_MAX) {
        mpi_be_set_error(ctx, "run: count %zu exceeds INT_MAX; MPI-3 bindings take int counts",
                         a->count);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    c->cnt = (int)a->count;
    c->blk = c->cnt / n;
    c->ip = a->in_place;
    c->root = a->root;
    c->comm = ctx->comm[a->op];
    c->sbuf = c->ip ? MPI_IN_PLACE : a->sendbuf;
    c->rbuf = a->recvbuf;
    c->mine = (char *)a->recvbuf + (size_t)ctx->rank * (size_t)c->blk * esize;
    return collprof_check_layout(a, n, ctx->err, sizeof(ctx->err));
}

/* reduce, gather and scatter: in place, the root and the others call differently */
static int mpi_be_issue_rooted(const mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    const int at_root = ctx->rank == c->root;
    switch (a->op) {
    case COLLPROF_OP_REDUCE:
        /* MPI_IN_PLACE is legal only at the root; the others send their buffer. */
        c->call = "MPI_Reduce";
        if (c->ip && !at_root) {
            return MPI_Reduce(a->recvbuf, NULL, c->cnt, c->dt, c->mop, c->root, c->comm);
        }
        return MPI_Reduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->root, c->comm);
    case COLLPROF_OP_GATHER:
        c->call = "MPI_Gather";
        if (c->ip && !at_root) {
            /* in place on every rank: a non-root sends its own block of recvbuf */
            return MPI_Gather(c->mine, c->blk, c->dt, NULL, c->blk, c->dt, c->root, c->comm);
        }
        return MPI_Gather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm);
    default: /* scatter */
        c->call = "MPI_Scatter";
        if (!c->ip) {
            return MPI_Scatter(a->sendbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm);
        }
        if (at_root) { /* the root's block stays where it is */
            return MPI_Scatter(a->recvbuf, c->blk, c->dt, MPI_IN_PLACE, c->blk, c->dt, c->root,
                               c->comm);
        }
        return MPI_Scatter(NULL, c->blk, c->dt, c->mine, c->blk, c->dt, c->root, c->comm);
    }
}

/* The MPI call for a->op (its name in c->call); an MPI return code. */
static int mpi_be_issue(const mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    switch (a->op) {
    case COLLPROF_OP_ALLREDUCE:
        c->call = "MPI_Allreduce";
        return MPI_Allreduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->comm);
    case COLLPROF_OP_ALLGATHER:
        /* in place: this rank's block already sits at rank*blk of recvbuf */
        c->call = "MPI_Allgather";
        return MPI_Allgather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm);
    case COLLPROF_OP_REDUCESCATTER:
        /* in place: the whole buffer is the input, the result lands in block 0 */
        c->call = "MPI_Reduce_scatter_block";
        return MPI_Reduce_scatter_block(c->sbuf, c->rbuf, c->blk, c->dt, c->mop, c->comm);
    case COLLPROF_OP_ALLTOALL:
        c->call = "MPI_Alltoall";
        return MPI_Alltoall(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm);
    case COLLPROF_OP_BROADCAST:
        /* one buffer: the root's input is in recvbuf */
        c->call = "MPI_Bcast";
        return MPI_Bcast(c->rbuf, c->cnt, c->dt, c->root, c->comm);
    case COLLPROF_OP_BARRIER: c->call = "MPI_Barrier"; return MPI_Barrier(c->comm);
    case COLLPROF_OP_SENDRECV:
        if (c->ip) {
            c->call = "MPI_Sendrecv_replace";
            return MPI_Sendrecv_replace(c->rbuf, c->cnt, c->dt, a->peer_send, MPI_BE_TAG,
                                        a->peer_recv, MPI_BE_TAG, c->comm, MPI_STATUS_IGNORE);
        }
        c->call = "MPI_Sendrecv";
        return MPI_Sendrecv(a->sendbuf, c->cnt, c->dt, a->peer_send, MPI_BE_TAG, c->rbuf, c->cnt,
                            c->dt, a->peer_recv, MPI_BE_TAG, c->comm, MPI_STATUS_IGNORE);
    default: return mpi_be_issue_rooted(ctx, a, c);
    }
}

/* The non-blocking call for a->op, posted into *req; an MPI return code. */
static int mpi_be_post(const collprof_args_t *a, mpi_be_call_t *c, MPI_Request *req)
{
    switch (a->op) {
    case COLLPROF_OP_IALLREDUCE:
        c->call = "MPI_Iallreduce";
        return MPI_Iallreduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->comm, req);
    case COLLPROF_OP_IALLGATHER:
        c->call = "MPI_Iallgather";
        return MPI_Iallgather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm, req);
    case COLLPROF_OP_IALLTOALL:
        c->call = "MPI_Ialltoall";
        return MPI_Ialltoall(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->comm, req);
    default: /* ibroadcast: one buffer, the root's input is in recvbuf */
        c->call = "MPI_Ibcast";
        return MPI_Ibcast(c->rbuf, c->cnt, c->dt, c->root, c->comm, req);
    }
}

/*
 * A non-blocking op: post it, run the core's computation (a->overlap) while
 * it is in flight, then MPI_Wait.  No MPI_Test in between: the library
 * progresses it on its own or not at all, which is what the overlap shows.
 */
static int mpi_be_run_nonblocking(mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = mpi_be_post(a, c, &req);
    if (rc != MPI_SUCCESS) {
        return mpi_be_mpi_error(ctx, c->call, rc);
    }
    if (a->overlap != NULL) {
        a->overlap(a->overlap_arg);
    }
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, "MPI_Wait", rc);
}

int mpi_be_run(void *vctx, const collprof_args_t *a)
{
    mpi_be_ctx_t *ctx = vctx;
    mpi_be_call_t c;
    int rc;

    if (!ctx || !a) {
        mpi_be_set_error(ctx, "run: ctx or args is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if ((int)a->op < 0 || a->op >= COLLPROF_OP_COUNT) {
        mpi_be_set_error(ctx, "run: unknown op %d", (int)a->op);
        return COLLPROF_ERR_INVALID;
    }
    rc = mpi_be_prepare(ctx, a, &c);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    if (a->op == COLLPROF_OP_ALLTOALLV) {
        return mpi_be_run_alltoallv(ctx, a, c.dt, c.comm);
    }
    if (a->op == COLLPROF_OP_ALLGATHERV) {
        return mpi_be_run_allgatherv(ctx, a, c.dt, c.comm);
    }
    if (a->op == COLLPROF_OP_GATHERV || a->op == COLLPROF_OP_SCATTERV) {
        return mpi_be_run_rooted_v(ctx, a, c.dt, c.comm);
    }
    if (a->op == COLLPROF_OP_REDUCESCATTER && a->recvcounts != NULL && !a->in_place) {
        return mpi_be_run_reducescatter_v(ctx, a, c.dt, c.mop, c.comm);
    }
    if (collprof_op_info(a->op)->flags & COLLPROF_OPF_NONBLOCKING) {
        return mpi_be_run_nonblocking(ctx, a, &c);
    }
    rc = mpi_be_issue(ctx, a, &c);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, c.call, rc);
}

/* ---- post and wait (ABI 2.3: collprof --replay's async, coalesced and p2p ops) ---- */

/* The non-blocking twin of a blocking op post() takes, or -1. */
static int mpi_be_twin(collprof_op_t op)
{
    switch (op) {
    case COLLPROF_OP_ALLREDUCE: return COLLPROF_OP_IALLREDUCE;
    case COLLPROF_OP_ALLGATHER: return COLLPROF_OP_IALLGATHER;
    case COLLPROF_OP_ALLTOALL: return COLLPROF_OP_IALLTOALL;
    case COLLPROF_OP_BROADCAST: return COLLPROF_OP_IBROADCAST;
    default: return collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING ? (int)op : -1;
    }
}

/* The non-blocking form of an op without a twin among collprof's ops (not in place); an MPI
 * return code, or -1 when there is none. */
static int mpi_be_post_more(const collprof_args_t *a, mpi_be_call_t *c, MPI_Request *r)
{
    switch (a->op) {
    case COLLPROF_OP_BARRIER: c->call = "MPI_Ibarrier"; return MPI_Ibarrier(c->comm, r);
    case COLLPROF_OP_REDUCE:
        c->call = "MPI_Ireduce";
        return MPI_Ireduce(c->sbuf, c->rbuf, c->cnt, c->dt, c->mop, c->root, c->comm, r);
    case COLLPROF_OP_REDUCESCATTER:
        c->call = "MPI_Ireduce_scatter_block";
        return MPI_Ireduce_scatter_block(c->sbuf, c->rbuf, c->blk, c->dt, c->mop, c->comm, r);
    case COLLPROF_OP_GATHER:
        c->call = "MPI_Igather";
        return MPI_Igather(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm, r);
    case COLLPROF_OP_SCATTER:
        c->call = "MPI_Iscatter";
        return MPI_Iscatter(c->sbuf, c->blk, c->dt, c->rbuf, c->blk, c->dt, c->root, c->comm, r);
    default: return -1;
    }
}

/* The bytes of a posted request: the MPI_Request, then four arrays of n ints that a variable
 * op's non-blocking call reads until it completes (MPI keeps the caller's arrays). */
static size_t mpi_be_req_bytes(int n)
{
    size_t head = (sizeof(MPI_Request) + sizeof(int) - 1) / sizeof(int) * sizeof(int);
    return head + 4 * (size_t)n * sizeof(int);
}

/* The variable ops (not in place): MPI_Ialltoallv, MPI_Iallgatherv, MPI_Igatherv,
 * MPI_Iscatterv, and a reducescatter of per-rank blocks, MPI_Ireduce_scatter, their counts
 * converted into the request's own arrays. */
static int mpi_be_post_var(mpi_be_ctx_t *ctx, const collprof_args_t *a, mpi_be_call_t *c,
                           MPI_Request *r)
{
    int n = ctx->nranks, me = ctx->rank, st, rc;
    size_t head = mpi_be_req_bytes(0);
    int *rcn = (int *)(void *)((char *)r + head), *rd = rcn + n, *sc = rd + n, *sd = sc + n;
    if ((st = mpi_be_a2av_convert(ctx, a->recvcounts, rcn, "recvcounts")) ||
        (st = mpi_be_a2av_convert(ctx, a->rdispls, rd, "rdispls"))) {
        return st;
    }
    if (a->op == COLLPROF_OP_REDUCESCATTER) { /* per-rank blocks (caps->var_ops) */
        c->call = "MPI_Ireduce_scatter";
        rc = MPI_Ireduce_scatter(a->sendbuf, a->recvbuf, rcn, c->dt, c->mop, c->comm, r);
    } else if (a->op == COLLPROF_OP_ALLTOALLV) {
        if ((st = mpi_be_a2av_convert(ctx, a->sendcounts, sc, "sendcounts")) ||
            (st = mpi_be_a2av_convert(ctx, a->sdispls, sd, "sdispls"))) {
            return st;
        }
        c->call = "MPI_Ialltoallv";
        rc = MPI_Ialltoallv(a->sendbuf, sc, sd, c->dt, a->recvbuf, rcn, rd, c->dt, c->comm, r);
    } else if (a->op == COLLPROF_OP_ALLGATHERV) {
        c->call = "MPI_Iallgatherv";
        rc = MPI_Iallgatherv(a->sendbuf, rcn[me], c->dt, a->recvbuf, rcn, rd, c->dt, c->comm, r);
    } else if (a->op == COLLPROF_OP_GATHERV) {
        c->call = "MPI_Igatherv";
        rc = MPI_Igatherv(a->sendbuf, rcn[me], c->dt, me == a->root ? a->recvbuf : NULL, rcn, rd,
                          c->dt, a->root, c->comm, r);
    } else {
        c->call = "MPI_Iscatterv";
        rc = MPI_Iscatterv(me == a->root ? a->sendbuf : NULL, rcn, rd, c->dt, a->recvbuf, rcn[me],
                           c->dt, a->root, c->comm, r);
    }
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, c->call, rc);
}

/* A send (peer_recv -1) or recv (peer_send -1) posted on the base communicator. */
static int mpi_be_post_p2p(mpi_be_ctx_t *ctx, const collprof_args_t *a, MPI_Request *r)
{
    size_t es = 0;
    MPI_Datatype dt = mpi_be_dtype(a->dtype, &es);
    if (dt == MPI_DATATYPE_NULL || a->count > INT_MAX || a->memtype != COLLPROF_MEM_HOST) {
        mpi_be_set_error(ctx, "post: dtype %d, count %zu or memory %d not offered", (int)a->dtype,
                         a->count, a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    int rc =
        a->peer_send >= 0
            ? MPI_Isend(a->sendbuf, (int)a->count, dt, a->peer_send, MPI_BE_TAG + 1, ctx->base, r)
            : MPI_Irecv(a->recvbuf, (int)a->count, dt, a->peer_recv, MPI_BE_TAG + 1, ctx->base, r);
    return rc == MPI_SUCCESS
               ? COLLPROF_OK
               : mpi_be_mpi_error(ctx, a->peer_send >= 0 ? "MPI_Isend" : "MPI_Irecv", rc);
}

int mpi_be_post_op(void *vctx, const collprof_args_t *a, void **req)
{
    mpi_be_ctx_t *ctx = vctx;
    MPI_Request *r = malloc(mpi_be_req_bytes(ctx->nranks));
    int rc = COLLPROF_ERR_NO_MEMORY;
    if (r == NULL) {
        mpi_be_set_error(ctx, "post: out of memory");
        return rc;
    }
    *r = MPI_REQUEST_NULL;
    if (a->op == COLLPROF_OP_SENDRECV && (a->peer_send < 0) != (a->peer_recv < 0)) {
        rc = mpi_be_post_p2p(ctx, a, r);
    } else if ((int)a->op >= 0 && a->op < COLLPROF_OP_COUNT && !a->in_place &&
               ((COLLPROF_MPI_POST_VAR & COLLPROF_BIT(a->op)) ||
                (a->op == COLLPROF_OP_REDUCESCATTER && a->recvcounts != NULL))) {
        mpi_be_call_t c;
        rc = mpi_be_prepare(ctx, a, &c);
        rc = rc == COLLPROF_OK ? mpi_be_post_var(ctx, a, &c, r) : rc;
    } else if ((int)a->op < 0 || a->op >= COLLPROF_OP_COUNT ||
               (mpi_be_twin(a->op) < 0 && !(COLLPROF_MPI_POST_MORE & COLLPROF_BIT(a->op))) ||
               (mpi_be_twin(a->op) < 0 && a->in_place)) {
        mpi_be_set_error(ctx, "post: op %d has no non-blocking form here", (int)a->op);
        rc = COLLPROF_ERR_NOT_SUPPORTED;
    } else if (mpi_be_twin(a->op) < 0) {
        mpi_be_call_t c;
        rc = mpi_be_prepare(ctx, a, &c);
        if (rc == COLLPROF_OK) {
            int mrc = mpi_be_post_more(a, &c, r);
            rc = mrc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, c.call, mrc);
        }
    } else {
        collprof_args_t b = *a;
        mpi_be_call_t c;
        b.op = (collprof_op_t)mpi_be_twin(a->op);
        rc = mpi_be_prepare(ctx, &b, &c);
        if (rc == COLLPROF_OK) {
            int mrc = mpi_be_post(&b, &c, r);
            rc = mrc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(ctx, c.call, mrc);
        }
    }
    if (rc != COLLPROF_OK) {
        free(r);
        return rc;
    }
    *req = r;
    return COLLPROF_OK;
}

int mpi_be_wait(void *vctx, void *req)
{
    MPI_Request *r = req;
    int rc = MPI_Wait(r, MPI_STATUS_IGNORE);
    free(r);
    return rc == MPI_SUCCESS ? COLLPROF_OK : mpi_be_mpi_error(vctx, "MPI_Wait", rc);
}
