/*
 * What the Gloo plugin's files share: gloo_backend.cc (entry points, query, the device,
 * init/finalize, slots, run), gloo_ops.cc (one builder per operation), gloo_mesh.cc (the
 * full mesh over the host's out-of-band channel), gloo_filter.cc (the pair listeners' socket
 * filters), gloo_p2p.cc (post() and wait(): sends, recvs and posted collectives) and
 * gloo_util.cc (the error buffer and set_error).  Internal to plugins/gloo.
 *
 * Calls go down only, top to bottom: gloo_backend.cc > gloo_p2p.cc > gloo_ops.cc >
 * gloo_mesh.cc > gloo_filter.cc > gloo_util.cc.
 */
#ifndef COLLPROF_GLOO_INTERNAL_H
#define COLLPROF_GLOO_INTERNAL_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include <collprof/plugin_util.h>

namespace cpgloo
{

/* A gloo::Context whose pairs are created in rank order and connected to the addresses that
 * the other ranks published for this rank (gloo_mesh.cc). */
class MeshContext : public gloo::Context
{
  public:
    MeshContext(int r, int n) : gloo::Context(r, n)
    {
    }

    void resetSlot(int slot)
    {
        slot_ = slot;
    }

    int currentSlot() const
    {
        return slot_;
    }

    /* How the pairs' addresses went round (for the log). */
    std::string how;

    /* Which try of the mesh this is (gl_connect_mesh), from 1. */
    int attempt = 1;

    /* Create a pair per peer on dev, exchange their addresses over the host's channel and
     * connect them all; then every rank learns whether every pair connected (one more
     * allgather).  Returns a collprof status; msg gets the reason on failure, and again is
     * set (alike on every rank) when a fresh mesh is worth trying: a pair's connect was
     * refused, reset or closed by the other end, as when a foreign connection took the peer's
     * listener first (a Gloo with a listener per pair accepts whatever connects first and closes
     * it). */
    int connect(const collprof_host_t *host, std::shared_ptr<gloo::transport::Device> &dev,
                std::string &msg, bool &again);
};

constexpr size_t kErrLen = 512;

/* Slot prefix for sendrecv (Gloo's own prefixes are 0x01..0x08). */
constexpr uint8_t kSendrecvSlotPrefix = 0x5c;
/* Slot prefix for the posted sends and recvs (post(), gloo_p2p.cc). */
constexpr uint8_t kP2pSlotPrefix = 0x5d;

/* gl_variants[v - 1] describes variant v (gloo_backend.cc) */
enum GlVariant {
    GV_DEFAULT = 0,
    GV_RING,
    GV_RING_CHUNKED,
    GV_HALVING_DOUBLING,
    GV_BCUBE,
    GV_OPT_BCUBE,
    GV_ONE_TO_ALL,
    GV_ALL_TO_ALL,
    GV_ALL_TO_ONE,
    GV_COUNT
};

/* ---- cached operation ----------------------------------------------------- */

struct CacheKey {
    int op = -1, variant = -1, dtype = -1, redop = -1, root = -1, in_place = -1;
    size_t count = 0;
    const void *sendbuf = nullptr;
    void *recvbuf = nullptr;
    std::vector<size_t> a2av; /* alltoallv/allgatherv counts and displacements */
    /* the part that is the same on every rank */
    bool sameGlobal(const CacheKey &o) const
    {
        return op == o.op && variant == o.variant && dtype == o.dtype && redop == o.redop &&
               root == o.root && in_place == o.in_place && count == o.count;
    }
    bool operator==(const CacheKey &o) const
    {
        return op == o.op && variant == o.variant && dtype == o.dtype && redop == o.redop &&
               root == o.root && in_place == o.in_place && count == o.count &&
               sendbuf == o.sendbuf && recvbuf == o.recvbuf && a2av == o.a2av;
    }
};

struct Cached {
    CacheKey key;
    std::vector<char> scratch;                  /* owned before fn so it outlives it */
    std::vector<std::shared_ptr<void>> holders; /* algorithm / options objects */
    std::function<void()> fn;                   /* one operation */
};

struct GlAsync; /* the worker of the posted collectives (gloo_p2p.cc) */

struct GlCtx {
    const collprof_host_t *host = nullptr;
    int rank = 0, nranks = 1;
    std::shared_ptr<gloo::transport::Device> dev;
    std::shared_ptr<MeshContext> ctx;
    GlVariant variant[COLLPROF_OP_COUNT] = {};
    std::unique_ptr<Cached> cache[COLLPROF_OP_COUNT];
    /* slots: see build_cached() */
    CacheKey last_global[COLLPROF_OP_COUNT];
    int last_slot[COLLPROF_OP_COUNT] = {};
    int slot_top = 0;
    const char *why = "";     /* how the device's interface was chosen */
    GlAsync *async = nullptr; /* started by the first posted collective */
    uint32_t post_tag = 0;    /* the tag of the last posted collective (run()'s: 0) */
    char err[kErrLen] = "";
};

/* ---- the pair listeners' filters (gloo_filter.cc) ---- */

constexpr int kV4 = 11;                  /* IPv4 addresses a LocalAddrs holds */
constexpr int kV6 = 3;                   /* IPv6 addresses */
constexpr uint8_t kLocalMany4 = 1u << 0; /* more IPv4 addresses than kV4, or unknown */
constexpr uint8_t kLocalMany6 = 1u << 1; /* more IPv6 addresses than kV6, or unknown */
constexpr uint8_t kLocalOff = 1u << 2;   /* COLLPROF_GLOO_FILTER=0 on this rank */

/* A rank's interface addresses (getifaddrs), the same size on every rank (one allgather). */
struct LocalAddrs {
    uint8_t n4, n6, flags, pad;
    uint32_t v4[kV4]; /* network order */
    uint8_t v6[kV6][16];
};

/* This rank's record. */
void local_addrs(LocalAddrs &me);

/* The port of an AF_INET or AF_INET6 address, in network order. */
uint16_t port_of(const sockaddr_storage &ss);

/* The fd the next socket is likely to get (a hint for find_listener); -1 when unknown. */
int lowest_free_fd();

/* The listening socket of the pair whose Gloo address is pair_addr (hint tried first, then
 * /proc/self/fd); -1 when there is none or the Gloo has a device listener (a sequence number). */
int find_listener(const std::vector<char> &pair_addr, int hint);

/* Drop every packet at listener fd (until filter_peer); false when the kernel refuses. */
bool filter_drop_all(int fd);

/* Admit at fd, the listener of the pair whose address is pair_addr, only packets from one of
 * peer's addresses: true.  False when fd is no longer that listener (left alone), or when peer
 * is NULL or its record cannot say its addresses (the filter taken off: unfiltered). */
bool filter_peer(int fd, const std::vector<char> &pair_addr, const LocalAddrs *peer);

/* COLLPROF_FAULT=gloosteal: a silent connection of this rank's own at the first of its pair
 * listeners (mine: its pairs' addresses, theirs: the peers' for it), as from outside the run;
 * its fd or -1 (gloo_filter.cc). */
int steal_fault(int rank, int size, const std::vector<std::vector<char>> &mine,
                const std::vector<std::vector<char>> &theirs);

/* The mesh of g on g->dev (gloo_mesh.cc): a fresh one while a pair's connect was refused,
 * reset or closed on some rank (MeshContext::connect's again), a few times at most, alike on every
 * rank; tmo: the "timeout" option (NULL: none).  A collprof status, msg the reason on failure. */
int gl_connect_mesh(GlCtx *g, const collprof_host_t *host, const char *tmo, std::string &msg);

/* last_error(NULL): the plugin's own message (gloo_util.cc) */
extern char g_err[kErrLen];

/* The message of last_error (ctx NULL: the plugin's own, g_err; gloo_util.cc). */
void set_error(GlCtx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Build c->fn for args a (gloo_ops.cc), the option-style calls on tag (0: run()'s; a posted
 * collective's its own).  Throws on Gloo errors; returns a status for the combinations it
 * refuses (the message in g->err). */
int build_dispatch(GlCtx *g, Cached *c, const collprof_args_t *a, uint32_t tag = 0);

/* post() and wait() of a send, a recv or a collective (gloo_p2p.cc). */
int gl_post(void *vctx, const collprof_args_t *a, void **req);
int gl_wait(void *vctx, void *req);
/* Stop the posted collectives' worker (those queued run first), before the context goes. */
void gl_async_stop(GlCtx *g);

} // namespace cpgloo

#endif
