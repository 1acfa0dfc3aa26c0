/*
 * collprof --replay --shrink (docs/replay.md, "Shrinking a trace"): a trace recorded on M
 * ranks folded onto a run of N < M.  Trace rank r is replayed by run rank r mod N.  Each group
 * folds onto the distinct run ranks of its members, in the order of their first member (a
 * group that folds onto fewer ranks keeps fewer members); of the trace members that fold onto
 * one run rank, the first in group-rank order, the group's representative there, is the one
 * replayed: its ops of the group are kept, the others' dropped (they would repeat the same
 * collective on the same run rank).  A send or recv is kept when both its ranks are their
 * group's representatives and fold onto two run ranks.  A run rank's kept ops are ordered by
 * their recorded seq, then trace rank.  all-to-all-v's splits are rebalanced as PARAM's
 * replayer does: every peer of the folded group gets the op's average split; ops that split
 * their buffer in group blocks keep the block, so their counts scale with the group.
 */
#include "config.h"

#include "runner/replay.h"

#include "colls/colls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Scratch of the fold: per group, the representative trace rank of each run rank. */
typedef struct fold {
    int n;        /**< the run's ranks */
    int *rep;     /**< rep[g * n + q]: group g's trace member replayed by run rank q; -1 */
    int *oldsize; /**< the groups' recorded sizes */
} fold_t;

static int is_rep(const fold_t *f, int g, int r)
{
    return r >= 0 && f->rep[(size_t)g * (size_t)f->n + (size_t)(r % f->n)] == r;
}

/* The groups folded (members rewritten in place: never more than before). */
static void fold_groups(cp_trace_t *t, fold_t *f)
{
    size_t at = 0;
    for (size_t g = 0; g < t->ngroups; g++) {
        collprof_trace_group_row_t *gr = &t->groups[g];
        int *rep = &f->rep[g * (size_t)f->n], k = 0;
        f->oldsize[g] = gr->size;
        for (int i = 0; i < gr->size; i++) {
            int m = t->members[gr->member_off + i].rank;
            if (m >= 0 && rep[m % f->n] < 0) {
                rep[m % f->n] = m;
                t->members[at + (size_t)k++].rank = m % f->n;
            }
        }
        gr->member_off = (int64_t)at;
        gr->size = k;
        at += (size_t)k;
    }
    t->nmembers = at;
}

/* Is op o kept? */
static int kept(const cp_trace_t *t, const fold_t *f, const collprof_trace_op_row_t *o)
{
    if (o->group < 0 || (size_t)o->group >= t->ngroups || !is_rep(f, o->group, o->rank)) {
        return 0;
    }
    if (strcmp(o->op, "send") != 0 && strcmp(o->op, "recv") != 0) {
        return 1;
    }
    return is_rep(f, o->group, o->peer) && o->peer % f->n != o->rank % f->n;
}

/* Op o's counts and splits on its folded group (new splits appended to sp at *nsp). */
static void fold_counts(const cp_trace_t *t, const fold_t *f, collprof_trace_op_row_t *o,
                        collprof_trace_split_row_t *sp, size_t *nsp)
{
    int s = f->oldsize[o->group], s2 = t->groups[o->group].size;
    int op = cp_coll_from_name(o->op);
    if (!strcmp(o->op, "alltoallv") && o->nsplit == s && s > 0) {
        uint64_t in = 0, out = 0;
        for (int i = 0; i < s; i++) {
            in += t->splits[o->split_off + i].count;
            out += t->splits[o->split_off + s + i].count;
        }
        o->split_off = (int64_t)*nsp;
        for (int i = 0; i < 2 * s2; i++) {
            sp[(*nsp)++].count = (i < s2 ? in : out) / (uint64_t)s;
        }
        o->nsplit = s2;
        o->in_count = in / (uint64_t)s * (uint64_t)s2;
        o->out_count = out / (uint64_t)s * (uint64_t)s2;
        return;
    }
    if (o->nsplit > 0) { /* kept as recorded: the replay's own checks judge them */
        int64_t from = o->split_off;
        o->split_off = (int64_t)*nsp;
        for (int i = 0; i < 2 * o->nsplit; i++) {
            sp[(*nsp)++] = t->splits[from + i];
        }
    }
    if (op >= 0 && (cp_op_flags((collprof_op_t)op) & COLLPROF_OPF_SPLIT) && s > 0) {
        o->in_count = o->in_count / (uint64_t)s * (uint64_t)s2;
        o->out_count = o->out_count / (uint64_t)s * (uint64_t)s2;
    }
}

/* A kept op's place: run rank, recorded seq, trace rank. */
typedef struct key {
    int rank, tr;
    int64_t seq;
    size_t i;
} okey_t;

static int cmp_key(const void *a, const void *b)
{
    const okey_t *x = a, *y = b;
    if (x->rank != y->rank) {
        return x->rank < y->rank ? -1 : 1;
    }
    if (x->seq != y->seq) {
        return x->seq < y->seq ? -1 : 1;
    }
    return x->tr - y->tr;
}

/* The ops kept, rewritten onto the run's ranks, ordered and renumbered; 0, or -1. */
static int fold_ops(cp_trace_t *t, const fold_t *f, int m)
{
    collprof_trace_split_row_t *sp = calloc(t->nsplits + 2 * t->nops + 1, sizeof(*sp));
    collprof_trace_op_row_t *ops = calloc(t->nops + 1, sizeof(*ops));
    okey_t *key = calloc(t->nops + 1, sizeof(*key));
    size_t k = 0, nsp = 0;
    int ok = sp != NULL && ops != NULL && key != NULL;
    for (size_t i = 0; ok && i < t->nops; i++) {
        collprof_trace_op_row_t *o = &t->ops[i];
        if (!kept(t, f, o)) {
            continue;
        }
        fold_counts(t, f, o, sp, &nsp);
        key[k] = (okey_t){.rank = o->rank % f->n, .tr = o->rank, .seq = o->seq, .i = i};
        o->req = o->req >= 0 ? o->req * m + o->rank : -1; /* one run rank replays several */
        o->coalesced = o->coalesced >= 0 ? o->coalesced * m + o->rank : -1;
        o->root = o->root >= 0 ? o->root % f->n : -1;
        o->peer = o->peer >= 0 ? o->peer % f->n : -1;
        o->rank %= f->n;
        k++;
    }
    if (ok) {
        qsort(key, k, sizeof(*key), cmp_key);
        for (size_t j = 0; j < k; j++) {
            ops[j] = t->ops[key[j].i];
            ops[j].seq = j > 0 && ops[j - 1].rank == ops[j].rank ? ops[j - 1].seq + 1 : 0;
        }
        free(t->ops);
        free(t->splits);
        t->ops = ops;
        t->nops = k;
        t->splits = sp;
        t->nsplits = nsp;
        ops = NULL;
        sp = NULL;
    }
    free(sp);
    free(ops);
    free(key);
    return ok ? 0 : -1;
}

int cp_trace_shrink(cp_trace_t *t, int n)
{
    fold_t f = {n, calloc(t->ngroups * (size_t)n + 1, sizeof(int)),
                calloc(t->ngroups + 1, sizeof(int))};
    int rc = -1;
    if (f.rep != NULL && f.oldsize != NULL) {
        for (size_t i = 0; i < t->ngroups * (size_t)n; i++) {
            f.rep[i] = -1;
        }
        int m = t->nranks;
        fold_groups(t, &f);
        rc = fold_ops(t, &f, m);
        if (rc == 0) {
            t->shrunk_from = m;
            t->nranks = n;
        }
    }
    free(f.rep);
    free(f.oldsize);
    return rc;
}
