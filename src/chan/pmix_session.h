/*
 * The PMIx session underneath the control channel (pmix_session.c): this process's PMIx name,
 * the job's size and this rank, one PMIx_Get, and where the ranks and nodes are.  cp_boot_init
 * (src/boot/pmix_client.c) opens and closes it around PMIx_Init and PMIx_Finalize; the
 * channel's files only read it.  Internal to src/chan and src/boot.
 */
#ifndef COLLPROF_CHAN_PMIX_SESSION_H
#define COLLPROF_CHAN_PMIX_SESSION_H

#include <pmix.h>

#include <stddef.h>

/* After PMIx_Init succeeded: this process's name (cp_pmix_self from now on). */
void cp_pmix_session_open(const pmix_proc_t *proc);
/* The job's ranks and this rank, once PMIx said (1 and 0 before, and without PMIx). */
void cp_pmix_session_size(int rank, int nranks);
/* After PMIx_Finalize (or a failed start): no session, one rank. */
void cp_pmix_session_close(void);

/* The PMIx session (NULL before PMIx_Init and after PMIx_Finalize). */
const pmix_proc_t *cp_pmix_self(void);
int cp_oob_nranks(void); /* the job's ranks (1 without PMIx) */
int cp_oob_rank(void);   /* this rank (0 without PMIx) */

/* PMIx_Get of key on rank (or PMIX_RANK_WILDCARD) of this job; optional: look only in data
 * the server already gave us.  The value (PMIX_VALUE_RELEASE it), or NULL with *rc. */
pmix_value_t *cp_pmix_value(pmix_rank_t rank, const char *key, int optional, pmix_status_t *rc);

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

#endif /* COLLPROF_CHAN_PMIX_SESSION_H */
