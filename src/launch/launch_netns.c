#include "config.h"

/*
 * Self-launch (--np): the launcher, its PMIx server and its ranks in a network namespace of
 * their own, holding only a loopback interface, so that no process outside the run can reach
 * any of their listeners: the embedded PMIx server's (libpmix 4.2 reads a new connection's
 * handshake on its progress thread, blocking, so every silent connection holds every rank's
 * start-up for seconds), the control channel's and the backends'.  The ranks of one node talk
 * over loopback and shared memory alone, so they lose nothing.  As root (or with
 * CAP_SYS_ADMIN) a plain unshare(CLONE_NEWNET); otherwise inside a user namespace of our own
 * that maps this user to itself, where the kernel allows unprivileged user namespaces.
 * COLLPROF_NP_NETNS=0 turns it off; when neither works the run goes on uncontained and says
 * so (docs/troubleshooting.md: the limit).  Contained, the launcher sets COLLPROF_NP_CONTAINED=1
 * for its server and ranks: no route leaves the namespace, so they ask slurmctld nothing.
 */

#include "launch/launch_int.h"
#include "base/log.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Write text to a /proc file: 0, or -1. */
static int put(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t len = (ssize_t)strlen(text), k = write(fd, text, (size_t)len);
    close(fd);
    return k == len ? 0 : -1;
}

/* A user namespace that maps this user and group to themselves, with a network namespace:
 * 0; -1 (why) none made; -2 (why) made, but the mapping failed. */
static int user_netns(char *why, size_t wlen)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
        snprintf(why, wlen, "unshare(CLONE_NEWUSER | CLONE_NEWNET): %s", strerror(errno));
        return -1;
    }
    char map[64];
    snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)uid, (unsigned long)uid);
    int rc = put("/proc/self/uid_map", map);
    snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)gid, (unsigned long)gid);
    if (rc != 0 || put("/proc/self/setgroups", "deny") != 0 ||
        put("/proc/self/gid_map", map) != 0) {
        snprintf(why, wlen, "mapping this user into its namespace: %s", strerror(errno));
        return -2;
    }
    return 0;
}

/* The loopback interface up. */
static int lo_up(char *why, size_t wlen)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
    int rc = s < 0 ? -1 : ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    if (rc != 0) {
        snprintf(why, wlen, "bringing up lo: %s", strerror(errno));
    }
    if (s >= 0) {
        close(s);
    }
    return rc;
}

int cp_launch_contain(void)
{
    const char *e = getenv("COLLPROF_NP_NETNS");
    if (e != NULL && strcmp(e, "0") == 0) {
        cp_log(CP_LOG_INFO, "launcher: COLLPROF_NP_NETNS=0: the ranks share this host's network");
        return 1;
    }
    char why[160] = "", first[160] = "";
    int rc = unshare(CLONE_NEWNET);
    if (rc != 0) {
        snprintf(first, sizeof(first), "unshare(CLONE_NEWNET): %s", strerror(errno));
        rc = user_netns(why, sizeof(why));
    }
    if (rc == -2) { /* in a user namespace that maps nobody: nothing works from here on */
        cp_log(CP_LOG_ERROR, "launcher: %s; run with COLLPROF_NP_NETNS=0", why);
        return -1;
    }
    if (rc == 0 && lo_up(why, sizeof(why)) != 0) {
        cp_log(CP_LOG_ERROR, "launcher: in a private network namespace, but %s", why);
        return -1;
    }
    if (rc != 0) {
        cp_log(e != NULL && strcmp(e, "1") == 0 ? CP_LOG_WARN : CP_LOG_INFO,
               "launcher: no private network namespace (%s%s%s): the PMIx server's and the "
               "ranks' listeners are open to this host's processes",
               first, first[0] && why[0] ? "; " : "", why);
        return 1;
    }
    cp_log(CP_LOG_INFO, "launcher: the ranks run in a private network namespace (loopback only)");
    /* for the ranks: slurmctld is out of reach from here (src/slurm asks it nothing) */
    setenv("COLLPROF_NP_CONTAINED", "1", 1);
    return 0;
}
