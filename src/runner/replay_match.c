#include "config.h"

#include "runner/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The trace's variable ops (alltoallv, allgatherv, gatherv, scatterv) and reducescatters
 * sorted by (rank, group, op, seq): a rank's k-th of an op in a group is found in O(log n). */
static const cp_trace_t *idx_of;
static const collprof_trace_op_row_t **idx;
static size_t nidx;

static int cmp_rgs(const void *a, const void *b)
{
    const collprof_trace_op_row_t *x = *(const collprof_trace_op_row_t *const *)a;
    const collprof_trace_op_row_t *y = *(const collprof_trace_op_row_t *const *)b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    int c = strcmp(x->op, y->op);
    if (c != 0) {
        return c;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int build(const cp_trace_t *t)
{
    if (idx_of == t) {
        return 0;
    }
    cp_replay_match_free();
    idx = malloc((t->nops + 1) * sizeof(*idx));
    if (idx == NULL) {
        return -1;
    }
    for (size_t i = 0; i < t->nops; i++) {
        const char *o = t->ops[i].op;
        if (!strcmp(o, "alltoallv") || !strcmp(o, "allgatherv") || !strcmp(o, "gatherv") ||
            !strcmp(o, "scatterv") || !strcmp(o, "reducescatter")) {
            idx[nidx++] = &t->ops[i];
        }
    }
    qsort(idx, nidx, sizeof(*idx), cmp_rgs);
    idx_of = t;
    return 0;
}

/* The first entry of (rank, group, op), or where it would be. */
static size_t first_of(int rank, int group, const char *op)
{
    size_t lo = 0, hi = nidx;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const collprof_trace_op_row_t *m = idx[mid];
        if (m->rank < rank || (m->rank == rank && m->group < group) ||
            (m->rank == rank && m->group == group && strcmp(m->op, op) < 0)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Op r's split to (out: from) trace group rank i, in elements. */
static uint64_t split(const cp_trace_t *t, const collprof_trace_op_row_t *r, int n, int out, int i)
{
    if (r->nsplit == n) {
        return t->splits[r->split_off + (out ? n : 0) + i].count;
    }
    return (out ? r->out_count : r->in_count) / (uint64_t)n;
}

/* The k-th op of group g on job rank r, or NULL. */
static const collprof_trace_op_row_t *kth(int r, int g, const char *op, size_t k)
{
    size_t p = first_of(r, g, op) + k;
    const collprof_trace_op_row_t *q = p < nidx ? idx[p] : NULL;
    return q != NULL && q->rank == r && q->group == g && !strcmp(q->op, op) ? q : NULL;
}

/* Which of its rank's ops of its kind in its group r is (from 0). */
static size_t kth_of(const collprof_trace_op_row_t *r)
{
    size_t k = 0, at = first_of(r->rank, r->group, r->op);
    while (at + k < nidx && idx[at + k] != r) {
        k++;
    }
    return k;
}

int cp_replay_splits_agree(const cp_trace_t *t, const collprof_trace_op_row_t *r, char *why,
                           size_t len)
{
    if (build(t) != 0) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    const collprof_trace_group_row_t *g = &t->groups[r->group];
    const collprof_trace_member_row_t *m = &t->members[g->member_off];
    int n = g->size;
    size_t k = kth_of(r);
    /* every pair of members, so that every member reaches the same answer */
    for (int i = 0; i < n; i++) {
        const collprof_trace_op_row_t *a = kth(m[i].rank, r->group, r->op, k);
        if (a == NULL) {
            snprintf(why, len, "rank %d has no matching alltoallv", m[i].rank);
            return 0;
        }
        for (int j = 0; j < n; j++) {
            const collprof_trace_op_row_t *b = kth(m[j].rank, r->group, r->op, k);
            if (b != NULL && split(t, a, n, 0, j) != split(t, b, n, 1, i)) {
                snprintf(why, len,
                         "splits disagree: rank %d sends %llu to rank %d, which expects %llu",
                         m[i].rank, (unsigned long long)split(t, a, n, 0, j), m[j].rank,
                         (unsigned long long)split(t, b, n, 1, i));
                return 0;
            }
        }
    }
    return 1;
}

int cp_replay_blocks(const cp_trace_t *t, const collprof_trace_op_row_t *r, uint64_t *blk,
                     char *why, size_t len)
{
    if (build(t) != 0) {
        snprintf(why, len, "out of memory");
        return 0;
    }
    const collprof_trace_group_row_t *g = &t->groups[r->group];
    const collprof_trace_member_row_t *m = &t->members[g->member_off];
    int out = !strcmp(r->op, "scatterv") || !strcmp(r->op, "reducescatter");
    size_t k = kth_of(r);
    uint64_t sum = 0;
    for (int i = 0; i < g->size; i++) {
        const collprof_trace_op_row_t *a = kth(m[i].rank, r->group, r->op, k);
        if (a == NULL) {
            snprintf(why, len, "rank %d has no matching %s", m[i].rank, r->op);
            return 0;
        }
        blk[i] = out ? a->out_count : a->in_count;
        sum += blk[i];
    }
    if (sum == 0 && r->bytes > 0) {
        snprintf(why, len, "no per-rank counts recorded (%llu B in all)",
                 (unsigned long long)r->bytes);
        return 0;
    }
    return 1;
}

void cp_replay_match_free(void)
{
    free(idx);
    idx = NULL;
    nidx = 0;
    idx_of = NULL;
}
