/*
 * The memory-copy limit (src/plan/limits.c): a positive rate for one and
 * several threads, none for nothing to copy, and the plan's distinct
 * host-memory buffer sizes measured once each (one rank, no PMIx).  Device
 * cells: the backend's copy_rate slot asked once per size, device memory
 * only; a backend without the slot (an older, smaller entry struct, or a
 * NULL slot) or one that fails gives no rate.
 */
#include "config.h"

#include "plan/limits.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nasked;
static size_t asked[8];

/* a backend's copy_rate: 1 GB/s per KiB, so each size's answer is its own */
static int fake_copy_rate(void *ctx, int memtype, size_t bytes, double *gbs)
{
    (void)ctx;
    if (memtype != COLLPROF_MEM_DEVICE) {
        return COLLPROF_ERR_NOT_SUPPORTED;
    }
    asked[nasked++ % 8] = bytes;
    if (bytes == 3 * 4096 || bytes == 5 * 4096) {
        return COLLPROF_ERR_BACKEND; /* these sizes fail */
    }
    *gbs = (double)bytes / 1024;
    return COLLPROF_OK;
}

static const char *fake_last_error(void *ctx)
{
    (void)ctx;
    return "fake failure";
}

/* plugins[0] has the slot; plugins[1] is a copy whose struct ends before it */
static void check_device(void)
{
    static collprof_backend_t be[2];
    be[0] = (collprof_backend_t){.size = sizeof(collprof_backend_t),
                                 .last_error = fake_last_error,
                                 .copy_rate = fake_copy_rate};
    be[1] = be[0];
    be[1].size = COLLPROF_BACKEND_SIZE_V2;
    cp_plugin_t plugins[2];
    memset(plugins, 0, sizeof(plugins));
    int ctx = 0;
    for (int i = 0; i < 2; i++) {
        plugins[i].be = &be[i];
        plugins[i].ctx = &ctx;
        snprintf(plugins[i].name, sizeof(plugins[i].name), "fake%d", i);
    }
    /* plugin 0: 4 KiB twice, 12 KiB (fails), 8 KiB, 20 KiB (fails), 16 KiB; plugin 1: 4 KiB;
     * then a host cell of 4 KiB */
    enum { NC = 8 };
    cp_cell_t cells[NC];
    memset(cells, 0, sizeof(cells));
    uint64_t counts[NC] = {1024, 1024, 3072, 2048, 5120, 4096, 1024, 1024};
    int plugin[NC] = {0, 0, 0, 0, 0, 0, 1, 0};
    for (int i = 0; i < NC; i++) {
        cells[i].dtype = COLLPROF_DTYPE_FLOAT32;
        cells[i].count = counts[i];
        cells[i].plugin = plugin[i];
        cells[i].memtype = i == NC - 1 ? COLLPROF_MEM_HOST : COLLPROF_MEM_DEVICE;
    }
    cp_plan_t plan = {.cells = cells, .ncells = NC, .nranks = 1};
    cp_boot_t b;
    memset(&b, 0, sizeof(b));
    b.nranks = 1;
    b.local_size = 1;
    cp_limits_t l;
    int rc = cp_limits_measure(&plan, plugins, 2, &b, &l);
    tap_ok(rc == 0 && nasked == 5 && asked[0] == 4096 && asked[1] == 12288 && asked[2] == 8192 &&
               asked[3] == 20480 && asked[4] == 16384,
           "device rates asked once per size of device cells, on after a failure (%d asks)",
           nasked);
    double r4 = cp_limits_device(&l, 0, COLLPROF_MEM_DEVICE, 4096),
           r8 = cp_limits_device(&l, 0, COLLPROF_MEM_DEVICE, 8192),
           r16 = cp_limits_device(&l, 0, COLLPROF_MEM_DEVICE, 16384);
    tap_ok(r4 == 4.0 && r8 == 8.0 && r16 == 16.0,
           "each size has its backend's rate (%g, %g, %g GB/s)", r4, r8, r16);
    tap_ok(cp_limits_device(&l, 0, COLLPROF_MEM_DEVICE, 12288) == 0 &&
               cp_limits_device(&l, 0, COLLPROF_MEM_DEVICE, 20480) == 0,
           "the sizes whose measurement failed have no rate");
    tap_ok(cp_limits_device(&l, 1, COLLPROF_MEM_DEVICE, 4096) == 0,
           "a backend built before the slot (smaller struct) is not asked and has no rate");
    tap_ok(cp_limits_device(&l, 0, COLLPROF_MEM_HOST, 4096) == 0,
           "host memory never has a device rate");
    double o = 0, a = 0;
    cp_limits_of(&l, 4096, &o, &a);
    tap_ok(o > 0 && a > 0 && l.n == 1, "the host cell's size has its memcpy rate");
    cp_limits_free(&l);
}

int main(void)
{
    double one = cp_copy_gbs(1 << 20, 1), two = cp_copy_gbs(1 << 20, 2);
    tap_ok(one > 0.01 && two > 0.01, "1 MiB copied at %.2f GB/s by one thread, %.2f by two", one,
           two);
    tap_ok(cp_copy_gbs(0, 1) == 0.0 && cp_copy_gbs(64, 0) == 0.0, "nothing to copy: no rate");

    cp_cell_t cells[4];
    memset(cells, 0, sizeof(cells));
    uint64_t counts[4] = {1024, 4096, 1024, 2048};
    for (int i = 0; i < 4; i++) {
        cells[i].dtype = COLLPROF_DTYPE_FLOAT32;
        cells[i].count = counts[i];
        cells[i].memtype = i == 3 ? COLLPROF_MEM_DEVICE : COLLPROF_MEM_HOST;
    }
    cp_plan_t plan = {.cells = cells, .ncells = 4, .nranks = 1};
    cp_boot_t b;
    memset(&b, 0, sizeof(b));
    b.nranks = 1;
    b.local_size = 2;
    cp_limits_t l;
    int rc = cp_limits_measure(&plan, NULL, 0, &b, &l);
    double o = 0, a = 0, d1 = 1, d2 = 1;
    cp_limits_of(&l, 4096, &o, &a);
    cp_limits_of(&l, 8192, &d1, &d2);
    tap_ok(rc == 0 && l.n == 2 && l.threads == 2 && o > 0 && a > 0,
           "4 KiB and 16 KiB host buffers measured once each with 1 and 2 threads (%d sizes)", l.n);
    tap_ok(d1 == 0 && d2 == 0, "a device-memory cell's size is not measured");
    cp_limits_free(&l);
    check_device();
    return tap_done();
}
