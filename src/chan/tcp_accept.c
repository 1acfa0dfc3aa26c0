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
    double until_us;  /* its deadline */
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

/* Accept one connection from listener l and send it a challenge. */
static void open_one(accepting_t *a, int l)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int fd = accept4(l, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        return;
    }
    pending_t *c = &a->p[a->np++];
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->need = INTRO_LEN;
    c->until_us = cp_now_us() + CP_TMO_TREE_HELLO_S * 1e6;
    char host[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";
    getnameinfo((struct sockaddr *)&ss, sl, host, sizeof(host), port, sizeof(port),
                NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(c->peer, sizeof(c->peer), ss.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
    unsigned char ch[CHALLENGE_LEN];
    uint32_t magic = htonl(CHALLENGE_MAGIC);
    char why[128];
    if (cp_auth_random(c->na, sizeof(c->na), why, sizeof(why)) != 0) {
        drop(a, a->np - 1, why);
        return;
    }
    memcpy(ch, &magic, sizeof(magic));
    memcpy(ch + 4, c->na, sizeof(c->na));
    /* a fresh socket's buffer takes it whole */
    if (send(fd, ch, sizeof(ch), MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)sizeof(ch)) {
        drop(a, a->np - 1, "it went away before its challenge");
    }
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

/* Accept children until want members or want_kids children came, or wait_s passed; how many
 * members came. */
int cp_tree_accept_kids(cp_tree_t *t, int want, int want_kids, double wait_s)
{
    accepting_t *a = calloc(1, sizeof(*a));
    int got = 0;
    double until = cp_now_us() + wait_s * 1e6;
    while (a != NULL && got < want && t->nkids < want_kids && cp_now_us() < until) {
        struct pollfd p[2 + MAX_PENDING];
        int np = a->np, nfd = 0;
        double next = until;
        for (int i = 0; i < np; i++) {
            p[nfd++] = (struct pollfd){a->p[i].fd, POLLIN, 0};
            next = a->p[i].until_us < next ? a->p[i].until_us : next;
        }
        for (int l = 0; l < 2 && np < MAX_PENDING; l++) { /* when full: they wait in the backlog */
            p[nfd++] = (struct pollfd){t->lfd[l], POLLIN, 0};
        }
        double left_ms = (next - cp_now_us()) / 1e3;
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
        double now = cp_now_us();
        for (int i = a->np - 1; i >= 0; i--) {
            if (now >= a->p[i].until_us) {
                char why[64];
                snprintf(why, sizeof(why), "no proof within %.0f s", CP_TMO_TREE_HELLO_S);
                drop(a, i, why);
            }
        }
        for (int j = np; j < nfd && k > 0; j++) {
            if ((p[j].revents & POLLIN) && a->np < MAX_PENDING) {
                open_one(a, p[j].fd);
            }
        }
    }
    while (a != NULL && a->np > 0) {
        drop(a, a->np - 1,
             got == want || t->nkids == want_kids ? "no proof before every member had come"
                                                  : "no proof in time");
    }
    if (a != NULL && a->quiet > 0) {
        cp_log(CP_LOG_INFO, "control channel: %d more connections dropped (not logged)", a->quiet);
    }
    free(a);
    cp_tree_close_fd(&t->lfd[0]);
    cp_tree_close_fd(&t->lfd[1]);
    return got;
}
