#include "config.h"

/*
 * collprof backend for Gloo (tested with Debian 12's libgloo, GLOO_VERSION
 * 0.5.0, tcp transport).
 *
 * Bootstrap.  Gloo's rendezvous::Context::connectFullMesh() drives a Store
 * with a rank-dependent number of set/get/wait calls (it also looks up the
 * hostnames of lower ranks with get() only), which cannot be mapped onto the
 * host's collective oob_allgather without risking ranks calling it a
 * different number of times.  So the plugin does the full-mesh connect
 * itself, exactly as connectFullMesh does it minus the store: create one
 * tcp pair per peer, in rank order, and connect pair i to the address
 * rank i created for us.  The addresses go round without an n x n table
 * through rank 0 where Gloo's address format allows (issue 26):
 *
 * - one oob_allgather of a 32-byte record per rank (its pairs' sockaddr,
 *   the sequence number of its first pair, flags saying which derivation
 *   its own pairs obey, checked on its own pairs);
 * - every rank derivable (Gloo with one listener per device, pytorch/gloo
 *   from May 2023): nothing more; rank i's pair for rank r is rank i's
 *   sockaddr with sequence number base_i + (r's index among i's peers);
 * - every rank's pairs one port apart (Gloo with a listening port per pair,
 *   as Debian 12's): an oob_alltoall of 2-byte ports (2 x n^2 bytes through
 *   rank 0 instead of 144 x n^2);
 * - otherwise, or with COLLPROF_GLOO_ADDR=table on any rank: the full table,
 *   an oob_alltoall of [uint64 length][address] slots (an allgather of the
 *   whole table where the core is older), as before.
 *
 * The choice is made from the allgathered records, alike on every rank, so
 * every rank makes the same OOB calls; -v logs it ("gloo: addresses: ...").
 * What the derivations rely on in Gloo is described above AddrRecord.
 *
 * The tcp device listens on the interface GLOO_SOCKET_IFNAME names, else on
 * 127.0.0.1 when the job is on one node (loopback only, as the project
 * requires) and on the host name's address otherwise; the backend options
 * hostname= and iface= override all of that (gl_device_attr), timeout=
 * (seconds) sets Gloo's timeout.
 *
 * Variants.  "default" is Gloo's option-style API (gloo::allreduce,
 * gloo::allgather, ...; allreduce's UNSPECIFIED algorithm is its ring), or
 * for reducescatter, which has no option-style call in this Gloo,
 * ReduceScatterHalvingDoubling.  The named variants are Gloo's algorithm
 * classes and option-API algorithm choices (see gl_variants below).
 *
 * Caching.  Algorithm classes bind their buffers at construction, and the
 * option structs register their buffers with the transport; both are built
 * once per (op, variant, dtype, redop, root, in_place, count, buffers) and
 * reused while that key holds.  Construction happens in run() on first use,
 * so the first (warm-up) iteration of a cell pays it.  Algorithm classes
 * take their slots from the context's slot counter: fresh slots whenever the
 * rank-independent part of the key changes (all ranks alike), the same slots
 * when only this rank's buffers moved (see gl_run).
 *
 * Copies inside the timed region: algorithm classes reduce in place, so an
 * out-of-place allreduce copies sendbuf to recvbuf first, and an
 * out-of-place reducescatter works on a cached count-sized scratch buffer;
 * in-place alltoall/alltoallv/sendrecv copy the input to a cached scratch
 * buffer (Gloo needs distinct input and output there).
 */

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

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
#include <gloo/config.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/reduce_scatter.h>
#include <gloo/scatter.h>
#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/device.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/types.h>

#include <collprof/plugin_util.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "0.1.0"
#endif
#ifndef CP_GLOO_PKG_VERSION
#define CP_GLOO_PKG_VERSION ""
#endif

/* Gloo with one listening socket per device (pytorch/gloo 31b1f02, May 2023) has this header:
 * said in the library version, as the pairs' addresses then go round derived. */
#if defined(__has_include)
#if __has_include(<gloo/transport/tcp/listener.h>)
#define CP_GLOO_DEVICE_LISTENER 1
#endif
#endif
#ifndef CP_GLOO_DEVICE_LISTENER
#define CP_GLOO_DEVICE_LISTENER 0
#endif

#define GL_STR2(x) #x
#define GL_STR(x)  GL_STR2(x)

namespace
{

constexpr size_t kErrLen = 512;

/* Slot prefix for sendrecv (Gloo's own prefixes are 0x01..0x08). */
constexpr uint8_t kSendrecvSlotPrefix = 0x5c;

char g_err[kErrLen]; /* last_error(NULL) */
char g_libversion[160];

/* ---- variants ----------------------------------------------------------- */

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

const collprof_variant_t gl_variants[] = {
    /* AllgatherRing is left out: collprof's exact check found a wrong block
     * in some runs on 2, 3 and 4 ranks with Debian's Gloo 0.5.0 (a race in
     * the class, not yet understood). */
    {"ring", "Gloo AllreduceRing (whole-buffer ring, n-1 steps)",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
    {"ring_chunked",
     "Gloo AllreduceRingChunked (ring reduce-scatter + allgather in pipelined chunks)",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
    {"halving_doubling",
     "Gloo AllreduceHalvingDoubling / ReduceScatterHalvingDoubling (recursive halving and "
     "doubling over binary blocks)",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER)},
    {"bcube", "Gloo AllreduceBcube class (base-2 hypercube reduce-scatter + allgather; even ranks)",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
    {"opt_bcube",
     "Gloo option-style gloo::allreduce with AllreduceOptions::Algorithm::BCUBE (default: RING)",
     COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)},
    {"one_to_all", "Gloo BroadcastOneToAll (root sends the whole buffer to every rank)",
     COLLPROF_BIT(COLLPROF_OP_BROADCAST)},
    {"all_to_all", "Gloo BarrierAllToAll (every rank notifies every other rank)",
     COLLPROF_BIT(COLLPROF_OP_BARRIER)},
    {"all_to_one", "Gloo BarrierAllToOne (gather notifications at rank 0, then release)",
     COLLPROF_BIT(COLLPROF_OP_BARRIER)},
};
constexpr size_t kNumVariants = sizeof(gl_variants) / sizeof(gl_variants[0]);

GlVariant variant_of(const char *name)
{
    if (!name || !name[0] || !strcmp(name, "default")) {
        return GV_DEFAULT;
    }
    for (size_t i = 0; i < kNumVariants; i++) {
        if (!strcmp(name, gl_variants[i].name)) {
            return static_cast<GlVariant>(i + 1);
        }
    }
    return GV_COUNT;
}

/* ---- the pairs' addresses ---------------------------------------------------- */

/*
 * What the exchange of one address per rank relies on, in Gloo's tcp
 * transport (gloo/transport/tcp/address.h, pair.h, device.h), and checks
 * at run time on every rank before it is used (see MeshContext::connect):
 *
 * - A pair's address, Pair::address().bytes(), is a tcp::Address: a
 *   sockaddr_storage and a sequence number (136 bytes on Linux x86-64).
 *   Only the family's part of the sockaddr (a sockaddr_in or sockaddr_in6)
 *   means anything: Pair::connect compares addresses and ports and connects
 *   with the family's length, and the rest of the storage is not cleared
 *   by Address::fromSockName.  So "equal" below is: same family, same
 *   sockaddr_in/sockaddr_in6 bytes, same sequence number.
 * - Gloo from pytorch/gloo 31b1f02 ("Use a single listening socket per
 *   device", May 2023) on: the device has one listener, and each new pair
 *   takes Listener::nextAddress(), the listener's sockaddr with seq_++
 *   under the listener's lock, so the pairs a context creates one after the
 *   other get consecutive sequence numbers; the listener hands an incoming
 *   connection to the pair whose number the peer sends.  This plugin
 *   creates its pairs in rank order (skipping itself), so rank i's pair for
 *   rank r is (sockaddr_i, base_i + (r < i ? r : r - 1)), base_i the number
 *   of the context's first pair, read from that pair, never assumed 0: a
 *   device numbers the pairs of all its contexts in one sequence (a second
 *   context of 5 ranks on a device starts at 4, pytorch/gloo 01a0c81).  This
 *   plugin makes a device per init (split groups and --repeats' fresh
 *   contexts are inits of their own), so base_i is 0 here today.
 * - Older Gloo, such as Debian 12's libgloo 0.0~git20220518.5b14351 (0.5.0):
 *   no device listener; every pair listens on a port of its own (Pair::listen
 *   binds the device's address with port 0) and its sequence number is -1.
 *   The pairs of a rank differ in the port alone, and ports cannot be derived:
 *   each rank then sends each peer the 2-byte port of its pair for it.
 *
 * A rank that finds its own pairs' addresses other than predicted clears the
 * flag in its record; the way taken is decided from the allgathered records,
 * alike on every rank.
 */

/* AddrRecord::flags */
constexpr uint8_t kAddrDerivable = 1u << 0; /* pair for r: (sockaddr, base + index of r) */
constexpr uint8_t kAddrPorts = 1u << 1;     /* pair for r: (sockaddr, that pair's port, base) */
constexpr uint8_t kAddrTable = 1u << 2;     /* COLLPROF_GLOO_ADDR=table: the full table */
constexpr uint8_t kAddrBadEnv = 1u << 3;    /* COLLPROF_GLOO_ADDR holds something else */

/* One rank's published part, the same size on every rank (one OOB allgather); 32 bytes, as
 * rank 0 sends the whole array once per child in the control tree. */
struct AddrRecord {
    uint8_t flags;    /* kAddr* */
    uint8_t family;   /* 4 (AF_INET) or 6 (AF_INET6) */
    uint16_t port;    /* network order: its first pair's */
    uint16_t len;     /* its longest pair address, in bytes (the table's slot) */
    uint16_t pad;     /* zero */
    uint32_t scope;   /* sin6_scope_id */
    uint8_t addr[16]; /* sin_addr or sin6_addr */
    int32_t base;     /* sequence number of this context's first pair (-1: none) */
};
static_assert(sizeof(AddrRecord) == 32, "the record goes over the OOB channel as it is");
static_assert(gloo::transport::Address::kMaxByteSize <= UINT16_MAX, "len holds an address's size");

/* The family's part of a sockaddr: its length, or 0 for a family the record cannot hold. */
size_t sockaddr_len(const sockaddr_storage &ss)
{
    return ss.ss_family == AF_INET    ? sizeof(sockaddr_in)
           : ss.ss_family == AF_INET6 ? sizeof(sockaddr_in6)
                                      : 0;
}

uint16_t port_of(const sockaddr_storage &ss)
{
    return ss.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in *>(&ss)->sin_port
                                   : reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port;
}

/* r's sockaddr fields from ss; false for a family it cannot hold. */
bool pack_sockaddr(const sockaddr_storage &ss, AddrRecord &r)
{
    if (ss.ss_family == AF_INET) {
        const auto *sa = reinterpret_cast<const sockaddr_in *>(&ss);
        r.family = 4;
        r.port = sa->sin_port;
        memcpy(r.addr, &sa->sin_addr, sizeof(sa->sin_addr));
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const auto *sa = reinterpret_cast<const sockaddr_in6 *>(&ss);
        r.family = 6;
        r.port = sa->sin6_port;
        r.scope = sa->sin6_scope_id;
        memcpy(r.addr, &sa->sin6_addr, sizeof(sa->sin6_addr));
        return true;
    }
    return false;
}

/* The pair address (r's sockaddr with port, seq) in Gloo's bytes. */
std::vector<char> addr_bytes(const AddrRecord &r, uint16_t port, int64_t seq)
{
    sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (r.family == 4) {
        auto *sa = reinterpret_cast<sockaddr_in *>(&ss);
        sa->sin_family = AF_INET;
        sa->sin_port = port;
        memcpy(&sa->sin_addr, r.addr, sizeof(sa->sin_addr));
    } else if (r.family == 6) {
        auto *sa = reinterpret_cast<sockaddr_in6 *>(&ss);
        sa->sin6_family = AF_INET6;
        sa->sin6_port = port;
        sa->sin6_scope_id = r.scope;
        memcpy(&sa->sin6_addr, r.addr, sizeof(sa->sin6_addr));
    }
    return gloo::transport::tcp::Address(ss,
                                         static_cast<gloo::transport::tcp::sequence_number_t>(seq))
        .bytes();
}

/* Equal as Gloo uses them: family, the family's sockaddr bytes, sequence number. */
bool same_address(const std::vector<char> &a, const std::vector<char> &b)
{
    const gloo::transport::tcp::Address x(a), y(b);
    const sockaddr_storage &sx = x.getSockaddr(), &sy = y.getSockaddr();
    const size_t n = sockaddr_len(sx);
    return n != 0 && sx.ss_family == sy.ss_family && memcmp(&sx, &sy, n) == 0 &&
           x.getSeq() == y.getSeq();
}

/* Where rank r's pair sits among the pairs rank i creates (rank order, i skipped). */
int64_t pair_index(int i, int r)
{
    return r < i ? r : r - 1;
}

/* The first rank whose record has flag f (-1: none). */
int first_with(const std::vector<AddrRecord> &all, uint8_t f)
{
    for (size_t i = 0; i < all.size(); i++) {
        if (all[i].flags & f) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

/* ---- context with a full mesh built over the host's OOB ----------------- */

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

    /* col[i*slot ..] gets rank i's slot for this rank out of its row of size slots: an
     * all-to-all where the core has one (each rank moves its row and its column), else an
     * allgather of every row (size^2 slots per rank, size^3 through a star). */
    int exchange(const collprof_host_t *host, const std::vector<char> &row, size_t slot,
                 std::vector<char> &col)
    {
        const size_t n = static_cast<size_t>(size);
        col.assign(row.size(), 0);
        if (COLLPROF_HOST_HAS(host, oob_alltoall)) {
            return host->oob_alltoall(row.data(), col.data(), slot);
        }
        std::vector<char> all(row.size() * n, 0);
        int rc = host->oob_allgather(row.data(), all.data(), row.size());
        for (size_t i = 0; i < n && rc == COLLPROF_OK; i++) {
            memcpy(&col[i * slot], &all[i * row.size() + static_cast<size_t>(rank) * slot], slot);
        }
        return rc;
    }

    /* This rank's record: its pairs' addresses in mine, their ports in ports; the flags say
     * which derivations its own pairs obey. */
    static void describe(int rank, int size, const std::vector<std::vector<char>> &mine,
                         std::vector<uint16_t> &ports, AddrRecord &me)
    {
        bool derivable = true, by_port = true;
        if (size > 1) {
            const gloo::transport::tcp::Address first(mine[rank == 0 ? 1 : 0]);
            if (!pack_sockaddr(first.getSockaddr(), me)) {
                derivable = by_port = false;
            }
            const int64_t seq = first.getSeq();
            /* -1: Gloo without a device listener; beyond int32: not derived */
            me.base = seq >= -1 && seq <= INT32_MAX ? static_cast<int32_t>(seq) : -1;
            by_port = by_port && seq == me.base;
            derivable = derivable && me.base >= 0;
            for (int i = 0; i < size && (derivable || by_port); i++) {
                if (i == rank) {
                    continue;
                }
                const auto &b = mine[static_cast<size_t>(i)];
                const gloo::transport::tcp::Address a(b);
                if (sockaddr_len(a.getSockaddr()) == 0) {
                    derivable = by_port = false;
                    break;
                }
                ports[static_cast<size_t>(i)] = port_of(a.getSockaddr());
                derivable = derivable &&
                            same_address(addr_bytes(me, me.port, me.base + pair_index(rank, i)), b);
                by_port = by_port &&
                          same_address(addr_bytes(me, ports[static_cast<size_t>(i)], me.base), b);
            }
        }
        me.flags = static_cast<uint8_t>(me.flags | (derivable ? kAddrDerivable : 0) |
                                        (by_port ? kAddrPorts : 0));
    }

    /* Returns a collprof status; msg gets the reason on failure. */
    int connect(const collprof_host_t *host, std::shared_ptr<gloo::transport::Device> &dev,
                std::string &msg)
    {
        const size_t n = static_cast<size_t>(size);
        const char *env = getenv("COLLPROF_GLOO_ADDR");
        AddrRecord me;
        memset(&me, 0, sizeof(me));
        me.base = -1;
        if (env && env[0] && strcmp(env, "auto") != 0) {
            me.flags = strcmp(env, "table") == 0 ? kAddrTable : kAddrBadEnv;
        }
        auto tctx = dev->createContext(rank, size);
        tctx->setTimeout(getTimeout());
        std::vector<std::vector<char>> mine(n);
        std::vector<uint16_t> ports(n, 0);
        if (!(me.flags & kAddrBadEnv)) {
            size_t maxlen = 0;
            for (int i = 0; i < size; i++) {
                if (i == rank) {
                    continue;
                }
                auto &pair = tctx->createPair(i);
                mine[static_cast<size_t>(i)] = pair->address().bytes();
                maxlen = std::max(maxlen, mine[static_cast<size_t>(i)].size());
            }
            me.len = static_cast<uint16_t>(maxlen);
            describe(rank, size, mine, ports, me);
        }
        /* every rank makes this call, whatever its record says */
        std::vector<AddrRecord> all(n);
        int rc = host->oob_allgather(&me, all.data(), sizeof(me));
        if (rc != COLLPROF_OK) {
            msg = "oob_allgather of the address records failed (" + std::to_string(rc) + ")";
            return rc;
        }
        uint32_t every = kAddrDerivable | kAddrPorts, any = 0;
        uint64_t len = 0;
        int odd = -1; /* the first rank whose pairs derive neither way */
        for (size_t i = 0; i < n; i++) {
            every &= all[i].flags;
            any |= all[i].flags;
            len = std::max<uint64_t>(len, all[i].len);
            if (odd < 0 && !(all[i].flags & (kAddrDerivable | kAddrPorts))) {
                odd = static_cast<int>(i);
            }
        }
        if (any & kAddrBadEnv) {
            const int bad = first_with(all, kAddrBadEnv);
            std::string v = bad == rank && env ? std::string(env).substr(0, 64) : "";
            for (char &c : v) {
                c = c >= 0x20 && c < 0x7f ? c : '?'; /* no control bytes in the message */
            }
            msg = bad == rank ? "COLLPROF_GLOO_ADDR is '" + v + "': neither auto nor table"
                              : "COLLPROF_GLOO_ADDR of rank " + std::to_string(bad) +
                                    " is neither auto nor table";
            return COLLPROF_ERR_INVALID;
        }
        std::vector<std::vector<char>> theirs(n);
        if (any & kAddrTable) {
            how = "table (COLLPROF_GLOO_ADDR=table on rank " +
                  std::to_string(first_with(all, kAddrTable)) + ")";
            rc = table(host, mine, len, theirs, msg);
        } else if (every & kAddrDerivable) {
            how = "one per rank (derived pair sequence numbers)";
            for (int i = 0; i < size; i++) {
                if (i != rank) {
                    const AddrRecord &r = all[static_cast<size_t>(i)];
                    theirs[static_cast<size_t>(i)] =
                        addr_bytes(r, r.port, r.base + pair_index(i, rank));
                }
            }
        } else if (every & kAddrPorts) {
            how = "one per rank and each pair's port (this Gloo listens on a port per pair)";
            rc = by_ports(host, all, ports, theirs, msg);
        } else {
            how = odd >= 0 ? "table (rank " + std::to_string(odd) +
                                 "'s pair addresses follow neither derivation)"
                           : std::string("table (the ranks' pair addresses follow different "
                                         "derivations)");
            rc = table(host, mine, len, theirs, msg);
        }
        if (rc != COLLPROF_OK) {
            return rc;
        }
        for (int i = 0; i < size; i++) {
            if (i != rank) {
                tctx->getPair(i)->connect(theirs[static_cast<size_t>(i)]);
            }
        }
        device_ = dev;
        transportContext_ = std::move(tctx);
        return COLLPROF_OK;
    }

  private:
    /* The full table: size slots of [uint64 length][len bytes] per rank, through an all-to-all. */
    int table(const collprof_host_t *host, const std::vector<std::vector<char>> &mine, uint64_t len,
              std::vector<std::vector<char>> &theirs, std::string &msg)
    {
        const size_t slot = sizeof(uint64_t) + static_cast<size_t>(len);
        const size_t per_rank = slot * static_cast<size_t>(size);
        std::vector<char> out(per_rank, 0), col;
        for (int i = 0; i < size; i++) {
            const auto &b = mine[static_cast<size_t>(i)];
            uint64_t l = b.size();
            memcpy(&out[static_cast<size_t>(i) * slot], &l, sizeof(l));
            if (l) {
                memcpy(&out[static_cast<size_t>(i) * slot + sizeof(l)], b.data(), b.size());
            }
        }
        int rc = exchange(host, out, slot, col);
        if (rc != COLLPROF_OK) {
            msg = "out-of-band exchange of pair addresses failed (" + std::to_string(rc) + ")";
            return rc;
        }
        for (int i = 0; i < size; i++) {
            if (i == rank) {
                continue;
            }
            const char *p = &col[static_cast<size_t>(i) * slot];
            uint64_t l;
            memcpy(&l, p, sizeof(l));
            if (l == 0 || l > len) {
                msg = "rank " + std::to_string(i) + " published no address for rank " +
                      std::to_string(rank);
                return COLLPROF_ERR_BACKEND;
            }
            theirs[static_cast<size_t>(i)].assign(p + sizeof(l), p + sizeof(l) + l);
        }
        return COLLPROF_OK;
    }

    /* Each pair's port through an all-to-all of 2-byte slots; the rest from the records. */
    int by_ports(const collprof_host_t *host, const std::vector<AddrRecord> &all,
                 const std::vector<uint16_t> &ports, std::vector<std::vector<char>> &theirs,
                 std::string &msg)
    {
        const size_t slot = sizeof(uint16_t);
        std::vector<char> out(slot * static_cast<size_t>(size)), col;
        memcpy(out.data(), ports.data(), out.size());
        int rc = exchange(host, out, slot, col);
        if (rc != COLLPROF_OK) {
            msg = "out-of-band exchange of pair ports failed (" + std::to_string(rc) + ")";
            return rc;
        }
        for (int i = 0; i < size; i++) {
            if (i == rank) {
                continue;
            }
            uint16_t port;
            memcpy(&port, &col[static_cast<size_t>(i) * slot], slot);
            if (port == 0) {
                msg = "rank " + std::to_string(i) + " published no port for rank " +
                      std::to_string(rank);
                return COLLPROF_ERR_BACKEND;
            }
            const AddrRecord &r = all[static_cast<size_t>(i)];
            theirs[static_cast<size_t>(i)] = addr_bytes(r, port, r.base);
        }
        return COLLPROF_OK;
    }
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
    const char *why = ""; /* how the device's interface was chosen */
    char err[kErrLen] = "";
};

COLLPROF_DEFINE_SET_ERROR(set_error, GlCtx, err, g_err);

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

    Build(GlCtx *g_, Cached *c_, const collprof_args_t *a_)
        : g(g_), c(c_), a(a_), base(g_->ctx), n(g_->nranks), rank(g_->rank), count(a_->count),
          blk(a_->count / static_cast<size_t>(g_->nranks)), ip(a_->in_place != 0),
          rbuf(static_cast<T *>(a_->recvbuf)),
          sbuf(ip ? rbuf : static_cast<T *>(const_cast<void *>(a_->sendbuf))),
          v(g_->variant[a_->op])
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
template <typename T> int build(GlCtx *g, Cached *c, const collprof_args_t *a)
{
    const Build<T> b(g, c, a);
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

int build_dispatch(GlCtx *g, Cached *c, const collprof_args_t *a)
{
    switch (a->dtype) {
    case COLLPROF_DTYPE_INT8: return build<int8_t>(g, c, a);
    case COLLPROF_DTYPE_UINT8: return build<uint8_t>(g, c, a);
    case COLLPROF_DTYPE_INT32: return build<int32_t>(g, c, a);
    case COLLPROF_DTYPE_UINT32: return build<uint32_t>(g, c, a);
    case COLLPROF_DTYPE_INT64: return build<int64_t>(g, c, a);
    case COLLPROF_DTYPE_UINT64: return build<uint64_t>(g, c, a);
    case COLLPROF_DTYPE_FLOAT16: return build<gloo::float16>(g, c, a);
    case COLLPROF_DTYPE_FLOAT32: return build<float>(g, c, a);
    case COLLPROF_DTYPE_FLOAT64: return build<double>(g, c, a);
    default:
        set_error(g, "dtype %s is not supported by Gloo", collprof_dtype_name(a->dtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
}

/* Not gatherv nor scatterv: Gloo 0.5 has no gatherv, and gloo::scatter enforces that every
 * input is the size of the output (equal blocks), so the core reports their cells
 * unsupported ("gloo does not offer ..."), as it does the non-blocking ops. */
constexpr uint32_t kOps =
    COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_ALLGATHER) |
    COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER) | COLLPROF_BIT(COLLPROF_OP_ALLTOALL) |
    COLLPROF_BIT(COLLPROF_OP_ALLTOALLV) | COLLPROF_BIT(COLLPROF_OP_BROADCAST) |
    COLLPROF_BIT(COLLPROF_OP_REDUCE) | COLLPROF_BIT(COLLPROF_OP_GATHER) |
    COLLPROF_BIT(COLLPROF_OP_SCATTER) | COLLPROF_BIT(COLLPROF_OP_BARRIER) |
    COLLPROF_BIT(COLLPROF_OP_SENDRECV) | COLLPROF_BIT(COLLPROF_OP_ALLGATHERV);

constexpr uint32_t kDtypes =
    COLLPROF_BIT(COLLPROF_DTYPE_INT8) | COLLPROF_BIT(COLLPROF_DTYPE_UINT8) |
    COLLPROF_BIT(COLLPROF_DTYPE_INT32) | COLLPROF_BIT(COLLPROF_DTYPE_UINT32) |
    COLLPROF_BIT(COLLPROF_DTYPE_INT64) | COLLPROF_BIT(COLLPROF_DTYPE_UINT64) |
    COLLPROF_BIT(COLLPROF_DTYPE_FLOAT16) | COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32) |
    COLLPROF_BIT(COLLPROF_DTYPE_FLOAT64);

constexpr uint32_t kRedops = COLLPROF_BIT(COLLPROF_REDOP_SUM) | COLLPROF_BIT(COLLPROF_REDOP_PROD) |
                             COLLPROF_BIT(COLLPROF_REDOP_MIN) | COLLPROF_BIT(COLLPROF_REDOP_MAX);

bool is_reduction(collprof_op_t op)
{
    return (collprof_op_info(op)->flags & COLLPROF_OPF_REDUCES) != 0;
}

/* Why variant v cannot run op on n ranks, or NULL. Depends only on values
 * that are the same on every rank, so every rank refuses alike. */
const char *unusable(collprof_op_t op, GlVariant v, int n)
{
    if (op == COLLPROF_OP_REDUCESCATTER && (n & (n - 1)) != 0 &&
        (v == GV_DEFAULT || v == GV_HALVING_DOUBLING)) {
        /* Found by collprof's exact check on Debian's Gloo 0.5.0 with 3
         * ranks: rank 0's block is wrong for 8-byte types in some runs. */
        return "ReduceScatterHalvingDoubling is unreliable on a world size that is not a "
               "power of two";
    }
    if (v == GV_DEFAULT) {
        return nullptr;
    }
    if (!(gl_variants[v - 1].ops & COLLPROF_BIT(op))) {
        return "the variant does not apply to this operation";
    }
    if (n < 2 && v != GV_OPT_BCUBE) {
        return "Gloo's algorithm classes need at least 2 ranks (no pair to self)";
    }
    if ((v == GV_BCUBE || v == GV_OPT_BCUBE) && n % 2 != 0) {
        return "bcube needs a number of ranks divisible by its base (2)";
    }
    return nullptr;
}

/* ---- slots ------------------------------------------------------------------ */

int gl_query(void *, collprof_caps_t *caps)
{
    if (int rc = collprof_check_caps(caps, g_err, sizeof(g_err))) {
        return rc;
    }
    if (!g_libversion[0]) {
        const char *pkg = CP_GLOO_PKG_VERSION;
        snprintf(g_libversion, sizeof(g_libversion), "Gloo %d.%d.%d%s%s%s%s", GLOO_VERSION_MAJOR,
                 GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, pkg[0] ? " (Debian libgloo " : "", pkg,
                 pkg[0] ? ")" : "", CP_GLOO_DEVICE_LISTENER ? " (tcp: a listener per device)" : "");
    }
    collprof_caps_t c;
    memset(&c, 0, sizeof(c));
    c.size = caps->size;
    c.library_version = g_libversion;
    c.ops = kOps;
    c.dtypes = kDtypes;
    c.redops = kRedops;
    c.memtypes = COLLPROF_BIT(COLLPROF_MEM_HOST);
    c.variants = gl_variants;
    c.nvariants = kNumVariants;
    /* an older core's struct may end before the appended fields (zeroed here) */
    memcpy(caps, &c, caps->size < sizeof(c) ? caps->size : sizeof(c));
    return COLLPROF_OK;
}

/*
 * The tcp device's interface or address, in this order: the backend options
 * iface= and hostname= (-B), GLOO_SOCKET_IFNAME (as PyTorch reads it: the
 * first of a comma-separated list), loopback when the job is on one node,
 * else this node's host name.  Returns how it was chosen, for the log and
 * for errors.
 */
static const char *gl_device_attr(const collprof_host_t *host, const char *iface,
                                  const char *hostname, gloo::transport::tcp::attr &attr)
{
    const char *env = getenv("GLOO_SOCKET_IFNAME");
    if (iface && iface[0]) {
        attr.iface = iface;
        return "interface of -B iface=";
    }
    if (hostname && hostname[0]) {
        attr.hostname = hostname;
        return "address of -B hostname=";
    }
    if (env && env[0]) {
        attr.iface = std::string(env, strcspn(env, ","));
        return "interface of GLOO_SOCKET_IFNAME";
    }
    if (host->nnodes <= 1) {
        attr.hostname = "127.0.0.1"; /* one node: keep all traffic on loopback */
        return "one node: loopback";
    }
    attr.hostname = host->hostname ? host->hostname : "";
    return "address of this node's host name";
}

int gl_init(const collprof_host_t *host, void **ctxp)
{
    if (!host || !ctxp) {
        set_error(nullptr, "init: host or ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (host->size < sizeof(collprof_host_t) || host->nranks < 1 || host->rank < 0 ||
        host->rank >= host->nranks || !host->oob_allgather) {
        set_error(nullptr, "init: bad host table (size %zu, rank %d of %d)", host->size, host->rank,
                  host->nranks);
        return COLLPROF_ERR_INVALID;
    }
    GlCtx *g = new (std::nothrow) GlCtx;
    if (!g) {
        set_error(nullptr, "init: out of memory");
        return COLLPROF_ERR_NO_MEMORY;
    }
    g->host = host;
    g->rank = host->rank;
    g->nranks = host->nranks;
    const char *hostname = host->get_option ? host->get_option("hostname") : nullptr;
    const char *iface = host->get_option ? host->get_option("iface") : nullptr;
    const char *tmo = host->get_option ? host->get_option("timeout") : nullptr;
    int rc = COLLPROF_ERR_BACKEND;
    std::string msg;
    try {
        gloo::transport::tcp::attr attr;
        const char *why = gl_device_attr(host, iface, hostname, attr);
        try {
            g->dev = gloo::transport::tcp::CreateDevice(attr);
        } catch (const std::exception &e) {
            throw std::runtime_error(std::string(why) + ": " + e.what());
        }
        g->why = why;
        g->ctx = std::make_shared<MeshContext>(g->rank, g->nranks);
        if (tmo && tmo[0]) {
            long s = strtol(tmo, nullptr, 10);
            if (s > 0) {
                g->ctx->setTimeout(std::chrono::seconds(s));
            }
        }
        rc = g->ctx->connect(host, g->dev, msg);
    } catch (const std::exception &e) {
        msg = std::string("Gloo: ") + e.what();
        rc = COLLPROF_ERR_BACKEND;
    }
    if (rc != COLLPROF_OK) {
        set_error(nullptr, "init: %s", msg.c_str());
        try {
            delete g;
        } catch (...) {
        }
        return rc;
    }
    if (host->log) {
        host->log(g->rank == 0 ? COLLPROF_LOG_INFO : COLLPROF_LOG_DEBUG,
                  "gloo: full mesh of %d ranks on %s (%s; timeout %lld ms)", g->nranks,
                  g->dev->str().c_str(), g->why,
                  static_cast<long long>(g->ctx->getTimeout().count()));
        host->log(g->rank == 0 ? COLLPROF_LOG_INFO : COLLPROF_LOG_DEBUG, "gloo: addresses: %s",
                  g->ctx->how.c_str());
    }
    *ctxp = g;
    return COLLPROF_OK;
}

int gl_finalize(void *vctx)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (!g) {
        set_error(nullptr, "finalize: ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    int rc = COLLPROF_OK;
    try {
        for (auto &c : g->cache) {
            c.reset();
        }
        g->ctx.reset();
        g->dev.reset();
        delete g;
    } catch (const std::exception &e) {
        set_error(nullptr, "finalize: Gloo: %s", e.what());
        rc = COLLPROF_ERR_BACKEND;
    }
    return rc;
}

int gl_select_variant(void *vctx, collprof_op_t op, const char *variant)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (!g) {
        set_error(nullptr, "select_variant: ctx is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if ((int)op < 0 || op >= COLLPROF_OP_COUNT) {
        set_error(g, "select_variant: unknown op %d", (int)op);
        return COLLPROF_ERR_INVALID;
    }
    GlVariant v = variant_of(variant);
    if (v == GV_COUNT) {
        set_error(g, "select_variant: Gloo has no variant \"%s\"", variant);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (const char *why = unusable(op, v, g->nranks)) {
        set_error(g, "%s %s on %d ranks: %s", v == GV_DEFAULT ? "default" : gl_variants[v - 1].name,
                  collprof_op_name(op), g->nranks, why);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    g->variant[op] = v;
    return COLLPROF_OK;
}

int gl_mem_alloc(void *vctx, int memtype, size_t bytes, void **ptr)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (!ptr) {
        set_error(g, "mem_alloc: ptr is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if (memtype != COLLPROF_MEM_HOST) {
        set_error(g, "mem_alloc: memory type %d is not offered (host only)", memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    void *p = nullptr;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        set_error(g, "mem_alloc: out of memory (%zu bytes)", bytes);
        return COLLPROF_ERR_NO_MEMORY;
    }
    *ptr = p;
    return COLLPROF_OK;
}

int gl_mem_free(void *vctx, int memtype, void *ptr)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (memtype != COLLPROF_MEM_HOST) {
        set_error(g, "mem_free: memory type %d is not offered (host only)", memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    /* Drop cached operations bound to this buffer before it goes away. */
    if (g && ptr) {
        for (auto &c : g->cache) {
            if (c && (c->key.recvbuf == ptr || c->key.sendbuf == ptr)) {
                try {
                    c.reset();
                } catch (...) {
                }
            }
        }
    }
    free(ptr);
    return COLLPROF_OK;
}

/* Why args a cannot run here (message set), or COLLPROF_OK. */
int check_args(GlCtx *g, const collprof_args_t *a)
{
    const int n = g->nranks;
    if (a->memtype != COLLPROF_MEM_HOST) {
        set_error(g, "run: memory type %d is not offered (host only)", a->memtype);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if ((int)a->dtype < 0 || a->dtype >= COLLPROF_DTYPE_COUNT ||
        !(kDtypes & COLLPROF_BIT(a->dtype))) {
        set_error(g, "run: dtype %s is not supported by Gloo", collprof_dtype_name(a->dtype));
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (is_reduction(a->op) && ((int)a->redop < 0 || a->redop >= COLLPROF_REDOP_COUNT ||
                                !(kRedops & COLLPROF_BIT(a->redop)))) {
        set_error(g, "run: redop %d is not supported", (int)a->redop);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (a->count > static_cast<size_t>(std::numeric_limits<int>::max())) {
        set_error(g, "run: count %zu exceeds INT_MAX (Gloo's algorithm classes take int counts)",
                  a->count);
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    if (collprof_check_layout(a, n, g->err, sizeof(g->err)) != COLLPROF_OK) {
        return COLLPROF_ERR_INVALID;
    }
    if (a->op == COLLPROF_OP_ALLTOALLV &&
        (!a->recvcounts || !a->rdispls || (!a->in_place && (!a->sendcounts || !a->sdispls)))) {
        set_error(g, "run: alltoallv without counts or displacements");
        return COLLPROF_ERR_INVALID;
    }
    return COLLPROF_OK;
}

CacheKey key_of(const GlCtx *g, const collprof_args_t *a)
{
    const int n = g->nranks;
    CacheKey key;
    key.op = a->op;
    key.variant = g->variant[a->op];
    key.dtype = a->dtype;
    key.redop = is_reduction(a->op) ? a->redop : -1;
    key.root = a->root;
    key.in_place = a->in_place ? 1 : 0;
    key.count = a->count;
    key.sendbuf = a->sendbuf;
    key.recvbuf = a->recvbuf;
    if (a->op == COLLPROF_OP_ALLTOALLV) {
        for (int i = 0; i < n; i++) {
            key.a2av.push_back(a->in_place ? 0 : a->sendcounts[i]);
            key.a2av.push_back(a->in_place ? 0 : a->sdispls[i]);
            key.a2av.push_back(a->recvcounts[i]);
            key.a2av.push_back(a->rdispls[i]);
        }
    }
    if (a->op == COLLPROF_OP_ALLGATHERV) {
        for (int i = 0; i < n; i++) {
            key.a2av.push_back(a->recvcounts[i]);
            key.a2av.push_back(a->rdispls[i]);
        }
    }
    if (a->op == COLLPROF_OP_SENDRECV) {
        key.root = a->peer_send * n + a->peer_recv;
    }
    return key;
}

/* g->cache[a->op] built for key (throws on Gloo errors) */
int cached_op(GlCtx *g, const collprof_args_t *a, const CacheKey &key)
{
    auto &slot = g->cache[a->op];
    if (slot && slot->key == key) {
        return COLLPROF_OK;
    }
    slot.reset();
    std::unique_ptr<Cached> c(new Cached);
    c->key = key;
    /* Algorithm classes take context slots at construction and may
     * leave notifications in flight on them between runs, so a new
     * algorithm gets fresh slots.  Every rank rebuilds when the
     * rank-independent part of the key changes, so slot_top moves
     * alike everywhere; a rebuild because only this rank's buffers
     * moved reuses the slots of the algorithm its peers still run. */
    const bool local_only = g->last_global[a->op].sameGlobal(key);
    const int start = local_only ? g->last_slot[a->op] : g->slot_top;
    g->ctx->resetSlot(start);
    int rc = build_dispatch(g, c.get(), a);
    if (!local_only) {
        g->slot_top = std::max(g->slot_top, g->ctx->currentSlot());
        g->last_global[a->op] = key;
        g->last_slot[a->op] = start;
    }
    g->ctx->resetSlot(g->slot_top);
    if (rc == COLLPROF_OK) {
        slot = std::move(c);
    }
    return rc;
}

int gl_run(void *vctx, const collprof_args_t *a)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (!g || !a) {
        set_error(g, "run: ctx or args is NULL");
        return COLLPROF_ERR_INVALID;
    }
    if ((int)a->op < 0 || a->op >= COLLPROF_OP_COUNT) {
        set_error(g, "run: unknown op %d", (int)a->op);
        return COLLPROF_ERR_INVALID;
    }
    int rc = check_args(g, a);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    const CacheKey key = key_of(g, a);
    try {
        rc = cached_op(g, a, key);
        if (rc != COLLPROF_OK) {
            return rc;
        }
        g->cache[a->op]->fn();
    } catch (const std::exception &e) {
        g->cache[a->op].reset();
        set_error(g, "Gloo %s (%s, count %zu, variant %s) failed: %s", collprof_op_name(a->op),
                  collprof_dtype_name(a->dtype), a->count,
                  g->variant[a->op] == GV_DEFAULT ? "default"
                                                  : gl_variants[g->variant[a->op] - 1].name,
                  e.what());
        return COLLPROF_ERR_BACKEND;
    }
    return COLLPROF_OK;
}

COLLPROF_DEFINE_LAST_ERROR(gl_last_error, GlCtx, err, g_err);

/* The value of "key" in the device's own description "tcp, pci=, iface=lo, ..., addr=[...]". */
std::string device_field(const std::string &s, const std::string &key)
{
    size_t at = s.find(key);
    if (at == std::string::npos) {
        return "";
    }
    at += key.size();
    size_t end = s.find(',', at);
    return s.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

/* The transport is the interface and address the tcp device actually bound. */
int gl_describe(void *vctx, int memtype, collprof_provenance_t *out)
{
    GlCtx *g = static_cast<GlCtx *>(vctx);
    if (!g || !out || memtype != COLLPROF_MEM_HOST) {
        set_error(g, "describe: host memory only");
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    snprintf(out->memory, sizeof(out->memory), "posix_memalign, 64-byte aligned");
    snprintf(out->device, sizeof(out->device), "host");
    try {
        const std::string s = g->dev ? g->dev->str() : std::string();
        const std::string iface = device_field(s, "iface="), addr = device_field(s, "addr=");
        if (!addr.empty() || !iface.empty()) {
            snprintf(out->transport, sizeof(out->transport), "tcp on %s%s%s", iface.c_str(),
                     iface.empty() || addr.empty() ? "" : " ", addr.c_str());
        }
    } catch (const std::exception &) {
        out->transport[0] = '\0'; /* not known */
    }
    return COLLPROF_OK;
}

} // namespace

const collprof_option_t gl_options[] = {
    {"iface", COLLPROF_OPT_STRING, nullptr, 0, 0, nullptr,
     "network interface to use (default: loopback on one node, else the host name's address)", 0},
    {"hostname", COLLPROF_OPT_STRING, nullptr, 0, 0, nullptr,
     "address or host name to bind to (iface wins when both are given)", 0},
    {"timeout", COLLPROF_OPT_INT, nullptr, 1, 1000000, nullptr,
     "seconds before a stuck operation fails (default: collprof's --timeout)", 0},
};

COLLPROF_PLUGIN_ENTRY = {
    COLLPROF_BACKEND_HEAD("gloo", PACKAGE_VERSION,
                          "Gloo collectives over tcp (option-style API; algorithm classes as "
                          "variants)"),
    .flags =
        COLLPROF_BACKEND_GROUPS | COLLPROF_BACKEND_SHARED_BUFFERS | COLLPROF_BACKEND_LOCAL_GROUPS,
    COLLPROF_BACKEND_SLOTS(gl, collprof_no_mem_copy, collprof_no_run_batch),
    COLLPROF_BACKEND_EXTRAS(gl_options, COLLPROF_NROWS(gl_options), 0, gl_describe),
    .copy_rate = collprof_no_copy_rate, /* C++ names every field; host memory only */
};
