/*
 * The replay report's skews, stragglers and critical path (src/run/replay_path.c; docs/replay.md
 * "The report", "Memory"): the model run over per-rank cursors that it refills a few records at
 * a time gives every op row the skew, straggler and part of the path, and the path the length,
 * that the computation over every rank's rows at once gave (replay_path_ref.c), to the bit:
 * random traces of 1 to 7 ranks in overlapping groups, with ties in the times and the issues,
 * point-to-point ops, ops of a group of one and ops without an issue time, pulled 1, 2, 3 or
 * 64 records at a time; and traces whose ranks disagree on the order of two collectives (the
 * model stalls: the instances it never completes still have their skews).
 */
#include "config.h"

#include "replay_path_ref.h"
#include "run/replay_path.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 7
#define MAXG 6
#define MAXE 60

typedef struct trace {
    int nr, ng;
    int member[MAXG][MAXR]; /* group g has rank r */
    int size[MAXG];
    collprof_replay_row_t *rows; /* rank after rank */
    uint64_t cnt[MAXR], off[MAXR + 1];
} trace_t;

static unsigned seed = 12345;

static int rnd(int n)
{
    seed = seed * 1103515245u + 12345u;
    return (int)((seed >> 16) % (unsigned)n);
}

static void add_row(trace_t *t, int r, int g, const char *op, int timed)
{
    collprof_replay_row_t *x = &t->rows[t->off[r] + t->cnt[r]++];
    memset(x, 0, sizeof(*x));
    snprintf(x->what, sizeof(x->what), "op");
    snprintf(x->op, sizeof(x->op), "%s", op);
    x->rank = r;
    x->group = g;
    x->group_size = g >= 0 ? t->size[g] : -1;
    x->time_p50_us = rnd(4);
    x->issue_us = timed ? rnd(6) : -1;
    x->skew_us = -1;
    x->straggler = -1;
    x->critical_us = -1;
}

/* A random trace: events in one global order (each rank's ops in it); swap: one rank swaps
 * two of its collectives of different groups. */
static void make(trace_t *t, int swap)
{
    memset(t, 0, sizeof(*t));
    t->nr = 1 + rnd(MAXR);
    t->ng = 1 + rnd(MAXG);
    for (int g = 0; g < t->ng; g++) {
        for (int r = 0; r < t->nr; r++) {
            t->member[g][r] = g == 0 || rnd(2);
            t->size[g] += t->member[g][r];
        }
    }
    t->rows = calloc((size_t)t->nr * MAXE * 2 + 1, sizeof(*t->rows));
    for (int r = 0; r <= t->nr; r++) {
        t->off[r] = (uint64_t)r * MAXE * 2;
    }
    int ne = 1 + rnd(MAXE);
    for (int e = 0; e < ne; e++) {
        int kind = rnd(6), g = rnd(t->ng), r = rnd(t->nr);
        if (kind == 0) {
            add_row(t, r, -1, "send", 1);
        } else if (kind == 1) {
            add_row(t, r, g, "allreduce", 0);
        } else {
            for (int q = 0; q < t->nr; q++) {
                if (t->member[g][q]) {
                    add_row(t, q, g, kind == 2 ? "broadcast" : "allreduce", rnd(12) != 0);
                }
            }
        }
    }
    for (int r = 0; swap && r < t->nr; r++) {
        collprof_replay_row_t *x = &t->rows[t->off[r]];
        for (uint64_t i = 0; i + 1 < t->cnt[r]; i++) {
            if (x[i].group != x[i + 1].group && x[i].group >= 0 && x[i + 1].group >= 0 &&
                x[i].issue_us >= 0 && x[i + 1].issue_us >= 0 && rnd(3) == 0) {
                collprof_replay_row_t y = x[i];
                x[i] = x[i + 1];
                x[i + 1] = y;
                break;
            }
        }
    }
}

typedef struct src {
    const trace_t *t;
    uint64_t sent[MAXR];
    int rounds;
} src_t;

static int pull(void *arg, cp_path_t *p)
{
    src_t *s = arg;
    s->rounds++;
    for (int r = 0; r < s->t->nr; r++) {
        size_t m = cp_path_want(p, r);
        cp_prec_t rec[64];
        for (size_t i = 0; i < m; i++) {
            cp_prec_of(&s->t->rows[s->t->off[r] + s->sent[r] + i], &rec[i]);
        }
        if (m > 0 && cp_path_feed(p, r, rec, m) != 0) {
            return -1;
        }
        s->sent[r] += m;
    }
    return 0;
}

/* The streaming model's figures on the rows of t (out[]), its length. */
static double stream(const trace_t *t, size_t per, collprof_replay_row_t *out, int *rounds)
{
    cp_path_t *p = cp_path_new(t->nr, t->cnt, per);
    src_t s = {.t = t};
    for (int r = 0; p != NULL && r < t->nr; r++) {
        cp_gcount_t gc[MAXG];
        size_t m = 0;
        for (int g = 0; g < t->ng; g++) {
            gc[m] = (cp_gcount_t){.group = g};
            for (uint64_t i = 0; i < t->cnt[r]; i++) {
                cp_prec_t c;
                cp_prec_of(&t->rows[t->off[r] + i], &c);
                gc[m].count += c.kind == CP_PREC_COLL && c.group == g;
            }
            m += gc[m].count > 0;
        }
        cp_path_counts(p, r, gc, m);
    }
    double len = p != NULL ? cp_path_run(p, pull, &s) : -1;
    for (int r = 0; len >= 0 && r < t->nr; r++) {
        int64_t k[MAXG] = {0};
        for (uint64_t i = 0; i < t->cnt[r]; i++) {
            collprof_replay_row_t *x = &out[t->off[r] + i];
            cp_prec_t c;
            *x = t->rows[t->off[r] + i];
            cp_prec_of(x, &c);
            cp_path_row(p, r, i, &c, c.kind == CP_PREC_COLL ? k[c.group]++ : -1, x);
        }
    }
    cp_path_free(p);
    *rounds = s.rounds;
    return len;
}

/* Do the two computations agree on t, pulled per records at a time? */
static int same(const trace_t *t, size_t per, char *why, size_t len)
{
    size_t n = 0;
    ref_rpath_t *all = calloc((size_t)t->nr * MAXE * 2 + 1, sizeof(*all));
    collprof_replay_row_t *out = calloc((size_t)t->nr * MAXE * 2 + 1, sizeof(*out));
    uint64_t at[MAXR * MAXE * 2];
    for (int r = 0; r < t->nr; r++) {
        for (uint64_t i = 0; i < t->cnt[r]; i++) {
            at[n] = t->off[r] + i;
            ref_rpath_of(&t->rows[t->off[r] + i], &all[n++]);
        }
    }
    double want = ref_replay_path(all, n);
    int rounds = 0, ok = 1;
    double got = stream(t, per, out, &rounds);
    if (got != want) {
        snprintf(why, len, "length %g, want %g", got, want);
        ok = 0;
    }
    for (size_t i = 0; ok && i < n; i++) {
        const collprof_replay_row_t *x = &out[at[i]];
        if (x->skew_us != all[i].skew_us || x->straggler != all[i].straggler ||
            x->critical_us != all[i].critical_us) {
            snprintf(why, len, "row %zu (rank %d): skew %g/%g straggler %d/%d critical %g/%g", i,
                     x->rank, x->skew_us, all[i].skew_us, x->straggler, all[i].straggler,
                     x->critical_us, all[i].critical_us);
            ok = 0;
        }
    }
    free(all);
    free(out);
    return ok;
}

int main(void)
{
    static const size_t pers[] = {1, 2, 3, 64};
    for (int swap = 0; swap < 2; swap++) {
        int bad = 0, n = 0;
        char why[256] = "";
        for (int i = 0; i < 400 && !bad; i++) {
            trace_t t;
            make(&t, swap);
            for (size_t j = 0; j < sizeof(pers) / sizeof(pers[0]) && !bad; j++, n++) {
                bad = !same(&t, pers[j], why, sizeof(why));
                if (bad) {
                    fprintf(stderr, "# trace %d (%d ranks, %d groups), %zu a pull: %s\n", i, t.nr,
                            t.ng, pers[j], why);
                }
            }
            free(t.rows);
        }
        ok(!bad, "%s: the streaming model agrees with the whole computation (%d runs)",
           swap ? "ranks that disagree on the order" : "consistent traces", n);
    }
    return tap_done();
}
