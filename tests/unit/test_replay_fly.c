/*
 * The memory guard's group buffers of a replay (src/runner/replay_fly.c, cp_replay_fly_peak;
 * docs/replay.md, "The memory guard"): per group, the most the rank's ops in flight at once
 * take, laid out as cp_replay_schedule lays them out, in program order and in NCCL order
 * (every op some backend can post posted and held until the next op of its queue after its
 * call or run, its wait, or the end).
 */
#include "config.h"

#include "runner/replay_int.h"
#include "tap.h"

#include <stdio.h>
#include <string.h>

static collprof_trace_op_row_t ops[16];
static cp_trace_t T;
static uint64_t peak[4];

/* Op NAME of rank 0 on group g, of elements floats (1024 B: 1024 + 64 in the buffers) */
static void op(const char *name, int g, uint64_t elements, int64_t req, int64_t coal)
{
    collprof_trace_op_row_t *o = &ops[T.nops];
    memset(o, 0, sizeof(*o));
    o->rank = 0;
    o->seq = (int64_t)T.nops;
    snprintf(o->op, sizeof(o->op), "%s", name);
    snprintf(o->dtype, sizeof(o->dtype), "float32");
    o->in_count = o->out_count = elements;
    o->bytes = 4 * elements;
    o->group = g;
    o->root = -1;
    o->peer = !strcmp(name, "send") || !strcmp(name, "recv") ? 1 : -1;
    o->req = req;
    o->coalesced = coal;
    o->split_off = -1;
    T.nops++;
}

static void peaks(int nccl)
{
    memset(peak, 0, sizeof(peak));
    ok(cp_replay_fly_peak(&T, 0, nccl, ~(uint32_t)0, peak) == 0, "%s order: computed",
       nccl ? "nccl" : "program");
}

int main(void)
{
    static collprof_trace_group_row_t g[2];
    static collprof_trace_member_row_t m[4] = {{0}, {1}, {0}, {1}};
    g[0] = (collprof_trace_group_row_t){.group = 0, .size = 2, .member_off = 0};
    g[1] = (collprof_trace_group_row_t){.group = 1, .size = 2, .member_off = 2};
    T = (cp_trace_t){
        .ops = ops, .groups = g, .ngroups = 2, .members = m, .nmembers = 4, .nranks = 3};
    const uint64_t K = 1024 + 64; /* one op of 256 floats in the buffers */

    /* blocking allreduces on group 0 and 1 by turns: one at a time in program order; in NCCL
     * order each held until the next op of its group's queue (a queue per group: the world
     * is 3 ranks) */
    op("allreduce", 0, 256, -1, -1), op("allreduce", 1, 256, -1, -1);
    op("allreduce", 0, 256, -1, -1), op("allreduce", 1, 256, -1, -1);
    peaks(0);
    ok(peak[0] == K && peak[1] == K, "program order: one op at a time (%llu, %llu)",
       (unsigned long long)peak[0], (unsigned long long)peak[1]);
    peaks(1);
    ok(peak[0] == K && peak[1] == K,
       "nccl order: each held until its group's next, one of a group at a time (%llu, %llu)",
       (unsigned long long)peak[0], (unsigned long long)peak[1]);

    /* two async allreduces on group 0, waited at the end: both in flight in program order;
     * in NCCL order the first completes at the second (its queue's next op) */
    T.nops = 0;
    op("allreduce", 0, 256, 1, -1), op("allreduce", 0, 256, 2, -1), op("allreduce", 1, 256, -1, -1);
    op("wait", 0, 0, 1, -1), op("wait", 0, 0, 2, -1);
    peaks(0);
    ok(peak[0] == 2 * K && peak[1] == K, "program order: two async ops in flight (%llu)",
       (unsigned long long)peak[0]);
    peaks(1);
    ok(peak[0] == K, "nccl order: the first completed at its queue's next op (%llu)",
       (unsigned long long)peak[0]);

    /* a coalesced call of three on group 0, then an allreduce on group 1, then one on 0: in
     * NCCL order the call stays in flight across group 1's op, until group 0's next */
    T.nops = 0;
    op("allreduce", 0, 256, -1, 7), op("allreduce", 0, 256, -1, 7), op("allreduce", 0, 256, -1, 7);
    op("allreduce", 1, 256, -1, -1), op("allreduce", 0, 512, -1, -1);
    peaks(0);
    ok(peak[0] == 3 * K && peak[1] == K, "program order: the call's three together (%llu)",
       (unsigned long long)peak[0]);
    peaks(1);
    ok(peak[0] == 3 * K && peak[1] == K, "nccl order: the call's three, then (%llu)",
       (unsigned long long)peak[0]);
    /* the next op of group 0 comes after the call completes: its top back at 0 */

    /* NCCL order, groups of every rank (the run of 2): an allreduce on group 0 (the job's
     * queue), a send on group 0 (group 0's own queue), an allreduce on group 1 (the job's): the
     * first held until the third, the send laid out above it; in program order the blocking
     * allreduce is done before the send */
    T.nops = 0;
    T.nranks = 2;
    op("allreduce", 0, 256, -1, -1), op("send", 0, 256, -1, -1), op("allreduce", 1, 256, -1, -1);
    peaks(0);
    ok(peak[0] == K && peak[1] == K, "program order: the allreduce done before the send (%llu)",
       (unsigned long long)peak[0]);
    peaks(1);
    ok(peak[0] == 2 * K && peak[1] == K,
       "nccl order: the allreduce in flight on the job's queue under the send (%llu)",
       (unsigned long long)peak[0]);
    memset(peak, 0, sizeof(peak));
    ok(cp_replay_fly_peak(&T, 0, 1, 0, peak) == 0 && peak[0] == K,
       "nccl order, no backend posting allreduce: it runs at once, the send alone (%llu)",
       (unsigned long long)peak[0]);
    return tap_done();
}
