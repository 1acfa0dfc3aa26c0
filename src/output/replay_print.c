#include "config.h"

#include "output/summary.h"

#include <stdio.h>
#include <string.h>

/* "1.23" (places decimals) or "-" for a figure not recorded. */
static const char *fig(char *buf, size_t len, double v, int places)
{
    if (v <= 0) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%.*f", places, v);
    }
    return buf;
}

void cp_replay_print(FILE *f, const collprof_replay_row_t *rows, size_t n)
{
    const char *backend = "";
    for (size_t i = 0; i < n; i++) {
        const collprof_replay_row_t *r = &rows[i];
        char rec[32], ratio[32];
        if (strcmp(r->backend, backend) != 0) {
            backend = r->backend;
            fprintf(f, "\n== replay on %s (p50 over %d replays, back to back) ==\n", backend,
                    r->iterations);
            fprintf(f, "%-14s %12s %5s %5s %7s %12s %12s %8s %-8s %s\n", "op", "bytes", "group",
                    "size", "ops", "replay_us", "recorded_us", "ratio", "status", "note");
        }
        if (!strcmp(r->what, "type")) {
            fprintf(f, "%-14s %12llu %5d %5d %7lld %12.2f %12s %8s %-8s %s\n", r->op,
                    (unsigned long long)r->bytes, r->group, r->group_size, (long long)r->ops,
                    r->time_p50_us, fig(rec, sizeof(rec), r->recorded_us, 2),
                    fig(ratio, sizeof(ratio), r->ratio, 3), r->status, r->note);
        } else if (!strcmp(r->what, "trace")) {
            fprintf(f,
                    "whole trace: %lld ops, replay %.2f us (the slowest rank's sum of its ops), "
                    "recorded window %s us, ratio %s, %llu wrong elements: %s%s%s\n",
                    (long long)r->ops, r->time_p50_us, fig(rec, sizeof(rec), r->recorded_us, 2),
                    fig(ratio, sizeof(ratio), r->ratio, 3), (unsigned long long)r->wrong, r->status,
                    r->note[0] ? "; " : "", r->note);
        }
    }
}
