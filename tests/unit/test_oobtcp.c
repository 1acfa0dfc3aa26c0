/*
 * The TCP control tree (src/chan/tcp_tree.c, tcp_coll.c) on forked ranks over loopback, in two
 * shapes: a star (every rank its own node) and a tree by node (ranks placed cyclically on 3
 * "nodes", so that rank 0's order is not the ranks' and a leader holds two members) and a tree
 * of leaders of leaders (4 nodes of 2, fanout 2: node 3's leader hangs below node 1's): results
 * of allgather, bcast (from rank 0, from a leader's member and from a leader), all-to-all,
 * scatter, gather (to rank 0 alone: what each rank sends and receives) and barrier, payloads
 * larger than a socket buffer, a rank that exits (every other rank fails instead of waiting),
 * and ranks out of step (caught by the message header, not taken as data).  Authentication:
 * rogue connections made before any member's (one silent, three that claim a member's slot
 * with the right magic, index and size but no proof of the secret) neither take the slot, nor
 * see or inject data, nor delay the join; their drop is logged once for their address; a member
 * whose parent's address answers without the secret does not join it.  Side messages (the
 * screen's, tcp_side.c) between rank 0 and its direct children: each child's reaches rank 0
 * from that child, rank 0's reach each child, a child that sends nothing is a timeout and one
 * that exits is lost alone, and the collectives' sequence is untouched.  In the deep tree the
 * leader below another leader (rank 3) has a side link to rank 0: side messages go up and down
 * over it, and on after its parent leader (rank 1) exits; a side link that proves the tree's
 * purpose instead of the side link's, or nothing, is dropped and the tree and the real side
 * link come up all the same; without rank 3's side link every rank has side messages off and
 * says why, at once.  A flood of 400 silent connections at rank 0's listener from the members'
 * own address, first: the oldest evicted, every member joins within seconds; out of
 * descriptors, the accept loop does not spin.  A tree of two with
 * bounded waits (spec.wait_s, the screen's pair channel): a member that stops answering is an
 * error within the bound, not a hang.  Every connection is a same-node one, so over AF_UNIX
 * (unix_sock.c; each socket's family checked, the rogues' and the flood's drops named by
 * their process): the listener's folder (0700, named from the job, under TMPDIR or a private
 * COLLPROF_RUNDIR, removed with the listener), and 127.0.0.1 with one line when the path is
 * too long or no folder can be made; then again over TCP (COLLPROF_CHAN_UNIX=0): the
 * collectives, the rogues, the flood from 127.0.0.1, the side-link rogues.  alarm() turns a
 * hang into a failure.
 */
#include "config.h"
#include "chan/tcp_sock.h"
#include "chan/tcp_tree.h"
#include "chan/tree_shape.h"
#include "collprof/status.h"
#include "tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR  8            /* more than fit in the smallest heap chunk of a one-socket table */
#define BIG (256 * 1024) /* bytes per rank: more than a loopback socket buffer holds at once */

typedef int (*script_t)(int rank); /* 0 when this rank saw what it should */

static int nodes = NR; /* ranks on node r % nodes: NR is a star */
static int fanout;     /* > 0: node i > 0 hangs below node (i - 1) / fanout (tree_shape.h) */
static cp_tree_t *T;   /* this rank's tree */
static const unsigned char KEY[CP_AUTH_KEY_LEN] = "the run's secret, for the tests";
static double join_s;    /* rank 0's cp_tree_join, in seconds */
static int hold_fd = -1; /* >= 0: the members (not rank 0) wait for its EOF before they join */
static int no_root = -1; /* a rank not given rank 0's address: no side link */
static int use_unix = 1; /* the node's listeners over AF_UNIX (else COLLPROF_CHAN_UNIX=0) */

/* The start of a drop's log line for a connection from this node's members' side. */
static const char *local_from(void)
{
    return use_unix ? "control channel: dropped a connection from unix pid "
                    : "control channel: dropped a connection from 127.0.0.1:";
}

/* Connections of T not of the family the node's listener has: every connection of a test
 * tree is a same-node one (all_local). */
static int wrong_family(void)
{
    int bad = 0, want = use_unix ? AF_UNIX : AF_INET;
    for (int k = -1; k < T->nkids; k++) {
        int fd = k < 0 ? T->parent : T->kid_fd[k], dom = -1;
        socklen_t l = sizeof(dom);
        if (fd >= 0 && (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l) != 0 || dom != want)) {
            bad++;
        }
    }
    return bad;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int node_of(int r)
{
    return r % nodes;
}

static cp_tree_spec_t spec_of(int r)
{
    cp_tree_spec_t s = {
        .me = r, .n = NR, .leader = node_of(r), .all_local = 1, .hostname = "localhost"};
    for (int q = 0; q < NR; q++) {
        s.nlocal += node_of(q) == node_of(r);
    }
    int first, nd = node_of(r);
    if (fanout > 0 && nd == r && r > 0) { /* a leader, the lowest rank of its node */
        s.parent_lead = cp_tree_node_parent(nd, fanout);
        s.kid_nodes = cp_tree_node_kids(nd, fanout, nodes, &first);
    }
    s.fanout = fanout;
    s.nnodes = nodes;
    return s;
}

/* Whom rank r connects to: its node's leader, or its parent leader (0: rank 0). */
static int up_of(int r)
{
    cp_tree_spec_t s = spec_of(r);
    return r == 0 ? 0 : s.leader != r ? s.leader : s.parent_lead;
}

/* Every rank's tree, opened before the fork (its listeners then exist for the others). */
static int open_all(cp_tree_t **t, cp_tcp_pub_t *pub, const char *what)
{
    char why[256] = "";
    for (int r = 0; r < NR; r++) {
        cp_tree_spec_t s = spec_of(r);
        t[r] = cp_tree_new(&s, &pub[r], why, sizeof(why));
        if (t[r] == NULL) {
            ok(0, "%s: rank %d's tree: %s", what, r, why);
            return -1;
        }
        cp_tree_key(t[r], KEY, "job");
    }
    return 0;
}

/* Drop the copies of the other ranks' trees. */
static void free_others(cp_tree_t **t, int r)
{
    for (int q = 0; q < NR; q++) {
        if (q != r) {
            cp_tree_free(t[q]);
        }
    }
}

/* Rank r's part: drop the others' copies, join, run the script.  Rank 0, this process, made
 * every listener: closing one removes its AF_UNIX socket (unix_sock.c), so it drops them only
 * when it is done (its own join waits for every member's). */
static int run_rank(cp_tree_t **t, const cp_tcp_pub_t *pub, int r, script_t script)
{
    char why[256];
    if (r != 0) {
        free_others(t, r);
    }
    T = t[r];
    const cp_tcp_pub_t *parent = &pub[up_of(r)];
    if (r != no_root) {
        cp_tree_root(T, &pub[0], 1); /* a leader below a leader: its side link */
    }
    char byte;
    while (r != 0 && hold_fd >= 0 && read(hold_fd, &byte, 1) != 0 && errno == EINTR) {
    }
    double t0 = now_s();
    int joined = cp_tree_join(T, parent, 1, why, sizeof(why)) == 0;
    join_s = now_s() - t0;
    if (!joined) {
        fprintf(stderr, "# rank %d: %s\n", r, why);
    }
    int rc = !joined ? 100 : script(r);
    cp_tree_free(T); /* as cp_boot_finalize does */
    if (r == 0) {
        free_others(t, r);
    }
    return rc;
}

/* Before the ranks fork (NULL: nothing): e.g. rogue connections to their listeners. */
static void (*before_ranks)(const cp_tcp_pub_t *pub);

/* Fork NR ranks over a fresh tree, run script on each; 1 when all returned 0. */
static int world(script_t script, const char *what)
{
    cp_tree_t *t[NR];
    cp_tcp_pub_t pub[NR];
    if (open_all(t, pub, what) != 0) {
        return 0;
    }
    if (before_ranks != NULL) {
        before_ranks(pub);
    }
    pid_t pids[NR] = {0};
    for (int r = 1; r < NR; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(30);
            _exit(run_rank(t, pub, r, script));
        }
    }
    alarm(30);
    int bad = run_rank(t, pub, 0, script);
    for (int r = 1; r < NR; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "# %s: rank %d: %s %d\n", what, r, WIFEXITED(st) ? "exit" : "signal",
                    WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
            bad++;
        }
    }
    alarm(0);
    return bad == 0;
}

/* A gather of BIG bytes per rank: rank 0 gets every block and sends nothing; the others send
 * theirs, receive nothing, and their out stays as it was. */
static int gather_check(int rank)
{
    int bad = 0;
    unsigned char *mine = malloc(BIG), *all = malloc((size_t)NR * BIG);
    if (mine == NULL || all == NULL) {
        free(mine);
        free(all);
        return 1;
    }
    memset(mine, 'A' + rank, BIG);
    memset(all, '.', (size_t)NR * BIG);
    cp_tcp_stats_t s0 = T->stats;
    bad += cp_tree_gather(T, mine, all, BIG) != COLLPROF_OK;
    cp_tcp_stats_t s1 = T->stats;
    for (size_t i = 0; i < (size_t)NR * BIG; i++) {
        if (all[i] != (rank == 0 ? 'A' + (int)(i / BIG) : '.')) {
            bad++;
            break;
        }
    }
    unsigned long long sent = s1.sent_bytes - s0.sent_bytes, got = s1.got_bytes - s0.got_bytes;
    unsigned long long sub = (unsigned long long)T->sub; /* a leader sends its node's blocks */
    bad += rank == 0 ? sent != 0 || got != (unsigned long long)(NR - 1) * BIG
                     : sent != sub * BIG || got != (sub - 1) * BIG;
    free(mine);
    free(all);
    return bad;
}

static int collectives(int rank)
{
    int bad = wrong_family();
    int mine = rank * 10 + 1, all[NR];
    bad += cp_tree_allgather(T, &mine, all, sizeof(mine)) != COLLPROF_OK;
    for (int r = 0; r < NR; r++) {
        bad += all[r] != r * 10 + 1;
    }
    char msg[32] = "";
    if (rank == 2) {
        snprintf(msg, sizeof(msg), "from rank 2");
    }
    bad += cp_tree_bcast(T, msg, sizeof(msg), 2) != COLLPROF_OK || strcmp(msg, "from rank 2") != 0;
    long v = rank == 0 ? 12345 : -1;
    unsigned long long sent0 = T->stats.sent_bytes;
    bad += cp_tree_bcast(T, &v, sizeof(v), 0) != COLLPROF_OK || v != 12345;
    /* a broadcast from rank 0 leaves each member once per child: rank 0's own children (in
     * the deep tree 1 member and 2 leaders, not every node), a leader's, none from a leaf */
    bad += T->stats.sent_bytes - sent0 != (unsigned long long)T->nkids * sizeof(v);
    bad += rank == 0 && fanout > 0 && T->nkids != 1 + fanout;
    bad += cp_tree_barrier(T) != COLLPROF_OK;
    /* in place: rank's part already at out + rank * len */
    unsigned char *big = malloc((size_t)NR * BIG);
    if (big == NULL) {
        return 1;
    }
    memset(big + (size_t)rank * BIG, 'a' + rank, BIG);
    bad += cp_tree_allgather(T, big + (size_t)rank * BIG, big, BIG) != COLLPROF_OK;
    for (size_t i = 0; i < (size_t)NR * BIG; i++) {
        if (big[i] != 'a' + (int)(i / BIG)) {
            bad++;
            break;
        }
    }
    free(big);
    /* all-to-all: rank r sends q the pair (r, q) and gets (q, r) from each q */
    int to[NR][2], from[NR][2];
    for (int q = 0; q < NR; q++) {
        to[q][0] = rank;
        to[q][1] = q;
    }
    memset(from, 0xff, sizeof(from));
    bad += cp_tree_alltoall(T, to, from, sizeof(to[0])) != COLLPROF_OK;
    for (int q = 0; q < NR; q++) {
        bad += from[q][0] != q || from[q][1] != rank;
    }
    /* scatter: rank 0's block q to rank q */
    long blocks[NR], got = -1;
    for (int q = 0; q < NR; q++) {
        blocks[q] = 1000 + q;
    }
    bad += cp_tree_scatter(T, rank == 0 ? blocks : NULL, &got, sizeof(got)) != COLLPROF_OK ||
           got != 1000 + rank;
    /* a broadcast from a leader's member (rank 4: node 1's; node 0's in the deep tree), from
     * a leader (rank 1) and from the last rank (the deep tree's deepest member) */
    static const int roots[] = {4, 1, NR - 1};
    for (int i = 0; i < 3; i++) {
        long w = rank == roots[i] ? 77 + roots[i] : -1;
        bad += cp_tree_bcast(T, &w, sizeof(w), roots[i]) != COLLPROF_OK || w != 77 + roots[i];
    }
    bad += gather_check(rank);
    /* allgather 1, bcast 2, barrier 1, allgather 1, all-to-all 2 (a gather and a scatter),
     * scatter 1, bcast 3, gather 1 */
    bad += T->stats.ops != 12;
    /* side messages: with member 0, from its direct children and the leaders below leaders
     * (their side links: rank 3's in the deep tree) */
    int deep = fanout > 0 && nodes > fanout + 1;
    cp_tree_spec_t sp = spec_of(rank);
    int side = rank == sp.leader && sp.parent_lead > 0;
    bad += T->side_off || cp_tree_side_direct(T, rank) != (up_of(rank) == 0 || side);
    bad += rank == 0 && T->height != (deep ? 3 : nodes == NR || nodes == 1 ? 1 : 2);
    bad += (T->side >= 0) != side || (rank == 0 && T->nside != (deep ? 1 : 0));
    bad += T->stats.links != T->nkids + (rank != 0) + side + (rank == 0 ? T->nside : 0);
    return bad;
}

/* Rank 3 exits after one barrier: the next allgather fails everywhere. */
static int one_exits(int rank)
{
    if (cp_tree_barrier(T) != COLLPROF_OK) {
        return 1;
    }
    if (rank == NR - 1) {
        _exit(0);
    }
    int x = rank, all[NR];
    int rc = cp_tree_allgather(T, &x, all, sizeof(x));
    /* and the channel stays closed: no second wait on a dead tree */
    return rc != COLLPROF_ERR_BOOTSTRAP || T->up || cp_tree_barrier(T) == COLLPROF_OK;
}

/* Side messages on the star: every child to rank 0 and back, a collective after them, then
 * rank NR-1 silent (a timeout) and gone (lost, alone). */
static int side_messages(int rank)
{
    typedef struct {
        int from, what;
        char pad[120];
    } msg_t;
    msg_t m;
    int bad = 0;
    if (rank != 0) {
        memset(&m, 0, sizeof(m));
        m.from = rank;
        m.what = 1;
        bad += !cp_tree_side_direct(T, rank) || cp_tree_side_up(T, &m, sizeof(m)) != COLLPROF_OK;
        bad += cp_tree_side_from_root(T, &m, sizeof(m), 10.0) != 1 || m.what != 100 + rank;
        bad += cp_tree_barrier(T) != COLLPROF_OK;
        if (rank == NR - 1) {
            sleep(1); /* silent while rank 0 waits 0.3 s, then gone */
            _exit(bad);
        }
        return bad;
    }
    unsigned char wait[NR] = {0};
    int got = 0, from = -1;
    for (int q = 1; q < NR; q++) {
        wait[q] = 1;
    }
    for (int k = 0; k < NR - 1; k++) {
        int rc = cp_tree_side_poll(T, wait, 10.0, &from, &m, sizeof(m));
        if (rc == 1 && from > 0 && from < NR && wait[from] && m.from == from && m.what == 1) {
            wait[from] = 0;
            got++;
        }
    }
    bad += got != NR - 1;
    for (int q = 1; q < NR; q++) {
        m.from = 0;
        m.what = 100 + q;
        bad += cp_tree_side_down(T, q, &m, sizeof(m)) != COLLPROF_OK;
    }
    bad += cp_tree_barrier(T) != COLLPROF_OK; /* the collectives' sequence is untouched */
    memset(wait, 0, sizeof(wait));
    wait[NR - 1] = 1;
    double t0 = now_s();
    int rc = cp_tree_side_poll(T, wait, 0.3, &from, &m, sizeof(m));
    bad += rc != 0 || now_s() - t0 > 2.0; /* silent: nothing within 0.3 s */
    rc = cp_tree_side_poll(T, wait, 10.0, &from, &m, sizeof(m));
    bad += rc != 2 || from != NR - 1; /* gone: lost, alone */
    bad += !T->up;
    if (bad) {
        fprintf(stderr, "# side messages: got %d, last rc %d from %d\n", got, rc, from);
    }
    return bad;
}

typedef struct {
    int from, what;
    char pad[56];
} side_msg_t;

/* Side messages in the deep tree (4 nodes of 2, fanout 2: ranks 0 > 1 > 3 > 7): leaders 1 and
 * 2 over their tree connection, leader 3 over its side link; then rank 1, rank 3's parent,
 * exits: rank 0 finds it lost and still reaches rank 3, which still answers. */
static int deep_side(int rank)
{
    side_msg_t m = {.from = rank, .what = 1};
    int bad = 0;
    if (rank != 0) {
        if (rank > 3) {
            /* members: rank 4 on rank 0's node is its child, the others are not */
            return cp_tree_side_direct(T, rank) != (rank == 4) || cp_tree_barrier(T) != COLLPROF_OK;
        }
        bad += !cp_tree_side_direct(T, rank) || cp_tree_side_up(T, &m, sizeof(m)) != COLLPROF_OK;
        bad += cp_tree_side_from_root(T, &m, sizeof(m), 10.0) != 1 || m.what != 100 + rank;
        bad += cp_tree_barrier(T) != COLLPROF_OK;
        if (rank == 1) {
            _exit(bad); /* rank 3's parent goes away */
        }
        if (rank == 3) { /* and rank 3 still hears rank 0, and answers */
            bad += cp_tree_side_from_root(T, &m, sizeof(m), 10.0) != 1 || m.what != 200;
            m.from = 3;
            m.what = 201;
            bad += cp_tree_side_up(T, &m, sizeof(m)) != COLLPROF_OK;
        }
        return bad;
    }
    unsigned char wait[NR] = {0, 1, 1, 1};
    int from = -1, got = 0, rc = 0;
    for (int k = 0; k < 3; k++) {
        rc = cp_tree_side_poll(T, wait, 10.0, &from, &m, sizeof(m));
        if (rc == 1 && from > 0 && from < 4 && wait[from] && m.from == from && m.what == 1) {
            wait[from] = 0;
            got++;
        }
    }
    bad += got != 3 || T->nside != 1 || !cp_tree_side_direct(T, 3) || cp_tree_side_direct(T, 7);
    for (int q = 1; q < 4; q++) {
        m = (side_msg_t){.from = 0, .what = 100 + q};
        bad += cp_tree_side_down(T, q, &m, sizeof(m)) != COLLPROF_OK;
    }
    bad += cp_tree_barrier(T) != COLLPROF_OK;
    memset(wait, 0, sizeof(wait));
    wait[1] = 1;
    rc = cp_tree_side_poll(T, wait, 10.0, &from, &m, sizeof(m));
    bad += rc != 2 || from != 1; /* rank 1 is gone */
    m = (side_msg_t){.from = 0, .what = 200};
    bad += cp_tree_side_down(T, 3, &m, sizeof(m)) != COLLPROF_OK;
    wait[1] = 0;
    wait[3] = 1;
    rc = cp_tree_side_poll(T, wait, 10.0, &from, &m, sizeof(m));
    bad += rc != 1 || from != 3 || m.what != 201;
    if (bad) {
        fprintf(stderr, "# deep side messages: got %d, last rc %d from %d\n", got, rc, from);
    }
    return bad;
}

/* A tree of two with every wait bounded by 1 s: member 1 joins, then stops answering; member
 * 0's allgather fails within the bound instead of waiting. */
static void bounded_pair(void)
{
    cp_tcp_pub_t pub[2];
    cp_tree_t *t[2];
    char why[256] = "";
    for (int i = 0; i < 2; i++) {
        cp_tree_spec_t s = {.me = i,
                            .n = 2,
                            .leader = i,
                            .nlocal = 1,
                            .all_local = 1,
                            .hostname = "localhost",
                            .star = 1,
                            .wait_s = 1.0};
        t[i] = cp_tree_new(&s, &pub[i], why, sizeof(why));
        if (t[i] != NULL) {
            cp_tree_key(t[i], KEY, "pair 0 1");
        }
    }
    pid_t pid = t[0] != NULL && t[1] != NULL ? fork() : -1;
    if (pid == 0) {
        alarm(30);
        cp_tree_free(t[0]);
        int rc = cp_tree_join(t[1], &pub[0], 1, why, sizeof(why));
        sleep(rc == 0 ? 4 : 0); /* joined, then silent */
        _exit(rc == 0 ? 0 : 1);
    }
    alarm(30);
    cp_tree_free(t[1]);
    int joined = pid > 0 && cp_tree_join(t[0], &pub[0], 1, why, sizeof(why)) == 0;
    int x = 1, all[2];
    double t0 = now_s();
    int rc = joined ? cp_tree_allgather(t[0], &x, all, sizeof(x)) : COLLPROF_OK;
    double took = now_s() - t0;
    int st = 0;
    if (pid > 0) {
        waitpid(pid, &st, 0);
    }
    alarm(0);
    cp_tree_free(t[0]);
    ok(joined && rc == COLLPROF_ERR_BOOTSTRAP && took >= 0.9 && took < 2.5 && WIFEXITED(st) &&
           WEXITSTATUS(st) == 0,
       "a pair tree with 1 s waits: a partner that stops answering fails the next collective "
       "in %.2f s (rc %d), not a hang%s%s",
       took, rc, why[0] ? ": " : "", why);
}

/* Rank 1 broadcasts 8 bytes where the others gather 4: caught, not read as data. */
static int out_of_step(int rank)
{
    int x = rank, all[NR];
    long v = 7;
    int rc =
        rank == 1 ? cp_tree_bcast(T, &v, sizeof(v), 1) : cp_tree_allgather(T, &x, all, sizeof(x));
    if (rank == 1) {
        /* its bcast completed (sent); the next collective finds the star closed */
        return rc != COLLPROF_OK || cp_tree_allgather(T, &x, all, sizeof(x)) == COLLPROF_OK;
    }
    return rc != COLLPROF_ERR_BOOTSTRAP;
}

/* What rank 0 listens on: COLLPROF_OOB_IFACE=lo for the other nodes, a missing interface. */
static void listeners(void)
{
    cp_tree_spec_t s = spec_of(0);
    s.all_local = 0;
    cp_tcp_pub_t pub;
    char why[256] = "";
    setenv("COLLPROF_OOB_IFACE", "lo", 1);
    cp_tree_t *t = cp_tree_new(&s, &pub, why, sizeof(why));
    const char *local = use_unix ? "unix:/" : "127.0.0.1:";
    ok(t != NULL && strncmp(pub.lo, local, strlen(local)) == 0 &&
           strncmp(pub.node, "127.0.0.1:", 10) == 0,
       "COLLPROF_OOB_IFACE=lo: rank 0 listens on %s for its node (%s) and on lo's address "
       "for the others (%s)",
       use_unix ? "AF_UNIX" : "loopback", pub.lo, pub.node);
    cp_tree_free(t);
    setenv("COLLPROF_OOB_IFACE", "no-such-if0", 1);
    t = cp_tree_new(&s, &pub, why, sizeof(why));
    ok(t != NULL && pub.lo[0] != '\0' && pub.node[0] == '\0' && strstr(why, "no-such-if0"),
       "COLLPROF_OOB_IFACE of a missing interface: no listener for the other nodes (%s)", why);
    cp_tree_free(t);
    unsetenv("COLLPROF_OOB_IFACE");
}

/* Rank 0's listener for its node with the environment name=value (NULL: unset); its address
 * into lo (sizeof(pub.lo) bytes), "" when it failed; stderr into err. */
static void local_listener(const char *name, const char *value, char *lo, char *err, size_t elen)
{
    cp_tree_spec_t s = spec_of(0);
    cp_tcp_pub_t pub;
    char why[256] = "";
    const char *old = getenv(name);
    char keep[512];
    snprintf(keep, sizeof(keep), "%s", old != NULL ? old : "");
    if (value != NULL) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    if (log != NULL && saved >= 0) {
        dup2(fileno(log), 2);
    }
    cp_tree_t *t = cp_tree_new(&s, &pub, why, sizeof(why));
    snprintf(lo, sizeof(pub.lo), "%s", t != NULL ? pub.lo : "");
    cp_tree_free(t);
    fflush(stderr);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    err[0] = '\0';
    if (log != NULL) {
        rewind(log);
        size_t k = fread(err, 1, elen - 1, log);
        err[k] = '\0';
        err[strcspn(err, "\n")] = '\0';
        fclose(log);
    }
    if (old != NULL) {
        setenv(name, keep, 1);
    } else {
        unsetenv(name);
    }
}

/* A directory tmp/name of the given mode for the sweep: with a socket that listens (sock 1,
 * its fd returned), is bound alone (0: its maker gone), a plain file s (2) or nothing (-1),
 * untouched for age seconds. */
static int stale_fixture(const char *tmp, const char *name, mode_t mode, int sock, long age)
{
    char dir[256];
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
    mkdir(dir, 0700);
    int fd = -1;
    if (sock == 2) {
        FILE *f = fopen(sa.sun_path, "w");
        if (f != NULL) {
            fclose(f);
        }
    } else if (sock >= 0) {
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (fd >= 0 && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
                        (sock == 1 && listen(fd, 4) != 0) || sock == 0)) {
            close(fd);
            fd = -1;
        }
    }
    chmod(dir, mode);
    struct timeval tv[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    utimes(dir, tv);
    return fd;
}

/* A run killed in the join leaves its cp.JOB.XXXXXX directory: the next listener in the same
 * place removes it when it is this user's, 0700, older than CP_UNIX_STALE_S and its socket
 * refuses connections (or it has none), and leaves everything else. */
static void unix_sweep(const char *tmp)
{
    long old = CP_UNIX_STALE_S + 60;
    int live = stale_fixture(tmp, "cp.live.a", 0700, 1, old);
    stale_fixture(tmp, "cp.dead.b", 0700, 0, old);
    stale_fixture(tmp, "cp.empty.c", 0700, -1, old);
    stale_fixture(tmp, "cp.fresh.d", 0700, 0, 5);
    stale_fixture(tmp, "cp.open.e", 0755, 0, old);
    stale_fixture(tmp, "cp.file.f", 0700, 2, old);
    stale_fixture(tmp, "other.g", 0700, 0, old);
    char lo[sizeof(((cp_tcp_pub_t *)0)->lo)], err[512], p[300];
    local_listener("TMPDIR", tmp, lo, err, sizeof(err));
    static const char *const kept[] = {"cp.live.a", "cp.fresh.d", "cp.open.e", "cp.file.f",
                                       "other.g"};
    static const char *const gone[] = {"cp.dead.b", "cp.empty.c"};
    int good = strncmp(lo, "unix:", 5) == 0;
    struct stat st;
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", tmp, kept[i]);
        good = good && stat(p, &st) == 0;
    }
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", tmp, gone[i]);
        good = good && stat(p, &st) != 0;
    }
    ok(good,
       "a new listener sweeps the killed runs' directories: an old 0700 one whose socket refuses "
       "(or with none) removed; one listening, a fresh one, 0755, a plain file 's', another "
       "name kept (%s)",
       lo);
    ok(cp_unix_sweep(tmp) == 0, "a second sweep finds nothing more to remove");
    if (live >= 0) {
        close(live);
    }
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s/s", tmp, kept[i]);
        unlink(p);
        snprintf(p, sizeof(p), "%s/%s", tmp, kept[i]);
        rmdir(p);
    }
}

/* The AF_UNIX listener: in a directory of its own, 0700, named from the job, under TMPDIR or
 * COLLPROF_RUNDIR (when private); both gone when the tree closes; 127.0.0.1 with one log line
 * when the path would be too long or the directory cannot be made; COLLPROF_CHAN_UNIX=0. */
static void unix_listener(void)
{
    char lo[sizeof(((cp_tcp_pub_t *)0)->lo)], err[512], dir[4096], run[64], tmp[64];
    struct stat st;
    cp_unix_job("test/job 1");
    snprintf(tmp, sizeof(tmp), "/tmp/cpt.XXXXXX");
    int made = mkdtemp(tmp) != NULL;
    local_listener("TMPDIR", tmp, lo, err, sizeof(err));
    snprintf(dir, sizeof(dir), "%s", lo + 5);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    int in_tmp = made && strncmp(lo, "unix:", 5) == 0 && strncmp(dir, tmp, strlen(tmp)) == 0 &&
                 strstr(dir, "/cp.test_job_1.") != NULL;
    ok(in_tmp && stat(dir, &st) != 0 && stat(lo + 5, &st) != 0,
       "the node's listener: an AF_UNIX socket in a directory of its own under TMPDIR, named "
       "from the job (%s), both removed when the tree closed",
       lo);
    /* while open: the directory's mode and owner */
    cp_tree_spec_t s0 = spec_of(0);
    cp_tcp_pub_t pub;
    char why[256];
    setenv("TMPDIR", tmp, 1);
    cp_tree_t *t = cp_tree_new(&s0, &pub, why, sizeof(why));
    snprintf(dir, sizeof(dir), "%s", t != NULL ? pub.lo + 5 : "");
    slash = strrchr(dir, '/');
    if (slash != NULL) {
        *slash = '\0';
    }
    struct stat sk;
    ok(t != NULL && stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700 && st.st_uid == geteuid() &&
           stat(pub.lo + 5, &sk) == 0 && S_ISSOCK(sk.st_mode),
       "its directory is mode 0700 and this user's (%o), the socket in it", st.st_mode & 0777);
    cp_tree_free(t);
    snprintf(run, sizeof(run), "%s/run", tmp);
    mkdir(run, 0700);
    local_listener("COLLPROF_RUNDIR", run, lo, err, sizeof(err));
    ok(strncmp(lo + 5, run, strlen(run)) == 0,
       "COLLPROF_RUNDIR, a private directory: the listener's directory goes in it (%s)", lo);
    chmod(run, 0755);
    local_listener("COLLPROF_RUNDIR", run, lo, err, sizeof(err));
    ok(strncmp(lo, "unix:", 5) == 0 && strncmp(lo + 5, run, strlen(run)) != 0,
       "COLLPROF_RUNDIR that others may enter: not used (%s)", lo);
    rmdir(run);
    char deep[160];
    memset(deep, 'd', sizeof(deep));
    memcpy(deep, "/tmp/", 5);
    deep[sizeof(deep) - 1] = '\0';
    local_listener("TMPDIR", deep, lo, err, sizeof(err));
    ok(strncmp(lo, "127.0.0.1:", 10) == 0 && strstr(err, "no AF_UNIX listener") != NULL &&
           strstr(err, "too long") != NULL,
       "a TMPDIR too long for sun_path: 127.0.0.1 instead, said in one line (%.100s...)", err);
    local_listener("TMPDIR", "/nonexistent-cp-dir", lo, err, sizeof(err));
    ok(strncmp(lo, "127.0.0.1:", 10) == 0, "no directory can be made in TMPDIR: 127.0.0.1 (%s)",
       lo);
    local_listener("COLLPROF_CHAN_UNIX", "0", lo, err, sizeof(err));
    ok(strncmp(lo, "127.0.0.1:", 10) == 0, "COLLPROF_CHAN_UNIX=0: 127.0.0.1 (%s)", lo);
    unix_sweep(tmp);
    unsetenv("TMPDIR");
    rmdir(tmp);
}

/* More pieces than one sendmsg takes (IOV_MAX, 1,024 here): a scatter to a leader of a node of
 * more ranks sends one piece per rank. */
static void many_pieces(void)
{
    enum { PIECES = 3000 };
    static struct iovec iov[PIECES];
    static char src[PIECES], dst[PIECES];
    int sv[2];
    int good = socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0;
    for (int i = 0; i < PIECES; i++) {
        src[i] = (char)(i * 7);
        iov[i].iov_base = &src[i];
        iov[i].iov_len = 1;
    }
    good = good && cp_sock_send_all(sv[0], iov, PIECES) == 0 &&
           cp_sock_recv_all(sv[1], dst, PIECES) == 0 && memcmp(src, dst, PIECES) == 0;
    ok(good, "one message of %d pieces goes out whole, in order", PIECES);
    close(sv[0]);
    close(sv[1]);
}

/* ---- rogue connections ------------------------------------------------- */

enum { ROGUES = 4 }; /* one silent, then three impostors */
static int rogue_fd[ROGUES];
static int rogue_target, rogue_claim; /* whose listener (a member), which index they claim */

/* Connect to the target's loopback listener before any member: first, a connection that says
 * nothing; then three that introduce themselves as member rogue_claim with the right magic and
 * size (the old introduction: header and subtree; then what a proof's place holds, garbage). */
static void rogues(const cp_tcp_pub_t *pub)
{
    char why[256];
    for (int i = 0; i < ROGUES; i++) {
        rogue_fd[i] = cp_sock_dial(pub[rogue_target].lo, 5.0, why, sizeof(why));
        if (rogue_fd[i] < 0 || i == 0) {
            continue;
        }
        /* words 0-4 the header, 5-8 a nonce (its first word: the old subtree), 9-16 a proof
         * made without the secret, 17 the subtree */
        uint32_t msg[5 + 4 + 8 + 1] = {
            htonl(0x43504f48u), htonl((uint32_t)rogue_claim), 0, htonl(NR),
            htonl(1),           htonl((uint32_t)rogue_claim)};
        memset(&msg[6], 0xaa, 11 * sizeof(uint32_t));
        msg[17] = htonl((uint32_t)rogue_claim);
        struct iovec iov = {msg, sizeof(msg)};
        cp_sock_send_all(rogue_fd[i], &iov, 1);
    }
}

/* What the listener sent rogue connection fd until it closed it (EOF, or a reset: it closed
 * with the rogue's bytes unread): bytes, or -1 (still open after 2 s, or another error); the
 * first 4 into *first. */
static long rogue_heard(int fd, uint32_t *first)
{
    char buf[4096];
    long total = 0;
    *first = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (fd < 0 || poll(&p, 1, 2000) != 1) {
            return -1;
        }
        ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k == 0 || (k < 0 && errno == ECONNRESET)) {
            return total;
        }
        if (k < 0) {
            return -1;
        }
        if (total == 0 && k >= 4) {
            memcpy(first, buf, 4);
        }
        total += k;
    }
}

/* Lines of file f holding both needles. */
static int lines_with(FILE *f, const char *a, const char *b, char *first, size_t flen)
{
    char line[1024];
    int k = 0;
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strstr(line, a) != NULL && strstr(line, b) != NULL) {
            if (k++ == 0) {
                snprintf(first, flen, "%s", line);
                first[strcspn(first, "\n")] = '\0';
            }
        }
    }
    return k;
}

/* ---- a flood -------------------------------------------------------------- */

enum { FLOODN = 400 }; /* silent connections: more than an address may hold (128) */
static int flood_fd[FLOODN];

/* FLOODN silent connections to rank 0's listener, from 127.0.0.1 as the members', before any
 * member's: more than the kernel's queue holds at once, so that more keep coming. */
static void flood(const cp_tcp_pub_t *pub)
{
    if (use_unix) { /* from this process: one peer, as the members' address is over TCP */
        struct sockaddr_un su = {.sun_family = AF_UNIX};
        snprintf(su.sun_path, sizeof(su.sun_path), "%s", pub[0].lo + 5);
        for (int i = 0; i < FLOODN; i++) {
            flood_fd[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            if (flood_fd[i] >= 0) {
                connect(flood_fd[i], (struct sockaddr *)&su, sizeof(su)); /* EAGAIN when full */
            }
        }
        return;
    }
    struct sockaddr_in sa = {.sin_family = AF_INET};
    const char *colon = strrchr(pub[0].lo, ':');
    sa.sin_port = htons((uint16_t)atoi(colon != NULL ? colon + 1 : "0"));
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    for (int i = 0; i < FLOODN; i++) {
        flood_fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (flood_fd[i] >= 0) {
            connect(flood_fd[i], (struct sockaddr *)&sa, sizeof(sa)); /* EINPROGRESS */
        }
    }
}

/* The collectives on NR ranks (a star) with FLOODN silent connections at rank 0's listener
 * first: the listener evicts the oldest of them, never stops accepting, and every member joins
 * (a member evicted too dials again) within a few seconds, not the 5 s per 64 of a table that
 * waits for its connections' deadlines. */
static void flood_world(void)
{
    before_ranks = flood;
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    if (log == NULL || saved < 0 || dup2(fileno(log), 2) < 0) {
        ok(0, "flood: capturing stderr");
        return;
    }
    double t0 = now_s();
    int good = world(collectives, "flood");
    double took = now_s() - t0;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    before_ranks = NULL;
    for (int i = 0; i < FLOODN; i++) {
        close(flood_fd[i]);
    }
    char first[1024] = "";
    int evicted = lines_with(log, "unproven connections evicted (at most 128 per address", "",
                             first, sizeof(first));
    ok(good && took < 5.0 && evicted == 1,
       "star, %d silent connections at rank 0's listener from %s first: every member joins, the "
       "collectives exact, in %.2f s (< 5 s), the evictions logged (%s)",
       FLOODN, use_unix ? "one process over AF_UNIX" : "the members' address", took, first);
    if (log != NULL) {
        fclose(log);
    }
}

/* Out of descriptors: a tree of two whose member 0 may open two more files than it holds
 * while 20 silent connections wait at its listener, and no member comes.  Its accepts fail
 * with EMFILE: it must not busy-loop on the listener that stays readable (the CPU it spends in
 * its 3 s wait, measured in a child so that the limit stays there).  Exit 0: under 0.5 s. */
static int emfile_child(void)
{
    cp_tree_spec_t s = {.me = 0,
                        .n = 2,
                        .leader = 0,
                        .nlocal = 1,
                        .all_local = 1,
                        .hostname = "localhost",
                        .star = 1,
                        .wait_s = 3.0};
    cp_tcp_pub_t pub;
    char why[256] = "";
    cp_tree_t *t = cp_tree_new(&s, &pub, why, sizeof(why));
    if (t == NULL) {
        return 2;
    }
    cp_tree_key(t, KEY, "job");
    pid_t pid = fork();
    if (pid == 0) { /* 20 silent connections, held 5 s */
        for (int i = 0; i < 20; i++) {
            cp_sock_dial(pub.lo, 2.0, why, sizeof(why));
        }
        sleep(5);
        _exit(0);
    }
    usleep(300000);
    int top = dup(0); /* the lowest free descriptor */
    close(top);
    struct rlimit rl = {(rlim_t)top + 2, (rlim_t)top + 2};
    setrlimit(RLIMIT_NOFILE, &rl);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    int rc = cp_tree_join(t, &pub, 1, why, sizeof(why));
    getrusage(RUSAGE_SELF, &r1);
    double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                 (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                 1e-6 * (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec + r1.ru_stime.tv_usec -
                                 r0.ru_stime.tv_usec);
    fprintf(stderr, "# out of descriptors: join rc %d, %.3f s of CPU in its 3 s wait\n", rc, cpu);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return rc == -1 && cpu < 0.5 ? 0 : 1;
}

static void emfile_no_spin(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        alarm(30);
        _exit(emfile_child());
    }
    int st = -1;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
       "out of descriptors with 20 silent connections waiting: the accept loop does not spin "
       "(under 0.5 s of CPU in a 3 s wait; exit %d)",
       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* The collectives on NR ranks while rogue connections wait at target's listener first. */
static void rogue_world(const char *shape, int target, int claim)
{
    rogue_target = target;
    rogue_claim = claim;
    before_ranks = rogues;
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    if (log == NULL || saved < 0 || dup2(fileno(log), 2) < 0) {
        ok(0, "%s: capturing stderr", shape);
        return;
    }
    int good = world(collectives, "rogues");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    before_ranks = NULL;
    ok(good,
       "%s: with a silent connection and 3 claiming member %d's slot at member %d's listener "
       "first, every member joins and the collectives are exact",
       shape, claim, target);
    ok(join_s < 2.0, "%s: the silent connection does not delay the join (rank 0's: %.3f s; < 2 s)",
       shape, join_s);
    int heard_ok = 1;
    for (int i = 0; i < ROGUES; i++) {
        uint32_t first;
        long h = rogue_heard(rogue_fd[i], &first);
        int good1 = h == 0 || (h > 0 && h <= 4 + CP_AUTH_NONCE_LEN && ntohl(first) == 0x43504f43u);
        heard_ok &= good1;
        if (!good1) {
            printf("# rogue %d heard %ld bytes (first word %08x)\n", i, h, ntohl(first));
        }
        close(rogue_fd[i]);
    }
    ok(heard_ok,
       "%s: each rogue connection got a challenge at most and was closed: no verdict, no data",
       shape);
    char first[1024] = "";
    int all =
        lines_with(log, "control channel: dropped a connection from ", "", first, sizeof(first));
    int wrong = lines_with(log, local_from(), ": wrong proof", first, sizeof(first));
    ok(all == 1 && wrong == 1,
       "%s: 4 dropped connections from %s, one warning with the peer and reason (%d lines; %s)",
       shape, use_unix ? "one process over AF_UNIX" : "127.0.0.1", all, first);
    if (all != 1 || wrong != 1 || !good) {
        char line[1024];
        rewind(log);
        for (int k = 0; k < 20 && fgets(line, sizeof(line), log) != NULL; k++) {
            printf("# stderr: %s", line);
        }
    }
    fclose(log);
}

/* The deep tree without rank 3's side link: side messages off on every rank, each saying why,
 * the collectives exact, the join not held up. */
static int side_missing(int rank)
{
    int bad = !T->side_off || cp_tree_side_direct(T, rank) || T->side >= 0 || T->nside != 0;
    const char *want = rank == 3   ? "this leader has no side link to rank 0: no address of it"
                       : rank == 0 ? "a leader below another leader has no side link to rank 0"
                                   : "rank 0's verdict: a leader below another leader";
    bad += strstr(T->side_why, want) == NULL;
    bad += T->stats.links != T->nkids + (rank != 0);
    side_msg_t m = {.from = rank};
    bad += rank != 0 && cp_tree_side_up(T, &m, sizeof(m)) != COLLPROF_ERR_INVALID;
    bad += rank == 0 && (cp_tree_side_down(T, 3, &m, sizeof(m)) != COLLPROF_ERR_INVALID ||
                         cp_tree_side_down(T, 1, &m, sizeof(m)) != COLLPROF_ERR_INVALID);
    int x = rank, all[NR];
    bad += cp_tree_allgather(T, &x, all, sizeof(x)) != COLLPROF_OK;
    for (int q = 0; q < NR; q++) {
        bad += all[q] != q;
    }
    bad += rank == 0 && join_s > 2.0;
    if (bad) {
        fprintf(stderr, "# rank %d: side_off %d, why '%s', links %d, join %.2f s\n", rank,
                T->side_off, T->side_why, T->stats.links, join_s);
    }
    return bad;
}

static pid_t side_rogue_pid;

/* Before the ranks: a process that opens two side links to rank 0 as member 3's, one proven
 * for the tree's purpose ("job", a child's proof, not a side link's), one with no proof at
 * all; it exits 0 when rank 0 closed both without its own proof.  The members wait for it to
 * end (hold_fd): it answers rank 0's challenges only once rank 0 runs, and had the members
 * all come first, rank 0 would have closed its links as "no proof before every member had
 * come", its proofs unsent (2 runs of 30 at a load of 17 on 2 CPUs), and its wrong side-link
 * proof never judged. */
static void side_rogues(const cp_tcp_pub_t *pub)
{
    char why[256];
    int fd[2], hold[2];
    for (int i = 0; i < 2; i++) {
        fd[i] = cp_sock_dial(pub[0].lo, 5.0, why, sizeof(why));
    }
    if (pipe(hold) != 0) {
        hold[0] = hold[1] = -1;
    }
    side_rogue_pid = fork();
    if (side_rogue_pid != 0) {
        close(fd[0]);
        close(fd[1]);
        close(hold[1]);
        hold_fd = side_rogue_pid > 0 ? hold[0] : -1;
        if (hold_fd < 0) {
            close(hold[0]);
        }
        return;
    }
    close(hold[0]); /* hold[1] closes as it exits: the members go on */
    alarm(30);
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        unsigned char ch[4 + CP_AUTH_NONCE_LEN], msg[5 * 4 + CP_AUTH_NONCE_LEN + CP_AUTH_MAC_LEN];
        uint32_t h[5] = {htonl(0x43504f4cu), htonl(3), 0, htonl(NR), 0};
        memcpy(msg, h, sizeof(h));
        memset(msg + sizeof(h), 0x33, CP_AUTH_NONCE_LEN + CP_AUTH_MAC_LEN);
        if (fd[i] < 0 || cp_sock_recv_within(fd[i], ch, sizeof(ch), 10.0) != 0) {
            _exit(10 + i);
        }
        if (i == 0) {
            cp_auth_mac(KEY, "job", CP_AUTH_CONNECTOR, ch + 4, msg + sizeof(h), 3, NR,
                        msg + sizeof(h) + CP_AUTH_NONCE_LEN);
        }
        struct iovec iov = {msg, sizeof(msg)};
        cp_sock_send_all(fd[i], &iov, 1);
        uint32_t first;
        bad += rogue_heard(fd[i], &first) != 0; /* closed, no proof */
    }
    _exit(bad);
}

/* The deep tree with side_rogues first: both dropped, the tree and rank 3's side link up. */
static void side_rogue_world(void)
{
    nodes = 4;
    fanout = 2;
    before_ranks = side_rogues;
    FILE *log = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    if (log == NULL || saved < 0 || dup2(fileno(log), 2) < 0) {
        ok(0, "side rogues: capturing stderr");
        return;
    }
    int good = world(deep_side, "side rogues");
    if (hold_fd >= 0) {
        close(hold_fd);
        hold_fd = -1;
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    before_ranks = NULL;
    int st = -1;
    if (side_rogue_pid > 0) {
        waitpid(side_rogue_pid, &st, 0);
    }
    char first[1024] = "";
    int wrong =
        lines_with(log, local_from(), ": wrong proof for a side link", first, sizeof(first));
    ok(good && WIFEXITED(st) && WEXITSTATUS(st) == 0 && wrong == 1,
       "deep tree: two side links as rank 3's with a child's proof and none are closed without "
       "a proof (rogue exit %d) and logged (%s); rank 3's own side link and the tree work",
       WIFEXITED(st) ? WEXITSTATUS(st) : -1, first);
    if (!good || wrong != 1) {
        char line[1024];
        rewind(log);
        for (int k = 0; k < 20 && fgets(line, sizeof(line), log) != NULL; k++) {
            printf("# stderr: %s", line);
        }
    }
    fclose(log);
}

/* A member whose parent's address is held by a listener without the secret: it answers the
 * challenge protocol with a forged proof and a verdict, and the member refuses to join. */
static void forged_parent(void)
{
    cp_tcp_pub_t rogue, mine;
    char why[256] = "";
    memset(&rogue, 0, sizeof(rogue));
    int l = cp_sock_listen("127.0.0.1", 4, rogue.lo, sizeof(rogue.lo), why, sizeof(why));
    cp_tree_spec_t s = {.me = 1,
                        .n = 2,
                        .leader = 1,
                        .nlocal = 1,
                        .all_local = 1,
                        .hostname = "localhost",
                        .star = 1};
    cp_tree_t *t = cp_tree_new(&s, &mine, why, sizeof(why));
    pid_t pid = l >= 0 && t != NULL ? fork() : -1;
    if (pid == 0) {
        alarm(30);
        int fd = accept(l, NULL, NULL);
        uint32_t out[5 + 8 + 1] = {htonl(0x43504f43u), 1, 2, 3, 4};
        memset(&out[5], 0x55, 8 * sizeof(uint32_t)); /* a proof without the secret */
        out[13] = htonl(0x43504f56u);                /* and "all came" */
        struct iovec iov = {out, sizeof(out)};
        cp_sock_send_all(fd, &iov, 1);
        char sink[256];
        while (recv(fd, sink, sizeof(sink), 0) > 0) {
        }
        _exit(0);
    }
    int rc = -2;
    if (t != NULL) {
        alarm(30);
        cp_tree_key(t, KEY, "job");
        rc = cp_tree_join(t, &rogue, 1, why, sizeof(why));
        alarm(0);
    }
    ok(pid > 0 && rc == -1 && strstr(why, "did not prove") != NULL,
       "a member does not join a parent that cannot prove the secret (%s)", why);
    cp_tree_free(t);
    if (l >= 0) {
        close(l);
    }
    if (pid > 0) {
        waitpid(pid, NULL, 0);
    }
}

/* A tree without the secret does not connect at all. */
static void no_key(void)
{
    cp_tcp_pub_t pub;
    char why[256] = "";
    cp_tree_spec_t s = spec_of(1);
    cp_tree_t *t = cp_tree_new(&s, &pub, why, sizeof(why));
    int rc = t != NULL ? cp_tree_join(t, &pub, 1, why, sizeof(why)) : 0;
    ok(rc == -1 && strstr(why, "secret") != NULL, "a tree without cp_tree_key fails (%s)", why);
    cp_tree_free(t);
}

/* Over TCP alone (COLLPROF_CHAN_UNIX=0): the node's listener on 127.0.0.1, as before. */
static void over_tcp(void)
{
    setenv("COLLPROF_CHAN_UNIX", "0", 1);
    use_unix = 0;
    for (int sh = 0; sh < 2; sh++) {
        nodes = sh == 0 ? NR : 3;
        fanout = 0;
        ok(world(collectives, "collectives over tcp"),
           "COLLPROF_CHAN_UNIX=0, %s: every connection over TCP, the collectives exact",
           sh == 0 ? "star" : "tree of 3 nodes, cyclic");
    }
    nodes = NR;
    rogue_world("COLLPROF_CHAN_UNIX=0, star", 0, 3);
    flood_world();
    nodes = 4;
    fanout = 2;
    side_rogue_world();
    nodes = NR;
    fanout = 0;
    listeners();
    unsetenv("COLLPROF_CHAN_UNIX");
    use_unix = 1;
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* a write to a closed socket must not kill us (MSG_NOSIGNAL) */
    unsetenv("COLLPROF_CHAN_UNIX");
    for (int sh = 0; sh < 4; sh++) {
        nodes = sh == 0 ? NR : sh == 1 ? 3 : sh == 2 ? 4 : 1;
        fanout = sh == 2 ? 2 : 0;
        const char *shape = sh == 0   ? "star"
                            : sh == 1 ? "tree of 3 nodes, cyclic"
                            : sh == 2 ? "deep tree of 4 nodes, fanout 2 (ranks 0 > 1 > 3 > 7)"
                                      : "one node";
        ok(world(collectives, "collectives"),
           "%s: allgather, bcast from rank 2 and rank 0, barrier, 1 MiB in-place allgather, "
           "all-to-all, scatter, bcast from a member and a leader, 2 MiB gather (rank 0 sends "
           "nothing) on %d ranks",
           shape, NR);
        ok(world(one_exits, "one exits"),
           "%s: a rank that exits makes the next collective fail on every other rank", shape);
        ok(world(out_of_step, "out of step"),
           "%s: a message of another length is refused on every rank that waits for it", shape);
    }
    nodes = NR;
    fanout = 0;
    rogue_world("star", 0, 3);
    nodes = 3;
    rogue_world("tree of 3 nodes", 1, 4); /* node 1: members 1 (its leader), 4 and 7 */
    nodes = NR;
    ok(world(side_messages, "side messages"),
       "star: side messages from every child to rank 0 and back, a barrier after them, a silent "
       "child a timeout, one that exits lost alone");
    nodes = 4;
    fanout = 2;
    ok(world(deep_side, "deep side messages"),
       "deep tree: side messages between rank 0 and leaders 1, 2 (children) and 3 (below 1, "
       "over its side link) both ways; after rank 1 exits, rank 3 still hears rank 0 and answers");
    nodes = NR;
    fanout = 0;
    flood_world();
    emfile_no_spin();
    nodes = 4;
    fanout = 2;
    side_rogue_world();
    no_root = 3;
    ok(world(side_missing, "side link missing"),
       "deep tree, rank 3 without rank 0's address: no side messages on any rank, each says why, "
       "the collectives exact, the join not held up");
    no_root = -1;
    nodes = NR;
    fanout = 0;
    bounded_pair();
    forged_parent();
    no_key();
    listeners();
    unix_listener();
    over_tcp();
    many_pieces();
    return tap_done();
}
