/*
 * TCP control channel for the full-world out-of-band collectives
 * (cp_oob_allgather / cp_oob_bcast / cp_oob_barrier).  A star: rank 0
 * listens, every other rank connects to it once at start-up; an allgather
 * is a gather to rank 0 and a send back, a broadcast goes through rank 0.
 * Internal to src/boot (pmix_client.c sets it up in cp_boot_init and falls
 * back to PMIx fences when it cannot).  Not thread-safe, like the calls it
 * serves; it takes no lock, so the watchdog's exit path never waits on it.
 */
#ifndef COLLPROF_BOOT_OOB_TCP_H
#define COLLPROF_BOOT_OOB_TCP_H

#include <stddef.h>

/** Rank 0's listening addresses, published in the start-up exchange
 * ("host:port" numeric; "" when that listener is absent). */
typedef struct cp_tcp_pub {
    char lo[64];   /**< on 127.0.0.1: for the ranks on rank 0's node */
    char node[80]; /**< on this node's address: for the other nodes */
} cp_tcp_pub_t;

/** Rank 0: open the listeners (all_local: every rank is on this node, as far
 * as the launcher says; hostname: this node's name).  Other ranks: an empty
 * pub.  0, or -1 with the reason in cp_tcp_why(). */
int cp_tcp_listen(int rank, int nranks, int all_local, const char *hostname, cp_tcp_pub_t *pub);
/** Ranks > 0: connect to rank 0 (pub0) and say who we are; rank 0: accept
 * the nranks - 1 connections and tell each whether all came.  Bounded in
 * time.  Every rank gets the same answer: 0 and the channel is up, or -1
 * (cp_tcp_why()) and it is closed. */
int cp_tcp_connect(int rank, int nranks, const cp_tcp_pub_t *pub0, int same_node_as_0);
/** Close every socket (fallback, finalize); the channel is off afterwards. */
void cp_tcp_close(void);
/** Why the channel is not up ("" when it is or was never tried). */
const char *cp_tcp_why(void);
/* COLLPROF_OOB=pmix: the collectives go through PMIx fences (no TCP channel, and not in the
 * process either for one rank), to compare with the default paths. */
int cp_oob_pmix_forced(void);
int cp_tcp_on(void);
/** "tcp 127.0.0.1:PORT" or "tcp ADDR:PORT" (rank 0's address in use). */
const char *cp_tcp_desc(void);

/* The collectives: same contracts as cp_oob_*; return collprof_status_t;
 * a peer that went away is COLLPROF_ERR_BOOTSTRAP at once (EOF). */
int cp_tcp_allgather(const void *in, void *out, size_t len);
int cp_tcp_bcast(void *buf, size_t len, int root);
/* every rank's len bytes to out[r*len..] on rank 0; out unused elsewhere */
int cp_tcp_gather(const void *in, void *out, size_t len);
/* in[r*len..] goes to rank r; out[r*len..] comes from rank r (no overlap) */
int cp_tcp_alltoall(const void *in, void *out, size_t len);
int cp_tcp_barrier(void);

typedef struct cp_tcp_stats {
    unsigned long ops;             /**< collectives over the channel */
    double op_s;                   /**< seconds spent in them */
    unsigned long long sent_bytes; /**< payload bytes sent */
    unsigned long long got_bytes;  /**< payload bytes received */
} cp_tcp_stats_t;
void cp_tcp_stats(cp_tcp_stats_t *out);

#endif /* COLLPROF_BOOT_OOB_TCP_H */
