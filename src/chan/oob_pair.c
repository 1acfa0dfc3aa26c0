#include "config.h"

/*
 * A channel of a few ranks by themselves (oob.h, cp_oob_pair_*): a TCP tree of its members
 * (tcp_tree.h), a star to member 0, the lowest rank and the listener, proven with the run's
 * secret, every wait of it bounded (spec.wait_s), so that a member that stops is an error
 * within the bound, never a hang.  The screen's pairs and validation groups start their own
 * backend contexts over it.
 *
 * Member 0 listens on its node's address alone (every other member is another node's leader),
 * under the tree's accepting discipline (tcp_accept.c: unproven connections capped per peer
 * address, the oldest evicted, a deadline of about a round trip).  Its purpose binds this one
 * channel: member 0's job rank and a fresh random tag, both in the address it publishes
 * ("HOST:PORT#RANK.TAG", handed to the others by rank 0 over the job's tree), so that a member
 * of another round's pair or group (a late one, dialling a port since reused) proves the wrong
 * purpose and is refused.
 */

#include "chan/chan.h"
#include "chan/tcp_tree.h"
#include "base/timeouts.h"
#include "collprof/status.h"
#include "base/fault.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CP_OOB_PAIR_ADDR_MAX 80 /* what the screen's messages carry (screen_pairs_int.h) */

struct cp_oob_pair {
    int me, n;  /* this rank's index, the members */
    int *ranks; /* the members' job ranks, ascending (after the join) */
    cp_tree_t *t;
    cp_tcp_pub_t pub; /* member 0's addresses */
};

/* The tree's secret and purpose from a published address "HOST:PORT#RANK.TAG" (member 0's
 * rank and tag).  0, or -1: malformed. */
static int pair_key(cp_oob_pair_t *p, const cp_tree_t *w, const char *pub)
{
    const char *hash = strrchr(pub, '#');
    int rank = -1, used = 0;
    char tag[16] = "";
    if (hash == NULL || sscanf(hash + 1, "%d.%12[0-9a-f]%n", &rank, tag, &used) != 2 ||
        hash[1 + used] != '\0' || rank < 0 || strlen(tag) != 12) {
        return -1;
    }
    char purpose[CP_AUTH_PURPOSE_LEN];
    snprintf(purpose, sizeof(purpose), "group of %d, member 0 rank %d, %s", p->n, rank, tag);
    cp_tree_key(p->t, w->key, purpose);
    return 0;
}

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
                           .remote_only = 1,
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
    unsigned char tag[6];
    if (me == 0 && cp_auth_random(tag, sizeof(tag), why, wlen) != 0) {
        cp_oob_pair_free(p);
        return NULL;
    }
    char pub[2 * CP_OOB_PAIR_ADDR_MAX] = "";
    if (me == 0) {
        snprintf(pub, sizeof(pub), "%s#%d.%02x%02x%02x%02x%02x%02x", p->pub.node, b->rank, tag[0],
                 tag[1], tag[2], tag[3], tag[4], tag[5]);
        pair_key(p, w, pub);
    }
    if (addr != NULL && alen > 0) {
        snprintf(addr, alen, "%s", pub);
    }
    if (me == 0 && (p->pub.node[0] == '\0' || strlen(pub) >= CP_OOB_PAIR_ADDR_MAX ||
                    (addr != NULL && strlen(pub) >= alen))) {
        snprintf(why, wlen, "%s",
                 p->pub.node[0] == '\0' ? "no listener on this node's address"
                                        : "this node's address is too long to publish");
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
        cp_tree_t *w = cp_chan_world();
        memset(&parent, 0, sizeof(parent));
        if (w == NULL || addr == NULL || pair_key(p, w, addr) != 0) {
            snprintf(why, wlen, "member 0's address '%s' is malformed", addr != NULL ? addr : "");
            cp_tree_close(p->t);
            return COLLPROF_ERR_BOOTSTRAP;
        }
        snprintf(parent.node, sizeof(parent.node), "%.*s", (int)(strrchr(addr, '#') - addr), addr);
        long late = cp_fault_pair_late_ms(b->rank);
        if (late > 0) {
            cp_log(CP_LOG_WARN, "COLLPROF_FAULT: %ld ms before dialling member 0", late);
            usleep((useconds_t)late * 1000);
        }
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
