/*
 * The check's simulation of the replay's schedule (replay_check.h; the rules of
 * replay_issue.c): each rank runs its ops in order; a blocking collective waits until every
 * member reached it; an async op is posted and completed at its wait (at the end without
 * one); the ops of a coalesced call, and a run of blocking sends and recvs of one group, are
 * posted and completed before the next op not of them; a posted op completes once every
 * party reached it (a collective: its members; a send: its recv).  A rank that cannot go on
 * waits on one instance; when none can, the replay would hang: the cycle is the refusal.
 * Under --replay-order nccl (cp_replay_check_order) every op the backends can all post is
 * posted, and a rank's op waits first for the ops of its group before it (back to the last
 * one not of its coalesced call or run of sends and recvs) to complete: a per-group queue;
 * its async ops complete at their wait where that comes first, every op by the end.
 * Each op is visited a bounded number of times: O(ops + instances).
 */
#include "config.h"

#include "runner/replay_check.h"
#include "runner/replay_check_int.h"

#include <collprof/vocab.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_check_opname(const crow_t *c, char *s, size_t len)
{
    if (c->kind == CK_SEND || c->kind == CK_RECV) {
        snprintf(s, len, "%s %s %d", c->kind == CK_SEND ? "send" : "recv",
                 c->kind == CK_SEND ? "to" : "from", c->peer);
    } else {
        snprintf(s, len, "%s", c->opc >= 0 ? collprof_op_name(c->opc) : "wait");
    }
}

static int sim_nccl;                     /* --replay-order nccl */
static uint32_t sim_post = ~(uint32_t)0; /* the ops every backend of the run can post */

void cp_replay_check_order(int nccl, uint32_t post_mask)
{
    sim_nccl = nccl;
    sim_post = post_mask;
}

typedef struct rk {
    size_t pos, run, tail; /**< next op; the open run's first op (-1: none); end's cursor */
    int64_t key;           /**< the open run's coalesced number, or its group (p2p) */
    int coal, arrived, done;
    size_t blk, at; /**< blocked: on instance blk, for op at */
} rk_t;

typedef struct sim {
    chk_t *c;
    rk_t *r;
    uint32_t *got;
    int *head, *next, *q; /**< the ranks waiting on each instance; the ready queue */
    size_t nq;
    const cp_trace_t *t;
    size_t *prev, *first; /**< nccl order: the op of its group before it (SIZE_MAX: none);
                               the first op of its coalesced call or run (else itself) */
} sim_t;

/* Is c an op the replay issues (a collective, a send, a recv)? */
static int issued(const crow_t *c)
{
    return c->kind == CK_COLL || c->kind == CK_SEND || c->kind == CK_RECV;
}

static int matched(const sim_t *s, size_t x)
{
    return s->got[x] >= s->c->need[x];
}

static void wake(sim_t *s, size_t x)
{
    for (int k = s->head[x]; k >= 0; k = s->next[k]) {
        s->q[s->nq++] = k;
    }
    s->head[x] = -1;
}

static int block(sim_t *s, int k, size_t x, size_t at)
{
    s->r[k].blk = x;
    s->r[k].at = at;
    s->next[k] = s->head[x];
    s->head[x] = k;
    return 1;
}

static int in_run(const rk_t *st, const crow_t *c)
{
    if (st->coal) {
        return (c->flags & CF_COAL) && c->coal == st->key;
    }
    return (c->kind == CK_SEND || c->kind == CK_RECV) && !(c->flags & (CF_ASYNC | CF_COAL)) &&
           c->group == st->key;
}

/* Close rank k's open run before op i: 1 when blocked on one of its ops */
static int close_run(sim_t *s, int k, size_t i)
{
    rk_t *st = &s->r[k];
    for (; st->run != SIZE_MAX && st->run < i; st->run++) {
        const crow_t *c = &s->c->r[st->run];
        size_t x = s->c->inst[st->run];
        if (c->kind != CK_SKIP && c->kind != CK_WAIT && !(c->flags & CF_ASYNC) && !matched(s, x)) {
            return block(s, k, x, st->run);
        }
    }
    st->run = SIZE_MAX;
    return 0;
}

/* The end of rank k: its run closed, its async ops without a wait completed; 1: blocked */
static int finish(sim_t *s, int k)
{
    rk_t *st = &s->r[k];
    size_t end = s->c->start[k + 1];
    if (close_run(s, k, end)) {
        return 1;
    }
    for (; st->tail < end; st->tail++) {
        const crow_t *c = &s->c->r[st->tail];
        int open = sim_nccl ? issued(c)
                            : (c->flags & CF_ASYNC) && c->kind != CK_SKIP && c->kind != CK_WAIT &&
                                  !s->c->waited[st->tail];
        if (open && !matched(s, s->c->inst[st->tail])) {
            return block(s, k, s->c->inst[st->tail], st->tail);
        }
    }
    st->done = 1;
    return 0;
}

/* nccl order: the queue of op c, its group's; a collective on a group of every rank: the
 * job's (ngroups), whose context the groups of every rank share in the replay; ngroups + 1:
 * none */
static size_t key(const sim_t *s, const crow_t *c)
{
    const cp_trace_t *t = s->t;
    if (!issued(c) || c->group < 0 || (size_t)c->group >= t->ngroups) {
        return t->ngroups + 1;
    }
    return c->kind == CK_COLL && t->groups[c->group].size >= s->c->nr ? t->ngroups
                                                                      : (size_t)c->group;
}

/* nccl order: op i of rank k (issued) waits for the ops of its group before it: 1 blocked */
static int queue(sim_t *s, int k, size_t i)
{
    size_t p = s->prev[i];
    if (p == SIZE_MAX || s->first[p] == s->first[i]) {
        return 0; /* the first of its group, or of its call or run as the one before */
    }
    for (size_t j = s->first[p]; j <= p; j++) {
        const crow_t *c = &s->c->r[j];
        if (issued(c) && key(s, c) == key(s, &s->c->r[i]) && !matched(s, s->c->inst[j])) {
            return block(s, k, s->c->inst[j], j);
        }
    }
    return 0;
}

/* Op i of rank k: 1 when blocked (it runs again from there once woken) */
static int one(sim_t *s, int k, size_t i)
{
    rk_t *st = &s->r[k];
    const crow_t *c = &s->c->r[i];
    size_t x = s->c->inst[i];
    if (sim_nccl && issued(c) && queue(s, k, i)) {
        return 1;
    }
    if (st->run != SIZE_MAX && !in_run(st, c) && close_run(s, k, i)) {
        return 1;
    }
    if (c->kind == CK_WAIT && x != SIZE_MAX && !matched(s, s->c->inst[x])) {
        return block(s, k, s->c->inst[x], x);
    }
    if (c->kind != CK_COLL && c->kind != CK_SEND && c->kind != CK_RECV) {
        return 0;
    }
    if (!st->arrived) {
        st->arrived = 1;
        if (++s->got[x] >= s->c->need[x]) {
            wake(s, x);
        }
    }
    /* (a collective the backends cannot post runs at once, async or coalesced or not) */
    int can = c->opc >= 0 && c->opc < 32 && (sim_post >> c->opc) & 1u;
    int posted = c->kind != CK_COLL || (can && (sim_nccl || (c->flags & (CF_ASYNC | CF_COAL))));
    if (!posted && !matched(s, x)) {
        return block(s, k, x, i);
    }
    if (!sim_nccl && st->run == SIZE_MAX && !(c->flags & CF_ASYNC) && posted) {
        st->run = i;
        st->coal = (c->flags & CF_COAL) != 0;
        st->key = st->coal ? c->coal : c->group;
    }
    return 0;
}

/* Run rank k as far as it goes */
static void go(sim_t *s, int k)
{
    rk_t *st = &s->r[k];
    while (!st->done) {
        if (st->pos == s->c->start[k + 1]) {
            if (finish(s, k)) {
                return;
            }
            continue;
        }
        if (one(s, k, st->pos)) {
            return;
        }
        st->pos++;
        st->arrived = 0;
    }
}

/* Has rank m reached instance x? */
static int reached(const sim_t *s, int m, size_t x)
{
    const rk_t *st = &s->r[m];
    size_t end = st->done ? s->c->start[m + 1] : st->pos + (st->arrived ? 1 : 0);
    for (size_t i = s->c->start[m]; i < end && i < s->c->start[m + 1]; i++) {
        const crow_t *c = &s->c->r[i];
        if ((c->kind == CK_COLL || c->kind == CK_SEND || c->kind == CK_RECV) &&
            s->c->inst[i] == x) {
            return 1;
        }
    }
    return 0;
}

/* The rank blocked rank k waits for: its peer, or a member of its group not yet there */
static int waits_for(const sim_t *s, const cp_trace_t *t, int k)
{
    const crow_t *c = &s->c->r[s->r[k].at];
    if (c->kind != CK_COLL) {
        return c->peer;
    }
    const collprof_trace_group_row_t *g = &t->groups[c->group];
    for (int i = 0; i < g->size; i++) {
        int m = t->members[g->member_off + i].rank;
        if (m >= 0 && m < s->c->nr && !reached(s, m, s->c->inst[s->r[k].at])) {
            return m;
        }
    }
    return -1;
}

/* The refusal: the cycle of ranks waiting on each other, from the lowest blocked rank */
static void cycle(const sim_t *s, const cp_trace_t *t, char *err, size_t len)
{
    int nr = s->c->nr, k = 0, nb = 0;
    int *seen = calloc((size_t)nr + 1, sizeof(int));
    for (int i = nr - 1; i >= 0; i--) {
        if (!s->r[i].done) {
            k = i;
            nb++;
        }
    }
    for (int step = 1; seen != NULL && k >= 0 && k < nr && !s->r[k].done && !seen[k]; step++) {
        seen[k] = step;
        k = waits_for(s, t, k);
    }
    int from = k;
    size_t l = (size_t)snprintf(err, len, "the replay would deadlock (%d rank%s blocked; %s):", nb,
                                nb == 1 ? "" : "s",
                                sim_nccl ? "NCCL order: each op posted on its group's queue "
                                           "(the collectives of groups of every rank: one "
                                           "queue), one the backend cannot post blocking"
                                         : "ops issued in the trace's order, collectives "
                                           "blocking");
    for (int n = 0; seen != NULL && k >= 0 && k < nr && !s->r[k].done && l < len && n < 6; n++) {
        const crow_t *c = &s->c->r[s->r[k].at];
        char op[64];
        cp_check_opname(c, op, sizeof(op));
        int w = waits_for(s, t, k);
        l += (size_t)snprintf(err + l, len - l,
                              " rank %d at seq %lld (%s on group %d) waits for "
                              "rank %d;",
                              k, (long long)c->seq, op, c->group, w);
        k = w;
        if (k == from) {
            break;
        }
    }
    if (l < len && l > 0 && err[l - 1] == ';') {
        err[l - 1] = '\0';
    }
    free(seen);
}

/* A blocking send or recv (of a run of them)? */
static int plain(const crow_t *c)
{
    return (c->kind == CK_SEND || c->kind == CK_RECV) && !(c->flags & (CF_ASYNC | CF_COAL));
}

/* nccl order: s->prev and s->first of every row, rank by rank; 0, or -2 out of memory */
static int queues(sim_t *s, const cp_trace_t *t)
{
    const chk_t *c = s->c;
    size_t *last = malloc((t->ngroups + 2) * sizeof(size_t));
    s->prev = malloc((c->n + 1) * sizeof(size_t));
    s->first = malloc((c->n + 1) * sizeof(size_t));
    for (size_t g = 0; last != NULL && g < t->ngroups + 2; g++) {
        last[g] = SIZE_MAX;
    }
    for (int k = 0; last != NULL && s->prev != NULL && s->first != NULL && k < c->nr; k++) {
        for (size_t i = c->start[k]; i < c->start[k + 1]; i++) {
            const crow_t *a = &c->r[i], *b = &c->r[i > c->start[k] ? i - 1 : i];
            int same =
                i > c->start[k] && (((a->flags & b->flags & CF_COAL) && a->coal == b->coal) ||
                                    (plain(a) && plain(b) && a->group == b->group));
            size_t q = key(s, a);
            s->first[i] = same ? s->first[i - 1] : i;
            s->prev[i] = q <= t->ngroups ? last[q] : SIZE_MAX;
            last[q] = i;
        }
        for (size_t i = c->start[k]; i < c->start[k + 1]; i++) { /* (reset: O(its rows)) */
            last[key(s, &c->r[i])] = SIZE_MAX;
        }
    }
    int rc = last != NULL && s->prev != NULL && s->first != NULL ? 0 : -2;
    free(last);
    return rc;
}

int cp_check_sim(chk_t *c, const cp_trace_t *t, char *err, size_t len)
{
    sim_t s = {.c = c, .t = t};
    size_t nr = (size_t)c->nr;
    s.r = calloc(nr + 1, sizeof(rk_t));
    s.got = calloc(c->ninst + 1, sizeof(uint32_t));
    s.head = malloc((c->ninst + 1) * sizeof(int));
    s.next = calloc(nr + 1, sizeof(int));
    s.q = malloc((nr + 1) * sizeof(int));
    int rc = s.r && s.got && s.head && s.next && s.q ? 0 : -2;
    rc = rc == 0 && sim_nccl ? queues(&s, t) : rc;
    for (size_t x = 0; rc == 0 && x <= c->ninst; x++) {
        s.head[x] = -1;
    }
    for (size_t k = 0; rc == 0 && k < nr; k++) {
        s.r[k] = (rk_t){.pos = c->start[k], .run = SIZE_MAX, .tail = c->start[k]};
        s.q[s.nq++] = (int)k;
    }
    while (rc == 0 && s.nq > 0) { /* (a rank is queued once: woken only while blocked) */
        go(&s, s.q[--s.nq]);
    }
    for (size_t k = 0; rc == 0 && k < nr; k++) {
        rc = s.r[k].done ? 0 : -1;
    }
    if (rc == -1) {
        cycle(&s, t, err, len);
    }
    free(s.r);
    free(s.got);
    free(s.head);
    free(s.next);
    free(s.q);
    free(s.prev);
    free(s.first);
    return rc;
}
