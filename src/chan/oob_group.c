#include "config.h"

/*
 * The group collectives of --split (oob.h's cp_oob_group_*).  When the
 * job's channel is the TCP tree, every group gets a tree of its own (its
 * members' connections to their node's first member, those to the group's
 * member 0), opened once per group kind: each member tells rank 0 over the
 * job's tree where it listens and who its parent is, rank 0 sends each
 * member its parent's address (O(n) bytes through rank 0), and the groups
 * connect, all at once, proving the job's secret (the job's tree holds it)
 * for this group's tree alone.  If any group's tree fails, every group goes
 * over PMIx keys instead (put, then bounded gets), decided alike on every
 * rank.
 */

#include "chan/chan.h"
#include "collprof/status.h"
#include "base/log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a member tells rank 0 when the groups open. */
typedef struct grp_rec {
    int32_t parent;   /* job rank of its parent in the group's tree; -1: the group's member 0;
                       * -2: no tree here */
    int32_t node;     /* its node */
    cp_tcp_pub_t pub; /* where it listens */
} grp_rec_t;

/* What rank 0 tells it back. */
typedef struct grp_dir {
    int32_t ok;        /* both ends have a tree */
    int32_t same_host; /* its parent is on its node */
    cp_tcp_pub_t pub;  /* its parent's addresses */
} grp_dir_t;

static cp_tree_spec_t group_spec(const cp_oob_group_t *g, const cp_boot_t *b)
{
    cp_tree_spec_t s = {.me = g->me,
                        .n = g->n,
                        .leader = -1,
                        .hostname = b->hostname,
                        .ranks = g->ranks,
                        .all_local = 1};
    int mine = b->node_ids[g->ranks[g->me]], first = b->node_ids[g->ranks[0]];
    for (int i = 0; i < g->n; i++) {
        int node = b->node_ids[g->ranks[i]];
        if (node == mine) {
            s.nlocal++;
            s.leader = s.leader < 0 ? i : s.leader;
        }
        s.all_local &= node == first;
    }
    if (mine == first) {
        s.leader = 0; /* member 0's node: member 0 leads it */
    }
    return s;
}

/* Rank 0: each member's parent's address, from every member's record. */
static void directory(const grp_rec_t *all, grp_dir_t *dir, int n)
{
    for (int r = 0; r < n; r++) {
        int p = all[r].parent;
        memset(&dir[r], 0, sizeof(dir[r]));
        if (p >= 0 && p < n) {
            dir[r].ok = all[p].parent != -2;
            dir[r].same_host = all[p].node == all[r].node;
            dir[r].pub = all[p].pub;
        } else {
            dir[r].ok = p == -1;
        }
    }
}

/* Every rank: whether every group's tree came up (rank 0 decides, all learn it). */
static int all_up(cp_tree_t *w, int mine, int rank)
{
    int n = w->n, verdict = 1;
    int32_t *all = rank == 0 ? malloc((size_t)n * sizeof(int32_t)) : NULL;
    int32_t me = mine;
    if (rank == 0 && all == NULL) {
        cp_tree_close(w); /* every rank fails the gather */
        return -1;
    }
    int rc = cp_tree_gather(w, &me, all, sizeof(me));
    for (int r = 0; rc == COLLPROF_OK && rank == 0 && r < n; r++) {
        verdict &= all[r] != 0;
    }
    free(all);
    rc = rc == COLLPROF_OK ? cp_tree_bcast(w, &verdict, sizeof(verdict), 0) : rc;
    return rc != COLLPROF_OK ? -1 : verdict;
}

/* The group's tree, through the job's tree w; 1 up, 0 not (PMIx then), -1 w failed. */
static int open_tree(cp_oob_group_t *g, const cp_boot_t *b, cp_tree_t *w, char *why, size_t wl)
{
    cp_tree_spec_t spec = group_spec(g, b);
    grp_rec_t mine;
    memset(&mine, 0, sizeof(mine));
    cp_tree_t *t = cp_tree_new(&spec, &mine.pub, why, wl);
    if (t != NULL) { /* the job's secret; the group's own purpose */
        char purpose[CP_AUTH_PURPOSE_LEN];
        snprintf(purpose, sizeof(purpose), "group %.31s %d", g->tag, g->ranks[0]);
        cp_tree_key(t, w->key, purpose);
    }
    mine.parent = t == NULL ? -2 : g->me == 0 ? -1 : g->ranks[t->parent_index];
    mine.node = b->node_id;
    int root = b->rank == 0;
    grp_rec_t *all = root ? malloc((size_t)b->nranks * sizeof(*all)) : NULL;
    grp_dir_t *dir = root ? malloc((size_t)b->nranks * sizeof(*dir)) : NULL, got;
    if (root && (all == NULL || dir == NULL)) {
        cp_tree_close(w); /* every rank fails the gather */
    }
    int rc = cp_tree_gather(w, &mine, all, sizeof(mine));
    if (rc == COLLPROF_OK && root) {
        directory(all, dir, b->nranks);
    }
    rc = rc == COLLPROF_OK ? cp_tree_scatter(w, dir, &got, sizeof(got)) : rc;
    free(all);
    free(dir);
    int ok = rc == COLLPROF_OK && t != NULL && got.ok &&
             cp_tree_join(t, g->me == 0 ? &mine.pub : &got.pub, got.same_host, why, wl) == 0;
    if (rc == COLLPROF_OK && t != NULL && !got.ok) {
        snprintf(why, wl, "the member before it in its group has no tree");
    }
    int up = rc == COLLPROF_OK ? all_up(w, ok, b->rank) : -1;
    if (up == 1) {
        g->tree = t;
    } else {
        cp_tree_free(t);
    }
    return up;
}

int cp_oob_group_open(cp_oob_group_t *g, const cp_boot_t *b)
{
    g->tree = NULL;
    g->seq = 0;
    cp_tree_t *w = cp_chan_world();
    if (!cp_chan_is_tcp()) {
        return COLLPROF_OK; /* PMIx keys: every rank has the same channel */
    }
    char why[256] = "";
    int up = open_tree(g, b, w, why, sizeof(why));
    if (up < 0) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (up == 0) {
        cp_log(b->rank == 0 ? CP_LOG_WARN : CP_LOG_INFO,
               "group %s: no TCP tree (%s): the groups' exchanges go through PMIx", g->tag,
               why[0] ? why : "it failed on another rank");
    }
    return COLLPROF_OK;
}

void cp_oob_group_close(cp_oob_group_t *g)
{
    cp_tree_free(g->tree);
    g->tree = NULL;
}

int cp_oob_group_allgather(cp_oob_group_t *g, const void *in, void *out, size_t len)
{
    if (g->tree == NULL) {
        return cp_pmix_group_allgather(g, in, out, len);
    }
    if (len == 0) {
        return COLLPROF_OK;
    }
    return in == NULL || out == NULL ? COLLPROF_ERR_INVALID
                                     : cp_tree_allgather(g->tree, in, out, len);
}

int cp_oob_group_bcast(cp_oob_group_t *g, void *buf, size_t len, int root)
{
    if (g->tree == NULL) {
        return cp_pmix_group_bcast(g, buf, len, root);
    }
    if (root < 0 || root >= g->n) {
        cp_log(CP_LOG_ERROR, "OOB broadcast from group rank %d of %d", root, g->n);
        return COLLPROF_ERR_INVALID;
    }
    if (len == 0) {
        return COLLPROF_OK;
    }
    return buf == NULL ? COLLPROF_ERR_INVALID : cp_tree_bcast(g->tree, buf, len, root);
}

int cp_oob_group_alltoall(cp_oob_group_t *g, const void *in, void *out, size_t len)
{
    if (g->tree == NULL) {
        return cp_pmix_group_alltoall(g, in, out, len);
    }
    if (len == 0) {
        return COLLPROF_OK;
    }
    return in == NULL || out == NULL ? COLLPROF_ERR_INVALID
                                     : cp_tree_alltoall(g->tree, in, out, len);
}

int cp_oob_group_barrier(cp_oob_group_t *g)
{
    if (g->tree != NULL) {
        return cp_tree_barrier(g->tree);
    }
    unsigned char one = 1, *all = malloc((size_t)g->n);
    if (all == NULL) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    int rc = cp_pmix_group_allgather(g, &one, all, 1);
    free(all);
    return rc;
}
