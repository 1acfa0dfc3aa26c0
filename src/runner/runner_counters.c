/*
 * --counters around a cell (src/counters, docs/metrics.md): each node's first rank reads its
 * node's counters just before the warm-up and just after the last timed iteration, outside
 * every timed sample, and keeps the deltas; after the cell's merge, rank 0 gathers them into
 * the result's /counters rows: a count from every rank (4 bytes), then the node leaders' records
 * alone, each leader's in one side message to rank 0 (cp_oob_side_*: O(nodes x counters) bytes;
 * the other ranks send nothing), or, where side messages are off (PMIx channel, a leader without
 * a side link), the largest count broadcast and that many records from every rank.  Only for
 * cells run by the whole job over its own channel, not a group's; the screen's pairs (alone,
 * cp_runner_t.read_counters) keep their own node's rows, gathered by nobody.
 */
#include "config.h"

#include "runner/runner_int.h"

#include "base/log.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

/* One delta on the wire. */
typedef struct wire {
    char name[64], unit[16], source[8];
    int32_t kind, pad;
    int64_t ops;
    double delta;
} wire_t;
_Static_assert(sizeof(wire_t) == 112, "docs/metrics.md states the records' size");

/* Counters one node sends per cell, at most (a 112 KiB buffer: 112-byte records). */
#define WIRE_MAX 1024

static int enabled(const cell_run_t *c)
{
    return c->r->opt->counters != 0 && !c->r->alone && c->r->oob == NULL;
}

/* A screen's pair: this leader reads its node's counters for its own result alone. */
static int own(const cell_run_t *c)
{
    return (c->r->opt->counters & (CP_CNT_NET | CP_CNT_IB)) != 0 && c->r->alone &&
           c->r->read_counters;
}

/* The sources read: a screen's pair needs the NICs' alone (its path check). */
static unsigned mask(const cell_run_t *c)
{
    return own(c) ? c->r->opt->counters & (CP_CNT_NET | CP_CNT_IB) : c->r->opt->counters;
}

static int reader(const cell_run_t *c)
{
    return (enabled(c) || own(c)) && c->r->boot->local_rank == 0;
}

void cp_runner_counters_before(cell_run_t *c)
{
    if (!reader(c)) {
        return;
    }
    double t0 = cp_now_us();
    if (cp_counters_read(mask(c), &c->cnt_before) < 0) {
        cp_counters_free(&c->cnt_before);
    }
    c->cnt_us = cp_now_us() - t0;
}

void cp_runner_counters_after(cell_run_t *c)
{
    if (!reader(c) || c->cnt_before.n == 0) {
        cp_counters_free(&c->cnt_before);
        return;
    }
    cp_cnt_snap_t after = {0};
    double t0 = cp_now_us();
    if (cp_counters_read(mask(c), &after) >= 0) {
        c->cnt = calloc((size_t)c->cnt_before.n + 2, sizeof(*c->cnt));
        c->ncnt = c->cnt != NULL ? cp_counters_delta(&c->cnt_before, &after, c->cnt) : 0;
    }
    c->cnt_ops = c->ops > 0 ? c->ops : (long)c->cell->warmup + c->iters;
    cp_counters_free(&after);
    cp_counters_free(&c->cnt_before);
    c->cnt_us += cp_now_us() - t0;
}

/* This rank's deltas as most records (the rest zero). */
static void pack(const cell_run_t *c, wire_t *w, int most)
{
    memset(w, 0, (size_t)most * sizeof(*w));
    for (int k = 0; k < c->ncnt && k < most; k++) {
        memcpy(w[k].name, c->cnt[k].name, sizeof(w[k].name));
        memcpy(w[k].unit, c->cnt[k].unit, sizeof(w[k].unit));
        memcpy(w[k].source, c->cnt[k].source, sizeof(w[k].source));
        w[k].kind = c->cnt[k].kind;
        w[k].ops = c->cnt_ops;
        w[k].delta = c->cnt[k].delta;
    }
}

/* Rank 0: the gathered records of every rank that sent some (rank q's at all + off[q]; off
 * NULL: at all + q x most), as rows. */
static void rows_of(const cell_run_t *c, const int *counts, const wire_t *all, const size_t *off,
                    int most, cp_result_t *res)
{
    size_t total = 0;
    for (int q = 0; q < c->n; q++) {
        total += (size_t)counts[q];
    }
    res->counters = calloc(total > 0 ? total : 1, sizeof(*res->counters));
    if (res->counters == NULL) {
        return;
    }
    const cp_boot_t *b = c->r->boot;
    for (int q = 0; q < c->n; q++) {
        for (int k = 0; k < counts[q] && k < most; k++) {
            size_t at = off != NULL ? off[q] : (size_t)q * (size_t)most;
            const wire_t *w = &all[at + (size_t)k];
            collprof_counter_row_t *row = &res->counters[res->ncounters++];
            row->node = b->node_ids != NULL ? b->node_ids[q] : q;
            snprintf(row->host, sizeof(row->host), "%s",
                     b->node_names != NULL && b->node_ids != NULL ? cp_boot_host(b, q) : "");
            snprintf(row->source, sizeof(row->source), "%.7s", w->source);
            snprintf(row->name, sizeof(row->name), "%.63s", w->name);
            snprintf(row->unit, sizeof(row->unit), "%.15s", w->unit);
            snprintf(row->kind, sizeof(row->kind), "%s",
                     w->kind == CP_CNT_GAUGE ? "gauge" : "counter");
            row->delta = w->delta;
            row->ops = w->ops;
            row->per_op = w->kind == CP_CNT_GAUGE || w->ops <= 0 ? 0 : w->delta / (double)w->ops;
        }
    }
}

/* A screen's pair: this rank's own deltas as its result's rows (its node's). */
static void own_rows(cell_run_t *c, cp_result_t *res)
{
    static wire_t mine[WIRE_MAX];
    int n = c->ncnt < WIRE_MAX ? c->ncnt : WIRE_MAX, counts[1] = {n};
    cell_run_t one = *c;
    one.n = 1;
    pack(c, mine, n);
    if (n > 0) {
        rows_of(&one, counts, mine, NULL, n, res);
    }
    const cp_boot_t *b = c->r->boot;
    for (int k = 0; k < res->ncounters; k++) { /* rank 0 of the job is not this one */
        res->counters[k].node = b->node_id;
        snprintf(res->counters[k].host, sizeof(res->counters[k].host), "%s", b->hostname);
    }
}

/* Rank 0: every leader's records, each leader's side message of counts[q] records, into all
 * (its own first).  0, or -1 (a leader lost: no counters for this cell). */
static int side_collect(const cell_run_t *c, const int *counts, const wire_t *mine, wire_t *all,
                        size_t *off)
{
    unsigned char *wait = calloc((size_t)c->n, 1);
    size_t at = 0;
    int rc = wait != NULL ? 0 : -1;
    for (int q = 0; q < c->n && rc == 0; q++) {
        off[q] = at;
        if (q == 0 && counts[q] > 0) {
            memcpy(all, mine, (size_t)counts[q] * sizeof(wire_t));
        } else if (counts[q] > 0) {
            int from = -1;
            wait[q] = 1;
            int got = cp_oob_side_poll(wait, c->tmo > 0 ? c->tmo : 60.0, &from, all + at,
                                       (size_t)counts[q] * sizeof(wire_t));
            wait[q] = 0;
            rc = got == 1 && from == q ? 0 : -1;
            if (rc != 0) {
                cp_log(CP_LOG_WARN,
                       "counters: no records from rank %d's node (%d): none kept "
                       "for this cell",
                       q, got);
            }
        }
        at += (size_t)counts[q];
    }
    free(wait);
    return rc;
}

/* The counts of every rank on rank 0 (c->gall, then counts), then how the records come,
 * broadcast: how[0] the largest count, how[1] 1 when every leader with records can send them to
 * rank 0 by a side message; rank 0's room for them in *all (out of memory: no counters for
 * this cell, how[0] = 0). */
static int plan(cell_run_t *c, int n, int *counts, int *how, wire_t **all)
{
    const int root = c->r->boot->rank == 0;
    int rc = c->oob->gather(&n, root ? (void *)c->gall : (void *)c->gmine, sizeof(n));
    how[0] = how[1] = 0;
    if (root && rc == 0 && counts != NULL) {
        memcpy(counts, c->gall, (size_t)c->n * sizeof(int));
        size_t total = 0;
        how[1] = 1;
        for (int q = 0; q < c->n; q++) {
            how[0] = counts[q] > how[0] ? counts[q] : how[0];
            how[1] = how[1] && (q == 0 || counts[q] == 0 || cp_oob_side_ok(q));
            total += (size_t)counts[q];
        }
        total = how[1] ? total : (size_t)c->n * (size_t)how[0];
        *all = total > 0 ? calloc(total, sizeof(wire_t)) : NULL;
        how[0] = *all != NULL ? how[0] : 0;
    }
    return rc == 0 ? c->oob->bcast(how, 2 * sizeof(int), 0) : rc;
}

/* Rank 0: the control channel's payload bytes received so far. */
static unsigned long long got_bytes(void)
{
    cp_oob_stats_t st;
    cp_oob_stats(&st);
    return st.tcp_got_bytes + st.got_bytes;
}

void cp_runner_counters_gather(cell_run_t *c, cp_result_t *res)
{
    if (own(c) && c->r->boot->local_rank == 0) {
        own_rows(c, res);
    }
    if (!enabled(c)) {
        free(c->cnt);
        c->cnt = NULL;
        c->ncnt = 0;
        return;
    }
    static wire_t mine[WIRE_MAX]; /* no allocation that could fail on one rank alone */
    const double t0 = cp_now_us();
    const unsigned long long b0 = got_bytes();
    const int root = c->r->boot->rank == 0;
    int n = c->ncnt < WIRE_MAX ? c->ncnt : WIRE_MAX, how[2] = {0, 0};
    int *counts = root ? calloc((size_t)c->n, sizeof(int)) : NULL;
    size_t *off = root ? calloc((size_t)c->n, sizeof(size_t)) : NULL;
    if (off == NULL) {
        free(counts);
        counts = NULL;
    }
    wire_t *all = NULL;
    int rc = plan(c, n, counts, how, &all); /* on every rank: it is collective */
    if (rc == 0 && how[0] > 0 && how[1]) {  /* the leaders alone, each in one side message */
        pack(c, mine, n);
        if (!root && n > 0) {
            rc = cp_oob_side_up(mine, (size_t)n * sizeof(wire_t));
        } else if (root && all != NULL) {
            rc = side_collect(c, counts, mine, all, off);
        }
    } else if (rc == 0 && how[0] > 0) { /* every rank, the largest count each */
        pack(c, mine, how[0]);
        rc = c->oob->gather(mine, all, (size_t)how[0] * sizeof(wire_t));
    }
    if (root && rc == 0 && all != NULL) {
        rows_of(c, counts, all, how[1] ? off : NULL, how[1] ? WIRE_MAX : how[0], res);
    }
    if (root) { /* bench/counters_overhead.sh reads this line */
        cp_log(CP_LOG_DEBUG,
               "counters: %d on this node, its two readings %.0f us, the gather %.0f us, %llu "
               "bytes to rank 0 (%s)",
               c->ncnt, c->cnt_us, cp_now_us() - t0, got_bytes() - b0,
               how[1] ? "node leaders' side messages" : "every rank");
    }
    free(all);
    free(counts);
    free(off);
    free(c->cnt);
    c->cnt = NULL;
    c->ncnt = 0;
}
