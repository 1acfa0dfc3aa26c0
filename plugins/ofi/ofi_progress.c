/* completions, waiting and posting of the ofi backend's RMA writes */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "ofi_internal.h"

/* ---- completions ------------------------------------------------------------ */

/*
 * A completion that brings a peer's write (its immediate data), not one of
 * ours.  FI_REMOTE_CQ_DATA alone does not tell: the sockets provider sets it
 * on the initiator's own completion of fi_writedata too (with FI_WRITE, and
 * without FI_REMOTE_WRITE), which counted as data from ourselves and left
 * the write waited for forever.
 */
static int ofi_is_incoming(uint64_t flags)
{
    int ours = (flags & FI_WRITE) && !(flags & FI_REMOTE_WRITE);
    return (flags & FI_REMOTE_CQ_DATA) && !ours;
}

/* an error completion on channel c: a posted send's or recv's fails that op only */
static int ofi_cq_error(ofi_ctx_t *ctx, int c)
{
    struct fi_cq_err_entry ee;
    char buf[128], why[384];
    memset(&ee, 0, sizeof(ee));
    fi_cq_readerr(ctx->cq[c], &ee, 0);
    snprintf(why, sizeof(why), "%s (%s)", fi_strerror(ee.err),
             fi_cq_strerror(ctx->cq[c], ee.prov_errno, ee.err_data, buf, sizeof(buf)));
    if (ee.op_context != NULL) { /* ours are posted without a context */
        ofi_p2p_done(ctx, ee.op_context, 1, why);
        return COLLPROF_OK;
    }
    ofi_set_error(ctx, "completion error on channel %d: %s", c, why);
    return COLLPROF_ERR_BACKEND;
}

/* completions e[0..r): a peer's write counted, one of ours, or a posted send's or recv's */
static int ofi_count(ofi_ctx_t *ctx, const struct fi_cq_data_entry *e, ssize_t r)
{
    for (ssize_t k = 0; k < r; k++) {
        if (ofi_is_incoming(e[k].flags)) {
            unsigned kind = (unsigned)(e[k].data >> 24) & 0xffu;
            unsigned src = (unsigned)e[k].data & 0xffffffu;
            if (kind == 0 || kind >= K_NKINDS || src >= (unsigned)ctx->n) {
                ofi_set_error(ctx, "unexpected remote CQ data 0x%llx",
                              (unsigned long long)e[k].data);
                return COLLPROF_ERR_BACKEND;
            }
            ctx->cnt[kind][src]++;
        } else if (e[k].op_context != NULL) {
            ofi_p2p_done(ctx, e[k].op_context, 0, NULL);
        } else {
            ctx->tx_done++;
        }
    }
    return COLLPROF_OK;
}

/* One round: every channel's completions; on a worker, its queue's posts first (ofi_p2p.c). */
int ofi_progress(ofi_ctx_t *ctx)
{
    struct fi_cq_data_entry e[OFI_CQ_BATCH];
    int got = 0;
    ofi_p2p_poll(ctx);
    for (int c = 0; c < ctx->nep; c++) {
        for (;;) {
            ssize_t r = fi_cq_read(ctx->cq[c], e, OFI_CQ_BATCH);
            if (r == -FI_EAGAIN) {
                break;
            }
            int rc = r == -FI_EAVAIL ? ofi_cq_error(ctx, c)
                     : r < 0         ? ofi_fail(ctx, "fi_cq_read", (long)r)
                                     : ofi_count(ctx, e, r);
            if (rc != COLLPROF_OK) {
                return rc;
            }
            got = 1;
        }
    }
    /* ranks may outnumber cores (and share them with the launcher and PMIx): after a while
     * without news let the peer we wait for run (-B ofi-yield: always by default); sleep: also
     * sleep a little, as a yield under CFS leaves the CPU to no one queued behind (a peer, the
     * softirq thread of the virtual nodes' network) */
    if (got) {
        ctx->idle = 0;
    } else if (ctx->yield_idle && ++ctx->idle >= OFI_SPINS_BEFORE_YIELD) {
        ctx->idle = 0;
        sched_yield();
        if (ctx->yield_idle == 2) {
            struct timespec ts = {0, OFI_IDLE_SLEEP_US * 1000L};
            nanosleep(&ts, NULL);
        }
    }
    return COLLPROF_OK;
}

static int ofi_check_time(ofi_ctx_t *ctx, double t0, const char *what)
{
    if (ofi_now() - t0 > ctx->wait_limit_s) {
        ofi_set_error(ctx, "timed out after %.0f s waiting for %s", ctx->wait_limit_s, what);
        return COLLPROF_ERR_TIMEOUT;
    }
    return COLLPROF_OK;
}

/* one round of progress while waiting (since t0) for what */
static int ofi_wait_more(ofi_ctx_t *ctx, double t0, const char *what)
{
    int rc = ofi_progress(ctx);
    return rc == COLLPROF_OK ? ofi_check_time(ctx, t0, what) : rc;
}

/* wait until `need` more completions of kind from peer arrived, and consume them */
int ofi_wait_from(ofi_ctx_t *ctx, int kind, int peer, uint64_t need)
{
    double t0 = ofi_now();
    while (ctx->cnt[kind][peer] - ctx->used[kind][peer] < need) {
        int rc = ofi_wait_more(ctx, t0, "data from a peer");
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    ctx->used[kind][peer] += need;
    return COLLPROF_OK;
}

int ofi_wait_tx(ofi_ctx_t *ctx)
{
    double t0 = ofi_now();
    while (ctx->tx_done < ctx->tx_posted) {
        int rc = ofi_wait_more(ctx, t0, "local write completions");
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    return COLLPROF_OK;
}

static uint64_t ofi_imm(const ofi_ctx_t *ctx, int kind)
{
    return ((uint64_t)kind << 24) | (uint64_t)ctx->rank;
}

/* What a post that returned r (0, -FI_EAGAIN or an error) means: COLLPROF_OK when it went out,
 * OFI_AGAIN after progress made room (post it again), else the failure (call's, or the wait's:
 * out of time since t0). */
#define OFI_AGAIN 1
static int ofi_posted(ofi_ctx_t *ctx, ssize_t r, const char *call, double t0, const char *room)
{
    if (r == 0) {
        return COLLPROF_OK;
    }
    if (r != -FI_EAGAIN) {
        return ofi_fail(ctx, call, (long)r);
    }
    int rc = ofi_wait_more(ctx, t0, room);
    return rc == COLLPROF_OK ? OFI_AGAIN : rc;
}

/* one fi_writedata, retried while the provider says EAGAIN */
static int ofi_write1(ofi_ctx_t *ctx, int ch, int peer, const void *src, void *desc, size_t len,
                      uint64_t raddr, uint64_t key, int kind)
{
    double t0 = ofi_now();
    int rc;
    do {
        rc = ofi_posted(ctx,
                        fi_writedata(ctx->ep[ch], src, len, desc, ofi_imm(ctx, kind),
                                     ofi_peer_addr(ctx, peer, ch), raddr, key, NULL),
                        "fi_writedata", t0, "room in the transmit queue");
    } while (rc == OFI_AGAIN);
    ctx->tx_posted += rc == COLLPROF_OK;
    return rc;
}

/* one plain fi_writemsg (no remote CQ data) of the direct variant, retried on EAGAIN */
static int ofi_write_plain(ofi_ctx_t *ctx, int ch, int peer, const void *src, void *desc,
                           size_t len, uint64_t raddr, uint64_t key)
{
    struct iovec iov = {.iov_base = (void *)src, .iov_len = len};
    struct fi_rma_iov rma = {.addr = raddr, .len = len, .key = key};
    struct fi_msg_rma msg = {
        .msg_iov = &iov,
        .desc = &desc,
        .iov_count = 1,
        .addr = ofi_peer_addr(ctx, peer, ch),
        .rma_iov = &rma,
        .rma_iov_count = 1,
    };
    double t0 = ofi_now();
    int rc;
    do {
        rc = ofi_posted(ctx, fi_writemsg(ctx->ep[ch], &msg, ctx->direct_flags), "fi_writemsg", t0,
                        "room in the transmit queue");
    } while (rc == OFI_AGAIN);
    ctx->tx_posted += rc == COLLPROF_OK;
    return rc;
}

/* a small control write (READY, BARRIER) with an 8-byte payload into the peer's slot */
static int ofi_signal_at(ofi_ctx_t *ctx, int peer, int kind, uint64_t payload, int slot)
{
    uint64_t raddr = ctx->peer_ctrl_addr[peer] + (uint64_t)slot * 8u;
    uint64_t *src = &ctx->ctrl[ctx->n + peer];
    double t0 = ofi_now();
    *src = payload;
    if (ctx->inject < 8) {
        return ofi_write1(ctx, ctx->nch, peer, src, ctx->ctrl_desc, 8, raddr,
                          ctx->peer_ctrl_key[peer], kind);
    }
    int rc;
    do { /* an inject has no completion: nothing to count */
        rc = ofi_posted(ctx,
                        fi_inject_writedata(ctx->ep[ctx->nch], src, 8, ofi_imm(ctx, kind),
                                            ofi_peer_addr(ctx, peer, ctx->nch), raddr,
                                            ctx->peer_ctrl_key[peer]),
                        "fi_inject_writedata", t0, "room to send a control message");
    } while (rc == OFI_AGAIN);
    return rc;
}

int ofi_signal(ofi_ctx_t *ctx, int peer, int kind, uint64_t payload)
{
    return ofi_signal_at(ctx, peer, kind, payload, ctx->rank);
}

/* direct variant: every write of ours completed (the data are in place), then tell peer */
static int ofi_notify(ofi_ctx_t *ctx, int peer, int kind)
{
    int rc = ofi_wait_tx(ctx);
    return rc == COLLPROF_OK ? ofi_signal_at(ctx, peer, kind, 0, 2 * ctx->n + ctx->rank) : rc;
}

/*
 * A block of len bytes to peer, spread over the channels as the mode says.
 * With post == 0 only counts the writes (the target's expectation); both
 * sides compute the same number from the same length.
 */
static long ofi_block(ofi_ctx_t *ctx, int mode, int peer, const char *src, void *desc, size_t len,
                      uint64_t raddr, uint64_t key, int kind, int post)
{
    size_t part = len, step;
    long nw = 0;
    int ch = 0;
    if (len == 0) {
        return 0;
    }
    if (mode == M_MULTI && ctx->nch > 1) {
        part = (len + (size_t)ctx->nch - 1) / (size_t)ctx->nch;
        part = (part + 63) & ~(size_t)63;
    } else if (mode == M_RR || mode == M_DIRECT) {
        ch = (peer + ctx->rank) % ctx->nch;
    }
    for (size_t off = 0; off < len; off += step) {
        step = len - off < part ? len - off : part;
        for (size_t o2 = 0; o2 < step;) {
            size_t s = step - o2 < ctx->chunk ? step - o2 : ctx->chunk;
            if (post) {
                int rc = mode == M_DIRECT ? ofi_write_plain(ctx, ch, peer, src + off + o2, desc, s,
                                                            raddr + off + o2, key)
                                          : ofi_write1(ctx, ch, peer, src + off + o2, desc, s,
                                                       raddr + off + o2, key, kind);
                if (rc != COLLPROF_OK) {
                    return rc;
                }
            }
            nw++;
            o2 += s;
        }
        if (mode == M_MULTI) {
            ch = (ch + 1) % ctx->nch;
        }
    }
    return nw;
}

/* ---- the exchange engine --------------------------------------------------------- */

ofi_send_t *ofi_add(ofi_ctx_t *ctx, int *ns, int peer, int kind, const void *src, void *desc,
                    size_t len, uint64_t roff)
{
    ofi_send_t *s = &ctx->sends[(*ns)++];
    memset(s, 0, sizeof(*s));
    s->peer = peer;
    s->kind = kind;
    s->need_ready = (kind == K_DATA);
    s->src = src;
    s->desc = desc;
    s->len = len;
    s->roff = roff;
    return s;
}

/*
 * Post sends[0..ns) (each as soon as its peer is READY when it needs to be)
 * into the peers' view of buffer b.  The direct variant's notification of a
 * block follows its writes' local completion (ofi_notify), or with defer is
 * only marked due (s->notify) for ofi_notify_deferred.  Incoming data are
 * waited for by the caller.
 */
static int ofi_post_pass(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns, int defer)
{
    int left = ns;
    double t0 = ofi_now();
    while (left > 0) {
        for (int i = 0; i < ns; i++) {
            ofi_send_t *s = &ctx->sends[i];
            int q = s->peer;
            if (s->posted) {
                continue;
            }
            if (s->need_ready && !ctx->got_ready[q]) {
                if (ctx->cnt[K_READY][q] == ctx->used[K_READY][q]) {
                    continue;
                }
                ctx->used[K_READY][q]++;
                ctx->got_ready[q] = 1;
                ctx->rpayload[q] = __atomic_load_n(&ctx->ctrl[q], __ATOMIC_ACQUIRE);
            }
            /* the READY's payload: where the target's buffer of this call lies (ctx->here) */
            uint64_t roff = s->roff + (!s->to_scratch && ctx->got_ready[q] ? ctx->rpayload[q] : 0);
            uint64_t raddr = (s->to_scratch ? b->peer[q].saddr : b->peer[q].addr) + roff;
            uint64_t key = s->to_scratch ? b->peer[q].skey : b->peer[q].key;
            long r = ofi_block(ctx, mode, q, s->src, s->desc, s->len, raddr, key, s->kind, 1);
            if (r < 0) {
                return (int)r;
            }
            if (mode == M_DIRECT && r > 0) {
                int rc = defer ? COLLPROF_OK : ofi_notify(ctx, q, s->kind);
                if (rc != COLLPROF_OK) {
                    return rc;
                }
                s->notify = defer;
            }
            s->posted = 1;
            left--;
        }
        if (left > 0) {
            int rc = ofi_wait_more(ctx, t0, "peers to be ready");
            if (rc != COLLPROF_OK) {
                return rc;
            }
        }
    }
    return COLLPROF_OK;
}

/* post sends[0..ns) and, for the direct variant, notify each block's target (blocking) */
int ofi_post_all(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns)
{
    return ofi_post_pass(ctx, mode, b, ns, 0);
}

/* post sends[0..ns); the direct variant's notifications are left to ofi_notify_deferred */
int ofi_post_deferred(ofi_ctx_t *ctx, int mode, const ofi_buf_t *b, int ns)
{
    return ofi_post_pass(ctx, mode, b, ns, 1);
}

/*
 * The notifications still due among sends[0..ns).  With wait, once every
 * write of ours completed locally; without, only when one round of
 * progress shows they all have (else they stay due).
 */
int ofi_notify_deferred(ofi_ctx_t *ctx, int ns, int wait)
{
    int due = 0, rc = COLLPROF_OK;
    for (int i = 0; i < ns; i++) {
        due += ctx->sends[i].notify;
    }
    if (due == 0) {
        return COLLPROF_OK;
    }
    if (!wait) {
        rc = ofi_progress(ctx);
        if (rc != COLLPROF_OK || ctx->tx_done < ctx->tx_posted) {
            return rc;
        }
    }
    for (int i = 0; i < ns && rc == COLLPROF_OK; i++) {
        ofi_send_t *s = &ctx->sends[i];
        if (s->notify) {
            rc = ofi_notify(ctx, s->peer, s->kind);
            s->notify = 0;
        }
    }
    return rc;
}

int ofi_expect(ofi_ctx_t *ctx, int mode, int kind, int peer, size_t len)
{
    long nw = ofi_block(ctx, mode, peer, NULL, NULL, len, 0, 0, kind, 0);
    if (mode == M_DIRECT && nw > 0) {
        nw = 1; /* one notification per block */
    }
    return nw > 0 ? ofi_wait_from(ctx, kind, peer, (uint64_t)nw) : COLLPROF_OK;
}

int ofi_ready_all(ofi_ctx_t *ctx, const int *only, uint64_t payload)
{
    for (int q = 0; q < ctx->n; q++) {
        if (q == ctx->rank || (only != NULL && *only != q)) {
            continue;
        }
        int rc = ofi_signal(ctx, q, K_READY, payload + ctx->here);
        if (rc != COLLPROF_OK) {
            return rc;
        }
    }
    return COLLPROF_OK;
}

/*
 * The connections a context's ops use by default made at set-up: to each peer, an 8-byte
 * write from the data channel the pair shares, (peer + rank) % channels (roundrobin's and
 * direct's data, posted sends and recvs), and one from the control channel (READY, barriers),
 * into the peer's notification slot for us, counted as a BARRIER; then each peer's two writes
 * to us waited for.  Connection-oriented providers (tcp;ofi_rxm, verbs;ofi_rxm) open a pair's
 * connection at its first message, a handshake that needs both sides' progress: left to the
 * first op of a context it took 0.1-1 s of that op's time per group under load (a replay's
 * first pass).  The other channels (the multi variant's) still connect at their first use;
 * shm pays one round trip.
 */
int ofi_connect_all(ofi_ctx_t *ctx)
{
    int rc = COLLPROF_OK;
    for (int q = 0; q < ctx->n && rc == COLLPROF_OK; q++) {
        uint64_t raddr = ctx->peer_ctrl_addr[q] + (uint64_t)(2 * ctx->n + ctx->rank) * 8u;
        int chs[2] = {(q + ctx->rank) % ctx->nch, ctx->nch};
        ctx->ctrl[ctx->n + q] = 0;
        for (int k = 0; q != ctx->rank && k < 2 && rc == COLLPROF_OK; k++) {
            rc = ofi_write1(ctx, chs[k], q, &ctx->ctrl[ctx->n + q], ctx->ctrl_desc, 8, raddr,
                            ctx->peer_ctrl_key[q], K_BARRIER);
        }
    }
    if (rc == COLLPROF_OK) {
        rc = ofi_wait_tx(ctx);
    }
    for (int q = 0; q < ctx->n && rc == COLLPROF_OK; q++) {
        rc = q == ctx->rank ? COLLPROF_OK : ofi_wait_from(ctx, K_BARRIER, q, 2);
    }
    return rc;
}
