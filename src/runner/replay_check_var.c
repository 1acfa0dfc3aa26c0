/*
 * The check before the replay (replay_check.h): the variable ops (all-to-all-v, all-gather-v,
 * gather-v, scatter-v) and reduce-scatters.  The replay matches each with the k-th op of the
 * same name in its group on every member (replay_match.c) and takes every member's counts
 * from that member's record; so does the check.  What the replay would do with each is
 * decided here as it decides it: skipped on every member (a member without it; all-to-all-v's
 * splits disagreeing; an op whose members recorded no counts at all), which the simulation
 * then leaves out, or issued, which it simulates as a collective of the group.  Refused: a
 * reduce-scatter a member lacks (the replay issues it as equal blocks on the others, which
 * would wait for ever), members that give different roots, and members of which some would
 * skip the op and some issue it.  Time and memory O(the variable ops + their splits).
 */
#include "config.h"

#include "runner/replay_check_int.h"

#include <collprof/vocab.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The instances of the variable ops: their rows by instance (a counting sort) */
typedef struct vin {
    size_t n;           /**< instances */
    size_t *at;         /**< instance x's rows: row[at[x] .. at[x + 1]) */
    size_t *row;        /**< rows of C.r */
    size_t *mem;        /**< scratch: an instance's rows by group rank */
    const cvar_t **rec; /**< scratch: their records */
} vin_t;

static const char *gname(const cp_trace_t *t, int g)
{
    return t->groups[g].name[0] ? t->groups[g].name : "-";
}

/* Number the variable ops: row i's local instance (group, op, its k-th on its rank) in
 * c->inst; vi->n instances.  0, or -2 out of memory. */
static int number(chk_t *c, vin_t *vi)
{
    htab_t kth, inst;
    if (cp_ckht_init(&kth, c->nv) != 0) {
        return -2;
    }
    if (cp_ckht_init(&inst, c->nv) != 0) {
        free(kth.e);
        return -2;
    }
    for (size_t i = 0; i < c->n; i++) {
        const crow_t *r = &c->r[i];
        if (r->kind != CK_COLL || !(r->flags & CF_VAR)) {
            continue;
        }
        uint64_t a = (uint64_t)(uint32_t)r->group << 16 | (uint16_t)r->opc;
        hent_t *e = cp_ckht_at(&kth, a, (uint64_t)(uint32_t)r->rank);
        e->v = e->v < 0 ? 1 : e->v + 1;
        hent_t *x = cp_ckht_at(&inst, a, (uint64_t)(e->v - 1));
        if (x->v < 0) {
            x->v = (int64_t)vi->n++;
        }
        c->inst[i] = (size_t)x->v;
    }
    free(kth.e);
    free(inst.e);
    return 0;
}

/* The rows by instance (vi->at, vi->row); 0, or -2 out of memory */
static int by_instance(const chk_t *c, vin_t *vi)
{
    vi->at = calloc(vi->n + 2, sizeof(size_t));
    vi->row = malloc((c->nv + 1) * sizeof(size_t));
    if (vi->at == NULL || vi->row == NULL) {
        return -2;
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->r[i].kind == CK_COLL && (c->r[i].flags & CF_VAR)) {
            vi->at[c->inst[i] + 2]++;
        }
    }
    for (size_t x = 0; x < vi->n; x++) {
        vi->at[x + 2] += vi->at[x + 1];
    }
    for (size_t i = 0; i < c->n; i++) {
        if (c->r[i].kind == CK_COLL && (c->r[i].flags & CF_VAR)) {
            vi->row[vi->at[c->inst[i] + 1]++] = i;
        }
    }
    return 0;
}

/* Row a's split to (out: from) group rank i of n, in elements, as replay_match.c takes it */
static uint64_t split(const cp_trace_t *t, const cvar_t *a, int n, int out, int i)
{
    if (a->nsplit == n && a->soff >= 0 && (size_t)a->soff + 2 * (size_t)n <= t->nsplits) {
        return t->splits[a->soff + (out ? n : 0) + i].count;
    }
    return (out ? a->out : a->in) / (uint64_t)n;
}

/* All-to-all-v of n members (m: their records by group rank): does every member's send to
 * every other equal what that one expects from it?  O(n x the members with splits + n). */
static int splits_agree(const cp_trace_t *t, const cvar_t *const *m, int n)
{
    uint64_t in = 0, out = 0;
    int plain = 0;
    for (int i = 0; i < n; i++) {
        if (m[i]->nsplit == n) {
            for (int j = 0; j < n; j++) { /* i's sends to j, and j's sends to i */
                if (split(t, m[i], n, 0, j) != split(t, m[j], n, 1, i) ||
                    split(t, m[j], n, 0, i) != split(t, m[i], n, 1, j)) {
                    return 0;
                }
            }
            continue;
        }
        uint64_t a = m[i]->in / (uint64_t)n, b = m[i]->out / (uint64_t)n; /* (even splits) */
        if (plain++ == 0) {
            in = a;
            out = b;
        } else if (a != in || b != out) {
            return 0;
        }
    }
    return plain == 0 || in == out;
}

/* Instance x (its rows m by group rank, complete): 1 skipped by every member, 0 issued, -1
 * members disagree (err) */
static int skipped(const chk_t *c, const cp_trace_t *t, const size_t *m, const cvar_t **v, int n,
                   char *err, size_t len)
{
    const crow_t *r0 = &c->r[m[0]];
    if (r0->opc == COLLPROF_OP_REDUCESCATTER) {
        return 0; /* (without counts: equal blocks of its count) */
    }
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        v[i] = &c->v[c->r[m[i]].var];
        sum += r0->opc == COLLPROF_OP_SCATTERV ? v[i]->out : v[i]->in;
    }
    if (r0->opc == COLLPROF_OP_ALLTOALLV) {
        return !splits_agree(t, v, n);
    }
    int skip = 0, run = 0;
    for (int i = 0; i < n; i++) { /* (each member judges by its own row's bytes) */
        skip += sum == 0 && (c->r[m[i]].flags & CF_BYTES);
        run += !(sum == 0 && (c->r[m[i]].flags & CF_BYTES));
    }
    if (skip > 0 && run > 0) {
        snprintf(err, len,
                 "group %d (%s): %s (seq %lld) has no per-rank counts recorded on any member, "
                 "and a size on some members only: some would skip it, others wait for them",
                 r0->group, gname(t, r0->group), collprof_op_name(r0->opc), (long long)r0->seq);
        return -1;
    }
    return skip > 0;
}

/* Instance x of vi: refused (-1, err), skipped on every member (its rows CK_SKIP), or issued */
static int judge(chk_t *c, const cp_trace_t *t, vin_t *vi, size_t x, char *err, size_t len)
{
    size_t lo = vi->at[x], hi = vi->at[x + 1];
    const crow_t *r0 = &c->r[vi->row[lo]];
    const collprof_trace_group_row_t *g = &t->groups[r0->group];
    size_t *m = vi->mem;
    int n = g->size, have = (int)(hi - lo);
    for (int i = 0; i < n; i++) {
        m[i] = SIZE_MAX;
    }
    for (size_t k = lo; k < hi; k++) {
        m[c->v[c->r[vi->row[k]].var].grank] = vi->row[k];
    }
    int missing = -1;
    for (int i = n - 1; i >= 0; i--) {
        missing = m[i] == SIZE_MAX ? t->members[g->member_off + i].rank : missing;
    }
    int skip = have < n;
    if (skip && r0->opc == COLLPROF_OP_REDUCESCATTER) {
        snprintf(err, len,
                 "group %d (%s): rank %d's reducescatter (seq %lld) has no match on rank %d, a "
                 "member (the others would replay it and wait for it for ever)",
                 r0->group, gname(t, r0->group), r0->rank, (long long)r0->seq, missing);
        return -1;
    }
    skip = skip ? 1 : skipped(c, t, m, vi->rec, n, err, len);
    if (skip < 0) {
        return -1;
    }
    for (size_t k = lo; skip == 0 && k < hi; k++) {
        const crow_t *a = &c->r[vi->row[k]];
        if (a->root != r0->root) {
            snprintf(err, len,
                     "group %d (%s): rank %d's %s (seq %lld) has root %d, rank %d's (seq %lld) "
                     "root %d",
                     r0->group, gname(t, r0->group), r0->rank, collprof_op_name(r0->opc),
                     (long long)r0->seq, r0->root, a->rank, (long long)a->seq, a->root);
            return -1;
        }
    }
    for (size_t k = lo; k < hi; k++) {
        size_t i = vi->row[k], in = c->ninst + x;
        c->inst[i] = in;
        if (skip) {
            c->r[i].kind = CK_SKIP; /* (not issued: as the replay, on every member) */
        } else if (c->need[in]++ == 0) {
            c->owner[in] = i;
        }
    }
    return 0;
}

int cp_check_vars(chk_t *c, const cp_trace_t *t, char *err, size_t len)
{
    vin_t vi = {0};
    int most = 1, rc = c->nv > 0 ? number(c, &vi) : 0;
    for (size_t g = 0; g < t->ngroups; g++) {
        most = t->groups[g].size > most ? t->groups[g].size : most;
    }
    rc = rc == 0 && c->nv > 0 ? by_instance(c, &vi) : rc;
    if (rc == 0 && c->nv > 0) {
        vi.mem = malloc((size_t)most * sizeof(size_t));
        vi.rec = malloc((size_t)most * sizeof(cvar_t *));
        rc = vi.mem != NULL && vi.rec != NULL ? 0 : -2;
    }
    for (size_t x = 0; rc == 0 && x < vi.n; x++) {
        rc = judge(c, t, &vi, x, err, len);
    }
    c->ninst += vi.n;
    free(vi.at);
    free(vi.row);
    free(vi.mem);
    free(vi.rec);
    return rc;
}
