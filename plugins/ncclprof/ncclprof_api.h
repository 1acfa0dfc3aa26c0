/*
 * NCCL's external profiler interface, as far as collprof's recorder uses it:
 * our own minimal declarations (no NCCL header is needed to build the
 * plugin).  Followed: NVIDIA/nccl at commit 5067397c (NCCL 2.29 line),
 * plugins/profiler/example/nccl/profiler.h (event and state numbers) and
 * profiler_v3.h .. profiler_v6.h (the descriptor and table layouts), and
 * src/plugin/profiler.cc (which fields NCCL fills, and when it calls).
 *
 * Only the members we read are named; each struct keeps every member before
 * them so that the offsets are NCCL's.  A member past the last one we read
 * is left out (we never take the size of a descriptor: NCCL owns them).
 * Checked once (2026-12-06), outside the tree, by static assertions against
 * that commit's example headers: every offset we read, the event and state
 * numbers and the tables' layouts are NCCL's.  The API versions came with
 * NCCL 2.26 (v3), 2.27 (v4), 2.28 (v5) and 2.29 (v6).
 */
#ifndef COLLPROF_NCCLPROF_API_H
#define COLLPROF_NCCLPROF_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ncclResult_t: 0 is success; the plugin never fails NCCL's calls. */
typedef int np_result_t;
#define NP_SUCCESS 0

/* the event types (a bit each; the activation mask is their OR) */
enum {
    NP_EV_GROUP = 1 << 0,     /* a kernel plan: the ops launched together */
    NP_EV_COLL = 1 << 1,      /* one collective of the plan */
    NP_EV_P2P = 1 << 2,       /* one send or receive of the plan */
    NP_EV_KERNEL_CH = 1 << 6, /* one channel of the kernel, GPU-timed (v4+) */
    NP_EV_CE_COLL = 1 << 12,  /* a copy-engine collective (v6) */
};
/* the state NCCL reports when a kernel channel ends (its GPU stop time in the args) */
#define NP_STATE_KERNEL_CH_STOP 22

/* NCCL's logger: level, subsystem flags, file, line, format... (unused) */
typedef void (*np_logger_t)(int level, unsigned long flags, const char *file, int line,
                            const char *fmt, ...);

/* A collective as v5 and v6 describe it (v4 the same without the parent group). */
typedef struct {
    uint64_t seq;     /* the communicator's count of this function so far */
    const char *func; /* "AllReduce", "AllGather", "AlltoAll", ... */
    const void *sendbuf;
    void *recvbuf;
    size_t count;      /* elements, as given to the call */
    int root;          /* a rank of the communicator */
    const char *dtype; /* "ncclFloat32", ... */
    uint8_t nchannels;
    uint8_t nwarps;
    const char *algo, *proto;
    void *group; /* v5+: our handle of the kernel plan's group event */
} np_coll5_t;

typedef struct {
    const char *func; /* "Send", "Recv" */
    void *buf;
    const char *dtype;
    size_t count;
    int peer;
    uint8_t nchannels;
    void *group; /* v5+ */
} np_p2p5_t;

typedef struct {
    uint8_t channel;
    uint64_t gpu_start_ns; /* the GPU's global timer when the channel started */
} np_kch_t;

/* v6's copy-engine collective, up to the element type */
typedef struct {
    uint64_t seq;
    const char *func;
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    int root;
    const char *dtype;
} np_cecoll6_t;

/* v5 and v6: a 64-bit type; v6 only adds members to the union. */
typedef struct {
    uint64_t type;
    void *parent;
    int rank;
    union {
        np_coll5_t coll;
        np_p2p5_t p2p;
        np_kch_t kch;
        np_cecoll6_t cecoll;
    } u;
} np_descr5_t;

/* v4: an 8-bit type, and no parent group (the parent object is the group). */
typedef struct {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct {
            uint64_t seq;
            const char *func;
            const void *sendbuf;
            void *recvbuf;
            size_t count;
            int root;
            const char *dtype;
            uint8_t nchannels;
            uint8_t nwarps;
            const char *algo, *proto;
        } coll;
        struct {
            const char *func;
            void *buf;
            const char *dtype;
            size_t count;
            int peer;
            uint8_t nchannels;
        } p2p;
        np_kch_t kch;
    } u;
} np_descr4_t;

/* v3: the communicator is named in each op; no channel count for p2p, no GPU timer. */
typedef struct {
    uint8_t type;
    void *parent;
    int rank;
    union {
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            uint64_t seq;
            const char *func;
            const void *sendbuf;
            void *recvbuf;
            size_t count;
            int root;
            const char *dtype;
            uint8_t nchannels;
            uint8_t nwarps;
            const char *algo, *proto;
        } coll;
        struct {
            const char *comm_name;
            uint64_t comm_hash;
            const char *func;
            void *buf;
            const char *dtype;
            size_t count;
            int peer;
        } p2p;
    } u;
} np_descr3_t;

/* recordEventState's arguments, v4 to v6: a union whose kernel-channel member (the GPU stop
 * time) is a 64-bit value at offset 0. */
typedef union {
    uint64_t gpu_stop_ns;
    size_t other;
    void *data;
} np_state_args_t;

/* the tables NCCL looks up by name (ncclProfiler_v6 ... ncclProfiler_v3) */
typedef struct {
    const char *name;
    np_result_t (*init)(void **ctx, uint64_t comm_hash, int *mask, const char *comm_name,
                        int nnodes, int nranks, int rank, np_logger_t log);
    np_result_t (*start)(void *ctx, void **handle, np_descr5_t *d);
    np_result_t (*stop)(void *handle);
    np_result_t (*state)(void *handle, int state, np_state_args_t *args);
    np_result_t (*finalize)(void *ctx);
} np_table5_t; /* v5 and v6 */

typedef struct {
    const char *name;
    np_result_t (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash,
                        int nnodes, int nranks, int rank, np_logger_t log);
    np_result_t (*start)(void *ctx, void **handle, np_descr4_t *d);
    np_result_t (*stop)(void *handle);
    np_result_t (*state)(void *handle, int state, np_state_args_t *args);
    np_result_t (*finalize)(void *ctx);
} np_table4_t;

typedef struct {
    const char *name;
    np_result_t (*init)(void **ctx, int *mask);
    np_result_t (*start)(void *ctx, void **handle, np_descr3_t *d);
    np_result_t (*stop)(void *handle);
    np_result_t (*state)(void *handle, int state, void *args);
    np_result_t (*finalize)(void *ctx);
} np_table3_t;

#endif /* COLLPROF_NCCLPROF_API_H */
