/*
 * collprof --replay's check before the replay (replay_check.h): the rows, their order per rank,
 * each group's collectives the same on every member, each send paired with its recv; then
 * the simulated schedule (replay_sim.c).  Time and memory O(ops): one pass to gather, a
 * counting sort by rank, hash tables of the memberships, channels and requests.
 */
#include "config.h"

#include "runner/replay_check.h"
#include "runner/replay_check_int.h"

#include "colls/colls.h"
#include "colls/data.h"

#include <collprof/vocab.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static chk_t C;

/* ---- the rows */
void cp_replay_check_free(void)
{
    free(C.r);
    free(C.start);
    free(C.inst);
    free(C.waited);
    free(C.need);
    free(C.owner);
    free(C.v);
    memset(&C, 0, sizeof(C));
}

/* Rows the check may hold: COLLPROF_REPLAY_CHECK_MAX, else an eighth of MemAvailable at
 * about 80 B each (0: unknown, no limit). */
static size_t row_budget(void)
{
    const char *e = getenv("COLLPROF_REPLAY_CHECK_MAX");
    char *end = NULL;
    unsigned long long v = e != NULL && e[0] != '\0' ? strtoull(e, &end, 10) : 0;
    if (end != NULL && *end == '\0' && v > 0) {
        return (size_t)v;
    }
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    unsigned long long kb = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return (size_t)(kb * 1024ULL / 8 / 80);
}

void cp_replay_check_begin(void)
{
    cp_replay_check_free();
    C.budget = row_budget();
}

/* The size every member gives the same: the ops whose count is the group's, not a member's */
static int sized(int op)
{
    return op == COLLPROF_OP_ALLREDUCE || op == COLLPROF_OP_BROADCAST || op == COLLPROF_OP_REDUCE ||
           op == COLLPROF_OP_ALLGATHER || op == COLLPROF_OP_ALLTOALL;
}

/* Kind, op and size of row r as the replay issues it (replay.c's prepare, replay_p2p.c) */
static void classify(const cp_trace_t *t, const collprof_trace_op_row_t *r, crow_t *c)
{
    c->opc = -1;
    c->kind = CK_SKIP;
    uint64_t count = r->in_count > r->out_count ? r->in_count : r->out_count;
    int dt = r->dtype[0] ? cp_dtype_from_name(r->dtype) : COLLPROF_DTYPE_UINT8;
    c->size = count > 0 || dt < 0 ? count * (dt >= 0 ? collprof_dtype_size(dt) : 1) : r->bytes;
    if (!strcmp(r->op, "wait")) {
        c->kind = r->req >= 0 ? CK_WAIT : CK_SKIP;
        return;
    }
    if (!strcmp(r->op, "send") || !strcmp(r->op, "recv")) {
        int ok = r->peer >= 0 && r->peer != r->rank;
        c->kind = !ok ? CK_SKIP : r->op[0] == 's' ? CK_SEND : CK_RECV;
        return;
    }
    int op = cp_coll_from_name(r->op);
    unsigned f = op >= 0 ? cp_op_flags((collprof_op_t)op) : 0;
    if (op < 0 || op == COLLPROF_OP_SENDRECV ||
        (cp_op_flags((collprof_op_t)op) & COLLPROF_OPF_NONBLOCKING)) {
        return;
    }
    const collprof_trace_group_row_t *g = &t->groups[r->group];
    c->kind = CK_COLL;
    c->opc = (int16_t)op;
    c->root = r->root >= 0 ? r->root : g->size > 0 ? t->members[g->member_off].rank : -1;
    c->root = (cp_op_flags((collprof_op_t)op) & COLLPROF_OPF_ROOTED) ? c->root : -1;
    c->flags |= sized(op) ? CF_SIZED : 0;
    /* (matched per name among the members, as the replay does: replay_check_var.c) */
    c->flags |= (f & COLLPROF_OPF_VARIABLE) || op == COLLPROF_OP_REDUCESCATTER ? CF_VAR : 0;
    c->flags |= r->bytes > 0 ? CF_BYTES : 0;
}

/* Row r's record of a variable op (c->var); 0, or -1 out of memory */
static int var_of(const collprof_trace_op_row_t *r, crow_t *c)
{
    if (C.nv == C.vcap) {
        size_t cap = C.vcap ? 2 * C.vcap : 256;
        cvar_t *n = realloc(C.v, cap * sizeof(cvar_t));
        if (n == NULL) {
            return -1;
        }
        C.v = n;
        C.vcap = cap;
    }
    c->var = (int64_t)C.nv;
    C.v[C.nv++] = (cvar_t){.in = r->in_count,
                           .out = r->out_count,
                           .soff = r->split_off,
                           .nsplit = r->nsplit > 0 ? r->nsplit : 0,
                           .grank = -1};
    return 0;
}

void cp_replay_check_row(const cp_trace_t *t, const collprof_trace_op_row_t *r)
{
    if (C.oom || r->group < 0 || (size_t)r->group >= t->ngroups || r->rank < 0) {
        return;
    }
    if (C.budget > 0 && C.n + C.nv / 2 >= C.budget) { /* (a variable op's record: half a row) */
        C.oom = 2; /* (over the budget: skipped, as out of memory) */
        return;
    }
    if (C.n == C.cap) {
        size_t cap = C.cap ? 2 * C.cap : 4096;
        crow_t *n = realloc(C.r, cap * sizeof(crow_t));
        if (n == NULL) {
            C.oom = 1;
            return;
        }
        C.r = n;
        C.cap = cap;
    }
    crow_t *c = &C.r[C.n++];
    memset(c, 0, sizeof(*c));
    c->seq = r->seq;
    c->req = r->req;
    c->coal = r->coalesced;
    c->rank = r->rank;
    c->group = r->group;
    c->peer = r->peer;
    classify(t, r, c);
    if ((c->flags & CF_VAR) && var_of(r, c) != 0) {
        C.oom = 1;
        return;
    }
    c->flags |= r->req >= 0 && c->kind != CK_WAIT ? CF_ASYNC : 0;
    c->flags |= r->coalesced >= 0 ? CF_COAL : 0;
}

void cp_replay_check_trace(const cp_trace_t *t)
{
    cp_replay_check_begin();
    for (size_t i = 0; i < t->nops; i++) {
        cp_replay_check_row(t, &t->ops[i]);
    }
}

static int cmp_seq(const void *a, const void *b)
{
    const crow_t *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Rows the sort moves between two trims of the rows it has moved (about 48 MiB) */
#define SORT_CHUNK ((size_t)1 << 20)

/* The rows by rank, each rank's in seq order: a stable counting sort into a second array,
 * taken from the end of the first, whose tail is given back (realloc) every SORT_CHUNK rows: the
 * second array's pages are touched as it fills, so the two together hold the rows about once
 * (and a chunk), not twice. */
static int by_rank(const cp_trace_t *t)
{
    int nr = t->nranks > 0 ? t->nranks : 1;
    for (size_t i = 0; i < C.n; i++) {
        nr = C.r[i].rank >= nr ? C.r[i].rank + 1 : nr;
    }
    C.nr = nr;
    C.start = calloc((size_t)nr + 2, sizeof(size_t));
    size_t *cur = malloc(((size_t)nr + 1) * sizeof(size_t));
    crow_t *s = malloc((C.n + 1) * sizeof(crow_t));
    if (C.start == NULL || cur == NULL || s == NULL) {
        free(cur);
        free(s);
        return -1;
    }
    for (size_t i = 0; i < C.n; i++) {
        C.start[C.r[i].rank + 1]++;
    }
    for (int k = 0; k < nr; k++) {
        C.start[k + 1] += C.start[k];
        cur[k] = C.start[k + 1]; /* (each rank's rows filled from its end: stable) */
    }
    for (size_t i = C.n; i-- > 0;) {
        s[--cur[C.r[i].rank]] = C.r[i];
        if (i % SORT_CHUNK == 0 && i > 0) {
            crow_t *k = realloc(C.r, i * sizeof(crow_t)); /* (the moved tail given back) */
            C.r = k != NULL ? k : C.r;
        }
    }
    free(cur);
    free(C.r);
    C.r = s;
    for (int k = 0; k < nr; k++) {
        size_t lo = C.start[k], hi = C.start[k + 1];
        int sorted = 1;
        for (size_t i = lo + 1; i < hi && sorted; i++) {
            sorted = C.r[i - 1].seq <= C.r[i].seq;
        }
        if (!sorted) {
            qsort(C.r + lo, hi - lo, sizeof(crow_t), cmp_seq);
        }
    }
    return 0;
}

/* Two arrivals of one collective: the same op, root and (where the group's) size? */
static int same_coll(const crow_t *a, const crow_t *b)
{
    return a->opc == b->opc && a->root == b->root &&
           (!(a->flags & CF_SIZED) || a->size == b->size || a->size == 0 || b->size == 0);
}

static const char *gname(const cp_trace_t *t, int g)
{
    return t->groups[g].name[0] ? t->groups[g].name : "-";
}

/* The refusal of a group whose members disagree on collective k (rows a, b; b -1: missing) */
static void coll_differs(const cp_trace_t *t, int g, const crow_t *a, const crow_t *b, int brank,
                         size_t k, char *err, size_t len)
{
    char x[64], y[64];
    cp_check_opname(a, x, sizeof(x));
    if (b == NULL) {
        snprintf(err, len,
                 "group %d (%s): rank %d's collective #%zu is %s (seq %lld), rank %d, a member, "
                 "has no collective #%zu on it%s",
                 g, gname(t, g), a->rank, k + 1, x, (long long)a->seq, brank, k + 1,
                 k == 0 ? " (a trace of some of the group's ranks only?)" : "");
        return;
    }
    cp_check_opname(b, y, sizeof(y));
    snprintf(err, len,
             "group %d (%s): collective #%zu differs between its members: rank %d has %s of %llu "
             "B (root %d, seq %lld), rank %d has %s of %llu B (root %d, seq %lld)",
             g, gname(t, g), k + 1, a->rank, x, (unsigned long long)a->size, a->root,
             (long long)a->seq, b->rank, y, (unsigned long long)b->size, b->root,
             (long long)b->seq);
}

/* Row of rank's collective k on group g (k as numbered in C.inst before the instances). */
static const crow_t *kth_coll(int rank, int g, size_t k)
{
    for (size_t i = C.start[rank]; i < C.start[rank + 1]; i++) {
        if (C.r[i].kind == CK_COLL && !(C.r[i].flags & CF_VAR) && C.r[i].group == g &&
            C.inst[i] == k) {
            return &C.r[i];
        }
    }
    return NULL;
}

/* Group g's members agree on their number of collectives, and on each: 0, or -1 with err. */
static int group_agrees(const cp_trace_t *t, int g, const size_t *cnt, char *err, size_t len)
{
    const collprof_trace_group_row_t *gr = &t->groups[g];
    int first = -1;
    for (int i = 0; i < gr->size; i++) {
        int rk = t->members[gr->member_off + i].rank;
        size_t m = (size_t)gr->member_off + (size_t)i;
        if (rk < 0) {
            continue;
        }
        if (first < 0) {
            first = i;
            continue;
        }
        size_t f = (size_t)gr->member_off + (size_t)first, a = cnt[f], b = cnt[m];
        if (a != b) {
            int more = a > b ? t->members[f].rank : rk, less = a > b ? rk : t->members[f].rank;
            size_t k = a < b ? a : b;
            coll_differs(t, g, kth_coll(more, g, k), NULL, less, k, err, len);
            return -1;
        }
    }
    return 0;
}

/* Every collective's instance (its group's base + its place), checked against the group's first
 * member's: 0, or -1 with err. */
static int colls(const cp_trace_t *t, const size_t *cnt, char *err, size_t len)
{
    size_t *base = calloc(t->ngroups + 1, sizeof(size_t)), tot = 0;
    if (base == NULL) {
        return -2;
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        const collprof_trace_group_row_t *gr = &t->groups[g];
        base[g] = tot;
        for (int i = 0; i < gr->size; i++) {
            if (t->members[gr->member_off + i].rank >= 0) {
                tot += cnt[gr->member_off + i];
                break;
            }
        }
        if (group_agrees(t, (int)g, cnt, err, len) != 0) {
            free(base);
            return -1;
        }
    }
    for (size_t i = 0; i < C.n; i++) {
        const crow_t *c = &C.r[i];
        if (c->kind != CK_COLL || (c->flags & CF_VAR)) {
            continue;
        }
        size_t x = base[c->group] + C.inst[i];
        C.inst[i] = x;
        if (C.need[x]++ == 0) {
            C.owner[x] = i;
        } else if (!same_coll(&C.r[C.owner[x]], c)) {
            coll_differs(t, c->group, &C.r[C.owner[x]], c, c->rank, x - base[c->group], err, len);
            free(base);
            return -1;
        }
    }
    C.ninst = tot;
    free(base);
    return 0;
}

/* Number each rank's collectives per group (C.inst), refusing one on a group the rank is not a
 * member of; then colls().  0, -1 (err), -2 out of memory. */
static int coll_check(const cp_trace_t *t, char *err, size_t len)
{
    htab_t h;
    size_t *cnt = calloc(t->nmembers + 1, sizeof(size_t));
    if (cnt == NULL || cp_ckht_init(&h, t->nmembers) != 0) {
        free(cnt);
        return -2;
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        for (int i = 0; i < t->groups[g].size; i++) {
            int64_t m = t->groups[g].member_off + i;
            if (t->members[m].rank >= 0) {
                cp_ckht_at(&h, g, (uint64_t)t->members[m].rank)->v = m;
            }
        }
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < C.n; i++) {
        const crow_t *c = &C.r[i];
        if (c->kind == CK_COLL || c->kind == CK_SEND || c->kind == CK_RECV) {
            int64_t m = cp_ckht_at(&h, (uint64_t)c->group, (uint64_t)c->rank)->v;
            if (m < 0) {
                snprintf(err, len,
                         "rank %d's %s (seq %lld) is on group %d (%s), which it is not a "
                         "member of",
                         c->rank,
                         c->kind == CK_COLL   ? collprof_op_name(c->opc)
                         : c->kind == CK_SEND ? "send"
                                              : "recv",
                         (long long)c->seq, c->group, gname(t, c->group));
                rc = -1;
            } else if (c->kind == CK_COLL && (c->flags & CF_VAR)) {
                C.v[c->var].grank = (int32_t)(m - t->groups[c->group].member_off);
            } else if (c->kind == CK_COLL) {
                C.inst[i] = cnt[m]++;
            }
        }
    }
    rc = rc == 0 ? colls(t, cnt, err, len) : rc;
    free(h.e);
    free(cnt);
    return rc;
}

/* The refusal of a channel whose sends and recvs do not pair */
static void unpaired(const cp_trace_t *t, const crow_t *c, size_t ns, size_t nrv, char *err,
                     size_t len)
{
    int src = c->kind == CK_SEND ? c->rank : c->peer, dst = c->kind == CK_SEND ? c->peer : c->rank;
    snprintf(err, len,
             "group %d (%s): rank %d sends %zu message%s to rank %d, which receives %zu from it: "
             "every send needs its recv",
             c->group, gname(t, c->group), src, ns, ns == 1 ? "" : "s", dst, nrv);
}

/* Channel (group, sender, receiver) of p2p row c in h: its index */
static size_t chan_of(htab_t *h, const crow_t *c, size_t *nch)
{
    uint64_t src = (uint32_t)(c->kind == CK_SEND ? c->rank : c->peer);
    uint64_t dst = (uint32_t)(c->kind == CK_SEND ? c->peer : c->rank);
    hent_t *e = cp_ckht_at(h, (uint64_t)(uint32_t)c->group, src << 32 | dst);
    if (e->v < 0) {
        e->v = (int64_t)(*nch)++;
    }
    return (size_t)e->v;
}

/* The refusal of a pair whose send is larger than its recv */
static void sizes_differ(const cp_trace_t *t, const crow_t *a, const crow_t *b, char *err,
                         size_t len)
{
    const crow_t *s = a->kind == CK_SEND ? a : b, *r = a->kind == CK_SEND ? b : a;
    snprintf(err, len,
             "group %d (%s): rank %d's send to rank %d (seq %lld) is %llu B, larger than its "
             "recv there (seq %lld), %llu B",
             s->group, gname(t, s->group), s->rank, s->peer, (long long)s->seq,
             (unsigned long long)s->size, (long long)r->seq, (unsigned long long)r->size);
}

/* Pair p2p row i (channel x, whose pairs start at base) with its match; 0 or -1 (err) */
static int pair(const cp_trace_t *t, size_t i, size_t x, const size_t *n2, const size_t *base,
                char *err, size_t len)
{
    const crow_t *c = &C.r[i];
    if (n2[2 * x] != n2[2 * x + 1]) {
        unpaired(t, c, n2[2 * x], n2[2 * x + 1], err, len);
        return -1;
    }
    size_t in = C.ninst + base[x] + C.inst[i];
    C.inst[i] = in;
    if (C.need[in]++ == 0) {
        C.owner[in] = i;
        return 0;
    }
    const crow_t *o = &C.r[C.owner[in]];
    const crow_t *snd = o->kind == CK_SEND ? o : c, *rcv = o->kind == CK_SEND ? c : o;
    if (snd->size > rcv->size && rcv->size > 0) { /* (a larger recv: MPI's posted buffer) */
        sizes_differ(t, o, c, err, len);
        return -1;
    }
    return 0;
}

/* Every send paired with the recv of the same place on its channel (group, sender, receiver),
 * its send no larger than its recv: their instance.  0, -1 (err), -2 out of memory. */
static int p2p_check(const cp_trace_t *t, char *err, size_t len)
{
    size_t np = 0, nch = 0, k = 0;
    for (size_t i = 0; i < C.n; i++) {
        np += C.r[i].kind == CK_SEND || C.r[i].kind == CK_RECV;
    }
    htab_t h;
    size_t *slot = malloc((np + 1) * sizeof(size_t)), *n2 = calloc(3 * np + 3, sizeof(size_t));
    if (slot == NULL || n2 == NULL || cp_ckht_init(&h, np) != 0) {
        free(slot);
        free(n2);
        return -2;
    }
    size_t *base = n2 + 2 * np + 2, tot = 0;
    for (size_t i = 0; i < C.n; i++) {
        const crow_t *c = &C.r[i];
        if (c->kind == CK_SEND || c->kind == CK_RECV) {
            size_t x = chan_of(&h, c, &nch);
            slot[k++] = x;
            C.inst[i] = n2[2 * x + (c->kind == CK_RECV)]++;
        }
    }
    for (size_t x = 0; x < nch; x++) {
        base[x] = tot;
        tot += n2[2 * x];
    }
    int rc = 0;
    k = 0;
    for (size_t i = 0; rc == 0 && i < C.n; i++) {
        if (C.r[i].kind == CK_SEND || C.r[i].kind == CK_RECV) {
            rc = pair(t, i, slot[k++], n2, base, err, len);
        }
    }
    C.ninst += tot;
    free(slot);
    free(n2);
    free(h.e);
    return rc;
}

/* The first wait of list e (next[]: the list's links) after row i not taken; the list's
 * cursor moved past those before (the later ops come after them too).  SIZE_MAX: none.  A list
 * run out keeps its entry, at INT64_MAX: a negative value would free the slot, and the probe of
 * a key placed after it would stop there and lose that key's list. */
static size_t first_wait(hent_t *e, const size_t *next, const unsigned char *taken, size_t i)
{
    while (e->v >= 0 && e->v != INT64_MAX && ((size_t)e->v < i || taken[e->v])) {
        e->v = next[e->v] == SIZE_MAX ? INT64_MAX : (int64_t)next[e->v];
    }
    return e->v >= 0 && e->v != INT64_MAX ? (size_t)e->v : SIZE_MAX;
}

/* Each wait completes the op the replay pairs it with (replay_issue.c, wait_of): each async op
 * of a rank, in its order, takes the first wait after it that names its req and is not taken,
 * of its group where there is one, else of any.  The waits of a rank in two lists, per (req,
 * group) and per req, each with a cursor: O(ops).  0, or -2 out of memory. */
static int waits(void)
{
    size_t nw = 0;
    for (size_t i = 0; i < C.n; i++) {
        nw += C.r[i].kind == CK_WAIT;
    }
    htab_t hg = {0}, ha = {0};
    size_t *next = malloc(2 * (C.n + 1) * sizeof(size_t)), *nexta = next ? next + C.n + 1 : NULL;
    unsigned char *taken = calloc(C.n + 1, 1);
    int rc = next && taken && cp_ckht_init(&hg, nw) == 0 && cp_ckht_init(&ha, nw) == 0 ? 0 : -2;
    for (size_t i = C.n; rc == 0 && i-- > 0;) { /* (backwards: each list in order) */
        const crow_t *c = &C.r[i];
        C.inst[i] = c->kind == CK_WAIT ? SIZE_MAX : C.inst[i];
        if (c->kind == CK_WAIT) {
            hent_t *g = cp_ckht_at(&hg, (uint64_t)(uint32_t)c->rank << 32 | (uint32_t)c->group,
                                   (uint64_t)c->req);
            hent_t *a = cp_ckht_at(&ha, (uint64_t)c->rank, (uint64_t)c->req);
            next[i] = g->v >= 0 ? (size_t)g->v : SIZE_MAX;
            nexta[i] = a->v >= 0 ? (size_t)a->v : SIZE_MAX;
            g->v = a->v = (int64_t)i;
        }
    }
    for (size_t i = 0; rc == 0 && i < C.n; i++) {
        const crow_t *c = &C.r[i];
        if (!(c->flags & CF_ASYNC)) {
            continue;
        }
        hent_t *g = cp_ckht_at(&hg, (uint64_t)(uint32_t)c->rank << 32 | (uint32_t)c->group,
                               (uint64_t)c->req);
        size_t j = g->v >= 0 ? first_wait(g, next, taken, i) : SIZE_MAX;
        hent_t *a = j == SIZE_MAX ? cp_ckht_at(&ha, (uint64_t)c->rank, (uint64_t)c->req) : NULL;
        j = a != NULL && a->v >= 0 ? first_wait(a, nexta, taken, i) : j;
        if (j != SIZE_MAX) {
            taken[j] = 1;
            C.inst[j] = c->kind != CK_SKIP ? i : SIZE_MAX; /* (an op the check skips) */
            C.waited[i] = c->kind != CK_SKIP;
        }
    }
    free(hg.e);
    free(ha.e);
    free(next);
    free(taken);
    return rc;
}

int cp_replay_check_end(const cp_trace_t *t, char *err, size_t len)
{
    int over = C.oom == 2;
    int rc = C.oom ? -2 : by_rank(t);
    rc = rc == 0 ? 0 : -2;
    if (rc == 0) {
        C.inst = calloc(C.n + 1, sizeof(size_t));
        C.waited = calloc(C.n + 1, 1);
        C.need = calloc(C.n + 1, sizeof(uint32_t));
        C.owner = calloc(C.n + 1, sizeof(size_t));
        rc = C.inst && C.waited && C.need && C.owner ? 0 : -2;
    }
    rc = rc == 0 ? coll_check(t, err, len) : rc;
    rc = rc == 0 ? cp_check_vars(&C, t, err, len) : rc;
    rc = rc == 0 ? p2p_check(t, err, len) : rc;
    rc = rc == 0 ? waits() : rc;
    free(C.owner); /* (the pairing's: not the simulation's) */
    C.owner = NULL;
    rc = rc == 0 ? cp_check_sim(&C, t, err, len) : rc;
    if (rc == -2 && over) {
        snprintf(err, len,
                 "the check before the replay was skipped: the trace has over %zu ops, more "
                 "than it may hold (an eighth of the available memory at about 80 B each, "
                 "or COLLPROF_REPLAY_CHECK_MAX)",
                 C.n);
    } else if (rc == -2) {
        snprintf(err, len,
                 "the check before the replay was skipped: out of memory for its %zu ops "
                 "(about 80 B each)",
                 C.n);
    }
    cp_replay_check_free();
    return rc == 0 ? 0 : rc == -2 ? 1 : -1;
}
