#include "config.h"

/*
 * A channel of two ranks by themselves (boot.h, cp_oob_pair_*): a TCP tree of two members
 * (tcp_tree.h), the lower rank member 0 and the listener, proven with the run's secret,
 * every wait of it bounded (spec.wait_s), so that a partner that stops is an error within
 * the bound, never a hang.  The screen's pairs start their own backend contexts over it.
 */

#include "boot/boot.h"
#include "boot/chan.h"
#include "boot/tcp_tree.h"
#include "collprof/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cp_oob_pair {
    int ranks[2]; /* ascending */
    int me;       /* this rank's index */
    cp_tree_t *t;
    cp_tcp_pub_t pub; /* member 0's addresses */
};

cp_oob_pair_t *cp_oob_pair_new(const cp_boot_t *b, int peer, double wait_s, char *addr, size_t alen,
                               char *why, size_t wlen)
{
    cp_tree_t *w = cp_chan_world();
    if (w == NULL || peer < 0 || peer >= b->nranks || peer == b->rank) {
        snprintf(why, wlen, "no TCP control channel for a pair");
        return NULL;
    }
    cp_oob_pair_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
        snprintf(why, wlen, "out of memory");
        return NULL;
    }
    p->me = b->rank < peer ? 0 : 1;
    p->ranks[0] = b->rank < peer ? b->rank : peer;
    p->ranks[1] = b->rank < peer ? peer : b->rank;
    cp_tree_spec_t spec = {.me = p->me,
                           .n = 2,
                           .leader = p->me,
                           .nlocal = 1,
                           .hostname = b->hostname,
                           .ranks = p->ranks,
                           .star = 1,
                           .wait_s = wait_s};
    p->t = cp_tree_new(&spec, &p->pub, why, wlen);
    if (p->t == NULL) {
        free(p);
        return NULL;
    }
    char purpose[CP_AUTH_PURPOSE_LEN];
    snprintf(purpose, sizeof(purpose), "pair %d %d", p->ranks[0], p->ranks[1]);
    cp_tree_key(p->t, w->key, purpose);
    if (addr != NULL && alen > 0) {
        snprintf(addr, alen, "%s", p->me == 0 ? p->pub.node : "");
    }
    if (p->me == 0 && p->pub.node[0] == '\0') {
        snprintf(why, wlen, "no listener on this node's address");
        cp_oob_pair_free(p);
        return NULL;
    }
    return p;
}

int cp_oob_pair_join(cp_oob_pair_t *p, const char *addr, char *why, size_t wlen)
{
    cp_tcp_pub_t parent;
    if (p->me == 0) {
        parent = p->pub;
    } else {
        memset(&parent, 0, sizeof(parent));
        snprintf(parent.node, sizeof(parent.node), "%s", addr != NULL ? addr : "");
    }
    return cp_tree_join(p->t, &parent, 0, why, wlen) == 0 ? COLLPROF_OK : COLLPROF_ERR_BOOTSTRAP;
}

const int *cp_oob_pair_ranks(const cp_oob_pair_t *p, int *me)
{
    *me = p->me;
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
        free(p);
    }
}
