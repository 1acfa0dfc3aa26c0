#include "config.h"

/*
 * The control channel's one interface (oob.h's cp_oob_*): the arguments'
 * checks, then the transport chosen once at start-up (chan.h); the group
 * collectives of --split, over a tree of their own or over PMIx; what it all
 * cost.
 */

#include "chan/chan.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cp_chan_t *chan = &cp_chan_local;
static cp_tree_t *world; /* the job's TCP tree when chan is chan_tcp */
static const cp_chan_t chan_tcp;
static char no_tcp[256]; /* why the channel is not TCP */

int cp_oob_pmix_forced(void)
{
    const char *mode = getenv("COLLPROF_OOB");
    return mode != NULL && strcmp(mode, "pmix") == 0;
}

/* ---- the transports ---------------------------------------------------- */

int cp_chan_is_tcp(void)
{
    return chan == &chan_tcp && world != NULL && world->up;
}

cp_tree_t *cp_chan_world(void)
{
    return world;
}

static int tcp_allgather(const void *in, void *out, size_t len)
{
    return cp_tree_allgather(world, in, out, len);
}
static int tcp_gather(const void *in, void *out, size_t len)
{
    return cp_tree_gather(world, in, out, len);
}
static int tcp_bcast(void *buf, size_t len, int root)
{
    return cp_tree_bcast(world, buf, len, root);
}
static int tcp_alltoall(const void *in, void *out, size_t len)
{
    return cp_tree_alltoall(world, in, out, len);
}
static int tcp_barrier(void)
{
    return cp_tree_barrier(world);
}
static const cp_chan_t chan_tcp = {"tcp",     tcp_allgather, tcp_gather,
                                   tcp_bcast, tcp_alltoall,  tcp_barrier};

static int local_copy(const void *in, void *out, size_t len)
{
    memmove(out, in, len);
    return COLLPROF_OK;
}
static int local_bcast(void *buf, size_t len, int root)
{
    (void)buf, (void)len, (void)root;
    return COLLPROF_OK;
}
static int local_barrier(void)
{
    return COLLPROF_OK;
}
const cp_chan_t cp_chan_local = {"local",     local_copy, local_copy,
                                 local_bcast, local_copy, local_barrier};

void cp_chan_use_tcp(cp_tree_t *tree)
{
    world = tree;
    chan = &chan_tcp;
    no_tcp[0] = '\0';
}

void cp_chan_use_pmix(const char *why)
{
    chan = &cp_chan_pmix;
    snprintf(no_tcp, sizeof(no_tcp), "%s", why);
}

void cp_chan_use_local(void)
{
    chan = &cp_chan_local;
    no_tcp[0] = '\0';
}

void cp_chan_close(void)
{
    cp_tree_free(world);
    world = NULL;
    chan = &cp_chan_local;
}

/* ---- the full-world collectives ---------------------------------------- */

int cp_oob_allgather(const void *in, void *out, size_t len)
{
    if (len == 0) {
        return COLLPROF_OK;
    }
    return in == NULL || out == NULL ? COLLPROF_ERR_INVALID : chan->allgather(in, out, len);
}

int cp_oob_gather(const void *in, void *out, size_t len)
{
    if (len == 0) {
        return COLLPROF_OK;
    }
    if (in == NULL || (cp_oob_rank() == 0 && out == NULL)) {
        return COLLPROF_ERR_INVALID;
    }
    return chan->gather(in, out, len);
}

int cp_oob_bcast(void *buf, size_t len, int root)
{
    if (root < 0 || root >= cp_oob_nranks()) {
        cp_log(CP_LOG_ERROR, "OOB broadcast from rank %d of %d", root, cp_oob_nranks());
        return COLLPROF_ERR_INVALID;
    }
    if (len == 0) {
        return COLLPROF_OK;
    }
    return buf == NULL ? COLLPROF_ERR_INVALID : chan->bcast(buf, len, root);
}

int cp_oob_alltoall(const void *in, void *out, size_t len)
{
    if (len == 0) {
        return COLLPROF_OK;
    }
    return in == NULL || out == NULL ? COLLPROF_ERR_INVALID : chan->alltoall(in, out, len);
}

int cp_oob_barrier(void)
{
    return chan->barrier();
}

/* ---- what it cost ------------------------------------------------------ */

void cp_oob_stats(cp_oob_stats_t *out)
{
    cp_pmix_stats(out);
    out->tcp = chan == &chan_tcp && world != NULL && world->up;
    if (world != NULL) {
        out->tcp_ops = world->stats.ops;
        out->tcp_s = world->stats.op_s;
        out->tcp_sent_bytes = world->stats.sent_bytes;
        out->tcp_got_bytes = world->stats.got_bytes;
        out->tcp_links = world->stats.links;
    }
}

const char *cp_oob_channel(char *buf, size_t len)
{
    if (chan == &chan_tcp && world != NULL && world->up) {
        /* a tree of one rank per node is a star too, as rank 0 sees */
        int star = world->spec.star || (world->me == 0 && world->nkids == world->n - 1);
        snprintf(buf, len, "%s (%s to rank 0)", world->desc, star ? "star" : "tree by node");
    } else if (chan == &cp_chan_local) {
        snprintf(buf, len, "none (one rank)");
    } else {
        snprintf(buf, len, "pmix fences%s%s%s", no_tcp[0] ? " (no tcp: " : "", no_tcp,
                 no_tcp[0] ? ")" : "");
    }
    return buf;
}

void cp_oob_log_stats(const char *when)
{
    cp_oob_stats_t s;
    cp_oob_stats(&s);
    char channel[400], desc[300];
    if (world != NULL && (s.tcp || s.tcp_ops > 0)) {
        snprintf(channel, sizeof(channel),
                 "%s: %d links, %lu collectives (%.3f s in them), %llu bytes sent, %llu bytes "
                 "read",
                 s.tcp ? cp_oob_channel(desc, sizeof(desc)) : "tcp (closed)", s.tcp_links,
                 s.tcp_ops, s.tcp_s, s.tcp_sent_bytes, s.tcp_got_bytes);
    } else {
        snprintf(channel, sizeof(channel), "%s", cp_oob_channel(desc, sizeof(desc)));
    }
    cp_log(CP_LOG_INFO,
           "oob (%s): %lu fences (%.3f s in them), %lu puts of %llu bytes, %llu bytes read; "
           "channel %s",
           when, s.fences, s.fence_s, s.puts, s.put_bytes, s.got_bytes, channel);
}

/* ---- side messages (the screen's pair rounds) --------------------------- */

static cp_tree_t *side_tree(void)
{
    return chan == &chan_tcp && world != NULL && world->up ? world : NULL;
}

int cp_oob_side_ok(int rank)
{
    return side_tree() != NULL && cp_tree_side_direct(side_tree(), rank);
}

int cp_oob_side_up(const void *buf, size_t len)
{
    return side_tree() != NULL ? cp_tree_side_up(world, buf, len) : COLLPROF_ERR_INVALID;
}

int cp_oob_side_down(int rank, const void *buf, size_t len)
{
    return side_tree() != NULL ? cp_tree_side_down(world, rank, buf, len) : COLLPROF_ERR_INVALID;
}

int cp_oob_side_from_root(void *buf, size_t len, double s)
{
    return side_tree() != NULL ? cp_tree_side_from_root(world, buf, len, s) : COLLPROF_ERR_INVALID;
}

int cp_oob_side_poll(const unsigned char *wait, double s, int *rank, void *buf, size_t len)
{
    *rank = -1;
    return side_tree() != NULL ? cp_tree_side_poll(world, wait, s, rank, buf, len)
                               : COLLPROF_ERR_INVALID;
}
