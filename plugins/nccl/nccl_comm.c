/* communicators of the nccl backend: the cache, creation, settling, abort; graphs per slot */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "nccl_internal.h"

/* ---- graphs, registrations, communicators ---------------------------------- */

void nb_graph_drop(nb_graph_t *g)
{
    if (g->valid) {
        cudaGraphExecDestroy(g->exec);
        g->valid = 0;
    }
}

void nb_graphs_drop(nb_ctx_t *ctx, int slot)
{
    for (int i = 0; i < NB_GRAPHS; i++) {
        if (slot < 0 || ctx->graphs[i].slot == slot) {
            nb_graph_drop(&ctx->graphs[i]);
        }
    }
}

static void nb_forget_slot(nb_ctx_t *ctx, int slot, int why)
{
    nb_graphs_drop(ctx, slot);
    for (nb_buf_t *b = ctx->bufs; b != NULL; b = b->next) {
        b->reg[slot] = NULL;
    }
    ctx->stage.reg[slot] = NULL;
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (ctx->cur_slot[op] == slot) {
            ctx->cur_slot[op] = -1;
            ctx->lost[op] = why;
        }
    }
    ctx->comms[slot].live = 0;
    ctx->comms[slot].broken = 0;
    ctx->comms[slot].comm = NULL;
}

/* graphs that replay NCCL kernels of the communicator go first (B11) */
void nb_abort_slot(nb_ctx_t *ctx, int slot)
{
    if (slot >= 0 && ctx->comms[slot].live) {
        nb_graphs_drop(ctx, slot);
        ncclCommAbort(ctx->comms[slot].comm);
        nb_forget_slot(ctx, slot, NB_ABORTED);
    }
}

/*
 * Collective: every communicator an NCCL error was seen on, on any rank, is
 * aborted and forgotten everywhere (B5), so that the ranks' caches stay in
 * step and the next selection creates a fresh one together.
 */
int nb_drop_broken(nb_ctx_t *ctx)
{
    uint32_t mine = 0, mask = 0, *all = calloc((size_t)ctx->n, sizeof(*all));
    for (int s = 0; s < NB_MAX_COMMS; s++) {
        mine |= ctx->comms[s].live && ctx->comms[s].broken ? 1u << s : 0;
    }
    if (all == NULL || ctx->host->oob_allgather(&mine, all, sizeof(mine)) != 0) {
        free(all);
        nb_set_error(ctx, "out-of-band allgather failed (communicators in error)");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    for (int q = 0; q < ctx->n; q++) {
        mask |= all[q];
    }
    free(all);
    for (int s = 0; s < NB_MAX_COMMS; s++) {
        if ((mask & (1u << s)) && ctx->comms[s].live) {
            if (ctx->host->log != NULL && ctx->rank == 0) {
                ctx->host->log(COLLPROF_LOG_INFO,
                               "nccl: communicator of %s aborted after an error; the next "
                               "selection creates a fresh one",
                               ctx->comms[s].vname);
            }
            nb_abort_slot(ctx, s);
        }
    }
    return COLLPROF_OK;
}

/*
 * Wait until a non-blocking NCCL call has finished (r == ncclInProgress) and
 * translate the outcome; aborts the communicator on a timeout.
 */
int nb_settle(nb_ctx_t *ctx, int slot, ncclComm_t comm, ncclResult_t r, const char *what)
{
    double t0 = nb_now();
    unsigned spins = 0;
    while (r == ncclInProgress) {
        ncclResult_t st = ncclInProgress;
        if (ncclCommGetAsyncError(comm, &st) != ncclSuccess) {
            break;
        }
        r = st;
        if (r != ncclInProgress) {
            break;
        }
        double el = nb_now() - t0;
        if (el > ctx->timeout_s) {
            for (int s = 0; slot < 0 && s < NB_MAX_COMMS; s++) {
                if (ctx->comms[s].live && ctx->comms[s].comm == comm) {
                    slot = s; /* the caller did not say, but it is a cached one */
                }
            }
            if (slot >= 0) {
                nb_abort_slot(ctx, slot); /* its graphs first, then the communicator */
            } else {
                ncclCommAbort(comm);
            }
            nb_set_error(ctx,
                         "%s did not complete within %.0f s (waited %.1f s); communicator "
                         "aborted",
                         what, ctx->timeout_s, el);
            return COLLPROF_ERR_TIMEOUT;
        }
        nb_nap(ctx, &spins);
    }
    if (r != ncclSuccess) {
        return nb_nccl_fail(ctx, comm, what, r);
    }
    return COLLPROF_OK;
}

static void nb_deregister_slot(nb_ctx_t *ctx, int slot)
{
    ncclComm_t comm = ctx->comms[slot].comm;
    nb_buf_t *all[2] = {ctx->bufs, &ctx->stage};
    for (int k = 0; k < 2; k++) {
        for (nb_buf_t *b = all[k]; b != NULL; b = k == 0 ? b->next : NULL) {
            if (!ctx->comms[slot].live) {
                return; /* a deregistration timed out: the communicator was aborted */
            }
            if (b->reg[slot] != NULL) {
                nb_settle(ctx, slot, comm, ncclCommDeregister(comm, b->reg[slot]),
                          "ncclCommDeregister");
                b->reg[slot] = NULL;
            }
        }
    }
}

void nb_destroy_slot(nb_ctx_t *ctx, int slot)
{
    nb_comm_t *c = &ctx->comms[slot];
    if (!c->live) {
        return;
    }
    nb_graphs_drop(ctx, slot);
    nb_deregister_slot(ctx, slot);
    if (c->live &&
        nb_settle(ctx, slot, c->comm, ncclCommFinalize(c->comm), "ncclCommFinalize") == 0) {
        ncclCommDestroy(c->comm);
    } else if (c->live) {
        ncclCommAbort(c->comm);
    }
    if (c->live) {
        nb_forget_slot(ctx, slot, NB_EVICTED);
    }
}

typedef struct nb_idmsg {
    int32_t rc;
    char why[236];
    ncclUniqueId id;
} nb_idmsg_t;

typedef struct nb_agree {
    int32_t rc;
    char why[244];
} nb_agree_t;

/* every rank's rc: 0 if all succeeded, else the first failure (message in ctx->err) */
int nb_agree_all(nb_ctx_t *ctx, int rc, const char *why)
{
    int n = ctx->n;
    nb_agree_t mine, *all = calloc((size_t)n, sizeof(*all));
    memset(&mine, 0, sizeof(mine));
    mine.rc = rc;
    snprintf(mine.why, sizeof(mine.why), "%s", rc != 0 ? why : "");
    if (all == NULL) {
        nb_set_error(ctx, "out of memory");
        return COLLPROF_ERR_NO_MEMORY; /* the peers see an out-of-band failure */
    }
    if (ctx->host->oob_allgather(&mine, all, sizeof(mine)) != 0) {
        free(all);
        nb_set_error(ctx, "out-of-band allgather failed");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    int res = 0;
    for (int q = 0; q < n; q++) {
        if (all[q].rc != 0) {
            res = all[q].rc;
            all[q].why[sizeof(all[q].why) - 1] = '\0';
            if (q == ctx->rank || all[q].rc == COLLPROF_ERR_NO_DEVICE) { /* that one names q */
                nb_set_error(ctx, "%s", all[q].why);
            } else {
                nb_set_error(ctx, "rank %d: %s", q, all[q].why);
            }
            break;
        }
    }
    free(all);
    return res;
}

/* collective: a communicator for variant v in slot (env set while it is created) */
static int nb_comm_create(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int slot)
{
    nb_idmsg_t msg;
    int rc = COLLPROF_OK;
    char key[CP_NCCL_KEY_LEN];
    ncclComm_t comm = NULL;

    cp_nccl_variant_key(v, key, sizeof(key));
    memset(&msg, 0, sizeof(msg));
    if (ctx->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&msg.id);
        if (r != ncclSuccess) {
            msg.rc = nb_nccl_fail(ctx, NULL, "ncclGetUniqueId", r);
            snprintf(msg.why, sizeof(msg.why), "%s", ctx->err);
        }
    }
    if (ctx->host->oob_bcast(&msg, sizeof(msg), 0) != 0) {
        nb_set_error(ctx, "out-of-band broadcast of the ncclUniqueId failed");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (msg.rc != 0) {
        msg.why[sizeof(msg.why) - 1] = '\0';
        nb_set_error(ctx, "rank 0: %s", msg.why);
        return msg.rc;
    }
    cp_nccl_env_saved_t saved;
    if (cp_nccl_env_push(v, &saved) != 0) {
        nb_set_error(ctx, "cannot set the environment of variant %s", v->name);
        rc = COLLPROF_ERR_NO_MEMORY;
    } else {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = ctx->blocking;
        config.commName = v->name;
        ncclResult_t r = ncclCommInitRankConfig(&comm, ctx->n, msg.id, ctx->rank, &config);
        if (r == ncclSuccess || r == ncclInProgress) {
            char what[CP_NCCL_KEY_LEN + 64];
            snprintf(what, sizeof(what), "ncclCommInitRankConfig [%s]", key[0] ? key : "defaults");
            rc = nb_settle(ctx, -1, comm, r, what); /* the environment stays set meanwhile */
        } else {
            rc = nb_nccl_fail(ctx, comm, "ncclCommInitRankConfig", r);
            comm = NULL;
        }
        cp_nccl_env_pop(&saved);
    }
    int all = nb_agree_all(ctx, rc, ctx->err);
    if (all != 0) {
        /* a timed-out init was aborted by nb_settle already */
        if (comm != NULL && rc != COLLPROF_ERR_TIMEOUT) {
            ncclCommAbort(comm);
        }
        return all;
    }
    nb_comm_t *c = &ctx->comms[slot];
    c->live = 1;
    c->comm = comm;
    c->vname = v->name;
    c->used = ++ctx->tick;
    snprintf(c->key, sizeof(c->key), "%s", key);
    if (ctx->host->log != NULL && ctx->rank == 0) {
        ctx->host->log(COLLPROF_LOG_INFO,
                       "nccl: communicator for variant %s created with %s (NCCL_DEBUG=INFO "
                       "NCCL_DEBUG_SUBSYS=TUNING shows what NCCL picks)",
                       v->name, key[0] ? key : "the library's defaults");
    }
    return COLLPROF_OK;
}

/* collective: the slot of v's communicator, creating it (and evicting) if needed */
int nb_slot_for(nb_ctx_t *ctx, const cp_nccl_variant_t *v, int *slot)
{
    char key[CP_NCCL_KEY_LEN];
    int free_slot = -1, lru = -1;
    cp_nccl_variant_key(v, key, sizeof(key));
    for (int s = 0; s < ctx->max_comms; s++) {
        nb_comm_t *c = &ctx->comms[s];
        if (c->live && !strcmp(c->key, key)) {
            c->used = ++ctx->tick;
            *slot = s;
            return COLLPROF_OK;
        }
        if (!c->live && free_slot < 0) {
            free_slot = s;
        }
        if (c->live && (lru < 0 || c->used < ctx->comms[lru].used)) {
            lru = s;
        }
    }
    if (free_slot < 0) {
        if (ctx->host->log != NULL && ctx->rank == 0) {
            ctx->host->log(COLLPROF_LOG_INFO,
                           "nccl: finalising the communicator of %s (at most "
                           "%d at once, -B nccl-max-comms)",
                           ctx->comms[lru].vname, ctx->max_comms);
        }
        nb_destroy_slot(ctx, lru);
        free_slot = lru;
    }
    int rc = nb_comm_create(ctx, v, free_slot);
    if (rc == COLLPROF_OK) {
        *slot = free_slot;
    }
    return rc;
}
