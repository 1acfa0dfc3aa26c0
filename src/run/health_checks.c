#include "config.h"

#include "run/health_int.h"

#include "base/fault.h"
#include "base/util.h"
#include "plugin/loader.h"

#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define COPY_BYTES ((size_t)64 << 20) /* beyond the last-level cache of today's CPUs */
#define COPY_ITERS 5

int cp_hc_fail(cp_hc_t *hc, int status, const char *check, const char *fmt, ...)
{
    if (hc->status == CP_HC_OK) {
        char raw[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        hc->status = status;
        snprintf(hc->check, sizeof(hc->check), "%s", check);
        cp_text_sanitize(raw, hc->what, sizeof(hc->what));
    }
    return status;
}

void cp_hc_note(cp_hc_t *hc, const char *fmt, ...)
{
    size_t used = strlen(hc->notes);
    if (used > 0 && used + 2 < sizeof(hc->notes)) {
        strcpy(hc->notes + used, "; ");
        used += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hc->notes + used, sizeof(hc->notes) - used, fmt, ap);
    va_end(ap);
}

/* The first element where dst differs from src, or -1. */
static long first_diff(const unsigned char *src, const unsigned char *dst, size_t n)
{
    if (memcmp(src, dst, n) == 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (src[i] != dst[i]) {
            return (long)i;
        }
    }
    return -1;
}

/* This thread's CPU time in seconds: a copy stalled on memory counts, time the scheduler gave
 * other processes on a busy node does not (wall time there made healthy nodes fail). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cp_hc_copy(cp_hc_t *hc)
{
    unsigned char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
    if (src == NULL || dst == NULL) {
        cp_hc_fail(hc, CP_HC_FAILED, "memcpy", "no memory for two buffers of %zu MiB",
                   COPY_BYTES >> 20);
        goto out;
    }
    for (size_t i = 0; i < COPY_BYTES; i++) {
        src[i] = (unsigned char)(i * 131u + 7u);
    }
    memset(dst, 0, COPY_BYTES); /* touched: the timed copies find their pages */
    long extra = cp_fault_slowcopy_us();
    double best = 0;
    for (int it = 0; it < COPY_ITERS && cp_now_s() < hc->deadline; it++) {
        double t = cpu_s();
        memcpy(dst, src, COPY_BYTES);
        if (extra > 0) {
            cp_fault_spin_cpu(extra); /* in the clock timed here: unseen under load otherwise */
        }
        t = cpu_s() - t;
        best = t > 0 && (best == 0 || t < best) ? t : best;
    }
    long bad = first_diff(src, dst, COPY_BYTES);
    double gbs = best > 0 ? (double)COPY_BYTES / best * 1e-9 : 0;
    if (bad >= 0) {
        cp_hc_fail(hc, CP_HC_FAILED, "memcpy", "byte %ld of %zu MiB copied wrong", bad,
                   COPY_BYTES >> 20);
    } else if (best == 0) {
        cp_hc_fail(hc, CP_HC_FAILED, "memcpy", "no copy finished within the budget");
    } else if (gbs < hc->opt->hc_min_copy) {
        cp_hc_fail(hc, CP_HC_FAILED, "memcpy", "%.2f GB/s, below the floor of %g GB/s", gbs,
                   hc->opt->hc_min_copy);
    } else {
        hc->nchecks++;
    }
out:
    free(src);
    free(dst);
}

/* Is name in the comma-separated list? */
static int listed(const char *list, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = list; p != NULL && *p != '\0';
         p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        if (strncmp(p, name, nl) == 0 && (p[nl] == ',' || p[nl] == '\0')) {
            return 1;
        }
    }
    return 0;
}

/* Append name to the comma-separated list in buf unless it is there: 0, or -1 when full. */
static int add_name(char *buf, size_t len, const char *name)
{
    size_t used = strlen(buf);
    if (listed(buf, name)) {
        return 0;
    }
    int w = snprintf(buf + used, len - used, "%s%s", used ? "," : "", name);
    return w > 0 && (size_t)w < len - used ? 0 : -1;
}

int cp_hc_nic_list(cp_hc_t *hc, char *buf, size_t len)
{
    const char *want = hc->opt->hc_nics;
    struct ifaddrs *ifs = NULL, *i;
    buf[0] = '\0';
    if (strcmp(want, "none") == 0) {
        return 0;
    }
    if (getifaddrs(&ifs) != 0) {
        return cp_hc_fail(hc, CP_HC_INCONCLUSIVE, "nics", "the interfaces could not be listed"), -1;
    }
    char seen[1024] = ""; /* up, with an IPv4 address */
    for (i = ifs; i != NULL; i = i->ifa_next) {
        if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET && (i->ifa_flags & IFF_UP) &&
            strchr(i->ifa_name, ',') == NULL) {
            add_name(seen, sizeof(seen), i->ifa_name);
            if (!(i->ifa_flags & IFF_LOOPBACK) && want[0] == '\0') {
                add_name(buf, len, i->ifa_name);
            }
        }
    }
    freeifaddrs(ifs);
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", want);
    for (char *save = NULL, *n = strtok_r(copy, ",", &save); n != NULL;
         n = strtok_r(NULL, ",", &save)) {
        if (!listed(seen, n)) {
            return cp_hc_fail(hc, CP_HC_INCONCLUSIVE, "nics",
                              "--healthcheck-nics: %s is not an interface up with an IPv4 "
                              "address here",
                              n),
                   -1;
        }
        add_name(buf, len, n);
    }
    return 0;
}

int cp_hc_backend_here(const char *name)
{
    char host[1024], device[1024];
    char only[1][64];
    snprintf(only[0], sizeof(only[0]), "%s", name);
    cp_hc_backends(only, 1, host, device, sizeof(host));
    return host[0] != '\0' || device[0] != '\0';
}

void cp_hc_backends(char (*only)[64], int nonly, char *host, char *device, size_t len)
{
    cp_plugin_t *p = NULL;
    int n = 0;
    host[0] = device[0] = '\0';
    if (cp_plugins_load(only, nonly, &p, &n) != 0) {
        return;
    }
    for (int k = 0; k < n; k++) {
        if (!p[k].usable) {
            continue;
        }
        int on_host = (p[k].caps.memtypes & COLLPROF_BIT(COLLPROF_MEM_HOST)) != 0;
        add_name(on_host ? host : device, len, p[k].name);
    }
    cp_plugins_unload(p, n);
}

int cp_hc_gpus(void)
{
    const char *dir = getenv("COLLPROF_HEALTHCHECK_GPU_DIR"); /* tests: a fake driver tree */
    DIR *d = opendir(dir != NULL && dir[0] == '/' ? dir : "/proc/driver/nvidia/gpus");
    struct dirent *e;
    int n = 0;
    while (d != NULL && (e = readdir(d)) != NULL) {
        n += e->d_name[0] != '.';
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}
