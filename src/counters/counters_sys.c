/*
 * The sysfs and procfs readers of counters.h: InfiniBand/EFA ports, network interfaces
 * (/proc/net/dev, else /sys/class/net/IFACE/statistics), the host.  Each file holds one decimal
 * number; a file that cannot be read, or holds something else, is left out (absent), never read as
 * 0.
 */
#include "config.h"

#include "counters/counters.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number in file path (root prepended by the caller); 0, or -1 when it is not there.
 * open and read rather than stdio: a reading of a big node opens hundreds of these files. */
static int read_u64(const char *path, uint64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    char buf[64];
    ssize_t got = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (got <= 0) {
        return -1;
    }
    buf[got] = '\0';
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 0);
    if (end == buf || errno != 0 || (*end != '\n' && *end != '\0' && *end != ' ')) {
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

/* The entries of directory path but "." and "..", sorted (the snapshots' order the same). */
static int list_dir(const char *path, struct dirent ***out)
{
    return scandir(path, out, NULL, alphasort);
}

static int visible(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

static void free_list(struct dirent **l, int n)
{
    for (int k = 0; k < n; k++) {
        free(l[k]);
    }
    free(l);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The unit, scale and wrap width of an InfiniBand or EFA counter, from its name.  The
 * PortCounters of the InfiniBand specification are 32 bits wide (the kernel shows the 64-bit
 * PortCountersExtended where the port has them, which a 32-bit wrap test leaves alone once
 * past 2^32); port_xmit_data and port_rcv_data count 4-byte words (octets / 4). */
static void ib_kind(const char *name, const char **unit, double *scale, int *bits)
{
    static const char *const pma32[] = {"port_xmit_data",
                                        "port_rcv_data",
                                        "port_xmit_packets",
                                        "port_rcv_packets",
                                        "port_xmit_wait",
                                        "symbol_error",
                                        "link_error_recovery",
                                        "link_downed",
                                        "port_rcv_errors",
                                        "port_xmit_discards",
                                        "port_rcv_remote_physical_errors",
                                        "port_rcv_switch_relay_errors",
                                        "port_xmit_constraint_errors",
                                        "port_rcv_constraint_errors",
                                        "local_link_integrity_errors",
                                        "excessive_buffer_overrun_errors",
                                        "VL15_dropped"};
    *bits = 64;
    *scale = 1;
    for (size_t k = 0; k < sizeof(pma32) / sizeof(pma32[0]); k++) {
        *bits = strcmp(name, pma32[k]) == 0 ? 32 : *bits;
    }
    if (strcmp(name, "port_xmit_data") == 0 || strcmp(name, "port_rcv_data") == 0) {
        *unit = "B";
        *scale = 4;
    } else if (ends_with(name, "_bytes")) {
        *unit = "B";
    } else if (ends_with(name, "_pkts") || ends_with(name, "_packets")) {
        *unit = "packets";
    } else if (ends_with(name, "_wrs")) {
        *unit = "requests";
    } else if (strcmp(name, "port_xmit_wait") == 0) {
        *unit = "ticks";
    } else {
        *unit = "events";
    }
}

/* Every counter file of dir (DEV/ports/P/counters or hw_counters) as DEV/P/NAME. */
static int ib_dir(cp_cnt_snap_t *s, const char *dir, const char *dev, const char *port,
                  const char *source)
{
    struct dirent **l;
    int n = list_dir(dir, &l), rc = 0;
    for (int k = 0; k < n; k++) {
        char path[1024], name[64];
        uint64_t v;
        snprintf(path, sizeof(path), "%s/%s", dir, l[k]->d_name);
        if (!visible(l[k]) || strcmp(l[k]->d_name, "lifespan") == 0 || read_u64(path, &v) != 0) {
            continue; /* lifespan: the hw_counters' refresh period, not a counter */
        }
        const char *unit;
        double scale;
        int bits;
        ib_kind(l[k]->d_name, &unit, &scale, &bits);
        snprintf(name, sizeof(name), "%.24s/%.4s/%.32s", dev, port, l[k]->d_name);
        rc |= cp_counters_add(s, source, name, unit, CP_CNT_COUNTER, bits, scale, v);
    }
    if (n > 0) {
        free_list(l, n);
    }
    return rc;
}

/* EFA devices (PCI vendor 0x1d0f, Amazon) report as "efa", the others as "ib". */
static const char *ib_source(const char *devdir)
{
    char path[1024];
    uint64_t vendor;
    snprintf(path, sizeof(path), "%s/device/vendor", devdir);
    return read_u64(path, &vendor) == 0 && vendor == 0x1d0f ? "efa" : "ib";
}

int cp_counters_read_ib(cp_cnt_snap_t *s)
{
    char cls[512];
    snprintf(cls, sizeof(cls), "%s/sys/class/infiniband", cp_counters_root());
    struct dirent **devs;
    int nd = list_dir(cls, &devs), rc = 0;
    for (int d = 0; d < nd; d++) {
        char devdir[768], ports[800];
        snprintf(devdir, sizeof(devdir), "%s/%s", cls, devs[d]->d_name);
        snprintf(ports, sizeof(ports), "%s/ports", devdir);
        struct dirent **pl;
        int np = visible(devs[d]) ? list_dir(ports, &pl) : -1;
        const char *source = np > 0 ? ib_source(devdir) : "ib";
        for (int p = 0; p < np; p++) {
            char dir[1024];
            if (!visible(pl[p])) {
                continue;
            }
            snprintf(dir, sizeof(dir), "%s/%s/counters", ports, pl[p]->d_name);
            rc |= ib_dir(s, dir, devs[d]->d_name, pl[p]->d_name, source);
            snprintf(dir, sizeof(dir), "%s/%s/hw_counters", ports, pl[p]->d_name);
            rc |= ib_dir(s, dir, devs[d]->d_name, pl[p]->d_name, source);
        }
        if (np > 0) {
            free_list(pl, np);
        }
    }
    if (nd > 0) {
        free_list(devs, nd);
    }
    return rc;
}

static const struct {
    const char *file, *unit;
    int col; /* its column in /proc/net/dev */
} net_stats[] = {{"rx_bytes", "B", 0},         {"tx_bytes", "B", 8},
                 {"rx_packets", "packets", 1}, {"tx_packets", "packets", 9},
                 {"rx_errors", "events", 2},   {"tx_errors", "events", 10},
                 {"rx_dropped", "events", 3},  {"tx_dropped", "events", 11}};
#define NNET ((int)(sizeof(net_stats) / sizeof(net_stats[0])))

/* /proc/net/dev: every interface of this process's network namespace in one file (the same
 * figures as sysfs's statistics, dev_get_stats(), at one open instead of eight per
 * interface).  1 when it was there, 0 when not (sysfs then). */
static int net_procfs(cp_cnt_snap_t *s, int *rc)
{
    char path[512], line[1024];
    snprintf(path, sizeof(path), "%s/proc/net/dev", cp_counters_root());
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *colon = strchr(line, ':'), *p = line, *end;
        uint64_t v[16];
        int k = 0;
        if (colon == NULL) {
            continue; /* the two header lines */
        }
        *colon = '\0';
        while (*p == ' ') {
            p++;
        }
        for (char *q = colon + 1; k < 16; k++, q = end) {
            v[k] = strtoull(q, &end, 10);
            if (end == q) {
                break;
            }
        }
        for (int j = 0; k == 16 && j < NNET; j++) {
            char name[64];
            snprintf(name, sizeof(name), "%.40s/%s", p, net_stats[j].file);
            *rc |= cp_counters_add(s, "net", name, net_stats[j].unit, CP_CNT_COUNTER, 64, 1,
                                   v[net_stats[j].col]);
        }
    }
    fclose(f);
    return 1;
}

int cp_counters_read_net(cp_cnt_snap_t *s)
{
    char cls[512];
    int rc = 0;
    if (net_procfs(s, &rc)) {
        return rc;
    }
    snprintf(cls, sizeof(cls), "%s/sys/class/net", cp_counters_root());
    struct dirent **l;
    int n = list_dir(cls, &l);
    for (int k = 0; k < n; k++) {
        for (int j = 0; visible(l[k]) && j < NNET; j++) {
            char path[1024], name[64];
            uint64_t v;
            snprintf(path, sizeof(path), "%s/%s/statistics/%s", cls, l[k]->d_name,
                     net_stats[j].file);
            if (read_u64(path, &v) != 0) {
                continue;
            }
            snprintf(name, sizeof(name), "%.40s/%s", l[k]->d_name, net_stats[j].file);
            rc |= cp_counters_add(s, "net", name, net_stats[j].unit, CP_CNT_COUNTER, 64, 1, v);
        }
    }
    if (n > 0) {
        free_list(l, n);
    }
    return rc;
}

/* /proc/stat: the CPU lines' jiffies (all CPUs), context switches, interrupts. */
static int proc_stat(cp_cnt_snap_t *s)
{
    char path[512], line[4096];
    snprintf(path, sizeof(path), "%s/proc/stat", cp_counters_root());
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    int rc = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        uint64_t j[8] = {0}, v;
        if (strncmp(line, "cpu ", 4) == 0 &&
            sscanf(line + 4,
                   "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                   " %" SCNu64 " %" SCNu64,
                   &j[0], &j[1], &j[2], &j[3], &j[4], &j[5], &j[6], &j[7]) == 8) {
            uint64_t total = 0;
            for (int k = 0; k < 8; k++) {
                total += j[k];
            }
            rc |= cp_counters_add(s, "host", "cpu_total", "jiffies", CP_CNT_COUNTER, 64, 1, total);
            rc |= cp_counters_add(s, "host", "cpu_idle", "jiffies", CP_CNT_COUNTER, 64, 1,
                                  j[3] + j[4]);
            rc |= cp_counters_add(s, "host", "cpu_steal", "jiffies", CP_CNT_COUNTER, 64, 1, j[7]);
        } else if (sscanf(line, "ctxt %" SCNu64, &v) == 1) {
            rc |=
                cp_counters_add(s, "host", "context_switches", "events", CP_CNT_COUNTER, 64, 1, v);
        } else if (sscanf(line, "intr %" SCNu64, &v) == 1) {
            rc |= cp_counters_add(s, "host", "interrupts", "events", CP_CNT_COUNTER, 64, 1, v);
        }
    }
    fclose(f);
    return rc;
}

/* cpufreq's current frequencies (kHz): their mean and minimum, in MHz. */
static int cpu_freq(cp_cnt_snap_t *s)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/sys/devices/system/cpu", cp_counters_root());
    struct dirent **l;
    int n = list_dir(dir, &l), seen = 0;
    uint64_t sum = 0, min = UINT64_MAX;
    for (int k = 0; k < n; k++) {
        char path[1024];
        uint64_t khz;
        const char *d = l[k]->d_name;
        if (strncmp(d, "cpu", 3) != 0 || d[3] < '0' || d[3] > '9') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s/cpufreq/scaling_cur_freq", dir, d);
        if (read_u64(path, &khz) == 0) {
            sum += khz;
            min = khz < min ? khz : min;
            seen++;
        }
    }
    if (n > 0) {
        free_list(l, n);
    }
    if (seen == 0) {
        return 0;
    }
    int rc = cp_counters_add(s, "host", "cpu_freq_mean", "MHz", CP_CNT_GAUGE, 0, 1e-3,
                             sum / (uint64_t)seen);
    return rc | cp_counters_add(s, "host", "cpu_freq_min", "MHz", CP_CNT_GAUGE, 0, 1e-3, min);
}

/*
 * The node's memory traffic where the kernel exposes a counter: resctrl's memory bandwidth
 * monitoring (Intel RDT MBM, AMD QoS; /sys/fs/resctrl mounted), the bytes each L3 domain's
 * tasks of the default group moved to and from memory (mbm_total_bytes), and those of its own
 * NUMA node (mbm_local_bytes), summed over the domains (mon_L3_NN): mem_bytes and
 * mem_local_bytes.  A domain that does not read (the file says "Unavailable") leaves the sum
 * absent: a partial sum would read as a drop.  Tasks moved into another resctrl group are not
 * in the default group's counts.
 */
static int mem_bw(cp_cnt_snap_t *s)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/sys/fs/resctrl/mon_data", cp_counters_root());
    struct dirent **l;
    int n = list_dir(dir, &l), seen = 0, bad[2] = {0, 0};
    uint64_t sum[2] = {0, 0};
    static const char *const file[2] = {"mbm_total_bytes", "mbm_local_bytes"};
    for (int k = 0; k < n; k++) {
        if (strncmp(l[k]->d_name, "mon_L3_", 7) != 0) {
            continue;
        }
        seen++;
        for (int f = 0; f < 2; f++) {
            char path[1024];
            uint64_t v;
            snprintf(path, sizeof(path), "%s/%s/%s", dir, l[k]->d_name, file[f]);
            if (read_u64(path, &v) == 0) {
                sum[f] += v;
            } else {
                bad[f] = 1;
            }
        }
    }
    if (n > 0) {
        free_list(l, n);
    }
    int rc = 0;
    static const char *const name[2] = {"mem_bytes", "mem_local_bytes"};
    for (int f = 0; seen > 0 && f < 2; f++) {
        if (!bad[f]) {
            rc |= cp_counters_add(s, "host", name[f], "B", CP_CNT_COUNTER, 64, 1, sum[f]);
        }
    }
    return rc;
}

int cp_counters_read_host(cp_cnt_snap_t *s)
{
    return proc_stat(s) | cpu_freq(s) | mem_bw(s);
}
