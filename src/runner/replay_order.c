/*
 * collprof --replay --replay-order (docs/replay.md, "The order ops are issued in"): program
 * (each op issued in the rank's recorded order, a collective blocking unless it was recorded
 * async or coalesced) or nccl (as NCCL ran it: every op posted on its group's queue and
 * completed when the next op of its group is issued, at its recorded wait, or at the end of
 * the replay; an op the backend cannot post runs at once).  The default: nccl for a trace
 * imported from NCCL (nccl-inspector, nccl-collprof, flight-recorder), else program.
 */
#include "config.h"

#include "runner/replay_check.h"
#include "runner/replay_int.h"

#include <string.h>

static int nccl_order;                   /* the replay's order: 1 nccl, 0 program */
static uint32_t post_any = ~(uint32_t)0; /* the ops some backend of the run can post */

/* Was t imported from NCCL (its root's imported_format)? */
static int from_nccl(const cp_trace_t *t)
{
    return !strncmp(t->format, "nccl-", 5) || !strncmp(t->format, "flight-recorder", 15);
}

uint32_t cp_replay_post_mask(const cp_plugin_t *p)
{
    return cp_replay_has_post(p) ? p->caps.post_ops : 0;
}

const char *cp_replay_order_setup(const char *order, const cp_trace_t *t, const cp_plugin_t *ps,
                                  int np, const unsigned char *used)
{
    uint32_t mask = ~(uint32_t)0; /* what every backend of the run can post */
    nccl_order = order[0] != '\0' ? !strcmp(order, "nccl") : from_nccl(t);
    post_any = 0;
    for (int i = 0; i < np; i++) {
        if (used == NULL || used[i]) {
            mask &= cp_replay_post_mask(&ps[i]);
            post_any |= cp_replay_post_mask(&ps[i]);
        }
    }
    cp_replay_check_order(nccl_order, mask);
    return nccl_order ? "nccl" : "program";
}

int cp_replay_order_nccl(void)
{
    return nccl_order;
}

uint32_t cp_replay_order_post_any(void)
{
    return post_any;
}

/* A blocking send or recv of group g (the run of them a blocking one joins)? */
static int plain_p2p(const rop_t *o, int g)
{
    return o->p2p != 0 && o->t->req < 0 && o->t->coalesced < 0 && o->group == g;
}

/* The queue of op o under nccl order: its group's; a collective on the job's own context
 * (a group of every rank): the job's (-1), as the backend runs that context's collectives in
 * the order posted (gloo: one worker; mpi: one communicator). */
static int queue_of(const rop_t *o)
{
    return o->p2p == 0 && o->wq ? -1 : o->group;
}

size_t cp_replay_nccl_next(const rop_t *o, size_t n, size_t i)
{
    const rop_t *a = &o[i];
    size_t j = i + 1;
    if (a->t->coalesced >= 0) { /* past its call */
        while (j < n && o[j].t->coalesced == a->t->coalesced) {
            j++;
        }
    } else if (plain_p2p(a, a->group)) { /* past its run of blocking sends and recvs */
        while (j < n && plain_p2p(&o[j], a->group)) {
            j++;
        }
    }
    while (j < n && (o[j].op < 0 || queue_of(&o[j]) != queue_of(a))) {
        j++;
    }
    return j;
}
