#include "config.h"

#include "runner/split.h"

#include "base/log.h"
#include "runner/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const split_names[CP_SPLIT_KINDS] = {"world", "node", "cross"};

const char *cp_split_name(int kind)
{
    return kind >= 0 && kind < CP_SPLIT_KINDS ? split_names[kind] : NULL;
}

int cp_split_from_name(const char *s)
{
    for (int k = 0; k < CP_SPLIT_KINDS; k++) {
        if (!strcmp(s, split_names[k])) {
            return k;
        }
    }
    return -1;
}

/* Rank r's key for kind: node groups share a node, cross groups a local rank. */
static int group_key(const cp_boot_t *b, int kind, int r)
{
    return kind == CP_SPLIT_NODE ? b->node_ids[r] : kind == CP_SPLIT_CROSS ? b->local_ranks[r] : 0;
}

void cp_split_place(const cp_boot_t *b, int kind, int *n, int *me)
{
    int mine = group_key(b, kind, b->rank);
    *n = 0;
    *me = 0;
    for (int r = 0; r < b->nranks; r++) {
        if (group_key(b, kind, r) == mine) {
            *me = r == b->rank ? *n : *me;
            (*n)++;
        }
    }
}

int *cp_split_members(const cp_boot_t *b, int kind, int *n, int *me)
{
    int *ranks = malloc(sizeof(int) * (size_t)b->nranks);
    if (ranks == NULL) {
        return NULL;
    }
    int mine = group_key(b, kind, b->rank), k = 0;
    for (int r = 0; r < b->nranks; r++) {
        if (group_key(b, kind, r) == mine) {
            ranks[k++] = r;
        }
    }
    cp_split_place(b, kind, n, me);
    return ranks;
}

const char *cp_split_pointless(const cp_boot_t *b, int kind, char *buf, size_t len)
{
    if (b->nnodes < 2) {
        snprintf(buf, len, "all %d ranks run on one node: the %s split needs 2 or more nodes",
                 b->nranks, cp_split_name(kind));
        return buf;
    }
    if (b->nnodes == b->nranks) {
        snprintf(buf, len,
                 "one rank per node: the %s split would be %s (run 2 or more ranks per node)",
                 cp_split_name(kind), kind == CP_SPLIT_NODE ? "one rank" : "the whole job");
        return buf;
    }
    return NULL;
}

/* ---- the group hosts --------------------------------------------------- */

/* The host of fresh contexts for repeats (cp_split_fresh): every rank, world_ranks 0..n-1. */
static collprof_host_t fresh_host;
static int *fresh_ranks;

/* What the plugins' group contexts hold: one group per kind on this rank. */
static struct {
    cp_oob_group_t g;
    int *ranks;
    collprof_host_t host;
} groups[CP_SPLIT_KINDS];

/* The host table's functions take no context: one set per kind. */
#define GROUP_OOB(kind, tag)                                                                       \
    static int tag##_allgather(const void *in, void *out, size_t len)                              \
    {                                                                                              \
        return cp_oob_group_allgather(&groups[kind].g, in, out, len);                              \
    }                                                                                              \
    static int tag##_bcast(void *buf, size_t len, int root)                                        \
    {                                                                                              \
        return cp_oob_group_bcast(&groups[kind].g, buf, len, root);                                \
    }                                                                                              \
    static int tag##_alltoall(const void *in, void *out, size_t len)                               \
    {                                                                                              \
        return cp_oob_group_alltoall(&groups[kind].g, in, out, len);                               \
    }                                                                                              \
    static int tag##_barrier(void)                                                                 \
    {                                                                                              \
        return cp_oob_group_barrier(&groups[kind].g);                                              \
    }
GROUP_OOB(CP_SPLIT_NODE, node)
GROUP_OOB(CP_SPLIT_CROSS, cross)

/* The group of kind on this rank, its host made from world's; -1 when out of memory. */
static int group_open(int kind, const cp_boot_t *b, const collprof_host_t *world)
{
    int n = 0, me = 0;
    int *ranks = cp_split_members(b, kind, &n, &me);
    if (ranks == NULL) {
        return -1;
    }
    groups[kind].ranks = ranks;
    groups[kind].g = (cp_oob_group_t){.ranks = ranks, .n = n, .me = me};
    snprintf(groups[kind].g.tag, sizeof(groups[kind].g.tag), "%s%d", cp_split_name(kind),
             group_key(b, kind, b->rank));
    if (cp_oob_group_open(&groups[kind].g, b) != COLLPROF_OK) {
        return -1;
    }
    collprof_host_t *h = &groups[kind].host;
    *h = *world;
    h->rank = me;
    h->nranks = n;
    h->world_ranks = ranks;
    h->world_nranks = b->nranks;
    h->oob_allgather = kind == CP_SPLIT_NODE ? node_allgather : cross_allgather;
    h->oob_bcast = kind == CP_SPLIT_NODE ? node_bcast : cross_bcast;
    h->oob_barrier = kind == CP_SPLIT_NODE ? node_barrier : cross_barrier;
    h->oob_alltoall = kind == CP_SPLIT_NODE ? node_alltoall : cross_alltoall;
    return 0;
}

/* Collective over the job: plugin p's context for this rank's group of kind. */
static void group_init(cp_plugin_t *p, int kind, const cp_boot_t *b)
{
    const collprof_host_t *h = &groups[kind].host;
    void *ctx = NULL;
    int rc = COLLPROF_OK;
    char why[480] = "";
    if (!(p->be->flags & COLLPROF_BACKEND_GROUPS)) {
        /* (the plan already decided its split cells; the message is built apart from p, which
         * it quotes) */
        snprintf(why, sizeof(why), "backend %s runs on the whole job only", p->name);
        snprintf(p->gerror[kind], sizeof(p->gerror[kind]), "%s", why);
        return; /* the same on every rank: nothing to agree on */
    }
    cp_log(CP_LOG_INFO, "backend %s: initialising the %s group (%d of %d ranks)", p->name,
           cp_split_name(kind), h->nranks, b->nranks);
    rc = p->be->init(h, &ctx);
    if (rc != COLLPROF_OK) {
        snprintf(why, sizeof(why), "%s: %s", collprof_status_string(rc), p->be->last_error(NULL));
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, rc, why, &a) != CP_AGREE_OK) {
        snprintf(p->gerror[kind], sizeof(p->gerror[kind]),
                 "its %s groups could not start: rank %d: %.180s", cp_split_name(kind), a.rank,
                 a.msg);
        cp_error_once("backend %s: %s", p->name, p->gerror[kind]);
        if (rc == COLLPROF_OK) {
            p->be->finalize(ctx);
        }
        return;
    }
    p->gctx[kind] = ctx;
}

void cp_split_start(cp_plugin_t *plugins, int n, const unsigned char *used, unsigned kinds,
                    const cp_boot_t *b, const collprof_host_t *world)
{
    for (int k = CP_SPLIT_NODE; k < CP_SPLIT_KINDS; k++) {
        if (!(kinds & COLLPROF_BIT(k))) {
            continue;
        }
        int ok = group_open(k, b, world) == 0;
        cp_agreement_t a; /* a rank that cannot hold its group must not leave the others in init */
        ok = cp_agree(b->nranks, ok ? COLLPROF_OK : COLLPROF_ERR_NO_MEMORY, "out of memory", &a) ==
             CP_AGREE_OK;
        for (int i = 0; i < n; i++) {
            if (!used[i] || plugins[i].ctx == NULL) {
                continue;
            }
            if (ok) {
                group_init(&plugins[i], k, b);
            } else {
                snprintf(plugins[i].gerror[k], sizeof(plugins[i].gerror[k]), "out of memory");
            }
        }
    }
}

void cp_split_stop(cp_plugin_t *plugins, int n)
{
    for (int i = 0; i < n; i++) {
        for (int k = CP_SPLIT_NODE; k < CP_SPLIT_KINDS; k++) {
            if (plugins[i].gctx[k] != NULL) {
                plugins[i].be->finalize(plugins[i].gctx[k]);
                plugins[i].gctx[k] = NULL;
            }
        }
    }
    for (int k = 0; k < CP_SPLIT_KINDS; k++) {
        cp_oob_group_close(&groups[k].g);
        free(groups[k].ranks);
        groups[k].ranks = NULL;
    }
    free(fresh_ranks);
    fresh_ranks = NULL;
}

/* ---- fresh contexts for repeats ---------------------------------------- */

void *cp_split_fresh(cp_plugin_t *p, const cp_boot_t *b, const collprof_host_t *world, char *why,
                     size_t len)
{
    why[0] = '\0';
    if (!(p->be->flags & COLLPROF_BACKEND_GROUPS) || p->ctx == NULL) {
        snprintf(why, len, "backend %s cannot start a second context", p->name);
        return NULL; /* the same on every rank */
    }
    if (fresh_ranks == NULL) {
        fresh_ranks = malloc(sizeof(int) * (size_t)b->nranks);
        for (int r = 0; fresh_ranks != NULL && r < b->nranks; r++) {
            fresh_ranks[r] = r;
        }
    }
    fresh_host = *world;
    fresh_host.world_ranks = fresh_ranks;
    fresh_host.world_nranks = b->nranks;
    void *ctx = NULL;
    int rc = fresh_ranks != NULL ? p->be->init(&fresh_host, &ctx) : COLLPROF_ERR_NO_MEMORY;
    char mine[480] = "";
    if (rc != COLLPROF_OK) {
        snprintf(mine, sizeof(mine), "%s: %s", collprof_status_string(rc),
                 fresh_ranks != NULL ? p->be->last_error(NULL) : "out of memory");
    }
    cp_agreement_t a;
    if (cp_agree(b->nranks, rc, mine, &a) != CP_AGREE_OK) {
        snprintf(why, len, "backend %s: a fresh context failed on rank %d: %.200s", p->name, a.rank,
                 a.msg);
        if (rc == COLLPROF_OK) {
            p->be->finalize(ctx);
        }
        return NULL;
    }
    return ctx;
}
