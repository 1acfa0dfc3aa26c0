/*
 * Posted operations of the nccl backend (the post, wait and group slots, ABI 2.3, collprof
 * --replay): the requests, the point-to-point ops held until the process's next call that is
 * not one (then launched together in one ncclGroupStart/ncclGroupEnd, across every context of
 * the process), a coalesced call's ops (collectives too) held until its end and launched
 * alike, and the wait for one request's event.
 *
 * Why held: on one stream, a send launched alone before the matching receive is launched
 * waits for the peer's receive kernel, and the peer, which also sent first, waits for ours;
 * NCCL's answer is a group call.  The core posts the sends and recvs that must run together
 * (a coalesced call, a run of blocking sends and recvs, the async ops posted before a wait)
 * one after the other and then waits, so holding them until the next call that is not a
 * point-to-point post makes them one group.  Every other call (a wait, a run, a collective's
 * post) launches the held ops first, so they keep their place in the rank's order.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

/* the point-to-point ops posted and not launched yet, of every context, in the order posted */
static nb_req_t *nb_held;
static nb_req_t **nb_held_tail = &nb_held;
static int nb_in_group; /* between group(1) and group(0): collectives are held too */

int nb_grouping(void)
{
    return nb_in_group;
}

/* r joins the held ops, last */
void nb_hold(nb_req_t *r)
{
    r->next = NULL;
    *nb_held_tail = r;
    nb_held_tail = &r->next;
}

/*
 * group(): the trace's coalesced call.  Its begin launches what was held before it (not part
 * of the call), then holds every post, collectives included, until its end, which launches
 * them all in one ncclGroupStart/ncclGroupEnd: NCCL aggregates them as the job's group call.
 */
int nb_group(void *vctx, int begin)
{
    (void)vctx;
    int rc = nb_launch_held(); /* (a failure is in the held ops' requests) */
    nb_in_group = begin != 0;
    return rc;
}

nb_req_t *nb_req_new(nb_ctx_t *ctx, const collprof_args_t *a, int slot)
{
    nb_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        nb_set_error(ctx, "out of memory for a request");
        return NULL;
    }
    cudaError_t e = cudaEventCreate(&r->ev);
    if (e != cudaSuccess) {
        free(r);
        nb_cuda_fail(ctx, "cudaEventCreate (request)", e);
        return NULL;
    }
    r->ctx = ctx;
    r->a = *a;
    r->slot = slot;
    return r;
}

void nb_req_free(nb_req_t *r)
{
    if (r != NULL) {
        cudaEventDestroy(r->ev);
        free(r);
    }
}

/* the communicator point-to-point ops use: the default variant's (created by init) */
static int nb_p2p_slot(nb_ctx_t *ctx)
{
    char want[CP_NCCL_KEY_LEN];
    cp_nccl_variant_key(cp_nccl_plan_find(&nb_plan, NULL), want, sizeof(want));
    for (int s = 0; s < ctx->max_comms; s++) {
        if (ctx->comms[s].live && !ctx->comms[s].broken && !strcmp(ctx->comms[s].key, want)) {
            return s;
        }
    }
    nb_set_error(ctx, "no communicator for point-to-point: the default variant's was finalised "
                      "(more variants than -B nccl-max-comms) or aborted after an error");
    return -1;
}

/* post() of a send (peer_recv -1) or a recv (peer_send -1): checked and held */
int nb_hold_p2p(nb_ctx_t *ctx, const collprof_args_t *a, void **req)
{
    int send = a->peer_recv < 0, peer = send ? a->peer_send : a->peer_recv;
    if ((a->peer_send < 0) == (a->peer_recv < 0) || peer < 0 || peer >= ctx->n) {
        nb_set_error(ctx,
                     "post: a send or a recv needs one peer in 0..%d (peer_send %d, "
                     "peer_recv %d)",
                     ctx->n - 1, a->peer_send, a->peer_recv);
        return COLLPROF_ERR_INVALID;
    }
    if (a->memtype != COLLPROF_MEM_DEVICE) {
        nb_set_error(ctx, "nccl sends and receives device buffers only (memtype %d given)",
                     a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (cp_nccl_dtype(a->dtype) < 0) {
        nb_set_error(ctx, "post: element type %s not offered by NCCL",
                     collprof_dtype_name(a->dtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    int slot = nb_p2p_slot(ctx);
    nb_req_t *r = slot >= 0 ? nb_req_new(ctx, a, slot) : NULL;
    if (r == NULL) {
        return slot < 0 ? COLLPROF_ERR_BACKEND : COLLPROF_ERR_NO_MEMORY;
    }
    nb_hold(r);
    *req = r;
    return COLLPROF_OK;
}

/* every held op's failure: rc and the message of the context it happened on */
static void nb_held_failed(nb_req_t *list, int rc, const char *why)
{
    for (nb_req_t *q = list; q != NULL; q = q->next) {
        q->rc = rc;
        snprintf(q->err, sizeof(q->err), "%s", why);
    }
}

/* a non-blocking group end: each communicator of the group settled (one failure: all fail) */
static int nb_settle_group(nb_req_t *list)
{
    for (nb_req_t *q = list; q != NULL; q = q->next) {
        ncclComm_t comm = q->ctx->comms[q->slot].comm;
        int seen = 0;
        for (nb_req_t *p = list; p != q; p = p->next) {
            seen |= p->ctx->comms[p->slot].comm == comm;
        }
        int rc = seen ? COLLPROF_OK
                      : nb_settle(q->ctx, q->slot, comm, ncclInProgress,
                                  "ncclGroupEnd (posted send/recv)");
        if (rc != COLLPROF_OK) {
            nb_held_failed(list, rc, q->ctx->err);
            return rc;
        }
    }
    return COLLPROF_OK;
}

/* the held ops' NCCL calls inside the group (a collective's through nb_issue); the first
 * failure */
static int nb_held_calls(nb_req_t *list)
{
    for (nb_req_t *q = list; q != NULL; q = q->next) {
        nb_ctx_t *c = q->ctx;
        const collprof_args_t *a = &q->a;
        if (!c->comms[q->slot].live) {
            nb_set_error(c, "its communicator was aborted after an earlier failure");
            nb_held_failed(list, COLLPROF_ERR_BACKEND, c->err);
            return COLLPROF_ERR_BACKEND;
        }
        ncclComm_t comm = c->comms[q->slot].comm;
        if (q->v != NULL) { /* a collective of a coalesced call: its call inside the group */
            int rc = nb_issue(c, q->v, q->slot, a);
            if (rc != COLLPROF_OK) {
                nb_held_failed(list, rc, c->err);
                return rc;
            }
            continue;
        }
        ncclDataType_t dt = (ncclDataType_t)cp_nccl_dtype(a->dtype);
        int send = a->peer_recv < 0;
        ncclResult_t r = send ? ncclSend(a->sendbuf, a->count, dt, a->peer_send, comm, c->stream)
                              : ncclRecv(a->recvbuf, a->count, dt, a->peer_recv, comm, c->stream);
        if (r != ncclSuccess && r != ncclInProgress) {
            int rc = nb_nccl_fail(c, comm, send ? "ncclSend (posted)" : "ncclRecv (posted)", r);
            nb_held_failed(list, rc, c->err);
            return rc;
        }
    }
    return COLLPROF_OK;
}

/*
 * Launch every held op: one ncclGroupStart/ncclGroupEnd around them all (their communicators
 * may differ: NCCL groups across communicators), then each one's event on its stream.  A
 * failure goes to every op of the group (its wait returns it); returns it too.
 */
int nb_launch_held(void)
{
    nb_req_t *list = nb_held;
    if (list == NULL) {
        return COLLPROF_OK;
    }
    nb_held = NULL;
    nb_held_tail = &nb_held;
    ncclResult_t r = ncclGroupStart();
    int rc = r == ncclSuccess ? nb_held_calls(list)
                              : nb_nccl_fail(list->ctx, NULL, "ncclGroupStart (posted)", r);
    if (r == ncclSuccess) {
        r = ncclGroupEnd();
        if (rc == COLLPROF_OK && r == ncclInProgress) {
            rc = nb_settle_group(list);
        } else if (rc == COLLPROF_OK && r != ncclSuccess) {
            rc = nb_nccl_fail(list->ctx, list->ctx->comms[list->slot].comm,
                              "ncclGroupEnd (posted send/recv)", r);
            nb_held_failed(list, rc, list->ctx->err);
        }
    } else {
        nb_held_failed(list, rc, list->ctx->err);
    }
    for (nb_req_t *q = list; q != NULL; q = q->next) {
        q->launched = 1;
        cudaError_t e = q->rc == COLLPROF_OK ? cudaEventRecord(q->ev, q->ctx->stream) : cudaSuccess;
        if (e != cudaSuccess) {
            q->rc = nb_cuda_fail(q->ctx, "cudaEventRecord (posted)", e);
            snprintf(q->err, sizeof(q->err), "%s", q->ctx->err);
        }
    }
    return rc;
}

/* the context goes away: its held ops are dropped (the core waits for them before) */
void nb_drop_held(nb_ctx_t *ctx)
{
    nb_req_t **pp = &nb_held;
    while (*pp != NULL) {
        nb_req_t *q = *pp;
        if (q->ctx == ctx) {
            *pp = q->next;
            nb_req_free(q);
        } else {
            pp = &q->next;
        }
    }
    nb_held_tail = &nb_held;
    while (*nb_held_tail != NULL) {
        nb_held_tail = &(*nb_held_tail)->next;
    }
}

/* wait(): the held ops launched first when it is one of them, then its event polled under
 * the per-operation timeout; the request freed */
int nb_req_wait(void *vctx, void *vreq)
{
    nb_ctx_t *ctx = vctx;
    nb_req_t *r = vreq;
    if (r == NULL) {
        nb_set_error(ctx, "wait: no request");
        return COLLPROF_ERR_INVALID;
    }
    nb_launch_held(); /* its outcome, if it is one of them, is in r */
    int rc = r->rc;
    if (rc != COLLPROF_OK) {
        nb_set_error(ctx, "%s", r->err);
    } else if (!r->ctx->comms[r->slot].live) {
        nb_set_error(ctx, "%s: its communicator was aborted while it was in flight",
                     collprof_op_name(r->a.op));
        rc = COLLPROF_ERR_BACKEND;
    } else {
        r->ctx->spin = 1; /* polled, never slept on: the wait is timed */
        rc = nb_wait_event(r->ctx, r->slot, &r->a, r->ev);
        r->ctx->spin = 0;
        if (rc != COLLPROF_OK && r->ctx != ctx) {
            nb_set_error(ctx, "%s", r->ctx->err);
        }
    }
    nb_req_free(r);
    return rc;
}
