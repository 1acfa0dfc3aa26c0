/*
 * The plan's memory guard (src/plan/plan.c, cp_plan_build with a cp_plan_node_t): a node
 * checks its own ranks, not the job's; host and device memory are counted apart; rank 0's
 * samples count on rank 0's node alone; what cannot fit is refused in one line naming the
 * cell.  No hardware: the node's memory is injected.
 */
#include "config.h"

#include "boot/boot.h"
#include "cli/cli.h"
#include "plan/plan.h"
#include "runner/runner.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)

/* a host backend (mpi, gloo, ofi alike) and a device one timed on its device (nccl alike) */
static collprof_backend_t host_be = {.name = "hostbe"},
                          dev_be = {.name = "devbe", .flags = COLLPROF_BACKEND_DEVICE_TIMER};
static cp_plugin_t plugins[2];

static void make_plugins(void)
{
    const uint32_t ops = COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_ALLGATHER) |
                         COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER) |
                         COLLPROF_BIT(COLLPROF_OP_ALLTOALL) | COLLPROF_BIT(COLLPROF_OP_ALLTOALLV);
    memset(plugins, 0, sizeof(plugins));
    for (int i = 0; i < 2; i++) {
        cp_plugin_t *p = &plugins[i];
        p->be = i == 0 ? &host_be : &dev_be;
        snprintf(p->name, sizeof(p->name), "%s", p->be->name);
        p->usable = 1;
        p->caps.size = sizeof(p->caps);
        p->caps.ops = ops;
        p->caps.dtypes = COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32);
        p->caps.redops = COLLPROF_BIT(COLLPROF_REDOP_SUM);
        p->caps.memtypes = COLLPROF_BIT(i == 0 ? COLLPROF_MEM_HOST : COLLPROF_MEM_DEVICE);
    }
}

/* Plan "collprof ARGS" for nranks on node; 0 when accepted, else err holds the refusal. */
static int plan(const char *args, int nranks, const cp_plan_node_t *node, char *err, size_t len)
{
    char buf[512], *argv[32];
    int argc = 0;
    cp_options_t opt;
    snprintf(buf, sizeof(buf), "collprof %s", args);
    for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " ")) {
        argv[argc++] = t;
    }
    argv[argc] = NULL;
    err[0] = '\0';
    if (cp_cli_parse(argc, argv, &opt, err, len) != 0) {
        return -2;
    }
    cp_plan_t p;
    int rc = cp_plan_build(&opt, plugins, 2, nranks, node, &p, err, len);
    if (rc == 0) {
        cp_plan_free(&p);
    }
    cp_cli_free(&opt);
    return rc;
}

/* The host bytes per node of the plan's neediest cell (cp_cell_mem, as the guard counts). */
static uint64_t most_per_node(const char *args, int nranks, const cp_plan_node_t *node)
{
    char buf[512], err[512], *argv[32];
    int argc = 0;
    cp_options_t opt;
    cp_plan_t p;
    uint64_t most = 0;
    snprintf(buf, sizeof(buf), "collprof %s", args);
    for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " ")) {
        argv[argc++] = t;
    }
    argv[argc] = NULL;
    if (cp_cli_parse(argc, argv, &opt, err, sizeof(err)) != 0 ||
        cp_plan_build(&opt, plugins, 2, nranks, NULL, &p, err, sizeof(err)) != 0) {
        return 0;
    }
    for (int i = 0; i < p.ncells; i++) {
        cp_cell_mem_t m;
        cp_cell_mem(&opt, plugins[p.cells[i].plugin].be, &p.cells[i], &m);
        uint64_t need = m.host * (uint64_t)node->local_ranks + (node->rank0_here ? m.root : 0);
        most = need > most ? need : most;
    }
    cp_plan_free(&p);
    cp_cli_free(&opt);
    return most;
}

static int one_line(const char *s)
{
    return s[0] != '\0' && strchr(s, '\n') == NULL;
}

static void test_default_matrix(void)
{
    cp_plan_node_t node = {.host_bytes = 128 * GIB, .local_ranks = 8, .rank0_here = 1};
    char err[1024];
    uint64_t need = most_per_node("", 4096, &node);
    ok(plan("", 4096, &node, err, sizeof(err)) == 0,
       "default matrix, 4,096 ranks on 8-rank nodes of 128 GiB: accepted, rank 0's node needs "
       "%.3f GiB at most (the old job-wide rule: 2 x 64 MiB x 4,096 = 512 GiB) %s",
       (double)need / (double)GIB, err);
    ok(need > GIB && need < GIB + 16 * (UINT64_C(1) << 20),
       "it is 8 ranks x 2 buffers of 64 MiB and little more (%llu B)", (unsigned long long)need);
    node.rank0_here = 0;
    ok(plan("", 4096, &node, err, sizeof(err)) == 0, "... and on the other nodes: accepted %s",
       err);
    node.rank0_here = 1;
    node.device_bytes = 80 * GIB;
    need = most_per_node("", 16384, &node);
    ok(plan("", 16384, &node, err, sizeof(err)) == 0,
       "16,384 ranks, 80 GiB devices: accepted (%.3f GiB, %llu B) %s", (double)need / (double)GIB,
       (unsigned long long)need, err);
}

static void test_many_nodes(void)
{
    cp_plan_node_t node = {.host_bytes = 128 * GIB, .local_ranks = 8, .rank0_here = 1};
    char err[1024];
    /* 8 ranks x 2 x 4 GiB = 64 GiB a node; the job's 16,384 ranks would hold 128 TiB */
    ok(plan("--backends hostbe --counts 1G", 16384, &node, err, sizeof(err)) == 0,
       "16,384 ranks with 2 buffers of 4 GiB each: 64 GiB per node fits, the job's 128 TiB is "
       "not asked for %s",
       err);
    ok(plan("--backends hostbe --counts 1G", 65536, &node, err, sizeof(err)) == 0,
       "... nor at 65,536 ranks %s", err);
    node.local_ranks = 16;
    ok(plan("--backends hostbe --counts 1G", 16, &node, err, sizeof(err)) != 0 &&
           strstr(err, "16 ranks x 2 buffers of 4.0 GiB") != NULL,
       "16 ranks on the node: refused (%s)", err);
}

static void test_refused(void)
{
    cp_plan_node_t node = {.host_bytes = 128 * GIB, .local_ranks = 8, .rank0_here = 1};
    char err[1024];
    int rc = plan("--counts 1M,4G", 4096, &node, err, sizeof(err));
    ok(rc == -1 && one_line(err) &&
           strstr(err, "cell allreduce float32 4G (hostbe, host): needs 256.0 GiB of host "
                       "memory per node (8 ranks x 2 buffers of 16.0 GiB + rank 0's samples "
                       "and gathers ") == strstr(err, "cell") &&
           strstr(err, "but this node has 102.4 GiB (80 % of 128.0 GiB): use smaller --counts "
                       "or fewer ranks per node") != NULL,
       "4G float32 on 8-rank nodes: refused in one line naming the cell: %s", err);
    node.rank0_here = 0;
    ok(plan("--counts 4G", 4096, &node, err, sizeof(err)) == -1 &&
           strstr(err, "(8 ranks x 2 buffers of 16.0 GiB) but") != NULL,
       "on a node without rank 0, its samples are not counted: %s", err);
    node.rank0_here = 1;
    node.host_bytes = 0;
    ok(plan("--counts 4G", 4096, &node, err, sizeof(err)) == 0,
       "host memory unknown: nothing refused %s", err);
    node.host_bytes = 128 * GIB;
    ok(plan("--counts 4G", 4096, NULL, err, sizeof(err)) == 0, "no node: nothing checked %s", err);
    /* 2G float32: 8 ranks x 8 GiB in place, twice that out of place */
    ok(plan("--backends hostbe --counts 2G --ops allreduce --inplace in", 4096, &node, err,
            sizeof(err)) == 0 &&
           plan("--backends hostbe --counts 2G --ops allreduce", 4096, &node, err, sizeof(err)) ==
               -1 &&
           plan("--backends hostbe --counts 4G --ops allreduce --inplace in", 4096, &node, err,
                sizeof(err)) == -1 &&
           strstr(err, "8 ranks x 1 buffer of 16.0 GiB") != NULL,
       "in place: one buffer a rank (%s)", err);
    ok(plan("--backends hostbe --counts 256M --rotate-buffers 8", 8, &node, err, sizeof(err)) ==
               -1 &&
           strstr(err, "x 2 buffers of 8.0 GiB") != NULL,
       "--rotate-buffers 8: each buffer's slots count (%s)", err);
}

static void test_device(void)
{
    cp_plan_node_t node = {
        .host_bytes = 96 * GIB, .device_bytes = 8 * GIB, .local_ranks = 8, .rank0_here = 1};
    char err[1024];
    /* 2 device buffers of 4 GiB a rank: 8 GiB on the device, 8 x 2 x 4 GiB of host copies */
    ok(plan("--backends devbe --counts 1G", 64, &node, err, sizeof(err)) == -1 && one_line(err) &&
           strstr(err, "cell allreduce float32 1G (devbe, device): needs 8.0 GiB of device "
                       "memory per rank (2 buffers of 4.0 GiB) but a device has 6.4 GiB (80 % "
                       "of 8.0 GiB): use smaller --counts") == err,
       "device buffers against the device's memory: %s", err);
    node.device_bytes = 80 * GIB;
    ok(plan("--backends devbe --counts 1G", 64, &node, err, sizeof(err)) == 0,
       "80 GiB devices: accepted; the host holds the 64 GiB of host copies alone, not the "
       "device buffers too (128 GiB) %s",
       err);
    node.device_bytes = 0;
    ok(plan("--backends devbe --counts 1G", 64, &node, err, sizeof(err)) == 0,
       "device memory unknown: device buffers are not counted at all %s", err);
    node.host_bytes = 64 * GIB;
    ok(plan("--backends devbe --counts 1G", 64, &node, err, sizeof(err)) == -1 &&
           strstr(err, "(devbe, device): needs 64.0 GiB of host memory per node (8 ranks x 2 "
                       "host copies of 4.0 GiB") != NULL,
       "their host copies are host memory: %s", err);
}

static void test_rank0(void)
{
    cp_plan_node_t node = {.host_bytes = 128 * GIB, .local_ranks = 8, .rank0_here = 1};
    char err[1024];
    /* each rank: 15.6 MiB of samples, 0.7 MiB of the job's tables (2,048 nodes) */
    /* 16,384 ranks x 1,000,000 iterations x 8 B: 122 GiB of samples on rank 0 */
    int rc = plan("--backends hostbe --ops allreduce --counts 1K -n 1000000", 16384, &node, err,
                  sizeof(err));
    ok(rc == -1 && one_line(err) &&
           strstr(err, "(8 ranks x (2 buffers of 4.0 KiB + 16.3 MiB of samples and tables) + rank "
                       "0's samples and gathers 126.1 GiB)") &&
           strstr(err, "use fewer iterations (-n), repeats or ranks") != NULL,
       "rank 0's node: its samples refused (%s)", err);
    node.rank0_here = 0;
    ok(plan("--backends hostbe --ops allreduce --counts 1K -n 1000000", 16384, &node, err,
            sizeof(err)) == 0,
       "the other nodes: accepted %s", err);
    node.rank0_here = 1;
    ok(plan("--backends hostbe --ops allreduce --counts 1K -n 1000", 16384, &node, err,
            sizeof(err)) == 0,
       "16,384 ranks x 1,000 iterations: accepted %s", err);
    ok(plan("--backends hostbe --ops allreduce --counts 1K -n 100000 --repeats 10", 16384, &node,
            err, sizeof(err)) == -1 &&
           strstr(err, "rank 0's samples and gathers") != NULL,
       "--repeats 10 piles up the samples: refused (%s)", err);
}

/* The start-up tables (boot.h): each node's name once, and counted by the guard. */
static void test_tables(void)
{
    const uint64_t ranks = 131072, nodes = 1024, goal = 16 * ranks + 256 * nodes;
    uint64_t held = cp_boot_tables_bytes(ranks, nodes);
    ok(held <= goal,
       "131,072 ranks on 1,024 nodes: %llu bytes of tables a rank, at most 16 x ranks + 256 x "
       "nodes = %llu (one 256-byte name a rank was %llu)",
       (unsigned long long)held, (unsigned long long)goal, (unsigned long long)(256 * ranks));
    ok(cp_boot_tables_bytes(2 * ranks, nodes) - held == 12 * ranks &&
           cp_boot_tables_bytes(ranks, 2 * nodes) - held == 256 * nodes,
       "12 bytes a rank, 256 a node");
    uint64_t start = cp_boot_startup_bytes(ranks, nodes, 0);
    uint64_t root = cp_boot_startup_bytes(ranks, nodes, 1);
    ok(start <= 8 * ranks + 256 * nodes && root >= start + 256 * ranks,
       "start-up: the message %llu B on every rank; rank 0 also every rank's record (%llu B)",
       (unsigned long long)start, (unsigned long long)root);

    /* 128 ranks a node: 128 x 1.8 MiB of tables (the old 256 B x ranks: 4.0 GiB) */
    cp_plan_node_t node = {
        .host_bytes = 256 << 20, .local_ranks = 128, .rank0_here = 0, .nnodes = 1024};
    char err[1024];
    ok(plan("--backends hostbe --ops allreduce --counts 1", 131072, &node, err, sizeof(err)) ==
               -1 &&
           one_line(err) &&
           strstr(err, "131072 ranks on 1024 nodes: the start-up tables need ") == err &&
           strstr(err, "(128 ranks x ") != NULL && strstr(err, "use fewer ranks per node") != NULL,
       "256 MiB a node: the tables alone refused: %s", err);
    node.host_bytes = 4 * GIB;
    ok(plan("--backends hostbe --ops allreduce --counts 1", 131072, &node, err, sizeof(err)) == 0,
       "4 GiB a node: accepted (names once per node) %s", err);
    /* 600 MiB: 480 MiB for the job, room for 128 ranks' 3.0 MiB, not for rank 0's records
     * of every rank as well (boot records, /ranks rows, CPU affinities: 198 MiB) */
    node.host_bytes = 600 << 20;
    ok(plan("--backends hostbe --ops allreduce --counts 1", 131072, &node, err, sizeof(err)) == 0,
       "600 MiB a node: accepted where rank 0 is not %s", err);
    node.rank0_here = 1;
    ok(plan("--backends hostbe --ops allreduce --counts 1", 131072, &node, err, sizeof(err)) ==
               -1 &&
           strstr(err, "rank 0's records of every rank included") != NULL,
       "... refused on rank 0's node: its records of every rank counted too: %s", err);
    node.rank0_here = 0;
    node.host_bytes = 900 << 20; /* the tables fit; with 128 x 2 buffers of 2 MiB they do not */
    ok(plan("--backends hostbe --ops allreduce --counts 512K", 131072, &node, err, sizeof(err)) ==
               -1 &&
           strstr(err, "MiB of samples and tables)") != NULL,
       "a cell's need includes the tables each rank holds: %s", err);
}

int main(void)
{
    make_plugins();
    test_default_matrix();
    test_many_nodes();
    test_refused();
    test_device();
    test_rank0();
    test_tables();
    return tap_done();
}
