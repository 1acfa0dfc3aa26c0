#include "config.h"

#include "screen/run/sweep.h"

#include "colls/colls.h"
#include "screen/links.h"
#include "base/log.h"
#include "screen/path.h"
#include "screen/screen.h"
#include "screen/screen_out.h"
#include "base/stats.h"

#include <stdlib.h>
#include <string.h>

const char *cp_sweep_kind(const cp_options_t *opt, const cp_cell_t *cell)
{
    uint64_t bytes = cell->count * collprof_dtype_size(cell->dtype);
    return bytes >= opt->sweep_bytes[1] ? "bandwidth" : "latency";
}

void cp_sweep_rows_free(cp_sweep_rows_t *out)
{
    free(out->rows);
    memset(out, 0, sizeof(*out));
}

/* The rank with local rank 0 on each node ([nnodes]), -1 where none. */
static int *node_leaders(const cp_boot_t *b)
{
    int *lead = malloc(sizeof(int) * (size_t)(b->nnodes > 0 ? b->nnodes : 1));
    for (int nd = 0; lead != NULL && nd < b->nnodes; nd++) {
        lead[nd] = -1;
    }
    for (int q = 0; lead != NULL && q < b->nranks; q++) {
        int nd = b->node_ids[q];
        if (nd >= 0 && nd < b->nnodes && lead[nd] < 0 && b->local_ranks[q] == 0) {
            lead[nd] = q;
        }
    }
    return lead;
}

/* This rank's partner: the leader of its node's partner node (nodes[] of the round), or
 * itself. */
static int my_peer(const cp_boot_t *b, const int *lead, const int *nodes)
{
    if (b->local_rank != 0 || lead[b->node_id] != b->rank) {
        return b->rank;
    }
    int other = nodes[b->node_id];
    return other >= 0 && lead[other] >= 0 ? lead[other] : b->rank;
}

static collprof_link_row_t *next_row(cp_sweep_rows_t *out)
{
    if (out->nrows == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 16;
        collprof_link_row_t *g = realloc(out->rows, cap * sizeof(*g));
        if (g == NULL) {
            return NULL;
        }
        out->rows = g;
        out->cap = cap;
    }
    collprof_link_row_t *row = &out->rows[out->nrows++];
    memset(row, 0, sizeof(*row));
    return row;
}

/* The figures of pair (ra, rb) from the round's samples: per iteration, the slower rank. */
static void pair_figures(const cp_result_t *res, int ra, int rb, collprof_link_row_t *row)
{
    int iters = res->iters;
    double *m = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    /* every rank's samples: rank 0's (the others hold their own alone) */
    if (m == NULL || res->samples == NULL || res->srows != res->nranks || iters < 1) {
        free(m);
        return;
    }
    for (int i = 0; i < iters; i++) {
        double a = res->samples[(size_t)ra * (size_t)iters + (size_t)i];
        double b = res->samples[(size_t)rb * (size_t)iters + (size_t)i];
        m[i] = a > b ? a : b;
    }
    cp_stats_t st;
    cp_stats_compute(m, iters, &st);
    free(m);
    row->time_mean_us = st.mean;
    row->time_min_us = st.min;
    row->time_p50_us = st.p50;
    row->bw_gbs = st.mean > 0 ? (double)row->bytes / st.mean * 1e-3 : 0;
    row->bw_best_gbs = st.min > 0 ? (double)row->bytes / st.min * 1e-3 : 0;
}

/* The pair's #wrong, status and reason: its two ranks' where rank 0 has every rank's count
 * (one bad pair does not make the round's other pairs wrong), else the round's. */
static void pair_verdict(const cp_result_t *res, int ra, int rb, collprof_link_row_t *row)
{
    row->wrong = res->fig.wrong;
    collprof_cell_status_t st = res->fig.status;
    const char *why = res->fig.reason;
    char own[64];
    if (res->fig.status == COLLPROF_CELL_WRONG && res->rank_wrong != NULL) {
        row->wrong = res->rank_wrong[ra] + res->rank_wrong[rb];
        snprintf(own, sizeof(own), "%llu wrong elements", (unsigned long long)row->wrong);
        st = row->wrong > 0 ? COLLPROF_CELL_WRONG : COLLPROF_CELL_OK;
        why = row->wrong > 0 ? own : "";
    }
    snprintf(row->status, sizeof(row->status), "%s", collprof_cell_status_name(st));
    snprintf(row->error, sizeof(row->error), "%s", why);
}

/* One row per pair of the round; the progress line on rank 0. */
static int round_rows(cp_runner_t *r, const cp_cell_t *cell, const int *lead, const int *nodes,
                      int round, const cp_result_t *res, cp_sweep_rows_t *out, FILE *progress)
{
    const cp_boot_t *b = r->boot;
    const cp_plugin_t *p = &r->plugins[cell->plugin];
    int measured = res->fig.status == COLLPROF_CELL_OK || res->fig.status == COLLPROF_CELL_WRONG;
    for (int na = 0; na < b->nnodes; na++) {
        int nb = nodes[na];
        if (nb <= na || lead[na] < 0 || lead[nb] < 0) {
            continue;
        }
        collprof_link_row_t *row = next_row(out);
        if (row == NULL) {
            return -1;
        }
        snprintf(row->backend, sizeof(row->backend), "%s", p->name);
        snprintf(row->kind, sizeof(row->kind), "%s", cp_sweep_kind(r->opt, cell));
        row->bytes = cell->count * collprof_dtype_size(cell->dtype);
        row->node_a = na;
        row->node_b = nb;
        row->rank_a = lead[na];
        row->rank_b = lead[nb];
        row->round = round;
        row->iterations = cell->iters;
        snprintf(row->path, sizeof(row->path), "%s",
                 cp_path_name(cp_path_of(r->node_leaf, na, nb)));
        pair_verdict(res, lead[na], lead[nb], row);
        if (measured) {
            pair_figures(res, lead[na], lead[nb], row);
            if (strcmp(row->kind, "bandwidth") == 0) { /* 8 bytes: below the overhead */
                cp_sweep_path(r, cell, res, na, nb, row);
            }
        }
        if (progress != NULL) { /* the figures the verdict judges: the p50s */
            fprintf(progress, "  %s-%s %.2f GB/s %.1f us%s%s", cp_boot_host(b, lead[na]),
                    cp_boot_host(b, lead[nb]), cp_screen_row_bw_gbs(row), row->time_p50_us,
                    measured ? "" : " ", measured ? "" : row->status);
        }
    }
    return 0;
}

int *cp_sweep_leaders(const cp_boot_t *b)
{
    return node_leaders(b);
}

int cp_sweep_round(cp_runner_t *r, const cp_cell_t *cell, const int *lead, const int *nodes,
                   int round, const char *title, const char *what, cp_sweep_rows_t *out,
                   FILE *progress)
{
    cp_cell_t c = *cell;
    c.sweep = 1;
    c.peer = my_peer(r->boot, lead, nodes);
    cp_result_t res;
    cp_log(CP_LOG_INFO, "%s %s %s %s: exchanging with rank %d", title,
           r->plugins[cell->plugin].name, cp_sweep_kind(r->opt, cell), what, c.peer);
    cp_run_cell(r, &c, &res);
    if (progress != NULL) {
        fprintf(progress, "# %s %s %s %llu B, %s:", title, r->plugins[c.plugin].name,
                cp_sweep_kind(r->opt, cell),
                (unsigned long long)(c.count * collprof_dtype_size(c.dtype)), what);
    }
    int rc = round_rows(r, cell, lead, nodes, round, &res, out, progress);
    if (progress != NULL) {
        fprintf(progress, "%s%s\n", res.fig.reason[0] ? " -- " : "", res.fig.reason);
        fflush(progress);
    }
    int bad = res.fig.status == COLLPROF_CELL_WRONG || res.fig.status == COLLPROF_CELL_ERROR;
    cp_result_free(&res);
    return rc != 0 ? -1 : bad;
}

int cp_sweep_cell(cp_runner_t *r, const cp_cell_t *cell, cp_sweep_rows_t *out, FILE *progress)
{
    const cp_boot_t *b = r->boot;
    int rounds = cp_links_rounds(b->nnodes), worst = 0;
    int *lead = node_leaders(b);
    int *nodes = malloc(sizeof(int) * (size_t)(b->nnodes > 0 ? b->nnodes : 1));
    if (lead == NULL || nodes == NULL) {
        free(lead);
        free(nodes);
        return -1;
    }
    for (int k = 0; k < rounds; k++) {
        for (int nd = 0; nd < b->nnodes; nd++) {
            nodes[nd] = cp_links_partner(b->nnodes, k, nd);
        }
        char what[48];
        snprintf(what, sizeof(what), "round %d/%d", k + 1, rounds);
        int rc = cp_sweep_round(r, cell, lead, nodes, k, "link sweep", what, out, progress);
        if (rc < 0) {
            worst = -1;
            break;
        }
        worst |= rc;
    }
    free(lead);
    free(nodes);
    return worst;
}

/* The screen pair of nodes (a, b) in s, appended when new. */
static cp_screen_pair_t *pair_of(cp_screen_t *s, size_t from, int a, int b, int phase, int round)
{
    for (size_t i = from; i < s->npairs; i++) {
        if (s->pairs[i].a == a && s->pairs[i].b == b) {
            return &s->pairs[i];
        }
    }
    cp_screen_pair_t p = {.a = a, .b = b, .phase = phase, .round = round};
    return cp_screen_add(s, &p) == 0 ? &s->pairs[s->npairs - 1] : NULL;
}

/* Rank 0: the sweep rows [from, end) of one round (a latency and a bandwidth row per pair)
 * as screen pairs.  A pair is measured when both rows are ok, failed when either is wrong or
 * an error, timed out when either timed out. */
int cp_screen_add_round(cp_screen_t *s, const cp_sweep_rows_t *rows, size_t from, int phase,
                        int round)
{
    size_t first = s->npairs;
    for (size_t i = from; i < rows->nrows; i++) {
        const collprof_link_row_t *row = &rows->rows[i];
        cp_screen_pair_t *p = pair_of(s, first, row->node_a, row->node_b, phase, round);
        if (p == NULL) {
            return -1;
        }
        cp_screen_pair_merge(p, row);
    }
    return 0;
}
