/*
 * The control channel's transports (internal to src/boot).  cp_boot_init
 * chooses one at start-up, once, and every full-world collective of boot.h
 * goes to it: "tcp" (the two-level tree of tcp_tree.h), "pmix" (a PMIx
 * fence per collective: no TCP, or COLLPROF_OOB=pmix) or "local" (one rank:
 * the collectives stay in the process).  The group collectives of --split go
 * over a tree of their own when the channel is "tcp", else over PMIx keys.
 */
#ifndef COLLPROF_BOOT_CHAN_H
#define COLLPROF_BOOT_CHAN_H

#include "boot/boot.h"
#include "chan/tcp_tree.h"

#include <stddef.h>

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

/* chan_start.c: collective at start-up, after the identity: open the TCP tree (this rank's
 * listening addresses into mine->tcp; rank 0's record, p0, to every rank through PMIx) or
 * choose PMIx fences; then cp_oob_* work.  Fails only when PMIx fails. */
struct peer_info;
int cp_chan_start(const cp_boot_t *b, struct peer_info *mine, struct peer_info *p0);

/* pmix_client.c: the PMIx session (NULL before PMIx_Init and after PMIx_Finalize). */
struct pmix_proc;
const struct pmix_proc *cp_pmix_self(void);
int cp_oob_nranks(void); /* the job's ranks (1 without PMIx) */
int cp_oob_rank(void);   /* this rank (0 without PMIx) */
/* The lowest rank on this node and how many ranks it holds (PMIx's local peers): 0, or -1
 * when the launcher does not say. */
int cp_pmix_local_peers(int *lowest, int *count);

/* This leader's node in the control tree of fanout k (tree_shape.h), from PMIx's node list
 * (PMIx_Resolve_nodes; rank 0's node first) and ranks per node (PMIx_Resolve_peers of this
 * node and its parent): 0, or -1 with why (missing or not consistent with the local peers). */
typedef struct cp_node_place {
    int index, nnodes; /* this node's index in the tree, the job's nodes */
    int parent_lead;   /* the parent node's lowest rank (-1 on node 0) */
    int kid_nodes;     /* child nodes (tree_shape.h) */
} cp_node_place_t;
int cp_pmix_node_place(int k, int leader, int nlocal, cp_node_place_t *out, char *why, size_t wlen);

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

#endif /* COLLPROF_BOOT_CHAN_H */
