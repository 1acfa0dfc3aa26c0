/* The counters reader (src/counters) on fake sysfs/procfs trees built here under a temp
 * directory (COLLPROF_SYSFS_ROOT): an InfiniBand port with a 32-bit wrap, an EFA port, an
 * Ethernet interface, /proc/stat and cpufreq; absent counters absent; NVML through the stub
 * library tests/stubs/nvml_stub.c (COLLPROF_NVML_LIB). */
#include "config.h"

#include "counters/counters.h"
#include "format/cflags.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char root[256];

/* mkdir -p of root/path's directory, then path holds text. */
static void put(const char *path, const char *text)
{
    char full[1024];
    snprintf(full, sizeof(full), "%s/%s", root, path);
    for (char *p = full + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(full, 0755);
            *p = '/';
        }
    }
    FILE *f = fopen(full, "w");
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static const char *IB = "sys/class/infiniband/mlx5_0/ports/1/";
static const char *EFA = "sys/class/infiniband/rdmap0s31/ports/1/hw_counters/";

static void put2(const char *dir, const char *file, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s%s", dir, file);
    put(p, text);
}

static void tree_before(void)
{
    put2(IB, "counters/port_xmit_data", "4294967290\n"); /* 6 words short of 2^32 */
    put2(IB, "counters/port_rcv_data", "1000\n");
    put2(IB, "counters/port_xmit_packets", "50\n");
    put2(IB, "counters/port_xmit_wait", "7\n");
    put2(IB, "counters/symbol_error", "0\n");
    put2(IB, "counters/link_downed", "1\n");
    put2(IB, "hw_counters/out_of_buffer", "0\n");
    put2(IB, "hw_counters/lifespan", "10\n");
    put("sys/class/infiniband/rdmap0s31/device/vendor", "0x1d0f\n");
    static const char *efa[] = {"tx_bytes",
                                "rx_bytes",
                                "tx_pkts",
                                "rx_pkts",
                                "rx_drops",
                                "send_bytes",
                                "recv_bytes",
                                "rdma_read_bytes",
                                "rdma_write_bytes",
                                "rdma_read_resp_bytes",
                                "retrans_bytes",
                                "retrans_pkts",
                                "retrans_timeout_events",
                                "impaired_remote_conn_events",
                                "unresponsive_remote_events"};
    for (size_t k = 0; k < sizeof(efa) / sizeof(efa[0]); k++) {
        put2(EFA, efa[k], "100\n");
    }
    put2(EFA, "lifespan", "12\n");
    put("sys/class/net/eth0/statistics/rx_bytes", "10000\n");
    put("sys/class/net/eth0/statistics/tx_bytes", "20000\n");
    put("sys/class/net/eth0/statistics/rx_errors", "0\n");
    put("sys/class/net/lo/operstate", "unknown\n"); /* no statistics: absent */
    put("proc/stat", "cpu  100 0 50 800 10 0 0 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"
                     "intr 555 1 2 3\nctxt 1000\nbtime 1\nprocs_running 2\n");
    put("sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "2000000\n");
    put("sys/devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "3000000\n");
    put("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "1000000\n");
    put("sys/fs/resctrl/mon_data/mon_L3_00/mbm_local_bytes", "600000\n");
    put("sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "2000000\n");
    put("sys/fs/resctrl/mon_data/mon_L3_01/mbm_local_bytes", "Unavailable\n");
}

static void tree_after(void)
{
    put2(IB, "counters/port_xmit_data", "10\n"); /* wrapped: 16 words = 64 B */
    put2(IB, "counters/port_rcv_data", "1250\n");
    put2(IB, "counters/symbol_error", "2\n");
    put2(EFA, "tx_bytes", "1100\n");
    put2(EFA, "retrans_pkts", "103\n");
    put("sys/class/net/eth0/statistics/rx_bytes", "10500\n");
    /* 100 jiffies more, 5 of them stolen, 60 idle */
    put("proc/stat", "cpu  130 0 55 860 10 0 0 45 0 0\nintr 600\nctxt 1250\n");
    put("sys/fs/resctrl/mon_data/mon_L3_00/mbm_total_bytes", "5000000\n"); /* +4 MB */
    put("sys/fs/resctrl/mon_data/mon_L3_01/mbm_total_bytes", "3000000\n"); /* +1 MB */
    char p[512];
    snprintf(p, sizeof(p), "%s/%scounters/port_xmit_packets", root, IB);
    unlink(p); /* gone in between: absent from the delta */
}

static const cp_cnt_delta_t *find(const cp_cnt_delta_t *d, int n, const char *src, const char *name)
{
    for (int k = 0; k < n; k++) {
        if (strcmp(d[k].source, src) == 0 && strcmp(d[k].name, name) == 0) {
            return &d[k];
        }
    }
    return NULL;
}

static int has(const cp_cnt_snap_t *s, const char *name)
{
    for (int k = 0; k < s->n; k++) {
        if (strcmp(s->v[k].name, name) == 0) {
            return 1;
        }
    }
    return 0;
}

static void test_parse(void)
{
    unsigned m = 99;
    char err[256], buf[64];
    ok(cp_counters_parse("auto", &m, err, sizeof(err)) == 0 && m == CP_CNT_ALL, "auto: all");
    ok(cp_counters_parse("none", &m, err, sizeof(err)) == 0 && m == 0, "none: 0");
    ok(cp_counters_parse("net,host", &m, err, sizeof(err)) == 0 && m == (CP_CNT_NET | CP_CNT_HOST),
       "net,host");
    ok(strcmp(cp_counters_name(m, buf, sizeof(buf)), "net,host") == 0, "its name: %s", buf);
    ok(cp_counters_parse("ib,disk", &m, err, sizeof(err)) == -1 && strstr(err, "disk"),
       "an unknown source refused: %s", err);
    ok(cp_counters_parse("", &m, err, sizeof(err)) == -1, "an empty list refused");
}

static void test_wrap(void)
{
    ok(cp_counters_wrap(0xfffffff0ull, 0x10, 32) == 0x20, "32-bit wrap");
    ok(cp_counters_wrap(5, 9, 32) == 4, "no wrap");
    ok(cp_counters_wrap(0x100000005ull, 3, 32) == 3, "a 64-bit value that falls: reset, not wrap");
    ok(cp_counters_wrap(UINT64_MAX - 1, 1, 64) == 3, "64-bit wrap");
}

static void test_tree(void)
{
    cp_cnt_snap_t a = {0}, b = {0};
    tree_before();
    int n = cp_counters_read(CP_CNT_NET | CP_CNT_IB | CP_CNT_HOST, &a);
    ok(n > 20, "fake tree read: %d counters", n);
    ok(!has(&a, "mlx5_0/1/port_rcv_errors"), "a counter the tree lacks is absent");
    ok(!has(&a, "lo/rx_bytes") && !has(&a, "eth0/tx_errors"), "absent net statistics absent");
    ok(!has(&a, "mlx5_0/1/lifespan") && !has(&a, "rdmap0s31/1/lifespan"), "lifespan not a counter");
    tree_after();
    cp_counters_read(CP_CNT_NET | CP_CNT_IB | CP_CNT_HOST, &b);
    cp_cnt_delta_t *d = calloc((size_t)a.n + 2, sizeof(*d));
    int nd = cp_counters_delta(&a, &b, d);
    const cp_cnt_delta_t *x = find(d, nd, "ib", "mlx5_0/1/port_xmit_data");
    ok(x && x->delta == 64 && strcmp(x->unit, "B") == 0,
       "port_xmit_data across a 32-bit wrap: "
       "16 words = 64 B (%g %s)",
       x ? x->delta : -1, x ? x->unit : "");
    x = find(d, nd, "ib", "mlx5_0/1/port_rcv_data");
    ok(x && x->delta == 1000, "port_rcv_data: 250 words = 1000 B");
    x = find(d, nd, "ib", "mlx5_0/1/symbol_error");
    ok(x && x->delta == 2 && strcmp(x->unit, "events") == 0, "symbol_error +2 events");
    x = find(d, nd, "ib", "mlx5_0/1/port_xmit_wait");
    ok(x && x->delta == 0 && strcmp(x->unit, "ticks") == 0, "port_xmit_wait: ticks");
    ok(find(d, nd, "ib", "mlx5_0/1/out_of_buffer") != NULL, "mlx5 hw_counters read");
    ok(find(d, nd, "ib", "mlx5_0/1/port_xmit_packets") == NULL, "a counter gone: absent");
    x = find(d, nd, "efa", "rdmap0s31/1/tx_bytes");
    ok(x && x->delta == 1000, "EFA tx_bytes +1000 B, source efa");
    x = find(d, nd, "efa", "rdmap0s31/1/retrans_pkts");
    ok(x && x->delta == 3 && strcmp(x->unit, "packets") == 0, "EFA retrans_pkts +3 packets");
    static const char *efa[] = {"rx_bytes",
                                "rdma_read_bytes",
                                "rdma_write_bytes",
                                "rdma_read_resp_bytes",
                                "send_bytes",
                                "recv_bytes",
                                "retrans_bytes",
                                "retrans_timeout_events",
                                "rx_drops",
                                "impaired_remote_conn_events",
                                "unresponsive_remote_events"};
    int all = 1;
    for (size_t k = 0; k < sizeof(efa) / sizeof(efa[0]); k++) {
        char name[64];
        snprintf(name, sizeof(name), "rdmap0s31/1/%s", efa[k]);
        all &= find(d, nd, "efa", name) != NULL;
    }
    ok(all, "every EFA hw_counter of the tree read");
    x = find(d, nd, "net", "eth0/rx_bytes");
    ok(x && x->delta == 500, "eth0 rx_bytes +500");
    x = find(d, nd, "host", "cpu_steal_pct");
    ok(x && fabs(x->delta - 5.0) < 1e-9, "CPU steal 5 %% (%g)", x ? x->delta : -1);
    x = find(d, nd, "host", "cpu_busy_pct");
    ok(x && fabs(x->delta - 40.0) < 1e-9, "CPU busy 40 %% (%g)", x ? x->delta : -1);
    x = find(d, nd, "host", "context_switches");
    ok(x && x->delta == 250, "context switches +250");
    x = find(d, nd, "host", "cpu_freq_mean");
    ok(x && fabs(x->delta - 2500) < 1e-6 && x->kind == CP_CNT_GAUGE, "CPU frequency 2500 MHz");
    x = find(d, nd, "host", "cpu_freq_min");
    ok(x && fabs(x->delta - 2000) < 1e-6, "slowest CPU 2000 MHz");
    x = find(d, nd, "host", "mem_bytes");
    ok(x && x->delta == 5e6 && strcmp(x->unit, "B") == 0,
       "resctrl memory traffic, both L3 domains summed: +5 MB (%g)", x ? x->delta : -1);
    ok(find(d, nd, "host", "mem_local_bytes") == NULL,
       "a domain whose counter is Unavailable: the local sum absent");
    free(d);
    cp_counters_free(&a);
    cp_counters_free(&b);
}

/* /proc/net/dev, where the root has one, stands for the sysfs statistics. */
static void test_procnet(void)
{
    put("proc/net/dev", "Inter-|   Receive                            |  Transmit\n"
                        " face |bytes packets errs drop fifo frame compressed multicast|bytes "
                        "packets errs drop fifo colls carrier compressed\n"
                        "  eth1: 1000 10 1 2 0 0 0 0 2000 20 3 4 0 0 0 0\n"
                        "    lo:  5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n");
    cp_cnt_snap_t s = {0};
    int n = cp_counters_read(CP_CNT_NET, &s);
    uint64_t tx = 0, txerr = 0, rxdrop = 0;
    for (int k = 0; k < s.n; k++) {
        tx = strcmp(s.v[k].name, "eth1/tx_bytes") == 0 ? s.v[k].raw : tx;
        txerr = strcmp(s.v[k].name, "eth1/tx_errors") == 0 ? s.v[k].raw : txerr;
        rxdrop = strcmp(s.v[k].name, "eth1/rx_dropped") == 0 ? s.v[k].raw : rxdrop;
    }
    ok(n == 16 && tx == 2000 && txerr == 3 && rxdrop == 2 && !has(&s, "eth0/rx_bytes"),
       "/proc/net/dev: 8 statistics of each of its 2 interfaces, sysfs's eth0 not read (%d)", n);
    cp_counters_free(&s);
    char p[512];
    snprintf(p, sizeof(p), "%s/proc/net/dev", root);
    unlink(p);
}

static void test_empty_root(void)
{
    char empty[300];
    snprintf(empty, sizeof(empty), "%s/empty", root);
    mkdir(empty, 0755);
    setenv("COLLPROF_SYSFS_ROOT", empty, 1);
    cp_cnt_snap_t s = {0};
    ok(cp_counters_read(CP_CNT_NET | CP_CNT_IB | CP_CNT_HOST, &s) == 0,
       "an empty root: no counter at all, none read as 0");
    cp_counters_free(&s);
    setenv("COLLPROF_SYSFS_ROOT", root, 1);
}

/* In a child: the library is loaded (or not) once per process. */
static void test_no_nvml(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("COLLPROF_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
        cp_cnt_snap_t s = {0};
        _exit(cp_counters_read(CP_CNT_GPU, &s) == 0 ? 0 : 1);
    }
    int st = -1;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "no NVML library: no GPU counters, no error");
}

static void test_nvml(const char *stub)
{
    setenv("COLLPROF_NVML_LIB", stub, 1);
    cp_cnt_snap_t a = {0}, b = {0};
    int n = cp_counters_read(CP_CNT_GPU, &a);
    ok(n > 10, "NVML stub: %d GPU counters", n);
    cp_counters_read(CP_CNT_GPU, &b);
    cp_cnt_delta_t *d = calloc((size_t)a.n + 2, sizeof(*d));
    int nd = cp_counters_delta(&a, &b, d);
    const cp_cnt_delta_t *x = find(d, nd, "gpu", "gpu0/sm_clock");
    ok(x && x->delta == 1410 && x->kind == CP_CNT_GAUGE, "gpu0 SM clock 1410 MHz");
    x = find(d, nd, "gpu", "gpu1/sm_clock");
    ok(x && x->delta == 1310, "gpu1 SM clock 1310 MHz");
    x = find(d, nd, "gpu", "gpu0/mem_clock");
    ok(x && x->delta == 1593, "memory clock");
    x = find(d, nd, "gpu", "gpu0/power");
    ok(x && fabs(x->delta - 250) < 1e-9 && strcmp(x->unit, "W") == 0, "power 250 W (from mW)");
    x = find(d, nd, "gpu", "gpu1/temperature");
    ok(x && x->delta == 62, "temperature");
    x = find(d, nd, "gpu", "gpu1/throttle_reasons");
    ok(x && x->delta == 4, "throttle reasons through the pre-12.2 name");
    x = find(d, nd, "gpu", "gpu0/energy");
    ok(x && fabs(x->delta - 5) < 1e-9, "energy +5 J over the interval");
    x = find(d, nd, "gpu", "gpu0/nvlink_tx");
    ok(x && x->delta == 2048.0 * 1024, "NVLink TX 2 MiB (KiB field)");
    x = find(d, nd, "gpu", "gpu0/ecc_corrected");
    ok(x && x->delta == 0, "ECC corrected present on gpu0");
    ok(find(d, nd, "gpu", "gpu1/ecc_corrected") == NULL, "ECC not supported on gpu1: absent");
    ok(find(d, nd, "gpu", "gpu0/pcie_replays") == NULL, "an entry point the library lacks: absent");
    x = find(d, nd, "gpu", "gpu0/pcie_tx");
    ok(x && x->delta == 0x20, "PCIe TX bytes across a 32-bit wrap (%g)", x ? x->delta : -1);
    ok(find(d, nd, "gpu", "gpu1/pcie_tx") == NULL && find(d, nd, "gpu", "gpu0/pcie_rx") == NULL,
       "a field NVML does not return: absent");
    x = find(d, nd, "gpu", "gpu0/xid_errors");
    ok(x && x->delta == 2 && x->kind == CP_CNT_COUNTER,
       "Xid events drained into a counter: 2 between the readings (%g)", x ? x->delta : -1);
    x = find(d, nd, "gpu", "gpu0/last_xid");
    ok(x && x->delta == 79 && x->kind == CP_CNT_GAUGE, "the last Xid's number, 79");
    ok(find(d, nd, "gpu", "gpu1/xid_errors") == NULL,
       "a GPU that refuses the Xid registration: absent");
    free(d);
    cp_counters_free(&a);
    cp_counters_free(&b);
}

static collprof_counter_row_t row(const char *src, const char *name, const char *kind, double d)
{
    collprof_counter_row_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.source, sizeof(r.source), "%s", src);
    snprintf(r.name, sizeof(r.name), "%s", name);
    snprintf(r.kind, sizeof(r.kind), "%s", kind);
    r.delta = d;
    return r;
}

/* What the summary and collprof-report flag (src/format/cflags.c). */
static void test_flags(void)
{
    collprof_counter_row_t r = row("ib", "mlx5_0/1/symbol_error", "counter", 2);
    const char *w = cp_cflag(&r);
    ok(w && strcmp(w, "link errors") == 0, "symbol errors: link errors");
    r = row("ib", "mlx5_0/1/symbol_error", "counter", 0);
    ok(cp_cflag(&r) == NULL, "no new symbol error: nothing");
    r = row("efa", "rdmap0s31/1/retrans_pkts", "counter", 3);
    w = cp_cflag(&r);
    ok(w && strcmp(w, "retransmissions") == 0, "EFA retransmitted packets: retransmissions");
    r = row("efa", "rdmap0s31/1/tx_bytes", "counter", 1e9);
    ok(cp_cflag(&r) == NULL, "bytes moved: nothing");
    r = row("host", "cpu_steal_pct", "gauge", 2.9);
    ok(cp_cflag(&r) == NULL, "CPU steal 2.9 %%: not flagged");
    r = row("host", "cpu_steal_pct", "gauge", 3.5);
    w = cp_cflag(&r);
    ok(w && strcmp(w, "CPU steal") == 0, "CPU steal 3.5 %%: flagged");
    r = row("gpu", "gpu0/throttle_reasons", "gauge", 0x1);
    ok(cp_cflag(&r) == NULL, "an idle GPU (reason 0x1) is not throttled");
    r = row("gpu", "gpu0/throttle_reasons", "gauge", 0x41);
    w = cp_cflag(&r);
    ok(w && strcmp(w, "GPU throttled") == 0, "hardware thermal slowdown (0x40): throttled");
    r = row("net", "eth0/rx_errors", "counter", 1);
    w = cp_cflag(&r);
    ok(w && strcmp(w, "interface errors or drops") == 0, "interface errors");
    char buf[512] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    collprof_counter_row_t rows[2] = {row("net", "eth0/rx_bytes", "counter", 10),
                                      row("ib", "mlx5_0/1/link_downed", "counter", 1)};
    snprintf(rows[1].host, sizeof(rows[1].host), "n3");
    rows[1].node = 3;
    int lines = cp_cflag_notes(rows, 2, f);
    fclose(f);
    ok(lines == 1 && strstr(buf, "node 3 (n3): mlx5_0/1/link_downed +1") != NULL,
       "the summary's note names node, host, counter, increase");
}

int main(void)
{
    snprintf(root, sizeof(root), "%s/cp_counters_XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(root) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    setenv("COLLPROF_SYSFS_ROOT", root, 1);
    test_parse();
    test_flags();
    test_wrap();
    test_tree();
    test_procnet();
    test_empty_root();
    test_no_nvml();
    char stub[4096], cwd[2048];
    const char *env = getenv("CP_NVML_STUB");
    snprintf(stub, sizeof(stub), "%s/tests/stubs/libnvidia-ml.so.1",
             getcwd(cwd, sizeof(cwd)) ? cwd : ".");
    test_nvml(env != NULL ? env : stub);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0) {
        printf("# could not remove %s\n", root);
    }
    return tap_done();
}
