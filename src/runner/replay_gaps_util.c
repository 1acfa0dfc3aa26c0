/*
 * What --gaps and --replay-ops share below the replay (replay_gaps.h): the options parsed, and
 * the gap figures of the rank rows carried to the type and trace rows.  No state: the
 * replay's is replay_gaps.c's.
 */
#include "config.h"

#include "runner/replay_gaps.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_gaps_parse(const char *s, int *mode, double *scale, char *err, size_t len)
{
    *mode = CP_GAPS_NONE;
    *scale = 1;
    if (s[0] == '\0' || !strcmp(s, "none")) {
        return 0;
    }
    const char *colon = strchr(s, ':');
    size_t k = colon != NULL ? (size_t)(colon - s) : strlen(s);
    if (k == 5 && !strncmp(s, "trace", k)) {
        *mode = CP_GAPS_TRACE;
    } else if (k == 7 && !strncmp(s, "compute", k)) {
        *mode = CP_GAPS_COMPUTE;
    } else {
        snprintf(err, len, "--gaps %s: not none, trace, trace:SCALE, compute or compute:SCALE", s);
        return -1;
    }
    if (colon != NULL) {
        char *end = NULL;
        errno = 0;
        *scale = strtod(colon + 1, &end);
        if (end == colon + 1 || *end != '\0' || errno != 0 || !(*scale > 0) || *scale > 1000) {
            snprintf(err, len,
                     "--gaps %s: SCALE must be a number in (0, 1000] (0.5: half the gaps)", s);
            return -1;
        }
    }
    return 0;
}

/* A seq: decimal digits, at most 18 of them; -1 when not. */
static int64_t seq_of(const char *s, size_t n)
{
    if (n == 0 || n > 18) {
        return -1;
    }
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return -1;
        }
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

int cp_replay_ops_parse(const char *s, int64_t *lo, int64_t *hi, char *err, size_t len)
{
    const char *dash = strchr(s, '-');
    int bad;
    if (dash == NULL) {
        *lo = *hi = seq_of(s, strlen(s));
        bad = *lo < 0;
    } else {
        size_t a = (size_t)(dash - s), b = strlen(dash + 1);
        *lo = a > 0 ? seq_of(s, a) : 0;
        *hi = b > 0 ? seq_of(dash + 1, b) : -1;
        bad = (a == 0 && b == 0) || *lo < 0 || (b > 0 && *hi < 0) || (*hi >= 0 && *hi < *lo);
    }
    if (bad) {
        snprintf(err, len, "--replay-ops %s: not a range of seqs A-B, A-, -B or A (A <= B, from 0)",
                 s);
        return -1;
    }
    return 0;
}

size_t cp_gaps_partition(collprof_replay_row_t *rows, size_t n)
{
    size_t k = 0, nrk = 0;
    collprof_replay_row_t *rk = malloc((n + 1) * sizeof(*rk));
    if (rk == NULL) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].what, "rank")) {
            rk[nrk++] = rows[i];
        } else {
            rows[k++] = rows[i];
        }
    }
    memcpy(&rows[k], rk, nrk * sizeof(*rk));
    free(rk);
    return nrk;
}

void cp_gaps_fold_add(collprof_replay_row_t *into, const collprof_replay_row_t *r)
{
    into->issue_err_p50_us =
        r->issue_err_p50_us > into->issue_err_p50_us ? r->issue_err_p50_us : into->issue_err_p50_us;
    into->issue_err_p99_us =
        r->issue_err_p99_us > into->issue_err_p99_us ? r->issue_err_p99_us : into->issue_err_p99_us;
    into->issue_err_max_us =
        r->issue_err_max_us > into->issue_err_max_us ? r->issue_err_max_us : into->issue_err_max_us;
    into->late += r->late;
}

void cp_gaps_fold(const collprof_replay_row_t *ops, size_t k, collprof_replay_row_t *r)
{
    r->issue_err_p50_us = r->issue_err_p99_us = r->issue_err_max_us = -1;
    r->late = 0;
    for (size_t i = 0; i < k; i++) {
        cp_gaps_fold_add(r, &ops[i]);
    }
}

void cp_gaps_trace_row(collprof_replay_row_t *rows, size_t n, const collprof_replay_row_t *rk,
                       size_t nrk)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(rows[i].what, "trace")) {
            cp_gaps_fold(rk, nrk, &rows[i]);
        }
    }
}
