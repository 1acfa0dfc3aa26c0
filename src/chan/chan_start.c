#include "config.h"

/*
 * Choosing the control channel, once, at start-up (chan.h).  The TCP tree's
 * shape comes from PMIx: a node's leader is its lowest rank (PMIx's local
 * peers; rank 0 on rank 0's node), and the leaders form a tree of fanout
 * COLLPROF_TREE_FANOUT over PMIx's node list (tree_shape.h,
 * cp_pmix_node_place; without a usable list, the two-level tree).  Rank 0's
 * record (host, listening addresses, and the run's secret: CP_AUTH_KEY_LEN
 * bytes from getrandom(2), which every connection of the tree proves,
 * tcp_auth.h) and every other listening leader's addresses go out in one
 * PMIx fence; every rank then connects to its parent and learns rank 0's
 * verdict.  A leader below another leader also opens a side link to rank 0
 * (tcp_side.c; rank 0's addresses from its record).  Every rank decides
 * alike: the tree,
 * or PMIx fences with the reason (a warning on rank 0 unless
 * COLLPROF_OOB=pmix asked for them).
 */

#include "chan/chan.h"
#include "chan/tcp_sock.h"
#include "chan/tree_shape.h"
#include "collprof/status.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_ROOT   "cp.boot.root"   /* rank 0's root_rec_t */
#define KEY_LEADER "cp.boot.leader" /* another listening leader's cp_tcp_pub_t */

/* What rank 0 publishes: its record and the run's secret (zero without a TCP tree).  Only the
 * job's processes read it: PMIx's own security guards it. */
typedef struct root_rec {
    peer_info_t info;
    unsigned char secret[CP_AUTH_KEY_LEN];
} root_rec_t;

/* The tree's shape for this rank; without PMIx's local peers, or with COLLPROF_OOB=star, every
 * rank leads itself (a star to rank 0). */
static cp_tree_spec_t world_spec(const cp_boot_t *b)
{
    cp_tree_spec_t s = {.me = b->rank,
                        .n = b->nranks,
                        .leader = b->rank,
                        .nlocal = 1,
                        .all_local = b->local_size == b->nranks,
                        .hostname = b->hostname,
                        .star = 1};
    int leader, nlocal;
    const char *mode = getenv("COLLPROF_OOB"); /* "star": to compare (bench/scale.sh) */
    if ((mode == NULL || strcmp(mode, "star") != 0) && cp_pmix_local_peers(&leader, &nlocal) == 0 &&
        leader <= b->rank) {
        s.leader = leader;
        s.nlocal = nlocal;
        s.star = nlocal == b->nranks; /* one node: every rank's leader is rank 0 */
    }
    if (s.star || s.leader != s.me) {
        return s;
    }
    /* a leader: its place among the nodes, the same on every rank without an exchange */
    cp_node_place_t pl;
    char why[160] = "", err[160];
    if (cp_tree_fanout(&s.fanout, err, sizeof(err)) != 0) {
        s.fanout = CP_TREE_FANOUT_DEFAULT; /* collprof.c refused it before: not reached */
    }
    if (cp_pmix_node_place(s.fanout, s.leader, s.nlocal, &pl, why, sizeof(why)) == 0) {
        s.parent_lead = pl.parent_lead > 0 ? pl.parent_lead : 0;
        s.kid_nodes = s.me == 0 ? 0 : pl.kid_nodes; /* member 0 takes any number */
        s.nnodes = pl.nnodes;
        s.node = pl.index;
    } else {
        cp_log(CP_LOG_INFO, "control channel: the two-level tree (%s)", why);
    }
    return s;
}

/* Rank 0's record to every rank, each other leader's addresses to its node's ranks: one
 * fence, at most two gets per rank.  Every rank makes the fence, whatever failed before. */
static int exchange(const cp_tree_spec_t *s, const peer_info_t *mine, root_rec_t *r0,
                    cp_tcp_pub_t *lpub)
{
    int rc = COLLPROF_OK;
    if (s->me == 0) {
        rc = cp_pmix_put(KEY_ROOT, r0, sizeof(*r0));
    } else if (s->leader == s->me && (s->nlocal > 1 || s->kid_nodes > 0)) {
        rc = cp_pmix_put(KEY_LEADER, &mine->tcp, sizeof(mine->tcp));
    }
    int frc = cp_pmix_fence(1);
    rc = rc != COLLPROF_OK ? rc : frc;
    if (rc == COLLPROF_OK && s->me != 0) {
        rc = cp_pmix_get(0, KEY_ROOT, r0, sizeof(*r0));
    }
    /* a member: its leader's; a leader below another leader: that leader's */
    int up = s->leader != s->me ? s->leader : s->parent_lead;
    if (rc == COLLPROF_OK && up != 0) {
        rc = cp_pmix_get(up, KEY_LEADER, lpub, sizeof(*lpub));
    }
    return rc;
}

/* Why no rank can take the tree, decided alike from rank 0's record; NULL: try it. */
static const char *hopeless(const cp_tree_spec_t *s, const peer_info_t *p0, const char *why0)
{
    if (p0->tcp.lo[0] == '\0') {
        return s->me == 0 && why0[0]  ? why0
               : cp_oob_pmix_forced() ? "COLLPROF_OOB=pmix"
                                      : "rank 0 opened no TCP listener";
    }
    if (p0->tcp.node[0] == '\0' && !s->all_local) {
        return s->me == 0 && why0[0] ? why0 : "rank 0 has no address for the other nodes";
    }
    return NULL;
}

/* The tree, or the reason in why. */
static cp_tree_t *connect_tree(const cp_boot_t *b, const cp_tree_spec_t *s, cp_tree_t *t,
                               const root_rec_t *r0, const cp_tcp_pub_t *lpub, char *why, size_t wl)
{
    char why0[256];
    snprintf(why0, sizeof(why0), "%s", why);
    const peer_info_t *p0 = &r0->info;
    const char *no = hopeless(s, p0, why0);
    if (no != NULL) {
        snprintf(why, wl, "%s", no);
    } else if (t == NULL) {
        /* this rank could not listen: its node's ranks fail, rank 0's wait runs out */
    } else {
        /* rank 0 describes its own; rank 0's node and the leaders below it go to rank 0;
         * others to their leader, leaders below leaders to theirs (on another node) */
        int up = s->leader != s->me ? s->leader : s->parent_lead;
        const cp_tcp_pub_t *parent = up == 0 ? &p0->tcp : lpub;
        int same = up == 0 ? strcmp(b->hostname, p0->hostname) == 0 : s->leader != s->me;
        cp_tree_key(t, r0->secret, "job");
        cp_tree_root(t, &p0->tcp, strcmp(b->hostname, p0->hostname) == 0); /* side links */
        if (cp_tree_join(t, parent, same, why, wl) == 0) {
            if (t->side_off) { /* alike on every rank: the screen's pairs run as cells */
                cp_log(CP_LOG_INFO, "control channel: no side messages (%s)", t->side_why);
            }
            return t;
        }
    }
    cp_tree_free(t);
    return NULL;
}

int cp_chan_start(const cp_boot_t *b, peer_info_t *mine, peer_info_t *p0)
{
    cp_tree_spec_t s = world_spec(b);
    char why[256] = "";
    int forced = b->rank == 0 && cp_oob_pmix_forced(); /* the others follow rank 0's record */
    if (b->nranks < 2 && !forced) {
        cp_chan_use_local(); /* whose every fence would only grow the server's key store */
        return COLLPROF_OK;
    }
    const pmix_proc_t *self = cp_pmix_self();
    cp_unix_job(self != NULL ? self->nspace : NULL); /* names the AF_UNIX listeners' folders */
    cp_tree_t *t = NULL;
    root_rec_t r0;
    memset(&r0, 0, sizeof(r0));
    /* rank 0 opens no listener without a secret: the others then learn "no listener" */
    if (!forced &&
        (b->rank != 0 || cp_auth_random(r0.secret, sizeof(r0.secret), why, sizeof(why)) == 0)) {
        t = cp_tree_new(&s, &mine->tcp, why, sizeof(why));
    }
    if (b->rank == 0) {
        p0->tcp = mine->tcp;
        r0.info = *p0;
    }
    cp_tcp_pub_t lpub;
    memset(&lpub, 0, sizeof(lpub));
    int rc = exchange(&s, mine, &r0, &lpub);
    *p0 = r0.info;
    if (rc != COLLPROF_OK) {
        cp_auth_wipe(r0.secret, sizeof(r0.secret));
        cp_tree_free(t);
        return rc;
    }
    t = forced ? NULL : connect_tree(b, &s, t, &r0, &lpub, why, sizeof(why));
    cp_auth_wipe(r0.secret, sizeof(r0.secret)); /* the trees keep their copies */
    if (t != NULL) {
        cp_chan_use_tcp(t);
        return COLLPROF_OK;
    }
    cp_chan_use_pmix(forced ? "COLLPROF_OOB=pmix" : why);
    /* a fall-back the user did not ask for costs every cell a fence: said without -v */
    cp_log(b->rank == 0 && !forced ? CP_LOG_WARN : CP_LOG_INFO,
           "no TCP control channel (%s): collprof's exchanges go through PMIx fences",
           forced ? "COLLPROF_OOB=pmix" : why);
    return COLLPROF_OK;
}
