#include "config.h"

/*
 * Pair listeners that admit their peer alone (issue 38: no foreign connection changes a
 * verdict).
 *
 * A Gloo with a listening port per pair (Debian 12's libgloo 0.0~git20220518, whose pairs'
 * sequence numbers are -1) accepts the first connection that reaches a pair's listener as the
 * peer and closes the listener: a port scan or any local process that connects first takes the
 * pair, and the real peer is refused (gl_connect_mesh then builds a fresh mesh, whose new ports
 * a fast scanner takes again).  So the plugin puts a classic BPF socket filter on each pair's
 * listening socket, which the kernel runs on every packet the socket receives, SYNs included:
 *
 * - at once after Gloo created the pair (before its port went anywhere), a filter that drops
 *   everything;
 * - once every rank's addresses are known (one allgather of a LocalAddrs per rank), a filter
 *   that admits the packets whose source address is one of the peer's own interface addresses
 *   (getifaddrs on the peer; a TCP connection's source is one of them), and drops the rest.
 *   The peers dial only after the next exchange (the pairs' ports), by which time every rank
 *   has put its filters on.
 *
 * A connection the filter drops never completes its handshake, so Gloo never sees it.  What it
 * cannot tell apart: a process on the peer's own node (the same addresses), so a pair between
 * two ranks of one node admits any local process; and a peer with more addresses of the
 * family than a record holds (kV4/kV6), whose pairs stay unfiltered.  The accepted socket keeps
 * the filter (the kernel copies it), which admits the peer's packets alone: the same rule.
 * COLLPROF_GLOO_FILTER=0 on a rank leaves its own listeners unfiltered.  The Gloo with one
 * listener per device (pytorch/gloo from May 2023) reads a sequence number from each
 * connection before it picks the pair, so a silent connection takes nothing there: no filter.
 */

#include "gloo_internal.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/filter.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gloo/transport/tcp/address.h>

namespace cpgloo
{

/* A rank's interface addresses, as they go round (96 bytes; see gloo_internal.h). */
static_assert(sizeof(LocalAddrs) == 96, "the record goes over the OOB channel as it is");

uint16_t port_of(const sockaddr_storage &ss)
{
    return ss.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in *>(&ss)->sin_port
                                   : reinterpret_cast<const sockaddr_in6 *>(&ss)->sin6_port;
}

void local_addrs(LocalAddrs &me)
{
    memset(&me, 0, sizeof(me));
    const char *e = getenv("COLLPROF_GLOO_FILTER");
    if (e && strcmp(e, "0") == 0) {
        me.flags |= kLocalOff;
    }
    struct ifaddrs *ifs = nullptr;
    if (getifaddrs(&ifs) != 0) {
        me.flags |= kLocalMany4 | kLocalMany6; /* unknown: never filter against it */
        return;
    }
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (i->ifa_addr == nullptr) {
            continue;
        }
        if (i->ifa_addr->sa_family == AF_INET) {
            const auto *sa = reinterpret_cast<const sockaddr_in *>(i->ifa_addr);
            if (me.n4 < kV4) {
                memcpy(&me.v4[me.n4++], &sa->sin_addr, sizeof(me.v4[0]));
            } else {
                me.flags |= kLocalMany4;
            }
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            const auto *sa = reinterpret_cast<const sockaddr_in6 *>(i->ifa_addr);
            if (me.n6 < kV6) {
                memcpy(me.v6[me.n6++], &sa->sin6_addr, sizeof(me.v6[0]));
            } else {
                me.flags |= kLocalMany6;
            }
        }
    }
    freeifaddrs(ifs);
}

int lowest_free_fd()
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    }
    return fd;
}

namespace
{

/* fd is a listening TCP socket of family fam bound to port (network order). */
bool is_listener(int fd, int fam, uint16_t port)
{
    int on = 0;
    socklen_t l = sizeof(on);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &l) != 0 || !on) {
        return false;
    }
    sockaddr_storage ss;
    l = sizeof(ss);
    if (getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &l) != 0 || ss.ss_family != fam) {
        return false;
    }
    return port_of(ss) == port;
}

bool attach(int fd, std::vector<sock_filter> &code)
{
    sock_fprog prog;
    prog.len = static_cast<unsigned short>(code.size());
    prog.filter = code.data();
    return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) == 0;
}

sock_filter stmt(uint16_t code, uint32_t k)
{
    sock_filter f;
    f.code = code;
    f.jt = 0;
    f.jf = 0;
    f.k = k;
    return f;
}

sock_filter jeq(uint32_t k, uint8_t jt, uint8_t jf)
{
    sock_filter f;
    f.code = BPF_JMP | BPF_JEQ | BPF_K;
    f.jt = jt;
    f.jf = jf;
    f.k = k;
    return f;
}

uint32_t word(const uint8_t *p)
{
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
}

/* The program admitting a source address among n of len bytes at addrs (IPv4: 4, IPv6: 16);
 * the source is at net_off in the network header.  Layout: for each address, its words loaded
 * and compared, a mismatch jumping to the next address; a full match jumps to "admit"; after
 * the last address, "drop". */
std::vector<sock_filter> program(const uint8_t *addrs, int n, size_t len, uint32_t net_off)
{
    const uint32_t base = static_cast<uint32_t>(SKF_NET_OFF) + net_off;
    const int words = static_cast<int>(len / 4);
    const int per = 2 * words; /* a load and a compare per word */
    std::vector<sock_filter> c;
    for (int a = 0; a < n; a++) {
        for (int w = 0; w < words; w++) {
            c.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, base + 4u * static_cast<uint32_t>(w)));
            /* instructions after this compare: to this address's end, then the later addresses */
            const int rest_here = per - (2 * w + 2);
            const int rest_after = (n - a - 1) * per;
            const uint8_t to_admit = static_cast<uint8_t>(rest_here + rest_after + 1);
            const uint8_t to_next = static_cast<uint8_t>(rest_here);
            c.push_back(jeq(word(addrs + static_cast<size_t>(a) * len + 4u * w),
                            w == words - 1 ? to_admit : 0, w == words - 1 ? 0 : to_next));
        }
    }
    c.push_back(stmt(BPF_RET | BPF_K, 0));           /* drop */
    c.push_back(stmt(BPF_RET | BPF_K, 0xffffffffu)); /* admit */
    return c;
}

} // namespace

int find_listener(const std::vector<char> &pair_addr, int hint)
{
    const gloo::transport::tcp::Address a(pair_addr);
    const sockaddr_storage &ss = a.getSockaddr();
    if (a.getSeq() != -1 || (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
        return -1; /* a Gloo with a device listener: nothing to filter */
    }
    const uint16_t port = port_of(ss);
    if (hint >= 0 && is_listener(hint, ss.ss_family, port)) {
        return hint;
    }
    DIR *d = opendir("/proc/self/fd");
    int found = -1;
    for (struct dirent *e = d ? readdir(d) : nullptr; e && found < 0; e = readdir(d)) {
        char *end = nullptr;
        long fd = strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && fd != dirfd(d) &&
            is_listener(static_cast<int>(fd), ss.ss_family, port)) {
            found = static_cast<int>(fd);
        }
    }
    if (d) {
        closedir(d);
    }
    return found;
}

bool filter_drop_all(int fd)
{
    std::vector<sock_filter> c{stmt(BPF_RET | BPF_K, 0)};
    return attach(fd, c);
}

namespace
{

bool filter_peer_now(int fd, int family, const LocalAddrs &peer)
{
    if (family == AF_INET) {
        if ((peer.flags & kLocalMany4) || peer.n4 == 0) {
            return false;
        }
        auto c = program(reinterpret_cast<const uint8_t *>(peer.v4), peer.n4, 4, 12);
        return attach(fd, c);
    }
    if ((peer.flags & kLocalMany6) || peer.n6 == 0) {
        return false;
    }
    /* IPv6 only: the first nibble is the version (a listener bound to one IPv6 address sees
     * nothing else, but the source's offset holds only for IPv6) */
    std::vector<sock_filter> c{stmt(BPF_LD | BPF_B | BPF_ABS, static_cast<uint32_t>(SKF_NET_OFF)),
                               stmt(BPF_ALU | BPF_AND | BPF_K, 0xf0), jeq(0x60, 1, 0),
                               stmt(BPF_RET | BPF_K, 0)};
    auto p = program(&peer.v6[0][0], peer.n6, 16, 8);
    c.insert(c.end(), p.begin(), p.end());
    return attach(fd, c);
}

} // namespace

bool filter_peer(int fd, const std::vector<char> &pair_addr, const LocalAddrs *peer)
{
    const gloo::transport::tcp::Address a(pair_addr);
    const sockaddr_storage &ss = a.getSockaddr();
    const uint16_t port = port_of(ss);
    /* still the pair's listener: one accepted in the instant before its first filter is closed,
     * and its number may be another socket's by now */
    if (!is_listener(fd, ss.ss_family, port)) {
        return false;
    }
    if (peer && filter_peer_now(fd, ss.ss_family, *peer)) {
        return true;
    }
    int zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &zero, sizeof(zero));
    return false;
}

/* COLLPROF_FAULT=gloosteal (collprof(1)): on a mesh's first try, each rank connects a silent
 * socket of its own to the listener of the first of its pairs that listens (Gloo's rule: the
 * lower address, then the lower port), as a connection from outside the run would, before the
 * peer dials it (every rank waits 300 ms first).  The socket, or -1. */
int steal_fault(int rank, int size, const std::vector<std::vector<char>> &mine,
                const std::vector<std::vector<char>> &theirs)
{
    const char *f = getenv("COLLPROF_FAULT");
    if (f == nullptr || strcmp(f, "gloosteal") != 0) {
        return -1;
    }
    int fd = -1;
    for (int i = 0; i < size && fd < 0; i++) {
        if (i == rank || mine[static_cast<size_t>(i)].empty()) {
            continue;
        }
        auto a = gloo::transport::tcp::Address(mine[static_cast<size_t>(i)]).getSockaddr();
        auto b = gloo::transport::tcp::Address(theirs[static_cast<size_t>(i)]).getSockaddr();
        if (a.ss_family != AF_INET || b.ss_family != AF_INET) {
            continue;
        }
        const auto *sa = reinterpret_cast<const sockaddr_in *>(&a);
        const auto *sb = reinterpret_cast<const sockaddr_in *>(&b);
        int rv = memcmp(&sa->sin_addr, &sb->sin_addr, sizeof(sa->sin_addr));
        rv = rv != 0 ? rv : sa->sin_port - sb->sin_port;
        if (rv < 0) { /* this side listens */
            /* non-blocking: a listener whose filter drops it leaves the SYN pending */
            fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd >= 0 &&
                ::connect(fd, reinterpret_cast<const sockaddr *>(sa), sizeof(*sa)) != 0 &&
                errno != EINPROGRESS) {
                close(fd);
                fd = -1;
            }
        }
    }
    usleep(300000);
    return fd;
}

} // namespace cpgloo
