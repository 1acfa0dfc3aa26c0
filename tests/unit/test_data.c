/* Element types: exact small integers, poison, reduction bounds. */
#include "config.h"

#include "colls/data.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

/* The reference: reduce every rank's contribution, one by one. */
static int64_t reduced_loop(collprof_dtype_t t, collprof_redop_t op, int n, uint64_t i)
{
    int64_t acc = cp_data_contrib(t, op, n, 0, i);
    for (int r = 1; r < n; r++) {
        int64_t c = cp_data_contrib(t, op, n, r, i);
        switch (op) {
        case COLLPROF_REDOP_SUM: acc += c; break;
        case COLLPROF_REDOP_PROD: acc *= c; break;
        case COLLPROF_REDOP_MIN: acc = c < acc ? c : acc; break;
        default: acc = c > acc ? c : acc; break;
        }
    }
    return acc;
}

/* The closed form and the table against the loop, every type and reduction;
 * one line per n naming the first pair that differs. */
static void closed_form_matches_loop(int n, uint64_t nelems)
{
    static const uint64_t far[] = {1048575, 1048576, 16777215, 4294967311ull};
    char first[96] = "";
    for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
        for (int op = 0; op < COLLPROF_REDOP_COUNT; op++) {
            collprof_dtype_t dt = (collprof_dtype_t)t;
            collprof_redop_t ro = (collprof_redop_t)op;
            cp_reduced_t tab;
            int same = cp_data_reduced_init(&tab, dt, ro, n) == 0 && tab.period >= 1 &&
                       tab.period <= CP_REDUCED_MAX_PERIOD;
            for (uint64_t k = 0; same && k < nelems + 4; k++) {
                uint64_t i = k < nelems ? k : far[k - nelems];
                int64_t want = reduced_loop(dt, ro, n, i);
                same = want == cp_data_reduced(dt, ro, n, i) && want == tab.v[i % tab.period];
            }
            if (!same && first[0] == '\0') {
                snprintf(first, sizeof(first), " (first: %s %s)", collprof_dtype_info(dt)->name,
                         collprof_redop_name(ro));
            }
        }
    }
    ok(first[0] == '\0',
       "%d ranks: closed form and table equal the loop, every type and "
       "reduction%s",
       n, first);
}

int main(void)
{
    for (int n = 1; n <= 9; n++) {
        closed_form_matches_loop(n, 300);
    }
    closed_form_matches_loop(4096, 300);
    closed_form_matches_loop(65536, 20);
    cp_reduced_t none;
    ok(cp_data_reduced_init(&none, COLLPROF_DTYPE_FLOAT32, COLLPROF_REDOP_SUM, 0) == -1,
       "no table for 0 ranks");

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
