/*
 * The control channel's interface (src/chan): the job's identity it is built over (cp_boot_t,
 * which cp_boot_init fills, boot/boot.h), then the out-of-band collectives over all ranks,
 * over groups and pairs of them, side messages, what they cost, and the watchdog's
 * key-value exchange.  boot/boot.h includes it: its users include that.
 */
#ifndef COLLPROF_CHAN_OOB_H
#define COLLPROF_CHAN_OOB_H

#include <stddef.h>
#include <sys/types.h>

/** Filled by cp_boot_init(); the per-rank arrays have nranks entries. */
typedef struct cp_boot {
    int rank;
    int nranks;
    int local_rank;
    int local_size;
    int node_id; /**< index of this rank's node, 0..nnodes-1, in first-rank order */
    int nnodes;
    char hostname[256];
    const char *launcher;  /**< "self", "mpirun", "slurm", "pmix", "none" */
    char pmix_version[64]; /**< "" when PMIx is not in use */
    /* per node (index = node id), gathered at init: each node's name, once */
    char (*node_names)[256];
    /* per rank, gathered at init (index = rank) */
    int *node_ids;
    int *local_ranks;
    pid_t *pids;
} cp_boot_t;

/** The host name of rank's node (rank in 0..nranks-1): the names are held once per node
 *  (node_names), not once per rank (boot/tables.c). */
static inline const char *cp_boot_host(const cp_boot_t *b, int rank)
{
    return b->node_names[b->node_ids[rank]];
}

/* Out-of-band collectives over all ranks.  Collective: every rank calls them
 * in the same order, with the same len (and root).  Return
 * collprof_status_t.  They go over the control channel cp_boot_init chose
 * once: a two-level TCP tree (each rank connected to its node's first rank,
 * those to rank 0, over an AF_UNIX socket on a node (127.0.0.1 with
 * COLLPROF_CHAN_UNIX=0) and rank 0's node address between nodes; COLLPROF_OOB_IFACE=NAME: that interface's address), or, when it
 * cannot be opened or COLLPROF_OOB=pmix, PMIx (a fresh key and a fence per
 * call, whose cost grows with the keys so far).  With one rank they stay in
 * the process (unless COLLPROF_OOB=pmix).  A peer that exits makes them
 * fail; a stopped one makes them wait (the watchdog's business).  Meant for
 * control data and results, not bulk data.  len == 0 is a no-op (barrier
 * excepted).  Not thread-safe.  allgather: out holds nranks * len bytes, in
 * must not overlap out except at out + rank * len. */
int cp_oob_allgather(const void *in, void *out, size_t len);
/* gather: every rank's len bytes to rank 0 alone, which receives nranks * len bytes in out
 * (rank r's at out + r * len); out is not touched on the other ranks.  Through the TCP tree
 * rank 0 moves nranks * len bytes, where an allgather moves it nranks^2 * len. */
int cp_oob_gather(const void *in, void *out, size_t len);
int cp_oob_bcast(void *buf, size_t len, int root);
/* in holds nranks blocks of len bytes, block r for rank r; out[r*len..] receives rank r's
 * block for this rank; in and out must not overlap. */
int cp_oob_alltoall(const void *in, void *out, size_t len);
int cp_oob_barrier(void);

/* The same over a group of the job's ranks (split cells): only its members
 * call them, in the same order.  ranks: the members' job ranks, ascending;
 * me: this rank's index in ranks; tag: unique per group among the groups
 * this rank belongs to (it names the keys); seq starts at 0.  Over a TCP tree
 * of the group's own when the job's channel is TCP (cp_oob_group_open), else
 * over PMIx keys (a put, and bounded gets of the other members' keys). */
typedef struct cp_oob_group {
    const int *ranks;
    int n;
    int me;
    unsigned long seq;
    char tag[32];
    struct cp_tree *tree; /**< the group's TCP tree; NULL: PMIx */
} cp_oob_group_t;
/* Collective over the whole job (every rank, with its own group, once per group kind): the
 * group's channel.  A group whose tree cannot come up makes every group use PMIx (a warning
 * on rank 0).  Fails only when the job's channel failed. */
int cp_oob_group_open(cp_oob_group_t *g, const cp_boot_t *b);
void cp_oob_group_close(cp_oob_group_t *g);
int cp_oob_group_allgather(cp_oob_group_t *g, const void *in, void *out, size_t len);
int cp_oob_group_bcast(cp_oob_group_t *g, void *buf, size_t len, int root);
int cp_oob_group_alltoall(cp_oob_group_t *g, const void *in, void *out, size_t len);
int cp_oob_group_barrier(cp_oob_group_t *g);

/* Side messages between rank 0 and the ranks directly connected to it over the TCP channel
 * (the other nodes' leaders, below it or over their side links, and the ranks of its own
 * node), outside the collectives, for a
 * protocol that must go on when a rank stops answering (the screen's pair rounds): a rank that
 * closes its connection is lost alone.  Every message of one protocol has one length; no
 * collective may run while side messages are on their way.  Only over the TCP channel. */
/** 1 when rank can use them (rank 0, or a rank connected to rank 0 directly). */
int cp_oob_side_ok(int rank);
/** Not rank 0: a message to rank 0. */
int cp_oob_side_up(const void *buf, size_t len);
/** Rank 0: a message to rank (cp_oob_side_ok). */
int cp_oob_side_down(int rank, const void *buf, size_t len);
/** Not rank 0: the next message from rank 0 within s seconds: 1 got, 0 none yet, < 0 failed. */
int cp_oob_side_from_root(void *buf, size_t len, double s);
/** Rank 0: one message from any rank r with wait[r] (nranks entries) within s seconds: 1 got
 * (from *rank), 2 rank *rank is lost (closed, or sent something else), 0 none, < 0 failed. */
int cp_oob_side_poll(const unsigned char *wait, double s, int *rank, void *buf, size_t len);

/* A channel of n ranks by themselves (the screen's pairs and validation groups): a star of
 * TCP connections to member 0, proven with the run's secret, every wait of it at most wait_s
 * (the connections, and every message after them), so that a member that stops is an error
 * within wait_s, never a hang; member 0 accepts for cp_tmo_screen_accept(wait_s) (timeouts.h:
 * at least rank 0's silence limit, so that a member rank 0 sends late still finds it).  Only
 * over the TCP channel.  Every member calls
 * cp_oob_pair_new with its index me (by ascending job rank); member 0's gives its address in
 * addr ("" on the others; "HOST:PORT#RANK.TAG", under 80 bytes: member 0's rank and a fresh
 * tag that the channel's proofs bind, so that no member of another pair or round joins it),
 * which the others get from it some other way (the screen: through rank 0's side messages) and
 * pass to cp_oob_pair_join; all join (member 0 accepts).  NULL (why) when there is no TCP
 * channel or no listener. */
typedef struct cp_oob_pair cp_oob_pair_t;
cp_oob_pair_t *cp_oob_pair_new(const cp_boot_t *b, int me, int n, double wait_s, char *addr,
                               size_t alen, char *why, size_t wlen);
int cp_oob_pair_join(cp_oob_pair_t *p, const cp_boot_t *b, const char *addr, char *why,
                     size_t wlen);
/** The members' job ranks (after the join), ascending; this rank's index in *me, the count
 *  in *n. */
const int *cp_oob_pair_ranks(const cp_oob_pair_t *p, int *me, int *n);
/* The collectives of cp_oob_* over the two (root: 0 or 1). */
int cp_oob_pair_allgather(cp_oob_pair_t *p, const void *in, void *out, size_t len);
int cp_oob_pair_bcast(cp_oob_pair_t *p, void *buf, size_t len, int root);
int cp_oob_pair_alltoall(cp_oob_pair_t *p, const void *in, void *out, size_t len);
int cp_oob_pair_barrier(cp_oob_pair_t *p);
void cp_oob_pair_free(cp_oob_pair_t *p);

/** What this rank's out-of-band exchanges have cost so far (logged with -v at the end). */
typedef struct cp_oob_stats {
    unsigned long fences;         /**< PMIx fences (allgather, bcast, barrier) */
    double fence_s;               /**< seconds spent in them */
    unsigned long puts;           /**< values this rank published */
    unsigned long long put_bytes; /**< their bytes */
    unsigned long long got_bytes; /**< bytes read from other ranks */
    int tcp;                      /**< the TCP channel carries the full-world collectives */
    unsigned long tcp_ops;        /**< collectives over it */
    double tcp_s;                 /**< seconds spent in them */
    unsigned long long tcp_sent_bytes, tcp_got_bytes; /**< payload bytes */
    int tcp_links;                                    /**< connections this rank holds */
} cp_oob_stats_t;
void cp_oob_stats(cp_oob_stats_t *out);
/** Log them at -v: "oob (WHEN): N fences (S s in them), ...; channel tcp ADDR (...): L links,
 * ..." (or "channel pmix fences (no tcp: WHY)"). */
void cp_oob_log_stats(const char *when);

/** The control channel in use, one line: "tcp unix:PATH (star to rank 0)" (127.0.0.1:PORT
 *  with COLLPROF_CHAN_UNIX=0), "tcp ADDR
 *  (tree by node to rank 0)", "pmix fences (no tcp: WHY)" or "none (one rank)"; into buf,
 *  which it returns. */
const char *cp_oob_channel(char *buf, size_t len);

/* Key-value exchange without a fence, for the watchdog: thread-safe, never
 * waits for all ranks.  post publishes buf under key; fetch polls rank's
 * value of key until it appears (exactly len bytes) or timeout_s passes
 * (COLLPROF_ERR_TIMEOUT).  Without PMIx, post does nothing and fetch fails. */
int cp_oob_post(const char *key, const void *buf, size_t len);
/* Ask the launcher to end every rank of the job (PMIx_Abort), for the
 * watchdog when ranks are stopped or cut off and would keep it waiting.
 * Bounded: a server that does not answer within a few seconds ends this
 * process (SIGALRM).  Returns only when PMIx is not in use or the call
 * failed. */
void cp_oob_abort(int status, const char *msg);
int cp_oob_fetch(int rank, const char *key, void *dst, size_t len, double timeout_s);
/* One try at key of each of ranks[0..nr), all asked at once and waited for together for at
 * most wait_s: rank ranks[i]'s value (exactly len bytes) into dst + i * len and got[i] = 1, or
 * got[i] = 0 (not there yet, or not answered in time).  Returns how many came.  For the
 * watchdog's report: one cut-off node costs one wait, not one per rank. */
int cp_oob_fetch_all(const int *ranks, int nr, const char *key, void *dst, size_t len,
                     double wait_s, int *got);

#endif /* COLLPROF_CHAN_OOB_H */
