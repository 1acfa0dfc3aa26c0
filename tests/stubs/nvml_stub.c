/*
 * A stand-in for libnvidia-ml.so.1 (tests/unit/test_counters.c): a few NVML entry points
 * returning scripted values, so that collprof's NVML reader (src/counters/counters_nvml.c)
 * runs without a GPU.  Two GPUs; each call of nvmlDeviceGetTotalEnergyConsumption and of
 * nvmlDeviceGetFieldValues advances its counter, so that two snapshots differ.  GPU 1 has no
 * ECC (NVML_ERROR_NOT_SUPPORTED); nvmlDeviceGetPcieReplayCounter is not exported at all; GPU
 * 0's PCIe TX field wraps at 32 bits between its first two readings, GPU 1 has none.
 * Xid events: GPU 0 registers, GPU 1 refuses (NVML_ERROR_NO_PERMISSION); the second wait
 * after the registration, and the third, deliver an Xid 79 of GPU 0 (two events between the
 * first and the second reading of a snapshot pair), then none.
 */
#include <string.h>

typedef struct {
    unsigned int field_id, scope_id;
    long long timestamp, latency_us;
    int value_type, nvml_return;
    union {
        double d;
        unsigned long long ull;
    } value;
} field_t;

static int devs[2];
static unsigned long long energy[2], nvlink[2], pcie;

int nvmlInit_v2(void)
{
    return 0;
}

int nvmlDeviceGetCount_v2(unsigned *n)
{
    *n = 2;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d)
{
    if (i >= 2) {
        return 2;
    }
    *d = &devs[i];
    return 0;
}

static int index_of(void *d)
{
    return (int *)d - devs;
}

int nvmlDeviceGetClockInfo(void *d, int type, unsigned *mhz)
{
    *mhz = type == 1 ? 1410 - 100 * (unsigned)index_of(d) : 1593;
    return 0;
}

int nvmlDeviceGetPowerUsage(void *d, unsigned *mw)
{
    *mw = 250000 + 1000 * (unsigned)index_of(d);
    return 0;
}

int nvmlDeviceGetTemperature(void *d, int sensor, unsigned *c)
{
    *c = sensor == 0 ? 61 + (unsigned)index_of(d) : 0;
    return 0;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void *d, unsigned long long *mask)
{
    *mask = index_of(d) == 1 ? 0x4 : 0; /* GPU 1: the software power cap */
    return 0;
}

int nvmlDeviceGetTotalEnergyConsumption(void *d, unsigned long long *mj)
{
    energy[index_of(d)] += 5000; /* 5 J per reading */
    *mj = energy[index_of(d)];
    return 0;
}

int nvmlDeviceGetTotalEccErrors(void *d, int type, int counter, unsigned long long *n)
{
    (void)counter;
    if (index_of(d) == 1) {
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    }
    *n = type == 0 ? 7 : 0;
    return 0;
}

int nvmlDeviceGetFieldValues(void *d, int n, field_t *f)
{
    for (int k = 0; k < n; k++) {
        f[k].nvml_return = 0;
        if (f[k].field_id == 138) { /* NVLink data TX, KiB */
            nvlink[index_of(d)] += 2048;
            f[k].value.ull = nvlink[index_of(d)];
        } else if (f[k].field_id == 139) {
            f[k].value.ull = 100;
        } else if (f[k].field_id == 197 && index_of(d) == 0) { /* PCIe TX bytes, 32 bits: wraps */
            pcie = pcie == 0 ? 0xfffffff0ull : 0x10;
            f[k].value.ull = pcie;
        } else {
            f[k].nvml_return = 3;
        }
    }
    return 0;
}

static int set_made, waits;

int nvmlEventSetCreate(void **set)
{
    set_made = 1;
    *set = &set_made;
    return 0;
}

int nvmlDeviceRegisterEvents(void *d, unsigned long long types, void *set)
{
    if (set != &set_made || !(types & 0x8)) {
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    }
    return index_of(d) == 1 ? 4 : 0; /* GPU 1: NVML_ERROR_NO_PERMISSION */
}

typedef struct {
    void *device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
} event_t;

int nvmlEventSetWait_v2(void *set, event_t *e, unsigned timeout_ms)
{
    (void)timeout_ms;
    if (set != &set_made) {
        return 2;
    }
    waits++;
    if (waits == 2 || waits == 3) {
        e->device = &devs[0];
        e->type = 0x8;
        e->data = 79;
        return 0;
    }
    if (waits == 4) { /* the wait that ends the second reading's drain */
        waits = 100;
    }
    return 10; /* NVML_ERROR_TIMEOUT */
}
