/*
 * Split cells (src/runner/split.c, cp_plan_split): the groups of each kind on
 * block and cyclic layouts, the layouts where a kind tells nothing, and the
 * plan's split cells (counts rounded for the group, roots and backends the
 * group cannot take decided at plan time).
 */
#include "config.h"

#include "colls/colls.h"
#include "plan/plan.h"
#include "runner/split.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* nranks ranks on nodes node_ids[] with local ranks local[], seen from rank */
static cp_boot_t layout(int rank, int nranks, int nnodes, int *node_ids, int *local)
{
    cp_boot_t b;
    memset(&b, 0, sizeof(b));
    b.rank = rank;
    b.nranks = nranks;
    b.nnodes = nnodes;
    b.node_ids = node_ids;
    b.local_ranks = local;
    return b;
}

static int group_is(const cp_boot_t *b, int kind, const char *want, int want_me)
{
    int n = 0, me = -1;
    int *r = cp_split_members(b, kind, &n, &me);
    char got[64] = "";
    for (int i = 0; r != NULL && i < n; i++) {
        size_t l = strlen(got);
        snprintf(got + l, sizeof(got) - l, "%s%d", i ? "," : "", r[i]);
    }
    free(r);
    return tap_ok(!strcmp(got, want) && me == want_me, "rank %d, %s group: %s (index %d)", b->rank,
                  cp_split_name(kind), got, me);
}

static void test_groups(void)
{
    int bnode[] = {0, 0, 1, 1}, blocal[] = {0, 1, 0, 1};
    int cnode[] = {0, 1, 0, 1}, clocal[] = {0, 0, 1, 1};
    cp_boot_t b = layout(2, 4, 2, bnode, blocal);
    group_is(&b, CP_SPLIT_NODE, "2,3", 0);
    b.rank = 3;
    group_is(&b, CP_SPLIT_CROSS, "1,3", 1);
    b = layout(1, 4, 2, cnode, clocal); /* cyclic: n1 has ranks 0,2 */
    group_is(&b, CP_SPLIT_NODE, "1,3", 0);
    b.rank = 2;
    group_is(&b, CP_SPLIT_CROSS, "2,3", 0);
    char why[160];
    tap_ok(cp_split_pointless(&b, CP_SPLIT_NODE, why, sizeof(why)) == NULL,
           "2 ranks on each of 2 nodes: both kinds tell something");
    int one[] = {0, 0}, lone[] = {0, 1};
    cp_boot_t o = layout(0, 2, 1, one, lone);
    tap_ok(cp_split_pointless(&o, CP_SPLIT_CROSS, why, sizeof(why)) != NULL &&
               strstr(why, "one node") != NULL,
           "every rank on one node: %s", why);
    int each[] = {0, 1}, zero[] = {0, 0};
    o = layout(0, 2, 2, each, zero);
    tap_ok(cp_split_pointless(&o, CP_SPLIT_NODE, why, sizeof(why)) != NULL &&
               strstr(why, "one rank per node") != NULL,
           "one rank per node: %s", why);
    tap_ok(cp_split_from_name("cross") == CP_SPLIT_CROSS && cp_split_from_name("nodes") == -1 &&
               cp_split_name(3) == NULL,
           "names");
}

static cp_cell_t cell(collprof_op_t op, int plugin, int root)
{
    cp_cell_t c;
    memset(&c, 0, sizeof(c));
    c.plugin = plugin;
    c.op = op;
    c.dtype = COLLPROF_DTYPE_FLOAT32;
    c.root = root;
    c.requested = 1001;
    c.count = cp_coll_effective_count(op, 1001, 6);
    c.group_n = 6;
    c.pre_status = COLLPROF_CELL_PENDING;
    return c;
}

static void test_plan(void)
{
    /* 6 ranks, 3 per node on 2 nodes, seen from rank 4 (node 1, local rank 1) */
    int node[] = {0, 0, 0, 1, 1, 1}, local[] = {0, 1, 2, 0, 1, 2};
    cp_boot_t b = layout(4, 6, 2, node, local);
    collprof_backend_t groups = {.name = "g", .flags = COLLPROF_BACKEND_GROUPS},
                       whole = {.name = "w"};
    cp_plugin_t plugins[2];
    memset(plugins, 0, sizeof(plugins));
    snprintf(plugins[0].name, sizeof(plugins[0].name), "g");
    snprintf(plugins[1].name, sizeof(plugins[1].name), "w");
    plugins[0].be = &groups;
    plugins[1].be = &whole;
    cp_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    plan.nranks = 6;
    plan.ncells = 3;
    plan.cells = calloc(3, sizeof(cp_cell_t));
    plan.cells[0] = cell(COLLPROF_OP_ALLGATHER, 0, 0);
    plan.cells[1] = cell(COLLPROF_OP_GATHER, 0, 2);
    plan.cells[2] = cell(COLLPROF_OP_ALLREDUCE, 1, 0);
    char err[256] = "";
    int rc = cp_plan_split(COLLPROF_BIT(CP_SPLIT_NODE) | COLLPROF_BIT(CP_SPLIT_CROSS), plugins, &b,
                           &plan, err, sizeof(err));
    tap_ok(rc == 0 && plan.ncells == 9, "3 cells and 2 kinds: 9 cells (got %d)", plan.ncells);
    const cp_cell_t *c = plan.cells;
    tap_ok(c[0].split == CP_SPLIT_WORLD && c[1].split == CP_SPLIT_NODE &&
               c[2].split == CP_SPLIT_CROSS && c[3].split == CP_SPLIT_WORLD,
           "each cell is followed by its node and cross cells");
    tap_ok(c[1].group_n == 3 && c[1].group_rank == 1 && c[2].group_n == 2 && c[2].group_rank == 1,
           "rank 4: index 1 of a node group of 3 and of a cross group of 2");
    tap_ok(c[0].count == 996 && c[1].count == 999 && c[2].count == 1000,
           "allgather of 1001 elements: 996 on 6 ranks, 999 on 3, 1000 on 2 (got %llu %llu %llu)",
           (unsigned long long)c[0].count, (unsigned long long)c[1].count,
           (unsigned long long)c[2].count);
    tap_ok(
        c[4].pre_status == COLLPROF_CELL_PENDING && c[5].pre_status == COLLPROF_CELL_UNSUPPORTED &&
            strstr(c[5].pre_reason, "root 2 is outside a cross group of 2") != NULL,
        "gather root 2 runs in a node group of 3, not in a cross group of 2: %s", c[5].pre_reason);
    tap_ok(c[6].pre_status == COLLPROF_CELL_PENDING &&
               c[7].pre_status == COLLPROF_CELL_UNSUPPORTED &&
               strstr(c[7].pre_reason, "whole job only") != NULL,
           "a backend without groups: %s", c[7].pre_reason);
    cp_plan_free(&plan);
}

int main(void)
{
    test_groups();
    test_plan();
    return tap_done();
}
