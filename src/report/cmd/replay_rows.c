/*
 * compare and best on replays (collprof --replay files, docs/replay.md "The report"): rows
 * keyed by op x message size x group (the /replay type rows) instead of matrix cells, so that
 * one trace replayed on gloo and on mpi, in two runs, compare row by row.  A replay has no
 * raw samples per op (each op's figure is its p50 over the replays): a verdict is the change
 * of the p50 time beyond the threshold alone.
 */
#include "config.h"

#include "report/report.h"

#include <stdlib.h>
#include <string.h>

/* The number of backends in f's /replay (its trace rows). */
static int nbackends(const cp_report_file_t *f)
{
    int n = 0;
    for (size_t i = 0; i < f->nreplay; i++) {
        n += !strcmp(f->replay[i].what, "trace");
    }
    return n;
}

static int same_key(const collprof_replay_row_t *a, const collprof_replay_row_t *b, int backend)
{
    return !strcmp(a->what, b->what) && !strcmp(a->op, b->op) && a->bytes == b->bytes &&
           a->group == b->group && (!backend || !strcmp(a->backend, b->backend));
}

/* A row with a time to compare: a type row replayed (ok or wrong), a whole trace whose
 * replayed ops all came out right (its status the worst: ok, unsupported or skipped). */
static int measured(const collprof_replay_row_t *r)
{
    int trace = !strcmp(r->what, "trace");
    return r->time_p50_us > 0 &&
           (!strcmp(r->status, "ok") || (!trace && !strcmp(r->status, "wrong")) ||
            (trace && (!strcmp(r->status, "unsupported") || !strcmp(r->status, "skipped"))));
}

/* "allreduce 4096B group 0", or "whole trace". */
static const char *row_name(const collprof_replay_row_t *r, char *buf, size_t len)
{
    if (!strcmp(r->what, "trace")) {
        snprintf(buf, len, "whole trace");
    } else {
        snprintf(buf, len, "%s %lluB group %d", r->op, (unsigned long long)r->bytes, r->group);
    }
    return buf;
}

typedef struct tally {
    int compared, regressions, improvements, noise, other, only_base, only_new;
} tally_t;

static const char *verdict(const collprof_replay_row_t *b, const collprof_replay_row_t *n,
                           double threshold, tally_t *t)
{
    if (!measured(b) || !measured(n)) {
        t->other++;
        return measured(b) || measured(n) ? "not comparable" : "not replayed";
    }
    double change = n->time_p50_us / b->time_p50_us - 1;
    t->compared++;
    if (change * 100 > threshold) {
        t->regressions++;
        return "regression";
    }
    if (-change * 100 > threshold) {
        t->improvements++;
        return "improvement";
    }
    t->noise++;
    return strcmp(b->status, n->status) != 0 ? "within noise (not the same ops replayed)"
                                             : "within noise";
}

static void row_line(const collprof_replay_row_t *b, const collprof_replay_row_t *n,
                     double threshold, tally_t *t)
{
    char name[96], bw[32] = "-", tm[32] = "-";
    const char *v = verdict(b, n, threshold, t);
    row_name(b, name, sizeof(name));
    if (b->busbw_gbs > 0 && n->busbw_gbs > 0) {
        snprintf(bw, sizeof(bw), "%.2fx", n->busbw_gbs / b->busbw_gbs);
    }
    if (b->time_p50_us > 0 && n->time_p50_us > 0) {
        snprintf(tm, sizeof(tm), "%.2fx", n->time_p50_us / b->time_p50_us);
    }
    printf("%-36s %-8s %-8s %10.4f %10.4f %8s %12.2f %12.2f %8s  %s\n", name, b->backend,
           n->backend, b->busbw_gbs, n->busbw_gbs, bw, b->time_p50_us, n->time_p50_us, tm, v);
    if (!strcmp(b->what, "trace") && strcmp(b->status, n->status) != 0 && measured(b) &&
        measured(n)) {
        printf("%-36s (BASE %s, NEW %s: a verdict on the ops each side replayed)\n", "", b->status,
               n->status);
    }
    if (!strcmp(b->what, "trace") && b->critical_us > 0 && n->critical_us > 0) {
        printf("%-36s %-8s %-8s %10s %10s %8s %12.2f %12.2f %7.2fx\n", "  its critical path",
               b->backend, n->backend, "", "", "", b->critical_us, n->critical_us,
               n->critical_us / b->critical_us);
    }
}

/* The type and trace rows of base against those of cur; by backend too unless each file
 * replayed on one backend (then one backend against the other). */
static void match_rows(const cp_report_file_t *base, const cp_report_file_t *cur, double threshold,
                       tally_t *t)
{
    int by_backend = !(nbackends(base) == 1 && nbackends(cur) == 1);
    char *used = calloc(cur->nreplay + 1, 1);
    for (size_t i = 0; used != NULL && i < base->nreplay; i++) {
        const collprof_replay_row_t *b = &base->replay[i];
        if (!strcmp(b->what, "op")) {
            continue;
        }
        size_t j = 0;
        while (j < cur->nreplay && (used[j] || !same_key(b, &cur->replay[j], by_backend))) {
            j++;
        }
        if (j < cur->nreplay) {
            used[j] = 1;
            row_line(b, &cur->replay[j], threshold, t);
        } else {
            char name[96];
            printf("only in BASE: %s %s\n", b->backend, row_name(b, name, sizeof(name)));
            t->only_base++;
        }
    }
    for (size_t j = 0; used != NULL && j < cur->nreplay; j++) {
        const collprof_replay_row_t *n = &cur->replay[j];
        if (!used[j] && strcmp(n->what, "op") != 0) {
            char name[96];
            printf("only in NEW:  %s %s\n", n->backend, row_name(n, name, sizeof(name)));
            t->only_new++;
        }
    }
    free(used);
}

int cp_report_replay_compare(const cp_report_file_t *base, const cp_report_file_t *cur,
                             double threshold)
{
    tally_t t;
    memset(&t, 0, sizeof(t));
    printf("# compare BASE %s\n#         NEW  %s\n", base->path, cur->path);
    printf("# replays of a trace: rows by op x size x group; verdict: a change of the p50 time\n"
           "# above %g%% (a replay keeps no raw samples per op: no significance test)\n",
           threshold);
    printf("%-36s %-8s %-8s %10s %10s %8s %12s %12s %8s  %s\n", "# op x size x group", "BASE",
           "NEW", "busBW", "busBW", "busBW", "p50(us)", "p50(us)", "p50", "verdict");
    printf("%-36s %-8s %-8s %10s %10s %8s %12s %12s %8s\n", "#", "backend", "backend", "BASE",
           "NEW", "NEW/BASE", "BASE", "NEW", "NEW/BASE");
    match_rows(base, cur, threshold, &t);
    printf("# %d rows compared: %d regression%s, %d improvement%s, %d within noise", t.compared,
           t.regressions, t.regressions == 1 ? "" : "s", t.improvements,
           t.improvements == 1 ? "" : "s", t.noise);
    if (t.other) {
        printf("; %d not replayed on a side or both", t.other);
    }
    if (t.only_base || t.only_new) {
        printf("; %d only in BASE, %d only in NEW", t.only_base, t.only_new);
    }
    printf("\n");
    return t.regressions > 0 ? CP_REPORT_EXIT_REGRESSION : CP_REPORT_EXIT_OK;
}

/* ---- best: the fastest replay per op x size x group, and of the whole trace ---------- */

typedef struct cand {
    const collprof_replay_row_t *r;
    int file;
} cand_t;

static void cand_name(const cand_t *c, int nfiles, char *buf, size_t len)
{
    if (nfiles > 1) {
        snprintf(buf, len, "%s (file %d)", c->r->backend, c->file + 1);
    } else {
        snprintf(buf, len, "%s", c->r->backend);
    }
}

/* The measured rows of key k (a type or trace row) over every file, in c (at most max). */
static int candidates(cp_report_file_t *const *files, int n, const collprof_replay_row_t *k,
                      cand_t *c, int max)
{
    int nc = 0;
    for (int f = 0; f < n; f++) {
        for (size_t i = 0; i < files[f]->nreplay && nc < max; i++) {
            const collprof_replay_row_t *r = &files[f]->replay[i];
            if (same_key(k, r, 0) && measured(r)) {
                c[nc++] = (cand_t){r, f};
            }
        }
    }
    return nc;
}

static void best_line(cp_report_file_t *const *files, int n, const collprof_replay_row_t *k)
{
    cand_t c[64];
    int nc = candidates(files, n, k, c, 64), best = -1, second = -1;
    for (int i = 0; i < nc; i++) {
        if (best < 0 || c[i].r->time_p50_us < c[best].r->time_p50_us) {
            second = best;
            best = i;
        } else if (second < 0 || c[i].r->time_p50_us < c[second].r->time_p50_us) {
            second = i;
        }
    }
    char name[96], fast[64] = "-", next[64] = "-", by[32] = "-";
    row_name(k, name, sizeof(name));
    if (best >= 0) {
        cand_name(&c[best], n, fast, sizeof(fast));
    }
    if (second >= 0) {
        cand_name(&c[second], n, next, sizeof(next));
        snprintf(by, sizeof(by), "%.2fx", c[second].r->time_p50_us / c[best].r->time_p50_us);
    }
    char p50[32] = "-", bw[32] = "-";
    if (best >= 0) {
        snprintf(p50, sizeof(p50), "%.2f", c[best].r->time_p50_us);
        if (c[best].r->busbw_gbs > 0) {
            snprintf(bw, sizeof(bw), "%.4f", c[best].r->busbw_gbs);
        }
    }
    printf("%-36s %-20s %12s %10s %-20s %8s\n", name, fast, p50, bw, next, by);
}

void cp_report_replay_best(cp_report_file_t *const *files, int n)
{
    printf("# collprof-report best: replays of a trace, %d file%s\n", n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        printf("#   %s (created %s)\n", files[i]->path,
               files[i]->root.created[0] ? files[i]->root.created : "?");
    }
    printf("%-36s %-20s %12s %10s %-20s %8s\n", "# op x size x group", "fastest", "p50(us)",
           "busBW", "runner-up", "slower");
    for (int f = 0; f < n; f++) { /* each key once: at its first row in the files */
        for (size_t i = 0; i < files[f]->nreplay; i++) {
            const collprof_replay_row_t *k = &files[f]->replay[i];
            int seen = !strcmp(k->what, "op");
            for (int g = 0; !seen && g <= f; g++) {
                for (size_t j = 0; j < files[g]->nreplay && !seen; j++) {
                    seen = &files[g]->replay[j] != k && (g < f || j < i) &&
                           same_key(k, &files[g]->replay[j], 0);
                }
            }
            if (!seen) {
                best_line(files, n, k);
            }
        }
    }
    for (int f = 0; f < n; f++) {
        for (size_t i = 0; i < files[f]->nreplay; i++) {
            const collprof_replay_row_t *r = &files[f]->replay[i];
            char name[64];
            cand_t c = {r, f};
            if (!strcmp(r->what, "trace")) {
                cand_name(&c, n, name, sizeof(name));
                printf("# %s: the whole trace %.2f us, critical path %.2f us, %s\n", name,
                       r->time_p50_us, r->critical_us > 0 ? r->critical_us : 0, r->status);
            }
        }
    }
}
