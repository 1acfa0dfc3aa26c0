/*
 * The oracle of test_replay_path: the replay's skews, stragglers and critical path as they
 * were computed before the streaming model (src/run/replay_path.c of commit 1b6ec6f), over
 * every rank's records at once.  Kept as it was, its names prefixed ref_.
 */
/*
 * Skew, stragglers and the critical path of a replay (replay_path.h; docs/replay.md, "The
 * report").  An op's instance is the k-th replayed collective of its group on each member
 * (the order every backend matches collectives in); point-to-point ops and ops of a group of
 * one depend on their own rank's previous op alone.
 *
 * The critical path is computed on a model of the replay: each rank issues its next op as
 * soon as its previous one is done (back to back, as --gaps none replays), an instance starts
 * when the last of its members has issued it, and it then costs the least replayed time of
 * its members (the member that waited least: its time is the op's own once every member is
 * in).  The path is the chain of ops that ends last, followed back from the last instance to
 * the member that issued it last, that member's previous op, and so on; its length is the sum
 * of the costs on it, the time the trace's order forces when no rank waits for anything else.
 */
#include "config.h"

#include "replay_path_ref.h"

#include "colls/colls.h"

#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

typedef struct key {
    int group, rank;
    int64_t k;  /* the k-th replayed collective of its group on its rank */
    size_t row; /* its index in all[] */
} ikey_t;

typedef struct inst {
    size_t first, end; /* its members' keys: keys[first..end) */
    size_t arrived;
    double ready, cost;
    size_t last; /* the row of the member whose issue set ready */
} inst_t;

typedef struct path {
    ref_rpath_t *all;
    size_t n;
    ikey_t *keys;
    inst_t *in;
    size_t *inst_of, *prev; /* per row: its instance, its rank's previous replayed op */
    size_t ninst;
    int nr;
    size_t *lo, *hi, *pos, *last; /* per rank: its rows, the next, the previous replayed */
    double *avail;                /* per rank: when the model frees it */
    char *waiting;                /* per rank: arrived at the instance of its pos */
    double *fin;                  /* per row: when it ends in the model */
} path_t;

static int timed(const ref_rpath_t *r)
{
    return r->timed;
}

void ref_rpath_of(const collprof_replay_row_t *r, ref_rpath_t *p)
{
    *p = (ref_rpath_t){.rank = r->rank,
                       .group = r->group,
                       .group_size = r->group_size,
                       .timed = r->issue_us >= 0 && !strcmp(r->what, "op"),
                       .coll = cp_coll_from_name(r->op) >= 0,
                       .straggler = r->straggler,
                       .time_p50_us = r->time_p50_us,
                       .issue_us = r->issue_us,
                       .skew_us = r->skew_us,
                       .critical_us = r->critical_us};
}

static int cmp_key(const void *a, const void *b)
{
    const ikey_t *x = a, *y = b;
    if (x->group != y->group) {
        return x->group < y->group ? -1 : 1;
    }
    if (x->k != y->k) {
        return x->k < y->k ? -1 : 1;
    }
    return x->rank - y->rank;
}

/* The keys of the replayed collectives, sorted into instances (p->in); 0 or -1. */
static int instances(path_t *p)
{
    int ng = 0;
    for (size_t i = 0; i < p->n; i++) {
        ng = p->all[i].group + 1 > ng ? p->all[i].group + 1 : ng;
    }
    int64_t *cnt = calloc((size_t)ng + 1, sizeof(int64_t));
    size_t nk = 0;
    for (size_t i = 0; cnt != NULL && i < p->n; i++) {
        const ref_rpath_t *r = &p->all[i];
        if (i > 0 && r->rank != p->all[i - 1].rank) {
            memset(cnt, 0, ((size_t)ng + 1) * sizeof(int64_t));
        }
        p->inst_of[i] = NONE;
        if (timed(r) && r->group >= 0 && r->group_size > 1 && r->coll) {
            p->keys[nk++] = (ikey_t){r->group, r->rank, cnt[r->group]++, i};
        }
    }
    free(cnt);
    if (cnt == NULL) {
        return -1;
    }
    qsort(p->keys, nk, sizeof(*p->keys), cmp_key);
    for (size_t j = 0, e; j < nk; j = e) {
        inst_t *in = &p->in[p->ninst];
        *in = (inst_t){.first = j, .cost = -1, .last = NONE};
        for (e = j; e < nk && p->keys[e].group == p->keys[j].group && p->keys[e].k == p->keys[j].k;
             e++) {
            double t = p->all[p->keys[e].row].time_p50_us;
            in->cost = in->cost < 0 || t < in->cost ? t : in->cost;
            p->inst_of[p->keys[e].row] = p->ninst;
        }
        in->end = e;
        p->ninst++;
    }
    return 0;
}

/* Each instance's skew and straggler, on its members' rows. */
static void skews(path_t *p)
{
    for (size_t i = 0; i < p->ninst; i++) {
        const inst_t *in = &p->in[i];
        double lo = 0, hi = 0;
        int last = -1;
        for (size_t j = in->first; j < in->end; j++) {
            const ref_rpath_t *r = &p->all[p->keys[j].row];
            if (j == in->first || r->issue_us < lo) {
                lo = r->issue_us;
            }
            if (j == in->first || r->issue_us > hi) {
                hi = r->issue_us;
                last = r->rank;
            }
        }
        for (size_t j = in->first; j < in->end; j++) {
            p->all[p->keys[j].row].skew_us = hi - lo;
            p->all[p->keys[j].row].straggler = in->end - in->first > 1 ? last : -1;
        }
    }
}

/* Instance i is complete: its members end at its ready + cost and go on. */
static void complete(path_t *p, inst_t *in, int *stack, int *top)
{
    double f = in->ready + in->cost;
    for (size_t j = in->first; j < in->end; j++) {
        size_t row = p->keys[j].row;
        int q = p->keys[j].rank;
        p->fin[row] = f;
        p->avail[q] = f;
        p->last[q] = row;
        p->pos[q]++;
        p->waiting[q] = 0;
        stack[(*top)++] = q;
    }
}

/* Advance rank r in the model as far as it goes without waiting. */
static void step(path_t *p, int r, int *stack, int *top)
{
    while (p->pos[r] < p->hi[r]) {
        size_t i = p->pos[r];
        const ref_rpath_t *row = &p->all[i];
        if (!timed(row)) {
            p->pos[r]++;
            continue;
        }
        if (p->inst_of[i] == NONE) { /* its own rank's chain alone */
            p->prev[i] = p->last[r];
            p->fin[i] = p->avail[r] + row->time_p50_us;
            p->avail[r] = p->fin[i];
            p->last[r] = i;
            p->pos[r]++;
            continue;
        }
        inst_t *in = &p->in[p->inst_of[i]];
        if (!p->waiting[r]) {
            p->waiting[r] = 1;
            p->prev[i] = p->last[r];
            if (in->arrived == 0 || p->avail[r] > in->ready) {
                in->ready = p->avail[r];
                in->last = i;
            }
            in->arrived++;
        }
        if (in->arrived < in->end - in->first) {
            return; /* the others go on when they arrive */
        }
        complete(p, in, stack, top);
        return;
    }
}

/* The model run: every row's fin; the row that ends last, NONE when none. */
static size_t model(path_t *p, int *stack)
{
    int top = 0;
    for (int r = 0; r < p->nr; r++) {
        p->pos[r] = p->lo[r];
        p->last[r] = NONE;
        stack[top++] = r;
    }
    while (top > 0) {
        int r = stack[--top];
        step(p, r, stack, &top);
    }
    size_t end = NONE;
    for (size_t i = 0; i < p->n; i++) {
        p->all[i].critical_us = timed(&p->all[i]) ? 0 : -1;
        if (timed(&p->all[i]) && p->fin[i] >= 0 && (end == NONE || p->fin[i] > p->fin[end])) {
            end = i;
        }
    }
    return end;
}

/* Back from row x along the path: each op on it gets its cost; the length. */
static double walk(path_t *p, size_t x)
{
    double len = 0;
    while (x != NONE) {
        size_t on = x;
        double cost = p->all[x].time_p50_us;
        if (p->inst_of[x] != NONE) {
            const inst_t *in = &p->in[p->inst_of[x]];
            on = in->last;
            cost = in->cost;
        }
        p->all[on].critical_us = cost;
        len += cost;
        x = p->prev[on];
    }
    return len;
}

static void *alloc_n(size_t n, size_t size, int *bad)
{
    void *v = calloc(n + 1, size);
    *bad |= v == NULL;
    return v;
}

double ref_replay_path(ref_rpath_t *all, size_t n)
{
    path_t p = {.all = all, .n = n};
    for (size_t i = 0; i < n; i++) {
        p.nr = all[i].rank + 1 > p.nr ? all[i].rank + 1 : p.nr;
    }
    int bad = 0, *stack = alloc_n((size_t)p.nr * 2 + n, sizeof(int), &bad);
    p.keys = alloc_n(n, sizeof(ikey_t), &bad);
    p.in = alloc_n(n, sizeof(inst_t), &bad);
    p.inst_of = alloc_n(n, sizeof(size_t), &bad);
    p.prev = alloc_n(n, sizeof(size_t), &bad);
    p.fin = alloc_n(n, sizeof(double), &bad);
    p.lo = alloc_n((size_t)p.nr, sizeof(size_t), &bad);
    p.hi = alloc_n((size_t)p.nr, sizeof(size_t), &bad);
    p.pos = alloc_n((size_t)p.nr, sizeof(size_t), &bad);
    p.last = alloc_n((size_t)p.nr, sizeof(size_t), &bad);
    p.avail = alloc_n((size_t)p.nr, sizeof(double), &bad);
    p.waiting = alloc_n((size_t)p.nr, 1, &bad);
    double len = -1;
    if (!bad && instances(&p) == 0) {
        for (size_t i = n; i-- > 0;) { /* rank after rank: each rank's rows */
            p.lo[all[i].rank] = i;
            p.hi[all[i].rank] = p.hi[all[i].rank] > i ? p.hi[all[i].rank] : i + 1;
            p.fin[i] = -1;
            p.prev[i] = NONE;
        }
        skews(&p);
        size_t end = model(&p, stack);
        len = end != NONE ? walk(&p, end) : 0;
    }
    free(stack);
    free(p.keys);
    free(p.in);
    free(p.inst_of);
    free(p.prev);
    free(p.fin);
    free(p.lo);
    free(p.hi);
    free(p.pos);
    free(p.last);
    free(p.avail);
    free(p.waiting);
    return len;
}
