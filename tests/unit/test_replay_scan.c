/*
 * collprof --replay reads only a rank's own ops (src/schema/trace_read.c's blocks,
 * src/runner/replay_scan.c; docs/replay.md "Memory"): a 3-rank trace written here, read in
 * blocks of 4 rows keeping one rank's ops, every row seen once in file order; then the
 * replay's read for each rank: its own ops in --replay-ops' range and every all-to-all-v,
 * and the figures of the whole trace (the largest seq, the window, the ops used, each group's
 * collectives per member); --shrink reads every rank's ops.
 */
#include "config.h"

#include "runner/replay_scan.h"
#include "schema/h5schema.h"
#include "tap.h"

#include <collprof/plugin.h>
#include <collprof/vocab.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR  3
#define PER 5

static collprof_trace_op_row_t ops[NR * PER];

/* Rank r's op s: allreduce, alltoallv (s 2), barrier (s 4) on the world; issued 1000 ns apart
 * from 10^6 ns, each lasting 100 ns; rank 2's op 3 a send on the pair group 1 [1, 2]. */
static void make_ops(void)
{
    for (int r = 0; r < NR; r++) {
        for (int s = 0; s < PER; s++) {
            collprof_trace_op_row_t *o = &ops[r * PER + s];
            memset(o, 0, sizeof(*o));
            o->rank = r;
            o->seq = s;
            snprintf(o->op, sizeof(o->op), "%s",
                     s == 2   ? "alltoallv"
                     : s == 4 ? "barrier"
                              : "allreduce");
            o->root = o->peer = -1;
            o->req = o->coalesced = o->split_off = o->source_seq = -1;
            o->t_issue_ns = 1000000 + 1000 * s + r;
            o->dur_ns = 100;
        }
    }
    collprof_trace_op_row_t *snd = &ops[2 * PER + 3];
    snprintf(snd->op, sizeof(snd->op), "send");
    snd->group = 1;
    snd->peer = 1;
}

static int write_trace(const char *path)
{
    collprof_trace_group_row_t g[2];
    collprof_trace_member_row_t m[NR + 2] = {{0}, {1}, {2}, {1}, {2}};
    memset(g, 0, sizeof(g));
    g[0] = (collprof_trace_group_row_t){.group = 0, .size = NR, .member_off = 0};
    g[1] = (collprof_trace_group_row_t){.group = 1, .size = 2, .member_off = NR};
    collprof_trace_op_row_t copy[NR * PER];
    memcpy(copy, ops, sizeof(copy));
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    int rc = f < 0 || cp_h5_write_table(f, &cp_h5_table_trace_ops, copy, NR * PER) != 0 ||
             cp_h5_write_table(f, &cp_h5_table_trace_groups, g, 2) != 0 ||
             cp_h5_write_table(f, &cp_h5_table_trace_members, m, NR + 2) != 0;
    cp_h5_release(f);
    return rc ? -1 : 0;
}

typedef struct seen {
    size_t n;
    int in_order;
} seen_t;

static int keep1(void *arg, const collprof_trace_op_row_t *r)
{
    (void)arg;
    return r->rank == 1;
}

static void see(void *arg, const cp_trace_t *t, const collprof_trace_op_row_t *r)
{
    seen_t *s = arg;
    s->in_order &= t->ngroups == 2 && r->rank * PER + r->seq == (int64_t)s->n;
    s->n++;
}

static void blocks(const char *path)
{
    cp_trace_t t;
    char err[256] = "";
    seen_t s = {0, 1};
    cp_trace_sel_t sel = {.keep = keep1, .see = see, .arg = &s, .block = 4};
    int rc = cp_trace_read_sel(path, &t, &sel, err, sizeof(err));
    ok(rc == 0, "read in blocks of 4 (%s)", err);
    int mine = t.nops == PER;
    for (size_t i = 0; mine && i < t.nops; i++) {
        mine = t.ops[i].rank == 1 && t.ops[i].seq == (int64_t)i;
    }
    ok(mine && t.partial && t.nrows == NR * PER, "rank 1's %d ops kept in order, of %d rows", PER,
       NR * PER);
    ok(s.n == NR * PER && s.in_order, "every row seen once, in file order, the groups read");
    ok(t.nranks == NR, "the ranks: %d", t.nranks);
    cp_trace_free(&t);
}

static void scan(const char *path)
{
    cp_trace_t t;
    const cp_trace_scan_t *sc = NULL;
    char err[256] = "";
    int rc = cp_replay_read(path, "1-3", 0, NR, 0, &t, &sc, err, sizeof(err));
    ok(rc == 0 && sc != NULL && sc == cp_replay_scan(), "rank 0's read of --replay-ops 1-3 (%s)",
       err);
    size_t own = 0, a2av = 0;
    for (size_t i = 0; i < t.nops; i++) {
        own += t.ops[i].rank == 0 && t.ops[i].seq >= 1 && t.ops[i].seq <= 3;
        a2av += t.ops[i].rank != 0 && !strcmp(t.ops[i].op, "alltoallv");
    }
    ok(t.nops == 5 && own == 3 && a2av == 2, "its 3 ops in range and the 2 others' alltoallv");
    ok(sc->top == PER - 1 && sc->nops == 3 * NR, "the largest seq %lld, %zu ops in range",
       (long long)sc->top, sc->nops);
    ok(sc->first_ns == 1001000 && sc->end_ns == 1003102, "the window: %lld to %lld ns",
       (long long)sc->first_ns, (long long)sc->end_ns);
    uint32_t want = COLLPROF_BIT(COLLPROF_OP_ALLREDUCE) | COLLPROF_BIT(COLLPROF_OP_ALLTOALLV);
    ok(sc->used == want, "the ops used in range: allreduce, alltoallv");
    ok(sc->nr == NR && sc->all[0 * NR + 2] == 4 && sc->kept[0 * NR + 2] == 2 &&
           sc->all[0 * NR + 1] == 5 && sc->kept[0 * NR + 1] == 3 && sc->all[1 * NR + 2] == 0,
       "each group's collectives per member (the send not counted)");
    cp_trace_free(&t);
    rc = cp_replay_read(path, "", 0, 2, 1, &t, &sc, err, sizeof(err));
    ok(rc == 0 && sc == NULL && cp_replay_scan() == NULL && t.nops == NR * PER && !t.partial,
       "--shrink onto 2 ranks reads every rank's ops (%s)", err);
    cp_trace_free(&t);
    rc = cp_replay_read(path, "", 0, 2, 0, &t, &sc, err, sizeof(err));
    ok(rc == 0 && sc != NULL && t.nranks == NR && t.nops == PER + 2,
       "without --shrink: this rank's ops, the trace's %d ranks said", t.nranks);
    cp_trace_free(&t);
    cp_replay_scan_free();
}

int main(void)
{
    char path[] = "/tmp/collprof-scan-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        close(fd);
    }
    make_ops();
    ok(fd >= 0 && write_trace(path) == 0, "a 3-rank trace written");
    blocks(path);
    scan(path);
    unlink(path);
    return tap_done();
}
