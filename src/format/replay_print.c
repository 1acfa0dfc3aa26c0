/*
 * A replay's report as text (replay_print.h): per backend, a line per op type x size x group,
 * the whole trace, the critical path (from the op rows on it) and, with --gaps compute, the
 * exposed communication time.
 */
#include "config.h"

#include "format/replay_print.h"

#include <stdlib.h>
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

/* The straggler of type row r, "RANK:K/M": last in K of the row's M instances (its op rows
 * over the group's size, at least K: an instance's ops may fall in several rows when the
 * members recorded different sizes), or "-". */
static const char *last_of(char *buf, size_t len, const collprof_replay_row_t *r, int v12)
{
    long long inst = r->group_size > 0 ? (long long)r->ops / r->group_size : 0;
    inst = inst < r->straggler_ops ? r->straggler_ops : inst;
    if (!v12 || r->straggler < 0) {
        snprintf(buf, len, "-");
    } else {
        snprintf(buf, len, "%d:%lld/%lld", r->straggler, (long long)r->straggler_ops, inst);
    }
    return buf;
}

static void type_line(FILE *f, const collprof_replay_row_t *r, int v12)
{
    char rec[32], ratio[32], bus[32], skew[32], last[48];
    fprintf(f, "%-14s %12llu %5d %5d %7lld %12.2f %12s %8s %10s %9s %-10s %-8s %s\n", r->op,
            (unsigned long long)r->bytes, r->group, r->group_size, (long long)r->ops,
            r->time_p50_us, fig(rec, sizeof(rec), r->recorded_us, 2),
            fig(ratio, sizeof(ratio), r->ratio, 3),
            fig(bus, sizeof(bus), v12 ? r->busbw_gbs : 0, 4),
            v12 && r->skew_us >= 0 ? (snprintf(skew, sizeof(skew), "%.2f", r->skew_us), skew) : "-",
            last_of(last, sizeof(last), r, v12), r->status, r->note);
}

typedef struct part {
    int id;
    long long ops;
    double us;
} part_t;

static int cmp_part(const void *a, const void *b)
{
    const part_t *x = a, *y = b;
    return x->us > y->us ? -1 : x->us < y->us ? 1 : x->id - y->id;
}

/* "what 0 (5 ops, 12.30 us), 1 (...)": the parts of the path, the largest first (at most 8). */
static void parts(FILE *f, const char *what, part_t *p, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (p[i].ops > 0) {
            p[k++] = p[i];
        }
    }
    qsort(p, (size_t)k, sizeof(*p), cmp_part);
    fprintf(f, "; %s", what);
    for (int i = 0; i < k && i < 8; i++) {
        fprintf(f, "%s %d (%lld op%s, %.2f us)", i > 0 ? "," : "", p[i].id, p[i].ops,
                p[i].ops == 1 ? "" : "s", p[i].us);
    }
    if (k > 8) {
        fprintf(f, " and %d more", k - 8);
    }
}

/* The critical path of one backend: the trace row's length, its ops (rows[0..n) of the
 * backend) by rank and by group. */
static void path_line(FILE *f, const collprof_replay_row_t *rows, size_t n,
                      const collprof_replay_row_t *tr)
{
    int nr = 0, ng = 0;
    long long on = 0;
    for (size_t i = 0; i < n; i++) {
        nr = rows[i].rank + 1 > nr ? rows[i].rank + 1 : nr;
        ng = rows[i].group + 1 > ng ? rows[i].group + 1 : ng;
    }
    part_t *pr = calloc((size_t)nr + 1, sizeof(*pr)), *pg = calloc((size_t)ng + 1, sizeof(*pg));
    for (size_t i = 0; pr != NULL && pg != NULL && i < n; i++) {
        const collprof_replay_row_t *r = &rows[i];
        if (strcmp(r->what, "op") != 0 || !(r->critical_us > 0) || (r->rank < 0 && r->group < 0)) {
            continue;
        }
        if (r->rank >= 0) { /* (a run's summary: a rank's ops folded, group -1) */
            pr[r->rank].ops += r->ops;
            pr[r->rank].us += r->critical_us;
            on += r->ops;
        }
        if (r->group >= 0) { /* (and a group's, rank -1; a file's op row is both) */
            pg[r->group].ops += r->ops;
            pg[r->group].us += r->critical_us;
        }
    }
    char share[32];
    fprintf(f, "critical path: %.2f us (%s%% of the replay), %lld op%s", tr->critical_us,
            fig(share, sizeof(share),
                tr->time_p50_us > 0 ? 100 * tr->critical_us / tr->time_p50_us : 0, 1),
            on, on == 1 ? "" : "s");
    if (pr != NULL && pg != NULL) {
        for (int i = 0; i < nr; i++) {
            pr[i].id = i;
        }
        for (int i = 0; i < ng; i++) {
            pg[i].id = i;
        }
        parts(f, "ranks", pr, nr);
        parts(f, "groups", pg, ng);
    }
    fprintf(f, "\n");
    free(pr);
    free(pg);
}

static void trace_lines(FILE *f, const collprof_replay_row_t *rows, size_t n,
                        const collprof_replay_row_t *r, int v12, int v13)
{
    char rec[32], ratio[32], wrong[48];
    /* --check 0 (the fold's note, run/replay_fold.h): no count of wrong elements to give */
    static const char unchecked[] = "results not checked";
    int none = !strncmp(r->note, unchecked, sizeof(unchecked) - 1);
    int bare = none && !strcmp(r->status, "ok"); /* (an error or a skip is still said) */
    snprintf(wrong, sizeof(wrong), "%llu wrong elements", (unsigned long long)r->wrong);
    fprintf(f,
            "whole trace: %lld ops, replay %.2f us (the slowest rank's sum of its ops), "
            "recorded window %s us, ratio %s, %s%s%s%s%s\n",
            (long long)r->ops, r->time_p50_us, fig(rec, sizeof(rec), r->recorded_us, 2),
            fig(ratio, sizeof(ratio), r->ratio, 3), none ? r->note : wrong, bare ? "" : ": ",
            bare ? "" : r->status, r->note[0] && !none ? "; " : "", none ? "" : r->note);
    if (v12 && r->critical_us >= 0) {
        path_line(f, rows, n, r);
    }
    if (v12 && r->exposed_us >= 0) {
        fprintf(f,
                "exposed communication: %.2f us (the slowest rank's, not overlapped with its "
                "compute)\n",
                r->exposed_us);
    }
    if (v13 && r->overlapped_us >= 0) { /* (schema 1.13) */
        fprintf(f,
                "overlapped communication: %.2f us (the same rank's posted ops in flight while "
                "it was outside their calls)\n",
                r->overlapped_us);
    }
}

void cp_replay_print(FILE *f, const collprof_replay_row_t *rows, size_t n, long long minor)
{
    const char *backend = "";
    int v12 = minor >= 12;
    size_t first = 0; /* the backend's first row */
    for (size_t i = 0; i < n; i++) {
        const collprof_replay_row_t *r = &rows[i];
        char gaps[96];
        if (strcmp(r->backend, backend) != 0) {
            backend = r->backend;
            first = i;
            fprintf(f, "\n== replay on %s (p50 over %d replays, %s) ==\n", backend, r->iterations,
                    cp_replay_gaps_words(rows, n, backend, gaps, sizeof(gaps)));
            fprintf(f, "%-14s %12s %5s %5s %7s %12s %12s %8s %10s %9s %-10s %-8s %s\n", "op",
                    "bytes", "group", "size", "ops", "replay_us", "recorded_us", "ratio",
                    "busBW_GB/s", "skew_us", "last", "status", "note");
        }
        if (!strcmp(r->what, "type")) {
            type_line(f, r, v12);
        } else if (!strcmp(r->what, "trace")) {
            trace_lines(f, rows + first, i - first, r, v12, minor >= 13);
        } else if (!strcmp(r->what, "rank")) {
            cp_replay_gaps_print(f, rows, i);
        }
    }
}
