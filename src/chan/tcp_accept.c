#include "config.h"

/*
 * The TCP control tree's accepting (tcp_tree_int.h): one poll loop over the listeners and
 * every connection not yet introduced, each with its own deadline; a child's challenge, proof
 * and subtree; a silent or wrong connection dropped without holding up the others.
 */

#include "chan/tcp_tree.h"
#include "chan/tcp_tree_int.h"
#include "chan/tcp_sock.h"
#include "collprof/status.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/timeouts.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static int add_kid(cp_tree_t *t, int fd, const int32_t *idx, int cnt, uint32_t shape)
{
    if (t->nkids == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        int *a = realloc(t->kid_fd, (size_t)cap * sizeof(int));
        t->kid_fd = a ? a : t->kid_fd;
        int *b = realloc(t->kid_first, (size_t)cap * sizeof(int));
        t->kid_first = b ? b : t->kid_first;
        int *c = realloc(t->kid_size, (size_t)cap * sizeof(int));
        t->kid_size = c ? c : t->kid_size;
        if (a == NULL || b == NULL || c == NULL) {
            return -1;
        }
        t->cap = cap;
    }
    int k = t->nkids++;
    t->kid_fd[k] = fd;
    t->kid_first[k] = t->sub;
    t->kid_size[k] = cnt;
    for (int i = 0; i < cnt; i++) {
        t->order[t->sub++] = (int)ntohl((uint32_t)idx[i]);
        if (t->kid_of != NULL) {
            t->kid_of[t->order[t->sub - 1]] = k;
        }
    }
    int height = (int)(shape & 0xffffu) + 1;
    t->height = height > t->height ? height : t->height;
    t->side_off |= (shape >> 16) != 0;
    cp_sock_nodelay(fd);
    return 0;
}

/* Whether the subtree idx[0..cnt) may join: indices in range, none the root's, none seen. */
static int subtree_ok(const cp_tree_t *t, const int32_t *idx, int cnt, int first)
{
    for (int i = 0; i < cnt; i++) {
        int x = (int)ntohl((uint32_t)idx[i]);
        if (x <= 0 || x >= t->n || x == t->me || (i == 0 && x != first)) {
            return 0;
        }
        if (t->kid_of != NULL ? t->kid_of[x] >= 0 : 0) {
            return 0;
        }
        for (int j = 0; t->kid_of == NULL && j < t->sub; j++) {
            if (t->order[j] == x) {
                return 0;
            }
        }
        for (int j = 0; j < i; j++) {
            if (idx[j] == idx[i]) {
                return 0;
            }
        }
    }
    return 1;
}

/* A connection not introduced yet. */
typedef struct pending {
    int fd;
    int proven;       /* its proof checked out: its subtree comes next */
    size_t got, need; /* bytes of intro (then of idx) so far, and in all */
    double since_us;  /* accepted at */
    double until_us;  /* its deadline */
    uint64_t host;    /* its peer address (a hash of it, without the port) */
    int cnt;          /* its subtree's members (once proven) */
    int32_t *idx;     /* its subtree (once proven) */
    unsigned char na[CP_AUTH_NONCE_LEN];
    unsigned char intro[INTRO_LEN];
    char peer[64]; /* numeric "host:port" ("[host]:port" for IPv6) */
} pending_t;

/* One accept phase: the connections being introduced, the addresses already logged. */
typedef struct accepting {
    pending_t p[MAX_PENDING];
    int np;
    char logged[MAX_LOGGED][64];
    int nlogged, quiet; /* addresses logged; drops not logged (address seen, or table full) */
    int evicted;        /* connections evicted to make room */
    int reserve;        /* a descriptor kept to accept and close with when out of them */
    int out_of_fds;     /* accepts failed for want of descriptors (logged once) */
    double pause_us;    /* out of descriptors, none to free: the listeners rest until then */
} accepting_t;

/* Drop connection i with the reason: logged once per peer address of this phase. */
static void drop(accepting_t *a, int i, const char *reason)
{
    pending_t *c = &a->p[i];
    char host[sizeof(c->peer)];
    snprintf(host, sizeof(host), "%s", c->peer);
    char *colon = strrchr(host, ':');
    if (colon != NULL) {
        *colon = '\0'; /* the address without the port */
    }
    int seen = 0;
    for (int k = 0; k < a->nlogged && !seen; k++) {
        seen = strcmp(a->logged[k], host) == 0;
    }
    if (!seen && a->nlogged < MAX_LOGGED) {
        snprintf(a->logged[a->nlogged++], sizeof(a->logged[0]), "%s", host);
        cp_log(CP_LOG_WARN, "control channel: dropped a connection from %s: %s", c->peer, reason);
    } else {
        a->quiet++;
    }
    close(c->fd);
    free(c->idx);
    a->p[i] = a->p[--a->np];
}

/* A hash of the peer's address without its port: the unit of the per-address cap; over
 * AF_UNIX, of the peer's process (SO_PEERCRED), in c->peer ("unix pid PID"). */
static uint64_t host_of(const struct sockaddr_storage *ss, int fd, pending_t *c)
{
    const unsigned char *p = NULL;
    size_t len = 0;
    struct ucred cred = {.pid = 0};
    socklen_t cl = sizeof(cred);
    if (ss->ss_family == AF_UNIX) {
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) {
            cred.pid = 0;
        }
        snprintf(c->peer, sizeof(c->peer), "unix pid %ld", (long)cred.pid);
        p = (const unsigned char *)&cred.pid;
        len = sizeof(cred.pid);
    } else if (ss->ss_family == AF_INET) {
        p = (const unsigned char *)&((const struct sockaddr_in *)ss)->sin_addr;
        len = 4;
    } else if (ss->ss_family == AF_INET6) {
        p = (const unsigned char *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
        len = 16;
    }
    uint64_t h = 1469598103934665603ull ^ ss->ss_family; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

/* The oldest connection from host (any host: all), those still unproven first; -1: none. */
static int oldest(const accepting_t *a, uint64_t host, int all)
{
    int best = -1;
    for (int i = 0; i < a->np; i++) {
        const pending_t *c = &a->p[i];
        if ((all || c->host == host) &&
            (best < 0 || c->proven < a->p[best].proven ||
             (c->proven == a->p[best].proven && c->since_us < a->p[best].since_us))) {
            best = i;
        }
    }
    return best;
}

/* Room for a connection from host: its address's oldest evicted when it holds MAX_PER_PEER,
 * else, the table full, the oldest of the address that holds the most. */
static int by_host(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The address that holds the most connections (the table is full): O(np log np). */
static uint64_t busiest(const accepting_t *a)
{
    uint64_t h[MAX_PENDING], top = 0;
    int most = 0;
    for (int i = 0; i < a->np; i++) {
        h[i] = a->p[i].host;
    }
    qsort(h, (size_t)a->np, sizeof(h[0]), by_host);
    for (int i = 0, run = 0; i < a->np; i++) {
        run = i > 0 && h[i] == h[i - 1] ? run + 1 : 1;
        if (run > most) {
            most = run;
            top = h[i];
        }
    }
    return top;
}

static void make_room(accepting_t *a, uint64_t host)
{
    int mine = 0;
    for (int i = 0; i < a->np; i++) {
        mine += a->p[i].host == host;
    }
    if (mine < MAX_PER_PEER && a->np < MAX_PENDING) {
        return;
    }
    int v = oldest(a, mine >= MAX_PER_PEER ? host : busiest(a), 0);
    a->evicted++;
    drop(a, v,
         mine >= MAX_PER_PEER ? "evicted: its address holds the most unproven connections allowed"
                              : "evicted: the table of unproven connections is full");
}

/* Its deadline: about a round trip, as the handshake measured it (TCP_INFO), times
 * CP_TREE_HELLO_RTTS, at least CP_TMO_TREE_HELLO_MIN_S, at most CP_TMO_TREE_HELLO_S. */
static double hello_s(int fd)
{
    struct tcp_info ti;
    socklen_t len = sizeof(ti);
    double s = CP_TMO_TREE_HELLO_MIN_S;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0) {
        double rtt = CP_TREE_HELLO_RTTS * (double)ti.tcpi_rtt * 1e-6;
        s = rtt > s ? rtt : s;
    }
    return s < CP_TMO_TREE_HELLO_S ? s : CP_TMO_TREE_HELLO_S;
}

/* accept4 failed for want of descriptors: free one (the oldest unproven connection), or take
 * the waiting connection with the reserve descriptor and close it, or rest the listeners
 * 100 ms: never a busy loop on a listener that stays readable. */
static void out_of_fds(accepting_t *a, int l)
{
    if (a->out_of_fds++ == 0) {
        cp_log(CP_LOG_WARN,
               "control channel: out of file descriptors while accepting (ulimit -n): %s",
               a->np > 0 ? "the oldest unproven connections give way" : "connections closed");
    }
    if (a->np > 0) {
        a->evicted++;
        drop(a, oldest(a, 0, 1), "evicted: out of file descriptors");
    } else if (a->reserve >= 0) {
        close(a->reserve);
        int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            close(fd);
        }
        a->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
    } else {
        a->pause_us = cp_now_us() + 1e5;
    }
}

/* Accept one connection from listener l and send it a challenge: 1 (one more may wait), 0
 * (none waits, or the listeners rest). */
static int open_one(accepting_t *a, int l)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(l, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
            out_of_fds(a, l);
            return a->pause_us == 0;
        }
        return errno == EINTR || errno == ECONNABORTED || errno == EPROTO;
    }
    pending_t fresh;
    memset(&fresh, 0, sizeof(fresh));
    uint64_t host = host_of(&ss, fd, &fresh);
    make_room(a, host);
    pending_t *c = &a->p[a->np++];
    *c = fresh;
    c->fd = fd;
    c->need = INTRO_LEN;
    c->host = host;
    c->since_us = cp_now_us();
    c->until_us = c->since_us + hello_s(fd) * 1e6;
    char host_s[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
    if (ss.ss_family != AF_UNIX) {
        getnameinfo((struct sockaddr *)&ss, sl, host_s, sizeof(host_s), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV);
        snprintf(c->peer, sizeof(c->peer), ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host_s,
                 port);
    }
    unsigned char ch[CHALLENGE_LEN];
    uint32_t magic = htonl(CHALLENGE_MAGIC);
    char why[128];
    if (cp_auth_random(c->na, sizeof(c->na), why, sizeof(why)) != 0) {
        drop(a, a->np - 1, why);
        return 1;
    }
    memcpy(ch, &magic, sizeof(magic));
    memcpy(ch + 4, c->na, sizeof(c->na));
    /* a fresh socket's buffer takes it whole */
    if (send(fd, ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch)) {
        drop(a, a->np - 1, "it went away before its challenge");
    }
    return 1;
}

/* Connection i introduced itself as a side link (SIDE_HELLO, tcp_side.c): taken by member 0,
 * by the leader's index, once it proved the secret for the side purpose; dropped otherwise.
 * -1 either way: no subtree follows. */
static int side_intro(cp_tree_t *t, accepting_t *a, int i)
{
    pending_t *c = &a->p[i];
    const unsigned char *nc = c->intro + 20, *proof = nc + CP_AUTH_NONCE_LEN;
    uint32_t index = cp_tree_word(c->intro, 1), shape = cp_tree_word(c->intro, 2),
             n = cp_tree_word(c->intro, 3), cnt = cp_tree_word(c->intro, 4);
    char purpose[CP_AUTH_PURPOSE_LEN], why[96];
    cp_tree_side_purpose(t, purpose);
    if (t->side_of == NULL) {
        drop(a, i, "a side link to a member that is not the root");
        return -1;
    }
    if (!cp_auth_check(t->key, purpose, CP_AUTH_CONNECTOR, c->na, nc, index, n, proof)) {
        drop(a, i, "wrong proof for a side link");
        return -1;
    }
    if (shape != 0 || cnt != 0 || n != (uint32_t)t->n || index == 0 || index >= n ||
        t->side_of[index] >= 0) {
        snprintf(why, sizeof(why), "a side link of member %u of %u (of %d), twice or malformed",
                 index, n, t->n);
        drop(a, i, why);
        return -1;
    }
    unsigned char mine[CP_AUTH_MAC_LEN];
    cp_auth_mac(t->key, purpose, CP_AUTH_ACCEPTOR, c->na, nc, index, n, mine);
    int fl = fcntl(c->fd, F_GETFL);
    if (send(c->fd, mine, sizeof(mine), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(mine) ||
        fl < 0 || fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        drop(a, i, "it went away after its proof");
        return -1;
    }
    cp_sock_nodelay(c->fd);
    t->side_of[index] = c->fd;
    t->nside++;
    a->p[i] = a->p[--a->np]; /* the socket is the side link's now */
    return -1;
}

/* The introduction of connection i is whole: check it, answer with this member's proof, expect
 * the subtree.  0, or -1 (dropped). */
static int check_intro(cp_tree_t *t, accepting_t *a, int i, int room)
{
    pending_t *c = &a->p[i];
    const unsigned char *nc = c->intro + 20, *proof = nc + CP_AUTH_NONCE_LEN;
    uint32_t index = cp_tree_word(c->intro, 1), shape = cp_tree_word(c->intro, 2),
             n = cp_tree_word(c->intro, 3), cnt = cp_tree_word(c->intro, 4);
    if (cp_tree_word(c->intro, 0) == SIDE_HELLO) {
        return side_intro(t, a, i);
    }
    if (cp_tree_word(c->intro, 0) != HELLO_MAGIC) {
        drop(a, i, "not a control-channel introduction");
        return -1;
    }
    if (!cp_auth_check(t->key, t->purpose, CP_AUTH_CONNECTOR, c->na, nc, index, n, proof)) {
        drop(a, i, "wrong proof");
        return -1;
    }
    if ((shape & 0xffffu) >= HEIGHT_MAX || (shape >> 16) > 1 || n != (uint32_t)t->n || cnt < 1 ||
        cnt > (uint32_t)room) {
        char why[96];
        snprintf(why, sizeof(why), "member %u of %u introduced %u members (expected %d of %d)",
                 index, n, cnt, room, t->n);
        drop(a, i, why);
        return -1;
    }
    unsigned char mine[CP_AUTH_MAC_LEN];
    cp_auth_mac(t->key, t->purpose, CP_AUTH_ACCEPTOR, c->na, nc, index, n, mine);
    c->idx = malloc((size_t)cnt * sizeof(*c->idx));
    if (c->idx == NULL ||
        send(c->fd, mine, sizeof(mine), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(mine)) {
        drop(a, i, c->idx == NULL ? "out of memory" : "it went away after its proof");
        return -1;
    }
    c->proven = 1;
    c->cnt = (int)cnt;
    c->got = 0;
    c->need = (size_t)cnt * sizeof(*c->idx);
    return 0;
}

/* Read what connection i sent (room: members still wanted); the members it brought (it is a
 * child now), 0 (more to come, or dropped). */
static int step(cp_tree_t *t, accepting_t *a, int i, int room)
{
    pending_t *c = &a->p[i];
    for (;;) {
        unsigned char *dst = c->proven ? (unsigned char *)c->idx : c->intro;
        ssize_t k = recv(c->fd, dst + c->got, c->need - c->got, MSG_DONTWAIT);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return 0;
        }
        if (k <= 0) {
            drop(a, i, c->proven ? "it closed before its subtree" : "it closed before its proof");
            return 0;
        }
        c->got += (size_t)k;
        if (c->got < c->need) {
            continue;
        }
        if (!c->proven) {
            if (check_intro(t, a, i, room) != 0) {
                return 0;
            }
            continue;
        }
        int cnt = c->cnt, fd = c->fd;
        if (!subtree_ok(t, c->idx, cnt, (int)cp_tree_word(c->intro, 1))) {
            drop(a, i, "its members are out of range or joined already");
            return 0;
        }
        int fl = fcntl(fd, F_GETFL);
        if ((fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) ||
            add_kid(t, fd, c->idx, cnt, cp_tree_word(c->intro, 2))) {
            drop(a, i, "out of memory");
            return 0;
        }
        free(c->idx);
        a->p[i] = a->p[--a->np]; /* the socket is the child's now */
        return cnt;
    }
}

/* Drop every connection past its deadline. */
static void expire(accepting_t *a)
{
    double now = cp_now_us();
    for (int i = a->np - 1; i >= 0; i--) {
        if (now >= a->p[i].until_us) {
            char why[64];
            snprintf(why, sizeof(why), "no proof within %.1f s",
                     (a->p[i].until_us - a->p[i].since_us) * 1e-6);
            drop(a, i, why);
        }
    }
}

/* The phase ends: of the connections left, those whose introduction is here whole with a proof
 * that does not check out are dropped for it first, so that the log (once per address) names a
 * forged proof as one whatever turn of the loop the members came in.  Read in the same turn as
 * a forgery sent before any member, the members came first (the loop goes backwards) and the
 * forgery was left unread, then dropped as "no proof". */
static void judge_left(const cp_tree_t *t, accepting_t *a)
{
    for (int i = a->np - 1; i >= 0; i--) {
        pending_t *c = &a->p[i];
        ssize_t k = c->proven ? 0 : recv(c->fd, c->intro + c->got, c->need - c->got, MSG_DONTWAIT);
        c->got += k > 0 ? (size_t)k : 0;
        if (c->proven || c->got < c->need) {
            continue;
        }
        const unsigned char *nc = c->intro + 20, *proof = nc + CP_AUTH_NONCE_LEN;
        uint32_t magic = cp_tree_word(c->intro, 0), index = cp_tree_word(c->intro, 1),
                 n = cp_tree_word(c->intro, 3);
        char purpose[CP_AUTH_PURPOSE_LEN];
        if (magic == SIDE_HELLO) {
            cp_tree_side_purpose(t, purpose);
        } else {
            snprintf(purpose, sizeof(purpose), "%s", t->purpose);
        }
        if ((magic == HELLO_MAGIC || magic == SIDE_HELLO) &&
            !cp_auth_check(t->key, purpose, CP_AUTH_CONNECTOR, c->na, nc, index, n, proof)) {
            drop(a, i, magic == SIDE_HELLO ? "wrong proof for a side link" : "wrong proof");
        }
    }
}

/* The end of an accept phase: what is left dropped, the counts logged, the listeners closed. */
static void finish(cp_tree_t *t, accepting_t *a, int done)
{
    if (a != NULL) {
        judge_left(t, a);
    }
    while (a != NULL && a->np > 0) {
        drop(a, a->np - 1, done ? "no proof before every member had come" : "no proof in time");
    }
    if (a != NULL && a->quiet > 0) {
        cp_log(CP_LOG_INFO, "control channel: %d more connections dropped (not logged)", a->quiet);
    }
    if (a != NULL && a->evicted > 0) {
        cp_log(CP_LOG_WARN,
               "control channel: %d unproven connections evicted (at most %d per address, %d "
               "in all)",
               a->evicted, MAX_PER_PEER, MAX_PENDING);
    }
    if (a != NULL && a->reserve >= 0) {
        close(a->reserve);
    }
    free(a);
    cp_unix_close(&t->lfd[0]); /* an AF_UNIX listener's socket and directory go too */
    cp_tree_close_fd(&t->lfd[1]);
}

/* Accept children until want members or want_kids children came, or wait_s passed; how many
 * members came.  The listeners are polled on every turn (a full table evicts, make_room), but
 * while out of descriptors with none to free (out_of_fds). */
int cp_tree_accept_kids(cp_tree_t *t, int want, int want_kids, double wait_s)
{
    accepting_t *a = calloc(1, sizeof(*a));
    int got = 0;
    double until = cp_now_us() + wait_s * 1e6;
    if (a != NULL) {
        a->reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    for (int l = 0; l < 2; l++) { /* an accept burst stops at EAGAIN, never blocks */
        int fl = t->lfd[l] >= 0 ? fcntl(t->lfd[l], F_GETFL) : -1;
        if (fl >= 0) {
            fcntl(t->lfd[l], F_SETFL, fl | O_NONBLOCK);
        }
    }
    while (a != NULL && got < want && t->nkids < want_kids && cp_now_us() < until) {
        struct pollfd p[2 + MAX_PENDING];
        int np = a->np, nfd = 0;
        double next = until, now = cp_now_us();
        for (int i = 0; i < np; i++) {
            p[nfd++] = (struct pollfd){a->p[i].fd, POLLIN, 0};
            next = a->p[i].until_us < next ? a->p[i].until_us : next;
        }
        int rest = a->pause_us > now;
        for (int l = 0; l < 2 && !rest; l++) {
            p[nfd++] = (struct pollfd){t->lfd[l], POLLIN, 0};
        }
        next = rest && a->pause_us < next ? a->pause_us : next;
        a->pause_us = rest ? a->pause_us : 0;
        double left_ms = (next - now) / 1e3;
        int k = poll(p, (nfds_t)nfd, left_ms > 0 ? (int)left_ms + 1 : 0);
        if (k < 0 && errno != EINTR) {
            break;
        }
        /* backwards: a drop moves the last connection into the slot, seen already */
        for (int i = np - 1; i >= 0 && k > 0; i--) {
            if (p[i].revents != 0 && got < want && t->nkids < want_kids) {
                got += step(t, a, i, want - got);
            }
        }
        expire(a);
        for (int j = np; j < nfd && k > 0; j++) {
            for (int b = 0; (p[j].revents & POLLIN) && b < ACCEPT_BURST && open_one(a, p[j].fd);
                 b++) {
            }
        }
    }
    finish(t, a, got == want || t->nkids == want_kids);
    return got;
}
