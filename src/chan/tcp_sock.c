#include "config.h"

/* Sockets for the TCP control channel: see tcp_sock.h. */

#include "chan/tcp_sock.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int cp_sock_send_all(int fd, struct iovec *iov, int iovcnt)
{
    while (iovcnt > 0) {
        struct msghdr mh;
        memset(&mh, 0, sizeof(mh));
        mh.msg_iov = iov;
        mh.msg_iovlen = (size_t)(iovcnt < IOV_MAX ? iovcnt : IOV_MAX); /* the rest next turn */
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

int cp_sock_recv_all(int fd, void *buf, size_t len)
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

int cp_sock_wait(int fd, short ev, double s)
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

int cp_sock_recv_within(int fd, void *buf, size_t len, double s)
{
    double until = cp_now_us() + s * 1e6;
    char *p = buf;
    while (len > 0) {
        int w = cp_sock_wait(fd, POLLIN, (until - cp_now_us()) * 1e-6);
        if (w != 1) {
            errno = w == 0 ? ETIMEDOUT : errno;
            return -1;
        }
        ssize_t k = recv(fd, p, len, MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
            errno = k == 0 ? ECONNRESET : errno; /* the peer closed: as a reset */
            return -1;
        }
        if (k > 0) {
            p += k;
            len -= (size_t)k;
        }
    }
    return 0;
}

void cp_sock_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

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

int cp_sock_somaxconn(void)
{
    char buf[32] = "";
    int fd = open("/proc/sys/net/core/somaxconn", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0) {
        close(fd);
    }
    long v = n > 0 ? strtol(buf, NULL, 10) : -1;
    return v > 0 && v <= INT_MAX ? (int)v : -1;
}

int cp_sock_listen(const char *host, int backlog, char *pub, size_t size, char *why, size_t wlen)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE;
    int grc = getaddrinfo(host, "0", &hints, &ai);
    if (grc != 0) {
        snprintf(why, wlen, "address %s: %s", host, gai_strerror(grc));
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, backlog) != 0 ||
        sock_name(fd, pub, size) != 0) {
        snprintf(why, wlen, "listening on %s: %s", host, strerror(errno));
        freeaddrinfo(ai);
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    freeaddrinfo(ai);
    return fd;
}

static void numeric(const struct sockaddr *sa, socklen_t sl, char *buf, size_t size)
{
    if (getnameinfo(sa, sl, buf, size, NULL, 0, NI_NUMERICHOST) != 0) {
        buf[0] = '\0';
    }
}

int cp_sock_iface_addr(const char *iface, char *buf, size_t size, char *why, size_t wlen)
{
    struct ifaddrs *ifs = NULL;
    buf[0] = '\0';
    if (getifaddrs(&ifs) != 0) {
        snprintf(why, wlen, "getifaddrs: %s", strerror(errno));
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
        snprintf(why, wlen, "COLLPROF_OOB_IFACE=%s: no such interface with an address", iface);
        return -1;
    }
    return 0;
}

int cp_sock_host_addr(const char *hostname, char *buf, size_t size, char *why, size_t wlen)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int grc = getaddrinfo(hostname, NULL, &hints, &ai);
    if (grc != 0) {
        snprintf(why, wlen, "host name %s: %s", hostname, gai_strerror(grc));
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
        snprintf(why, wlen, "host name %s: no numeric address", hostname);
        return -1;
    }
    return loop;
}

/* One connect within s seconds: the fd, or -1 with the errno in *err (0: not worth a retry,
 * the address is bad). */
static int dial_once(const char *hostport, double s, int *err_out, char *why, size_t wlen)
{
    if (cp_unix_addr(hostport)) {
        return cp_unix_dial(hostport, s, err_out, why, wlen);
    }
    char host[NI_MAXHOST];
    const char *colon = strrchr(hostport, ':');
    size_t hl = colon ? (size_t)(colon - hostport) : 0;
    if (hl >= 2 && hostport[0] == '[') {
        hostport++;
        hl -= 2;
    }
    if (colon == NULL || hl == 0 || hl >= sizeof(host)) {
        snprintf(why, wlen, "bad address %s", hostport);
        *err_out = 0;
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
        snprintf(why, wlen, "address %s: %s", hostport, gai_strerror(grc));
        *err_out = 0;
        return -1;
    }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        err = errno;
        if (err == EINPROGRESS && cp_sock_wait(fd, POLLOUT, s) == 1) {
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
        snprintf(why, wlen, "connecting to %s: %s", hostport, strerror(err));
        if (fd >= 0) {
            close(fd);
        }
        *err_out = err;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    cp_sock_nodelay(fd);
    return fd;
}

int cp_sock_dial(const char *hostport, double s, char *why, size_t wlen)
{
    int err;
    return dial_once(hostport, s, &err, why, wlen);
}

/* Errors a later connect may not meet: a full accept queue (its SYN dropped, or refused
 * where the kernel aborts on overflow), a reset, no local port or buffer for the moment. */
static int worth_retry(int err)
{
    return err == ETIMEDOUT || err == ECONNREFUSED || err == ECONNRESET || err == EAGAIN ||
           err == EADDRNOTAVAIL || err == ENOBUFS || err == EINTR || err == EHOSTUNREACH ||
           err == ENETUNREACH;
}

int cp_sock_dial_retry(const char *hostport, double s, unsigned seed, int *tries, char *why,
                       size_t wlen)
{
    double end = cp_now_s() + s, left = s, attempt_s = CP_SOCK_TRY_S, pause = 0.05;
    int fd = -1, err = 0;
    /* a fraction in [0.5, 1.5) of each pause, the same member always the same */
    double jitter = 0.5 + (double)((seed * 2654435761u) >> 22) / 1024.0;
    for (*tries = 0; fd < 0 && left > 0; left = end - cp_now_s()) {
        ++*tries;
        fd = dial_once(hostport, attempt_s < left ? attempt_s : left, &err, why, wlen);
        if (fd >= 0 || !worth_retry(err)) {
            break;
        }
        attempt_s *= 2; /* the kernel's own SYN retries get longer within a try */
        double p = pause * jitter, rest = end - cp_now_s();
        p = p < rest ? p : rest;
        if (p > 0) {
            struct timespec ts = {(time_t)p, (long)((p - (double)(time_t)p) * 1e9)};
            nanosleep(&ts, NULL);
        }
        pause = pause * 2 < CP_SOCK_PAUSE_MAX_S ? pause * 2 : CP_SOCK_PAUSE_MAX_S;
    }
    if (fd < 0 && *tries > 1) {
        size_t l = strlen(why);
        snprintf(why + l, wlen - l, " (%d tries in %.1f s)", *tries, s);
    }
    return fd;
}
