#include "config.h"

/*
 * post() and wait() of the Gloo backend (ABI 2.3): a send or a recv of collprof --replay
 * as a Gloo unbound buffer on the context's pair to the peer, posted on one slot of its own
 * (sends from one rank to another match its recvs in the order posted: Gloo's tcp pair
 * keeps the order of a slot); Gloo's device thread moves the bytes, wait() waits for them.
 * Collectives are not posted (Gloo's are blocking calls): the core runs them at once.
 */

#include "gloo_internal.h"

#include <cstring>
#include <memory>

#include <gloo/common/error.h>
#include <gloo/types.h>
#include <gloo/transport/unbound_buffer.h>

namespace cpgloo
{

namespace
{

struct P2pReq {
    std::unique_ptr<gloo::transport::UnboundBuffer> buf;
    bool send = false;
};

} // namespace

int gl_post(void *vctx, const collprof_args_t *a, void **req)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
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
        *req = r.release();
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
    std::unique_ptr<P2pReq> r(static_cast<P2pReq *>(vreq));
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
