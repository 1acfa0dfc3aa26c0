/*
 * collprof --replay: a trace's send and recv ops (docs/replay.md), replayed between their
 * ranks within their group's context through the plugin's post() and wait() (ABI 2.3).  The
 * sender writes its own data pattern (the matrix's sendrecv fill: values of its context
 * rank); the receiver checks every element against its peer's pattern.
 */
#include "config.h"

#include "base/fault.h"
#include "colls/data.h"
#include "runner/replay_int.h"

#include <stdio.h>
#include <string.h>

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

int cp_replay_has_post(const cp_plugin_t *p)
{
    return COLLPROF_BACKEND_HAS(p->be, post) && COLLPROF_BACKEND_HAS(p->be, wait) &&
           COLLPROF_CAPS_HAS(&p->caps, post_ops) &&
           (p->caps.post_ops & COLLPROF_BIT(COLLPROF_OP_SENDRECV));
}

int cp_replay_prepare_p2p(const cp_plugin_t *p, rop_t *o, const cp_rgroup_t *g, int rank)
{
    const collprof_trace_op_row_t *r = o->t;
    o->op = -1;
    o->p2p = !strcmp(r->op, "send") ? RP_SEND : RP_RECV;
    if (!cp_replay_has_post(p)) {
        snprintf(o->note, sizeof(o->note), "backend %s has no point-to-point (post)", p->name);
        o->unsup = 1;
        return 0;
    }
    if (g->ctx == NULL) {
        snprintf(o->note, sizeof(o->note), "%s", g->err[0] ? g->err : "its group has no context");
        return 0;
    }
    o->peer = r->peer >= 0 ? ctx_rank(g, r->peer) : -1;
    if (o->peer < 0 || r->peer == rank) {
        snprintf(o->note, sizeof(o->note), "its peer %d is not another member of its group",
                 r->peer);
        return 0;
    }
    int dt = r->dtype[0] ? cp_dtype_from_name(r->dtype) : COLLPROF_DTYPE_UINT8;
    if (dt < 0 || !(p->caps.dtypes & COLLPROF_BIT(dt))) {
        snprintf(o->note, sizeof(o->note), "backend %s does not offer %s of %s", p->name, r->op,
                 r->dtype);
        o->unsup = dt >= 0;
        return 0;
    }
    uint64_t count = r->in_count > r->out_count ? r->in_count : r->out_count;
    if (count == 0 && r->bytes > 0) {
        count = r->bytes / collprof_dtype_size(dt);
    }
    o->x = (cp_xfer_t){.op = COLLPROF_OP_SENDRECV,
                       .dtype = (collprof_dtype_t)dt,
                       .redop = COLLPROF_REDOP_SUM,
                       .rank = ctx_rank(g, rank),
                       .n = g->n,
                       .count = count,
                       .paired = 1,
                       .peer = o->peer};
    o->op = COLLPROF_OP_SENDRECV;
    return 0;
}

void cp_replay_p2p_fill(const rop_t *o, void *buf, int rank)
{
    cp_coll_get(COLLPROF_OP_SENDRECV)->fill(&o->x, buf, buf);
    if (o->p2p == RP_SEND && o->x.count > 0 && cp_fault_wrong(rank)) {
        /* COLLPROF_FAULT=wrong:RANK: this rank's sends carry one wrong element */
        int64_t v = cp_data_value(o->x.dtype, o->x.rank, 0);
        cp_data_set(o->x.dtype, buf, 0, v > 0 ? v - 1 : v + 1);
    }
}

uint64_t cp_replay_p2p_check(const rop_t *o, const void *buf)
{
    return cp_coll_get(COLLPROF_OP_SENDRECV)->check(&o->x, buf);
}
