/*
 * collprof --replay's check before the replay (src/runner/replay_check.c, replay_sim.c;
 * docs/replay.md, "The check before the replay") on small traces of two ranks and two groups
 * of both, against the replay's schedule: an async op posted and completed at its wait (at the
 * end without one), a coalesced call's ops posted together, a run of blocking sends and recvs
 * of one group posted together and completed before the next op; a blocking collective waits
 * for its members; under --replay-order nccl (cp_replay_check_order), every op the backends
 * can post posted on its group's queue (a collective on a group of every rank: the job's) and
 * completed before the next op of that queue.  Each trace replays, or is refused with its
 * cycle.
 */
#include "config.h"

#include "runner/replay_check.h"
#include "tap.h"

#include <collprof/plugin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cp_trace_t T;
static int64_t seq[3];
static char err[1024];

/* A row of rank r's next op NAME on group g, float32, no times, the rest for the caller */
static collprof_trace_op_row_t row(int r, const char *name, int g)
{
    collprof_trace_op_row_t o;
    memset(&o, 0, sizeof(o));
    o.rank = r;
    o.seq = seq[r]++;
    snprintf(o.op, sizeof(o.op), "%s", name);
    snprintf(o.dtype, sizeof(o.dtype), "float32");
    o.group = g;
    o.t_issue_ns = o.dur_ns = o.source_seq = -1;
    return o;
}

/* One op "NAME[/g][:req][@coalesced][>peer]" of rank r, as a row */
static void op(int r, const char *name, int g, int64_t req, int64_t coal, int peer)
{
    collprof_trace_op_row_t o = row(r, name, g);
    o.in_count = o.out_count = 256;
    o.bytes = 1024;
    o.root = -1;
    o.peer = peer;
    o.req = req;
    o.coalesced = coal;
    o.split_off = -1;
    cp_replay_check_row(&T, &o);
}

static void start(void)
{
    seq[0] = seq[1] = seq[2] = 0;
    err[0] = '\0';
    cp_replay_check_begin();
}

static int end(void)
{
    return cp_replay_check_end(&T, err, sizeof(err));
}

#define AR(r, g)      op(r, "allreduce", g, -1, -1, -1)
#define IAR(r, g, q)  op(r, "allreduce", g, q, -1, -1)
#define WAIT(r, g, q) op(r, "wait", g, q, -1, -1)
#define SEND(r, g, p) op(r, "send", g, -1, -1, p)
#define RECV(r, g, p) op(r, "recv", g, -1, -1, p)
#define CAR(r, g, c)  op(r, "allreduce", g, -1, c, -1)

#define ALL (~(uint32_t)0)

/* The NCCL Inspector fixture's order (tests/data/trace): rank 0 an allreduce on group 1,
 * then a send on group 0; rank 1 the recv first */
static void crossed_p2p(void)
{
    start();
    AR(0, 1), SEND(0, 0, 1);
    RECV(1, 0, 0), AR(1, 1);
}

/* --replay-order nccl: on T (groups 0 and 1 of both ranks), then on three ranks (groups 0
 * and 1 of ranks 0 and 1, group 2 of all three) */
static void nccl_order(void)
{
    cp_replay_check_order(0, ALL);
    crossed_p2p();
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (allreduce on group 1) waits for rank 1; "
                                 "rank 1 at seq 0 (recv from 0 on group 0) waits for rank 0"),
       "program order: the Inspector fixture's order is a cycle (%s)", err);
    cp_replay_check_order(1, ALL);
    crossed_p2p();
    ok(end() == 0, "nccl order: the Inspector fixture's order replays (%s)", err);
    cp_replay_check_order(1, 0);
    crossed_p2p();
    ok(end() == 0, "nccl order, allreduce not posted: the recv is, it replays (%s)", err);

    cp_replay_check_order(1, ALL); /* groups of every rank: one queue, the job's context */
    start();
    AR(0, 0), AR(0, 1);
    AR(1, 1), AR(1, 0);
    ok(end() != 0 && strstr(err, "NCCL order") &&
           strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1"),
       "nccl order: crossed collectives on two groups of every rank: the cycle (%s)", err);

    static collprof_trace_group_row_t g3[3];
    static collprof_trace_member_row_t m3[7] = {{0}, {1}, {0}, {1}, {0}, {1}, {2}};
    g3[0] = (collprof_trace_group_row_t){.group = 0, .size = 2, .member_off = 0};
    g3[1] = (collprof_trace_group_row_t){.group = 1, .size = 2, .member_off = 2};
    g3[2] = (collprof_trace_group_row_t){.group = 2, .size = 3, .member_off = 4};
    cp_trace_t two = T;
    T = (cp_trace_t){.groups = g3, .ngroups = 3, .members = m3, .nmembers = 7, .nranks = 3};
    start(); /* crossed on groups 0 and 1 of two of three ranks: a queue each */
    AR(0, 0), AR(0, 1), AR(0, 2);
    AR(1, 1), AR(1, 0), AR(1, 2);
    AR(2, 2);
    ok(end() == 0, "nccl order: crossed collectives on two groups, a queue each: ok (%s)", err);
    cp_replay_check_order(1, ALL & ~COLLPROF_BIT(COLLPROF_OP_ALLREDUCE));
    start(); /* the same on a backend that cannot post allreduce: blocking, a cycle */
    AR(0, 0), AR(0, 1), AR(0, 2);
    AR(1, 1), AR(1, 0), AR(1, 2);
    AR(2, 2);
    ok(end() != 0 && strstr(err, "NCCL order") &&
           strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1"),
       "nccl order, allreduce not posted: the crossed collectives' cycle (%s)", err);
    cp_replay_check_order(1, ALL);
    start(); /* one queue: rank 0's allreduce after its send, rank 1's before its recv */
    SEND(0, 0, 1), AR(0, 0), AR(0, 2);
    AR(1, 0), RECV(1, 0, 0), AR(1, 2);
    AR(2, 2);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (send to 1 on group 0) waits for rank 1"),
       "nccl order: a send before a collective of its group, crossed: the cycle (%s)", err);
    T = two;
    cp_replay_check_order(0, ALL & ~COLLPROF_BIT(COLLPROF_OP_ALLREDUCE));
    start(); /* program order, allreduce not posted: an async one runs at once, blocking */
    IAR(0, 0, 1), AR(0, 1), WAIT(0, 0, 1);
    AR(1, 1), AR(1, 0);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1"),
       "program order, allreduce not posted: an async one crossed is a cycle (%s)", err);
    start(); /* ... and so do coalesced ones */
    CAR(0, 0, 7), CAR(0, 1, 7);
    CAR(1, 1, 9), CAR(1, 0, 9);
    ok(end() != 0 && strstr(err, "would deadlock"),
       "program order, allreduce not posted: coalesced calls crossed are a cycle (%s)", err);
    cp_replay_check_order(0, ALL);
}

/* Waits paired as the replay pairs them (replay_issue.c, wait_of): each async op takes the first
 * wait after it naming its req, of its group where there is one */
static void req_pairing(void)
{
    start(); /* one req twice in flight on one group: its waits in the order of its ops */
    IAR(0, 0, 5), IAR(0, 0, 5), WAIT(0, 0, 5), AR(0, 1), WAIT(0, 0, 5);
    IAR(1, 0, 5), WAIT(1, 0, 5), AR(1, 1), IAR(1, 0, 5), WAIT(1, 0, 5);
    ok(end() == 0, "a req in flight twice: the first wait completes the first op, ok (%s)", err);

    start(); /* one req on two groups (numbered per group): a wait completes its group's op */
    IAR(0, 0, 0), IAR(0, 1, 0), WAIT(0, 0, 0), AR(0, 0), WAIT(0, 1, 0);
    IAR(1, 0, 0), WAIT(1, 0, 0), AR(1, 0), IAR(1, 1, 0), WAIT(1, 1, 0);
    ok(end() == 0, "a req of two groups: each wait completes its group's op, ok (%s)", err);

    start(); /* ... and where its group has none, the first of any group's */
    IAR(0, 0, 0), WAIT(0, 1, 0), AR(0, 1);
    AR(1, 1), IAR(1, 0, 0), WAIT(1, 0, 0);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1"),
       "a wait of another group completes the op without one of its own: the cycle (%s)", err);
}

/* A variable op NAME of rank r on group g: its own counts in, out, its splits at soff (n of
 * them each way; -1: none), its root, its req */
static void vop(int r, const char *name, int g, uint64_t in, uint64_t out, int64_t soff, int root,
                int64_t req)
{
    collprof_trace_op_row_t o = row(r, name, g);
    o.in_count = in;
    o.out_count = out;
    o.bytes = 4 * (in > out ? in : out);
    o.root = root;
    o.peer = -1;
    o.req = req;
    o.coalesced = -1;
    o.split_off = soff;
    o.nsplit = soff >= 0 ? 2 : 0;
    cp_replay_check_row(&T, &o);
}

#define AGV(r, g) vop(r, "allgatherv", g, 100 + 100 * (uint64_t)(r), 300, -1, -1, -1)
#define RS(r, g)  vop(r, "reducescatter", g, 12, 4 + 4 * (uint64_t)(r), -1, -1, -1)

/* The variable ops and reduce-scatters, matched per name as the replay matches them: a cycle
 * through one, one the replay skips on every member (not a cycle), one refused */
static void vops(void)
{
    /* rank 0 sends 10 to itself, 20 to rank 1; rank 1 30 to rank 0, 40 to itself; rank 1's
     * expects 20 from rank 0 (at 8), or 21 (at 12: disagreeing) */
    static collprof_trace_split_row_t sp[16] = {{10}, {20}, {10}, {30}, {30}, {40},
                                                {20}, {40}, {30}, {40}, {21}, {40}};
    T.splits = sp;
    T.nsplits = 12;
    start();
    AGV(0, 0), AR(0, 1);
    AR(1, 1), AGV(1, 0);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (allgatherv on group 0) waits for rank 1; rank "
                                 "1 at seq 0 (allreduce on group 1) waits for rank 0"),
       "an allgatherv crossed with an allreduce on another group: the cycle (%s)", err);
    start();
    vop(0, "alltoallv", 0, 30, 40, 0, -1, -1), AR(0, 1);
    AR(1, 1), vop(1, "alltoallv", 0, 70, 60, 4, -1, -1);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (alltoallv on group 0) waits for rank 1"),
       "an alltoallv whose splits agree, crossed: the cycle (%s)", err);
    start();
    vop(0, "alltoallv", 0, 30, 40, 0, -1, -1), AR(0, 1);
    AR(1, 1), vop(1, "alltoallv", 0, 70, 61, 8, -1, -1);
    ok(end() == 0, "an alltoallv whose splits disagree: skipped by every member, no cycle (%s)",
       err);
    start();
    RS(0, 0), AR(0, 1);
    AR(1, 1), RS(1, 0);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (reducescatter on group 0) waits for rank 1"),
       "a reducescatter of unequal blocks, crossed: the cycle (%s)", err);
    start();
    RS(0, 0), AR(0, 0);
    AR(1, 0);
    ok(end() != 0 && strstr(err, "rank 0's reducescatter (seq 0) has no match on rank 1"),
       "a reducescatter one member lacks: refused (%s)", err);
    start();
    AGV(0, 0), AR(0, 0);
    AR(1, 0);
    ok(end() == 0, "an allgatherv one member lacks: skipped by every member (%s)", err);
    start();
    vop(0, "gatherv", 0, 5, 12, -1, 0, -1);
    vop(1, "gatherv", 0, 7, 0, -1, 1, -1);
    ok(end() != 0 && strstr(err, "rank 0's gatherv (seq 0) has root 0, rank 1's (seq 0) root 1"),
       "a gatherv whose members' roots differ: refused (%s)", err);
    start();
    vop(0, "allgatherv", 0, 100, 300, -1, -1, 4), AR(0, 1), WAIT(0, 0, 4);
    AR(1, 1), AGV(1, 0);
    ok(end() == 0, "an async allgatherv crossed with a blocking allreduce: ok (%s)", err);
    cp_replay_check_order(1, ALL);
    start();
    RS(0, 0), AR(0, 1);
    AR(1, 1), RS(1, 0);
    ok(end() != 0 && strstr(err, "NCCL order") &&
           strstr(err, "rank 0 at seq 0 (reducescatter on group 0) waits for rank 1"),
       "nccl order: a reducescatter crossed on the job's queue: the cycle (%s)", err);
    cp_replay_check_order(0, ALL);
    T.splits = NULL;
    T.nsplits = 0;
}

int main(void)
{
    static collprof_trace_group_row_t groups[2];
    static collprof_trace_member_row_t members[4] = {{0}, {1}, {0}, {1}};
    groups[0] = (collprof_trace_group_row_t){.group = 0, .size = 2, .member_off = 0};
    groups[1] = (collprof_trace_group_row_t){.group = 1, .size = 2, .member_off = 2};
    T = (cp_trace_t){
        .groups = groups, .ngroups = 2, .members = members, .nmembers = 4, .nranks = 2};

    start(); /* rank 0 posts g0, blocks on g1; rank 1 blocks on g0 (posted), then g1 */
    IAR(0, 0, 1), AR(0, 1), WAIT(0, 0, 1);
    AR(1, 0), AR(1, 1);
    ok(end() == 0, "an async allreduce crossed with a blocking one on another group: ok (%s)", err);

    start(); /* the same, blocking: a cycle */
    AR(0, 0), AR(0, 1);
    AR(1, 1), AR(1, 0);
    ok(end() != 0 && strstr(err, "would deadlock") &&
           strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1; rank 1 at seq 0 "
                       "(allreduce on group 1) waits for rank 0"),
       "two blocking allreduces in crossed order: the cycle (%s)", err);

    start(); /* a blocking send and recv each way: one run, posted together */
    SEND(0, 0, 1), RECV(0, 0, 1);
    SEND(1, 0, 0), RECV(1, 0, 0);
    ok(end() == 0, "a run of blocking sends and recvs crossed: posted together, ok (%s)", err);

    start(); /* the send's run ends at the allreduce, which rank 1 waits in before its recv */
    SEND(0, 0, 1), AR(0, 1);
    AR(1, 1), RECV(1, 0, 0);
    ok(end() != 0 && strstr(err, "rank 0 at seq 0 (send to 1 on group 0) waits for rank 1"),
       "a send completed before a collective its receiver waits in first: the cycle (%s)", err);

    start(); /* coalesced calls in crossed order: posted, completed together */
    CAR(0, 0, 7), CAR(0, 1, 7);
    CAR(1, 1, 9), CAR(1, 0, 9);
    ok(end() == 0, "coalesced calls in crossed group order: ok (%s)", err);

    start(); /* an async op without a wait: completed at the end */
    IAR(0, 0, 3), AR(0, 1);
    AR(1, 1), AR(1, 0);
    ok(end() == 0, "an async op without a wait completes at the end: ok (%s)", err);

    req_pairing();

    start(); /* its wait before the other group's allreduce: a cycle */
    IAR(0, 0, 1), WAIT(0, 0, 1), AR(0, 1);
    AR(1, 1), AR(1, 0);
    ok(end() != 0 && strstr(err, "would deadlock") &&
           strstr(err, "rank 0 at seq 0 (allreduce on group 0) waits for rank 1"),
       "an async op waited before the collective its peer blocks in first: the cycle (%s)", err);

    start(); /* one rank's file of a group of two */
    AR(0, 0), AR(0, 1);
    ok(end() != 0 && strstr(err, "rank 1, a member, has no collective #1"),
       "a trace of one rank of a 2-rank group: refused (%s)", err);

    start(); /* a recv without its send */
    RECV(1, 0, 0);
    ok(end() != 0 && strstr(err, "rank 0 sends 0 messages to rank 1, which receives 1 from it"),
       "a recv without its send: refused (%s)", err);

    start(); /* sizes: a root that differs */
    op(0, "broadcast", 0, -1, -1, -1);
    collprof_trace_op_row_t b;
    memset(&b, 0, sizeof(b));
    b.rank = 1;
    snprintf(b.op, sizeof(b.op), "broadcast");
    b.root = 1;
    b.peer = -1;
    b.req = b.coalesced = b.split_off = -1;
    b.in_count = b.out_count = 256;
    snprintf(b.dtype, sizeof(b.dtype), "float32");
    cp_replay_check_row(&T, &b);
    ok(end() != 0 && strstr(err, "collective #1 differs"),
       "a broadcast whose root differs: refused (%s)", err);
    nccl_order();
    vops();
    return tap_done();
}
