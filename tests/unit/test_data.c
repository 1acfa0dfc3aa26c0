/* Element types: exact small integers, poison, reduction bounds. */
#include "config.h"

#include "core/data.h"
#include "tap.h"

#include <string.h>

int main(void)
{
    unsigned char buf[64];
    for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
        const collprof_dtype_info_t *d = collprof_dtype_info((collprof_dtype_t)t);
        int good = 1;
        for (int64_t v = 0; v < d->exact_max; v += (d->exact_max > 5000 ? 997 : 1)) {
            int64_t back = -1;
            cp_data_set((collprof_dtype_t)t, buf, 3, v);
            good &= cp_data_get((collprof_dtype_t)t, buf, 3, &back) == 0 && back == v;
        }
        ok(good, "%s: every value below %lld round-trips exactly", d->name,
           (long long)d->exact_max);
        memset(buf, 0xff, sizeof(buf));
        int64_t p = 0;
        int rc = cp_data_get((collprof_dtype_t)t, buf, 1, &p);
        ok(rc != 0 || p < 0 || p >= d->exact_max - 1, "%s: 0xff poison never equals a value",
           d->name);
        ok(cp_dtype_from_name(d->name) == t, "%s: name lookup", d->name);
        int bounded = 1;
        for (int n = 1; n <= 4096; n *= 4) {
            for (uint64_t i = 0; i < 50; i++) {
                for (int op = 0; op < COLLPROF_REDOP_COUNT; op++) {
                    int64_t r = cp_data_reduced((collprof_dtype_t)t, (collprof_redop_t)op, n, i);
                    bounded &= r >= 0 && r < d->exact_max - 1;
                }
            }
        }
        ok(bounded, "%s: reductions over up to 4096 ranks stay exact", d->name);
    }
    ok(cp_dtype_from_name("float") == COLLPROF_DTYPE_FLOAT32 &&
           cp_dtype_from_name("bf16") == COLLPROF_DTYPE_BFLOAT16 && cp_dtype_from_name("x") == -1,
       "dtype aliases");
    ok(cp_data_reduced(COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_PROD, 4, 2) == 4 &&
           cp_data_reduced(COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_PROD, 1, 2) == 2,
       "products of 1s and 2s");
    return tap_done();
}
