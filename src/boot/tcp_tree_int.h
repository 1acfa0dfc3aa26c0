/*
 * What the TCP control tree's set-up files share (tcp_tree.h): tcp_tree.c (listeners, the
 * connection to the parent, the verdict) and tcp_accept.c (accepting the children's
 * introductions).  Internal to src/boot.
 */
#ifndef COLLPROF_BOOT_TCP_TREE_INT_H
#define COLLPROF_BOOT_TCP_TREE_INT_H

#include "boot/tcp_tree.h"

#include <stdint.h>

#define HELLO_MAGIC     0x43504f48u /* "CPOH": a member introduces its subtree */
#define VERDICT_MAGIC   0x43504f56u /* "CPOV": the root says whether all came */
#define VERDICT_DEEP    0x43504f57u /* "CPOW": all came, and leaders hang below leaders */
#define HEIGHT_MAX      4096        /* a subtree's height in an introduction, at most */
#define CHALLENGE_MAGIC 0x43504f43u /* "CPOC": a listener's nonce */

/* The introduction's fixed-size part: five uint32 (magic, index, shape, n, count), the child's
 * nonce, its proof; shape: its subtree's height, plus 1 << 16 when the subtree holds a leader
 * whose parent is not member 0. */
#define INTRO_LEN     (5 * 4 + CP_AUTH_NONCE_LEN + CP_AUTH_MAC_LEN)
#define CHALLENGE_LEN (4 + CP_AUTH_NONCE_LEN)
#define MAX_PENDING   64 /* connections being introduced at once; more wait in the backlog */
#define MAX_LOGGED    16 /* peer addresses whose drops were logged, per accept phase */

/* tcp_tree.c */
void cp_tree_close_fd(int *fd);

/* tcp_accept.c */
uint32_t cp_tree_word(const unsigned char *p, int i);
int cp_tree_accept_kids(cp_tree_t *t, int want, int want_kids, double wait_s);
double cp_tree_join_wait(const cp_tree_t *t, double def);

#endif
