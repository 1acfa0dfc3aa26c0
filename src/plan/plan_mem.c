#include "config.h"

/*
 * The plan's memory guard (plan.h): what the neediest cell asks of a node's memory, per node
 * (its ranks, rank 0's samples and gathers where rank 0 is), refused before any
 * communication in one line naming the cell, the need and the limit.
 */

#include "plan/plan.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/runner.h"
#include "runner/split.h"
#include "base/util.h"
#include "boot/boot.h"
#include "format/best.h"

#include <collprof/schema.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What a node may give the ranks: the rest is the system's, the libraries', the page cache's. */
#define GUARD_SHARE 0.8

void cp_plan_node_this(cp_plan_node_t *node, int local_ranks, int rank0_here, int nnodes)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    memset(node, 0, sizeof(*node));
    node->host_bytes = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 0;
    uint64_t cg = cp_cgroup_mem_limit(); /* Slurm's ConstrainRAMSpace, a container's limit */
    if (cg > 0 && (node->host_bytes == 0 || cg < node->host_bytes)) {
        node->host_bytes = cg;
        node->host_cgroup = 1;
    }
    /* device_bytes stays 0 (unknown): device buffers are then checked against nothing here,
     * and never against host memory, which they do not take (their host copies do, and are
     * counted); a device too small fails its cells in the backend's mem_alloc */
    node->local_ranks = local_ranks > 0 ? local_ranks : 1;
    node->rank0_here = rank0_here;
    node->nnodes = nnodes;
}

/* The job's nodes as the guard takes them: node->nnodes, or the ranks over local_ranks. */
static uint64_t job_nodes(const cp_plan_node_t *node, int nranks)
{
    uint64_t n = nranks > 0 ? (uint64_t)nranks : 1, local = (uint64_t)node->local_ranks;
    if (node->nnodes > 0) {
        return (uint64_t)node->nnodes;
    }
    return local > 0 ? (n + local - 1) / local : n;
}

/* What the job's size costs beside the cells: the tables every rank holds (boot.h), and the
 * records of every rank rank 0 holds for the result file's /ranks table: each rank's CPU
 * affinity (256 bytes, src/run/rank.c) through the run, and the table's rows while the file
 * is opened (before the first cell). */
typedef struct job_mem {
    uint64_t tables;   /* a rank's tables */
    uint64_t rank0;    /* rank 0's records through the run */
    uint64_t rank0_at; /* more on rank 0 when the file is opened */
} job_mem_t;
#define AFFINITY_BYTES 256

/* Per node, what start-up holds at its peak: every local rank's tables and the message that
 * carries them, and rank 0's records of every rank where it runs (boot.h, job_mem_t). */
static uint64_t startup_need(const cp_plan_node_t *node, int nranks, job_mem_t *jm)
{
    uint64_t ranks = nranks > 0 ? (uint64_t)nranks : 1, nodes = job_nodes(node, nranks);
    uint64_t other = cp_boot_startup_bytes(ranks, nodes, 0);
    uint64_t root = cp_boot_startup_bytes(ranks, nodes, 1);
    jm->tables = cp_boot_tables_bytes(ranks, nodes);
    jm->rank0 = cp_mul_sat(ranks, AFFINITY_BYTES);
    jm->rank0_at = cp_mul_sat(ranks, sizeof(collprof_rank_row_t));
    uint64_t need = cp_mul_sat(cp_add_sat(jm->tables, other), (uint64_t)node->local_ranks);
    /* rank 0's boot records, then its /ranks rows: counted together, at most */
    uint64_t r0 = cp_add_sat(root - other, cp_add_sat(jm->rank0, jm->rank0_at));
    return node->rank0_here ? cp_add_sat(need, r0) : need;
}

/* Binary units, one decimal: "64.0 MiB". */
static const char *fmt_iec(uint64_t v, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 6) {
        d /= 1024.0;
        u++;
    }
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.1f %s", d, unit[u]);
    return buf;
}

/* "cell allreduce float32 16M (self, host)" */
static const char *cell_name(const cp_cell_t *c, const cp_plugin_t *plugins, char *buf, size_t len)
{
    char n[32];
    snprintf(buf, len, "cell %s %s %s (%s, %s)", collprof_op_name(c->op),
             collprof_dtype_info(c->dtype)->name, cp_best_fmt_count(c->count, n, sizeof(n)),
             plugins[c->plugin].name, collprof_memtype_name(c->memtype));
    return buf;
}

/* Host bytes cell c needs on node, its parts in *m: the job's tables are bookkeeping every
 * rank holds while the cell runs, and rank 0's records of every rank part of its share. */
static uint64_t host_need(const cp_options_t *opt, const cp_plugin_t *plugins, const cp_cell_t *c,
                          const cp_plan_node_t *node, const job_mem_t *jm, cp_cell_mem_t *m)
{
    cp_cell_mem(opt, plugins[c->plugin].be, c, m);
    m->book = cp_add_sat(m->book, jm->tables);
    m->host = cp_add_sat(m->host, jm->tables);
    m->root = cp_add_sat(m->root, jm->rank0);
    uint64_t need = cp_mul_sat(m->host, (uint64_t)node->local_ranks);
    return node->rank0_here ? cp_add_sat(need, m->root) : need;
}

/* The one line for a cell whose host memory (m, need bytes) does not fit on node. */
static void host_refusal(const cp_cell_t *c, const cp_plugin_t *plugins, const cp_cell_mem_t *m,
                         uint64_t need, const cp_plan_node_t *node, char *err, size_t errlen)
{
    char name[160], a[32], b[32], lim[32], phys[32], book[64] = "", root[80] = "";
    if (m->book >= (UINT64_C(1) << 20)) { /* a traffic matrix, many iterations */
        snprintf(book, sizeof(book), " + %s of samples and tables)",
                 fmt_iec(m->book, a, sizeof(a)));
    }
    if (node->rank0_here) {
        snprintf(root, sizeof(root), " + rank 0's samples and gathers %s",
                 fmt_iec(m->root, a, sizeof(a)));
    }
    int samples = node->rank0_here && m->root > cp_mul_sat(m->host, (uint64_t)node->local_ranks);
    snprintf(err, errlen,
             "%s: needs %s of host memory per node (%d rank%s x %s%d %s of %s%s%s) but this "
             "node has %s (%d %% of %s%s): use %s",
             cell_name(c, plugins, name, sizeof(name)), fmt_iec(need, b, sizeof(b)),
             node->local_ranks, node->local_ranks == 1 ? "" : "s", book[0] ? "(" : "", m->nbuf,
             m->device ? (m->nbuf == 1 ? "host copy" : "host copies")
                       : (m->nbuf == 1 ? "buffer" : "buffers"),
             fmt_iec(m->hostbuf, a, sizeof(a)), book, root,
             fmt_iec((uint64_t)(GUARD_SHARE * (double)node->host_bytes), lim, sizeof(lim)),
             (int)(GUARD_SHARE * 100 + 0.5), fmt_iec(node->host_bytes, phys, sizeof(phys)),
             node->host_cgroup ? ", the cgroup's memory limit" : "",
             samples ? "fewer iterations (-n), repeats or ranks"
                     : "smaller --counts or fewer ranks per node");
}

/* The start-up tables alone do not fit on node: the one line in err.  *jm: what the job's
 * size costs beside the cells. */
static int startup_tables_refused(const cp_plan_node_t *node, int nranks, job_mem_t *jm, char *err,
                                  size_t errlen)
{
    uint64_t need = startup_need(node, nranks, jm);
    if (node->host_bytes == 0 || (double)need <= GUARD_SHARE * (double)node->host_bytes) {
        return 0;
    }
    char a[32], b[32], lim[32], phys[32];
    snprintf(err, errlen,
             "%d ranks on %llu nodes: the start-up tables need %s of host memory per node (%d "
             "rank%s x %s%s) but this node has %s (%d %% of %s%s): use fewer ranks per node",
             nranks, (unsigned long long)job_nodes(node, nranks), fmt_iec(need, a, sizeof(a)),
             node->local_ranks, node->local_ranks == 1 ? "" : "s",
             fmt_iec(cp_add_sat(jm->tables, cp_boot_startup_bytes((uint64_t)nranks,
                                                                  job_nodes(node, nranks), 0)),
                     b, sizeof(b)),
             node->rank0_here ? ", rank 0's records of every rank included" : "",
             fmt_iec((uint64_t)(GUARD_SHARE * (double)node->host_bytes), lim, sizeof(lim)),
             (int)(GUARD_SHARE * 100 + 0.5), fmt_iec(node->host_bytes, phys, sizeof(phys)),
             node->host_cgroup ? ", the cgroup's memory limit" : "");
    return 1;
}

/* Refuse a plan whose largest cell cannot fit on node: host memory per node (each local
 * rank's buffers, or a device cell's host copies, and bookkeeping; rank 0's samples and
 * gathers where it runs), device memory per rank.  A job on many nodes is never refused for
 * its total: each node checks its own ranks (the ranks agree on the verdict). */
int cp_plan_memory_guard(const cp_options_t *opt, const cp_plugin_t *plugins,
                         const cp_plan_node_t *node, const cp_plan_t *plan, char *err,
                         size_t errlen)
{
    int hi = -1, di = -1;
    uint64_t hneed = 0, dneed = 0;
    job_mem_t jm;
    cp_cell_mem_t m;
    if (startup_tables_refused(node, plan->nranks, &jm, err, errlen)) {
        return -1;
    }
    for (int i = 0; i < plan->ncells; i++) {
        const cp_cell_t *c = &plan->cells[i];
        if (c->pre_status != COLLPROF_CELL_PENDING) {
            continue; /* decided at plan time: it allocates nothing */
        }
        uint64_t h = host_need(opt, plugins, c, node, &jm, &m);
        uint64_t d = m.device ? cp_mul_sat(m.buffer, (uint64_t)m.nbuf) : 0;
        hi = h > hneed ? i : hi;
        hneed = h > hneed ? h : hneed;
        di = d > dneed ? i : di;
        dneed = d > dneed ? d : dneed;
    }
    char name[160], a[32], b[32], lim[32], dev[32];
    if (hi >= 0 && node->host_bytes > 0 && (double)hneed > GUARD_SHARE * (double)node->host_bytes) {
        host_need(opt, plugins, &plan->cells[hi], node, &jm, &m);
        host_refusal(&plan->cells[hi], plugins, &m, hneed, node, err, errlen);
        return -1;
    }
    if (di >= 0 && node->device_bytes > 0 &&
        (double)dneed > GUARD_SHARE * (double)node->device_bytes) {
        cp_cell_mem(opt, plugins[plan->cells[di].plugin].be, &plan->cells[di], &m);
        snprintf(err, errlen,
                 "%s: needs %s of device memory per rank (%d buffer%s of %s) but a device has %s "
                 "(%d %% of %s): use smaller --counts",
                 cell_name(&plan->cells[di], plugins, name, sizeof(name)),
                 fmt_iec(dneed, a, sizeof(a)), m.nbuf, m.nbuf == 1 ? "" : "s",
                 fmt_iec(m.buffer, b, sizeof(b)),
                 fmt_iec((uint64_t)(GUARD_SHARE * (double)node->device_bytes), lim, sizeof(lim)),
                 (int)(GUARD_SHARE * 100 + 0.5), fmt_iec(node->device_bytes, dev, sizeof(dev)));
        return -1;
    }
    return 0;
}
