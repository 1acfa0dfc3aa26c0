/*
 * collprof's NCCL profiler plugin (libnccl-profiler-collprof.so): records
 * every collective and point-to-point op of an NCCL program into one JSON
 * lines file per process in $COLLPROF_TRACE_DIR (docs/replay.md, "Recording
 * from NCCL programs"), which `collprof-report import --trace nccl-collprof`
 * reads.
 *
 * ncclprof_entry.c: NCCL's tables (ncclProfiler_v6 .. v3), each version's
 * descriptor turned into an np_desc_t.  ncclprof_rec.c: the communicators,
 * the ops in issue order, their times, the file.  ncclprof_reg.c: the handles
 * NCCL holds, numbers that are looked up, never pointers that are followed.
 */
#ifndef COLLPROF_NCCLPROF_H
#define COLLPROF_NCCLPROF_H

#include <stdint.h>
#include <stddef.h>

/* one communicator: NCCL's context of an init */
typedef struct np_comm {
    int kind; /* NP_H_COMM */
    int api;  /* the table NCCL took: 3 .. 6 */
    uint64_t hash;
    uint64_t sn; /* this process's number for it, from 1 */
    char name[64];
    int nranks, rank, nnodes; /* nranks, nnodes 0: not known (v3) */
    uint64_t p2p_sn;
    char head[768]; /* its lines' header and metadata, made at the first (ncclprof_rec.c) */
} np_comm_t;

/* an op as any version describes it */
typedef struct np_desc {
    int p2p, ce;
    const char *func, *dtype, *algo, *proto;
    uint64_t seq; /* UINT64_MAX: none (p2p: counted here) */
    size_t count;
    int root, peer, nchannels; /* -1: none; nchannels: kernel channels to wait for, 0: none */
    void *group;               /* the group's handle as NCCL passes it (any value), or NULL */
    int rank;                  /* the descriptor's rank */
    uint64_t v3_hash;          /* v3: the communicator the op names */
    const char *v3_name;
} np_desc_t;

enum { NP_H_COMM = 0x6e70c0, NP_H_GROUP, NP_H_OP, NP_H_KCH };

/* ncclprof_rec.c: every function is safe from any thread and never fails NCCL.  A handle or
 * context is any value NCCL passes: one that is not a live one of the kind wanted (never
 * ours, or its event already stopped and gone, its communicator finalized) is ignored. */
/** A communicator's context (NULL: recording is off in this process); *mask: the events. */
void *np_comm_new(int api, uint64_t hash, const char *name, int nnodes, int nranks, int rank,
                  int *mask);
/** The end of communicator ctx: its ops written, the file closed after the last. */
void np_comm_end(void *ctx);
/** A group event's handle (of communicator ctx, where NCCL names it). */
void *np_group_start(void *ctx);
/** An op's handle (of communicator ctx), started now. */
void *np_op_start(void *ctx, const np_desc_t *d);
/** A kernel channel of op handle op started at gpu_ns: its handle, NULL when op is none. */
void *np_kch_start(void *op, uint64_t gpu_ns);
/** The GPU stop time of a kernel channel. */
void np_kch_state(void *kch, uint64_t gpu_ns);
/** Any handle stopped. */
void np_stop(void *h);

/* ncclprof_reg.c, the handles (the recorder's mutex held): each object starts with its kind */
/** A new handle for obj; NULL when out of memory. */
void *np_reg_add(void *obj);
/** The object of live handle h when it is of kind (0: any), else NULL. */
void *np_reg_get(const void *h, int kind);
/** Handle h is no longer live (any h). */
void np_reg_del(const void *h);
/** fn on the object of every live handle (fn may np_reg_del it). */
void np_reg_each(void (*fn)(void *obj, void *arg), void *arg);

#endif /* COLLPROF_NCCLPROF_H */
