#include "config.h"

/*
 * The tables every rank holds (cp_boot_t's node ids, local ranks and pids per
 * rank, and each node's name once): rank 0 builds them from every rank's record
 * and sends them out over the control channel (tables.h).
 */

#include "boot/tables.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/strset.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cp_tables_free(cp_boot_t *b)
{
    free(b->node_names);
    free(b->node_ids);
    free(b->local_ranks);
    free(b->pids);
    b->node_names = NULL;
    b->node_ids = NULL;
    b->local_ranks = NULL;
    b->pids = NULL;
}

int cp_tables_alloc(cp_boot_t *b, int n)
{
    b->node_names = NULL; /* cp_tables_names, once the nodes are known */
    b->node_ids = calloc((size_t)n, sizeof(*b->node_ids));
    b->local_ranks = calloc((size_t)n, sizeof(*b->local_ranks));
    b->pids = calloc((size_t)n, sizeof(*b->pids));
    if (b->node_ids == NULL || b->local_ranks == NULL || b->pids == NULL) {
        cp_tables_free(b);
        cp_log(CP_LOG_ERROR, "out of memory for the bootstrap tables (%d ranks)", n);
        return -1;
    }
    return 0;
}

int cp_tables_names(cp_boot_t *b, int nnodes)
{
    free(b->node_names);
    b->node_names = calloc((size_t)(nnodes > 0 ? nnodes : 1), sizeof(*b->node_names));
    if (b->node_names == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory for the bootstrap tables (%d nodes)", nnodes);
        return -1;
    }
    return 0;
}

uint64_t cp_boot_tables_bytes(uint64_t ranks, uint64_t nodes)
{
    const cp_boot_t *b = NULL;
    uint64_t per_rank = sizeof(*b->node_ids) + sizeof(*b->local_ranks) + sizeof(*b->pids);
    return ranks * per_rank + nodes * sizeof(*b->node_names);
}

uint64_t cp_boot_startup_bytes(uint64_t ranks, uint64_t nodes, int rank0)
{
    const cp_boot_t *b = NULL;
    /* cp_tables_share's message: two int32 a rank, the names */
    uint64_t wire = 8 * ranks + nodes * sizeof(*b->node_names);
    if (!rank0) {
        return wire;
    }
    /* every rank's record (gather_tables), and the set numbering the nodes by name: its
     * slots (a power of two, at least twice the names), offsets, hashes and the names */
    uint64_t cap = 2;
    while (cap < 2 * nodes) {
        cap *= 2;
    }
    uint64_t set = cap * sizeof(uint32_t) + (nodes + 1) * (sizeof(size_t) + sizeof(uint32_t)) +
                   nodes * sizeof(*b->node_names);
    return wire + ranks * sizeof(peer_info_t) + 2 * set; /* 2: the set grows by doubling */
}

/* Node ids by host name in O(n), in order of first appearance (base/strset.h); each
 * node's name once. */
int cp_tables_fill(cp_boot_t *b, const peer_info_t *all)
{
    cp_strset_t hosts = {0};
    for (int r = 0; r < b->nranks; r++) {
        b->local_ranks[r] = all[r].local_rank;
        b->pids[r] = (pid_t)all[r].pid;
        int added;
        const char *h = all[r].hostname;
        long id = cp_strset_put(&hosts, h, strnlen(h, sizeof(all[r].hostname) - 1), &added);
        if (id < 0) {
            cp_strset_free(&hosts);
            return -1;
        }
        b->node_ids[r] = (int)id;
    }
    b->nnodes = (int)hosts.n;
    if (cp_tables_names(b, b->nnodes) != 0) {
        cp_strset_free(&hosts);
        return -1;
    }
    for (int k = 0; k < b->nnodes; k++) {
        snprintf(b->node_names[k], sizeof(b->node_names[k]), "%s", cp_strset_key(&hosts, k));
    }
    cp_strset_free(&hosts);
    b->node_id = b->node_ids[b->rank];
    return 0;
}

void cp_tables_derive_local(cp_boot_t *b)
{
    int lr = 0, ls = 0;
    for (int r = 0; r < b->nranks; r++) {
        if (b->node_ids[r] == b->node_id) {
            lr += r < b->rank;
            ls++;
        }
    }
    if (b->local_rank < 0) {
        b->local_rank = lr;
        for (int r = 0; r < b->nranks; r++) {
            if (b->local_ranks[r] < 0) {
                int k = 0;
                for (int q = 0; q < r; q++) {
                    k += b->node_ids[q] == b->node_ids[r];
                }
                b->local_ranks[r] = k;
            }
        }
    }
    if (b->local_size < 1) {
        b->local_size = ls;
    }
}

/* A rank other than 0: the tables from rank 0's message (share_tables). */
static int unpack_tables(cp_boot_t *b, const char *buf, int nnodes, size_t len)
{
    size_t n = (size_t)b->nranks;
    const int32_t *ids = (const int32_t *)buf, *lrs = ids + n;
    const char *at = buf + 8 * n, *end = buf + len;
    int ret = nnodes > b->nranks ? COLLPROF_ERR_BOOTSTRAP : COLLPROF_OK; /* a node has a rank */
    if (ret == COLLPROF_OK && cp_tables_names(b, nnodes) != 0) {
        ret = COLLPROF_ERR_NO_MEMORY;
    }
    for (int k = 0; ret == COLLPROF_OK && k < nnodes; k++) {
        size_t l = strnlen(at, (size_t)(end - at));
        if (l == (size_t)(end - at)) {
            ret = COLLPROF_ERR_BOOTSTRAP;
            break;
        }
        snprintf(b->node_names[k], sizeof(b->node_names[k]), "%s", at);
        at += l + 1;
    }
    for (size_t r = 0; ret == COLLPROF_OK && r < n; r++) {
        if (ids[r] < 0 || ids[r] >= nnodes) {
            ret = COLLPROF_ERR_BOOTSTRAP;
            break;
        }
        b->node_ids[r] = ids[r];
        b->local_ranks[r] = lrs[r];
    }
    if (ret != COLLPROF_OK) {
        if (ret == COLLPROF_ERR_BOOTSTRAP) {
            cp_log(CP_LOG_ERROR, "the rank table from rank 0 is malformed");
        }
        return ret;
    }
    b->nnodes = nnodes;
    b->node_id = b->node_ids[b->rank];
    b->pids[b->rank] = getpid(); /* the others' pids: rank 0's /ranks table alone */
    return COLLPROF_OK;
}

/*
 * What every rank holds of the others, from rank 0: each rank's node and
 * local rank, and the nodes' names (n ranks: 8 n bytes and the names, where
 * every rank reading every rank's record from PMIx made n^2 gets).  Laid out
 * as int32 node id x n, int32 local rank x n, then one NUL-terminated name
 * per node in node order; a header (nodes, names' bytes) goes first.
 */
int cp_tables_share(cp_boot_t *b)
{
    size_t n = (size_t)b->nranks;
    int32_t head[2] = {b->nnodes, 0};
    for (int k = 0; b->rank == 0 && k < b->nnodes; k++) {
        head[1] += (int32_t)strlen(b->node_names[k]) + 1;
    }
    int ret = cp_oob_bcast(head, sizeof(head), 0);
    size_t len = 8 * n + (size_t)(head[1] > 0 ? head[1] : 0);
    char *buf = NULL;
    if (ret == COLLPROF_OK && (head[0] < 1 || head[1] < 1 || (buf = malloc(len)) == NULL)) {
        ret = COLLPROF_ERR_NO_MEMORY;
    }
    if (ret == COLLPROF_OK && b->rank == 0) {
        int32_t *ids = (int32_t *)buf, *lrs = ids + n;
        char *at = buf + 8 * n;
        for (size_t r = 0; r < n; r++) {
            ids[r] = b->node_ids[r];
            lrs[r] = b->local_ranks[r];
        }
        for (int k = 0; k < b->nnodes; k++) {
            at = stpcpy(at, b->node_names[k]) + 1;
        }
    }
    if (ret == COLLPROF_OK) {
        ret = cp_oob_bcast(buf, len, 0);
    }
    if (ret == COLLPROF_OK && b->rank != 0) {
        ret = unpack_tables(b, buf, head[0], len);
    }
    free(buf);
    return ret;
}
