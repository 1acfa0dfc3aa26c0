#include "config.h"

/*
 * TCP control channel for the full-world OOB collectives: see oob_tcp.h.
 *
 * Why: every PMIx exchange publishes a fresh key, and the PMIx server's
 * cost per operation grows with the keys it holds, so a run of many cells
 * spent most of its time in the server's key lookups.  Here a collective
 * costs a few small messages, whatever came before.
 *
 * Messages: a 16-byte header (magic, sequence number, payload length, all
 * big-endian) and the payload.  The sequence number counts the channel's
 * collectives, the same on every rank: a message from another collective
 * or of another length is an error (ranks out of step), never data.
 *
 * Failures: a peer that exits or is killed closes its socket, so whoever
 * waits on it reads EOF and fails at once; on any error this rank closes
 * every socket, so that its own peers fail at once too.  A stopped peer
 * just keeps the others waiting, as a fence does: the watchdog ends the
 * run (it takes no lock of ours and _exit closes the sockets).
 */

#include "boot/oob_tcp.h"
#include "collprof/status.h"
#include "core/log.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define TCP_MAGIC     0x43504f42u /* "CPOB" */
#define HELLO_MAGIC   0x43504f48u /* "CPOH": a rank introduces itself */
#define VERDICT_MAGIC 0x43504f56u /* "CPOV": rank 0 says whether all came */
#define ACCEPT_S      30.0        /* rank 0 waits this long for every rank */
#define VERDICT_S     120.0       /* a rank waits this long for rank 0's verdict */
#define CONNECT_S     30.0

static int up;                /* enabled: the collectives go here */
static int me, n = 1;         /* rank, ranks */
static int *fds;              /* rank 0: fds[r] for r >= 1; others: fds[0] */
static int nfds;              /* entries of fds: n on rank 0, 1 on the others */
static int lfd[2] = {-1, -1}; /* rank 0's listeners (loopback, node) */
static uint32_t seq;          /* next collective's number */
static char why[256];         /* why the channel is not up */
static char desc[100];        /* "tcp ADDR:PORT" */
static cp_tcp_stats_t stats;

typedef struct hdr {
    uint32_t magic;
    uint32_t seq;
    uint32_t len_hi, len_lo;
} hdr_t;

static void set_why(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_why(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
}

const char *cp_tcp_why(void)
{
    return why;
}

int cp_tcp_on(void)
{
    return up;
}

const char *cp_tcp_desc(void)
{
    return desc;
}

void cp_tcp_stats(cp_tcp_stats_t *out)
{
    *out = stats;
}

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void cp_tcp_close(void)
{
    close_fd(&lfd[0]);
    close_fd(&lfd[1]);
    if (fds != NULL) {
        for (int r = 0; r < nfds; r++) {
            close_fd(&fds[r]);
        }
        free(fds);
        fds = NULL;
        nfds = 0;
    }
    up = 0;
}

/* ---------------------------------------------------------------------- */
/* Whole-message I/O over blocking sockets: partial transfers and EINTR. */

/* 0, or -1 with errno set (EPIPE/ECONNRESET: the peer went away). */
static int send_all(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        struct msghdr mh;
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)iovcnt;
        ssize_t k = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        size_t done = (size_t)k;
        while (iovcnt > 0 && done >= iov->iov_len) {
            done -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (char *)iov->iov_base + done;
            iov->iov_len -= done;
        }
    }
    return 0;
}

/* 0; 1 at EOF before len bytes; -1 with errno set. */
static int recv_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t k = recv(fd, p, len, 0);
        if (k == 0) {
            return 1;
        }
        if (k < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

static void hdr_set(hdr_t *h, uint32_t magic, uint32_t s, uint64_t len)
{
    h->magic = htonl(magic);
    h->seq = htonl(s);
    h->len_hi = htonl((uint32_t)(len >> 32));
    h->len_lo = htonl((uint32_t)len);
}

/* The channel is unusable from now on: close everything so peers see EOF. */
static int broken(void)
{
    cp_tcp_close();
    set_why("the channel failed earlier in this run");
    return COLLPROF_ERR_BOOTSTRAP;
}

static int send_msg(int peer, const void *buf, size_t len)
{
    hdr_t h;
    hdr_set(&h, TCP_MAGIC, seq, len);
    struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)buf, len}};
    if (send_all(fds[peer], iov, len > 0 ? 2 : 1) != 0) {
        cp_log(CP_LOG_ERROR, "OOB over TCP: sending to rank %d failed: %s%s", peer, strerror(errno),
               errno == EPIPE || errno == ECONNRESET ? " (it exited or was killed?)" : "");
        return broken();
    }
    stats.sent_bytes += len;
    return COLLPROF_OK;
}

static int recv_failed(int peer, int rc)
{
    if (rc > 0) {
        cp_log(CP_LOG_ERROR,
               "OOB over TCP: rank %d closed its connection (it exited or was killed?)", peer);
    } else {
        cp_log(CP_LOG_ERROR, "OOB over TCP: receiving from rank %d failed: %s", peer,
               strerror(errno));
    }
    return broken();
}

static int recv_msg(int peer, void *buf, size_t len)
{
    hdr_t h;
    int rc = recv_all(fds[peer], &h, sizeof(h));
    if (rc != 0) {
        return recv_failed(peer, rc);
    }
    uint64_t got = ((uint64_t)ntohl(h.len_hi) << 32) | ntohl(h.len_lo);
    if (ntohl(h.magic) != TCP_MAGIC || ntohl(h.seq) != seq || got != len) {
        cp_log(CP_LOG_ERROR,
               "OOB over TCP: from rank %d: message %u of %llu bytes (magic %08x), expected "
               "message %u of %zu bytes: ranks out of step",
               peer, ntohl(h.seq), (unsigned long long)got, ntohl(h.magic), seq, len);
        return broken();
    }
    rc = recv_all(fds[peer], buf, len);
    if (rc != 0) {
        return recv_failed(peer, rc);
    }
    stats.got_bytes += len;
    return COLLPROF_OK;
}

/* ---------------------------------------------------------------------- */
/* The collectives. */

static int begin(void)
{
    if (!up) {
        cp_log(CP_LOG_ERROR, "OOB over TCP: %s", why[0] ? why : "the channel is not up");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

static int end(int rc, double t0)
{
    seq++;
    stats.ops++;
    stats.op_s += (cp_now_us() - t0) * 1e-6;
    return rc;
}

static int allgather(const void *in, void *out, size_t len)
{
    char *dst = out;
    int rc = COLLPROF_OK;
    if (me != 0) {
        rc = send_msg(0, in, len);
        return rc == COLLPROF_OK ? recv_msg(0, dst, (size_t)n * len) : rc;
    }
    if (len > 0) {
        memmove(dst, in, len);
    }
    for (int r = 1; r < n && rc == COLLPROF_OK; r++) {
        rc = recv_msg(r, dst + (size_t)r * len, len);
    }
    for (int r = 1; r < n && rc == COLLPROF_OK; r++) {
        rc = send_msg(r, dst, (size_t)n * len);
    }
    return rc;
}

int cp_tcp_allgather(const void *in, void *out, size_t len)
{
    int rc = begin();
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    return end(allgather(in, out, len), t0);
}

/* Every rank's block to rank 0 only: n len bytes through rank 0, where an allgather sends
 * it n^2 len. */
int cp_tcp_gather(const void *in, void *out, size_t len)
{
    int rc = begin();
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    if (me != 0) {
        return end(send_msg(0, in, len), t0);
    }
    char *dst = out;
    if (len > 0) {
        memmove(dst, in, len);
    }
    for (int r = 1; r < n && rc == COLLPROF_OK; r++) {
        rc = recv_msg(r, dst + (size_t)r * len, len);
    }
    return end(rc, t0);
}

/* Rank 0 holds every row (n * n * len bytes) and sends each rank its column:
 * rank 0 moves 2 n^2 len bytes, where an allgather of the rows moves n^3 len. */
static int alltoall_root(const void *in, void *out, size_t len)
{
    size_t row = (size_t)n * len;
    char *all = row > 0 && (size_t)n <= SIZE_MAX / row ? malloc(row * (size_t)n) : NULL;
    char *col = malloc(row > 0 ? row : 1);
    int rc = all != NULL && col != NULL ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY;
    if (rc != COLLPROF_OK) {
        cp_log(CP_LOG_ERROR, "OOB over TCP: no memory for an all-to-all of %d x %zu bytes", n, row);
        rc = broken(); /* the other ranks see EOF and fail too */
    } else {
        memcpy(all, in, row);
    }
    for (int r = 1; r < n && rc == COLLPROF_OK; r++) {
        rc = recv_msg(r, all + (size_t)r * row, row);
    }
    for (int r = 0; r < n && rc == COLLPROF_OK; r++) {
        char *dst = r == 0 ? out : col;
        for (int q = 0; q < n; q++) {
            memcpy(dst + (size_t)q * len, all + (size_t)q * row + (size_t)r * len, len);
        }
        rc = r == 0 ? COLLPROF_OK : send_msg(r, col, row);
    }
    free(all);
    free(col);
    return rc;
}

int cp_tcp_alltoall(const void *in, void *out, size_t len)
{
    int rc = begin();
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    if (me == 0) {
        rc = alltoall_root(in, out, len);
    } else {
        rc = send_msg(0, in, (size_t)n * len);
        rc = rc == COLLPROF_OK ? recv_msg(0, out, (size_t)n * len) : rc;
    }
    return end(rc, t0);
}

static int bcast(void *buf, size_t len, int root)
{
    if (me != 0) {
        return me == root ? send_msg(0, buf, len) : recv_msg(0, buf, len);
    }
    int rc = root == 0 ? COLLPROF_OK : recv_msg(root, buf, len);
    for (int r = 1; r < n && rc == COLLPROF_OK; r++) {
        if (r != root) {
            rc = send_msg(r, buf, len);
        }
    }
    return rc;
}

int cp_tcp_bcast(void *buf, size_t len, int root)
{
    int rc = begin();
    if (rc != COLLPROF_OK) {
        return rc;
    }
    double t0 = cp_now_us();
    return end(bcast(buf, len, root), t0);
}

int cp_tcp_barrier(void)
{
    char none = 0;
    return cp_tcp_allgather(&none, &none, 0);
}

/* ---------------------------------------------------------------------- */
/* Start-up: rank 0 listens, the others connect. */

/* Numeric "host:port" ("[host]:port" for IPv6) of a bound socket. */
static int sock_name(int fd, char *buf, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0 ||
        getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        return -1;
    }
    int k = snprintf(buf, size, ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
    return k > 0 && (size_t)k < size ? 0 : -1;
}

/* Listen on host (numeric) at an ephemeral port; fd in *lfdp, "host:port" in pub. */
static int open_listener(const char *host, int backlog, int *lfdp, char *pub, size_t size)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    int grc = getaddrinfo(host, "0", &hints, &ai);
    if (grc != 0) {
        set_why("address %s: %s", host, gai_strerror(grc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0 ||
        sock_name(fd, pub, size) != 0) {
        set_why("listening on %s: %s", host, strerror(errno));
        freeaddrinfo(ai);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    freeaddrinfo(ai);
    *lfdp = fd;
    return 0;
}

static void numeric(const struct sockaddr *sa, socklen_t sl, char *buf, size_t size)
{
    if (getnameinfo(sa, sl, buf, size, NULL, 0, NI_NUMERICHOST) != 0) {
        buf[0] = '\0';
    }
}

/* The IPv4 (else IPv6) address of interface iface. */
static int iface_addr(const char *iface, char *buf, size_t size)
{
    struct ifaddrs *ifs = NULL;
    buf[0] = '\0';
    if (getifaddrs(&ifs) != 0) {
        set_why("getifaddrs: %s", strerror(errno));
        return -1;
    }
    for (int want = AF_INET; buf[0] == '\0' && want != 0; want = want == AF_INET ? AF_INET6 : 0) {
        for (struct ifaddrs *i = ifs; i != NULL && buf[0] == '\0'; i = i->ifa_next) {
            if (i->ifa_addr != NULL && i->ifa_addr->sa_family == want &&
                strcmp(i->ifa_name, iface) == 0) {
                numeric(i->ifa_addr,
                        want == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6),
                        buf, size);
            }
        }
    }
    freeifaddrs(ifs);
    if (buf[0] == '\0') {
        set_why("COLLPROF_OOB_IFACE=%s: no such interface with an address", iface);
        return -1;
    }
    return 0;
}

/* The IPv4 (else IPv6) address hostname resolves to; 1 when it is a loopback one. */
static int host_addr(const char *hostname, char *buf, size_t size)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int grc = getaddrinfo(hostname, NULL, &hints, &ai);
    if (grc != 0) {
        set_why("host name %s: %s", hostname, gai_strerror(grc));
        return -1;
    }
    const struct addrinfo *pick = NULL;
    for (const struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
        if (pick == NULL || (a->ai_family == AF_INET && pick->ai_family != AF_INET)) {
            pick = a;
        }
    }
    numeric(pick->ai_addr, pick->ai_addrlen, buf, size);
    int loop = pick->ai_family == AF_INET
                   ? (ntohl(((struct sockaddr_in *)pick->ai_addr)->sin_addr.s_addr) >> 24) == 127
                   : IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)pick->ai_addr)->sin6_addr);
    freeaddrinfo(ai);
    if (buf[0] == '\0') {
        set_why("host name %s: no numeric address", hostname);
        return -1;
    }
    return loop;
}

int cp_oob_pmix_forced(void)
{
    const char *mode = getenv("COLLPROF_OOB");
    return mode != NULL && strcmp(mode, "pmix") == 0;
}

int cp_tcp_listen(int rank, int nranks, int all_local, const char *hostname, cp_tcp_pub_t *pub)
{
    memset(pub, 0, sizeof(*pub));
    me = rank;
    n = nranks;
    if (rank != 0 || nranks < 2) {
        return 0;
    }
    const char *iface = getenv("COLLPROF_OOB_IFACE");
    if (cp_oob_pmix_forced()) {
        set_why("COLLPROF_OOB=pmix");
        return -1;
    }
    long soft, hard;
    if (cp_nofile_fit(nranks + CP_NOFILE_SPARE, &soft, &hard) != 0) {
        /* its accepts would fail until the channel's deadline */
        set_why("rank 0 may open %ld files (ulimit -n; hard limit %ld), too few for %d ranks' "
                "connections",
                soft, hard, nranks);
        cp_log(CP_LOG_WARN, "oob: %s: PMIx fences instead, slower; raise 'ulimit -n' to %d or more",
               why, nranks + CP_NOFILE_SPARE);
        return -1;
    }
    int backlog = nranks < 4096 ? nranks : 4096;
    char addr[NI_MAXHOST];
    if (iface != NULL && iface[0] != '\0') {
        /* everyone, this node's ranks too, goes through that interface */
        if (iface_addr(iface, addr, sizeof(addr)) != 0) {
            return -1;
        }
        return open_listener(addr, backlog, &lfd[1], pub->node, sizeof(pub->node));
    }
    if (open_listener("127.0.0.1", backlog, &lfd[0], pub->lo, sizeof(pub->lo)) != 0) {
        return -1;
    }
    if (all_local) {
        return 0;
    }
    /* other nodes: the address of this node's name (never a guessed interface) */
    int loop = host_addr(hostname, addr, sizeof(addr));
    if (loop == 0 && open_listener(addr, backlog, &lfd[1], pub->node, sizeof(pub->node)) == 0) {
        return 0;
    }
    if (loop > 0) {
        set_why("host name %s resolves to the loopback address %s", hostname, addr);
    }
    return 0; /* the ranks of this node can still come; the others say so */
}

/* Wait up to s seconds for fd to become readable (or writable). 1: ready, 0: timed out, -1. */
static int wait_fd(int fd, short ev, double s)
{
    double until = cp_now_us() + s * 1e6;
    for (;;) {
        double left_ms = (until - cp_now_us()) / 1e3;
        struct pollfd p = {fd, ev, 0};
        int k = poll(&p, 1, left_ms > 0 ? (int)left_ms + 1 : 0);
        if (k >= 0) {
            return k;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
}

/* Read exactly len bytes within s seconds: 0, or -1. */
static int recv_within(int fd, void *buf, size_t len, double s)
{
    double until = cp_now_us() + s * 1e6;
    char *p = buf;
    while (len > 0) {
        if (wait_fd(fd, POLLIN, (until - cp_now_us()) * 1e-6) != 1) {
            return -1;
        }
        ssize_t k = recv(fd, p, len, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
            return -1;
        }
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        }
    }
    return 0;
}

static void nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Blocking connect to "host:port" within CONNECT_S; the fd or -1. */
static int dial(const char *hostport)
{
    char host[NI_MAXHOST];
    const char *colon = strrchr(hostport, ':');
    size_t hl = colon ? (size_t)(colon - hostport) : 0;
    if (hl >= 2 && hostport[0] == '[') {
        hostport++;
        hl -= 2;
    }
    if (colon == NULL || hl == 0 || hl >= sizeof(host)) {
        set_why("bad address %s from rank 0", hostport);
        return -1;
    }
    memcpy(host, hostport, hl);
    host[hl] = '\0';
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    int grc = getaddrinfo(host, colon + 1, &hints, &ai);
    if (grc != 0) {
        set_why("address %s: %s", hostport, gai_strerror(grc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS && wait_fd(fd, POLLOUT, CONNECT_S) == 1) {
            socklen_t sl = sizeof(err);
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) != 0) {
                err = errno;
            }
        } else if (err == EINPROGRESS) {
            err = ETIMEDOUT;
        }
    }
    freeaddrinfo(ai);
    if (err != 0) {
        set_why("connecting to rank 0 at %s: %s", hostport, strerror(err));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    nodelay(fd);
    return fd;
}

/* Rank > 0: connect, introduce this rank, wait for rank 0's verdict. */
static int join(const char *hostport)
{
    fds = malloc(sizeof(*fds));
    if (fds == NULL) {
        set_why("out of memory");
        return -1;
    }
    nfds = 1;
    fds[0] = dial(hostport);
    if (fds[0] < 0) {
        return -1;
    }
    hdr_t h;
    hdr_set(&h, HELLO_MAGIC, (uint32_t)me, (uint64_t)n);
    struct iovec iov = {&h, sizeof(h)};
    if (send_all(fds[0], &iov, 1) != 0) {
        set_why("introducing this rank to rank 0: %s", strerror(errno));
        return -1;
    }
    uint32_t verdict = 0;
    if (recv_within(fds[0], &verdict, sizeof(verdict), VERDICT_S) != 0) {
        set_why("no answer from rank 0 at %s within %.0f s", hostport, VERDICT_S);
        return -1;
    }
    if (ntohl(verdict) != VERDICT_MAGIC) {
        set_why("rank 0 did not hear from every rank within %.0f s", ACCEPT_S);
        return -1;
    }
    snprintf(desc, sizeof(desc), "tcp %s", hostport);
    return 0;
}

/* Rank 0: one connection from a listener; its rank, or -1 (ignored). */
static int take_one(int l, double left_s)
{
    int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    hdr_t h;
    if (recv_within(fd, &h, sizeof(h), left_s < 5.0 ? left_s : 5.0) != 0 ||
        ntohl(h.magic) != HELLO_MAGIC || ntohl(h.len_hi) != 0 || ntohl(h.len_lo) != (uint32_t)n) {
        close(fd);
        return -1;
    }
    int r = (int)ntohl(h.seq);
    if (r < 1 || r >= n || fds[r] >= 0) {
        close(fd);
        return -1;
    }
    nodelay(fd);
    fds[r] = fd;
    return r;
}

/* Rank 0: accept every other rank (bounded), then tell each the verdict. */
static int gather_peers(void)
{
    fds = malloc((size_t)n * sizeof(*fds));
    if (fds == NULL) {
        set_why("out of memory");
        return -1;
    }
    nfds = n;
    for (int r = 0; r < nfds; r++) {
        fds[r] = -1;
    }
    int got = 0;
    double until = cp_now_us() + ACCEPT_S * 1e6;
    while (got < n - 1 && cp_now_us() < until) {
        struct pollfd p[2] = {{lfd[0], POLLIN, 0}, {lfd[1], POLLIN, 0}};
        int k = poll(p, 2, (int)((until - cp_now_us()) / 1e3) + 1);
        for (int i = 0; i < 2 && k > 0; i++) {
            if (p[i].revents & POLLIN) {
                got += take_one(lfd[i], (until - cp_now_us()) * 1e-6) > 0;
            }
        }
    }
    close_fd(&lfd[0]);
    close_fd(&lfd[1]);
    uint32_t verdict = htonl(got == n - 1 ? VERDICT_MAGIC : 0);
    for (int r = 1; r < n; r++) {
        struct iovec iov = {&verdict, sizeof(verdict)};
        if (fds[r] >= 0 && send_all(fds[r], &iov, 1) != 0) {
            got = -1;
        }
    }
    if (got != n - 1) {
        set_why("only %d of the %d other ranks connected within %.0f s", got < 0 ? 0 : got, n - 1,
                ACCEPT_S);
        return -1;
    }
    return 0;
}

int cp_tcp_connect(int rank, int nranks, const cp_tcp_pub_t *pub0, int same_node_as_0)
{
    me = rank;
    n = nranks;
    seq = 0;
    int rc;
    if (rank == 0) {
        rc = gather_peers();
        snprintf(desc, sizeof(desc), "tcp %s", pub0->lo[0] ? pub0->lo : pub0->node);
        if (pub0->lo[0] && pub0->node[0]) {
            snprintf(desc, sizeof(desc), "tcp %s + %s", pub0->lo, pub0->node);
        }
    } else {
        rc = join(same_node_as_0 && pub0->lo[0] ? pub0->lo : pub0->node);
    }
    if (rc != 0) {
        cp_tcp_close();
        return -1;
    }
    up = 1;
    why[0] = '\0';
    return 0;
}
