/* The path check (src/counters/path_check.c) over a table of cells: the lower bound of each op,
 * the interfaces that carried the bytes, and the verdicts ok, other-nic, excess, unknown; the
 * rows it writes and the summary's line of a flagged verdict (src/format/cflags_path.c). */
#include "config.h"

#include "counters/path_check.h"
#include "format/cflags.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MIB 1048576.0

/* one interface of a node: source, name of its byte counters' stem, bytes out and in */
typedef struct {
    const char *source, *iface;
    double tx, rx;
} nic_t;

typedef struct {
    const char *what, *op;
    double bytes;
    int nodes, ppn, root_node;
    const char *expected;
    nic_t nics[4];
    const char *verdict, *via0; /* via0: the first carrier, NULL: none */
    double bound;               /* B/op */
} case_t;

static const int OPS = 10, NODE = 1;

/* The case's rows: its node's interfaces, and a decoy node 0 that must not count. */
static size_t rows_of(const case_t *c, collprof_counter_row_t *r)
{
    size_t n = 0;
    for (int i = 0; i < 4 && c->nics[i].source != NULL; i++) {
        const nic_t *x = &c->nics[i];
        const int ib = strcmp(x->source, "ib") == 0;
        for (int d = 0; d < 2; d++) {
            memset(&r[n], 0, sizeof(r[n]));
            r[n].node = NODE;
            snprintf(r[n].source, sizeof(r[n].source), "%s", x->source);
            snprintf(r[n].name, sizeof(r[n].name), "%s/%s", x->iface,
                     ib ? (d ? "port_rcv_data" : "port_xmit_data") : (d ? "rx_bytes" : "tx_bytes"));
            snprintf(r[n].kind, sizeof(r[n].kind), "counter");
            r[n].delta = (d ? x->rx : x->tx) * OPS;
            r[n++].ops = OPS;
        }
    }
    memset(&r[n], 0, sizeof(r[n]));
    snprintf(r[n].source, sizeof(r[n].source), "net");
    snprintf(r[n].name, sizeof(r[n].name), "eth9/tx_bytes");
    snprintf(r[n].kind, sizeof(r[n].kind), "counter");
    r[n].delta = 1e12;
    r[n++].ops = OPS;
    return n;
}

static const case_t cases[] = {
    {"allreduce 2 nodes, on the expected eth0",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 1.03 * MIB, 1.03 * MIB}, {"net", "lo", 50 * MIB, 50 * MIB}},
     "ok",
     "eth0",
     MIB},
    {"allreduce 4 nodes: 2(n-1)/n",
     "allreduce",
     MIB,
     4,
     1,
     0,
     "eth0",
     {{"net", "eth0", 1.55 * MIB, 1.5 * MIB}},
     "ok",
     "eth0",
     1.5 * MIB},
    {"allreduce 4 nodes, 2 ranks each: the node's bound is the same",
     "allreduce",
     MIB,
     4,
     2,
     0,
     "eth0",
     {{"net", "eth0", 1.6 * MIB, 1.6 * MIB}},
     "ok",
     "eth0",
     1.5 * MIB},
    {"allreduce steered to eth1",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 3000, 3000}, {"net", "eth1", 1.02 * MIB, 1.02 * MIB}},
     "other-nic",
     "eth1",
     MIB},
    {"allreduce split over eth0 and eth1",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 0.5 * MIB, 0.5 * MIB}, {"net", "eth1", 0.52 * MIB, 0.52 * MIB}},
     "other-nic",
     "eth1",
     MIB},
    {"a list of expected interfaces",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0,eth1",
     {{"net", "eth0", 0.5 * MIB, 0.5 * MIB}, {"net", "eth1", 0.52 * MIB, 0.52 * MIB}},
     "ok",
     "eth1",
     MIB},
    {"a small share elsewhere is not a carrier",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", MIB, MIB}, {"net", "eth1", 0.05 * MIB, 0.05 * MIB}},
     "ok",
     "eth0",
     MIB},
    {"allreduce 3x the bound: excess",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 3 * MIB, 3 * MIB}},
     "excess",
     "eth0",
     MIB},
    {"1.9x the bound: not excess",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 1.9 * MIB, 1.9 * MIB}},
     "ok",
     "eth0",
     MIB},
    {"small allreduce: the fixed overhead allowed",
     "allreduce",
     1024,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 4000, 4000}},
     "ok",
     "eth0",
     1024},
    {"no expected interface: other-nic not judged",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "",
     {{"net", "eth1", MIB, MIB}},
     "ok",
     "eth1",
     MIB},
    {"no byte counters: unknown",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{NULL, NULL, 0, 0}},
     "unknown",
     NULL,
     MIB},
    {"lo alone (the bytes did not show on a NIC): unknown",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "lo", 2 * MIB, 2 * MIB}},
     "unknown",
     NULL,
     MIB},
    {"under half the bound: unknown",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", 0.3 * MIB, 0.3 * MIB}},
     "unknown",
     "eth0",
     MIB},
    {"allgather 4 nodes: (n-1)/n of the output",
     "allgather",
     4 * MIB,
     4,
     1,
     0,
     "eth0",
     {{"net", "eth0", 3 * MIB, 3 * MIB}},
     "ok",
     "eth0",
     3 * MIB},
    {"reducescatter 2 nodes",
     "reducescatter",
     2 * MIB,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth0", MIB, MIB}},
     "ok",
     "eth0",
     MIB},
    {"alltoall 2 nodes, 2 ranks each: ppn (n-1)/n",
     "alltoall",
     MIB,
     2,
     2,
     0,
     "eth0",
     {{"net", "eth0", MIB, MIB}},
     "ok",
     "eth0",
     MIB},
    {"broadcast, a non-root node: the buffer",
     "broadcast",
     MIB,
     4,
     1,
     0,
     "eth0",
     {{"net", "eth0", 0.01 * MIB, MIB}},
     "ok",
     "eth0",
     MIB},
    {"gather, a non-root node: its blocks",
     "gather",
     4 * MIB,
     4,
     1,
     0,
     "eth0",
     {{"net", "eth0", MIB, 0.01 * MIB}},
     "ok",
     "eth0",
     MIB},
    {"gather, the root's node: (n-1)/n",
     "gather",
     4 * MIB,
     4,
     1,
     1,
     "eth0",
     {{"net", "eth0", 0.01 * MIB, 3 * MIB}},
     "ok",
     "eth0",
     3 * MIB},
    {"barrier: bound 0, only the path judged",
     "barrier",
     0,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth1", 900, 900}},
     "other-nic",
     "eth1",
     0},
    {"barrier: chatter under the floor carries nothing",
     "barrier",
     0,
     2,
     1,
     0,
     "eth0",
     {{"net", "eth1", 100, 100}},
     "ok",
     NULL,
     0},
    {"one node: bound 0",
     "allreduce",
     MIB,
     1,
     2,
     0,
     "eth0",
     {{"net", "lo", MIB, MIB}},
     "unknown",
     NULL,
     0},
    {"InfiniBand: the port carries, ib0 (IPoIB) not counted twice",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "mlx5_0",
     {{"ib", "mlx5_0/1", MIB, MIB}, {"net", "ib0", MIB, MIB}},
     "ok",
     "mlx5_0/1",
     MIB},
    {"InfiniBand expected, TCP on eth0 carried it: other-nic",
     "allreduce",
     MIB,
     2,
     1,
     0,
     "mlx5_0",
     {{"ib", "mlx5_0/1", 100, 100}, {"net", "eth0", 1.1 * MIB, 1.1 * MIB}},
     "other-nic",
     "eth0",
     MIB},
    {"EFA hw_counters",
     "allgather",
     2 * MIB,
     2,
     1,
     0,
     "rdmap0s31",
     {{"efa", "rdmap0s31/1", MIB, MIB}},
     "ok",
     "rdmap0s31/1",
     MIB},
};

static void one(const case_t *c)
{
    collprof_counter_row_t rows[16], out[CP_PATH_ROWS];
    size_t n = rows_of(c, rows);
    cp_path_cell_t cell = {c->op,        (uint64_t)c->bytes, c->nodes, c->ppn,
                           c->root_node, c->expected,        0};
    cp_path_node_t p;
    cp_path_verdict_t v = cp_path_check(&cell, rows, n, NODE, &p);
    ok(strcmp(cp_path_verdict_name(v), c->verdict) == 0, "%s: %s (got %s, ratio %.3f)", c->what,
       c->verdict, cp_path_verdict_name(v), p.ratio);
    ok(fabs(cp_path_bound(&cell, NODE == c->root_node) - c->bound) < 1e-6 * (c->bound + 1),
       "%s: bound %.0f B/op", c->what, c->bound);
    ok(c->via0 == NULL ? p.nvia == 0 : p.nvia > 0 && strcmp(p.via[0], c->via0) == 0,
       "%s: carried by %s", c->what, c->via0 != NULL ? c->via0 : "nothing");
    int k = cp_path_rows(&cell, &p, "h1", out);
    ok(k >= 3 && strcmp(out[0].name, "verdict") == 0 && strcmp(out[0].unit, c->verdict) == 0 &&
           strcmp(out[0].source, "path") == 0 && out[0].node == NODE &&
           (p.ops == 0 || fabs(out[2].per_op - c->bound) < 1e-6 * (c->bound + 1)),
       "%s: %d path rows, verdict first", c->what, k);
}

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        one(&cases[i]);
    }
    /* the summary's line of a flagged cell names the interfaces and the ratio */
    collprof_counter_row_t rows[16], out[CP_PATH_ROWS];
    size_t n = rows_of(&cases[3], rows);
    cp_path_cell_t cell = {"allreduce", (uint64_t)MIB, 2, 1, 0, "eth0", 0};
    cp_path_node_t p;
    cp_path_check(&cell, rows, n, NODE, &p);
    int k = cp_path_rows(&cell, &p, "h1", out);
    char buf[512] = "";
    FILE *f = fmemopen(buf, sizeof(buf), "w");
    int lines = f != NULL ? cp_cflag_notes(out, (size_t)k, f) : 0;
    if (f != NULL) {
        fclose(f);
    }
    ok(lines == 1 && strstr(buf, "path: node 1 (h1): other-nic: 1.02x the bound") != NULL &&
           strstr(buf, "via eth1 (expected eth0)") != NULL,
       "the note: %s", buf);
    ok(strcmp(cp_cflag(&out[0]), "path: other NIC") == 0, "flagged as path: other NIC");
    cp_cflag_tally_t t = {{0}, {0}};
    cp_cflag_tally_add(&t, 0, out, (size_t)k);
    ok(strcmp(cp_cflag_tally_text(&t, buf, sizeof(buf)), "path: other NIC in 1 cell") == 0,
       "tally: %s", buf);
    /* a screen's pair (both ends exchange the message each way at once): the bound is the
     * message, so a pair whose NIC moved 1 MiB per operation over eth1, eth0 expected, is
     * other-nic at 1.02x (cases[3]'s rows: sendrecv alone has no bound) */
    cp_path_cell_t pair = {"sendrecv", (uint64_t)MIB, 2, 1, -1, "eth0", 1};
    cp_path_verdict_t pv = cp_path_check(&pair, rows, n, NODE, &p);
    ok(cp_path_bound(&pair, 0) == (double)MIB && pv == CP_PATH_OTHER_NIC && p.ratio > 1.0 &&
           p.ratio < 1.1,
       "a screen's pair: bound the message, other-nic (%s, %.3fx)", cp_path_verdict_name(pv),
       p.ratio);
    pair.pair = 0;
    ok(cp_path_bound(&pair, 0) == 0, "sendrecv outside a pair: no bound");
    ok(cp_path_verdict_of("excess") == CP_PATH_EXCESS_V && cp_path_verdict_of("x") == -1,
       "verdict names round-trip");
    return tap_done();
}
