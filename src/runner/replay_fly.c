/*
 * The memory guard's bytes of a rank (cp_replay_rank_bytes, replay.h): its ops and, per
 * group, its two buffers as large as cp_replay_fly_peak finds them: per
 * group, the most that cp_replay_schedule (replay_issue.c) would lay out in its buffers at
 * once, before any backend is known.  The rules are the replay's: each op takes
 * cp_replay_bound_bytes at the group's top; a posted op keeps its place until it completes, and
 * the group's top falls back to 0 once none of its ops is in flight.  Posted: a send or recv,
 * an async or coalesced collective, and under --replay-order nccl every collective, where
 * some backend of the run can post its op (the one that posts most: an upper bound).  Completed: an
 * async op at its wait (at the end without one), a coalesced call's ops and a run of blocking sends
 * and recvs of one group at the next op not of them; under nccl order also at the next op of its
 * queue after its call or run (its group's; a collective on a group of every rank: the job's),
 * where that comes first.  Time and memory O(the rank's ops + groups).
 */
#include "config.h"

#include "runner/replay_check_int.h"
#include "runner/replay.h"
#include "runner/replay_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct fly {
    const collprof_trace_op_row_t **o; /**< the rank's ops in seq order */
    size_t n;
    size_t *end;  /**< the end of op i's coalesced call or run of blocking sends and recvs */
    size_t *done; /**< the op before which op i completes (n: the end) */
    size_t *next; /**< the ops completing before the same op: a list each */
} fly_t;

static int is_wait(const collprof_trace_op_row_t *r)
{
    return !strcmp(r->op, "wait");
}

static int is_p2p(const collprof_trace_op_row_t *r)
{
    return !strcmp(r->op, "send") || !strcmp(r->op, "recv");
}

static int plain(const collprof_trace_op_row_t *r)
{
    return is_p2p(r) && r->req < 0 && r->coalesced < 0;
}

static int cmp_seq(const void *a, const void *b)
{
    const collprof_trace_op_row_t *x = *(const collprof_trace_op_row_t *const *)a;
    const collprof_trace_op_row_t *y = *(const collprof_trace_op_row_t *const *)b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Op r's queue under nccl order: its group, or the job's (ngroups) */
static size_t queue(const cp_trace_t *t, const collprof_trace_op_row_t *r)
{
    return !is_p2p(r) && t->groups[r->group].size >= t->nranks ? t->ngroups : (size_t)r->group;
}

/* Each op's call or run end (f->end), then when it completes in program order (f->done) */
static int program(fly_t *f)
{
    size_t n = f->n;
    for (size_t i = n; i-- > 0;) {
        const collprof_trace_op_row_t *a = f->o[i], *b = i + 1 < n ? f->o[i + 1] : NULL;
        int same = b != NULL && ((a->coalesced >= 0 && b->coalesced == a->coalesced) ||
                                 (plain(a) && plain(b) && a->group == b->group));
        f->end[i] = same ? f->end[i + 1] : i + 1;
        f->done[i] = a->req >= 0 ? n : f->end[i];
    }
    htab_t h; /* (req -> the async op waiting for its wait: the replay pairs the first) */
    if (cp_ckht_init(&h, n) != 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const collprof_trace_op_row_t *a = f->o[i];
        if (a->req < 0) {
            continue;
        }
        hent_t *e = cp_ckht_at(&h, (uint64_t)a->req, 0);
        if (!is_wait(a)) {
            e->v = e->v >= 0 && e->v != INT64_MAX ? e->v : (int64_t)i; /* (one waits first) */
        } else if (e->v >= 0 && e->v != INT64_MAX) {
            f->done[e->v] = i;
            e->v = INT64_MAX;
        }
    }
    free(h.e);
    return 0;
}

/* nccl order: an op completes at the first op of its queue at or after its call's end too */
static int nccl(const cp_trace_t *t, fly_t *f)
{
    size_t *seen = malloc((t->ngroups + 1) * sizeof(size_t));
    if (seen == NULL) {
        return -1;
    }
    for (size_t q = 0; q <= t->ngroups; q++) {
        seen[q] = f->n;
    }
    for (size_t p = f->n; p-- > 0;) { /* seen: the first op of each queue from p + 1 on */
        for (size_t i = p + 1; i-- > 0 && f->end[i] == p + 1;) {
            size_t nx = is_wait(f->o[i]) ? f->n : seen[queue(t, f->o[i])];
            f->done[i] = f->o[i]->req < 0 || nx < f->done[i] ? nx : f->done[i];
        }
        if (!is_wait(f->o[p])) {
            seen[queue(t, f->o[p])] = p;
        }
    }
    free(seen);
    return 0;
}

/* The layout over time: peak[g] the most of group g's buffer any op of the rank reaches */
static int layout(const cp_trace_t *t, fly_t *f, int all, uint32_t post, uint64_t *peak)
{
    uint64_t *top = calloc(t->ngroups + 1, sizeof(uint64_t));
    size_t *pend = calloc(t->ngroups + 1, sizeof(size_t));
    size_t *head = malloc((f->n + 1) * sizeof(size_t));
    int ok = top != NULL && pend != NULL && head != NULL;
    for (size_t i = 0; ok && i <= f->n; i++) {
        head[i] = SIZE_MAX;
    }
    for (size_t i = 0; ok && i < f->n; i++) {
        for (size_t k = head[i]; k != SIZE_MAX; k = f->next[k]) { /* completed before op i */
            size_t g = (size_t)f->o[k]->group;
            top[g] = --pend[g] == 0 ? 0 : top[g];
        }
        const collprof_trace_op_row_t *r = f->o[i];
        if (is_wait(r)) {
            continue;
        }
        size_t g = (size_t)r->group;
        uint64_t need = cp_replay_bound_bytes(t, r);
        peak[g] = top[g] + need > peak[g] ? top[g] + need : peak[g];
        int op = collprof_op_from_name(r->op), can = op >= 0 && op < 32 && ((post >> op) & 1u);
        if (is_p2p(r) || (can && (all || r->req >= 0 || r->coalesced >= 0))) {
            top[g] += need;
            pend[g]++;
            f->next[i] = head[f->done[i]];
            head[f->done[i]] = i;
        }
    }
    free(top);
    free(pend);
    free(head);
    return ok ? 0 : -1;
}

int cp_replay_fly_peak(const cp_trace_t *t, int rank, int nccl_order, uint32_t post, uint64_t *peak)
{
    fly_t f = {0};
    for (size_t i = 0; i < t->nops; i++) {
        f.n += t->ops[i].rank == rank;
    }
    f.o = malloc((f.n + 1) * sizeof(*f.o));
    f.end = malloc((f.n + 1) * sizeof(size_t));
    f.done = malloc((f.n + 1) * sizeof(size_t));
    f.next = malloc((f.n + 1) * sizeof(size_t));
    int rc = f.o != NULL && f.end != NULL && f.done != NULL && f.next != NULL ? 0 : -1;
    size_t k = 0;
    int sorted = 1;
    for (size_t i = 0; rc == 0 && i < t->nops; i++) {
        if (t->ops[i].rank == rank && t->ops[i].group >= 0 &&
            (size_t)t->ops[i].group < t->ngroups) {
            f.o[k] = &t->ops[i];
            sorted &= k == 0 || f.o[k - 1]->seq <= f.o[k]->seq;
            k++;
        }
    }
    f.n = k;
    if (rc == 0 && !sorted) {
        qsort(f.o, f.n, sizeof(*f.o), cmp_seq);
    }
    rc = rc == 0 ? program(&f) : rc;
    rc = rc == 0 && nccl_order ? nccl(t, &f) : rc;
    rc = rc == 0 ? layout(t, &f, nccl_order, post, peak) : rc;
    free(f.o);
    free(f.end);
    free(f.done);
    free(f.next);
    return rc;
}

uint64_t cp_replay_rank_bytes(const cp_trace_t *t, int rank, int iters)
{
    uint64_t it = iters > 0 ? (uint64_t)iters : 1, n = 0, sum = 0;
    uint64_t *big = calloc(t->ngroups + 1, sizeof(uint64_t)); /* per group: its largest op's */
    for (size_t i = 0; i < t->nops; i++) {
        const collprof_trace_op_row_t *r = &t->ops[i];
        if (r->rank != rank) {
            continue;
        }
        n++;
        uint64_t b = cp_replay_bound_bytes(t, r);
        if (big != NULL && b > big[r->group]) {
            big[r->group] = b;
        }
        sum += !strcmp(r->op, "alltoallv") ? 4 * sizeof(size_t) * (uint64_t)r->nsplit : 0;
    }
    /* (each group's two buffers: the most its ops in flight at once take, in the order of the
     * replay; its largest op's where that cannot be had) */
    uint64_t *fly = calloc(t->ngroups + 1, sizeof(uint64_t));
    int fl = fly != NULL && cp_replay_fly_peak(t, rank, cp_replay_order_nccl(),
                                               cp_replay_order_post_any(), fly) == 0;
    for (size_t g = 0; big != NULL && g < t->ngroups; g++) {
        sum += 2 * (fl && fly[g] > big[g] ? fly[g] : big[g]);
    }
    free(fly);
    free(big);
    /* its trace row, rop_t, its row (and the path's record of it, 64), times, issues,
     * exposed, overlapped, fly; --gaps: its place, errors, lateness */
    uint64_t per = sizeof(collprof_trace_op_row_t) + sizeof(rop_t) + sizeof(collprof_replay_row_t) +
                   64 + 4 * it * 8 + 8 + 8 + 2 * it * 8;
    return sum + n * per;
}
