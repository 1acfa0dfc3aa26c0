/*
 * The --gaps part of a replay's report (docs/replay.md, "Gaps"): the words for its header,
 * and one line per rank row (what "rank") of /replay: its issue errors, its late issues, its
 * span against its recorded window.
 */
#include "config.h"

#include "format/replay_print.h"

#include <stdio.h>
#include <string.h>

const char *cp_replay_gaps_words(const collprof_replay_row_t *rows, size_t n, const char *backend,
                                 char *buf, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].what, "rank") && !strcmp(rows[i].backend, backend)) {
            size_t k = strcspn(rows[i].note, ";");
            snprintf(buf, len, "%.*s", (int)(k < len ? k : len - 1), rows[i].note);
            return buf;
        }
    }
    return "back to back";
}

void cp_replay_gaps_print(FILE *f, const collprof_replay_row_t *rows, size_t i)
{
    const collprof_replay_row_t *r = &rows[i];
    char words[96];
    if (i == 0 || strcmp(rows[i - 1].what, "rank") != 0) {
        fprintf(f,
                "%s: each rank's issues against their targets (the recorded offsets), "
                "|error| over its ops x replays; span: its start to its last op's end\n",
                cp_replay_gaps_words(r, 1, r->backend, words, sizeof(words)));
        fprintf(f, "%5s %7s %10s %10s %10s %6s %14s %14s %7s\n", "rank", "ops", "err_p50_us",
                "err_p99_us", "err_max_us", "late", "span_us", "recorded_us", "ratio");
    }
    fprintf(f, "%5d %7lld %10.1f %10.1f %10.1f %6lld %14.1f %14.1f %7.3f\n", r->rank,
            (long long)r->ops, r->issue_err_p50_us, r->issue_err_p99_us, r->issue_err_max_us,
            (long long)r->late, r->time_p50_us, r->recorded_us, r->ratio);
}
