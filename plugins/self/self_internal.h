/*
 * What the self plugin's files share: self_backend.c (entry, query, init/finalize, memory,
 * run), self_shm.c (creating and mapping the shared segments), self_ops.c (the barrier, the
 * reductions and every operation over a segment's slots), self_p2p.c (sends and recvs) and
 * self_async.c (posted collectives).  Internal to plugins/self.
 */
#ifndef COLLPROF_SELF_INTERNAL_H
#define COLLPROF_SELF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <collprof/plugin.h>

#define SELF_ERR_LEN   256
#define SELF_NAME_LEN  64
#define SELF_LINE      64
#define SELF_PAGE      4096
#define SELF_SLOT_KIB  1024
#define SELF_MAX_ALIGN 8 /* the largest element size */

/* The barrier: arrivals and a generation number, on their own cache lines. */
typedef struct self_bar {
    uint32_t count;
    char pad0[SELF_LINE - sizeof(uint32_t)];
    uint32_t gen;
    char pad1[SELF_LINE - sizeof(uint32_t)];
} self_bar_t;

/* After the barrier of run()'s segment: how the workers of the ranks make the lane for posted
 * collectives, a segment of its own, at the first collective posted (self_async.c). */
typedef struct self_lane_ctl {
    uint32_t state;  /* 0: not yet; 1: rank 0 created it, named in name; 2: it could not */
    uint32_t mapped; /* ranks that mapped it */
    uint32_t failed; /* ranks that could not */
    uint32_t pad;
    char name[SELF_NAME_LEN];
} self_lane_ctl_t;

typedef struct self_ctx {
    const collprof_host_t *host;
    int rank;
    int n;
    size_t slot;   /* bytes per rank's slot */
    size_t seglen; /* bytes mapped */
    void *seg;     /* the mapping */
    self_bar_t *bar;
    self_lane_ctl_t *ctl; /* (the first lane's; unused in the posted lane's segment) */
    size_t *most;         /* n: every rank's largest alltoallv send count */
    unsigned char *slots;
    unsigned char *results;     /* two areas of slot bytes after the n slots */
    unsigned char *p2p;         /* n * n rings of sends and recvs after them (self_p2p.c) */
    size_t ring;                /* bytes of each ring's data */
    struct self_p2p *posted;    /* this rank's posted sends and recvs, in order */
    struct self_ctx *live_next; /* the next context with posted ops (self_p2p.c) */
    struct self_ctx *lane;      /* the posted collectives' lane, its own segment (self_async.c) */
    struct self_async *async;   /* its worker thread and queue */
    char err[SELF_ERR_LEN];
} self_ctx_t;

/* self_shm.c: the segments. */
/** A fresh segment of len bytes, its pages allocated: 0 and its name, else an errno and why. */
int self_shm_create(size_t len, char name[SELF_NAME_LEN], char *why, size_t whylen);
/** Segment name mapped: its address, else NULL and why. */
void *self_shm_map(const char *name, size_t len, char *why, size_t whylen);
/** The bytes of a lane's header (barrier, lane control, n counts), whole pages. */
size_t self_header_bytes(int n);

/** Every rank of the node arrives before any leaves (the segment's process-shared barrier). */
void self_barrier(self_ctx_t *ctx);
/** d[i] = d[i] op s[i] for n elements of dtype. */
void self_reduce(void *d, const void *s, size_t n, int dtype, int op);
/** One operation of a (checked by the caller) over the segment. */
void self_run_op(self_ctx_t *ctx, const collprof_args_t *a);

/* self_p2p.c: post() and wait() of sends and recvs over the rings. */
size_t self_p2p_ring_bytes(int n);
size_t self_p2p_area_bytes(int n);
int self_p2p_post(void *vctx, const collprof_args_t *a, void **req);
int self_p2p_wait(void *vctx, void *req);
void self_p2p_free(self_ctx_t *ctx);
/** Move the posted sends and recvs of every context of the process once: bytes moved. */
size_t self_p2p_progress_all(void);

/* self_async.c: posted collectives, run on the context's second lane by a worker thread. */
/** ctx's worker and lane, neither started nor mapped until the first collective posted. */
int self_async_init(self_ctx_t *ctx);
int self_post_coll(self_ctx_t *ctx, const collprof_args_t *a, void **req);
int self_wait_coll(self_ctx_t *ctx, void *req);
/** Stop the worker (the ops it holds run first) and free (unmap) the lane. */
void self_async_free(self_ctx_t *ctx);

#endif
