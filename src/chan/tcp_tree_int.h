/*
 * What the TCP control tree's set-up files share (tcp_tree.h), top to bottom: tcp_tree.c
 * (listeners, the connection to the parent, the verdict), tcp_side.c (side links and
 * messages), tcp_accept.c (accepting the children's introductions), tcp_hello.c (a member's
 * introduction and the small pieces both ends use).  Internal to src/chan.
 */
#ifndef COLLPROF_CHAN_TCP_TREE_INT_H
#define COLLPROF_CHAN_TCP_TREE_INT_H

#include "chan/tcp_tree.h"

#include <stdint.h>

#define HELLO_MAGIC     0x43504f48u /* "CPOH": a member introduces its subtree */
#define SIDE_HELLO      0x43504f4cu /* "CPOL": a leader opens its side link to the root */
#define VERDICT_MAGIC   0x43504f56u /* "CPOV": all came, side messages on */
#define VERDICT_NOSIDE  0x43504f57u /* "CPOW": all came, a leader has no side link: side off */
#define HEIGHT_MAX      4096        /* a subtree's height in an introduction, at most */
#define CHALLENGE_MAGIC 0x43504f43u /* "CPOC": a listener's nonce */

/* The introduction's fixed-size part: five uint32 (magic, index, shape, n, count), the child's
 * nonce, its proof; shape: its subtree's height, plus 1 << 16 when the subtree holds a leader
 * whose parent is not member 0 and that has no side link to it.  A side link's: SIDE_HELLO,
 * the leader's index, 0, n, 0, its nonce and its proof for the purpose "PURPOSE side"
 * (cp_tree_side_purpose), and nothing after it. */
#define INTRO_LEN     (5 * 4 + CP_AUTH_NONCE_LEN + CP_AUTH_MAC_LEN)
#define CHALLENGE_LEN (4 + CP_AUTH_NONCE_LEN)
/* Connections being introduced at once.  The listeners are always polled: a full table evicts
 * the oldest connection of the peer address that holds the most, and one address holds at most
 * MAX_PER_PEER (its oldest evicted for a new one), so that a flood from a few addresses never
 * takes a member's slot, and one from a member's own address (a node's members all come from
 * 127.0.0.1) must open MAX_PER_PEER connections within that member's round trip to take it
 * (and the member then dials again).  A node's members arrive at once: MAX_PER_PEER is far
 * above what they hold while they prove themselves. */
#define MAX_PENDING  512
#define MAX_PER_PEER 128
#define MAX_LOGGED   16  /* peer addresses whose drops were logged, per accept phase */
#define MIN_BACKLOG  128 /* a listener's accept queue, at least (the kernel caps it) */
#define DIAL_TRIES   8   /* introductions tried per connection to a parent */
#define CHALLENGE_S  2.0 /* a dial's first wait for the listener's challenge (then doubled) */
#define ACCEPT_BURST 32  /* accepts per listener per turn of the loop: the queue drains */

/* tcp_hello.c */
void cp_tree_close_fd(int *fd);
/* Over fd, connected to addr: the listener's challenge, this member's introduction (magic,
 * shape, the cnt indices idx after it) with its proof for purpose, the listener's proof,
 * each wait at most wait_s.  0, or -1 with why; -2 when the listener closed the connection
 * before its proof (dropped or evicted: worth dialling again). */
int cp_tree_hello(const cp_tree_t *t, int fd, const char *addr, uint32_t magic, const char *purpose,
                  uint32_t shape, const int *idx, size_t cnt, double wait_s, char *why,
                  size_t wlen);
/* Dial addr and introduce this member (cp_tree_hello) within wait_s in all: a connection the
 * listener closed before its proof (evicted by a flood, or dropped) is dialled again, up to
 * DIAL_TRIES times, while the wait lasts; each dial at most dial_s.  The fd, or -1 with why. */
int cp_tree_dial_hello(const cp_tree_t *t, const char *addr, uint32_t magic, const char *purpose,
                       uint32_t shape, const int *idx, size_t cnt, double dial_s, double wait_s,
                       char *why, size_t wlen);
/* The purpose a side link proves (CP_AUTH_PURPOSE_LEN bytes in buf). */
void cp_tree_side_purpose(const cp_tree_t *t, char *buf);
/* Word i of an introduction or a challenge (big-endian uint32). */
uint32_t cp_tree_word(const unsigned char *p, int i);
/* A wait of the join: def, or the spec's bound when it has one. */
double cp_tree_join_wait(const cp_tree_t *t, double def);

/* tcp_accept.c */
int cp_tree_accept_kids(cp_tree_t *t, int want, int want_kids, double wait_s);

/* tcp_side.c */
/* A leader whose parent is not member 0 (side_off before the join): open its side link
 * (t->side, side_off 0), or say why not (side_why). */
void cp_tree_side_open(cp_tree_t *t);
/* Member 0, all members came: whether every leader below another has its side link; when not,
 * side_off and side_why, and the links closed. */
void cp_tree_side_check(cp_tree_t *t);
/* The root's verdict: side messages on (every leader reaches member 0 directly) or off (every
 * side link closed, side_off, side_why). */
void cp_tree_side_verdict(cp_tree_t *t, int on);

#endif
