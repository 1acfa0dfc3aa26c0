/*
 * --counters around a cell (src/counters, docs/metrics.md): each node's first rank reads its
 * node's counters just before the warm-up and just after the last timed iteration, outside
 * every timed sample, and keeps the deltas; after the cell's merge, rank 0 gathers them (a
 * count from every rank, the largest broadcast, then that many records from every rank) into
 * the result's /counters rows.  Only for cells run by the whole job over its own channel: not
 * the screen's pairs (alone) nor a group's channel.
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

static int reader(const cell_run_t *c)
{
    return enabled(c) && c->r->boot->local_rank == 0;
}

void cp_runner_counters_before(cell_run_t *c)
{
    if (!reader(c)) {
        return;
    }
    double t0 = cp_now_us();
    if (cp_counters_read(c->r->opt->counters, &c->cnt_before) < 0) {
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
    if (cp_counters_read(c->r->opt->counters, &after) >= 0) {
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

/* Rank 0: the gathered records of every rank that sent some, as rows. */
static void rows_of(const cell_run_t *c, const int *counts, const wire_t *all, int most,
                    cp_result_t *res)
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
            const wire_t *w = &all[(size_t)q * (size_t)most + (size_t)k];
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

void cp_runner_counters_gather(cell_run_t *c, cp_result_t *res)
{
    if (!enabled(c)) {
        return;
    }
    static wire_t mine[WIRE_MAX]; /* no allocation that could fail on one rank alone */
    double t0 = cp_now_us();
    const int root = c->r->boot->rank == 0;
    int n = c->ncnt < WIRE_MAX ? c->ncnt : WIRE_MAX, most = 0;
    /* the counts into the record gather's room on rank 0 (nranks parts of more than an int) */
    int rc = c->oob->gather(&n, root ? (void *)c->gall : (void *)c->gmine, sizeof(n));
    int *counts = root ? calloc((size_t)c->n, sizeof(int)) : NULL;
    wire_t *all = NULL;
    if (root && rc == 0 && counts != NULL) {
        memcpy(counts, c->gall, (size_t)c->n * sizeof(int));
        for (int q = 0; q < c->n; q++) {
            most = counts[q] > most ? counts[q] : most;
        }
        all = most > 0 ? calloc((size_t)c->n * (size_t)most, sizeof(wire_t)) : NULL;
        most = all != NULL ? most : 0; /* out of memory: no counters for this cell */
    }
    rc = rc == 0 ? c->oob->bcast(&most, sizeof(most), 0) : rc;
    if (rc == 0 && most > 0) {
        pack(c, mine, most);
        rc = c->oob->gather(mine, all, (size_t)most * sizeof(wire_t));
    }
    if (root && rc == 0 && most > 0) {
        rows_of(c, counts, all, most, res);
    }
    if (root) { /* bench/counters.sh reads this line */
        cp_log(CP_LOG_DEBUG,
               "counters: %d on this node, its two readings %.0f us, the gather %.0f us", c->ncnt,
               c->cnt_us, cp_now_us() - t0);
    }
    free(all);
    free(counts);
    free(c->cnt);
    c->cnt = NULL;
    c->ncnt = 0;
}
