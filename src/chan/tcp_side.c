#include "config.h"

/*
 * Side messages over the TCP control tree (tcp_tree.h): between member 0
 * and the members connected to it directly (its direct children: the other
 * nodes' leaders below it and the members of its own node; and the side
 * links), outside the collectives' sequence, for a protocol that must go on
 * when a member stops answering (the screen's pair rounds,
 * src/screen/run/screen_run.c).  Unlike a collective, a side message that does
 * not come is a timeout the caller decides on, and a child that closed its
 * connection or sent something else is one child lost, not the tree: the
 * caller stops waiting for it.  The collectives must not run while side
 * messages may still be on their way (the caller ends its protocol first).
 *
 * Side links: in a tree deeper than two levels of nodes a leader below
 * another leader would reach member 0 only through that leader, whose loss
 * the protocol must survive.  So each such leader opens, before its own
 * join, one connection straight to member 0's listener (cp_tree_root's
 * address), proven like a child's (tcp_auth.h) but with its own magic
 * (SIDE_HELLO) and purpose ("PURPOSE side"), so that neither can pass for
 * the other; member 0 accepts it among its children (tcp_accept.c) and
 * keeps it by the leader's index.  It carries side messages alone.  A
 * leader without one says so in its introduction (shape bit 16); member 0,
 * once every member came, turns side messages off on every member (its
 * verdict, VERDICT_NOSIDE) when a leader has none or their count is not
 * the shape's, so that every member decides alike and none waits for it.
 */

#include "chan/tcp_sock.h"
#include "chan/tcp_tree.h"
#include "chan/tcp_tree_int.h"
#include "chan/tree_shape.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/timeouts.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIDE_MAGIC 0x43505344u /* "CPSD" */

typedef struct side_hdr {
    uint32_t magic, len;
} side_hdr_t;

/* The child slot of member m when it is a direct child of member 0, or -1. */
static int kid_slot(const cp_tree_t *t, int m)
{
    if (t->me != 0 || m <= 0 || m >= t->n || t->kid_of == NULL) {
        return -1;
    }
    int k = t->kid_of[m];
    return k >= 0 && t->order[t->kid_first[k]] == m ? k : -1;
}

/* The same once the tree is up. */
static int direct_kid(const cp_tree_t *t, int m)
{
    return t == NULL || !t->up ? -1 : kid_slot(t, m);
}

/* Member 0: the side link of member m, or -1. */
static int side_fd(const cp_tree_t *t, int m)
{
    return t == NULL || !t->up || t->side_of == NULL || m <= 0 || m >= t->n ? -1 : t->side_of[m];
}

/* Not member 0: its own connection to member 0 (its side link, or its parent's). */
static int root_fd(const cp_tree_t *t)
{
    return t->side >= 0 ? t->side : t->parent;
}

/* ---- side links (set-up) ---------------------------------------------- */

void cp_tree_side_open(cp_tree_t *t)
{
    if (!t->side_off || t->me == 0) { /* before the join: a leader whose parent is not 0 */
        return;
    }
    char why[112] = "", purpose[CP_AUTH_PURPOSE_LEN];
    const char *addr = !t->has_root ? "" : t->root_same ? t->root_pub.lo : t->root_pub.node;
    double w = cp_tree_join_wait(t, CP_TMO_TREE_SIDE_S);
    cp_tree_side_purpose(t, purpose);
    if (addr[0] == '\0') {
        snprintf(why, sizeof(why), "%s",
                 t->has_root ? "rank 0 has no address for the other nodes" : "no address of it");
    } else {
        t->side =
            cp_tree_dial_hello(t, addr, SIDE_HELLO, purpose, 0, NULL, 0, w, w, why, sizeof(why));
    }
    if (t->side >= 0) {
        cp_sock_nodelay(t->side);
        t->side_off = 0;
    } else {
        snprintf(t->side_why, sizeof(t->side_why), "this leader has no side link to rank 0: %s",
                 why);
    }
}

void cp_tree_side_check(cp_tree_t *t)
{
    for (int m = 1; m < t->n; m++) { /* a direct child needs none: never both */
        if (t->side_of[m] >= 0 && kid_slot(t, m) >= 0) {
            cp_tree_close_fd(&t->side_of[m]);
            t->nside--;
        }
    }
    int k = t->spec.fanout, nn = t->spec.nnodes;
    int expect = k > 0 && nn > 0 ? cp_tree_node_deep(nn, k) : -1;
    if (t->side_off) {
        snprintf(t->side_why, sizeof(t->side_why),
                 "a leader below another leader has no side link to rank 0 (%d came)", t->nside);
    } else if (expect >= 0 && t->nside != expect) {
        t->side_off = 1;
        snprintf(t->side_why, sizeof(t->side_why),
                 "%d side links came to rank 0 where %d leaders hang below other leaders", t->nside,
                 expect);
    }
}

void cp_tree_side_verdict(cp_tree_t *t, int on)
{
    if (on) {
        t->side_off = 0;
        return;
    }
    if (!t->side_off || t->side_why[0] == '\0') {
        snprintf(t->side_why, sizeof(t->side_why),
                 "rank 0's verdict: a leader below another leader has no side link to it");
    }
    t->side_off = 1;
    cp_tree_close_fd(&t->side);
    for (int m = 0; t->side_of != NULL && m < t->n; m++) {
        cp_tree_close_fd(&t->side_of[m]);
    }
    t->nside = 0;
}

/* ---- side messages ----------------------------------------------------- */

static int side_send(cp_tree_t *t, int fd, const void *buf, size_t len)
{
    side_hdr_t h = {htonl(SIDE_MAGIC), htonl((uint32_t)len)};
    struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)buf, len}};
    if (cp_sock_send_all(fd, iov, 2) != 0) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    t->stats.sent_bytes += len;
    return COLLPROF_OK;
}

/* One whole side message of len bytes from fd, which is readable. */
static int side_recv(cp_tree_t *t, int fd, void *buf, size_t len)
{
    side_hdr_t h;
    if (cp_sock_recv_within(fd, &h, sizeof(h), 10.0) != 0 || ntohl(h.magic) != SIDE_MAGIC ||
        ntohl(h.len) != len || cp_sock_recv_within(fd, buf, len, 10.0) != 0) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    t->stats.got_bytes += len;
    return COLLPROF_OK;
}

int cp_tree_side_direct(const cp_tree_t *t, int m)
{
    if (t == NULL || !t->up || t->side_off) { /* a leader without a way: none, on every member */
        return 0;
    }
    if (t->me != 0) {
        return m == t->me && (t->parent_index == 0 || t->side >= 0);
    }
    return m == 0 || direct_kid(t, m) >= 0 || side_fd(t, m) >= 0;
}

int cp_tree_side_up(cp_tree_t *t, const void *buf, size_t len)
{
    if (!cp_tree_side_direct(t, t != NULL ? t->me : -1) || t->me == 0) {
        return COLLPROF_ERR_INVALID;
    }
    return side_send(t, root_fd(t), buf, len);
}

int cp_tree_side_down(cp_tree_t *t, int m, const void *buf, size_t len)
{
    int k = direct_kid(t, m), fd = k >= 0 ? t->kid_fd[k] : side_fd(t, m);
    return fd < 0 || t->side_off ? COLLPROF_ERR_INVALID : side_send(t, fd, buf, len);
}

int cp_tree_side_from_root(cp_tree_t *t, void *buf, size_t len, double s)
{
    if (!cp_tree_side_direct(t, t != NULL ? t->me : -1) || t->me == 0) {
        return COLLPROF_ERR_INVALID;
    }
    int fd = root_fd(t), w = cp_sock_wait(fd, POLLIN, s);
    if (w == 0) {
        return 0;
    }
    return w > 0 && side_recv(t, fd, buf, len) == COLLPROF_OK ? 1 : COLLPROF_ERR_BOOTSTRAP;
}

int cp_tree_side_poll(cp_tree_t *t, const unsigned char *wait, double s, int *m, void *buf,
                      size_t len)
{
    *m = -1;
    if (t == NULL || !t->up || t->me != 0) {
        return COLLPROF_ERR_INVALID;
    }
    size_t most = (size_t)(t->nkids + t->nside > 0 ? t->nkids + t->nside : 1);
    struct pollfd *pf = malloc(sizeof(*pf) * most);
    int *who = malloc(sizeof(int) * most);
    int np = 0, rc = 0;
    for (int k = 0; pf != NULL && who != NULL && k < t->nkids; k++) {
        int member = t->order[t->kid_first[k]];
        if (wait[member]) {
            pf[np] = (struct pollfd){.fd = t->kid_fd[k], .events = POLLIN};
            who[np++] = member;
        }
    }
    for (int q = 1; pf != NULL && who != NULL && t->nside > 0 && q < t->n; q++) {
        if (wait[q] && t->side_of[q] >= 0 && (size_t)np < most) {
            pf[np] = (struct pollfd){.fd = t->side_of[q], .events = POLLIN};
            who[np++] = q;
        }
    }
    if (pf == NULL || who == NULL) {
        rc = COLLPROF_ERR_NO_MEMORY;
    } else if (np > 0) {
        int ms = s <= 0 ? 0 : s > 3600 ? 3600000 : (int)(s * 1000.0);
        int got = poll(pf, (nfds_t)np, ms);
        for (int i = 0; got > 0 && i < np; i++) {
            if (pf[i].revents != 0) {
                *m = who[i];
                /* EOF, an error or a message that is not one: this child is lost */
                rc = side_recv(t, pf[i].fd, buf, len) == COLLPROF_OK ? 1 : 2;
                break;
            }
        }
        rc = got < 0 && errno != EINTR ? COLLPROF_ERR_BOOTSTRAP : rc;
    } else if (s > 0) {
        struct timespec ts = {0, 100000000L}; /* nobody to wait for: the caller's clock moves */
        nanosleep(&ts, NULL);
    }
    free(pf);
    free(who);
    return rc;
}
