#include "config.h"

/*
 * The path check of the screen's pairs (docs/screen.md "Which NIC the pair's bytes took"): each
 * end of a pair, its node's leader, reads its node's NIC counters around the bandwidth test
 * (the runner's readings, cp_runner_t.read_counters) and sets the bytes its NICs moved per
 * operation against the message size (the pair's bound: each end sends and receives it once
 * per operation, counters/path_check.h), naming the interfaces that carried them; rank 0 puts
 * the two ends' checks on the pair's /links bandwidth row.  A round run as a cell of the whole
 * job (mpi, the link sweep: cp_sweep_path) has every node's rows on rank 0, and each pair's
 * row is checked from its two nodes' there.  Reported beside the pair's figures: it changes no
 * judgement.
 */

#include "screen/run/screen_pairs_int.h"
#include "screen/run/sweep.h"

#include "counters/path_check.h"

#include <stdio.h>
#include <string.h>

/* name appended to the comma-separated list buf (room len) unless it is there already. */
static void add_name(char *buf, size_t len, const char *name)
{
    size_t n = strlen(name), at = strlen(buf);
    for (const char *p = buf; *p != '\0';) {
        size_t k = strcspn(p, ",");
        if (k == n && strncmp(p, name, n) == 0) {
            return;
        }
        p += k + (p[k] == ',');
    }
    if (n > 0 && at + n + 2 <= len) {
        snprintf(buf + at, len - at, "%s%s", at > 0 ? "," : "", name);
    }
}

/* The check of node's rows among rows[0..n) for a pair exchanging bytes each way per
 * operation on backend into e. */
static void end_of(const char *backend, uint64_t bytes, const collprof_counter_row_t *rows,
                   size_t n, int node, end_rec_t *e)
{
    char exp[256];
    cp_path_cell_t pc = {.op = "sendrecv",
                         .bytes = bytes,
                         .nodes = 2,
                         .ppn = 1,
                         .root_node = -1,
                         .expected = cp_path_expected(backend, exp, sizeof(exp)),
                         .pair = 1};
    cp_path_node_t p;
    int have = 0;
    for (size_t k = 0; k < n && !have; k++) {
        have = rows[k].node == node;
    }
    if (!have) {
        return; /* no rows of that node: not checked */
    }
    e->path = (int32_t)cp_path_check(&pc, rows, n, node, &p) + 1;
    e->path_ratio = p.ratio;
    for (int i = 0; i < p.nvia; i++) {
        add_name(e->path_via, sizeof(e->path_via), p.via[i]);
    }
    snprintf(e->path_expected, sizeof(e->path_expected), "%.47s", exp);
}

void cp_pairs_path_end(const cp_pairs_run_t *pr, const cp_cell_t *c, const cp_result_t *res,
                       end_rec_t *e)
{
    if (res->counters != NULL && res->ncounters > 0) {
        end_of(pr->r->plugins[c->plugin].name, c->count * collprof_dtype_size(c->dtype),
               res->counters, (size_t)res->ncounters, pr->r->boot->node_id, e);
    }
}

void cp_sweep_path(const cp_runner_t *r, const cp_cell_t *cell, const cp_result_t *res, int na,
                   int nb, collprof_link_row_t *row)
{
    if (res->counters == NULL || res->ncounters <= 0) {
        return;
    }
    end_rec_t e[2];
    memset(e, 0, sizeof(e));
    const char *backend = r->plugins[cell->plugin].name;
    uint64_t bytes = cell->count * collprof_dtype_size(cell->dtype);
    end_of(backend, bytes, res->counters, (size_t)res->ncounters, na, &e[0]);
    end_of(backend, bytes, res->counters, (size_t)res->ncounters, nb, &e[1]);
    cp_pairs_path_row(&e[0], &e[1], row);
}

void cp_pairs_path_row(const end_rec_t *ea, const end_rec_t *eb, collprof_link_row_t *row)
{
    if (ea->path == 0 && eb->path == 0) {
        return; /* neither end checked: the column stays empty */
    }
    /* the graver end's verdict (cp_path_verdict_t is in order of gravity) */
    int v = (ea->path > eb->path ? ea->path : eb->path) - 1;
    snprintf(row->nic_path, sizeof(row->nic_path), "%s",
             cp_path_verdict_name((cp_path_verdict_t)v));
    row->nic_ratio = ea->path_ratio > eb->path_ratio ? ea->path_ratio : eb->path_ratio;
    const end_rec_t *ends[2] = {ea, eb};
    for (int k = 0; k < 2; k++) {
        for (const char *p = ends[k]->path_via; *p != '\0';) {
            size_t n = strcspn(p, ",");
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)(n < 63 ? n : 63), p);
            add_name(row->nic_via, sizeof(row->nic_via), name);
            p += n + (p[n] == ',');
        }
    }
    snprintf(row->nic_expected, sizeof(row->nic_expected), "%s",
             ea->path_expected[0] != '\0' ? ea->path_expected : eb->path_expected);
}
