/*
 * collprof --replay: when each op of a rank is issued and when it is completed
 * (docs/replay.md, "Async ops, point-to-point and group calls").  An op is issued at once
 * (run(): it returns complete) or posted (the plugin's post(), ABI 2.3) and completed later
 * (wait()):
 *  - an async op (req set) is posted and completed at the wait that names its req;
 *  - the ops of one coalesced call are posted one after the other (between the plugin's
 *    group(1) and group(0) where it has them: one group call) and completed together before
 *    the next op that is not of the call;
 *  - a blocking send or recv is posted with the consecutive blocking sends and recvs of its
 *    group, all completed before the next op that is not one of them: a pair recorded in an
 *    order that would deadlock on a rendezvous protocol does not;
 *  - under --replay-order nccl (replay_order.c), every op is posted where the backend can,
 *    and completed when the next op of its group is issued (past its coalesced call or run
 *    of sends and recvs), at its wait where that comes first, or at the end.
 * A collective the backend cannot post runs at once, its note says so.  Ops in flight
 * together each have their own place in their group's buffers.
 */
#include "config.h"

#include "runner/replay_int.h"
#include "runner/replay_gaps.h"

#include "base/fault.h"
#include "base/log.h"
#include "chan/oob.h"
#include "colls/data.h"
#include "wd/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --check (cp_replay_check_set); the replay under way: is it checked, its number from 1, the
 * rank (COLLPROF_FAULT wrongiter) */
static cp_check_t chk_mode = CP_CHECK_LAST;
static int chk_k, chk_now = 1, chk_iter, chk_fault; /* chk_fault: wrongiter's replay, 0 */

void cp_replay_check_set(cp_check_t mode, int k)
{
    chk_mode = mode;
    chk_k = k;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void note_add(rop_t *o, const char *s)
{
    size_t l = strlen(o->note);
    snprintf(o->note + l, sizeof(o->note) - l, "%s%s", l > 0 ? "; " : "", s);
}

/* Can p post op o?  (Not a reduce-scatter composed of reduces: that is several calls.) */
static int can_post(const cp_plugin_t *p, const rop_t *o)
{
    return o->op >= 0 && !o->compose && cp_replay_has_post(p) &&
           (p->caps.post_ops & COLLPROF_BIT(o->op));
}

/* A blocking send or recv of group g (the run of them a blocking one joins)? */
static int plain_p2p(const rop_t *o, int g)
{
    return o->p2p != 0 && o->t->req < 0 && o->t->coalesced < 0 && o->group == g;
}

/* The wait of op i's req, after it and not yet paired: of its group where there is one (a
 * source may number requests per group), else of any; n when none. */
static size_t wait_of(const rop_t *o, size_t n, size_t i)
{
    size_t any = n;
    for (size_t j = i + 1; j < n; j++) {
        if (!strcmp(o[j].t->op, "wait") && o[j].t->req == o[i].t->req && o[j].waits < 0 &&
            o[j].note[0] == '\0') {
            if (o[j].group == o[i].group) {
                return j;
            }
            any = any < n ? any : j;
        }
    }
    return any;
}

/* When posted op i completes: its done_at, its wait's waits, the notes. */
static void complete_at(const cp_plugin_t *p, rop_t *o, size_t n, size_t i)
{
    const collprof_trace_op_row_t *r = o[i].t;
    char s[112];
    size_t j = i + 1;
    if (r->req >= 0) {
        j = wait_of(o, n, i);
        if (j < n) {
            o[j].waits = (long)i;
            snprintf(o[j].note, sizeof(o[j].note), "completes seq %lld", (long long)r->seq);
        }
        snprintf(s, sizeof(s),
                 j < n ? "async: posted, completed at its wait (seq %lld)"
                       : "async: posted; no wait: completed at the end",
                 j < n ? (long long)o[j].t->seq : 0LL);
        note_add(&o[i], s);
    } else if (r->coalesced >= 0) {
        while (j < n && o[j].t->coalesced == r->coalesced) {
            j++;
        }
        snprintf(s, sizeof(s), "coalesced %lld: posted%s, completed with the call's other ops",
                 (long long)r->coalesced,
                 COLLPROF_BACKEND_HAS(p->be, group) ? " as one group call" : "");
        note_add(&o[i], s);
    } else {
        while (j < n && plain_p2p(&o[j], o[i].group)) {
            j++;
        }
    }
    o[i].done_at = j;
}

/* --replay-order nccl: posted op i completes at the next op of its group (an async op at its
 * wait where that comes first). */
static void nccl_done(rop_t *o, size_t n, size_t i)
{
    size_t nx = cp_replay_nccl_next(o, n, i), w = o[i].done_at;
    if (o[i].t->req < 0 || nx < w) {
        o[i].done_at = nx;
    }
    if (o[i].t->req >= 0 && nx < w && w < n) {
        snprintf(o[w].note, sizeof(o[w].note),
                 "its op (seq %lld) completed before the next op of its group (nccl order)",
                 (long long)o[i].t->seq);
    }
}

/* How op i is issued: posted when it is point-to-point, or async or coalesced (any op under
 * --replay-order nccl) and p can. */
static void how_of(const cp_plugin_t *p, rop_t *o, size_t n, size_t i)
{
    const collprof_trace_op_row_t *r = o[i].t;
    int nccl = cp_replay_order_nccl();
    int want = nccl || o[i].p2p != 0 || r->req >= 0 || r->coalesced >= 0;
    size_t w = r->req >= 0 && strcmp(r->op, "wait") != 0 ? wait_of(o, n, i) : n;
    if (o[i].op < 0 && w < n) {
        snprintf(o[w].note, sizeof(o[w].note), "its op (seq %lld) is not replayed",
                 (long long)r->seq);
    }
    if (o[i].op < 0 || !want) {
        return;
    }
    if (o[i].p2p != 0 || can_post(p, &o[i])) {
        o[i].how = RP_POST;
        complete_at(p, o, n, i);
        if (nccl) {
            nccl_done(o, n, i);
        }
        return;
    }
    const char *kind = r->req >= 0 ? "async" : r->coalesced >= 0 ? "coalesced" : "nccl order";
    if (o[i].compose && r->req < 0 && r->coalesced < 0) {
        return; /* (nccl order: its note says it is several calls, each run at once) */
    }
    char s[112];
    if (o[i].compose) { /* (the note is short of room: the op's note says the rest) */
        snprintf(s, sizeof(s), "%s: issued and completed at once (composed)", kind);
    } else {
        snprintf(s, sizeof(s), "%s: issued and completed at once (backend %s cannot post %s)", kind,
                 p->name, collprof_op_name(o[i].op));
    }
    note_add(&o[i], s);
    if (w < n) {
        snprintf(o[w].note, sizeof(o[w].note), "its op (seq %lld) completed at once",
                 (long long)r->seq);
    }
}

int cp_replay_schedule(const cp_plugin_t *p, rop_t *o, size_t n, size_t *need, size_t ngroups)
{
    size_t *top = calloc(ngroups + 1, sizeof(size_t)), *pend = calloc(ngroups + 1, sizeof(size_t));
    size_t *fly = calloc(n + 1, sizeof(size_t)), nfly = 0; /* the posted ops in flight */
    for (size_t i = 0; i < n; i++) {
        o[i].done_at = n;
        how_of(p, o, n, i);
    }
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(o[i].t->op, "wait") && o[i].note[0] == '\0') {
            snprintf(o[i].note, sizeof(o[i].note), "no op of this rank issued its request");
        }
    }
    for (size_t i = 0; top != NULL && pend != NULL && fly != NULL && i < n; i++) {
        for (size_t k = 0; k < nfly;) { /* those completed before op i */
            rop_t *d = &o[fly[k]];
            if (d->done_at != i) {
                k++;
                continue;
            }
            top[d->group] = --pend[d->group] == 0 ? 0 : top[d->group];
            fly[k] = fly[--nfly];
        }
        if (o[i].op < 0) {
            continue;
        }
        size_t g = (size_t)o[i].group;
        o[i].off = top[g];
        need[g] = top[g] + o[i].need > need[g] ? top[g] + o[i].need : need[g];
        if (o[i].how == RP_POST) {
            top[g] += o[i].need;
            pend[g]++;
            fly[nfly++] = i;
        }
    }
    int ok = top != NULL && pend != NULL && fly != NULL;
    free(top);
    free(pend);
    free(fly);
    return ok ? 0 : -1;
}

/* Where op o's buffer k (0 send, 1 receive) is filled and checked: the group's buffer, or
 * its host copy where the buffers are staged (device memory). */
static unsigned char *host_of(const cp_rgroup_t *g, int k, const rop_t *o)
{
    return (unsigned char *)(g->hbuf[k] != NULL ? g->hbuf[k] : g->buf[k]) + o->off;
}

/* Copy op o's part of buffer k between its host copy and the backend's buffer (staged
 * groups only: mem_copy for device memory, memcpy for the COLLPROF_TEST_STAGED host path). */
static int stage(cp_plugin_t *p, const rop_t *o, const cp_rgroup_t *g, int k, int to_device)
{
    size_t bytes = o->need - 64;
    unsigned char *b = (unsigned char *)g->buf[k] + o->off, *h = host_of(g, k, o);
    if (g->hbuf[k] == NULL || bytes == 0) {
        return COLLPROF_OK;
    }
    if (g->memtype == COLLPROF_MEM_HOST) {
        memcpy(to_device ? b : h, to_device ? h : b, bytes);
        return COLLPROF_OK;
    }
    return p->be->mem_copy(g->ctx, g->memtype, to_device ? b : h, to_device ? h : b, bytes,
                           to_device);
}

/* COLLPROF_FAULT=wrong:RANK: this rank's input of an op with per-rank counts (alltoallv,
 * allgatherv, gatherv, scatterv, a reduce-scatter of per-rank blocks) carries one wrong element,
 * its first (as its sends do: replay_p2p.c) */
static void corrupt_var(const rop_t *o, unsigned char *sb, int rank)
{
    int64_t v;
    if (o->x.a2av == NULL || o->x.a2av->send_total == 0 || !cp_fault_wrong(rank) ||
        cp_data_get(o->x.dtype, sb, 0, &v) != 0) {
        return;
    }
    cp_data_set(o->x.dtype, sb, 0, v > 0 ? v - 1 : v + 1);
}

/* Its args, on the group's buffers; inputs written and output poisoned (in the host copies,
 * then uploaded where staged: the sides it uses, outside its timed calls). */
static collprof_args_t args_of(cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g, int rank, int *rc)
{
    unsigned char *sb = host_of(g, 0, o), *rb = host_of(g, 1, o);
    size_t bytes = o->need - 64;
    collprof_args_t a = {.op = o->x.op,
                         .dtype = o->x.dtype,
                         .redop = o->x.redop,
                         .root = o->x.root,
                         .memtype = g->memtype,
                         .sendbuf = (unsigned char *)g->buf[0] + o->off,
                         .recvbuf = (unsigned char *)g->buf[1] + o->off,
                         .count = (size_t)o->x.count,
                         .sendcounts = o->a2av.sendcounts,
                         .sdispls = o->a2av.sdispls,
                         .recvcounts = o->a2av.recvcounts,
                         .rdispls = o->a2av.rdispls,
                         .peer_send = o->p2p == RP_SEND ? o->peer : -1,
                         .peer_recv = o->p2p == RP_RECV ? o->peer : -1};
    *rc = COLLPROF_OK;
    if (!chk_now) { /* an unchecked replay: the buffers as they are */
        return a;
    }
    memset(rb, 0xff, bytes);
    if (o->p2p == RP_SEND) {
        cp_replay_p2p_fill(o, sb, rank);
    } else if (o->p2p == 0) {
        cp_coll_get(o->x.op)->fill(&o->x, sb, rb);
        corrupt_var(o, sb, rank);
    }
    *rc = o->p2p != RP_RECV ? stage(p, o, g, 0, 1) : COLLPROF_OK;
    *rc = *rc == COLLPROF_OK && o->p2p != RP_SEND ? stage(p, o, g, 1, 1) : *rc;
    return a;
}

/* One element of op o's result off by one (COLLPROF_FAULT=wrongiter), as a matrix cell's. */
static void corrupt_out(const rop_t *o, unsigned char *rb)
{
    uint64_t at = o->p2p == RP_RECV ? 0 : cp_coll_result_at(&o->x);
    int64_t v = 0;
    if (o->x.count == 0 || (o->p2p == 0 && at >= cp_coll_buffer_elems(&o->x)) ||
        cp_data_get(o->x.dtype, rb, (size_t)at, &v) != 0) {
        return;
    }
    cp_data_set(o->x.dtype, rb, (size_t)at, v + 1);
}

/* Count op o's wrong elements once complete (its result downloaded first where staged); the
 * copy's failure. */
static int check(cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g)
{
    const unsigned char *rb = host_of(g, 1, o);
    int data = o->p2p == RP_RECV || (o->p2p == 0 && !(cp_op_flags(o->x.op) & COLLPROF_OPF_NODATA));
    int rc = data ? stage(p, o, g, 1, 0) : COLLPROF_OK;
    if (rc != COLLPROF_OK || !data) {
        return rc;
    }
    if (chk_fault > 0 && chk_fault == chk_iter) { /* COLLPROF_FAULT=wrongiter: its output */
        corrupt_out(o, host_of(g, 1, o));
    }
    if (o->p2p == RP_RECV) {
        o->wrong += cp_replay_p2p_check(o, rb);
    } else {
        o->wrong += cp_coll_get(o->x.op)->check(&o->x, rb);
    }
    return COLLPROF_OK;
}

static void failed(cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g, int rc, const char *what)
{
    snprintf(o->note, sizeof(o->note), "%s%s: %s", what, collprof_status_string(rc),
             p->be->last_error(g->ctx));
    o->failed = 1;
}

/* A staged copy's failure, after the op: it ran (its peers wait for it), its data is not known */
static void copy_failed(cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g, int rc)
{
    if (rc != COLLPROF_OK && !o->failed) {
        failed(p, o, g, rc, "copying between host and device memory: ");
    }
}

/*
 * A reduce-scatter of per-rank blocks composed of reduces (the backend has none of its own):
 * block c of the send buffer reduced to its owner c, for every non-empty block in rank order
 * (the same calls on every member); the first failure.  The owner's result lands at the start
 * of its receive buffer; a rank that is not the block's owner gives the room after its own
 * block (total - its own >= block c): a backend may use a non-root's buffer as scratch (ofi
 * writes its reduce-scatter phase there), which must not overwrite a result already in.
 */
static int run_composed(cp_plugin_t *p, const rop_t *o, const cp_rgroup_t *g,
                        const collprof_args_t *a)
{
    size_t es = collprof_dtype_size(a->dtype), mine = a->recvcounts[o->x.rank];
    int rc = COLLPROF_OK;
    for (int c = 0; c < o->a2av.n && rc == COLLPROF_OK; c++) {
        if (a->recvcounts[c] == 0) {
            continue;
        }
        collprof_args_t b = *a;
        b.op = COLLPROF_OP_REDUCE;
        b.root = c;
        b.count = a->recvcounts[c];
        b.sendbuf = (const unsigned char *)a->sendbuf + a->rdispls[c] * es;
        b.recvbuf = (unsigned char *)a->recvbuf + (c == o->x.rank ? 0 : mine * es);
        b.sendcounts = b.sdispls = b.recvcounts = b.rdispls = NULL;
        rc = p->be->run(g->ctx, &b);
    }
    return rc;
}

/* --gaps compute on the device: the plugin's compute slot on the op's context (a
 * cp_gaps_fill_fn); its failure said once, in one line */
typedef struct fill_arg {
    cp_plugin_t *p;
    void *ctx;
} fill_arg_t;

static int dev_fill(void *arg, double us, const char **how)
{
    const fill_arg_t *f = arg;
    int rc = f->p->be->compute(f->ctx, us, how);
    if (rc != COLLPROF_OK && rc != COLLPROF_ERR_NOT_SUPPORTED) {
        cp_log(CP_LOG_WARN,
               "replay on %s: --gaps compute on the device failed (%s: %s): this rank fills "
               "the rest of its gaps on the host",
               f->p->name, collprof_status_string(rc), f->p->be->last_error(f->ctx));
    }
    return rc == COLLPROF_OK ? 0 : rc == COLLPROF_ERR_NOT_SUPPORTED ? 1 : -1;
}

void cp_replay_compute_setup(cp_plugin_t *p, cp_rgroup_t *g, size_t ng)
{
    const char *how = NULL;
    for (size_t k = 0;
         cp_gaps_mode() == CP_GAPS_COMPUTE && COLLPROF_BACKEND_HAS(p->be, compute) && k < ng; k++) {
        if (g[k].ctx != NULL) {
            p->be->compute(g[k].ctx, 0, &how); /* (a failure shows at the first gap) */
        }
    }
}

/* Issue op o: run it (and check it), or post it. */
static void issue(cp_plugin_t *p, rop_t *o, cp_rgroup_t *gs, int rank)
{
    cp_rgroup_t *g = &gs[o->group];
    cp_replay_groups_use(gs, (size_t)o->group);
    int crc = COLLPROF_OK;
    collprof_args_t a = args_of(p, o, g, rank, &crc);
    fill_arg_t fa = {p, g->ctx};
    /* --gaps: until its target (its buffers ready), the gap filled on its device where the
     * plugin can */
    cp_gaps_wait(o->t, COLLPROF_BACKEND_HAS(p->be, compute) ? dev_fill : NULL, &fa);
    double t0 = now_us();
    o->at = t0;
    int rc = o->how == RP_POST ? p->be->post(g->ctx, &a, &o->req)
             : o->compose      ? run_composed(p, o, g, &a)
                               : p->be->run(g->ctx, &a);
    double dt = now_us() - t0;
    o->us += dt;
    o->calls += dt;
    o->end = t0 + dt;
    if (o->how != RP_POST || rc != COLLPROF_OK) {
        cp_gaps_done(o->t);
    }
    if (rc != COLLPROF_OK) {
        o->req = NULL;
        failed(p, o, g, rc, "");
    } else if (o->how == RP_NOW && chk_now) {
        crc = crc == COLLPROF_OK ? check(p, o, g) : crc;
    }
    copy_failed(p, o, g, crc);
}

/* Complete posted op o; the time goes to op w (its wait) or to o. */
static void complete(cp_plugin_t *p, rop_t *o, rop_t *w, cp_rgroup_t *gs)
{
    cp_rgroup_t *g = &gs[o->group];
    if (o->req == NULL) {
        return;
    }
    cp_replay_groups_use(gs, (size_t)o->group);
    double t0 = now_us();
    int rc = p->be->wait(g->ctx, o->req);
    double dt = now_us() - t0;
    w->us += dt;
    o->calls += dt;
    o->end = t0 + dt;
    cp_gaps_done(o->t);
    o->req = NULL;
    if (rc != COLLPROF_OK) {
        failed(p, o, g, rc, "");
    } else if (chk_now) {
        copy_failed(p, o, g, check(p, o, g));
    }
}

/* --gaps: the wait w of posted op o (still in flight) at its own recorded time, its gap filled
 * (compute: the work the rank did while o was in flight), before it completes o. */
static void wait_gap(cp_plugin_t *p, const rop_t *w, const rop_t *o, cp_rgroup_t *gs)
{
    fill_arg_t fa = {p, gs[o->group].ctx};
    cp_replay_groups_use(gs, (size_t)o->group);
    cp_gaps_wait(w->t, COLLPROF_BACKEND_HAS(p->be, compute) ? dev_fill : NULL, &fa);
}

/* The posted ops in flight on this rank, in the order posted. */
typedef struct fly {
    size_t *k;
    size_t n;
} fly_t;

/* Complete the posted ops due before op i (i == n: the end of a replay). */
static void due(cp_plugin_t *p, rop_t *o, size_t n, size_t i, cp_rgroup_t *g, fly_t *f)
{
    size_t m = 0;
    for (size_t j = 0; j < f->n; j++) {
        size_t k = f->k[j];
        if (o[k].done_at != i && i < n) {
            f->k[m++] = k;
            continue;
        }
        complete(p, &o[k], i < n && o[i].waits == (long)k ? &o[i] : &o[k], g);
    }
    f->n = m;
}

/* A coalesced call's posts between the plugin's group(1) and group(0) (the optional slot; nccl:
 * one ncclGroupStart/ncclGroupEnd).  *open: the call's context while one is open, else NULL;
 * *id its coalesced number.  Closed before op i when op i is not of it (i == n: at the end),
 * opened at op i when it is a posted op of a call and none is open. */
static void coalesce(cp_plugin_t *p, const rop_t *o, size_t n, size_t i, cp_rgroup_t *g,
                     void **open, int64_t *id)
{
    if (!COLLPROF_BACKEND_HAS(p->be, group)) {
        return;
    }
    if (*open != NULL && (i >= n || o[i].t->coalesced != *id)) {
        p->be->group(*open, 0);
        *open = NULL;
    }
    if (*open == NULL && i < n && o[i].op >= 0 && !o[i].failed && o[i].how == RP_POST &&
        o[i].t->coalesced >= 0 && g[o[i].group].ctx != NULL) {
        *open = g[o[i].group].ctx;
        *id = o[i].t->coalesced;
        p->be->group(*open, 1);
    }
}

void cp_replay_loop(cp_plugin_t *p, rop_t *o, size_t n, cp_rgroup_t *g, int iters, double tmo,
                    double *times, double *issues, double *exposed, double *overl, double *whole,
                    int rank, size_t *fly)
{
    fly_t f = {fly, 0};
    void *open = NULL; /* the context of the coalesced call being posted */
    int64_t id = -1;
    for (int it = 0; it < iters; it++) {
        cp_wd_beat(CP_WD_OP, -1, it, 0, tmo); /* each replay within the run's outer timeout */
        cp_oob_barrier();                     /* every replay starts together */
        cp_gaps_begin(it);
        chk_now = cp_check_replay(chk_mode, chk_k, it, iters);
        chk_iter = it + 1;
        chk_fault = cp_fault_wrong_iter(rank);
        double base = now_us();
        whole[it] = 0;
        for (size_t i = 0; i < n; i++) {
            o[i].us = o[i].calls = 0;
            o[i].at = o[i].end = base;
        }
        for (size_t i = 0; i <= n; i++) {
            coalesce(p, o, n, i, g, &open, &id);
            if (i < n && o[i].waits >= 0 && o[o[i].waits].req != NULL) {
                wait_gap(p, &o[i], &o[o[i].waits], g);
            }
            due(p, o, n, i, g, &f);
            if (i < n && o[i].op >= 0 && !o[i].failed) {
                issue(p, &o[i], g, rank);
                if (o[i].how == RP_POST && o[i].req != NULL) {
                    f.k[f.n++] = i;
                }
            }
        }
        cp_gaps_end(it);
        for (size_t i = 0; i < n; i++) {
            times[i * (size_t)iters + (size_t)it] = o[i].us;
            issues[i * (size_t)iters + (size_t)it] = o[i].at - base;
            exposed[i * (size_t)iters + (size_t)it] = o[i].calls;
            double fl = o[i].end - o[i].at - o[i].calls; /* (clock readings: >= 0 but rounding) */
            overl[i * (size_t)iters + (size_t)it] = fl > 0 ? fl : 0;
            whole[it] += o[i].us;
        }
    }
}
