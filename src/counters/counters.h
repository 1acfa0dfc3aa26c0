/*
 * Hardware and host counters read around a cell's timed loop (collprof --counters,
 * docs/metrics.md): InfiniBand and EFA port counters from sysfs, Ethernet interface
 * statistics, the host's /proc/stat and CPU frequency, and GPU figures through NVML loaded at
 * run time.  A snapshot holds raw values; the delta of two snapshots holds, per counter
 * present in both, the increase (counters, wrap handled) or the value after (gauges).  A
 * counter the system does not offer is absent from the snapshot, never a zero.
 *
 * Every path is read under a root: "/" unless COLLPROF_SYSFS_ROOT names another directory,
 * under which sys/class/..., sys/devices/..., proc/net/dev and proc/stat are read (the tests'
 * fake trees).
 * Not thread-safe; no collective call: the node leader reads its own node.
 */
#ifndef COLLPROF_COUNTERS_H
#define COLLPROF_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* The sources, as bits of a mask (--counters LIST names them). */
enum {
    CP_CNT_NET = 1u << 0,  /**< /proc/net/dev, else /sys/class/net/IFACE/statistics */
    CP_CNT_IB = 1u << 1,   /**< /sys/class/infiniband/DEV/ports/P/{counters,hw_counters} */
    CP_CNT_HOST = 1u << 2, /**< /proc/stat, cpufreq */
    CP_CNT_GPU = 1u << 3,  /**< NVML (libnvidia-ml.so.1, dlopen'ed) */
    CP_CNT_ALL = 0xf
};

typedef enum { CP_CNT_COUNTER, CP_CNT_GAUGE } cp_cnt_kind_t;

/** One counter's reading. */
typedef struct cp_cnt {
    char name[64];  /**< e.g. mlx5_0/1/port_xmit_data, eth0/rx_bytes, cpu_steal, gpu0/power */
    char unit[16];  /**< of the value after scaling: B, packets, events, jiffies, MHz, W, C */
    char source[8]; /**< net, ib, efa, host or gpu */
    int kind;       /**< cp_cnt_kind_t */
    int bits;       /**< counters: 32 or 64, the width a decrease is taken to wrap at */
    double scale;   /**< value = raw x scale (port_xmit_data: 4, its unit is 4-byte words) */
    uint64_t raw;   /**< as read */
} cp_cnt_t;

typedef struct cp_cnt_snap {
    cp_cnt_t *v;
    int n, cap;
} cp_cnt_snap_t;

/** One counter over an interval. */
typedef struct cp_cnt_delta {
    char name[64], unit[16], source[8];
    int kind;
    double delta; /**< counter: the increase, scaled; gauge: the value after */
} cp_cnt_delta_t;

/** Parse --counters: auto (every source), none (0) or a comma-separated list of net, ib,
 *  host, gpu.  0, or -1 with a message in err. */
int cp_counters_parse(const char *s, unsigned *mask, char *err, size_t errlen);
/** The list of a mask, e.g. "net,ib,host,gpu", or "none". */
const char *cp_counters_name(unsigned mask, char *buf, size_t len);

/** Read the sources of mask into s (emptied first).  The number of counters read; -1 out of
 *  memory. */
int cp_counters_read(unsigned mask, cp_cnt_snap_t *s);
void cp_counters_free(cp_cnt_snap_t *s);

/** The counters of before that after holds too, by name and source, into out (room for
 *  before->n + 2 entries: two derived host figures may follow, cpu_steal_pct and
 *  cpu_busy_pct).  The number written. */
int cp_counters_delta(const cp_cnt_snap_t *before, const cp_cnt_snap_t *after, cp_cnt_delta_t *out);

/** The increase of a counter from a to b, wrapping at bits (32 or 64): b < a is taken as one
 *  wrap when a fits in bits, else (a counter reset) the increase is b. */
uint64_t cp_counters_wrap(uint64_t a, uint64_t b, int bits);

/* ---- the readers (counters_sys.c, counters_nvml.c) and their helpers (counters_util.c) ---- */

/** The root the paths are read under: COLLPROF_SYSFS_ROOT, or "" (the real /). */
const char *cp_counters_root(void);
/** Append one reading; -1 out of memory. */
int cp_counters_add(cp_cnt_snap_t *s, const char *source, const char *name, const char *unit,
                    int kind, int bits, double scale, uint64_t raw);
int cp_counters_read_net(cp_cnt_snap_t *s);
int cp_counters_read_ib(cp_cnt_snap_t *s);
int cp_counters_read_host(cp_cnt_snap_t *s);
/** NVML: COLLPROF_NVML_LIB names the library (default libnvidia-ml.so.1); nothing when it or
 *  a GPU is absent.  Loaded once, never unloaded. */
int cp_counters_read_gpu(cp_cnt_snap_t *s);

#endif /* COLLPROF_COUNTERS_H */
