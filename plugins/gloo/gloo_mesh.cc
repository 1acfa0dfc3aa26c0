#include "config.h"

/*
 * The full mesh of the Gloo plugin (MeshContext, gloo_internal.h).
 *
 * Gloo's rendezvous::Context::connectFullMesh() drives a Store
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
 */

#include "gloo_internal.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/transport/address.h>
#include <gloo/transport/context.h>
#include <gloo/transport/tcp/address.h>

namespace cpgloo
{
namespace
{

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

/* This rank's record: its pairs' addresses in mine, their ports in ports; the flags say which
 * derivations its own pairs obey. */
void describe(int rank, int size, const std::vector<std::vector<char>> &mine,
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
            by_port =
                by_port && same_address(addr_bytes(me, ports[static_cast<size_t>(i)], me.base), b);
        }
    }
    me.flags = static_cast<uint8_t>(me.flags | (derivable ? kAddrDerivable : 0) |
                                    (by_port ? kAddrPorts : 0));
}

/* What one rank knows and gets while its mesh connects. */
struct Exchange {
    const collprof_host_t *host;
    int rank, size;
    std::vector<std::vector<char>> mine;   /* its pairs' addresses, [peer] */
    std::vector<uint16_t> ports;           /* their ports, [peer] */
    std::vector<AddrRecord> all;           /* every rank's record */
    std::vector<std::vector<char>> theirs; /* the address of each peer's pair for this rank */
    std::string msg;                       /* why it failed */
};

/* col[i*slot ..] gets rank i's slot for this rank out of its row of size slots: an all-to-all
 * where the core has one (each rank moves its row and its column), else an allgather of every
 * row (size^2 slots per rank, size^3 through a star). */
int exchange(const Exchange &x, const std::vector<char> &row, size_t slot, std::vector<char> &col)
{
    const size_t n = static_cast<size_t>(x.size);
    col.assign(row.size(), 0);
    if (COLLPROF_HOST_HAS(x.host, oob_alltoall)) {
        return x.host->oob_alltoall(row.data(), col.data(), slot);
    }
    std::vector<char> all(row.size() * n, 0);
    int rc = x.host->oob_allgather(row.data(), all.data(), row.size());
    for (size_t i = 0; i < n && rc == COLLPROF_OK; i++) {
        memcpy(&col[i * slot], &all[i * row.size() + static_cast<size_t>(x.rank) * slot], slot);
    }
    return rc;
}

/* The full table: size slots of [uint64 length][len bytes] per rank, through an all-to-all. */
int table(Exchange &x, uint64_t len)
{
    const size_t slot = sizeof(uint64_t) + static_cast<size_t>(len);
    const size_t per_rank = slot * static_cast<size_t>(x.size);
    std::vector<char> out(per_rank, 0), col;
    for (int i = 0; i < x.size; i++) {
        const auto &b = x.mine[static_cast<size_t>(i)];
        uint64_t l = b.size();
        memcpy(&out[static_cast<size_t>(i) * slot], &l, sizeof(l));
        if (l) {
            memcpy(&out[static_cast<size_t>(i) * slot + sizeof(l)], b.data(), b.size());
        }
    }
    int rc = exchange(x, out, slot, col);
    if (rc != COLLPROF_OK) {
        x.msg = "out-of-band exchange of pair addresses failed (" + std::to_string(rc) + ")";
        return rc;
    }
    for (int i = 0; i < x.size; i++) {
        if (i == x.rank) {
            continue;
        }
        const char *p = &col[static_cast<size_t>(i) * slot];
        uint64_t l;
        memcpy(&l, p, sizeof(l));
        if (l == 0 || l > len) {
            x.msg = "rank " + std::to_string(i) + " published no address for rank " +
                    std::to_string(x.rank);
            return COLLPROF_ERR_BACKEND;
        }
        x.theirs[static_cast<size_t>(i)].assign(p + sizeof(l), p + sizeof(l) + l);
    }
    return COLLPROF_OK;
}

/* Each pair's port through an all-to-all of 2-byte slots; the rest from the records. */
int by_ports(Exchange &x)
{
    const size_t slot = sizeof(uint16_t);
    std::vector<char> out(slot * static_cast<size_t>(x.size)), col;
    memcpy(out.data(), x.ports.data(), out.size());
    int rc = exchange(x, out, slot, col);
    if (rc != COLLPROF_OK) {
        x.msg = "out-of-band exchange of pair ports failed (" + std::to_string(rc) + ")";
        return rc;
    }
    for (int i = 0; i < x.size; i++) {
        if (i == x.rank) {
            continue;
        }
        uint16_t port;
        memcpy(&port, &col[static_cast<size_t>(i) * slot], slot);
        if (port == 0) {
            x.msg = "rank " + std::to_string(i) + " published no port for rank " +
                    std::to_string(x.rank);
            return COLLPROF_ERR_BACKEND;
        }
        const AddrRecord &r = x.all[static_cast<size_t>(i)];
        x.theirs[static_cast<size_t>(i)] = addr_bytes(r, port, r.base);
    }
    return COLLPROF_OK;
}

/* The message for a COLLPROF_GLOO_ADDR that is neither auto nor table, on rank bad. */
std::string bad_env(const Exchange &x, int bad, const char *env)
{
    std::string v = bad == x.rank && env ? std::string(env).substr(0, 64) : "";
    for (char &c : v) {
        c = c >= 0x20 && c < 0x7f ? c : '?'; /* no control bytes in the message */
    }
    return bad == x.rank
               ? "COLLPROF_GLOO_ADDR is '" + v + "': neither auto nor table"
               : "COLLPROF_GLOO_ADDR of rank " + std::to_string(bad) + " is neither auto nor table";
}

/* The way the addresses go round, from every rank's record (alike on every rank), taken:
 * a collprof status; how says which. */
int choose(Exchange &x, const char *env, std::string &how)
{
    uint32_t every = kAddrDerivable | kAddrPorts, any = 0;
    uint64_t len = 0;
    int odd = -1; /* the first rank whose pairs derive neither way */
    for (size_t i = 0; i < x.all.size(); i++) {
        every &= x.all[i].flags;
        any |= x.all[i].flags;
        len = std::max<uint64_t>(len, x.all[i].len);
        if (odd < 0 && !(x.all[i].flags & (kAddrDerivable | kAddrPorts))) {
            odd = static_cast<int>(i);
        }
    }
    if (any & kAddrBadEnv) {
        x.msg = bad_env(x, first_with(x.all, kAddrBadEnv), env);
        return COLLPROF_ERR_INVALID;
    }
    if (any & kAddrTable) {
        how = "table (COLLPROF_GLOO_ADDR=table on rank " +
              std::to_string(first_with(x.all, kAddrTable)) + ")";
        return table(x, len);
    }
    if (every & kAddrDerivable) {
        how = "one per rank (derived pair sequence numbers)";
        for (int i = 0; i < x.size; i++) {
            if (i != x.rank) {
                const AddrRecord &r = x.all[static_cast<size_t>(i)];
                x.theirs[static_cast<size_t>(i)] =
                    addr_bytes(r, r.port, r.base + pair_index(i, x.rank));
            }
        }
        return COLLPROF_OK;
    }
    if (every & kAddrPorts) {
        how = "one per rank and each pair's port (this Gloo listens on a port per pair)";
        return by_ports(x);
    }
    how = odd >= 0 ? "table (rank " + std::to_string(odd) +
                         "'s pair addresses follow neither derivation)"
                   : std::string("table (the ranks' pair addresses follow different "
                                 "derivations)");
    return table(x, len);
}

/* Create a pair per peer in rank order, their addresses in x.mine, this rank's record in me;
 * a listener per pair (Debian 12's Gloo) is put under a filter that drops everything at once
 * (gloo_filter.cc), its fd in lfd, unless COLLPROF_GLOO_FILTER=0. */
void create_pairs(gloo::transport::Context &tctx, Exchange &x, AddrRecord &me,
                  std::vector<int> &lfd)
{
    const char *off = getenv("COLLPROF_GLOO_FILTER");
    const bool filter = !(off && strcmp(off, "0") == 0);
    size_t maxlen = 0;
    for (int i = 0; i < x.size; i++) {
        if (i != x.rank) {
            const int hint = filter ? lowest_free_fd() : -1;
            auto &b = x.mine[static_cast<size_t>(i)];
            b = tctx.createPair(i)->address().bytes();
            maxlen = std::max(maxlen, b.size());
            const int fd = filter ? find_listener(b, hint) : -1;
            if (fd >= 0 && filter_drop_all(fd)) {
                lfd[static_cast<size_t>(i)] = fd;
            }
        }
    }
    me.len = static_cast<uint16_t>(maxlen);
    describe(x.rank, x.size, x.mine, x.ports, me);
}

/* Where every rank's pairs listen on a port of their own (sequence numbers -1), the ranks'
 * interface addresses go round (one allgather, alike on every rank), and each filtered
 * listener then admits its peer's addresses alone, before any port is published; elsewhere the
 * filters come off.  A collprof status. */
int filter_pairs(const Exchange &x, const std::vector<int> &lfd, std::string &msg)
{
    bool per_pair = true;
    for (const AddrRecord &r : x.all) {
        per_pair = per_pair && r.base == -1 && !(r.flags & (kAddrBadEnv | kAddrDerivable));
    }
    std::vector<LocalAddrs> peers;
    if (per_pair) {
        LocalAddrs me;
        local_addrs(me);
        peers.resize(static_cast<size_t>(x.size));
        int rc = x.host->oob_allgather(&me, peers.data(), sizeof(me));
        if (rc != COLLPROF_OK) {
            msg = "oob_allgather of the interface addresses failed (" + std::to_string(rc) + ")";
            return rc;
        }
    }
    int done = 0, open = 0;
    for (size_t i = 0; i < lfd.size(); i++) {
        if (lfd[i] >= 0) {
            const bool f = filter_peer(lfd[i], x.mine[i], per_pair ? &peers[i] : nullptr);
            done += f;
            open += !f;
        }
    }
    if (x.host->log && (done || open)) {
        x.host->log(COLLPROF_LOG_INFO,
                    "gloo: %d pair listener(s) admit only their peer's addresses, %d unfiltered",
                    done, open);
    }
    return COLLPROF_OK;
}

/* Connect every pair of tctx to x.theirs, whatever failed before: a rank that stopped at
 * its first failure would leave the peers listening for it to their connect timeout (5 x the
 * timeout).  0 every pair connected, 1 one was refused, reset or closed by the other end (worth
 * a fresh mesh: a foreign connection took the listener, and may close again), 2 another
 * failure; msg the worst's reason. */
int32_t connect_pairs(gloo::transport::Context &tctx, const Exchange &x, std::string &msg)
{
    int32_t bad = 0;
    for (int i = 0; i < x.size; i++) {
        if (i == x.rank) {
            continue;
        }
        try {
            tctx.getPair(i)->connect(x.theirs[static_cast<size_t>(i)]);
        } catch (const std::exception &e) {
            const char *w = e.what();
            int32_t b = strstr(w, "refused") || strstr(w, "reset") || strstr(w, "closed") ? 1 : 2;
            if (b > bad || msg.empty()) {
                msg = std::string("Gloo: ") + w;
            }
            bad = std::max(bad, b);
        }
    }
    return bad;
}

} // namespace

int MeshContext::connect(const collprof_host_t *host, std::shared_ptr<gloo::transport::Device> &dev,
                         std::string &msg, bool &again)
{
    again = false;
    const size_t n = static_cast<size_t>(size);
    const char *env = getenv("COLLPROF_GLOO_ADDR");
    Exchange x{host,
               rank,
               size,
               std::vector<std::vector<char>>(n),
               std::vector<uint16_t>(n, 0),
               std::vector<AddrRecord>(n),
               std::vector<std::vector<char>>(n),
               ""};
    AddrRecord me;
    memset(&me, 0, sizeof(me));
    me.base = -1;
    if (env && env[0] && strcmp(env, "auto") != 0) {
        me.flags = strcmp(env, "table") == 0 ? kAddrTable : kAddrBadEnv;
    }
    auto tctx = dev->createContext(rank, size);
    tctx->setTimeout(getTimeout());
    std::vector<int> lfd(n, -1); /* the pairs' listeners under a filter */
    if (!(me.flags & kAddrBadEnv)) {
        create_pairs(*tctx, x, me, lfd);
    }
    /* every rank makes this call, whatever its record says */
    int rc = host->oob_allgather(&me, x.all.data(), sizeof(me));
    if (rc != COLLPROF_OK) {
        msg = "oob_allgather of the address records failed (" + std::to_string(rc) + ")";
        return rc;
    }
    rc = filter_pairs(x, lfd, msg);
    if (rc != COLLPROF_OK) {
        return rc;
    }
    rc = choose(x, env, how);
    if (rc != COLLPROF_OK) {
        msg = x.msg;
        return rc;
    }
    int stolen = attempt == 1 ? steal_fault(x.rank, x.size, x.mine, x.theirs) : -1;
    int32_t bad = connect_pairs(*tctx, x, msg);
    if (stolen >= 0) {
        close(stolen);
    }
    std::vector<int32_t> all(n, 0);
    rc = host->oob_allgather(&bad, all.data(), sizeof(bad));
    if (rc != COLLPROF_OK) {
        msg = "oob_allgather of the connect outcomes failed (" + std::to_string(rc) + ")";
        return rc;
    }
    int32_t worst = *std::max_element(all.begin(), all.end());
    if (worst != 0) {
        int who = static_cast<int>(std::find(all.begin(), all.end(), worst) - all.begin());
        if (bad == 0) {
            msg = "rank " + std::to_string(who) + " of the mesh could not connect a pair";
        }
        again = worst == 1;
        return COLLPROF_ERR_BACKEND;
    }
    device_ = dev;
    transportContext_ = std::move(tctx);
    return COLLPROF_OK;
}

/* The mesh of g on g->dev: a fresh one (new pairs, new listeners) while a pair's connect was
 * refused, reset or closed on some rank, at most kMeshTries in all, alike on every rank: a
 * connection from outside the run (a port scan) that reached a pair's listener before the peer took
 * it (Gloo with a listener per pair accepts the first that comes), so that it costs a second try,
 * not the backend. */
int gl_connect_mesh(GlCtx *g, const collprof_host_t *host, const char *tmo, std::string &msg)
{
    constexpr int kMeshTries = 5;
    int rc = COLLPROF_ERR_BACKEND;
    for (int k = 1; k <= kMeshTries; k++) {
        g->ctx = std::make_shared<MeshContext>(g->rank, g->nranks);
        if (tmo && tmo[0]) {
            long s = strtol(tmo, nullptr, 10);
            if (s > 0) {
                g->ctx->setTimeout(std::chrono::seconds(s));
            }
        }
        g->ctx->attempt = k;
        bool again = false;
        msg.clear();
        rc = g->ctx->connect(host, g->dev, msg, again);
        if (rc == COLLPROF_OK || !again || k == kMeshTries) {
            break;
        }
        if (host->log) {
            host->log(g->rank == 0 ? COLLPROF_LOG_WARN : COLLPROF_LOG_INFO,
                      "gloo: the full mesh of %d ranks did not connect (%s): a fresh mesh, try "
                      "%d of %d",
                      g->nranks, msg.c_str(), k + 1, kMeshTries);
        }
        g->ctx.reset();
    }
    return rc;
}

} // namespace cpgloo
