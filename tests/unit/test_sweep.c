/*
 * A link sweep (cp_sweep_cell) over 4 forked ranks, each alone on its own node, on the self
 * backend (collprof_self.so from COLLPROF_PLUGIN_PATH) and the shared-memory channel of
 * oob_shm.h: 3 rounds of 2 pairs.  With COLLPROF_FAULT=wrong:1, rank 1's pair is wrong in
 * every round and the other pair of the round is not: one bad pair does not mark its round's
 * other pairs wrong.
 */
#include "config.h"

#include "runner/runner.h"
#include "screen/run/sweep.h"
#include "oob_shm.h"
#include "tap.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define NR 4

/* rank 0's rows, for the parent */
typedef struct shared_rows {
    int nrows, sweep_rc;
    collprof_link_row_t rows[16];
} shared_rows_t;

static shared_rows_t *got;

static void host_log(int level, const char *fmt, ...)
{
    (void)level, (void)fmt;
}

static const char *no_option(const char *key)
{
    (void)key;
    return NULL;
}

static int rank_entry(int rank, void *arg)
{
    const collprof_backend_t *be = arg;
    static char hosts[NR][256] = {"n0", "n1", "n2", "n3"};
    static int node_ids[NR] = {0, 1, 2, 3}, local[NR] = {0, 0, 0, 0};
    /* one node for the self backend (its shared segment), four for the core's sweep */
    collprof_host_t host = oob_shm_host(host_log, no_option);
    cp_plugin_t p;
    memset(&p, 0, sizeof(p));
    snprintf(p.name, sizeof(p.name), "%s", be->name);
    p.be = be;
    p.caps.size = sizeof(p.caps);
    if (be->query(NULL, &p.caps) != COLLPROF_OK || be->init(&host, &p.ctx) != COLLPROF_OK) {
        return 2;
    }
    oob_shm_runner_t k;
    oob_shm_runner(&k, &p, hosts);
    k.boot.nnodes = NR;
    k.boot.node_id = rank;
    k.boot.node_ids = node_ids;
    k.boot.local_ranks = local;
    k.opt.sweep_bytes[1] = 1;
    cp_cell_t c;
    memset(&c, 0, sizeof(c));
    snprintf(c.variant, sizeof(c.variant), "default");
    c.op = COLLPROF_OP_SENDRECV;
    c.dtype = COLLPROF_DTYPE_FLOAT32;
    c.memtype = COLLPROF_MEM_HOST;
    c.count = c.requested = 1000;
    c.iters = 3;
    c.warmup = 1;
    cp_sweep_rows_t rows;
    memset(&rows, 0, sizeof(rows));
    setenv("COLLPROF_FAULT", "wrong:1", 1);
    int rc = cp_sweep_cell(&k.r, &c, &rows, NULL);
    if (rank == 0) {
        got->sweep_rc = rc;
        got->nrows = (int)rows.nrows < 16 ? (int)rows.nrows : 16;
        memcpy(got->rows, rows.rows, sizeof(got->rows[0]) * (size_t)got->nrows);
    }
    cp_sweep_rows_free(&rows);
    be->finalize(p.ctx);
    return 0;
}

int main(void)
{
    const char *dir = getenv("COLLPROF_PLUGIN_PATH");
    char path[4096];
    snprintf(path, sizeof(path), "%s/collprof_self.so", dir ? dir : ".");
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const collprof_backend_t *be = dl ? dlsym(dl, COLLPROF_BACKEND_SYMBOL) : NULL;
    if (be == NULL) {
        printf("1..0 # SKIP no self backend at %s\n", path);
        return 0;
    }
    got = mmap(NULL, sizeof(*got), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (got == MAP_FAILED || oob_shm_create(NR) != 0) {
        perror("mmap");
        return 1;
    }
    int st[NR], failed = 0;
    oob_shm_fork(rank_entry, (void *)be, 60, st);
    for (int r = 0; r < NR; r++) {
        failed += !WIFEXITED(st[r]) || WEXITSTATUS(st[r]) != 0;
    }
    ok(failed == 0, "4 ranks exited 0");
    ok(got->nrows == 6 && got->sweep_rc == 1, "6 pairs in 3 rounds (%d), the sweep wrong (%d)",
       got->nrows, got->sweep_rc);
    for (int i = 0; i < got->nrows; i++) {
        const collprof_link_row_t *w = &got->rows[i];
        int bad = w->rank_a == 1 || w->rank_b == 1;
        ok(bad ? w->wrong > 0 && !strcmp(w->status, "wrong")
               : w->wrong == 0 && !strcmp(w->status, "ok") && w->error[0] == '\0',
           "round %d, ranks %d-%d: %s, #wrong %llu (%s) '%s'", (int)w->round, (int)w->rank_a,
           (int)w->rank_b, w->status, (unsigned long long)w->wrong, bad ? "wrong" : "ok", w->error);
    }
    return tap_done();
}
