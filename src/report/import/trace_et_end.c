/*
 * The end of an execution-trace file (trace_et.h): its communication ops in
 * the order of their node ids, each wait matched to the op of its group and
 * sequence number (the op then async, waited there), the NCCL kernels' times
 * attached to their launching op (chakra-json), roots and peers made global
 * through the group's members, and all handed to cp_trace_add.
 */
#include "config.h"

#include "report/import/trace_et.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct key {
    int64_t a, b, c; /* compared in that order */
    size_t idx;
} et_key_t;

static int by_key(const void *x, const void *y)
{
    const et_key_t *p = x, *q = y;
    if (p->a != q->a) {
        return p->a < q->a ? -1 : 1;
    }
    if (p->b != q->b) {
        return p->b < q->b ? -1 : 1;
    }
    return p->c < q->c ? -1 : p->c > q->c;
}

static int by_id(const void *x, const void *y)
{
    const et_op_t *p = x, *q = y;
    return p->id < q->id ? -1 : p->id > q->id;
}

static int by_link(const void *x, const void *y)
{
    const et_link_t *p = x, *q = y;
    return p->id < q->id ? -1 : p->id > q->id;
}

/* The key table of ops: (a, b, c) of each, sorted; NULL with the error. */
static et_key_t *keys(et_file_t *f, int by_parent)
{
    et_key_t *k = malloc((f->nops + 1) * sizeof(*k));
    if (k == NULL) {
        cp_trace_fail(f->t, 0, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < f->nops; i++) {
        const et_op_t *o = &f->ops[i];
        k[i] = by_parent ? (et_key_t){o->parent, 0, 0, i} : (et_key_t){o->group, o->p2p, o->seq, i};
        k[i].c = !strcmp(o->op, "wait") && !by_parent ? -1 : k[i].c; /* waits match none */
    }
    size_t sorted = 1; /* already in order (one group's ops in sequence): left as they are */
    while (sorted < f->nops && by_key(&k[sorted - 1], &k[sorted]) <= 0) {
        sorted++;
    }
    if (sorted < f->nops) {
        qsort(k, f->nops, sizeof(*k), by_key);
    }
    return k;
}

/* Each wait names the op it completes, that op async; waits of no op are dropped. */
static int match_waits(et_file_t *f)
{
    et_key_t *k = keys(f, 0);
    if (k == NULL) {
        return -1;
    }
    for (size_t i = 0; i < f->nops; i++) {
        et_op_t *w = &f->ops[i];
        if (strcmp(w->op, "wait") != 0) {
            continue;
        }
        et_key_t want = {w->group, w->p2p, w->seq, 0};
        const et_key_t *hit = bsearch(&want, k, f->nops, sizeof(*k), by_key);
        et_op_t *o = hit != NULL ? &f->ops[hit->idx] : NULL;
        if (o == NULL || o->waited || o->id > w->id) {
            w->op = ""; /* dropped */
            f->counts[0]++;
            continue;
        }
        o->waited = 1;
        o->req = w->req = o->id;
    }
    free(k);
    return 0;
}

/* The op a kernel's launcher is: itself, through an nccl:* host op, or its child. */
static et_op_t *launcher(et_file_t *f, const et_key_t *byparent, int64_t p)
{
    et_op_t want = {.id = p}, *o = bsearch(&want, f->ops, f->nops, sizeof(*o), by_id);
    et_link_t a = {.id = p}, *hop = o == NULL && f->nalias > 0
                                        ? bsearch(&a, f->alias, f->nalias, sizeof(a), by_link)
                                        : NULL;
    if (hop != NULL) { /* an nccl:* host op: its parent */
        want.id = hop->parent;
        o = bsearch(&want, f->ops, f->nops, sizeof(*o), by_id);
    }
    et_key_t k = {p, 0, 0, 0};
    const et_key_t *hit = o == NULL ? bsearch(&k, byparent, f->nops, sizeof(k), by_key) : NULL;
    return hit != NULL ? &f->ops[hit->idx] : o;
}

/* chakra-json: each op's duration the span of its kernels. */
static int kernel_times(et_file_t *f)
{
    et_key_t *byparent = keys(f, 1);
    int64_t *lo = calloc(f->nops + 1, sizeof(*lo)), *hi = calloc(f->nops + 1, sizeof(*hi));
    if (byparent == NULL || lo == NULL || hi == NULL) {
        free(byparent);
        free(lo);
        free(hi);
        return byparent == NULL ? -1 : cp_trace_fail(f->t, 0, "out of memory");
    }
    for (size_t i = 0; i < f->nops; i++) {
        lo[i] = -1;
    }
    if (f->nalias > 0) { /* NULL when empty: not for qsort */
        qsort(f->alias, f->nalias, sizeof(*f->alias), by_link);
    }
    for (size_t i = 0; i < f->ngpu; i++) {
        et_op_t *o = launcher(f, byparent, f->gpu[i].parent);
        size_t j = o != NULL ? (size_t)(o - f->ops) : 0;
        if (o != NULL && (lo[j] < 0 || f->gpu[i].ts_ns < lo[j])) {
            lo[j] = f->gpu[i].ts_ns;
        }
        if (o != NULL && f->gpu[i].end_ns > hi[j]) {
            hi[j] = f->gpu[i].end_ns;
        }
    }
    for (size_t i = 0; i < f->nops; i++) {
        if (lo[i] >= 0) {
            f->ops[i].dur_ns = hi[i] - lo[i];
        } else if (f->ops[i].op[0] != '\0' && strcmp(f->ops[i].op, "wait") != 0) {
            f->counts[1]++;
        }
    }
    free(byparent);
    free(lo);
    free(hi);
    return 0;
}

/* The op's group has members, the file's rank among them; its row, with the root or the peer
 * made global. */
static int resolve(et_file_t *f, const et_op_t *o, char *checked, collprof_trace_op_row_t *r)
{
    cp_trace_t *t = f->t;
    const cp_trace_group_t *G = &t->groups[o->group];
    const char *name = cp_strset_key(&f->names, o->name);
    if (G->size == 0) {
        return cp_trace_fail(t, o->line,
                             "group '%s': no members known (no process_group:init "
                             "node, and no regular global_rank_start/stride)",
                             G->name);
    }
    if (!checked[o->group]) {
        int i = 0;
        while (i < G->size && G->members[i] != f->rank) {
            i++;
        }
        if (i == G->size) {
            return cp_trace_fail(t, o->line, "rank %d is not a member of group '%s'", f->rank,
                                 G->name);
        }
        checked[o->group] = 1;
    }
    const char *op = o->op;
    int p2p = !strcmp(op, "send") || !strcmp(op, "recv");
    int rooted = !strcmp(op, "broadcast") || !strcmp(op, "reduce") || !strcmp(op, "gather") ||
                 !strcmp(op, "scatter");
    if ((p2p || rooted) && (o->grank < 0 || o->grank >= G->size)) {
        return cp_trace_fail(t, o->line,
                             "'%s': %s group rank %d is outside group '%s' of %d "
                             "ranks",
                             name, p2p ? "the peer's" : "the root's", o->grank, G->name, G->size);
    }
    if (o->nsplit > 0 && o->nsplit != G->size) {
        return cp_trace_fail(t, o->line, "%d split sizes for a group of %d", o->nsplit, G->size);
    }
    cp_trace_row_init(r);
    r->rank = f->rank;
    cp_trace_copy(r->op, sizeof(r->op), op);
    cp_trace_copy(r->dtype, sizeof(r->dtype), o->dtype != NULL ? o->dtype : "");
    r->in_count = o->in_count;
    r->out_count = o->out_count;
    r->bytes = o->bytes;
    r->group = o->group;
    r->peer = p2p ? G->members[o->grank] : -1;
    r->root = rooted ? G->members[o->grank] : -1;
    r->req = o->req;
    r->nsplit = o->nsplit;
    r->t_issue_ns = o->t_issue_ns;
    r->dur_ns = o->dur_ns;
    r->source_seq = o->seq;
    cp_trace_copy(r->source_name, sizeof(r->source_name), name);
    return 0;
}

int cp_et_finish(et_file_t *f)
{
    if (f->nops == 0) {
        return 0;
    }
    size_t sorted = 1; /* the nodes often come in id order: no sort then (a pass, not qsort's) */
    while (sorted < f->nops && f->ops[sorted - 1].id < f->ops[sorted].id) {
        sorted++;
    }
    if (sorted < f->nops) {
        qsort(f->ops, f->nops, sizeof(*f->ops), by_id);
    }
    for (size_t i = 1; i < f->nops; i++) {
        if (f->ops[i].id == f->ops[i - 1].id) {
            return cp_trace_fail(f->t, f->ops[i].line, "node id %" PRId64 " twice", f->ops[i].id);
        }
    }
    if (match_waits(f) != 0 || (f->times && kernel_times(f) != 0)) {
        return -1;
    }
    char *checked = calloc(f->t->ngroups + 1, 1);
    if (checked == NULL) {
        return cp_trace_fail(f->t, 0, "out of memory");
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < f->nops; i++) {
        et_op_t *o = &f->ops[i];
        collprof_trace_op_row_t r;
        if (o->op[0] == '\0') {
            continue;
        }
        rc = resolve(f, o, checked, &r);
        if (rc == 0) {
            rc = cp_trace_add(f->t, o->line, &r, o->split,
                              o->split != NULL ? o->split + o->nsplit : NULL, o->nsplit);
        }
        if (o->split != NULL) {
            free(o->split);
            o->split = NULL;
            f->nsplits--;
        }
    }
    free(checked);
    return rc;
}

void cp_et_free(et_file_t *f)
{
    for (size_t i = 0; f->nsplits > 0 && i < f->nops; i++) { /* (none held: no pass) */
        f->nsplits -= f->ops[i].split != NULL;
        free(f->ops[i].split);
    }
    free(f->ops);
    free(f->gpu);
    free(f->alias);
    cp_strset_free(&f->names);
    memset(f, 0, sizeof(*f));
}
