#include "config.h"

/*
 * post() and wait() of the Gloo backend (ABI 2.3): a send or a recv of collprof --replay
 * as a Gloo unbound buffer on the context's pair to the peer, posted on one slot of its own
 * (sends from one rank to another match its recvs in the order posted: Gloo's tcp pair
 * keeps the order of a slot); Gloo's device thread moves the bytes, wait() waits for them.
 *
 * A collective (Gloo's are blocking calls; this Gloo has no non-blocking API) is built in
 * post() on the context's slots of its own (the option-style calls on a tag of its own,
 * 1, 2, ... in the order posted, the same on every rank; an algorithm class on fresh slots of
 * the context's counter) and run by a worker thread of the context, one after the other in
 * the order posted, on the same pairs as the rank's next ops (distinct slots: Gloo's tcp pairs
 * take ops of several slots from several threads, as PyTorch's ProcessGroupGloo runs them);
 * wait() waits until the worker has finished it.
 */

#include "gloo_internal.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gloo/common/error.h>
#include <gloo/types.h>
#include <gloo/transport/unbound_buffer.h>

namespace cpgloo
{

namespace
{

struct GlReq {
    bool coll = false;
    virtual ~GlReq() = default;
};

struct P2pReq : GlReq {
    std::unique_ptr<gloo::transport::UnboundBuffer> buf;
    bool send = false;
};

struct CollReq : GlReq {
    std::unique_ptr<Cached> c;
    bool done = false; /* under the worker's mutex */
    std::string err;
};

} // namespace

/* The worker thread of a context's posted collectives and its queue. */
struct GlAsync {
    std::thread th;
    std::mutex mu;
    std::condition_variable cv, done;
    std::deque<CollReq *> q;
    bool stop = false;

    void loop()
    {
        std::unique_lock<std::mutex> lk(mu);
        for (;;) {
            cv.wait(lk, [this] { return stop || !q.empty(); });
            if (q.empty()) {
                return; /* stopping */
            }
            CollReq *r = q.front();
            q.pop_front();
            lk.unlock();
            std::string err;
            try {
                r->c->fn();
            } catch (const std::exception &e) {
                err = e.what();
            }
            lk.lock();
            r->err = err;
            r->done = true;
            done.notify_all();
        }
    }
};

void gl_async_stop(GlCtx *g)
{
    GlAsync *w = g->async;
    if (w == nullptr) {
        return;
    }
    {
        std::lock_guard<std::mutex> lk(w->mu);
        w->stop = true;
    }
    w->cv.notify_all();
    w->th.join();
    delete w;
    g->async = nullptr;
}

namespace
{

/* Build collective a on the context's slots of its own; the request in r. */
int build_posted(GlCtx *g, const collprof_args_t *a, CollReq *r)
{
    if (a->memtype != COLLPROF_MEM_HOST || (int)a->op < 0 || a->op >= COLLPROF_OP_COUNT ||
        a->count > static_cast<size_t>(std::numeric_limits<int>::max())) {
        set_error(g, "post: a host collective of at most INT_MAX elements only (op %d)",
                  static_cast<int>(a->op));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (collprof_check_layout(a, g->nranks, g->err, sizeof(g->err)) != COLLPROF_OK) {
        return COLLPROF_ERR_INVALID;
    }
    r->coll = true;
    r->c.reset(new Cached);
    r->c->key.op = a->op;
    const uint32_t tag = ++g->post_tag; /* alike on every rank: posts come in the same order */
    g->ctx->resetSlot(g->slot_top);     /* an algorithm class: fresh slots, alike everywhere */
    const int rc = build_dispatch(g, r->c.get(), a, tag);
    g->slot_top = std::max(g->slot_top, g->ctx->currentSlot());
    g->ctx->resetSlot(g->slot_top);
    return rc;
}

int post_coll(GlCtx *g, const collprof_args_t *a, void **req)
{
    std::unique_ptr<CollReq> r(new CollReq);
    try {
        const int rc = build_posted(g, a, r.get());
        if (rc != COLLPROF_OK) {
            return rc;
        }
        if (g->async == nullptr) {
            std::unique_ptr<GlAsync> w(new GlAsync);
            GlAsync *p = w.get();
            w->th = std::thread([p]() { p->loop(); });
            g->async = w.release();
        }
        std::lock_guard<std::mutex> lk(g->async->mu);
        g->async->q.push_back(r.get());
    } catch (const std::exception &e) {
        set_error(g, "post: Gloo %s (%s, count %zu): %s", collprof_op_name(a->op),
                  collprof_dtype_name(a->dtype), a->count, e.what());
        return COLLPROF_ERR_BACKEND;
    }
    g->async->cv.notify_all();
    *req = static_cast<GlReq *>(r.release());
    return COLLPROF_OK;
}

int wait_coll(GlCtx *g, CollReq *r)
{
    std::unique_ptr<CollReq> own(r);
    {
        std::unique_lock<std::mutex> lk(g->async->mu);
        g->async->done.wait(lk, [r] { return r->done; });
    }
    if (!r->err.empty()) {
        set_error(g, "Gloo %s (posted) failed: %s", collprof_op_name(r->c->key.op), r->err.c_str());
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

} // namespace

int gl_post(void *vctx, const collprof_args_t *a, void **req)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (a->op != COLLPROF_OP_SENDRECV) {
        return post_coll(g, a, req);
    }
    const bool send = a->peer_recv < 0;
    const int peer = send ? a->peer_send : a->peer_recv;
    const size_t es = collprof_dtype_size(static_cast<int>(a->dtype));
    if (a->op != COLLPROF_OP_SENDRECV || (a->peer_send < 0) == (a->peer_recv < 0) || es == 0 ||
        peer >= g->nranks || peer == g->rank || a->memtype != COLLPROF_MEM_HOST) {
        set_error(g, "post: only a host send or recv to another rank (op %d, peers %d %d)",
                  static_cast<int>(a->op), a->peer_send, a->peer_recv);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    const size_t bytes = a->count * es;
    void *p = send ? const_cast<void *>(a->sendbuf) : a->recvbuf;
    const uint64_t slot = gloo::Slot::build(kP2pSlotPrefix, 0);
    try {
        std::unique_ptr<P2pReq> r(new P2pReq);
        r->send = send;
        r->buf = g->ctx->createUnboundBuffer(p, bytes);
        if (send) {
            r->buf->send(peer, slot);
        } else {
            r->buf->recv(peer, slot);
        }
        *req = static_cast<GlReq *>(r.release());
    } catch (const std::exception &e) {
        set_error(g, "Gloo %s of %zu B with rank %d failed: %s", send ? "send" : "recv", bytes,
                  peer, e.what());
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

int gl_wait(void *vctx, void *vreq)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    GlReq *q = static_cast<GlReq *>(vreq);
    if (q->coll) {
        return wait_coll(g, static_cast<CollReq *>(q));
    }
    std::unique_ptr<P2pReq> r(static_cast<P2pReq *>(q));
    try {
        if (r->send) {
            r->buf->waitSend(g->ctx->getTimeout());
        } else {
            r->buf->waitRecv(g->ctx->getTimeout());
        }
    } catch (const std::exception &e) {
        set_error(g, "Gloo %s failed: %s", r->send ? "send" : "recv", e.what());
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

} // namespace cpgloo
