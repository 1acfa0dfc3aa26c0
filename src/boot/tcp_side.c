#include "config.h"

/*
 * Side messages over the TCP control tree (tcp_tree.h): between member 0
 * and its direct children only (the other nodes' leaders and the members of
 * its own node), outside the collectives' sequence, for a protocol that
 * must go on when a member stops answering (the screen's pair rounds,
 * src/core/screen_run.c).  Unlike a collective, a side message that does
 * not come is a timeout the caller decides on, and a child that closed its
 * connection or sent something else is one child lost, not the tree: the
 * caller stops waiting for it.  The collectives must not run while side
 * messages may still be on their way (the caller ends its protocol first).
 * In a tree deeper than two levels of nodes (t->deep, alike on every member
 * from the root's verdict) there are none: a leader below another leader
 * would reach member 0 only through that leader, which the protocol must
 * survive the loss of; the screen then does without its pair rounds.
 */

#include "boot/tcp_sock.h"
#include "boot/tcp_tree.h"
#include "collprof/status.h"
#include "core/log.h"
#include "core/util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SIDE_MAGIC 0x43505344u /* "CPSD" */

typedef struct side_hdr {
    uint32_t magic, len;
} side_hdr_t;

/* The child slot of direct child member m of member 0, or -1. */
static int direct_kid(const cp_tree_t *t, int m)
{
    if (t == NULL || !t->up || t->me != 0 || m <= 0 || m >= t->n || t->kid_of == NULL) {
        return -1;
    }
    int k = t->kid_of[m];
    return k >= 0 && t->order[t->kid_first[k]] == m ? k : -1;
}

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
    if (t == NULL || !t->up || t->deep) { /* leaders below leaders: none, on every member */
        return 0;
    }
    if (t->me != 0) {
        return m == t->me && t->parent_index == 0;
    }
    return m == 0 || direct_kid(t, m) >= 0;
}

int cp_tree_side_up(cp_tree_t *t, const void *buf, size_t len)
{
    if (!cp_tree_side_direct(t, t != NULL ? t->me : -1) || t->me == 0) {
        return COLLPROF_ERR_INVALID;
    }
    return side_send(t, t->parent, buf, len);
}

int cp_tree_side_down(cp_tree_t *t, int m, const void *buf, size_t len)
{
    int k = direct_kid(t, m);
    return k < 0 ? COLLPROF_ERR_INVALID : side_send(t, t->kid_fd[k], buf, len);
}

int cp_tree_side_from_root(cp_tree_t *t, void *buf, size_t len, double s)
{
    if (!cp_tree_side_direct(t, t != NULL ? t->me : -1) || t->me == 0) {
        return COLLPROF_ERR_INVALID;
    }
    int w = cp_sock_wait(t->parent, POLLIN, s);
    if (w == 0) {
        return 0;
    }
    return w > 0 && side_recv(t, t->parent, buf, len) == COLLPROF_OK ? 1 : COLLPROF_ERR_BOOTSTRAP;
}

int cp_tree_side_poll(cp_tree_t *t, const unsigned char *wait, double s, int *m, void *buf,
                      size_t len)
{
    *m = -1;
    if (t == NULL || !t->up || t->me != 0) {
        return COLLPROF_ERR_INVALID;
    }
    struct pollfd *pf = malloc(sizeof(*pf) * (size_t)(t->nkids > 0 ? t->nkids : 1));
    int *who = malloc(sizeof(int) * (size_t)(t->nkids > 0 ? t->nkids : 1));
    int np = 0, rc = 0;
    for (int k = 0; pf != NULL && who != NULL && k < t->nkids; k++) {
        int member = t->order[t->kid_first[k]];
        if (wait[member]) {
            pf[np] = (struct pollfd){.fd = t->kid_fd[k], .events = POLLIN};
            who[np++] = member;
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
