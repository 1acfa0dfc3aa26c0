/*
 * collprof --replay --shrink (src/runner/replay_shrink.c, docs/replay.md "Shrinking a
 * trace"): an 8-rank trace folded onto 4 ranks: the groups' members folded and deduplicated
 * in order, only each group's representative's ops kept, sends and recvs kept only between
 * representatives on two run ranks, ops ordered by seq then trace rank and renumbered,
 * requests made distinct, all-to-all-v's splits rebalanced and block-split counts scaled.
 */
#include "config.h"

#include "runner/replay.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static collprof_trace_op_row_t op(int rank, int64_t seq, const char *name, int group)
{
    collprof_trace_op_row_t o;
    memset(&o, 0, sizeof(o));
    o.rank = rank;
    o.seq = seq;
    snprintf(o.op, sizeof(o.op), "%s", name);
    o.group = group;
    o.root = o.peer = -1;
    o.req = o.coalesced = o.split_off = -1;
    o.t_issue_ns = o.dur_ns = o.source_seq = -1;
    return o;
}

/* The trace: group 0 every rank, group 1 [0, 4], group 2 [5, 1, 6, 2]. */
static void build(cp_trace_t *t)
{
    static const int mem[] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 4, 5, 1, 6, 2};
    memset(t, 0, sizeof(*t));
    t->ngroups = 3;
    t->groups = calloc(3, sizeof(*t->groups));
    t->groups[0].size = 8;
    t->groups[1].size = 2;
    t->groups[1].member_off = 8;
    t->groups[2].size = 4;
    t->groups[2].member_off = 10;
    t->nmembers = 14;
    t->members = calloc(14, sizeof(*t->members));
    for (int i = 0; i < 14; i++) {
        t->members[i].rank = mem[i];
    }
    t->nsplits = 16;
    t->splits = calloc(16, sizeof(*t->splits));
    for (int i = 0; i < 8; i++) {
        t->splits[i].count = 10;    /* in: 80 in all */
        t->splits[8 + i].count = i; /* out: 28 in all */
    }
    t->ops = calloc(16, sizeof(*t->ops));
    size_t k = 0;
    t->ops[k] = op(0, 0, "alltoallv", 0);
    t->ops[k].nsplit = 8;
    t->ops[k].split_off = 0;
    t->ops[k].in_count = 80;
    t->ops[k++].out_count = 28;
    t->ops[k++] = op(4, 0, "alltoallv", 0); /* not the world's representative: dropped */
    t->ops[k] = op(0, 1, "send", 0);        /* to 4, not a representative: dropped */
    t->ops[k++].peer = 4;
    t->ops[k] = op(1, 1, "send", 0); /* to 2: kept */
    t->ops[k++].peer = 2;
    t->ops[k] = op(5, 0, "allreduce", 2); /* 5 represents run rank 1 in group 2 */
    t->ops[k++].req = 7;
    t->ops[k++] = op(1, 2, "allreduce", 2); /* 1 does not: dropped */
    t->ops[k] = op(1, 0, "allreduce", 0);
    t->ops[k].req = 7;
    t->ops[k++].in_count = 100;
    t->ops[k] = op(0, 2, "allgather", 0);
    t->ops[k].in_count = 16;
    t->ops[k++].out_count = 128;
    t->ops[k++] = op(4, 3, "barrier", 1); /* 4 folds onto 0, represented by 0: dropped */
    t->ops[k++] = op(0, 3, "barrier", 1);
    t->nops = k;
    t->nranks = 8;
}

int main(void)
{
    cp_trace_t t;
    build(&t);
    ok(cp_trace_shrink(&t, 4) == 0, "an 8-rank trace shrinks onto 4");
    ok(t.nranks == 4 && t.shrunk_from == 8, "4 ranks, shrunk from 8 (%d, %d)", t.nranks,
       t.shrunk_from);
    ok(t.groups[0].size == 4 && t.groups[1].size == 1 && t.groups[2].size == 2,
       "the world keeps 4 members, [0, 4] one, [5, 1, 6, 2] two (%d %d %d)", t.groups[0].size,
       t.groups[1].size, t.groups[2].size);
    const collprof_trace_member_row_t *m = t.members;
    ok(m[t.groups[1].member_off].rank == 0 && m[t.groups[2].member_off].rank == 1 &&
           m[t.groups[2].member_off + 1].rank == 2,
       "[0, 4] folds onto [0], [5, 1, 6, 2] onto [1, 2]");
    ok(t.nops == 6, "6 ops kept of 10 (%zu)", t.nops);
    /* run rank 0: alltoallv (seq 0), allgather (2), barrier (3); run rank 1: the world's
     * allreduce of trace rank 1 (seq 0), group 2's of trace rank 5 (seq 0), the send (1) */
    static const char *const want[] = {"alltoallv", "allgather", "barrier",
                                       "allreduce", "allreduce", "send"};
    static const int wrank[] = {0, 0, 0, 1, 1, 1}, wgroup[] = {0, 0, 1, 0, 2, 0};
    int order = t.nops == 6;
    for (size_t i = 0; order && i < 6; i++) {
        order = !strcmp(t.ops[i].op, want[i]) && t.ops[i].rank == wrank[i] &&
                t.ops[i].group == wgroup[i] && t.ops[i].seq == (int64_t)(i < 3 ? i : i - 3);
    }
    ok(order, "ordered by run rank, seq, trace rank; renumbered from 0 per rank");
    if (t.nops == 6) {
        const collprof_trace_op_row_t *a = &t.ops[0];
        ok(a->nsplit == 4 && a->in_count == 40 && a->out_count == 12 &&
               t.splits[a->split_off].count == 10 && t.splits[a->split_off + 3].count == 10 &&
               t.splits[a->split_off + 4].count == 3 && t.splits[a->split_off + 7].count == 3,
           "alltoallv's splits rebalanced: each of 4 peers the average, 10 in and 3 out (%llu, "
           "%llu)",
           (unsigned long long)a->in_count, (unsigned long long)a->out_count);
        ok(t.ops[1].in_count == 8 && t.ops[1].out_count == 64,
           "allgather keeps its block: 16 -> 8 in, 128 -> 64 out");
        ok(t.ops[3].req != t.ops[4].req && t.ops[3].req == 7 * 8 + 1 && t.ops[4].req == 7 * 8 + 5,
           "the two reqs 7 of trace ranks 1 and 5 made distinct (%lld, %lld)",
           (long long)t.ops[3].req, (long long)t.ops[4].req);
        ok(t.ops[5].peer == 2 && t.ops[3].in_count == 100,
           "the send keeps its peer 2; allreduce keeps its count");
    }
    cp_trace_free(&t);
    return tap_done();
}
