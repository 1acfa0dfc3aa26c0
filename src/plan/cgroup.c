#include "config.h"

/*
 * The memory limit of this process's control group (plan.h): under Slurm's
 * ConstrainRAMSpace, a container or systemd's MemoryMax, the memory the ranks may
 * take is the group's, not the machine's.  cgroup v2 (memory.max) and v1
 * (memory.limit_in_bytes, the hierarchy with the memory controller), read from
 * this process's own group up to the hierarchy's root: the smallest limit on
 * the way holds.  Paths from /proc/self/cgroup and /proc/self/mountinfo.
 */

#include "plan/plan.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(PATH_MAX == 4096, "memory_mount reads at most 4095 bytes a path");

/* The first line of file path into buf (no line feed): 0, or -1 when it cannot be read. */
static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return -1;
    }
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    buf[ok ? strcspn(buf, "\n") : 0] = '\0';
    return ok ? 0 : -1;
}

/* 1 when word is one of the comma-separated words of list. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p != NULL && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, word, n) == 0 && (p[n] == ',' || p[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

/* The mount point and root of the memory hierarchy (v1: a cgroup mount with the memory
 * controller; v2: the cgroup2 mount) from /proc/self/mountinfo, each into PATH_MAX bytes:
 * 0, or -1 when none. */
static int memory_mount(int v2, char *mnt, char *root)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    int found = -1;
    while (f != NULL && found != 0 && fgets(line, sizeof(line), f) != NULL) {
        const char *dash = strstr(line, " - ");
        char type[32], src[256], opts[1024];
        if (dash == NULL || sscanf(dash + 3, "%31s %255s %1023s", type, src, opts) != 3 ||
            sscanf(line, "%*s %*s %*s %4095s %4095s", root, mnt) != 2) {
            continue;
        }
        if (v2 ? strcmp(type, "cgroup2") == 0
               : strcmp(type, "cgroup") == 0 && has_word(opts, "memory")) {
            found = 0;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* This process's group in the memory hierarchy, from /proc/self/cgroup: 0, or -1. */
static int memory_group(int v2, char *path, size_t len)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[4096];
    int found = -1;
    while (f != NULL && found != 0 && fgets(line, sizeof(line), f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL) {
            continue;
        }
        *c2 = '\0';
        if (v2 ? strcmp(line, "0:") == 0 && c1 + 1 == c2 : has_word(c1 + 1, "memory")) {
            c2[1 + strcspn(c2 + 1, "\n")] = '\0';
            found = snprintf(path, len, "%s", c2 + 1) < (int)len ? 0 : -1;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return found;
}

/* The smallest limit from the group up to the hierarchy's root (UINT64_MAX: none). */
static uint64_t walk_up(int v2, const char *mnt, const char *root, const char *group)
{
    size_t rl = strcmp(root, "/") == 0 ? 0 : strlen(root);
    const char *rel = strncmp(group, root, rl) == 0 ? group + rl : group;
    char dir[PATH_MAX], file[PATH_MAX + 32], v[64];
    uint64_t lim = UINT64_MAX;
    if (snprintf(dir, sizeof(dir), "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel) >=
        (int)sizeof(dir)) {
        return lim;
    }
    for (;;) {
        snprintf(file, sizeof(file), "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
        char *end;
        unsigned long long x;
        if (read_line(file, v, sizeof(v)) == 0 && (x = strtoull(v, &end, 10)) > 0 && *end == '\0' &&
            x < (UINT64_C(1) << 62) && x < lim) { /* v1's "none" is near 2^63, v2's "max" */
            lim = x;
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= strlen(mnt) || slash == NULL) {
            return lim;
        }
        *slash = '\0';
    }
}

uint64_t cp_cgroup_mem_limit(void)
{
    char mnt[PATH_MAX], root[PATH_MAX], group[PATH_MAX];
    uint64_t lim = UINT64_MAX;
    for (int v2 = 0; v2 < 2; v2++) {
        if (memory_mount(v2, mnt, root) == 0 && memory_group(v2, group, sizeof(group)) == 0) {
            uint64_t l = walk_up(v2, mnt, root, group);
            lim = l < lim ? l : lim;
        }
    }
    return lim == UINT64_MAX ? 0 : lim;
}
