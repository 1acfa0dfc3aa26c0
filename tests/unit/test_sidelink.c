/*
 * Side links that scale (src/chan/tcp_side.c): many leaders below other leaders dial rank 0
 * at once into a small kernel accept queue, and every side link still comes up.  The test
 * runs in a network namespace of its own (unshare(CLONE_NEWNET): root, or skipped), where it
 * sets net.core.somaxconn to 4 (rank 0's accept queue: 4 connections) and
 * net.ipv4.tcp_syn_retries to 1 (a dropped SYN fails a connect after about 3 s, where the
 * default's retransmits take 15 s and more), and starts rank 0's join 2 s late, as a rank 0
 * busy elsewhere would: the 45 deep leaders find the queue full, their SYNs are dropped (the
 * connect fails) or answered with a SYN cookie whose last ACK the kernel drops (the connect
 * succeeds, but rank 0 never hears of it and its challenge never comes).  A single dial per
 * side link then left side messages off for the whole job (21 or 22 of 45 came, in 15 s);
 * dials that are staggered and retried within the side link's deadline bring every one up.  The
 * tree: 48 members, each its own node, fanout 2 (nodes 3..47 hang below other leaders: 45 side
 * links), every listener on the namespace's loopback: over TCP (COLLPROF_CHAN_UNIX=0), the
 * transport whose accept queue and SYN cookies this is about (the members of one node reach
 * their parent over AF_UNIX otherwise, and every member here is on this host).
 */
#include "config.h"
#include "chan/tcp_tree.h"
#include "chan/tree_shape.h"
#include "collprof/status.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR          48  /* members, one a node */
#define FANOUT      2   /* nodes 3.. hang below other leaders */
#define SMALL_QUEUE 4   /* the namespace's accept queue cap */
#define ROOT_LATE   2.0 /* seconds rank 0 starts its join after the others */

static const unsigned char KEY[CP_AUTH_KEY_LEN] = "the run's secret, for the tests";

typedef struct shared {
    int joined[NR], side_off[NR], nside, side_up[NR];
    double join_s[NR];
} shared_t;
static shared_t *S;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static long read_long(const char *path)
{
    char buf[32] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
    if (fd >= 0) {
        close(fd);
    }
    return n > 0 ? strtol(buf, NULL, 10) : -1;
}

/* A network namespace of this process's own, its loopback up, the kernel's caps small (only
 * where those caps are the namespace's own: Linux 4.15 and later, lest the host's change). */
static int own_netns(char *why, size_t len)
{
    struct utsname u;
    memset(&u, 0, sizeof(u));
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2 ||
        major * 1000 + minor < 4015) {
        snprintf(why, len, "kernel %s: its TCP caps may not be per network namespace", u.release);
        return -1;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        snprintf(why, len, "no network namespace of its own (unshare: %s)", strerror(errno));
        return -1;
    }
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int up = fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 &&
             (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr) == 0);
    if (fd >= 0) {
        close(fd);
    }
    char cap[16];
    snprintf(cap, sizeof(cap), "%d", SMALL_QUEUE);
    if (!up || write_file("/proc/sys/net/core/somaxconn", cap) != 0 ||
        write_file("/proc/sys/net/ipv4/tcp_syn_retries", "1") != 0 ||
        read_long("/proc/sys/net/core/somaxconn") != SMALL_QUEUE) {
        snprintf(why, len, "cannot set the namespace's loopback and caps: %s", strerror(errno));
        return -1;
    }
    return 0;
}

static cp_tree_spec_t spec_of(int r)
{
    cp_tree_spec_t s = {.me = r,
                        .n = NR,
                        .leader = r,
                        .nlocal = 1,
                        .all_local = 1,
                        .hostname = "localhost",
                        .fanout = FANOUT,
                        .nnodes = NR,
                        .node = r};
    int first;
    if (r > 0) {
        s.parent_lead = cp_tree_node_parent(r, FANOUT);
        s.kid_nodes = cp_tree_node_kids(r, FANOUT, NR, &first);
    }
    return s;
}

/* The trees of the ranks but r.  Rank 0 (the process that made every tree) frees them only
 * after its join: closing a listener in the process that made it removes its AF_UNIX socket
 * (unix_sock.c), which the other members, forked, still listen on. */
static void free_others(cp_tree_t **t, int r)
{
    for (int q = 0; q < NR; q++) {
        if (q != r) {
            cp_tree_free(t[q]);
        }
    }
}

static int run_rank(cp_tree_t **t, const cp_tcp_pub_t *pub, int r)
{
    char why[256] = "";
    if (r != 0) {
        free_others(t, r);
    }
    cp_tree_t *me = t[r];
    cp_tree_root(me, &pub[0], 1);
    if (r == 0) {
        struct timespec late = {(time_t)ROOT_LATE, 0};
        nanosleep(&late, NULL);
    }
    double t0 = now_s();
    int rc = cp_tree_join(me, &pub[r == 0 ? 0 : spec_of(r).parent_lead], 1, why, sizeof(why));
    S->join_s[r] = now_s() - t0;
    S->joined[r] = rc == 0;
    S->side_off[r] = me->side_off;
    S->side_up[r] = me->side >= 0;
    if (r == 0) {
        S->nside = me->nside;
    }
    if (rc != 0 || me->side_off) {
        fprintf(stderr, "# rank %d: %s%s\n", r, why, me->side_why);
    }
    if (rc == 0 && cp_tree_barrier(me) != COLLPROF_OK) {
        S->joined[r] = 0;
    }
    if (r == 0) {
        free_others(t, r);
    }
    cp_tree_free(me);
    return 0;
}

int main(void)
{
    char why[256];
    if (own_netns(why, sizeof(why)) != 0) {
        printf("1..0 # SKIP %s\n", why);
        return 0;
    }
    setenv("COLLPROF_CHAN_UNIX", "0", 1);
    S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED) {
        return 99;
    }
    memset(S, 0, sizeof(*S));
    cp_tree_t *t[NR];
    cp_tcp_pub_t pub[NR];
    for (int r = 0; r < NR; r++) {
        cp_tree_spec_t s = spec_of(r);
        if ((t[r] = cp_tree_new(&s, &pub[r], why, sizeof(why))) == NULL) {
            ok(0, "rank %d's tree: %s", r, why);
            return tap_done();
        }
        cp_tree_key(t[r], KEY, "job");
    }
    pid_t pids[NR] = {0};
    for (int r = 1; r < NR; r++) {
        if ((pids[r] = fork()) == 0) {
            alarm(60);
            _exit(run_rank(t, pub, r));
        }
    }
    alarm(60);
    run_rank(t, pub, 0);
    int exited = 0;
    for (int r = 1; r < NR; r++) {
        int st = 0;
        waitpid(pids[r], &st, 0);
        exited += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    alarm(0);
    int joined = 0, off = 0, up = 0, deep = cp_tree_node_deep(NR, FANOUT);
    double slowest = 0;
    for (int r = 0; r < NR; r++) {
        joined += S->joined[r];
        off += S->side_off[r];
        up += S->side_up[r];
        slowest = S->join_s[r] > slowest ? S->join_s[r] : slowest;
    }
    ok(exited == NR - 1 && joined == NR,
       "%d members, somaxconn %d, rank 0 %.0f s late: all joined "
       "(%d of %d), the slowest join %.1f s",
       NR, SMALL_QUEUE, ROOT_LATE, joined, NR, slowest);
    ok(up == deep && S->nside == deep,
       "every deep leader's side link came up: %d dialled, %d at rank 0, of %d", up, S->nside,
       deep);
    ok(off == 0, "side messages on, on every member (%d with them off)", off);
    return tap_done();
}
