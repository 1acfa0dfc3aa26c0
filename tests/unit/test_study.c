/* The RMA-write all-to-all study table (src/format/study.c): layout, link %, gaps. */
#include "config.h"

#include "format/study.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static collprof_result_row_t row(const char *variant, uint64_t count, double algbw, double busbw,
                                 double us, const char *status)
{
    collprof_result_row_t r;
    memset(&r, 0, sizeof(r));
    snprintf(r.backend, sizeof(r.backend), "ofi");
    snprintf(r.op, sizeof(r.op), "alltoall");
    snprintf(r.variant, sizeof(r.variant), "%s", variant);
    snprintf(r.status, sizeof(r.status), "%s", status);
    r.count = count;
    r.bytes = count * 4;
    r.algbw_gbs = algbw;
    r.busbw_gbs = busbw;
    r.time_mean_us = us;
    return r;
}

static char *render(const collprof_result_row_t *rows, size_t n, double link, int *nrows)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *nrows = cp_study_print(f, rows, n, "ofi", "alltoall", link, "test");
    fclose(f);
    return buf;
}

int main(void)
{
    collprof_result_row_t rows[6];
    rows[0] = row("single", UINT64_C(32) << 20, 8.0, 6.0, 16777.2, "ok"); /* 128 MiB */
    rows[1] = row("single", UINT64_C(1) << 20, 4.0, 3.0, 1048.6, "ok");   /* 4 MiB */
    rows[2] = row("multichannel", UINT64_C(1) << 20, 5.0, 3.75, 838.9, "ok");
    rows[3] = row("multichannel", UINT64_C(32) << 20, 0, 0, 0, "error"); /* not measured */
    rows[4] = row("single", UINT64_C(1) << 20, 1.0, 1.0, 1.0, "ok");     /* duplicate: ignored */
    rows[5] = row("single", UINT64_C(1) << 20, 9.0, 9.0, 9.0, "ok");
    snprintf(rows[5].op, sizeof(rows[5].op), "allreduce"); /* another op: ignored */
    int n;
    char *t = render(rows, 6, 100.0, &n);
    ok(n == 2, "two sizes (got %d)", n);
    ok(strstr(t, "| Size | Count | single | BusBW (%) | Lat (us) | multichannel | BusBW (%) | "
                 "Lat (us) |\n") != NULL,
       "header: Size | Count | one group per variant in first-seen order");
    ok(strstr(t, "| 4 MiB | 1048576 | 4.00 | 3.00 (24.0%) | 1048.6 | 5.00 | 3.75 (30.0%) | "
                 "838.9 |\n") != NULL,
       "4 MiB row: algBW, busBW with %% of 12.5 GB/s, latency; the first duplicate wins");
    ok(strstr(t, "| 128 MiB | 33554432 | 8.00 | 6.00 (48.0%) | 16777.2 | - | - | - |\n") != NULL,
       "128 MiB row after 4 MiB; an unmeasured cell is '-'");
    ok(strstr(t, "link rate: 100 Gbit/s = 12.5 GB/s (test)") != NULL, "link rate line");
    free(t);

    t = render(rows, 3, 0, &n);
    ok(strstr(t, "| 4 MiB | 1048576 | 4.00 | 3.00 (n/a) | 1048.6 |") != NULL,
       "no link rate: the %% says n/a");
    ok(strstr(t, "link rate: unknown") != NULL, "no link rate: said so");
    free(t);

    t = render(rows + 3, 1, 100, &n);
    ok(n == 0 && (t == NULL || t[0] == '\0'), "no measured cell: nothing printed");
    free(t);

    ok(cp_study_link_pct(12.5, 100) > 99.99 && cp_study_link_pct(12.5, 100) < 100.01,
       "12.5 GB/s is 100%% of 100 Gbit/s");
    ok(cp_study_link_pct(1, 0) < 0, "no link: negative (n/a)");
    return tap_done();
}
