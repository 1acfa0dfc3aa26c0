/*
 * GPU figures through NVML, loaded at run time (no build dependency): libnvidia-ml.so.1, or
 * the file COLLPROF_NVML_LIB names.  Each entry point is looked up by name; one the library
 * lacks, or a call that fails (NVML_ERROR_NOT_SUPPORTED on this GPU), leaves its counter
 * absent.  The declarations are NVML's (nvml.h, API version 11 and later), restated here.
 */
#include "config.h"

#include "counters/counters.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void *nvml_dev_t;
typedef void *nvml_evset_t;
typedef struct {
    nvml_dev_t device;
    unsigned long long type, data; /* data: the Xid's number */
    unsigned gpu_instance, compute_instance;
} nvml_event_t;
typedef struct {
    unsigned long long reference_time; /* CPU timestamp, us */
    unsigned long long violation_time; /* ns below the application clocks */
} nvml_violation_t;
typedef struct {
    unsigned int field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, nvml_return;
    union {
        double d;
        unsigned int ui;
        unsigned long ul;
        unsigned long long ull;
        long long sll;
    } value;
} nvml_field_t;

enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
/* nvmlEventTypeXidCriticalError; NVML_ERROR_TIMEOUT: no event waiting */
enum { NVML_EVENT_XID = 0x8, NVML_ERR_TIMEOUT = 10 };
/* NVLink data in KiB, all links (scope UINT_MAX); PCIe bytes (NVML 12.x; may wrap) */
enum {
    NVML_FI_NVLINK_DATA_TX = 138,
    NVML_FI_NVLINK_DATA_RX = 139,
    NVML_FI_PCIE_TX_BYTES = 197,
    NVML_FI_PCIE_RX_BYTES = 198
};

static struct {
    int tried, ok;
    int (*init)(void);
    int (*count)(unsigned *);
    int (*handle)(unsigned, nvml_dev_t *);
    int (*clock)(nvml_dev_t, int, unsigned *);
    int (*power)(nvml_dev_t, unsigned *);
    int (*temp)(nvml_dev_t, int, unsigned *);
    int (*throttle)(nvml_dev_t, unsigned long long *);
    int (*energy)(nvml_dev_t, unsigned long long *);
    int (*ecc)(nvml_dev_t, int, int, unsigned long long *);
    int (*pcie_replay)(nvml_dev_t, unsigned *);
    int (*violation)(nvml_dev_t, int, nvml_violation_t *);
    int (*fields)(nvml_dev_t, int, nvml_field_t *);
    int (*evset)(nvml_evset_t *);
    int (*reg)(nvml_dev_t, unsigned long long, nvml_evset_t);
    int (*wait)(nvml_evset_t, nvml_event_t *, unsigned);
    nvml_evset_t set; /* Xid events of the GPUs registered (xid_on) */
    unsigned char xid_on[64];
    unsigned long long xids[64], last_xid[64];
} nv;

#define SYM(field, name) *(void **)&nv.field = dlsym(lib, name)

static int load(void)
{
    if (nv.tried) {
        return nv.ok;
    }
    nv.tried = 1;
    const char *path = getenv("COLLPROF_NVML_LIB");
    void *lib = dlopen(path != NULL && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        return 0;
    }
    SYM(init, "nvmlInit_v2");
    SYM(count, "nvmlDeviceGetCount_v2");
    SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
    SYM(clock, "nvmlDeviceGetClockInfo");
    SYM(power, "nvmlDeviceGetPowerUsage");
    SYM(temp, "nvmlDeviceGetTemperature");
    SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons");
    if (nv.throttle == NULL) { /* its name before NVML 12.2 */
        SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    SYM(energy, "nvmlDeviceGetTotalEnergyConsumption");
    SYM(ecc, "nvmlDeviceGetTotalEccErrors");
    SYM(pcie_replay, "nvmlDeviceGetPcieReplayCounter");
    SYM(violation, "nvmlDeviceGetViolationStatus");
    SYM(fields, "nvmlDeviceGetFieldValues");
    SYM(evset, "nvmlEventSetCreate");
    SYM(reg, "nvmlDeviceRegisterEvents");
    SYM(wait, "nvmlEventSetWait_v2");
    if (nv.init == NULL || nv.count == NULL || nv.handle == NULL || nv.init() != 0) {
        dlclose(lib);
        memset(&nv, 0, sizeof(nv));
        nv.tried = 1;
        return 0;
    }
    nv.ok = 1; /* never unloaded: NVML keeps threads of its own */
    return 1;
}

/* Append gpuI/what. */
static int add(cp_cnt_snap_t *s, unsigned i, const char *what, const char *unit, int kind,
               double scale, unsigned long long v)
{
    char name[64];
    snprintf(name, sizeof(name), "gpu%u/%s", i, what);
    return cp_counters_add(s, "gpu", name, unit, kind, 64, scale, (uint64_t)v);
}

/* Clocks, power, temperature, throttle reasons: gauges (the value after).  Not
 * nvmlDeviceGetPcieThroughput: it samples for 20 ms per call; the PCIe byte fields instead. */
static int gauges(cp_cnt_snap_t *s, unsigned i, nvml_dev_t d)
{
    unsigned u;
    unsigned long long ull;
    int rc = 0;
    if (nv.clock != NULL && nv.clock(d, NVML_CLOCK_SM, &u) == 0) {
        rc |= add(s, i, "sm_clock", "MHz", CP_CNT_GAUGE, 1, u);
    }
    if (nv.clock != NULL && nv.clock(d, NVML_CLOCK_MEM, &u) == 0) {
        rc |= add(s, i, "mem_clock", "MHz", CP_CNT_GAUGE, 1, u);
    }
    if (nv.power != NULL && nv.power(d, &u) == 0) {
        rc |= add(s, i, "power", "W", CP_CNT_GAUGE, 1e-3, u); /* NVML: mW */
    }
    if (nv.temp != NULL && nv.temp(d, 0, &u) == 0) {
        rc |= add(s, i, "temperature", "C", CP_CNT_GAUGE, 1, u);
    }
    if (nv.throttle != NULL && nv.throttle(d, &ull) == 0) {
        rc |= add(s, i, "throttle_reasons", "mask", CP_CNT_GAUGE, 1, ull);
    }
    return rc;
}

/* Energy, ECC, PCIe replays, time held below the clocks, NVLink and PCIe bytes: counters. */
static int counters(cp_cnt_snap_t *s, unsigned i, nvml_dev_t d)
{
    unsigned u;
    unsigned long long ull;
    nvml_violation_t vt;
    int rc = 0;
    if (nv.energy != NULL && nv.energy(d, &ull) == 0) {
        rc |= add(s, i, "energy", "J", CP_CNT_COUNTER, 1e-3, ull); /* NVML: mJ */
    }
    if (nv.ecc != NULL && nv.ecc(d, 0, 0, &ull) == 0) { /* corrected, volatile */
        rc |= add(s, i, "ecc_corrected", "events", CP_CNT_COUNTER, 1, ull);
    }
    if (nv.ecc != NULL && nv.ecc(d, 1, 0, &ull) == 0) { /* uncorrected, volatile */
        rc |= add(s, i, "ecc_uncorrected", "events", CP_CNT_COUNTER, 1, ull);
    }
    if (nv.pcie_replay != NULL && nv.pcie_replay(d, &u) == 0) {
        rc |= add(s, i, "pcie_replays", "events", CP_CNT_COUNTER, 1, u);
    }
    if (nv.violation != NULL && nv.violation(d, 0, &vt) == 0) { /* NVML_PERF_POLICY_POWER */
        rc |= add(s, i, "power_capped_time", "ns", CP_CNT_COUNTER, 1, vt.violation_time);
    }
    if (nv.violation != NULL && nv.violation(d, 1, &vt) == 0) { /* ..._THERMAL */
        rc |= add(s, i, "thermal_capped_time", "ns", CP_CNT_COUNTER, 1, vt.violation_time);
    }
    static const struct {
        unsigned id;
        const char *name;
        double scale;
        int bits;
    } fi[] = {{NVML_FI_NVLINK_DATA_TX, "nvlink_tx", 1024, 64},
              {NVML_FI_NVLINK_DATA_RX, "nvlink_rx", 1024, 64},
              {NVML_FI_PCIE_TX_BYTES, "pcie_tx", 1, 32},
              {NVML_FI_PCIE_RX_BYTES, "pcie_rx", 1, 32}};
    nvml_field_t f[4];
    memset(f, 0, sizeof(f));
    for (int k = 0; k < 4; k++) {
        f[k].field_id = fi[k].id;
        f[k].scope_id = k < 2 ? UINT_MAX : 0;
    }
    if (nv.fields != NULL && nv.fields(d, 4, f) == 0) {
        for (int k = 0; k < 4; k++) {
            char name[64];
            snprintf(name, sizeof(name), "gpu%u/%s", i, fi[k].name);
            if (f[k].nvml_return == 0) {
                rc |= cp_counters_add(s, "gpu", name, "B", CP_CNT_COUNTER, fi[k].bits, fi[k].scale,
                                      f[k].value.ull);
            }
        }
    }
    return rc;
}

/*
 * Xid errors (the driver's critical error reports: a GPU fallen off the bus, a double-bit ECC
 * error, a hung channel): NVML hands them out as events, not as a counter.  The first reading
 * registers every GPU that allows it for Xid events (one event set per process: the node
 * leader's); each reading then drains what arrived, without waiting, into a count per GPU,
 * a counter from that first reading on (gpuN/xid_errors), and the last Xid's number, a gauge
 * (gpuN/last_xid, 0: none yet).  A GPU that refuses the registration (not supported, no
 * permission) has neither.
 */
static void drain_xids(unsigned n, const nvml_dev_t *dev)
{
    if (nv.set == NULL && nv.evset != NULL && nv.reg != NULL && nv.wait != NULL &&
        nv.evset(&nv.set) == 0) {
        for (unsigned i = 0; i < n && i < 64; i++) {
            nv.xid_on[i] = dev[i] != NULL && nv.reg(dev[i], NVML_EVENT_XID, nv.set) == 0;
        }
    }
    nvml_event_t e;
    for (int k = 0; nv.set != NULL && k < 1024; k++) { /* bounded: a storm waits for the next */
        memset(&e, 0, sizeof(e));
        if (nv.wait(nv.set, &e, 0) != 0) {
            break; /* NVML_ERR_TIMEOUT: nothing waiting; any other error: try again later */
        }
        for (unsigned i = 0; i < n && i < 64; i++) {
            if (dev[i] == e.device && (e.type & NVML_EVENT_XID)) {
                nv.xids[i]++;
                nv.last_xid[i] = e.data;
            }
        }
    }
}

int cp_counters_read_gpu(cp_cnt_snap_t *s)
{
    unsigned n = 0;
    if (!load() || nv.count(&n) != 0) {
        return 0;
    }
    int rc = 0;
    nvml_dev_t dev[64];
    for (unsigned i = 0; i < n && i < 64; i++) {
        dev[i] = NULL;
        if (nv.handle(i, &dev[i]) == 0) {
            rc |= gauges(s, i, dev[i]) | counters(s, i, dev[i]);
        } else {
            dev[i] = NULL;
        }
    }
    drain_xids(n, dev);
    for (unsigned i = 0; i < n && i < 64; i++) {
        if (nv.xid_on[i]) {
            rc |= add(s, i, "xid_errors", "events", CP_CNT_COUNTER, 1, nv.xids[i]) |
                  add(s, i, "last_xid", "xid", CP_CNT_GAUGE, 1, nv.last_xid[i]);
        }
    }
    return rc;
}
