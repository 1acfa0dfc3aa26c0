#include "config.h"

#include "runner/replay.h"

#include "base/log.h"
#include "chan/oob.h"
#include "runner/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The group whose out-of-band functions the host table's point to: a host's functions take no
 * context, and every call on a group's context is made with its group current. */
static cp_oob_group_t *cur;

static int g_allgather(const void *in, void *out, size_t len)
{
    return cp_oob_group_allgather(cur, in, out, len);
}
static int g_bcast(void *buf, size_t len, int root)
{
    return cp_oob_group_bcast(cur, buf, len, root);
}
static int g_alltoall(const void *in, void *out, size_t len)
{
    return cp_oob_group_alltoall(cur, in, out, len);
}
static int g_barrier(void)
{
    return cp_oob_group_barrier(cur);
}

static cp_oob_group_t *oobs;

void cp_replay_groups_use(cp_rgroup_t *g, size_t gi)
{
    (void)g;
    cur = oobs != NULL ? &oobs[gi] : NULL;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* Group gi's members, ascending, and this rank's place; -1 when out of memory. */
static int members(const cp_trace_t *t, size_t gi, int rank, cp_rgroup_t *g)
{
    const collprof_trace_group_row_t *r = &t->groups[gi];
    g->ranks = malloc(sizeof(int) * (size_t)(r->size + 1));
    if (g->ranks == NULL) {
        return -1;
    }
    for (int i = 0; i < r->size; i++) {
        g->ranks[i] = t->members[r->member_off + i].rank;
    }
    qsort(g->ranks, (size_t)r->size, sizeof(int), cmp_int);
    g->n = r->size;
    g->me = -1;
    for (int i = 0; i < g->n; i++) {
        g->me = g->ranks[i] == rank ? i : g->me;
    }
    return 0;
}

/* Collective over the job: group gi's context on its members. */
static void group_ctx(cp_plugin_t *p, size_t gi, cp_rgroup_t *g, const cp_boot_t *b,
                      const collprof_host_t *world)
{
    int whole = g->n == b->nranks; /* members are distinct job ranks: every rank */
    int rc = COLLPROF_OK;
    char why[256] = "";
    cp_oob_group_t *o = &oobs[gi];
    static int solo;
    solo = b->rank; /* a non-member opens a group of itself alone */
    *o = g->me >= 0 ? (cp_oob_group_t){.ranks = g->ranks, .n = g->n, .me = g->me}
                    : (cp_oob_group_t){.ranks = &solo, .n = 1, .me = 0};
    snprintf(o->tag, sizeof(o->tag), "replay%zu%s", gi, g->me >= 0 ? "" : "x");
    if (g->n == 0) { /* the same on every rank: no collective call */
        snprintf(g->err, sizeof(g->err), "the trace does not list its group's members");
        return;
    }
    if (whole) {
        g->ctx = p->ctx;
        return;
    }
    collprof_host_t *h = &g->host; /* the plugin may keep it: one per group */
    *h = *world;
    h->rank = g->me;
    h->nranks = g->n;
    h->world_ranks = g->ranks;
    h->world_nranks = b->nranks;
    h->oob_allgather = g_allgather;
    h->oob_bcast = g_bcast;
    h->oob_barrier = g_barrier;
    h->oob_alltoall = g_alltoall;
    int split = COLLPROF_BACKEND_HAS(p->be, split) && p->ctx != NULL;
    if (cp_oob_group_open(o, b) != COLLPROF_OK) {
        rc = COLLPROF_ERR_BOOTSTRAP;
        snprintf(why, sizeof(why), "its out-of-band channel failed");
    } else if (!(p->be->flags & COLLPROF_BACKEND_GROUPS) && !split) {
        rc = COLLPROF_ERR_NOT_SUPPORTED;
        snprintf(why, sizeof(why), "backend %s runs on the whole job only", p->name);
    } else if (split || g->me >= 0) { /* split: every rank takes part, the members get one */
        cp_replay_groups_use(g, gi);
        rc = split ? p->be->split(p->ctx, g->me >= 0 ? h : NULL, &g->ctx) : p->be->init(h, &g->ctx);
        if (rc != COLLPROF_OK) {
            g->ctx = NULL;
            snprintf(why, sizeof(why), "%s: %s", collprof_status_string(rc),
                     p->be->last_error(split ? p->ctx : NULL));
        }
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, rc, why, &a) != CP_AGREE_OK) {
        snprintf(g->err, sizeof(g->err), "group %zu could not start: rank %d: %.180s", gi, a.rank,
                 a.msg);
        if (g->ctx != NULL) {
            p->be->finalize(g->ctx);
            g->ctx = NULL;
        }
        return;
    }
    g->own = g->ctx != NULL;
}

cp_rgroup_t *cp_replay_groups_start(cp_plugin_t *p, const cp_trace_t *t, const cp_boot_t *b,
                                    const collprof_host_t *world)
{
    cp_rgroup_t *g = calloc(t->ngroups + 1, sizeof(*g));
    oobs = calloc(t->ngroups + 1, sizeof(*oobs));
    int ok = g != NULL && oobs != NULL;
    for (size_t i = 0; ok && i < t->ngroups; i++) {
        ok = members(t, i, b->rank, &g[i]) == 0;
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) !=
        CP_AGREE_OK) {
        cp_replay_groups_stop(p, g, t->ngroups);
        return NULL;
    }
    for (size_t i = 0; i < t->ngroups; i++) {
        cp_log(CP_LOG_INFO, "replay: group %zu (%s), %d members%s", i, t->groups[i].name, g[i].n,
               g[i].n == b->nranks ? ", the whole job's context" : "");
        group_ctx(p, i, &g[i], b, world);
    }
    return g;
}

void cp_replay_groups_stop(cp_plugin_t *p, cp_rgroup_t *g, size_t ngroups)
{
    for (size_t i = 0; g != NULL && i < ngroups; i++) {
        cp_replay_groups_use(g, i);
        for (int k = 0; k < 2; k++) {
            if (g[i].buf[k] != NULL) {
                p->be->mem_free(g[i].ctx, g[i].memtype, g[i].buf[k]);
            }
            free(g[i].hbuf[k]);
        }
        if (g[i].own) {
            p->be->finalize(g[i].ctx);
        }
        if (oobs != NULL) {
            cp_oob_group_close(&oobs[i]);
        }
        free(g[i].ranks);
    }
    free(g);
    free(oobs);
    oobs = NULL;
    cur = NULL;
}
