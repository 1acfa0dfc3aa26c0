#include "config.h"

/*
 * The TCP control tree's set-up: listeners, the children's introductions,
 * the connection to the parent and the root's verdict (tcp_tree.h).
 *
 * A listener sends each connection a challenge (CHALLENGE_MAGIC and a fresh
 * nonce); the child introduces itself with a header (HELLO_MAGIC, its
 * index, 0, n, the count of its subtree), its own nonce and its proof
 * (tcp_auth.h), then its subtree: the members' indices (itself first), all
 * int32 big-endian.  The listener reads the fixed-size part, checks the
 * proof, answers with its own and only then reads the subtree; the child
 * checks that answer before it reads anything else.  A leader introduces
 * itself once its own node's members came (or its wait ran out).  The
 * root, having heard of all n - 1 other members or given up, sends the
 * verdict down the tree; a leader passes it on.  A leader below another
 * leader first opens its side link to the root (tcp_side.c), which the
 * root accepts in the same loop.
 *
 * Accepting is one poll loop over the listeners and every connection not
 * yet introduced (at most MAX_PENDING at once, MAX_PER_PEER per peer
 * address, the oldest evicted for a new one: the listeners are always
 * polled), each with its own deadline of about a round trip (timeouts.h):
 * a silent or wrong connection is dropped without holding up the others,
 * and logged once per peer address.  A member whose connection was closed
 * before its proof dials again (cp_tree_dial_hello).
 */

#include "chan/tcp_tree.h"
#include "chan/tcp_tree_int.h"
#include "chan/tree_shape.h"
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

void cp_tree_close(cp_tree_t *t)
{
    if (t == NULL) {
        return;
    }
    cp_unix_close(&t->lfd[0]); /* an AF_UNIX listener's socket and directory go too */
    cp_tree_close_fd(&t->lfd[1]);
    cp_tree_close_fd(&t->parent);
    for (int k = 0; k < t->nkids; k++) {
        cp_tree_close_fd(&t->kid_fd[k]);
    }
    cp_tree_close_fd(&t->side);
    for (int m = 0; t->side_of != NULL && m < t->n; m++) {
        cp_tree_close_fd(&t->side_of[m]);
    }
    t->nside = 0;
    t->up = 0;
}

void cp_tree_free(cp_tree_t *t)
{
    if (t == NULL) {
        return;
    }
    cp_tree_close(t);
    cp_auth_wipe(t->key, sizeof(t->key));
    free(t->kid_fd);
    free(t->kid_first);
    free(t->kid_size);
    free(t->order);
    free(t->kid_of);
    free(t->side_of);
    free(t);
}

/* A listener on this node's address (or COLLPROF_OOB_IFACE's), for the other nodes' leaders:
 * member 0's and a leader of leaders'.  Without it they say why they cannot come. */
static void node_listen(cp_tree_t *t, cp_tcp_pub_t *pub, int backlog, char *why, size_t wlen)
{
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
}

/* The listener for this node's members: AF_UNIX in a private directory (tcp_sock.h), else
 * (COLLPROF_CHAN_UNIX=0, or none could be made: said once) on 127.0.0.1.  -1 when neither. */
static int local_listen(cp_tree_t *t, cp_tcp_pub_t *pub, int backlog, char *why, size_t wlen)
{
    static int said;
    char uwhy[256];
    if (cp_unix_wanted()) {
        t->lfd[0] = cp_unix_listen(backlog, pub->lo, sizeof(pub->lo), uwhy, sizeof(uwhy));
        if (t->lfd[0] >= 0) {
            return 0;
        }
        if (!said++) { /* rank 0's said without -v */
            cp_log(t->me == 0 && t->spec.ranks == NULL ? CP_LOG_WARN : CP_LOG_INFO,
                   "control channel: no AF_UNIX listener (%s): this node's ranks connect over "
                   "127.0.0.1",
                   uwhy);
        }
    }
    t->lfd[0] = cp_sock_listen("127.0.0.1", backlog, pub->lo, sizeof(pub->lo), why, wlen);
    return t->lfd[0] < 0 ? -1 : 0;
}

/* Member 0's listeners: local_listen for its node, the node's address for the other nodes'
 * leaders. */
static int root_listen(cp_tree_t *t, cp_tcp_pub_t *pub, char *why, size_t wlen)
{
    /* an accept queue for every member at once, as far as the kernel allows (somaxconn: 4,096
     * from Linux 5.4, 128 before); past it the leaders' side links come staggered and their
     * connects retry (tcp_side.c) */
    int backlog = t->n, cap = cp_sock_somaxconn();
    backlog = backlog > MIN_BACKLOG ? backlog : MIN_BACKLOG; /* a flood drains, never fills it */
    long soft, hard;
    if (cap > 0 && cap < t->spec.nnodes - 1) {
        cp_log(CP_LOG_INFO,
               "control channel: the kernel caps rank 0's accept queue at %d connections "
               "(net.core.somaxconn) for %d other nodes' leaders: their side links come "
               "staggered and retry",
               cap, t->spec.nnodes - 1);
    }
    if (cp_nofile_fit(t->n + CP_NOFILE_SPARE, &soft, &hard) != 0) {
        /* its accepts would fail until the deadline */
        snprintf(why, wlen,
                 "rank %d may open %ld files (ulimit -n; hard limit %ld), too few for the "
                 "connections of %d ranks; raise 'ulimit -n' to %d or more",
                 t->spec.ranks != NULL ? t->spec.ranks[0] : 0, soft, hard, t->n,
                 t->n + CP_NOFILE_SPARE);
        return -1;
    }
    if (t->spec.remote_only) { /* no loopback listener for nobody to use */
        node_listen(t, pub, backlog, why, wlen);
        return t->lfd[1] >= 0 ? 0 : -1;
    }
    if (local_listen(t, pub, backlog, why, wlen) != 0) {
        return -1;
    }
    if (!t->spec.all_local) {
        node_listen(t, pub, backlog, why, wlen);
    }
    return 0; /* the members of this node can still come; the others say why not */
}

/* Another leader's: local_listen for its node's members (and, all on one host, for its child
 * leaders), its node's address for its child leaders. */
static int leader_listen(cp_tree_t *t, cp_tcp_pub_t *pub, char *why, size_t wlen)
{
    const cp_tree_spec_t *s = &t->spec;
    int backlog = s->nlocal + s->kid_nodes > MIN_BACKLOG ? s->nlocal + s->kid_nodes : MIN_BACKLOG;
    if (s->nlocal > 1 || s->kid_nodes > 0) {
        if (local_listen(t, pub, backlog, why, wlen) != 0) {
            return -1;
        }
    }
    if (s->kid_nodes > 0 && !s->all_local) {
        node_listen(t, pub, backlog, why, wlen);
    }
    return 0;
}

cp_tree_t *cp_tree_new(const cp_tree_spec_t *spec, cp_tcp_pub_t *pub, char *why, size_t wlen)
{
    memset(pub, 0, sizeof(*pub));
    cp_tree_t *t = calloc(1, sizeof(*t));
    int n = spec->n;
    /* a subtree of other nodes has any size below n: room for n, O(n) as at member 0 */
    int wide = spec->me == 0 || (spec->me == spec->leader && spec->kid_nodes > 0);
    if (t != NULL) {
        t->spec = *spec;
        t->me = spec->me;
        t->n = n;
        t->parent = t->lfd[0] = t->lfd[1] = t->side = -1;
        t->parent_index = spec->me == spec->leader ? spec->parent_lead : spec->leader;
        t->sub = 1;
        t->order_cap = wide ? n : spec->nlocal > 0 ? spec->nlocal : 1;
        t->order = malloc((size_t)t->order_cap * sizeof(int));
        t->kid_of = wide ? malloc((size_t)n * sizeof(int)) : NULL;
        t->side_of = spec->me == 0 ? malloc((size_t)n * sizeof(int)) : NULL;
        t->side_off = spec->me == spec->leader && spec->me != 0 && spec->parent_lead != 0;
    }
    if (t == NULL || t->order == NULL || (wide && t->kid_of == NULL) ||
        (spec->me == 0 && t->side_of == NULL)) {
        snprintf(why, wlen, "out of memory for a control tree of %d members", n);
        cp_tree_free(t);
        return NULL;
    }
    t->order[0] = spec->me;
    for (int i = 0; t->kid_of != NULL && i < n; i++) {
        t->kid_of[i] = -1;
    }
    for (int i = 0; t->side_of != NULL && i < n; i++) {
        t->side_of[i] = -1;
    }
    int rc = 0;
    if (n > 1 && spec->me == 0) {
        rc = root_listen(t, pub, why, wlen);
    } else if (n > 1 && spec->me == spec->leader) {
        rc = leader_listen(t, pub, why, wlen);
    }
    if (rc != 0) {
        cp_tree_free(t);
        return NULL;
    }
    return t;
}

/* ---- the parent -------------------------------------------------------- */

/* Connect to the parent, answer its challenge with this member's subtree and proof, and check
 * the parent's proof. */
static int go_up(cp_tree_t *t, const char *addr, char *why, size_t wlen)
{
    uint32_t shape = (uint32_t)t->height | (t->side_off ? 1u << 16 : 0u);
    t->parent = cp_tree_dial_hello(t, addr, HELLO_MAGIC, t->purpose, shape, t->order,
                                   (size_t)t->sub, cp_tree_join_wait(t, CP_TMO_TREE_CONNECT_S),
                                   cp_tree_join_wait(t, CP_TMO_TREE_VERDICT_S), why, wlen);
    return t->parent < 0 ? -1 : 0;
}

/* COLLPROF_FAULT=rogue (fault.h): two connections to the parent at addr, before this
 * member's own, that do not prove the secret: one silent, one that claims this member's slot
 * with a wrong proof.  Open in fds until the join ends. */
static void rogues_first(const cp_tree_t *t, const char *addr, int *fds)
{
    char why[256];
    unsigned char msg[INTRO_LEN + 4];
    uint32_t h[5] = {htonl(HELLO_MAGIC), htonl((uint32_t)t->me), 0, htonl((uint32_t)t->n),
                     htonl(1)};
    uint32_t me = htonl((uint32_t)t->me);
    memset(msg, 0xaa, sizeof(msg)); /* a nonce, and a proof made without the secret */
    memcpy(msg, h, sizeof(h));
    memcpy(msg + INTRO_LEN, &me, sizeof(me));
    cp_log(CP_LOG_WARN, "COLLPROF_FAULT: rogue connections to %s first", addr);
    fds[0] = cp_sock_dial(addr, CP_TMO_TREE_CONNECT_S, why, sizeof(why));
    fds[1] = cp_sock_dial(addr, CP_TMO_TREE_CONNECT_S, why, sizeof(why));
    struct iovec iov = {msg, sizeof(msg)};
    if (fds[1] >= 0) {
        cp_sock_send_all(fds[1], &iov, 1);
    }
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
    int links = t->nkids + (t->parent >= 0) + (t->side >= 0) + t->nside;
    char shape[96] = "";
    if (t->me == 0 && t->spec.nnodes > 1 && t->spec.fanout > 0) {
        char side[40] = "";
        if (cp_tree_node_deep(t->spec.nnodes, t->spec.fanout) > 0) {
            snprintf(side, sizeof(side), ", %d side link%s", t->nside, t->nside == 1 ? "" : "s");
        }
        snprintf(shape, sizeof(shape), " (%d nodes, fanout %d, depth %d%s)", t->spec.nnodes,
                 t->spec.fanout, t->height, side);
    }
    if (t->me != 0 && t->side >= 0) {
        snprintf(t->desc, sizeof(t->desc), "tcp %s + side link %s", addr,
                 t->root_same ? t->root_pub.lo : t->root_pub.node);
    } else if (t->me != 0) {
        snprintf(t->desc, sizeof(t->desc), "tcp %s", addr);
    } else if (parent->lo[0] && parent->node[0]) {
        snprintf(t->desc, sizeof(t->desc), "tcp %s + %s%s", parent->lo, parent->node, shape);
    } else {
        snprintf(t->desc, sizeof(t->desc), "tcp %s%s", parent->lo[0] ? parent->lo : parent->node,
                 shape);
    }
    t->stats.links = links;
}

/* spec.wait_s: every read and write of the tree's sockets at most that long. */
static void bound_io(cp_tree_t *t)
{
    if (t->spec.wait_s <= 0) {
        return;
    }
    struct timeval tv = {(time_t)t->spec.wait_s,
                         (suseconds_t)((t->spec.wait_s - (double)(time_t)t->spec.wait_s) * 1e6)};
    for (int k = -1; k < t->nkids; k++) {
        int fd = k < 0 ? t->parent : t->kid_fd[k];
        if (fd >= 0) {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        }
    }
}

void cp_tree_root(cp_tree_t *t, const cp_tcp_pub_t *root, int root_same)
{
    t->root_pub = *root;
    t->root_same = root_same;
    t->has_root = 1;
}

void cp_tree_key(cp_tree_t *t, const unsigned char *key, const char *purpose)
{
    memcpy(t->key, key, sizeof(t->key));
    snprintf(t->purpose, sizeof(t->purpose), "%s", purpose);
    t->keyed = 1;
}

int cp_tree_join(cp_tree_t *t, const cp_tcp_pub_t *parent, int same_host, char *why, size_t wlen)
{
    t->seq = 0;
    if (t->n < 2) {
        t->up = 1;
        return 0;
    }
    if (!t->keyed) {
        snprintf(why, wlen, "the control tree has no secret");
        cp_tree_close(t);
        return -1;
    }
    const char *addr = t->me == t->spec.leader && !same_host ? parent->node : parent->lo;
    uint32_t verdict = 0;
    int rogue[2] = {-1, -1};
    /* member 0 counts members; a leader its children: its node's members and child leaders */
    int lead = t->me == t->spec.leader, kids = lead ? t->spec.nlocal - 1 + t->spec.kid_nodes : 0;
    cp_tree_side_open(t); /* a leader below another: its side link first */
    int want = t->me == 0 ? t->n - 1 : t->order_cap - 1;
    double acc =
        t->me == 0 && t->spec.accept_s > 0
            ? t->spec.accept_s
            : cp_tree_join_wait(t, t->me == 0 || t->spec.kid_nodes > 0 ? CP_TMO_TREE_ROOT_WAIT_S
                                                                       : CP_TMO_TREE_LEADER_WAIT_S);
    int got =
        kids > 0 || t->me == 0 ? cp_tree_accept_kids(t, want, t->me == 0 ? t->n : kids, acc) : 0;
    if (t->me == 0) {
        if (got == want) {
            cp_tree_side_check(t);
        }
        verdict = got == want ? t->side_off ? VERDICT_NOSIDE : VERDICT_MAGIC : 0;
        if (got != want) {
            snprintf(why, wlen, "only %d of the %d other members connected within %.0f s", got,
                     want, acc);
        }
    } else if (addr[0] == '\0') {
        snprintf(why, wlen, "%s",
                 !lead                      ? "the node's leader opened no listener"
                 : t->spec.parent_lead == 0 ? "rank 0 has no address for the other nodes"
                                            : "a leader of leaders has no address for the "
                                              "other nodes");
    } else {
        int rank = t->spec.ranks != NULL ? t->spec.ranks[t->me] : t->me;
        if (cp_fault_rogue(rank) && strcmp(t->purpose, "job") == 0) {
            rogues_first(t, addr, rogue);
        }
        if (go_up(t, addr, why, wlen) != 0) {
            /* why says it */
        } else if (cp_sock_recv_within(t->parent, &verdict, sizeof(verdict),
                                       cp_tree_join_wait(t, CP_TMO_TREE_VERDICT_S)) != 0) {
            snprintf(why, wlen, "no verdict from %s within %.0f s", addr,
                     cp_tree_join_wait(t, CP_TMO_TREE_VERDICT_S));
        } else if ((verdict = ntohl(verdict)) != VERDICT_MAGIC && verdict != VERDICT_NOSIDE) {
            snprintf(why, wlen, "rank 0 did not hear from every member in time");
        }
        cp_tree_close_fd(&rogue[0]);
        cp_tree_close_fd(&rogue[1]);
    }
    int good = verdict == VERDICT_MAGIC || verdict == VERDICT_NOSIDE;
    if (pass_verdict(t, verdict) != 0 && good) {
        snprintf(why, wlen, "a member went away during the set-up");
        good = 0;
    }
    if (!good) {
        cp_tree_close(t);
        return -1;
    }
    cp_tree_side_verdict(t, verdict == VERDICT_MAGIC); /* alike on every member */
    t->identity = 1;
    for (int i = 0; t->me == 0 && i < t->n; i++) {
        t->identity &= t->order[i] == i;
    }
    describe(t, parent, addr);
    bound_io(t);
    t->up = 1;
    why[0] = '\0';
    return 0;
}
