/*
 * Split cells (collprof --split node,cross): each cell also runs on groups
 * of the job's ranks, every group at once, as nccl-tests' split
 * communicators do.  "node" groups the ranks of each node (the node's own
 * fabric), "cross" the ranks of equal local rank, one per node (the
 * network).  Every rank belongs to exactly one group of each kind, so every
 * rank runs every cell and the runner's agreements, gathers and watchdog
 * stay those of the whole job; only the backend's context, rank and size
 * are the group's.
 */
#ifndef COLLPROF_CORE_SPLIT_H
#define COLLPROF_CORE_SPLIT_H

#include "boot/boot.h"
#include "plugin/loader.h"

#include <collprof/plugin.h>

typedef enum cp_split {
    CP_SPLIT_WORLD = 0, /**< every rank together (the plain cell) */
    CP_SPLIT_NODE = 1,  /**< the ranks of each node */
    CP_SPLIT_CROSS = 2, /**< the ranks of equal local rank: one per node */
    CP_SPLIT_KINDS = 3
} cp_split_t;

/** "world", "node", "cross"; NULL when out of range. */
const char *cp_split_name(int kind);
/** The kind named s, or -1. */
int cp_split_from_name(const char *s);

/** The size of this rank's group of kind (*n) and this rank's index in it (*me). */
void cp_split_place(const cp_boot_t *b, int kind, int *n, int *me);
/** This rank's group of kind: *n members (job ranks, ascending) in a new
 *  array, *me this rank's index in it; NULL when out of memory. */
int *cp_split_members(const cp_boot_t *b, int kind, int *n, int *me);

/** Why cells of kind cannot tell anything on this job's layout (every rank on
 *  one node, or one rank per node: the group would be the whole job or one
 *  rank), else NULL.  The same answer on every rank. */
const char *cp_split_pointless(const cp_boot_t *b, int kind, char *buf, size_t len);

/**
 * Collective over the job: start each plugin's group contexts for the kinds
 * in kinds (a COLLPROF_BIT mask) where used[i] is set, through a host that
 * is world's with the group's rank, size, out-of-band functions and
 * world_ranks.  A backend without COLLPROF_BACKEND_GROUPS, or whose init
 * fails on any rank, gets no group context and a reason in gerror.
 */
void cp_split_start(cp_plugin_t *plugins, int n, const unsigned char *used, unsigned kinds,
                    const cp_boot_t *b, const collprof_host_t *world);
/** Finalize the group contexts (before the whole job's). */
void cp_split_stop(cp_plugin_t *plugins, int n);

/**
 * Collective over the job (collprof --repeats): a fresh context of plugin p
 * for every rank of the job -- new communicators, connections, buffers --
 * through a host that is world's with world_ranks 0..n-1, as a group that
 * holds every rank.  NULL when p has no COLLPROF_BACKEND_GROUPS or no
 * context of its own, or when init failed on some rank (agreed, and said
 * once in why): the caller then runs on p's own context.  Finalize it with
 * p->be->finalize() on every rank.
 */
void *cp_split_fresh(cp_plugin_t *p, const cp_boot_t *b, const collprof_host_t *world, char *why,
                     size_t len);

#endif /* COLLPROF_CORE_SPLIT_H */
