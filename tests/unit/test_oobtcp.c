/*
 * The TCP control tree (src/boot/tcp_tree.c, tcp_coll.c) on forked ranks over loopback, in two
 * shapes: a star (every rank its own node) and a tree by node (ranks placed cyclically on 3
 * "nodes", so that rank 0's order is not the ranks' and a leader holds two members): results
 * of allgather, bcast (from rank 0, from a leader's member and from a leader), all-to-all,
 * scatter, gather (to rank 0 alone: what each rank sends and receives) and barrier, payloads
 * larger than a socket buffer, a rank that exits (every other rank fails instead of waiting),
 * and ranks out of step (caught by the message header, not taken as data).  alarm() turns a
 * hang into a failure.
 */
#include "config.h"
#include "boot/tcp_sock.h"
#include "boot/tcp_tree.h"
#include "collprof/status.h"
#include "tap.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR  8            /* more than fit in the smallest heap chunk of a one-socket table */
#define BIG (256 * 1024) /* bytes per rank: more than a loopback socket buffer holds at once */

typedef int (*script_t)(int rank); /* 0 when this rank saw what it should */

static int nodes = NR; /* ranks on node r % nodes: NR is a star */
static cp_tree_t *T;   /* this rank's tree */

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
    return s;
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
    }
    return 0;
}

/* Rank r's part: drop the others' copies, join, run the script. */
static int run_rank(cp_tree_t **t, const cp_tcp_pub_t *pub, int r, script_t script)
{
    char why[256];
    for (int q = 0; q < NR; q++) {
        if (q != r) {
            cp_tree_free(t[q]);
        }
    }
    T = t[r];
    int leader = node_of(r);
    const cp_tcp_pub_t *parent = r == 0 || leader == r || leader == 0 ? &pub[0] : &pub[leader];
    int rc = cp_tree_join(T, parent, 1, why, sizeof(why)) != 0 ? 100 : script(r);
    cp_tree_free(T); /* as cp_boot_finalize does */
    return rc;
}

/* Fork NR ranks over a fresh tree, run script on each; 1 when all returned 0. */
static int world(script_t script, const char *what)
{
    cp_tree_t *t[NR];
    cp_tcp_pub_t pub[NR];
    if (open_all(t, pub, what) != 0) {
        return 0;
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
    int bad = 0;
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
    bad += cp_tree_bcast(T, &v, sizeof(v), 0) != COLLPROF_OK || v != 12345;
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
    /* a broadcast from a leader's member (rank 4: node 1's) and from a leader (rank 1) */
    for (int root = 4; root > 0; root -= 3) {
        long w = rank == root ? 77 + root : -1;
        bad += cp_tree_bcast(T, &w, sizeof(w), root) != COLLPROF_OK || w != 77 + root;
    }
    bad += gather_check(rank);
    /* allgather 1, bcast 2, barrier 1, allgather 1, all-to-all 2 (a gather and a scatter),
     * scatter 1, bcast 2, gather 1 */
    bad += T->stats.ops != 11;
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
    ok(t != NULL && strncmp(pub.lo, "127.0.0.1:", 10) == 0 &&
           strncmp(pub.node, "127.0.0.1:", 10) == 0,
       "COLLPROF_OOB_IFACE=lo: rank 0 listens on loopback for its node (%s) and on lo's address "
       "for the others (%s)",
       pub.lo, pub.node);
    cp_tree_free(t);
    setenv("COLLPROF_OOB_IFACE", "no-such-if0", 1);
    t = cp_tree_new(&s, &pub, why, sizeof(why));
    ok(t != NULL && pub.lo[0] != '\0' && pub.node[0] == '\0' && strstr(why, "no-such-if0"),
       "COLLPROF_OOB_IFACE of a missing interface: no listener for the other nodes (%s)", why);
    cp_tree_free(t);
    unsetenv("COLLPROF_OOB_IFACE");
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

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* a write to a closed socket must not kill us (MSG_NOSIGNAL) */
    for (nodes = NR; nodes > 0; nodes = nodes == NR ? 3 : 0) {
        const char *shape = nodes == NR ? "star" : "tree of 3 nodes, cyclic";
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
    listeners();
    many_pieces();
    return tap_done();
}
