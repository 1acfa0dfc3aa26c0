#include "config.h"

/*
 * The control channel's node-local listeners over AF_UNIX (tcp_sock.h): a stream socket in a
 * directory of its own, mode 0700, made with mkdtemp(3) in the run's private directory
 * (COLLPROF_RUNDIR, which the --np launcher sets to its own 0700 directory, when it is a
 * private directory of this user), else in $TMPDIR or /tmp, named from the job's PMIx
 * namespace: cp.JOB.XXXXXX/s.  Only this user (and root) can reach it, where a listener on
 * 127.0.0.1 takes any local user's connections.  The socket and its directory go when the
 * listener closes (the end of the tree's join), or at exit for one still open; a process
 * killed in the join leaves them behind, for the next listener's sweep (unix_sweep.c).  Connections
 * to it are proven as the TCP ones are (tcp_auth.h).  COLLPROF_CHAN_UNIX=0: no AF_UNIX, the
 * loopback listener as before.
 */

#include "chan/tcp_sock.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define JOB_MAX 24 /* characters of the job's name in a directory's name, at most */
#define NLISTEN 16 /* AF_UNIX listeners open at once in a process, at most */

/* A listener this process made: its socket and directory, removed when it closes. */
typedef struct ulisten {
    int fd;
    pid_t pid; /* its maker (a forked child that closes its copy removes nothing) */
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
} ulisten_t;

static ulisten_t listeners[NLISTEN];
static int nlisteners, at_exit_set;
static char job[JOB_MAX + 1];

int cp_unix_wanted(void)
{
    const char *v = getenv("COLLPROF_CHAN_UNIX");
    return v == NULL || strcmp(v, "0") != 0;
}

int cp_unix_addr(const char *addr)
{
    return strncmp(addr, CP_UNIX_PREFIX, strlen(CP_UNIX_PREFIX)) == 0;
}

void cp_unix_job(const char *name)
{
    size_t k = 0;
    for (const char *p = name; p != NULL && *p != '\0' && k < JOB_MAX; p++) {
        char c = *p;
        int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '.' || c == '-' || c == '_';
        job[k++] = keep ? c : '_';
    }
    job[k] = '\0';
}

static void remove_one(ulisten_t *u)
{
    if (u->pid == getpid()) {
        unlink(u->path);
        rmdir(u->dir);
    }
}

static void remove_all(void)
{
    for (int i = 0; i < nlisteners; i++) {
        remove_one(&listeners[i]);
    }
    nlisteners = 0;
}

/* Where the listeners' directories go: COLLPROF_RUNDIR when it is a directory of this user
 * that nobody else may enter, else $TMPDIR (absolute) or /tmp. */
static const char *base_dir(void)
{
    static int said;
    const char *run = getenv("COLLPROF_RUNDIR"), *tmp = getenv("TMPDIR");
    struct stat st;
    if (run != NULL && run[0] == '/') {
        if (lstat(run, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
            (st.st_mode & 077) == 0) {
            return run;
        }
        if (!said++) {
            cp_log(CP_LOG_INFO,
                   "control channel: COLLPROF_RUNDIR=%s is not a private directory of this "
                   "user: not used",
                   run);
        }
    }
    return tmp != NULL && tmp[0] == '/' ? tmp : "/tmp";
}

/* dir: base/cp.JOB.XXXXXX, the job's name shortened so that dir/s fits sun_path; -1 when even
 * base/cp.XXXXXX/s does not. */
static int dir_name(const char *base, char *dir, size_t size, char *why, size_t wlen)
{
    size_t least = strlen(base) + strlen("/cp.XXXXXX/s"), jl = strlen(job);
    if (least + 1 > size) {
        snprintf(why, wlen, "%s is too long for a socket's path (sun_path: %zu bytes)", base, size);
        return -1;
    }
    if (least + 1 + jl + 1 > size) { /* cp.JOB.XXXXXX: the name and a dot */
        jl = size > least + 2 ? size - least - 2 : 0;
    }
    if (jl > 0) {
        snprintf(dir, size, "%s/cp.%.*s.XXXXXX", base, (int)jl, job);
    } else {
        snprintf(dir, size, "%s/cp.XXXXXX", base);
    }
    return 0;
}

/* The listener's socket in its new directory u->dir; the fd, or -1 (why). */
static int bind_in(ulisten_t *u, int backlog, char *why, size_t wlen)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(u->path, sizeof(u->path), "%s/s", u->dir);
    memcpy(sa.sun_path, u->path, strlen(u->path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, backlog) != 0) {
        snprintf(why, wlen, "listening on %s: %s", u->path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        unlink(u->path);
        rmdir(u->dir);
        return -1;
    }
    return fd;
}

int cp_unix_listen(int backlog, char *pub, size_t size, char *why, size_t wlen)
{
    if (nlisteners == NLISTEN) {
        snprintf(why, wlen, "%d AF_UNIX listeners open already", NLISTEN);
        return -1;
    }
    ulisten_t *u = &listeners[nlisteners];
    const char *base = base_dir();
    cp_unix_sweep(base);
    if (dir_name(base, u->dir, sizeof(u->dir), why, wlen) != 0) {
        return -1;
    }
    if (mkdtemp(u->dir) == NULL) { /* mode 0700 */
        snprintf(why, wlen, "no private directory in %s: %s", base, strerror(errno));
        return -1;
    }
    int fd = bind_in(u, backlog, why, wlen);
    if (fd < 0) {
        return -1;
    }
    if ((size_t)snprintf(pub, size, "%s%s", CP_UNIX_PREFIX, u->path) >= size) {
        snprintf(why, wlen, "the socket's address is too long");
        close(fd);
        remove_one(u);
        return -1;
    }
    u->fd = fd;
    u->pid = getpid();
    nlisteners++;
    if (!at_exit_set) { /* for a listener still open when the process exits */
        at_exit_set = atexit(remove_all) == 0;
    }
    return fd;
}

void cp_unix_close(int *fd)
{
    if (*fd < 0) {
        return;
    }
    for (int i = 0; i < nlisteners; i++) {
        if (listeners[i].fd == *fd) {
            remove_one(&listeners[i]);
            listeners[i] = listeners[--nlisteners];
            break;
        }
    }
    close(*fd);
    *fd = -1;
}

int cp_unix_dial(const char *addr, double s, int *err, char *why, size_t wlen)
{
    const char *path = addr + strlen(CP_UNIX_PREFIX);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path) || path[0] != '/') {
        snprintf(why, wlen, "bad address %s", addr);
        *err = 0;
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    /* a full accept queue: a blocking connect waits for room up to SO_SNDTIMEO (EAGAIN) */
    struct timeval tv = {(time_t)s, (suseconds_t)((s - (double)(time_t)s) * 1e6)}, none = {0, 0};
    int rc = -1;
    *err = fd < 0 ? errno : 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        do {
            rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
        } while (rc != 0 && errno == EINTR);
        *err = rc != 0 ? errno : 0;
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
    }
    if (rc != 0) {
        snprintf(why, wlen, "connecting to %s: %s", addr, strerror(*err));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    return fd;
}
