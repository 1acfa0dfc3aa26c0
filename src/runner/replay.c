#include "config.h"

#include "runner/replay.h"
#include "runner/replay_int.h"

#include "base/fault.h"
#include "base/log.h"
#include "base/stats.h"
#include "chan/oob.h"
#include "colls/colls.h"
#include "colls/data.h"
#include "plugin/loader.h"
#include "runner/agree.h"
#include "runner/replay_gaps.h"
#include "runner/replay_scan.h"
#include "wd/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The index of job rank r in group g (its context's rank), -1 when not a member. */
static int ctx_rank(const cp_rgroup_t *g, int r)
{
    for (int i = 0; i < g->n; i++) {
        if (g->ranks[i] == r) {
            return i;
        }
    }
    return -1;
}

/* The largest split of the trace: alltoallv's stride, the same on every rank. */
static uint64_t max_split(const cp_trace_t *t)
{
    uint64_t m = 1;
    for (size_t i = 0; i < t->nsplits; i++) {
        m = t->splits[i].count > m ? t->splits[i].count : m;
    }
    return m;
}

/* o's count arrays for n ranks (send and receive counts and displacements, in o->counts) wired
 * into o->a2av; -1 when out of memory. */
static int a2av_alloc(rop_t *o, int n)
{
    o->counts = calloc(4 * (size_t)n + 1, sizeof(size_t));
    if (o->counts == NULL) {
        return -1;
    }
    cp_a2av_t *a = &o->a2av;
    a->n = n;
    a->sendcounts = o->counts;
    a->sdispls = o->counts + n;
    a->recvcounts = o->counts + 2 * n;
    a->rdispls = o->counts + 3 * n;
    return 0;
}

/* alltoallv's arrays from the trace's splits (trace group-rank order) in ctx rank order. */
static int a2av_of(rop_t *o, const cp_trace_t *t, const cp_rgroup_t *g)
{
    int n = g->n;
    const collprof_trace_group_row_t *gr = &t->groups[o->group];
    if (a2av_alloc(o, n) != 0) {
        return -1;
    }
    cp_a2av_t *a = &o->a2av;
    a->stride = max_split(t);
    for (int i = 0; i < n; i++) { /* trace group rank i is job rank members[i] */
        int c = ctx_rank(g, t->members[gr->member_off + i].rank);
        uint64_t in = o->t->in_count / (uint64_t)n, out = o->t->out_count / (uint64_t)n;
        if (o->t->nsplit == n) {
            in = t->splits[o->t->split_off + i].count;
            out = t->splits[o->t->split_off + n + i].count;
        }
        a->sendcounts[c] = in;
        a->recvcounts[c] = out;
    }
    for (int c = 0; c < n; c++) {
        a->sdispls[c] = c > 0 ? a->sdispls[c - 1] + a->sendcounts[c - 1] : 0;
        a->rdispls[c] = c > 0 ? a->rdispls[c - 1] + a->recvcounts[c - 1] : 0;
        a->send_total += a->sendcounts[c];
        a->recv_total += a->recvcounts[c];
    }
    o->x.a2av = a;
    return 0;
}

/* o without count arrays (the plugin is given none) */
static void drop_counts(rop_t *o)
{
    free(o->counts);
    o->counts = NULL;
    memset(&o->a2av, 0, sizeof(o->a2av));
}

static void note_add(rop_t *o, const char *s)
{
    size_t l = strlen(o->note);
    snprintf(o->note + l, sizeof(o->note) - l, "%s%s", l > 0 ? "; " : "", s);
}

/*
 * A reducescatter's blocks (in ctx rank order, in o's arrays): of equal blocks it replays as
 * one (count = n x block, the arrays dropped: the plugin ABI's reducescatter of equal blocks);
 * of unequal ones as a reduce-scatter of per-rank blocks, rank c's block at rdispls[c] of the
 * reduction of the total: the plugin's own where caps->var_ops has it (MPI_Reduce_scatter),
 * else composed of a reduce of each block to its owner (o->compose), else unsupported.
 * Never replayed as equal blocks.  1 when o goes on as per-rank blocks, else 0.
 */
static int reducescatter_blocks(const cp_plugin_t *p, rop_t *o, int n)
{
    const size_t *b = o->a2av.recvcounts;
    int equal = 1;
    uint64_t lo = b[0], hi = b[0];
    for (int c = 1; c < n; c++) {
        equal &= b[c] == b[0];
        lo = b[c] < lo ? b[c] : lo;
        hi = b[c] > hi ? b[c] : hi;
    }
    if (equal) {
        drop_counts(o);
        return 0;
    }
    char s[64];
    snprintf(s, sizeof(s), "per-rank blocks of %llu to %llu", (unsigned long long)lo,
             (unsigned long long)hi);
    /* the note anew: no "count rounded" (the count is the blocks' sum, exactly) */
    if (COLLPROF_CAPS_HAS(&p->caps, var_ops) &&
        (p->caps.var_ops & COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER))) {
        snprintf(o->note, sizeof(o->note), "reduced by sum; %s: the backend's own", s);
        return 1;
    }
    if ((p->caps.ops & COLLPROF_BIT(COLLPROF_OP_REDUCE)) != 0) {
        snprintf(o->note, sizeof(o->note), "reduced by sum; %s: a reduce of each to its owner", s);
        o->compose = 1;
        return 1;
    }
    snprintf(o->note, sizeof(o->note), "reduce-scatter of %s: backend %s has none, nor a reduce", s,
             p->name);
    o->op = -1;
    o->unsup = 1;
    return 0;
}

/*
 * allgatherv, gatherv, scatterv (and reducescatter): every member's block from its own record
 * of the op (cp_replay_blocks), in ctx rank order, packed in that order (rdispls: the prefix
 * sums), as the plugin ABI's recvcounts/rdispls (gatherv, scatterv: the blocks of the root's
 * buffer, the same on every rank); the buffers hold the total on every rank.  0, or -1 when
 * out of memory.
 */
static int blocks_of(const cp_plugin_t *p, rop_t *o, const cp_trace_t *t, const cp_rgroup_t *g)
{
    int n = g->n, rs = o->op == COLLPROF_OP_REDUCESCATTER;
    const collprof_trace_group_row_t *gr = &t->groups[o->group];
    uint64_t *blk = calloc((size_t)n + 1, sizeof(uint64_t));
    char why[112];
    if (blk == NULL || a2av_alloc(o, n) != 0) {
        free(blk);
        return -1;
    }
    if (!cp_replay_blocks(t, o->t, blk, why, sizeof(why))) {
        if (!rs) { /* (a reducescatter without counts: count / n each, as recorded) */
            snprintf(o->note, sizeof(o->note), "%s: not replayed", why);
            o->op = -1;
        }
        free(blk);
        drop_counts(o);
        return 0;
    }
    cp_a2av_t *a = &o->a2av;
    for (int i = 0; i < n; i++) { /* trace group rank i is job rank members[i] */
        a->recvcounts[ctx_rank(g, t->members[gr->member_off + i].rank)] = (size_t)blk[i];
    }
    free(blk);
    if (rs && !reducescatter_blocks(p, o, n)) {
        return 0;
    }
    for (int c = 0; c < n; c++) {
        a->rdispls[c] = (size_t)a->recv_total;
        a->recv_total += a->recvcounts[c];
    }
    a->send_total = rs ? a->recv_total : a->recvcounts[o->x.rank];
    if (o->op == COLLPROF_OP_GATHERV || o->op == COLLPROF_OP_SCATTERV) { /* the root's blocks */
        a->bcounts = a->recvcounts;
        a->bdispls = a->rdispls;
    }
    o->x.count = a->recv_total;
    o->x.a2av = a;
    size_t b = (size_t)a->recv_total * collprof_dtype_size(o->x.dtype);
    o->need = (b + 64 + 63) / 64 * 64 > o->need ? (b + 64 + 63) / 64 * 64 : o->need;
    if (!rs) {
        note_add(o, "per-rank counts from each member's record");
    }
    return 0;
}

/* Op o as collprof runs it on its group's context; o->op -1 with a note when it cannot. */
static int prepare(const cp_plugin_t *p, rop_t *o, const cp_trace_t *t, const cp_rgroup_t *gs,
                   int rank)
{
    const collprof_trace_op_row_t *r = o->t;
    const cp_rgroup_t *g = &gs[r->group];
    o->group = r->group;
    o->wq = g->ctx != NULL && !g->own;
    o->op = cp_coll_from_name(r->op);
    if (!strcmp(r->op, "wait")) { /* cp_replay_schedule() pairs it with its op */
        o->op = -1;
        return 0;
    }
    if (!strcmp(r->op, "send") || !strcmp(r->op, "recv")) {
        return cp_replay_prepare_p2p(p, o, g, rank);
    }
    unsigned f = o->op >= 0 ? cp_op_flags((collprof_op_t)o->op) : 0;
    if (o->op < 0 || o->op == COLLPROF_OP_SENDRECV || (f & COLLPROF_OPF_NONBLOCKING)) {
        snprintf(o->note, sizeof(o->note), "%s is not replayed yet", r->op);
        o->op = -1;
        return 0;
    }
    if (g->ctx == NULL) {
        snprintf(o->note, sizeof(o->note), "%s", g->err[0] ? g->err : "its group has no context");
        o->op = -1;
        return 0;
    }
    int dt = r->dtype[0] ? cp_dtype_from_name(r->dtype) : COLLPROF_DTYPE_UINT8;
    if (dt < 0) {
        snprintf(o->note, sizeof(o->note), "element type %s unknown", r->dtype);
        o->op = -1;
        return 0;
    }
    uint64_t count = r->in_count > r->out_count ? r->in_count : r->out_count;
    if (count == 0 && r->bytes > 0) {
        count = r->bytes / collprof_dtype_size(dt);
    }
    o->x = (cp_xfer_t){.op = (collprof_op_t)o->op,
                       .dtype = (collprof_dtype_t)dt,
                       .redop = COLLPROF_REDOP_SUM,
                       .root = r->root >= 0 ? ctx_rank(g, r->root) : 0,
                       .rank = ctx_rank(g, rank),
                       .n = g->n,
                       .count = cp_coll_effective_count((collprof_op_t)o->op, count, g->n)};
    if (!(p->caps.ops & COLLPROF_BIT(o->op)) || !(p->caps.dtypes & COLLPROF_BIT(dt))) {
        snprintf(o->note, sizeof(o->note), "backend %s does not offer %s of %s", p->name,
                 collprof_op_name(o->op), collprof_dtype_name(dt));
        o->op = -1;
        o->unsup = 1;
        return 0;
    }
    if (o->x.root < 0) {
        snprintf(o->note, sizeof(o->note), "its root %d is not in its group", r->root);
        o->op = -1;
        return 0;
    }
    if (o->x.count != count) {
        snprintf(o->note, sizeof(o->note), "count %llu rounded to %llu (a multiple of %d)",
                 (unsigned long long)count, (unsigned long long)o->x.count, g->n);
    }
    if (o->op == COLLPROF_OP_REDUCE || o->op == COLLPROF_OP_ALLREDUCE ||
        o->op == COLLPROF_OP_REDUCESCATTER) {
        snprintf(o->note + strlen(o->note), sizeof(o->note) - strlen(o->note), "%sreduced by sum",
                 o->note[0] ? "; " : "");
    }
    if (o->op == COLLPROF_OP_ALLTOALLV &&
        !cp_replay_splits_agree(t, r, o->note + strlen(o->note),
                                sizeof(o->note) - strlen(o->note))) {
        o->op = -1; /* every member skips it: the same trace, the same answer */
        return 0;
    }
    if (o->op == COLLPROF_OP_ALLTOALLV) {
        return a2av_of(o, t, g);
    }
    return (f & COLLPROF_OPF_VARIABLE) || o->op == COLLPROF_OP_REDUCESCATTER ? blocks_of(p, o, t, g)
                                                                             : 0;
}

/* An upper bound of the bytes of op r's buffers, the same on every rank. */
size_t cp_replay_bound_bytes(const cp_trace_t *t, const collprof_trace_op_row_t *r)
{
    int dt = r->dtype[0] ? cp_dtype_from_name(r->dtype) : COLLPROF_DTYPE_UINT8;
    size_t es = dt >= 0 ? collprof_dtype_size(dt) : 1;
    uint64_t e = r->in_count > r->out_count ? r->in_count : r->out_count;
    uint64_t in = 0, out = 0;
    for (int i = 0; r->nsplit > 0 && i < r->nsplit; i++) {
        in += t->splits[r->split_off + i].count;
        out += t->splits[r->split_off + r->nsplit + i].count;
    }
    e = in > e ? in : e;
    e = out > e ? out : e;
    size_t b = (size_t)e * es;
    return ((b > r->bytes ? b : (size_t)r->bytes) + 64 + 63) / 64 * 64;
}

int cp_replay_memtype(const cp_plugin_t *p)
{
    uint32_t m = p->caps.memtypes;
    return (m & COLLPROF_BIT(COLLPROF_MEM_HOST)) || !(m & COLLPROF_BIT(COLLPROF_MEM_DEVICE))
               ? COLLPROF_MEM_HOST
               : COLLPROF_MEM_DEVICE;
}

/* Group i's two buffers of g->bytes in memtype mt, and their host copies where staged. */
static int group_bufs(cp_plugin_t *p, cp_rgroup_t *g, size_t i, int mt, char *why, size_t len)
{
    int staged = mt != COLLPROF_MEM_HOST || cp_fault_test_staged();
    int rc = COLLPROF_OK;
    g->memtype = mt;
    cp_replay_groups_use(g, i); /* (g: any group; i names it) */
    for (int k = 0; k < 2 && rc == COLLPROF_OK; k++) {
        rc = p->be->mem_alloc(g->ctx, mt, g->bytes, &g->buf[k]);
        if (rc != COLLPROF_OK) {
            g->buf[k] = NULL;
            snprintf(why, len, "group %zu: %zu B of %s memory: %s", i, g->bytes,
                     collprof_memtype_name(mt), p->be->last_error(g->ctx));
        } else if (staged && (g->hbuf[k] = malloc(g->bytes)) == NULL) {
            rc = COLLPROF_ERR_NO_MEMORY;
            snprintf(why, len, "group %zu: out of memory for %zu B of host copies", i, g->bytes);
        }
    }
    return rc;
}

/* Collective over the job: each group's two buffers, on its members, as large as any rank
 * needs (need[]: this rank's, from cp_replay_schedule), in the memory p takes.  0, or -1
 * (agreed). */
static int alloc_bufs(cp_plugin_t *p, const cp_trace_t *t, cp_rgroup_t *g, int nranks,
                      const size_t *need)
{
    size_t ng = t->ngroups;
    uint64_t *mine = calloc(ng + 1, sizeof(uint64_t));
    uint64_t *all = calloc((ng + 1) * (size_t)nranks, sizeof(uint64_t));
    int rc = mine != NULL && all != NULL ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY;
    char why[256] = "out of memory";
    for (size_t i = 0; mine != NULL && i < ng; i++) {
        mine[i] = need[i];
    }
    if (cp_oob_allgather(mine, all, (ng + 1) * sizeof(uint64_t)) != 0) {
        rc = COLLPROF_ERR_BOOTSTRAP; /* (the channel's failure ends the job) */
    }
    for (size_t i = 0; rc == COLLPROF_OK && i < ng; i++) {
        for (int r = 0; r < nranks; r++) {
            size_t b = (size_t)all[(size_t)r * (ng + 1) + i];
            g[i].bytes = b > g[i].bytes ? b : g[i].bytes;
        }
        g[i].memtype = cp_replay_memtype(p);
        if (g[i].ctx == NULL || g[i].me < 0 || g[i].bytes == 0) {
            continue;
        }
        rc = group_bufs(p, &g[i], i, g[i].memtype, why, sizeof(why));
    }
    free(mine);
    free(all);
    cp_agreement_t a;
    if (cp_agree(nranks, rc, why, &a) != CP_AGREE_OK) {
        cp_error_once("replay: buffers could not be allocated: rank %d: %s", a.rank, a.msg);
        return -1;
    }
    return 0;
}

static int cmp_seq(const void *a, const void *b)
{
    const rop_t *x = a, *y = b;
    return x->t->seq < y->t->seq ? -1 : x->t->seq > y->t->seq;
}

/* This rank's ops of t, in seq order, prepared; NULL when out of memory. */
static rop_t *my_ops(const cp_plugin_t *p, const cp_trace_t *t, const cp_rgroup_t *g, int rank,
                     size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < t->nops; i++) {
        k += t->ops[i].rank == rank;
    }
    rop_t *o = calloc(k + 1, sizeof(*o));
    *n = 0;
    for (size_t i = 0; o != NULL && i < t->nops; i++) {
        if (t->ops[i].rank == rank) {
            o[(*n)++].t = &t->ops[i];
        }
    }
    if (o != NULL) {
        qsort(o, *n, sizeof(*o), cmp_seq);
    }
    for (size_t i = 0; o != NULL && i < *n; i++) {
        o[i].need = cp_replay_bound_bytes(t, o[i].t);
        o[i].waits = -1;
        if (prepare(p, &o[i], t, g, rank) != 0) {
            free(o); /* (the counts of those before leak only on this failure) */
            return NULL;
        }
    }
    return o;
}

/* Op row of o: its p50 over the replays from times[iters], its issue's from issues[iters]. */
static void op_row(const cp_plugin_t *p, const rop_t *o, const cp_trace_t *t, double *times,
                   double *issues, double *exposed, double *overl, int iters,
                   collprof_replay_row_t *r)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->what, sizeof(r->what), "op");
    snprintf(r->backend, sizeof(r->backend), "%s", p->name);
    r->rank = o->t->rank;
    r->seq = o->t->seq;
    snprintf(r->op, sizeof(r->op), "%s", o->t->op);
    snprintf(r->dtype, sizeof(r->dtype), "%s",
             o->op >= 0 ? collprof_dtype_name(o->x.dtype) : o->t->dtype);
    r->bytes = o->t->bytes;
    r->group = o->t->group;
    r->group_size = t->groups[o->t->group].size;
    r->ops = 1;
    r->iterations = iters;
    int timed = (o->op >= 0 || o->waits >= 0) && !o->failed;
    r->time_p50_us = timed ? cp_stats_median(times, (size_t)iters) : 0;
    r->recorded_us = o->t->dur_ns >= 0 ? (double)o->t->dur_ns / 1e3 : -1;
    r->ratio = r->recorded_us > 0 ? r->time_p50_us / r->recorded_us : 0;
    int xfer = o->op >= 0 && !o->failed; /* (a wait is timed, moves nothing of its own) */
    r->replayed_bytes = xfer ? cp_coll_bytes(&o->x) : 0; /* bandwidths, skew: the fold's */
    r->issue_us = xfer ? cp_stats_median(issues, (size_t)iters) : -1;
    r->skew_us = r->critical_us = r->exposed_us = r->overlapped_us = -1;
    if (cp_gaps_mode() == CP_GAPS_COMPUTE && (xfer || o->waits >= 0)) { /* compute gaps alone */
        r->exposed_us = cp_stats_median(exposed, (size_t)iters);
    }
    if (cp_gaps_mode() == CP_GAPS_COMPUTE && xfer) { /* (a wait's flight is its op's) */
        r->overlapped_us = cp_stats_median(overl, (size_t)iters);
    }
    r->straggler = -1;
    r->wrong = o->wrong;
    snprintf(r->status, sizeof(r->status), "%s",
             o->unsup                    ? "unsupported"
             : o->op < 0 && o->waits < 0 ? "skipped"
             : o->failed                 ? "error"
             : o->wrong                  ? "wrong"
                                         : "ok");
    snprintf(r->note, sizeof(r->note), "%s", o->note);
}

/*
 * Variant v current on every context of g this rank holds, for each op the trace uses, in the
 * same order on every member (select_variant is collective over a context): v where p offers
 * it for the op, else the library's own choice.  "NAME/VARIANT" into label (NAME for none).
 */
static void use_variant(cp_plugin_t *p, const char *v, const cp_trace_t *t, cp_rgroup_t *g,
                        char *label, size_t len)
{
    int plain = v == NULL || v[0] == '\0' || !strcmp(v, "default");
    snprintf(label, len, plain ? "%s" : "%s/%s", p->name, plain ? "" : v);
    const cp_trace_scan_t *sc = cp_replay_scan(); /* every rank's ops, where t has its own */
    uint32_t used = sc != NULL ? sc->used : 0;
    for (size_t i = 0; !plain && sc == NULL && i < t->nops; i++) {
        int op = collprof_op_from_name(t->ops[i].op);
        used |= op >= 0 ? COLLPROF_BIT(op) : 0;
    }
    for (size_t k = 0; !plain && k < t->ngroups; k++) {
        for (int op = 0; g[k].ctx != NULL && op < COLLPROF_OP_COUNT; op++) {
            if ((used & COLLPROF_BIT(op)) && (p->caps.ops & COLLPROF_BIT(op))) {
                p->be->select_variant(g[k].ctx, (collprof_op_t)op,
                                      cp_plugin_has_variant(p, (collprof_op_t)op, v) ? v
                                                                                     : "default");
            }
        }
    }
}

int cp_replay_run(cp_plugin_t *p, const char *variant, const cp_trace_t *t, const cp_boot_t *b,
                  const collprof_host_t *world, int iters, double tmo, collprof_replay_row_t **rows,
                  size_t *nrows, double *whole_us)
{
    *rows = NULL;
    *nrows = 0;
    *whole_us = 0;
    cp_rgroup_t *g = cp_replay_groups_start(p, t, b, world);
    if (g == NULL) {
        return -1;
    }
    char label[32];
    use_variant(p, variant, t, g, label, sizeof(label));
    size_t n = 0;
    rop_t *o = my_ops(p, t, g, b->rank, &n);
    double *times = calloc(n * (size_t)iters + 1, sizeof(double));
    double *issues = calloc(3 * n * (size_t)iters + 1, sizeof(double));
    double *exposed = issues != NULL ? issues + n * (size_t)iters : NULL; /* (one block) */
    double *overl = issues != NULL ? exposed + n * (size_t)iters : NULL;
    double *whole = calloc((size_t)iters, sizeof(double));
    collprof_replay_row_t *out = calloc(n + 2, sizeof(*out)); /* (+ the rank row of --gaps) */
    size_t *need = calloc(t->ngroups + 1, sizeof(size_t)), *fly = calloc(n + 1, sizeof(size_t));
    int ok = o != NULL && times != NULL && issues != NULL && whole != NULL && out != NULL &&
             need != NULL && fly != NULL && cp_replay_schedule(p, o, n, need, t->ngroups) == 0;
    cp_agreement_t a;
    ok = cp_agree(b->nranks, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) ==
             CP_AGREE_OK &&
         alloc_bufs(p, t, g, b->nranks, need) == 0;
    if (ok) {
        cp_replay_compute_setup(p, g, t->ngroups);
        cp_replay_loop(p, o, n, g, iters, tmo, times, issues, exposed, overl, whole, b->rank, fly);
        cp_wd_beat(CP_WD_GATHER, -1, -1, 0, tmo);
        for (size_t i = 0; i < n; i++) {
            size_t at = i * (size_t)iters;
            op_row(p, &o[i], t, &times[at], &issues[at], &exposed[at], &overl[at], iters, &out[i]);
            snprintf(out[i].backend, sizeof(out[i].backend), "%s", label);
            cp_gaps_op_row(o[i].t, &out[i]);
        }
        n += (size_t)cp_gaps_rank_row(label, &out[n]);
        *whole_us = cp_stats_median(whole, (size_t)iters);
        *rows = out;
        *nrows = n;
        out = NULL;
    }
    cp_oob_barrier();
    cp_replay_groups_stop(p, g, t->ngroups);
    cp_replay_match_free();
    for (size_t i = 0; o != NULL && i < n; i++) {
        free(o[i].counts);
    }
    free(o);
    free(times);
    free(issues);
    free(whole);
    free(out);
    free(need);
    free(fly);
    return ok ? 0 : -1;
}
