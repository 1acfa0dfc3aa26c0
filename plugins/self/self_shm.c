#include "config.h"

/*
 * The self backend's shared memory segments (self_internal.h): run()'s, made at init
 * (self_backend.c), and the lane of posted collectives, made at the first one (self_async.c).
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "self_internal.h"

int self_shm_create(size_t len, char name[SELF_NAME_LEN], char *why, size_t whylen)
{
    int fd = -1, rc;
    for (int i = 0; i < 16 && fd < 0; i++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(name, SELF_NAME_LEN, "/collprof-self-%ld-%ld-%d", (long)getpid(), (long)ts.tv_nsec,
                 i);
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 && errno != EEXIST) {
            break;
        }
    }
    if (fd < 0) {
        rc = errno;
        snprintf(why, whylen, "shm_open: %s", strerror(rc));
        name[0] = '\0';
        return rc;
    }
    /* every page now: a /dev/shm too small fails here, not with a SIGBUS at a later copy */
    rc = ftruncate(fd, (off_t)len) != 0 ? errno : posix_fallocate(fd, 0, (off_t)len);
    close(fd);
    if (rc != 0) {
        snprintf(why, whylen, "cannot size the %zu-byte shared memory segment %s: %s", len, name,
                 strerror(rc));
        shm_unlink(name);
        name[0] = '\0';
        return rc;
    }
    return 0;
}

void *self_shm_map(const char *name, size_t len, char *why, size_t whylen)
{
    int fd = shm_open(name, O_RDWR, 0600);
    void *p;
    if (fd < 0) {
        snprintf(why, whylen, "shm_open %s: %s", name, strerror(errno));
        return NULL;
    }
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(why, whylen, "mmap of %zu bytes: %s", len, strerror(errno));
        return NULL;
    }
    return p;
}

size_t self_header_bytes(int n)
{
    size_t h = sizeof(self_bar_t) + sizeof(self_lane_ctl_t) + (size_t)n * sizeof(size_t);
    return (h + SELF_PAGE - 1) / SELF_PAGE * SELF_PAGE;
}
