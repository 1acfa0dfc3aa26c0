/*
 * Non-blocking operations: OSU's overlap arithmetic, the bounds of the
 * computation's calibration, the operations' facts and names, and the
 * summary's overlap table.  No timed assertion: the calibration is checked
 * for its bounds only (how long a loop takes depends on the machine).
 */
#include "config.h"

#include "colls/colls.h"
#include "cli/cli.h"
#include "runner/overlap.h"
#include "format/overlap.h"
#include "tap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int near(double a, double b)
{
    return fabs(a - b) < 1e-9;
}

static void test_pct(void)
{
    /* comm 100 us; compute 100 us; overall 100: all hidden, 200: nothing hidden */
    ok(near(cp_overlap_pct(100, 100, 100), 100), "overall = compute: 100 %% overlap");
    ok(near(cp_overlap_pct(200, 100, 100), 0), "overall = compute + comm: 0 %%");
    ok(near(cp_overlap_pct(150, 100, 100), 50), "half the communication hidden: 50 %%");
    ok(near(cp_overlap_pct(130, 100, 40), 25), "overall 130, compute 100, comm 40: 25 %%");
    ok(near(cp_overlap_pct(400, 100, 100), 0), "overall beyond compute + comm: clamped to 0");
    ok(near(cp_overlap_pct(80, 100, 100), 100), "overall below the compute: clamped to 100");
    ok(cp_overlap_pct(100, 50, 0) == 0 && cp_overlap_pct(100, 50, -1) == 0 &&
           cp_overlap_pct(100, 50, NAN) == 0,
       "no communication time (0, negative, NaN): 0 %%");
}

static void test_loops(void)
{
    const uint64_t max = UINT64_C(1) << 40;
    ok(cp_overlap_loops(100, 1000, 50, max) == 2000, "1000 loops in 50 us: 2000 for 100 us");
    ok(cp_overlap_loops(10, 1000, 30, max) == 333, "rounded to the nearest loop (333.3)");
    ok(cp_overlap_loops(1e-6, 1000, 50, max) == 1, "a tiny target: at least 1 loop");
    ok(cp_overlap_loops(0, 1000, 50, max) == 1 && cp_overlap_loops(-5, 1000, 50, max) == 1,
       "a target of 0 or below: 1 loop");
    ok(cp_overlap_loops(100, 0, 50, max) == 1, "no calibration loops: 1 loop");
    ok(cp_overlap_loops(100, 1000, 0, max) == max, "a calibration the clock did not see: the cap");
    ok(cp_overlap_loops(1e12, 1000, 1, max) == max, "a target beyond the cap: the cap");
    ok(cp_overlap_loops(100, 1000, 50, 0) == 1, "a cap of 0: 1 loop");
}

static void test_calibrate(void)
{
    ok(cp_overlap_calibrate(0) == 1 && cp_overlap_calibrate(-1) == 1 &&
           cp_overlap_calibrate(NAN) == 1,
       "calibrating for no time: 1 loop");
    uint64_t l = cp_overlap_calibrate(50);
    ok(l >= 1 && l < (UINT64_C(1) << 42), "50 us: between 1 loop and the cap (%llu)",
       (unsigned long long)l);
}

static void test_vocab(void)
{
    static const struct {
        collprof_op_t op, twin;
        const char *name;
    } t[] = {{COLLPROF_OP_IALLREDUCE, COLLPROF_OP_ALLREDUCE, "iallreduce"},
             {COLLPROF_OP_IALLGATHER, COLLPROF_OP_ALLGATHER, "iallgather"},
             {COLLPROF_OP_IALLTOALL, COLLPROF_OP_ALLTOALL, "ialltoall"},
             {COLLPROF_OP_IBROADCAST, COLLPROF_OP_BROADCAST, "ibroadcast"}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        const collprof_op_info_t *a = collprof_op_info(t[i].op), *b = collprof_op_info(t[i].twin);
        const unsigned same = ~(unsigned)(COLLPROF_OPF_NONBLOCKING | COLLPROF_OPF_DEFAULT);
        ok(collprof_op_blocking(t[i].op) == (int)t[i].twin &&
               !strcmp(collprof_op_name(t[i].op), t[i].name) &&
               cp_coll_from_name(t[i].name) == (int)t[i].op,
           "%s: its name, and %s its blocking twin", t[i].name, collprof_op_name(t[i].twin));
        ok((a->flags & COLLPROF_OPF_NONBLOCKING) && !(a->flags & COLLPROF_OPF_DEFAULT) &&
               (a->flags & same) == (b->flags & same) && a->busbw == b->busbw &&
               a->send == b->send && a->recv == b->recv,
           "%s: non-blocking, not in the default matrix, otherwise the facts of %s", t[i].name,
           collprof_op_name(t[i].twin));
        ok(cp_coll_get(t[i].op)->op == t[i].op &&
               cp_coll_get(t[i].op)->fill == cp_coll_get(t[i].twin)->fill &&
               cp_coll_get(t[i].op)->check == cp_coll_get(t[i].twin)->check,
           "%s: the data and check of %s", t[i].name, collprof_op_name(t[i].twin));
    }
    ok(cp_coll_from_name("ibcast") == COLLPROF_OP_IBROADCAST &&
           cp_coll_from_name("I_AllReduce") == COLLPROF_OP_IALLREDUCE,
       "ibcast and I_AllReduce are accepted");
    int blocking = 0;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        blocking += !(collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING);
        if (collprof_op_blocking(op) != op &&
            (collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING) == 0) {
            blocking = -100;
        }
    }
    ok(blocking == COLLPROF_OP_COUNT - 4, "4 non-blocking ops, the others their own twin");
}

static int spec_ops(const char *value, int *ops, int *nops)
{
    cp_spec_t s;
    char err[512];
    memset(&s, 0, sizeof(s));
    int rc = cp_spec_set(&s, "ops", value, err, sizeof(err));
    memcpy(ops, s.ops, sizeof(s.ops));
    *nops = s.nops;
    return rc;
}

static void test_ops_option(void)
{
    int ops[COLLPROF_OP_COUNT], n = 0, nb = 0;
    int rc = spec_ops("all", ops, &n);
    ok(rc == 0 && n == COLLPROF_OP_COUNT - 4, "--ops all: %d ops", n);
    for (int i = 0; i < n; i++) {
        nb += (collprof_op_info(ops[i])->flags & COLLPROF_OPF_NONBLOCKING) != 0;
    }
    ok(nb == 0, "--ops all: no non-blocking op");
    ok(spec_ops("nonblocking", ops, &n) == 0 && n == 4 && ops[0] == COLLPROF_OP_IALLREDUCE &&
           ops[3] == COLLPROF_OP_IBROADCAST,
       "--ops nonblocking: the 4, in id order");
    ok(spec_ops("allreduce,nonblocking,iallreduce", ops, &n) == 0 && n == 5 &&
           ops[0] == COLLPROF_OP_ALLREDUCE,
       "--ops allreduce,nonblocking,iallreduce: 5 ops, no duplicate");
    ok(spec_ops("all,nonblocking", ops, &n) == 0 && n == COLLPROF_OP_COUNT,
       "--ops all,nonblocking: every op");
    ok(spec_ops("ibcast", ops, &n) == 0 && n == 1 && ops[0] == COLLPROF_OP_IBROADCAST,
       "--ops ibcast");
    ok(spec_ops("nonblock", ops, &n) != 0 && spec_ops("allreduce,,nonblocking", ops, &n) != 0,
       "--ops nonblock and an empty item are refused");
}

static void row(collprof_result_row_t *r, const char *be, const char *op, const char *status,
                double overlap)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->backend, sizeof(r->backend), "%s", be);
    snprintf(r->op, sizeof(r->op), "%s", op);
    snprintf(r->status, sizeof(r->status), "%s", status);
    snprintf(r->variant, sizeof(r->variant), "default");
    snprintf(r->memory, sizeof(r->memory), "host");
    snprintf(r->dtype, sizeof(r->dtype), "float32");
    r->bytes = 4096;
    r->count = 1024;
    r->overall_us = 150;
    r->comm_us = 100;
    r->compute_us = 100;
    r->overlap_pct = overlap;
}

static void test_table(void)
{
    collprof_result_row_t r[5];
    row(&r[0], "mpi", "iallreduce", "ok", 50);
    row(&r[1], "mpi", "allreduce", "ok", 0);
    row(&r[2], "self", "ialltoall", "ok", 12.5);
    row(&r[3], "mpi", "ibroadcast", "unsupported", 0);
    row(&r[4], "mpi", "iallgather", "wrong", 25);
    char buf[8192] = "";
    FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");
    cp_overlap_print(f, r, 5);
    fclose(f);
    const char *mpi = strstr(buf, "\nbackend mpi\n"), *self = strstr(buf, "\nbackend self\n");
    ok(mpi != NULL && self != NULL && mpi < self && strstr(self + 1, "backend mpi") == NULL,
       "one table per backend, in order of first appearance");
    ok(strstr(buf, "iallreduce") != NULL && strstr(buf, " 50.0\n") != NULL &&
           strstr(buf, "iallgather") != NULL && strstr(buf, " 12.5\n") != NULL,
       "measured rows (ok or wrong) with their overlap");
    ok(strstr(buf, "ibroadcast") == NULL && strstr(buf, "  allreduce") == NULL,
       "no unsupported or blocking row");
    char none[256] = "";
    f = fmemopen(none, sizeof(none) - 1, "w");
    cp_overlap_print(f, &r[1], 1);
    fclose(f);
    ok(none[0] == '\0', "no non-blocking row: no table");
}

int main(void)
{
    test_pct();
    test_loops();
    test_calibrate();
    test_vocab();
    test_ops_option();
    test_table();
    return tap_done();
}
