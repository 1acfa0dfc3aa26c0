/*
 * The control channel's transports (internal to src/chan; cp_boot_init, src/boot, starts and
 * closes it).  cp_boot_init chooses one at start-up, once, and every full-world collective of
 * oob.h goes to it: "tcp" (the tree of tcp_tree.h), "pmix" (a PMIx fence per collective: no
 * TCP, or COLLPROF_OOB=pmix) or "local" (one rank: the collectives stay in the process).  The
 * group collectives of --split go over a tree of their own when the channel is "tcp", else
 * over PMIx keys.
 *
 * src/chan's files, top to bottom (each calls only files below it): chan_start, oob_group,
 * oob_pair, oob, oob_pmix, pmix_session, tcp_coll, tcp_tree, tcp_side, tcp_accept, tcp_hello,
 * tcp_auth, tcp_sock, unix_sock, tree_shape.
 */
#ifndef COLLPROF_CHAN_CHAN_H
#define COLLPROF_CHAN_CHAN_H

#include "chan/oob.h"
#include "chan/pmix_session.h"
#include "chan/tcp_tree.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cp_chan {
    const char *name;
    int (*allgather)(const void *in, void *out, size_t len);
    int (*gather)(const void *in, void *out, size_t len);
    int (*bcast)(void *buf, size_t len, int root);
    int (*alltoall)(const void *in, void *out, size_t len);
    int (*barrier)(void);
} cp_chan_t;

extern const cp_chan_t cp_chan_local, cp_chan_pmix;

/* oob.c: the choice (tree: the job's TCP tree, up, for "tcp"; NULL: PMIx, or in the process
 * when local; why: why not TCP, "" when asked for), and the end of it (finalize). */
void cp_chan_use_tcp(cp_tree_t *tree);
void cp_chan_use_pmix(const char *why);
void cp_chan_use_local(void);
void cp_chan_close(void);
int cp_chan_is_tcp(void);       /* the TCP tree carries the full-world collectives */
cp_tree_t *cp_chan_world(void); /* that tree (NULL when not TCP) */

/* What each rank sends rank 0 at start-up (and rank 0 every rank, through PMIx, first). */
typedef struct peer_info {
    char hostname[256];
    int32_t local_rank;
    int32_t pid;
    cp_tcp_pub_t tcp; /* rank 0's TCP listeners; a node leader's loopback one; else empty */
} peer_info_t;

/* chan_start.c: collective at start-up, after the identity: open the TCP tree (this rank's
 * listening addresses into mine->tcp; rank 0's record, p0, to every rank through PMIx) or
 * choose PMIx fences; then cp_oob_* work.  Fails only when PMIx fails. */
int cp_chan_start(const cp_boot_t *b, peer_info_t *mine, peer_info_t *p0);

/* oob_pmix.c: PMIx underneath the channel. */
int cp_pmix_put(const char *key, const void *buf, size_t len); /* put and commit */
int cp_pmix_fence(int collect);
int cp_pmix_get(int rank, const char *key, void *dst, size_t len);
void cp_pmix_stats(cp_oob_stats_t *out); /* the PMIx fields */
int cp_pmix_group_allgather(cp_oob_group_t *g, const void *in, void *out, size_t len);
int cp_pmix_group_bcast(cp_oob_group_t *g, void *buf, size_t len, int root);
int cp_pmix_group_alltoall(cp_oob_group_t *g, const void *in, void *out, size_t len);
/* An all-to-all as an allgather of whole rows (of the job, or of g when not NULL). */
int cp_pmix_alltoall_by_rows(cp_oob_group_t *g, int n, int me, const void *in, void *out,
                             size_t len);

/* COLLPROF_OOB=pmix: PMIx fences, no TCP channel (and not in the process for one rank). */
int cp_oob_pmix_forced(void);

#endif /* COLLPROF_CHAN_CHAN_H */
