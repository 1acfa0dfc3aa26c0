#include "config.h"

/*
 * The AF_UNIX listeners' directories that a killed run left behind (unix_sock.c): a process
 * that dies in the tree's join (SIGKILL, a node's OOM killer) cannot remove its cp.JOB.XXXXXX
 * directory and socket.  Each new listener sweeps its base directory first: an entry named
 * cp.* that is a directory of this user, mode 0700, untouched for CP_UNIX_STALE_S seconds (a
 * listener lives for the join alone, seconds), whose socket nobody listens on (a connect is
 * refused, or there is no socket), is removed with its socket.  Anything else there (another
 * user's, another mode, a file other than the socket, a listener that answers) is left alone.
 */

#include "chan/tcp_sock.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_MAX 256 /* cp.* entries looked at in one sweep, at most */

/* No listener on the socket at path: a non-blocking connect refused (or no such file). */
static int nobody_listens(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        return 0;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return 0;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    close(fd);
    return rc != 0 && (e == ECONNREFUSED || e == ENOENT);
}

/* base/name is a stale listener's directory: removed (1), or left (0). */
static int sweep_one(const char *base, const char *name, time_t now)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)], sock[sizeof(dir) + 2];
    struct stat st, sk;
    if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", base, name) >= sizeof(dir) ||
        lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 0777) != 0700 || now - st.st_mtime < CP_UNIX_STALE_S) {
        return 0;
    }
    snprintf(sock, sizeof(sock), "%s/s", dir);
    if (lstat(sock, &sk) == 0) {
        if (!S_ISSOCK(sk.st_mode) || sk.st_uid != geteuid() || !nobody_listens(sock)) {
            return 0;
        }
        unlink(sock);
    }
    return rmdir(dir) == 0; /* not empty (a file of someone else's): left */
}

int cp_unix_sweep(const char *base)
{
    DIR *d = opendir(base);
    if (d == NULL) {
        return 0;
    }
    time_t now = time(NULL);
    int seen = 0, removed = 0;
    struct dirent *e;
    while (seen < SWEEP_MAX && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "cp.", 3) != 0) {
            continue;
        }
        seen++;
        removed += sweep_one(base, e->d_name, now);
    }
    closedir(d);
    if (removed > 0) {
        cp_log(CP_LOG_INFO,
               "control channel: removed %d stale socket director%s of killed runs in %s", removed,
               removed == 1 ? "y" : "ies", base);
    }
    return removed;
}
