/*
 * The memory-copy limit (src/core/limits.c): a positive rate for one and
 * several threads, none for nothing to copy, and the plan's distinct
 * host-memory buffer sizes measured once each (one rank, no PMIx).
 */
#include "config.h"

#include "core/limits.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

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
    int rc = cp_limits_measure(&plan, &b, &l);
    double o = 0, a = 0, d1 = 1, d2 = 1;
    cp_limits_of(&l, 4096, &o, &a);
    cp_limits_of(&l, 8192, &d1, &d2);
    tap_ok(rc == 0 && l.n == 2 && l.threads == 2 && o > 0 && a > 0,
           "4 KiB and 16 KiB host buffers measured once each with 1 and 2 threads (%d sizes)", l.n);
    tap_ok(d1 == 0 && d2 == 0, "a device-memory cell's size is not measured");
    cp_limits_free(&l);
    return tap_done();
}
