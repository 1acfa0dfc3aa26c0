#include "config.h"

#include "runner/policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define POLICY_PAGE 4096u

const char *cp_sync_name(cp_sync_t s)
{
    return s == CP_SYNC_NONE ? "none" : s == CP_SYNC_BATCH ? "batch" : "barrier";
}

const char *cp_alloc_name(cp_alloc_t a)
{
    return a == CP_ALLOC_MMAP ? "mmap" : a == CP_ALLOC_HUGEPAGES ? "hugepages" : "malloc";
}

int cp_sync_parse(const char *arg, cp_sync_t *sync, int *batch, char *why, size_t len)
{
    if (!strcmp(arg, "barrier") || !strcmp(arg, "none")) {
        *sync = !strcmp(arg, "none") ? CP_SYNC_NONE : CP_SYNC_BARRIER;
        *batch = 1;
        return 0;
    }
    if (!strcmp(arg, "batch")) {
        *sync = CP_SYNC_BATCH;
        *batch = CP_BATCH_DEFAULT;
        return 0;
    }
    if (!strncmp(arg, "batch:", 6)) {
        char *end = NULL;
        errno = 0;
        long n = strtol(arg + 6, &end, 10);
        if (errno == 0 && end != arg + 6 && *end == '\0' && n >= 1 && n <= CP_BATCH_MAX) {
            *sync = CP_SYNC_BATCH;
            *batch = (int)n;
            return 0;
        }
    }
    snprintf(why, len, "--sync: '%s' is not barrier, none, batch or batch:N (N in 1..%d)", arg,
             CP_BATCH_MAX);
    return -1;
}

int cp_check_parse(const char *arg, cp_check_t *mode, int *k, char *why, size_t len)
{
    static const struct {
        const char *name;
        cp_check_t mode;
        int k;
    } words[] = {{"last", CP_CHECK_LAST, 0},
                 {"every", CP_CHECK_EVERY, 0},
                 {"0", CP_CHECK_NONE, 0},
                 {"1", CP_CHECK_DEFAULT, CP_CHECK_DEFAULT_K}};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        if (!strcmp(arg, words[w].name)) {
            *mode = words[w].mode;
            *k = words[w].k;
            return 0;
        }
    }
    if (!strncmp(arg, "sample:", 7) && arg[7] >= '0' && arg[7] <= '9') {
        char *end = NULL;
        errno = 0;
        long n = strtol(arg + 7, &end, 10);
        if (errno == 0 && *end == '\0' && n >= 1 && n <= CP_CHECK_K_MAX) {
            *mode = n == 1 ? CP_CHECK_EVERY : CP_CHECK_SAMPLE;
            *k = n == 1 ? 0 : (int)n;
            return 0;
        }
    }
    snprintf(why, len,
             "--check: '%s' is not last, every, sample:K (K in 1..%d), 1 (the default) or 0 "
             "(no check)",
             arg, CP_CHECK_K_MAX);
    return -1;
}

const char *cp_check_name(cp_check_t mode, int k, char *buf, size_t len)
{
    if (mode == CP_CHECK_SAMPLE) {
        snprintf(buf, len, "sample:%d", k);
    } else {
        snprintf(buf, len, "%s",
                 mode == CP_CHECK_LAST    ? "last"
                 : mode == CP_CHECK_EVERY ? "every"
                                          : "none");
    }
    return buf;
}

cp_check_t cp_check_applied(int check, cp_check_t mode)
{
    return !check ? CP_CHECK_NONE : mode == CP_CHECK_NONE ? CP_CHECK_LAST : mode;
}

int cp_check_iteration(cp_check_t mode, int k, int i, int iters)
{
    if (mode == CP_CHECK_EVERY) {
        return 1;
    }
    return mode == CP_CHECK_SAMPLE && k > 0 && ((i + 1) % k == 0 || i == iters - 1);
}

int cp_check_replay(cp_check_t mode, int k, int i, int iters)
{
    return mode == CP_CHECK_LAST ? i == iters - 1 : cp_check_iteration(mode, k, i, iters);
}

int cp_alloc_parse(const char *arg, cp_alloc_t *alloc, char *why, size_t len)
{
    for (int a = CP_ALLOC_MALLOC; a <= CP_ALLOC_HUGEPAGES; a++) {
        if (!strcmp(arg, cp_alloc_name((cp_alloc_t)a))) {
            *alloc = (cp_alloc_t)a;
            return 0;
        }
    }
    snprintf(why, len, "--alloc: '%s' is not malloc, mmap or hugepages", arg);
    return -1;
}

void cp_policy_describe(cp_sync_t sync, int batch, cp_alloc_t alloc, int rotate, char *buf,
                        size_t len)
{
    char how[96];
    if (sync == CP_SYNC_BATCH) {
        snprintf(how, sizeof(how), "barrier, then a batch of %d operations timed together, / %d",
                 batch, batch);
    } else {
        snprintf(how, sizeof(how), "%s",
                 sync == CP_SYNC_NONE ? "back to back" : "barrier before each iteration");
    }
    snprintf(buf, len, "%s; per-%s max over ranks; host buffers: %s; rotation: %d slot%s", how,
             sync == CP_SYNC_BATCH ? "sample" : "iteration", cp_alloc_name(alloc), rotate,
             rotate == 1 ? "" : "s");
}

double cp_batch_per_op(double t0_us, double t1_us, int ops)
{
    return ops > 0 ? (t1_us - t0_us) / ops : 0;
}

size_t cp_rotate_stride(size_t bytes, int slots)
{
    if (slots <= 1) {
        return bytes;
    }
    return (bytes + POLICY_PAGE - 1) / POLICY_PAGE * POLICY_PAGE + POLICY_PAGE;
}

int cp_rotate_slot(long op, int slots)
{
    return slots <= 1 || op < 0 ? 0 : (int)(op % slots);
}

/* The default huge page size from /proc/meminfo, bytes; 0 when unknown. */
static size_t hugepage_size(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    size_t kib = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "Hugepagesize: %zu kB", &kib) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kib * 1024;
}

static void *map_anon(size_t len, int extra)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* hugepages: explicit huge pages where the pool has them, else transparent ones. */
static void *alloc_huge(size_t bytes, size_t *maplen, char *used, size_t ulen, int *fellback)
{
    size_t hp = hugepage_size();
    void *p = NULL;
#ifdef MAP_HUGETLB
    if (hp > 0) {
        size_t len = (bytes + hp - 1) / hp * hp;
        p = map_anon(len, MAP_HUGETLB);
        if (p != NULL) {
            *maplen = len;
            snprintf(used, ulen, "mmap MAP_HUGETLB, %zu KiB pages", hp / 1024);
            return p;
        }
    }
#endif
    *fellback = 1;
    size_t align = hp > 0 ? hp : 2u << 20, len = (bytes + align - 1) / align * align;
    p = map_anon(len, 0);
    if (p == NULL) {
        return NULL;
    }
    *maplen = len;
#ifdef MADV_HUGEPAGE
    if (madvise(p, len, MADV_HUGEPAGE) == 0) {
        snprintf(used, ulen, "mmap + madvise(MADV_HUGEPAGE), no MAP_HUGETLB pages");
        return p;
    }
#endif
    snprintf(used, ulen, "mmap, no huge pages (MAP_HUGETLB and THP refused)");
    return p;
}

int cp_policy_alloc(cp_alloc_t alloc, size_t bytes, void **ptr, size_t *maplen, char *used,
                    size_t ulen, int *fellback)
{
    size_t len = (bytes ? bytes : 1) + POLICY_PAGE - 1;
    len -= len % POLICY_PAGE;
    void *p = NULL;
    *fellback = 0;
    if (alloc == CP_ALLOC_HUGEPAGES) {
        p = alloc_huge(bytes ? bytes : 1, &len, used, ulen, fellback);
    } else {
        p = map_anon(len, 0);
        snprintf(used, ulen, "mmap anonymous, %ld-byte pages", sysconf(_SC_PAGESIZE));
    }
    if (p == NULL) {
        return -1;
    }
    *ptr = p;
    *maplen = len;
    return 0;
}

void cp_policy_free(void *ptr, size_t maplen)
{
    if (ptr != NULL) {
        munmap(ptr, maplen);
    }
}
