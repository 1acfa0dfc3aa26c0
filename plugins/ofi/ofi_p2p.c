/*
 * The ofi backend's posted sends and recvs (post(), collprof --replay) and its worker's queue.
 *
 * A send or a recv is one or more tagged messages (fi_tsend, fi_trecv) of at most ctx->chunk
 * bytes, on the channel (peer + rank) % channels, which both sides of a pair name alike.  The
 * tag is the sender's rank (bits 40 and up) and the pair's message number (the low 40 bits):
 * the sender counts its messages to the peer, the receiver its messages from it, each in the
 * order posted, so the n-th send from one rank to another matches that rank's n-th recv from
 * it whatever order the provider delivers them in (no FI_DIRECTED_RECV needed: the tag names
 * the source).  A message too large for one (over ctx->chunk, 1 GiB at most) is several, as
 * many on both sides when their sizes agree.
 *
 * Everything here runs on the context's worker (ofi_post.c), the only thread that touches
 * the fabric while it exists, from its progress rounds (ofi_progress calls ofi_p2p_poll
 * first): the posts queued since the last round are taken (collectives to the worker's list,
 * sends and recvs posted at once), posts the provider refused for room (-FI_EAGAIN) are tried
 * again, and a completion with our request as its context counts for it.  A request is
 * published to its waiter (ofi_p2p_finish) as soon as it completes, also in the middle of a
 * collective the worker runs: a rank waiting on a recv never waits for its collectives.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "ofi_internal.h"

#define OFI_SEQ_MASK ((UINT64_C(1) << OFI_TAG_SEQ_BITS) - 1u)

/* Publish r to its waiter (or free it when the waiter gave up on it). */
void ofi_p2p_finish(ofi_ctx_t *ctx, ofi_req_t *r)
{
    ofi_post_t *w = ctx->post;
    pthread_mutex_lock(&w->mu);
    if (r->orphan) {
        free(r);
    } else {
        r->done = 1;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
}

/* r is over (all its messages complete, or it failed and none is outstanding): off the list */
static void ofi_p2p_check(ofi_ctx_t *ctx, ofi_req_t *r)
{
    ofi_post_t *w = ctx->post;
    if (r->ndone < r->nposted || (r->rc == COLLPROF_OK && r->nposted < r->nchunks)) {
        return;
    }
    for (ofi_req_t **pp = &w->p2p; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    }
    ofi_p2p_finish(ctx, r);
}

static void ofi_p2p_fail(ofi_req_t *r, const char *what, const char *why)
{
    if (r->rc == COLLPROF_OK) {
        r->rc = COLLPROF_ERR_BACKEND;
        snprintf(r->err, sizeof(r->err), "%s of %zu B %s rank %d failed: %s", what, r->len,
                 r->send ? "to" : "from", r->peer, why);
    }
}

/* Post r's messages not yet posted, until the provider has no room for the next. */
static void ofi_p2p_try(ofi_ctx_t *ctx, ofi_req_t *r)
{
    while (r->rc == COLLPROF_OK && r->nposted < r->nchunks) {
        size_t off = (size_t)r->nposted * ctx->chunk;
        size_t len = r->len - off < ctx->chunk ? r->len - off : ctx->chunk;
        uint64_t tag =
            r->src << OFI_TAG_SEQ_BITS | ((r->seq + (uint64_t)r->nposted) & OFI_SEQ_MASK);
        struct fid_ep *ep = ctx->ep[r->ch];
        ssize_t rc = r->send ? fi_tsend(ep, r->buf + off, len, r->desc,
                                        ofi_peer_addr(ctx, r->peer, r->ch), tag, r)
                             : fi_trecv(ep, r->buf + off, len, r->desc, FI_ADDR_UNSPEC, tag, 0, r);
        if (rc == -FI_EAGAIN) {
            return; /* again at the next round */
        }
        if (rc != 0) {
            ofi_p2p_fail(r, r->send ? "fi_tsend" : "fi_trecv", fi_strerror((int)-rc));
            break;
        }
        r->nposted++;
    }
    ofi_p2p_check(ctx, r);
}

/* The posts queued since the last round: collectives to the worker's list, sends and recvs
 * posted. */
static void ofi_p2p_admit(ofi_ctx_t *ctx)
{
    ofi_post_t *w = ctx->post;
    pthread_mutex_lock(&w->mu);
    ofi_req_t *r = w->in_head;
    w->in_head = w->in_tail = NULL;
    __atomic_store_n(&w->inbox, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->mu);
    while (r != NULL) {
        ofi_req_t *next = r->next;
        r->next = NULL;
        if (r->coll) {
            if (w->coll_tail != NULL) {
                w->coll_tail->next = r;
            } else {
                w->coll = r;
            }
            w->coll_tail = r;
        } else {
            r->next = w->p2p;
            w->p2p = r;
            ofi_p2p_try(ctx, r);
        }
        r = next;
    }
}

/*
 * The sends and recvs whose waits gave up (orphans): failed (none of their messages posted from
 * now on), and those in the provider cancelled (fi_cancel, once for each, the context naming
 * them all): a cancelled one completes with FI_ECANCELED (ofi_cq_error), and the last frees
 * the request, which no longer holds a recv buffer of the replay in the provider.  One the
 * provider cannot cancel (a send under way) completes, or is freed at the finalize.
 */
static void ofi_p2p_cancel(ofi_ctx_t *ctx)
{
    ofi_post_t *w = ctx->post;
    __atomic_store_n(&w->cancel, 0, __ATOMIC_RELAXED);
    for (ofi_req_t *r = w->p2p, *next; r != NULL; r = next) {
        next = r->next; /* (ofi_p2p_check may free r) */
        pthread_mutex_lock(&w->mu);
        int orphan = r->orphan;
        pthread_mutex_unlock(&w->mu);
        if (!orphan || r->cancelled) {
            continue;
        }
        r->cancelled = 1;
        ofi_p2p_fail(r, r->send ? "send" : "recv", "its wait timed out: cancelled");
        for (int k = r->ndone; k < r->nposted; k++) {
            (void)fi_cancel(&ctx->ep[r->ch]->fid, r);
        }
        ofi_p2p_check(ctx, r);
    }
}

void ofi_p2p_poll(ofi_ctx_t *ctx)
{
    ofi_post_t *w = ctx->post;
    if (w == NULL) {
        return; /* no worker: run() on the calling thread */
    }
    if (__atomic_load_n(&w->inbox, __ATOMIC_ACQUIRE)) {
        ofi_p2p_admit(ctx);
    }
    if (__atomic_load_n(&w->cancel, __ATOMIC_ACQUIRE)) {
        ofi_p2p_cancel(ctx);
    }
    for (ofi_req_t *r = w->p2p, *next; r != NULL; r = next) {
        next = r->next; /* (ofi_p2p_try may take r off the list) */
        if (r->nposted < r->nchunks && r->rc == COLLPROF_OK) {
            ofi_p2p_try(ctx, r);
        }
    }
}

void ofi_p2p_done(ofi_ctx_t *ctx, void *op_context, int failed, const char *why)
{
    ofi_req_t *r = op_context;
    r->ndone++;
    if (failed) {
        ofi_p2p_fail(r, r->send ? "send" : "recv", why);
    }
    ofi_p2p_check(ctx, r);
}

/* r failed with rc (why): published */
static void ofi_p2p_abort(ofi_ctx_t *ctx, ofi_req_t *r, int rc, const char *why)
{
    r->rc = rc;
    snprintf(r->err, sizeof(r->err), "%s", why);
    ofi_p2p_finish(ctx, r);
}

/*
 * The progress failed (rc, why): so does every op in flight or queued, and every one posted
 * from now on (the worker calls this again each round and no longer touches the fabric: no
 * completion of a send or recv still posted in the provider is read after its waiter freed it).
 */
void ofi_p2p_fail_all(ofi_ctx_t *ctx, int rc, const char *why)
{
    ofi_post_t *w = ctx->post;
    pthread_mutex_lock(&w->mu);
    ofi_req_t *in = w->in_head;
    w->in_head = w->in_tail = NULL;
    __atomic_store_n(&w->inbox, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->mu);
    while (w->p2p != NULL) {
        ofi_req_t *r = w->p2p;
        w->p2p = r->next;
        ofi_p2p_abort(ctx, r, rc, why);
    }
    while (w->coll != NULL) {
        ofi_req_t *r = w->coll;
        w->coll = r->next;
        ofi_p2p_abort(ctx, r, rc, why);
    }
    w->coll_tail = NULL;
    while (in != NULL) {
        ofi_req_t *r = in;
        in = r->next;
        ofi_p2p_abort(ctx, r, rc, why);
    }
}
