/*
 * The TCP control channel: a tree of connections over n members (the
 * job's ranks, or the members of a --split group).  Every member of a node
 * connects to its node's leader, every leader to its parent: member 0 (the
 * root) in the two-level tree, so the root holds one connection per node
 * plus one per member of its own node, and a leader one per member of its
 * node.  With more nodes than the fanout (COLLPROF_TREE_FANOUT,
 * tree_shape.h) leaders hang below leaders (spec.parent_lead,
 * spec.kid_nodes), k per leader, so that no member but the root holds more
 * than its node's members and k other nodes; each of those deeper leaders
 * also holds a side link straight to the root (cp_tree_root), for side
 * messages alone, so that the root still holds one connection per node
 * (tcp_side.c).  A gather goes up
 * (each leader sends its node's blocks in one message), a broadcast goes
 * down; the others are built from these.  With one member per node it is
 * a star to member 0.
 *
 * Set-up, on every member: cp_tree_new opens the listeners this member
 * needs (member 0 and a leader of leaders: one for its node's members and
 * one on its node's address; another leader of several members: one for its
 * node's members) and says their addresses; the node's members' listener is
 * an AF_UNIX socket in a private directory (unix_sock.c), or 127.0.0.1's
 * when there is none, so that a same-node connection never goes over TCP
 * where it need not (which member is on which node comes from the spec,
 * never from addresses);
 * the caller hands every member its parent's (through PMIx at start-up,
 * through the job's tree for a group); cp_tree_join connects it all, with
 * bounded waits, and every member learns the same verdict.
 *
 * Authentication (tcp_auth.h): every tree has the run's secret and a
 * purpose (cp_tree_key); a connection is read from only once it proved the
 * secret in a challenge and a response, and a member reads its parent only
 * once the parent proved it too.  A listener handles every pending
 * connection at once, each with its own deadline of about a round trip,
 * and never stops accepting (a bounded table, capped per peer address, the
 * oldest evicted: tcp_tree_int.h): one that does not prove the secret is
 * dropped, logged once per peer address, and cannot keep a member out (a
 * member whose connection was evicted dials again).
 *
 * Messages: a 16-byte header (magic, sequence number, payload length, all
 * big-endian) and the payload.  The sequence number counts the tree's
 * collectives, the same on every member: a message of another collective or
 * of another length is an error (members out of step), never data.
 * Failures: a peer that exits closes its socket, so whoever waits on it
 * reads EOF and fails at once; on any error a member closes every socket
 * of the tree, so that its own peers fail at once too.  A stopped peer
 * keeps the others waiting, as a fence does: the watchdog ends the run.
 * Not thread-safe; no lock, so the watchdog's exit path never waits on it.
 * Internal to src/chan.
 */
#ifndef COLLPROF_CHAN_TCP_TREE_H
#define COLLPROF_CHAN_TCP_TREE_H

#include "chan/tcp_auth.h"

#include <stddef.h>
#include <stdint.h>

/** A listening member's addresses ("host:port" numeric; "" when that listener is absent). */
typedef struct cp_tcp_pub {
    /** for the members of its node: "unix:PATH" (an AF_UNIX socket in a private directory,
     *  tcp_sock.h), or on 127.0.0.1 when there is none (COLLPROF_CHAN_UNIX=0, or it could not
     *  be made) */
    char lo[120];
    char node[80]; /**< on its node's address (member 0, leaders of leaders): for other leaders */
} cp_tcp_pub_t;

typedef struct cp_tree_spec {
    int me, n;            /**< this member's index, the members */
    int leader;           /**< its node's leader (the node's first member; 0 on member 0's node) */
    int nlocal;           /**< members on its node, itself included */
    int all_local;        /**< every member is on this node: no listener on the node's address */
    int remote_only;      /**< every other member is on another node: member 0 listens on the
                               node's address alone (the screen's pairs and groups) */
    const char *hostname; /**< this node's name (member 0 listens on its address) */
    const int *ranks;     /**< the members' job ranks, for messages (NULL: the index is one) */
    int star;             /**< every member leads itself (no locality known, or asked for) */
    /** A leader's parent: member 0 (0, the two-level tree) or another node's leader (deeper). */
    int parent_lead;
    /** Leaders of other nodes that connect to this leader (on its node's address): > 0 makes
     *  it a leader of leaders, which listens there too; member 0 takes any number. */
    int kid_nodes;
    int fanout, nnodes; /**< the tree of nodes (tree_shape.h), for the description; 0: unknown */
    int node; /**< this member's node in that tree (a deep leader staggers its side link by it) */
    /** > 0: every wait of the join at most this, and every read and write of the tree after
     *  it too (a stopped member is an error, never a hang: the screen's pairs); 0: the join's
     *  waits of timeouts.h, reads unbounded */
    double wait_s;
    /** > 0: member 0 accepts the other members this long (else as the join's other waits);
     *  the screen's groups: rank 0's silence limit (timeouts.h, cp_tmo_screen_accept) */
    double accept_s;
} cp_tree_spec_t;

typedef struct cp_tcp_stats {
    unsigned long ops;             /**< collectives over the tree */
    double op_s;                   /**< seconds spent in them */
    unsigned long long sent_bytes; /**< payload bytes sent */
    unsigned long long got_bytes;  /**< payload bytes received */
    int links;                     /**< connections this member holds */
} cp_tcp_stats_t;

typedef struct cp_tree {
    int me, n, up;
    int parent;       /**< fd to the parent; -1 at the root */
    int parent_index; /**< the parent's member index */
    int lfd[2];       /**< listeners (loopback, node) until the join */
    int nkids, cap;
    int *kid_fd, *kid_first, *kid_size; /**< per child: socket, its subtree in order[] */
    int sub;                            /**< members in this member's subtree (itself first) */
    int *order;                         /**< their indices, sub entries, child by child */
    int *kid_of;   /**< root only: member index -> child slot (-1: the root itself) */
    int identity;  /**< root only: order[i] == i for all i (a gather lands in place) */
    int order_cap; /**< entries order[] holds */
    int height;    /**< links from this member to the deepest member of its subtree */
    /** Before the verdict: this subtree holds a leader whose parent is not member 0 and that
     *  has no side link to member 0; after it, the same of the whole tree, alike on every
     *  member: then side messages are off (side_why says why). */
    int side_off;
    char side_why[160];
    int side;      /**< a leader whose parent is not member 0: its side link to member 0 */
    int *side_of;  /**< root only: member index -> its side link (-1: none) */
    int nside;     /**< root: side links held */
    int has_root;  /**< cp_tree_root was called: root_pub holds member 0's addresses */
    int root_same; /**< member 0 runs on this member's host (its side link to root_pub.lo) */
    cp_tcp_pub_t root_pub;
    uint32_t seq;
    cp_tree_spec_t spec;
    cp_tcp_stats_t stats;
    char desc[224];
    unsigned char key[CP_AUTH_KEY_LEN]; /**< the run's secret (cp_tree_key) */
    char purpose[CP_AUTH_PURPOSE_LEN];  /**< what the tree is for: in every proof */
    int keyed;                          /**< cp_tree_key was called */
} cp_tree_t;

/** Open what member spec->me listens on; its addresses in *pub (empty when none).  NULL, with
 * the reason in why, when a listener or memory failed. */
cp_tree_t *cp_tree_new(const cp_tree_spec_t *spec, cp_tcp_pub_t *pub, char *why, size_t wlen);
/** The run's secret (CP_AUTH_KEY_LEN bytes, copied) and the tree's purpose ("job", "group TAG
 * FIRST"): every member of a tree gives the same, before cp_tree_join. */
void cp_tree_key(cp_tree_t *t, const unsigned char *key, const char *purpose);
/** A leader whose parent is not member 0: member 0's addresses, for its side link (before
 * cp_tree_join; root_same: on this host, to root->lo).  Without it that leader has none, and
 * side messages are off on every member. */
void cp_tree_root(cp_tree_t *t, const cp_tcp_pub_t *root, int root_same);
/** Connect: accept this member's children, connect to its parent (at parent->lo when
 * same_host, else parent->node; on member 0, parent is its own addresses, for the channel's
 * description), and learn the root's verdict.  Every member gets the same answer: 0 and the
 * tree is up, or -1 (why) and its sockets are closed.  A tree without cp_tree_key fails. */
int cp_tree_join(cp_tree_t *t, const cp_tcp_pub_t *parent, int same_host, char *why, size_t wlen);
/** Close every socket; free t (NULL is fine). */
void cp_tree_free(cp_tree_t *t);
/** Close every socket: the tree is off from now on (the run's channel failed or ends). */
void cp_tree_close(cp_tree_t *t);

/* The collectives: contracts of cp_oob_* (oob.h) over the tree's members; return
 * collprof_status_t; a peer that went away is COLLPROF_ERR_BOOTSTRAP at once (EOF). */
int cp_tree_gather(cp_tree_t *t, const void *in, void *out, size_t len);
int cp_tree_bcast(cp_tree_t *t, void *buf, size_t len, int root);
int cp_tree_allgather(cp_tree_t *t, const void *in, void *out, size_t len);
int cp_tree_alltoall(cp_tree_t *t, const void *in, void *out, size_t len);
int cp_tree_barrier(cp_tree_t *t);
/** Member 0's in holds n blocks of len bytes, block i for member i; each member's into out. */
int cp_tree_scatter(cp_tree_t *t, const void *in, void *out, size_t len);

/*
 * Side messages (tcp_side.c): between member 0 and the members connected to it directly: its
 * direct children (the other nodes' leaders below it and its own node's members) and, in a
 * tree deeper than two levels of nodes, the other leaders' side links (one connection from
 * each leader whose parent is not member 0 straight to member 0, proven like the tree's and
 * for side messages alone), outside the collectives' sequence, for a protocol that must go on
 * when a member stops answering (the screen's pair rounds).  A member that closes or sends
 * something else is lost alone; the tree stays up.  No collective may run while side messages
 * are on their way.  Every message of one protocol has one length.
 */
/** 1 when member m can use side messages (member 0, a direct child of it, or a leader with
 * a side link), 0 on every member when a leader has neither (t->side_off, the verdict). */
int cp_tree_side_direct(const cp_tree_t *t, int m);
/** A direct child: a message to member 0. */
int cp_tree_side_up(cp_tree_t *t, const void *buf, size_t len);
/** Member 0: a message to direct child m. */
int cp_tree_side_down(cp_tree_t *t, int m, const void *buf, size_t len);
/** A direct child: the next message from member 0 within s seconds: 1 got, 0 none yet, < 0
 * the tree or member 0 failed. */
int cp_tree_side_from_root(cp_tree_t *t, void *buf, size_t len, double s);
/** Member 0: one message from any direct child m with wait[m] set (wait has n entries),
 * within s seconds: 1 got (from *m), 2 child *m is lost (closed, or sent something else), 0
 * none within s, < 0 an error. */
int cp_tree_side_poll(cp_tree_t *t, const unsigned char *wait, double s, int *m, void *buf,
                      size_t len);

#endif /* COLLPROF_CHAN_TCP_TREE_H */
