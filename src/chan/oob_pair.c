#include "config.h"

/*
 * A channel of a few ranks by themselves (oob.h, cp_oob_pair_*): a TCP tree of its members
 * (tcp_tree.h), a star to member 0, the lowest rank and the listener, proven with the run's
 * secret, every wait of it bounded (spec.wait_s), so that a member that stops is an error
 * within the bound, never a hang.  The screen's pairs and validation groups start their own
 * backend contexts over it.
 */

#include "chan/chan.h"
#include "chan/tcp_tree.h"
#include "base/timeouts.h"
#include "collprof/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cp_oob_pair {
    int me, n;  /* this rank's index, the members */
    int *ranks; /* the members' job ranks, ascending (after the join) */
    cp_tree_t *t;
    cp_tcp_pub_t pub; /* member 0's addresses */
};

cp_oob_pair_t *cp_oob_pair_new(const cp_boot_t *b, int me, int n, double wait_s, char *addr,
                               size_t alen, char *why, size_t wlen)
{
    cp_tree_t *w = cp_chan_world();
    if (w == NULL || n < 2 || me < 0 || me >= n) {
        snprintf(why, wlen, "no TCP control channel for a group of %d", n);
        return NULL;
    }
    cp_oob_pair_t *p = calloc(1, sizeof(*p));
    int *ranks = calloc((size_t)n, sizeof(int));
    if (p == NULL || ranks == NULL) {
        free(p);
        free(ranks);
        snprintf(why, wlen, "out of memory");
        return NULL;
    }
    p->me = me;
    p->n = n;
    p->ranks = ranks;
    cp_tree_spec_t spec = {.me = me,
                           .n = n,
                           .leader = me,
                           .nlocal = 1,
                           .hostname = b->hostname,
                           .star = 1,
                           .wait_s = wait_s,
                           .accept_s = me == 0 && b->rank != 0 ? cp_tmo_screen_accept(wait_s) : 0};
    /* a member 0 but rank 0 accepts as long as rank 0 waits for it (rank 0 hands its address
     * on as it arrives); rank 0 tells its own group's members as it joins: the pair deadline */
    p->t = cp_tree_new(&spec, &p->pub, why, wlen);
    if (p->t == NULL) {
        free(ranks);
        free(p);
        return NULL;
    }
    char purpose[CP_AUTH_PURPOSE_LEN];
    snprintf(purpose, sizeof(purpose), "group of %d", n);
    cp_tree_key(p->t, w->key, purpose);
    if (addr != NULL && alen > 0) {
        snprintf(addr, alen, "%s", me == 0 ? p->pub.node : "");
    }
    if (me == 0 && p->pub.node[0] == '\0') {
        snprintf(why, wlen, "no listener on this node's address");
        cp_oob_pair_free(p);
        return NULL;
    }
    return p;
}

int cp_oob_pair_join(cp_oob_pair_t *p, const cp_boot_t *b, const char *addr, char *why, size_t wlen)
{
    cp_tcp_pub_t parent;
    if (p->me == 0) {
        parent = p->pub;
    } else {
        memset(&parent, 0, sizeof(parent));
        snprintf(parent.node, sizeof(parent.node), "%s", addr != NULL ? addr : "");
    }
    if (cp_tree_join(p->t, &parent, 0, why, wlen) != 0) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    int mine = b->rank; /* the members' ranks: what the backends' host tables name */
    if (cp_tree_allgather(p->t, &mine, p->ranks, sizeof(mine)) != COLLPROF_OK) {
        snprintf(why, wlen, "a member went away after the join");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

const int *cp_oob_pair_ranks(const cp_oob_pair_t *p, int *me, int *n)
{
    *me = p->me;
    *n = p->n;
    return p->ranks;
}

int cp_oob_pair_allgather(cp_oob_pair_t *p, const void *in, void *out, size_t len)
{
    return len == 0 ? COLLPROF_OK : cp_tree_allgather(p->t, in, out, len);
}

int cp_oob_pair_bcast(cp_oob_pair_t *p, void *buf, size_t len, int root)
{
    return len == 0 ? COLLPROF_OK : cp_tree_bcast(p->t, buf, len, root);
}

int cp_oob_pair_alltoall(cp_oob_pair_t *p, const void *in, void *out, size_t len)
{
    return len == 0 ? COLLPROF_OK : cp_tree_alltoall(p->t, in, out, len);
}

int cp_oob_pair_barrier(cp_oob_pair_t *p)
{
    return cp_tree_barrier(p->t);
}

void cp_oob_pair_free(cp_oob_pair_t *p)
{
    if (p != NULL) {
        cp_tree_free(p->t);
        free(p->ranks);
        free(p);
    }
}
