/*
 * The TCP control channel's proofs (tcp_tree.c).  Every run has a secret of
 * CP_AUTH_KEY_LEN random bytes from the kernel (getrandom(2)), made by rank 0
 * and handed to the job's ranks through PMIx in rank 0's start-up record; a
 * --split group's tree uses the job's.  It never goes over the channel
 * itself: a connection proves it with a challenge and a response.
 *
 *   acceptor -> connector   CHALLENGE_MAGIC, nonce_a           (fresh per connection)
 *   connector -> acceptor   HELLO_MAGIC, index, 0, n, count, nonce_c,
 *                           HMAC(key, "C", purpose, nonce_a, nonce_c, index, n),
 *                           then its subtree (count indices)
 *   acceptor -> connector   HMAC(key, "A", purpose, nonce_a, nonce_c, index, n)
 *
 * The acceptor reads nothing beyond the fixed-size introduction before its
 * proof checks out; the connector reads nothing (the verdict, any
 * collective) before the acceptor's proof checks out: both ends prove they
 * hold the run's secret, a proof is good for one connection only (both
 * nonces), for one member index, one size and one tree ("purpose": the job's
 * tree, or one group's; a leader's side link to the root proves "PURPOSE
 * side" with its own magic, tcp_side.c, so that neither passes for the
 * other).  HMAC-SHA256 from nettle; proofs are compared in
 * constant time.  Only the set-up is authenticated: the traffic is neither
 * encrypted nor protected against someone who can rewrite a TCP stream on
 * the wire.  Internal to src/chan.
 */
#ifndef COLLPROF_CHAN_TCP_AUTH_H
#define COLLPROF_CHAN_TCP_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define CP_AUTH_KEY_LEN     32 /* the run's secret: 256 bits */
#define CP_AUTH_NONCE_LEN   16 /* a challenge: 128 bits */
#define CP_AUTH_MAC_LEN     32 /* HMAC-SHA256 */
#define CP_AUTH_PURPOSE_LEN 48 /* "job", "group TAG FIRST" */

/** Who proves: the member that connects, or the one that accepted it. */
enum { CP_AUTH_CONNECTOR = 'C', CP_AUTH_ACCEPTOR = 'A' };

/** len bytes from the kernel's random source: 0, or -1 with the reason in why. */
int cp_auth_random(void *buf, size_t len, char *why, size_t wlen);

/** The proof of role for one connection (out: CP_AUTH_MAC_LEN bytes). */
void cp_auth_mac(const unsigned char *key, const char *purpose, int role, const unsigned char *na,
                 const unsigned char *nc, uint32_t index, uint32_t n, unsigned char *out);

/** Whether proof is the one of role for this connection (compared in constant time). */
int cp_auth_check(const unsigned char *key, const char *purpose, int role, const unsigned char *na,
                  const unsigned char *nc, uint32_t index, uint32_t n, const unsigned char *proof);

/** Forget len bytes of a secret (not optimised away). */
void cp_auth_wipe(void *buf, size_t len);

#endif /* COLLPROF_CHAN_TCP_AUTH_H */
