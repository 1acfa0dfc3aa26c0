#include "config.h"

/*
 * The Gloo plugin's builders (gloo_internal.h): one per operation, instantiated per dtype;
 * each makes c->fn, one run of the operation, from Gloo's option-style calls or its
 * algorithm classes (the variants), with the buffers bound once.
 */

#include "gloo_internal.h"

#include <cstring>

#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_bcube.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/barrier_all_to_one.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/scatter.h>
#include <gloo/types.h>

namespace cpgloo
{
namespace
{

/* ---- reductions ------------------------------------------------------------ */

using OptFunc = void (*)(void *, const void *, const void *, size_t);

template <typename T> OptFunc opt_reduce(collprof_redop_t r)
{
    switch (r) {
    case COLLPROF_REDOP_SUM: return static_cast<OptFunc>(&gloo::sum<T>);
    case COLLPROF_REDOP_PROD: return static_cast<OptFunc>(&gloo::product<T>);
    case COLLPROF_REDOP_MIN: return static_cast<OptFunc>(&gloo::min<T>);
    case COLLPROF_REDOP_MAX: return static_cast<OptFunc>(&gloo::max<T>);
    default: return nullptr;
    }
}

template <typename T> const gloo::ReductionFunction<T> *class_reduce(collprof_redop_t r)
{
    switch (r) {
    case COLLPROF_REDOP_SUM: return gloo::ReductionFunction<T>::sum;
    case COLLPROF_REDOP_PROD: return gloo::ReductionFunction<T>::product;
    case COLLPROF_REDOP_MIN: return gloo::ReductionFunction<T>::min;
    case COLLPROF_REDOP_MAX: return gloo::ReductionFunction<T>::max;
    default: return nullptr;
    }
}

/* ---- builders: one per operation, instantiated per dtype ----------------------- */

/* What every builder needs: the arguments, typed, and where the result goes. */
template <typename T> struct Build {
    GlCtx *g;
    Cached *c;
    const collprof_args_t *a;
    std::shared_ptr<gloo::Context> base;
    int n, rank;
    size_t count, blk;
    bool ip;
    T *rbuf, *sbuf;
    GlVariant v;
    uint32_t tag; /* the option-style calls' (0: Gloo's default) */

    Build(GlCtx *g_, Cached *c_, const collprof_args_t *a_, uint32_t tag_)
        : g(g_), c(c_), a(a_), base(g_->ctx), n(g_->nranks), rank(g_->rank), count(a_->count),
          blk(a_->count / static_cast<size_t>(g_->nranks)), ip(a_->in_place != 0),
          rbuf(static_cast<T *>(a_->recvbuf)),
          sbuf(ip ? rbuf : static_cast<T *>(const_cast<void *>(a_->sendbuf))),
          v(g_->variant[a_->op]), tag(tag_)
    {
    }
    int cnt() const
    {
        return static_cast<int>(count);
    }
    /* c->fn becomes one run of an algorithm class (kept alive by c) */
    int run_alg(std::shared_ptr<gloo::Algorithm> alg) const
    {
        c->holders.push_back(alg);
        gloo::Algorithm *p = alg.get();
        c->fn = [p]() { p->run(); };
        return COLLPROF_OK;
    }
    /* c->fn becomes one call f(*o) of an option-style function */
    template <typename O, typename F> int run_opts(std::shared_ptr<O> o, F f) const
    {
        if (tag != 0) { /* a posted collective: slots of its own beside run()'s */
            o->setTag(tag);
        }
        c->holders.push_back(o);
        c->fn = [o, f]() { f(*o); };
        return COLLPROF_OK;
    }
    /* a zeroed scratch buffer of `bytes`, owned by the cache entry */
    T *scratch(size_t bytes) const
    {
        c->scratch.assign(bytes, 0);
        return reinterpret_cast<T *>(c->scratch.data());
    }
};

template <typename T> int not_applicable(const Build<T> &b)
{
    set_error(b.g, "%s: variant not applicable", collprof_op_name(b.a->op));
    return COLLPROF_ERR_NOT_SUPPORTED;
}

template <typename T> int build_allreduce(const Build<T> &b)
{
    if (b.v == GV_DEFAULT || b.v == GV_OPT_BCUBE) {
        auto o = std::make_shared<gloo::AllreduceOptions>(b.base);
        if (!b.ip) {
            o->setInput(b.sbuf, b.count);
        }
        o->setOutput(b.rbuf, b.count);
        o->setReduceFunction(opt_reduce<T>(b.a->redop));
        o->setAlgorithm(b.v == GV_OPT_BCUBE ? gloo::AllreduceOptions::Algorithm::BCUBE
                                            : gloo::AllreduceOptions::Algorithm::RING);
        return b.run_opts(o, [](gloo::AllreduceOptions &x) { gloo::allreduce(x); });
    }
    std::vector<T *> ptrs{b.rbuf};
    auto fn = class_reduce<T>(b.a->redop);
    std::shared_ptr<gloo::Algorithm> alg;
    switch (b.v) {
    case GV_RING: alg = std::make_shared<gloo::AllreduceRing<T>>(b.base, ptrs, b.cnt(), fn); break;
    case GV_RING_CHUNKED:
        alg = std::make_shared<gloo::AllreduceRingChunked<T>>(b.base, ptrs, b.cnt(), fn);
        break;
    case GV_HALVING_DOUBLING:
        alg = std::make_shared<gloo::AllreduceHalvingDoubling<T>>(b.base, ptrs, b.cnt(), fn);
        break;
    case GV_BCUBE:
        alg = std::make_shared<gloo::AllreduceBcube<T>>(b.base, ptrs, b.cnt(), fn);
        break;
    default: return not_applicable(b);
    }
    b.run_alg(alg);
    if (!b.ip) {
        /* the classes reduce in place: start from a copy of the input */
        gloo::Algorithm *p = alg.get();
        T *rbuf = b.rbuf, *sbuf = b.sbuf;
        size_t bytes = b.count * sizeof(T);
        b.c->fn = [p, rbuf, sbuf, bytes]() {
            memcpy(static_cast<void *>(rbuf), sbuf, bytes);
            p->run();
        };
    }
    return COLLPROF_OK;
}

template <typename T> int build_allgather(const Build<T> &b)
{
    auto o = std::make_shared<gloo::AllgatherOptions>(b.base);
    if (!b.ip) { /* in place: no input, this rank's block already sits in recvbuf */
        o->setInput(b.sbuf, b.blk);
    }
    o->setOutput(b.rbuf, b.count);
    return b.run_opts(o, [](gloo::AllgatherOptions &x) { gloo::allgather(x); });
}

template <typename T> int build_reducescatter(const Build<T> &b)
{
    const size_t count = b.count, blk = b.blk, es = sizeof(T);
    T *work = b.ip ? b.rbuf : b.scratch(count * es);
    std::vector<T *> ptrs{work};
    std::vector<int> recvElems(static_cast<size_t>(b.n), static_cast<int>(blk));
    auto alg = std::make_shared<gloo::ReduceScatterHalvingDoubling<T>>(
        b.base, ptrs, b.cnt(), recvElems, class_reduce<T>(b.a->redop));
    b.run_alg(alg); /* in place: the result lands in the first count/n */
    if (!b.ip) {
        gloo::Algorithm *p = alg.get();
        T *rbuf = b.rbuf, *sbuf = b.sbuf;
        b.c->fn = [p, work, rbuf, sbuf, count, blk, es]() {
            memcpy(static_cast<void *>(work), sbuf, count * es);
            p->run();
            memcpy(static_cast<void *>(rbuf), work, blk * es);
        };
    }
    return COLLPROF_OK;
}

/* c->fn: f(*o), after copying `bytes` of recvbuf to in when in place (Gloo needs distinct
 * input and output) */
template <typename T, typename O, typename F>
int run_staged(const Build<T> &b, std::shared_ptr<O> o, T *in, size_t bytes, F f)
{
    b.run_opts(o, f);
    if (b.ip) {
        T *rbuf = b.rbuf;
        b.c->fn = [o, f, in, rbuf, bytes]() {
            memcpy(static_cast<void *>(in), rbuf, bytes);
            f(*o);
        };
    }
    return COLLPROF_OK;
}

template <typename T> int build_alltoall(const Build<T> &b)
{
    auto o = std::make_shared<gloo::AlltoallOptions>(b.base);
    T *in = b.ip ? b.scratch(b.count * sizeof(T)) : b.sbuf;
    o->setInput(in, b.count);
    o->setOutput(b.rbuf, b.count);
    return run_staged(b, o, in, b.count * sizeof(T),
                      [](gloo::AlltoallOptions &x) { gloo::alltoall(x); });
}

template <typename T> int build_alltoallv(const Build<T> &b)
{
    /* Gloo takes per-rank counts and packs blocks back to back:
     * displacements must be the prefix sums of the counts. */
    const collprof_args_t *a = b.a;
    const size_t *sc = b.ip ? a->recvcounts : a->sendcounts;
    const size_t *sd = b.ip ? a->rdispls : a->sdispls;
    std::vector<int64_t> sce, rce;
    size_t stot = 0, rtot = 0;
    for (int i = 0; i < b.n; i++) {
        if (sd[i] != stot || a->rdispls[i] != rtot) {
            set_error(b.g,
                      "alltoallv: Gloo needs packed displacements (prefix sums of the "
                      "counts); rank %d has sdispls[%d]=%zu rdispls[%d]=%zu",
                      b.rank, i, sd[i], i, a->rdispls[i]);
            return COLLPROF_ERR_NOT_SUPPORTED;
        }
        sce.push_back(static_cast<int64_t>(sc[i]));
        rce.push_back(static_cast<int64_t>(a->recvcounts[i]));
        stot += sc[i];
        rtot += a->recvcounts[i];
    }
    auto o = std::make_shared<gloo::AlltoallvOptions>(b.base);
    T *in = b.ip ? b.scratch(std::max<size_t>(stot, 1) * sizeof(T)) : b.sbuf;
    o->setInput(in, sce);
    o->setOutput(b.rbuf, rce);
    return run_staged(b, o, in, stot * sizeof(T),
                      [](gloo::AlltoallvOptions &x) { gloo::alltoallv(x); });
}

template <typename T> int build_allgatherv(const Build<T> &b)
{
    /* Gloo packs rank r's block of counts[r] right after rank r-1's */
    const collprof_args_t *a = b.a;
    std::vector<size_t> counts;
    size_t tot = 0;
    for (int i = 0; i < b.n; i++) {
        if (a->rdispls[i] != tot) {
            set_error(b.g,
                      "allgatherv: Gloo needs packed displacements (prefix sums of the counts); "
                      "rdispls[%d]=%zu",
                      i, a->rdispls[i]);
            return COLLPROF_ERR_NOT_SUPPORTED;
        }
        counts.push_back(a->recvcounts[i]);
        tot += a->recvcounts[i];
    }
    auto o = std::make_shared<gloo::AllgathervOptions>(b.base);
    if (!b.ip) { /* in place: no input, this rank's block already sits at its offset */
        o->setInput(b.sbuf, a->recvcounts[b.rank]);
    }
    o->setOutput(b.rbuf, counts);
    return b.run_opts(o, [](gloo::AllgathervOptions &x) { gloo::allgatherv(x); });
}

template <typename T> int build_broadcast(const Build<T> &b)
{
    /* one buffer: the root's input is in recvbuf */
    if (b.v == GV_ONE_TO_ALL) {
        std::vector<T *> ptrs{b.rbuf};
        return b.run_alg(
            std::make_shared<gloo::BroadcastOneToAll<T>>(b.base, ptrs, b.count, b.a->root, 0));
    }
    auto o = std::make_shared<gloo::BroadcastOptions>(b.base);
    o->setOutput(b.rbuf, b.count);
    o->setRoot(b.a->root);
    return b.run_opts(o, [](gloo::BroadcastOptions &x) { gloo::broadcast(x); });
}

template <typename T> int build_reduce(const Build<T> &b)
{
    auto o = std::make_shared<gloo::ReduceOptions>(b.base);
    if (!b.ip) {
        o->setInput(b.sbuf, b.count);
    }
    /* every rank needs the output: Gloo's ring reduce-scatters through it */
    o->setOutput(b.rbuf, b.count);
    o->setRoot(b.a->root);
    o->setReduceFunction(opt_reduce<T>(b.a->redop));
    return b.run_opts(o, [](gloo::ReduceOptions &x) { gloo::reduce(x); });
}

template <typename T> int build_gather(const Build<T> &b)
{
    auto o = std::make_shared<gloo::GatherOptions>(b.base);
    /* in place (every rank): this rank's block of recvbuf is the input */
    o->setInput(b.ip ? b.rbuf + static_cast<size_t>(b.rank) * b.blk : b.sbuf, b.blk);
    if (b.rank == b.a->root) {
        o->setOutput(b.rbuf, b.count);
    }
    o->setRoot(b.a->root);
    return b.run_opts(o, [](gloo::GatherOptions &x) { gloo::gather(x); });
}

template <typename T> int build_scatter(const Build<T> &b)
{
    auto o = std::make_shared<gloo::ScatterOptions>(b.base);
    if (b.rank == b.a->root) {
        std::vector<T *> ins;
        for (int i = 0; i < b.n; i++) {
            ins.push_back(b.sbuf + static_cast<size_t>(i) * b.blk);
        }
        o->setInputs(ins, b.blk);
    }
    /* in place: every rank receives its block at rank*count/n (the root's
     * block is copied onto itself) */
    o->setOutput(b.ip ? b.rbuf + static_cast<size_t>(b.rank) * b.blk : b.rbuf, b.blk);
    o->setRoot(b.a->root);
    return b.run_opts(o, [](gloo::ScatterOptions &x) { gloo::scatter(x); });
}

template <typename T> int build_barrier(const Build<T> &b)
{
    if (b.v == GV_ALL_TO_ALL) {
        return b.run_alg(std::make_shared<gloo::BarrierAllToAll>(b.base));
    }
    if (b.v == GV_ALL_TO_ONE) {
        return b.run_alg(std::make_shared<gloo::BarrierAllToOne>(b.base, 0));
    }
    auto o = std::make_shared<gloo::BarrierOptions>(b.base);
    return b.run_opts(o, [](gloo::BarrierOptions &x) { gloo::barrier(x); });
}

template <typename T> int build_sendrecv(const Build<T> &b)
{
    const int ps = b.a->peer_send, pr = b.a->peer_recv, rank = b.rank;
    const size_t bytes = b.count * sizeof(T);
    const bool ip = b.ip;
    T *rbuf = b.rbuf, *sbuf = b.sbuf;
    if ((ps == rank) != (pr == rank)) {
        set_error(b.g, "sendrecv: Gloo has no pair to self (send %d, recv %d on rank %d)", ps, pr,
                  rank);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (ps == rank) {
        b.c->fn = [rbuf, sbuf, bytes]() {
            if (rbuf != sbuf) {
                memcpy(static_cast<void *>(rbuf), sbuf, bytes);
            }
        };
        return COLLPROF_OK;
    }
    void *src = ip ? static_cast<void *>(b.scratch(std::max<size_t>(bytes, 1))) : sbuf;
    auto &ctx = b.g->ctx;
    std::shared_ptr<gloo::transport::UnboundBuffer> sb(ctx->createUnboundBuffer(src, bytes));
    std::shared_ptr<gloo::transport::UnboundBuffer> rb(ctx->createUnboundBuffer(rbuf, bytes));
    b.c->holders.push_back(sb);
    b.c->holders.push_back(rb);
    const uint64_t slot = gloo::Slot::build(kSendrecvSlotPrefix, 0);
    auto timeout = ctx->getTimeout();
    gloo::transport::UnboundBuffer *s = sb.get(), *r = rb.get();
    b.c->fn = [s, r, src, rbuf, bytes, ip, ps, pr, slot, timeout]() {
        if (ip) {
            memcpy(src, rbuf, bytes);
        }
        r->recv(pr, slot);
        s->send(ps, slot);
        s->waitSend(timeout);
        r->waitRecv(timeout);
    };
    return COLLPROF_OK;
}

/* Build c->fn for args a.  Throws on Gloo errors; returns a status for
 * combinations it refuses (message in ctx->err). */
template <typename T> int build(GlCtx *g, Cached *c, const collprof_args_t *a, uint32_t tag)
{
    const Build<T> b(g, c, a, tag);
    switch (a->op) {
    case COLLPROF_OP_ALLREDUCE: return build_allreduce(b);
    case COLLPROF_OP_ALLGATHER: return build_allgather(b);
    case COLLPROF_OP_REDUCESCATTER: return build_reducescatter(b);
    case COLLPROF_OP_ALLTOALL: return build_alltoall(b);
    case COLLPROF_OP_ALLTOALLV: return build_alltoallv(b);
    case COLLPROF_OP_ALLGATHERV: return build_allgatherv(b);
    case COLLPROF_OP_BROADCAST: return build_broadcast(b);
    case COLLPROF_OP_REDUCE: return build_reduce(b);
    case COLLPROF_OP_GATHER: return build_gather(b);
    case COLLPROF_OP_SCATTER: return build_scatter(b);
    case COLLPROF_OP_BARRIER: return build_barrier(b);
    case COLLPROF_OP_SENDRECV: return build_sendrecv(b);
    default: return not_applicable(b);
    }
}

} // namespace

int build_dispatch(GlCtx *g, Cached *c, const collprof_args_t *a, uint32_t tag)
{
    switch (a->dtype) {
    case COLLPROF_DTYPE_INT8: return build<int8_t>(g, c, a, tag);
    case COLLPROF_DTYPE_UINT8: return build<uint8_t>(g, c, a, tag);
    case COLLPROF_DTYPE_INT32: return build<int32_t>(g, c, a, tag);
    case COLLPROF_DTYPE_UINT32: return build<uint32_t>(g, c, a, tag);
    case COLLPROF_DTYPE_INT64: return build<int64_t>(g, c, a, tag);
    case COLLPROF_DTYPE_UINT64: return build<uint64_t>(g, c, a, tag);
    case COLLPROF_DTYPE_FLOAT16: return build<gloo::float16>(g, c, a, tag);
    case COLLPROF_DTYPE_FLOAT32: return build<float>(g, c, a, tag);
    case COLLPROF_DTYPE_FLOAT64: return build<double>(g, c, a, tag);
    default:
        set_error(g, "dtype %s is not supported by Gloo", collprof_dtype_name(a->dtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
}

} // namespace cpgloo
