/*
 * The TCP control channel of the full-world OOB collectives
 * (src/boot/oob_tcp.c) on forked ranks over loopback: results of
 * allgather, bcast (from rank 0 and from another rank), all-to-all, gather (to rank 0
 * alone: what each rank sends and receives) and barrier,
 * payloads larger than a socket buffer, a rank that exits (every other
 * rank fails instead of waiting), and ranks out of step (caught by the
 * message header, not taken as data).  alarm() turns a hang into a failure.
 */
#include "config.h"
#include "boot/oob_tcp.h"
#include "collprof/status.h"
#include "tap.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NR  8            /* more than fit in the smallest heap chunk of a one-socket table */
#define BIG (256 * 1024) /* bytes per rank: more than a loopback socket buffer holds at once */

typedef int (*script_t)(int rank); /* 0 when this rank saw what it should */

/* Fork NR ranks over a fresh star, run script on each; 1 when all returned 0. */
static int world(script_t script, const char *what)
{
    cp_tcp_pub_t pub;
    if (cp_tcp_listen(0, NR, 1, "localhost", &pub) != 0 || strncmp(pub.lo, "127.0.0.1:", 10) != 0) {
        ok(0, "%s: rank 0 listens on loopback (%s)", what, cp_tcp_why());
        return 0;
    }
    pid_t pids[NR] = {0};
    for (int r = 1; r < NR; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            alarm(30);
            cp_tcp_close(); /* the child's copy of rank 0's listener */
            int rc = cp_tcp_connect(r, NR, &pub, 1) != 0 ? 100 : script(r);
            cp_tcp_close(); /* as cp_boot_finalize does */
            _exit(rc);
        }
    }
    alarm(30);
    int bad = cp_tcp_connect(0, NR, &pub, 1) != 0 ? 100 : script(0);
    cp_tcp_close();
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
    cp_tcp_stats_t s0, s1;
    cp_tcp_stats(&s0);
    bad += cp_tcp_gather(mine, all, BIG) != COLLPROF_OK;
    cp_tcp_stats(&s1);
    for (size_t i = 0; i < (size_t)NR * BIG; i++) {
        if (all[i] != (rank == 0 ? 'A' + (int)(i / BIG) : '.')) {
            bad++;
            break;
        }
    }
    unsigned long long sent = s1.sent_bytes - s0.sent_bytes, got = s1.got_bytes - s0.got_bytes;
    bad += rank == 0 ? sent != 0 || got != (unsigned long long)(NR - 1) * BIG
                     : sent != BIG || got != 0;
    free(mine);
    free(all);
    return bad;
}

static int collectives(int rank)
{
    int bad = 0;
    int mine = rank * 10 + 1, all[NR];
    bad += cp_tcp_allgather(&mine, all, sizeof(mine)) != COLLPROF_OK;
    for (int r = 0; r < NR; r++) {
        bad += all[r] != r * 10 + 1;
    }
    char msg[32] = "";
    if (rank == 2) {
        snprintf(msg, sizeof(msg), "from rank 2");
    }
    bad += cp_tcp_bcast(msg, sizeof(msg), 2) != COLLPROF_OK || strcmp(msg, "from rank 2") != 0;
    long v = rank == 0 ? 12345 : -1;
    bad += cp_tcp_bcast(&v, sizeof(v), 0) != COLLPROF_OK || v != 12345;
    bad += cp_tcp_barrier() != COLLPROF_OK;
    /* in place: rank's part already at out + rank * len */
    unsigned char *big = malloc((size_t)NR * BIG);
    if (big == NULL) {
        return 1;
    }
    memset(big + (size_t)rank * BIG, 'a' + rank, BIG);
    bad += cp_tcp_allgather(big + (size_t)rank * BIG, big, BIG) != COLLPROF_OK;
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
    bad += cp_tcp_alltoall(to, from, sizeof(to[0])) != COLLPROF_OK;
    for (int q = 0; q < NR; q++) {
        bad += from[q][0] != q || from[q][1] != rank;
    }
    bad += gather_check(rank);
    cp_tcp_stats_t s;
    cp_tcp_stats(&s);
    bad += s.ops != 7;
    return bad;
}

/* Rank 3 exits after one barrier: the next allgather fails everywhere. */
static int one_exits(int rank)
{
    if (cp_tcp_barrier() != COLLPROF_OK) {
        return 1;
    }
    if (rank == NR - 1) {
        _exit(0);
    }
    int x = rank, all[NR];
    int rc = cp_tcp_allgather(&x, all, sizeof(x));
    /* and the channel stays closed: no second wait on a dead star */
    return rc != COLLPROF_ERR_BOOTSTRAP || cp_tcp_on() || cp_tcp_barrier() == COLLPROF_OK;
}

/* Rank 1 broadcasts 8 bytes where the others gather 4: caught, not read as data. */
static int out_of_step(int rank)
{
    int x = rank, all[NR];
    long v = 7;
    int rc = rank == 1 ? cp_tcp_bcast(&v, sizeof(v), 1) : cp_tcp_allgather(&x, all, sizeof(x));
    if (rank == 1) {
        /* its bcast completed (sent); the next collective finds the star closed */
        return rc != COLLPROF_OK || cp_tcp_allgather(&x, all, sizeof(x)) == COLLPROF_OK;
    }
    return rc != COLLPROF_ERR_BOOTSTRAP;
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* a write to a closed socket must not kill us (MSG_NOSIGNAL) */
    ok(world(collectives, "collectives"),
       "allgather, bcast from rank 2 and rank 0, barrier, 1 MiB in-place allgather, all-to-all, "
       "2 MiB gather (rank 0 sends nothing) on %d ranks",
       NR);
    ok(world(one_exits, "one exits"),
       "a rank that exits makes the next collective fail on every other rank");
    ok(world(out_of_step, "out of step"),
       "a message of another length is refused on every rank that waits for it");
    cp_tcp_pub_t pub;
    setenv("COLLPROF_OOB", "pmix", 1);
    ok(cp_tcp_listen(0, NR, 1, "localhost", &pub) != 0 && pub.lo[0] == '\0' &&
           strstr(cp_tcp_why(), "COLLPROF_OOB=pmix") != NULL,
       "COLLPROF_OOB=pmix: no listener, and the reason (%s)", cp_tcp_why());
    unsetenv("COLLPROF_OOB");
    setenv("COLLPROF_OOB_IFACE", "lo", 1);
    ok(cp_tcp_listen(0, NR, 1, "localhost", &pub) == 0 && pub.lo[0] == '\0' &&
           strncmp(pub.node, "127.0.0.1:", 10) == 0,
       "COLLPROF_OOB_IFACE=lo: the listener for every rank on lo's address (%s)", pub.node);
    cp_tcp_close();
    setenv("COLLPROF_OOB_IFACE", "no-such-if0", 1);
    ok(cp_tcp_listen(0, NR, 1, "localhost", &pub) != 0 && pub.node[0] == '\0',
       "COLLPROF_OOB_IFACE of a missing interface: no listener (%s)", cp_tcp_why());
    return tap_done();
}
