/*
 * collprof-trace (libcollprof-trace.so): a PMPI interposition library that
 * records a program's MPI collectives and point-to-point calls, one file per
 * rank in COLLPROF_TRACE_DIR, for `collprof-report import --trace
 * collprof-trace` (docs/replay.md, "Recording"; docs/collprof-trace.1).
 *
 * Each wrapper takes the time, calls the PMPI_ function, and appends one
 * fixed-size binary record to a preallocated buffer (ct_put): nothing is
 * formatted while the program runs.  The buffer is written out as JSON lines
 * when it is full and at MPI_Finalize (ct_write.c).  Communicators are resolved
 * to MPI_COMM_WORLD ranks when they are created (ct_p2p.c intercepts the
 * constructors) and named by a key every member computes alike: a hash of
 * the member list and how many communicators of those members it had before.
 *
 * Files, bottom up: ct_write.c (the state, the buffer written as JSON lines),
 * ct_core.c (the handle maps, the communicators, the element types, ct_put),
 * ct_file.c (MPI_Init, MPI_Finalize: the file opened, the common reference),
 * ct_coll.c (the collectives and their I forms), ct_p2p.c (send, receive, the
 * wait and test calls, the communicator constructors).
 * Nothing of collprof is linked in: the library goes into foreign programs.
 */
#ifndef COLLPROF_TRACE_CT_H
#define COLLPROF_TRACE_CT_H

#include <mpi.h>

#include <stdint.h>
#include <time.h>

#define CT_API __attribute__((visibility("default")))

/* The MPI functions recorded: X(ID, MPI name, the trace model's op) */
#define CT_FUNCS(X)                                                                                \
    X(BARRIER, "MPI_Barrier", "barrier")                                                           \
    X(BCAST, "MPI_Bcast", "broadcast")                                                             \
    X(REDUCE, "MPI_Reduce", "reduce")                                                              \
    X(ALLREDUCE, "MPI_Allreduce", "allreduce")                                                     \
    X(ALLGATHER, "MPI_Allgather", "allgather")                                                     \
    X(ALLGATHERV, "MPI_Allgatherv", "allgatherv")                                                  \
    X(GATHER, "MPI_Gather", "gather")                                                              \
    X(GATHERV, "MPI_Gatherv", "gatherv")                                                           \
    X(SCATTER, "MPI_Scatter", "scatter")                                                           \
    X(SCATTERV, "MPI_Scatterv", "scatterv")                                                        \
    X(ALLTOALL, "MPI_Alltoall", "alltoall")                                                        \
    X(ALLTOALLV, "MPI_Alltoallv", "alltoallv")                                                     \
    X(REDSCAT, "MPI_Reduce_scatter", "reducescatter")                                              \
    X(REDSCATB, "MPI_Reduce_scatter_block", "reducescatter")                                       \
    X(IBARRIER, "MPI_Ibarrier", "barrier")                                                         \
    X(IBCAST, "MPI_Ibcast", "broadcast")                                                           \
    X(IREDUCE, "MPI_Ireduce", "reduce")                                                            \
    X(IALLREDUCE, "MPI_Iallreduce", "allreduce")                                                   \
    X(IALLGATHER, "MPI_Iallgather", "allgather")                                                   \
    X(IALLGATHERV, "MPI_Iallgatherv", "allgatherv")                                                \
    X(IGATHER, "MPI_Igather", "gather")                                                            \
    X(IGATHERV, "MPI_Igatherv", "gatherv")                                                         \
    X(ISCATTER, "MPI_Iscatter", "scatter")                                                         \
    X(ISCATTERV, "MPI_Iscatterv", "scatterv")                                                      \
    X(IALLTOALL, "MPI_Ialltoall", "alltoall")                                                      \
    X(IALLTOALLV, "MPI_Ialltoallv", "alltoallv")                                                   \
    X(IREDSCAT, "MPI_Ireduce_scatter", "reducescatter")                                            \
    X(IREDSCATB, "MPI_Ireduce_scatter_block", "reducescatter")                                     \
    X(SEND, "MPI_Send", "send")                                                                    \
    X(RECV, "MPI_Recv", "recv")                                                                    \
    X(ISEND, "MPI_Isend", "send")                                                                  \
    X(IRECV, "MPI_Irecv", "recv")                                                                  \
    X(SENDRECV_S, "MPI_Sendrecv", "send")                                                          \
    X(SENDRECV_R, "MPI_Sendrecv", "recv")                                                          \
    X(SSEND, "MPI_Ssend", "send")                                                                  \
    X(ISSEND, "MPI_Issend", "send")                                                                \
    X(WAIT, "MPI_Wait", "wait")                                                                    \
    X(WAITALL, "MPI_Waitall", "wait")                                                              \
    X(WAITANY, "MPI_Waitany", "wait")                                                              \
    X(TEST, "MPI_Test", "wait")                                                                    \
    X(TESTALL, "MPI_Testall", "wait")                                                              \
    X(WAITSOME, "MPI_Waitsome", "wait")                                                            \
    X(TESTSOME, "MPI_Testsome", "wait")                                                            \
    X(TESTANY, "MPI_Testany", "wait")

#define CT_ENUM(ID, NAME, OP) CT_##ID,
enum { CT_FUNCS(CT_ENUM) CT_NFUNCS };
#undef CT_ENUM

/* flags of a record: the counts are per group rank, times the group size */
#define CT_IN_PER_RANK  1u
#define CT_OUT_PER_RANK 2u
#define CT_DT_NONE      255u /* an element type the model has no name for: bytes only */

/* One recorded call: 80 bytes, nothing formatted. */
typedef struct ct_rec {
    int64_t t;        /**< issue, ns since the common reference (MPI_Init's barrier) */
    int64_t dur;      /**< ns the call took */
    uint64_t in, out; /**< elements of the input and output buffers */
    int64_t req;      /**< the request it issues (a wait: completes); -1: blocking */
    int64_t co;       /**< calls issued as one (MPI_Sendrecv) share it; -1: none */
    int64_t split;    /**< alltoallv: its 2 x group size counts at ct.splits[split]; -1 */
    int32_t comm;     /**< the communicator's index in ct.comms */
    int32_t root;     /**< rank in comm (made global by ct_put); -1: none */
    int32_t peer;     /**< rank in comm (made global by ct_put); -1: none or unknown */
    uint32_t esize;   /**< bytes per element */
    uint16_t fn;      /**< CT_* */
    uint8_t dtype;    /**< index in the element types, CT_DT_NONE: bytes only */
    uint8_t flags;    /**< CT_IN_PER_RANK, CT_OUT_PER_RANK */
} ct_rec_t;

typedef struct ct_comm {
    MPI_Comm h; /**< MPI_COMM_NULL once freed */
    int size, written, k;
    int *members; /**< [size] MPI_COMM_WORLD ranks in comm-rank order */
    uint64_t hash;
    const char *from; /**< the MPI function that made it */
} ct_comm_t;

/* handle -> three numbers, open addressing (ct_core.c); key 0 is an empty slot */
typedef struct ct_map {
    uint64_t *keys;
    int64_t (*vals)[3];
    size_t cap, n;
} ct_map_t;

typedef struct ct_state {
    volatile int on; /**< recording */
    int rank, size, mt;
    int64_t t0; /**< this rank's clock at the common reference */
    ct_rec_t *ring;
    size_t nring, cap;
    int64_t *splits;
    size_t nsplits, scap;
    uint64_t flushed; /**< records written before ring[0] */
    ct_comm_t *comms;
    size_t ncomms, ccap;
    ct_map_t comm_of, req_of;
    int64_t next_req, next_co;
    uint64_t last_comm_key;
    int32_t last_comm;
    MPI_Group world_group;
    void *out; /**< the FILE */
    char path[4200];
} ct_state_t;

extern ct_state_t ct;

static inline int64_t ct_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/** A record of fn issued at t (ct_now), every other field "none". */
static inline ct_rec_t ct_rec(int fn, int64_t t)
{
    ct_rec_t r = {t, 0, 0, 0, -1, -1, -1, 0, -1, -1, 0, (uint16_t)fn, CT_DT_NONE, 0};
    return r;
}

/** Append r (counts in elements of dt), of communicator comm: its duration ends now, its
 *  root and peer become global ranks, its per-rank counts are multiplied by the group size.
 *  req: the request an async op issued (r->req gets its id; anysrc: a receive from
 *  MPI_ANY_SOURCE, its peer filled in when it completes), else NULL. */
void ct_put(ct_rec_t *r, MPI_Comm comm, MPI_Datatype dt, const MPI_Request *req, int anysrc);

/** ct_put of an all-to-all-v: the group size's counts each way (elements) kept beside it, their
 *  sums as its in and out counts. */
void ct_put_v(ct_rec_t *r, MPI_Comm comm, MPI_Datatype dt, const int *in, const int *out,
              const MPI_Request *req);

/** Request h (its handle before the call that completed it; st its status or NULL) is done:
 *  a wait record of fn issued at t when it is one of ours. */
void ct_req_done(MPI_Request h, int fn, int64_t t, const MPI_Status *st);

/** Is h one of ours: 0 no, 1 yes, 2 an any-source receive (its status is wanted). */
int ct_req_known(MPI_Request h);

/** Forget request h (MPI_Request_free). */
void ct_req_forget(MPI_Request h);

/** A communicator made by from: its members resolved now.  ct_comm_forget: freed. */
void ct_comm_made(MPI_Comm c, const char *from);
void ct_comm_forget(MPI_Comm c);

/* ct_core.c for ct_file.c: the locks, a communicator's index (added where new), the element
 * types; ct_write.c: their names, and the buffer written out */
void ct_lock(void);
void ct_unlock(void);
int32_t ct_comm_index(MPI_Comm c, const char *from);
void ct_types_init(void);
const char *ct_type_name(int dtype);
/** Write the buffer out (locked): 0, or -1 (recording stops). */
int ct_flush(void);

/** Start (after MPI_Init, provided: the thread level) and stop (before MPI_Finalize). */
void ct_start(int provided);
void ct_stop(void);

#endif /* COLLPROF_TRACE_CT_H */
