#include "config.h"

/*
 * The TCP control tree's set-up: listeners, the children's introductions,
 * the connection to the parent and the root's verdict (tcp_tree.h).
 *
 * A child introduces itself with a header (HELLO_MAGIC, its index, n) and
 * its subtree: a count, then the members' indices (itself first), all
 * int32 big-endian; a leader sends it once its own node's members came (or
 * its wait ran out).  The root, having heard of all n - 1 other members or
 * given up, sends the verdict down the tree; a leader passes it on.
 */

#include "boot/tcp_tree.h"
#include "boot/tcp_sock.h"
#include "collprof/status.h"
#include "core/timeouts.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HELLO_MAGIC   0x43504f48u /* "CPOH": a member introduces its subtree */
#define VERDICT_MAGIC 0x43504f56u /* "CPOV": the root says whether all came */

static void close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

void cp_tree_close(cp_tree_t *t)
{
    if (t == NULL) {
        return;
    }
    close_fd(&t->lfd[0]);
    close_fd(&t->lfd[1]);
    close_fd(&t->parent);
    for (int k = 0; k < t->nkids; k++) {
        close_fd(&t->kid_fd[k]);
    }
    t->up = 0;
}

void cp_tree_free(cp_tree_t *t)
{
    if (t == NULL) {
        return;
    }
    cp_tree_close(t);
    free(t->kid_fd);
    free(t->kid_first);
    free(t->kid_size);
    free(t->order);
    free(t->kid_of);
    free(t);
}

/* Member 0's listeners: 127.0.0.1 for its node, the node's address (or COLLPROF_OOB_IFACE's)
 * for the other nodes' leaders.  Without the latter the others say why they cannot come. */
static int root_listen(cp_tree_t *t, cp_tcp_pub_t *pub, char *why, size_t wlen)
{
    int backlog = t->n < 4096 ? t->n : 4096;
    long soft, hard;
    if (cp_nofile_fit(t->n + CP_NOFILE_SPARE, &soft, &hard) != 0) {
        /* its accepts would fail until the deadline */
        snprintf(why, wlen,
                 "rank %d may open %ld files (ulimit -n; hard limit %ld), too few for the "
                 "connections of %d ranks; raise 'ulimit -n' to %d or more",
                 t->spec.ranks != NULL ? t->spec.ranks[0] : 0, soft, hard, t->n,
                 t->n + CP_NOFILE_SPARE);
        return -1;
    }
    t->lfd[0] = cp_sock_listen("127.0.0.1", backlog, pub->lo, sizeof(pub->lo), why, wlen);
    if (t->lfd[0] < 0) {
        return -1;
    }
    if (t->spec.all_local) {
        return 0;
    }
    char addr[NI_MAXHOST];
    const char *iface = getenv("COLLPROF_OOB_IFACE");
    int rc = iface != NULL && iface[0] != '\0'
                 ? cp_sock_iface_addr(iface, addr, sizeof(addr), why, wlen)
                 : cp_sock_host_addr(t->spec.hostname, addr, sizeof(addr), why, wlen);
    if (rc > 0) { /* never a guessed interface */
        snprintf(why, wlen, "host name %s resolves to the loopback address %s", t->spec.hostname,
                 addr);
    } else if (rc == 0) {
        t->lfd[1] = cp_sock_listen(addr, backlog, pub->node, sizeof(pub->node), why, wlen);
    }
    return 0; /* the members of this node can still come; the others say why not */
}

cp_tree_t *cp_tree_new(const cp_tree_spec_t *spec, cp_tcp_pub_t *pub, char *why, size_t wlen)
{
    memset(pub, 0, sizeof(*pub));
    cp_tree_t *t = calloc(1, sizeof(*t));
    int n = spec->n;
    if (t != NULL) {
        t->spec = *spec;
        t->me = spec->me;
        t->n = n;
        t->parent = t->lfd[0] = t->lfd[1] = -1;
        t->parent_index = spec->me == spec->leader ? 0 : spec->leader;
        t->sub = 1;
        t->order = malloc((size_t)(spec->me == 0      ? n
                                   : spec->nlocal > 0 ? spec->nlocal
                                                      : 1) *
                          sizeof(int));
        t->kid_of = spec->me == 0 ? malloc((size_t)n * sizeof(int)) : NULL;
    }
    if (t == NULL || t->order == NULL || (spec->me == 0 && t->kid_of == NULL)) {
        snprintf(why, wlen, "out of memory for a control tree of %d members", n);
        cp_tree_free(t);
        return NULL;
    }
    t->order[0] = spec->me;
    for (int i = 0; spec->me == 0 && i < n; i++) {
        t->kid_of[i] = -1;
    }
    int rc = 0;
    if (n > 1 && spec->me == 0) {
        rc = root_listen(t, pub, why, wlen);
    } else if (n > 1 && spec->me == spec->leader && spec->nlocal > 1) {
        t->lfd[0] = cp_sock_listen("127.0.0.1", spec->nlocal, pub->lo, sizeof(pub->lo), why, wlen);
        rc = t->lfd[0] < 0 ? -1 : 0;
    }
    if (rc != 0) {
        cp_tree_free(t);
        return NULL;
    }
    return t;
}

/* ---- children ---------------------------------------------------------- */

static int add_kid(cp_tree_t *t, int fd, const int32_t *idx, int cnt)
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

/* One connection from listener l: a child's introduction and subtree (room: at most room
 * members); its member count, or 0 (dropped). */
static int take_one(cp_tree_t *t, int l, int room, double left_s)
{
    int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    double wait = left_s < CP_TMO_TREE_HELLO_S ? left_s : CP_TMO_TREE_HELLO_S;
    uint32_t h[5];
    int32_t *idx = NULL;
    int cnt = 0;
    if (cp_sock_recv_within(fd, h, sizeof(h), wait) == 0 && ntohl(h[0]) == HELLO_MAGIC &&
        ntohl(h[2]) == 0 && ntohl(h[3]) == (uint32_t)t->n) {
        cnt = (int)ntohl(h[4]);
        cnt = cnt >= 1 && cnt <= room ? cnt : 0;
    }
    idx = cnt > 0 ? malloc((size_t)cnt * sizeof(*idx)) : NULL;
    if (idx == NULL || cp_sock_recv_within(fd, idx, (size_t)cnt * sizeof(*idx), wait) != 0 ||
        !subtree_ok(t, idx, cnt, (int)ntohl(h[1])) || add_kid(t, fd, idx, cnt) != 0) {
        close(fd);
        cnt = 0;
    }
    free(idx);
    return cnt;
}

/* Accept children until want members came or wait_s passed; how many came. */
static int accept_kids(cp_tree_t *t, int want, double wait_s)
{
    int got = 0;
    double until = cp_now_us() + wait_s * 1e6;
    while (got < want && cp_now_us() < until) {
        struct pollfd p[2] = {{t->lfd[0], POLLIN, 0}, {t->lfd[1], POLLIN, 0}};
        int k = poll(p, 2, (int)((until - cp_now_us()) / 1e3) + 1);
        for (int i = 0; i < 2 && k > 0; i++) {
            if (p[i].revents & POLLIN) {
                got += take_one(t, p[i].fd, want - got, (until - cp_now_us()) * 1e-6);
            }
        }
    }
    close_fd(&t->lfd[0]);
    close_fd(&t->lfd[1]);
    return got;
}

/* ---- the parent -------------------------------------------------------- */

/* Connect to the parent and introduce this member's subtree. */
static int go_up(cp_tree_t *t, const char *addr, char *why, size_t wlen)
{
    t->parent = cp_sock_dial(addr, CP_TMO_TREE_CONNECT_S, why, wlen);
    if (t->parent < 0) {
        return -1;
    }
    size_t cnt = (size_t)t->sub;
    uint32_t *msg = malloc((5 + cnt) * sizeof(uint32_t));
    if (msg == NULL) {
        snprintf(why, wlen, "out of memory");
        return -1;
    }
    uint32_t h[5] = {htonl(HELLO_MAGIC), htonl((uint32_t)t->me), 0, htonl((uint32_t)t->n),
                     htonl((uint32_t)cnt)};
    memcpy(msg, h, sizeof(h));
    for (size_t i = 0; i < cnt; i++) {
        msg[5 + i] = htonl((uint32_t)t->order[i]);
    }
    struct iovec iov = {msg, (5 + cnt) * sizeof(uint32_t)};
    int rc = cp_sock_send_all(t->parent, &iov, 1);
    free(msg);
    if (rc != 0) {
        snprintf(why, wlen, "introducing this member to %s: %s", addr, strerror(errno));
        return -1;
    }
    return 0;
}

/* The root's verdict to every child (0 or VERDICT_MAGIC); -1 when a child went away. */
static int pass_verdict(cp_tree_t *t, uint32_t v)
{
    uint32_t nv = htonl(v);
    int rc = 0;
    for (int k = 0; k < t->nkids; k++) {
        struct iovec iov = {&nv, sizeof(nv)};
        rc |= cp_sock_send_all(t->kid_fd[k], &iov, 1);
    }
    return rc != 0 ? -1 : 0;
}

static void describe(cp_tree_t *t, const cp_tcp_pub_t *parent, const char *addr)
{
    int links = t->nkids + (t->parent >= 0);
    if (t->me != 0) {
        snprintf(t->desc, sizeof(t->desc), "tcp %s", addr);
    } else if (parent->lo[0] && parent->node[0]) {
        snprintf(t->desc, sizeof(t->desc), "tcp %s + %s", parent->lo, parent->node);
    } else {
        snprintf(t->desc, sizeof(t->desc), "tcp %s", parent->lo[0] ? parent->lo : parent->node);
    }
    t->stats.links = links;
}

int cp_tree_join(cp_tree_t *t, const cp_tcp_pub_t *parent, int same_host, char *why, size_t wlen)
{
    t->seq = 0;
    if (t->n < 2) {
        t->up = 1;
        return 0;
    }
    const char *addr = t->me == t->spec.leader && !same_host ? parent->node : parent->lo;
    uint32_t verdict = 0;
    int want = t->me == 0 ? t->n - 1 : t->me == t->spec.leader ? t->spec.nlocal - 1 : 0;
    int got =
        want > 0
            ? accept_kids(t, want, t->me == 0 ? CP_TMO_TREE_ROOT_WAIT_S : CP_TMO_TREE_LEADER_WAIT_S)
            : 0;
    if (t->me == 0) {
        verdict = got == want ? VERDICT_MAGIC : 0;
        if (got != want) {
            snprintf(why, wlen, "only %d of the %d other members connected within %.0f s", got,
                     want, CP_TMO_TREE_ROOT_WAIT_S);
        }
    } else if (addr[0] == '\0') {
        snprintf(why, wlen, "%s",
                 t->me == t->spec.leader ? "rank 0 has no address for the other nodes"
                                         : "the node's leader opened no listener");
    } else if (go_up(t, addr, why, wlen) == 0) {
        if (cp_sock_recv_within(t->parent, &verdict, sizeof(verdict), CP_TMO_TREE_VERDICT_S) != 0) {
            snprintf(why, wlen, "no verdict from %s within %.0f s", addr, CP_TMO_TREE_VERDICT_S);
        } else if ((verdict = ntohl(verdict)) != VERDICT_MAGIC) {
            snprintf(why, wlen, "rank 0 did not hear from every member in time");
        }
    }
    if (pass_verdict(t, verdict) != 0 && verdict == VERDICT_MAGIC) {
        snprintf(why, wlen, "a member went away during the set-up");
        verdict = 0;
    }
    if (verdict != VERDICT_MAGIC) {
        cp_tree_close(t);
        return -1;
    }
    t->identity = 1;
    for (int i = 0; t->me == 0 && i < t->n; i++) {
        t->identity &= t->order[i] == i;
    }
    describe(t, parent, addr);
    t->up = 1;
    why[0] = '\0';
    return 0;
}
