/*
 * collprof backend plugin ABI, version 2 (see NEWS for what changed from 1).
 *
 * A backend is a shared object collprof_<name>.so that exports exactly one
 * symbol, COLLPROF_BACKEND_SYMBOL ("collprof_backend_v1": the name stays, so
 * that a plugin built for an older ABI is told to be rebuilt), of type
 * collprof_backend_t.  The core dlopens it, checks size/abi_version/name,
 * and drives it through the slots below.  A plugin never calls core
 * symbols: everything it needs from the core (rank, size, logging,
 * out-of-band exchange over PMIx) comes through collprof_host_t.
 *
 * Rules (see docs/plugins.md for a walk-through):
 *  - Fill the struct with designated initialisers.  Slots a backend does
 *    not implement point to the collprof_no_* stubs below, never NULL
 *    (optional slots excepted: NULL means none).
 *  - Return collprof_status_t codes; keep the library's own message for
 *    last_error().
 *  - Outputs are written only on success.
 *  - Appending a slot bumps COLLPROF_PLUGIN_ABI_VERSION; old fields never
 *    move.  An optional slot (below "ABI 2.2: optional slots") does not:
 *    the core calls it only when the plugin's size covers it and it is not
 *    NULL (COLLPROF_BACKEND_HAS), and accepts any size from
 *    COLLPROF_BACKEND_SIZE_V2, so plugins built before it keep loading.
 *    Appending an operation (a row of <collprof/vocab.h>) does not either:
 *    the core asks a plugin only for the ops its query() sets, so a plugin
 *    built before an op was added (allgatherv, id 11; the non-blocking
 *    iallreduce..ibroadcast, ids 12-15; gatherv and scatterv, ids 16-17)
 *    never sees it.  A plugin whose query() sets every bit below
 *    COLLPROF_OP_COUNT takes on each new op when rebuilt: it must then run
 *    it (or clear its bit).
 *  - Slots marked COLLECTIVE below are called by every rank, in the same
 *    order, with the same arguments (but buffers): a plugin may communicate
 *    inside them (the ofi plugin exchanges memory keys in mem_alloc).  The
 *    core never calls a collective slot on some ranks only: when one rank
 *    fails locally, the ranks first agree on that over the out-of-band
 *    channel and then all skip, or all call.  LOCAL slots never communicate.
 *
 * Buffer layout of every operation ("count" is the cell's element count,
 * n the world size, as in nccl-tests: count is the size of the largest
 * buffer of the operation and is a multiple of n where it is split):
 *
 *   op             send elements        recv elements
 *   allreduce      count                count
 *   allgather      count/n              count
 *   reducescatter  count                count/n
 *   reducescatter  sum(recvcounts)      recvcounts[rank]: rank r's block is
 *   (per-rank                           elements rdispls[r] .. of the
 *   blocks)                             reduction; count is the sum (not
 *                                       a multiple of n).  Only where
 *                                       caps->var_ops has the bit (a
 *                                       reduce-scatter-v, collprof
 *                                       --replay), never in place;
 *                                       recvcounts NULL: equal blocks
 *   alltoall       count (count/n each) count (count/n each)
 *   alltoallv      sendcounts[]         recvcounts[]  (displacements given)
 *   allgatherv     recvcounts[rank]     recvcounts[]: rank r's block of
 *                                       recvcounts[r] at rdispls[r]
 *                                       (only recvcounts and rdispls
 *                                       are meaningful)
 *   broadcast      -                    count  (one buffer: the root's input
 *                                             is in recvbuf; sendbuf is unused)
 *   reduce         count                count  (root only)
 *   gather         count/n              count  (root only)
 *   scatter        count (root only)    count/n
 *   gatherv        recvcounts[rank]     recvcounts[] (root only): rank r's
 *                                       block at rdispls[r]
 *   scatterv       recvcounts[] (root   recvcounts[rank]
 *                  only): rank r's block
 *                  at rdispls[r]
 *                  (gatherv, scatterv: recvcounts and rdispls are every
 *                  rank's block and its place in the root's buffer, the
 *                  same on every rank; sendcounts and sdispls are unused)
 *   barrier        -                    -
 *   sendrecv       count to peer_send   count from peer_recv
 *   iallreduce, iallgather, ialltoall, ibroadcast: as allreduce, allgather,
 *                  alltoall, broadcast (see overlap in collprof_args_t)
 *
 * In-place (args->in_place): sendbuf == recvbuf, one buffer of count
 * elements.  The input sits where MPI's MPI_IN_PLACE convention puts it:
 * allreduce, reduce, broadcast, reducescatter (result in the first
 * count/n), alltoall, alltoallv (recvcounts/rdispls describe both sides;
 * only symmetric traffic): the whole buffer; allgather and gather: this
 * rank's block at offset rank*count/n (for gather on every rank);
 * allgatherv and gatherv: this rank's block at rdispls[rank] (for gatherv
 * on every rank); scatter: the root's whole buffer, and every other rank
 * receives its block at offset rank*count/n; scatterv: the same with the
 * block at rdispls[rank]; sendrecv: the whole buffer is sent and replaced.
 * The buffers of allgatherv, gatherv and scatterv hold the total,
 * sum(recvcounts), on every rank.
 */
#ifndef COLLPROF_PLUGIN_H
#define COLLPROF_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <collprof/status.h>
#include <collprof/vocab.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLPROF_PLUGIN_ABI_VERSION 2u
#define COLLPROF_BACKEND_SYMBOL     "collprof_backend_v1"

/*
 * Spare environment entries.  Before any thread starts, each rank's process
 * appends COLLPROF_ENV_SLOTS entries "CP_ENV_SLOT=" to its environment.  A
 * plugin that must set a variable the library reads only from the
 * environment while other threads run (NCCL_ALGO: setenv of a new name
 * reallocates environ, unsetenv moves its entries, under a getenv without a
 * lock) swaps its "NAME=value" into one of them with one atomic pointer
 * store, and back, so the environment never changes shape.  No ABI change:
 * a plugin that finds none falls back to setenv.
 */
#define COLLPROF_ENV_SLOT  "CP_ENV_SLOT"
#define COLLPROF_ENV_SLOTS 16

/* Operations, element types, reduction operators and memory kinds: the
 * enums and their names come from <collprof/vocab.h>. */

#define COLLPROF_BIT(x) (1u << (unsigned)(x))

/** Log levels for collprof_host_t.log. */
enum {
    COLLPROF_LOG_ERROR = 0,
    COLLPROF_LOG_WARN = 1,
    COLLPROF_LOG_INFO = 2,
    COLLPROF_LOG_DEBUG = 3
};

/**
 * What the core gives a plugin.  Valid from init() to finalize().
 * The oob_* functions are collective over all ranks, go through PMIx (never
 * through the backend under test) and return a collprof_status_t.
 */
typedef struct collprof_host {
    size_t size; /**< sizeof(collprof_host_t) */
    int rank;
    int nranks;
    int local_rank;
    int local_size;
    int node_id;
    int nnodes;
    const char *hostname;
    const char *launcher; /**< "self", "mpirun", "slurm", "pmix" or "none" */
    /** printf-style log; prefixed by the core with time, rank and plugin. */
    void (*log)(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    /** out[r*len .. (r+1)*len) receives rank r's in[0..len). */
    int (*oob_allgather)(const void *in, void *out, size_t len);
    /** buf on root is copied into buf on every rank. */
    int (*oob_bcast)(void *buf, size_t len, int root);
    int (*oob_barrier)(void);
    /**
     * The value of one of the backend's declared options (collprof_option_t),
     * already checked against the declaration: the user's (-B KEY=VALUE),
     * else the declared default when every backend that declares the name
     * declares the same one (else NULL: the plugin applies its own).  Besides those,
     * "timeout" answers the watchdog's limit in whole seconds (NULL when off).
     */
    const char *(*get_option)(const char *key);
    /**
     * Split cells (collprof --split): this host may stand for a group of
     * the job's ranks (the ranks of one node, or one rank per node).  Then
     * rank and nranks are the group's, the oob_* functions are collective
     * over the group only, local_rank, node_id and hostname stay this
     * process's, and world_ranks[i] is the job rank of group rank i
     * (ascending).  NULL for the whole job.  Given only to backends with
     * COLLPROF_BACKEND_GROUPS; check size before reading (added in 2.1).
     */
    const int *world_ranks;
    int world_nranks; /**< ranks in the whole job */
    /**
     * in holds nranks blocks of len bytes, block r for rank r; out[r*len ..
     * (r+1)*len) receives rank r's block for this rank; in and out do not
     * overlap.  Collective like the other oob_* functions (over the group
     * for a split host).  Added in 2.2: check size (COLLPROF_HOST_HAS) before
     * reading; an older core lacks it (a plugin then uses oob_allgather).
     */
    int (*oob_alltoall)(const void *in, void *out, size_t len);
} collprof_host_t;

/** Does host h have the field f (appended after 2.0)? */
#define COLLPROF_HOST_HAS(h, f)                                                                    \
    ((h)->size >= offsetof(collprof_host_t, f) + sizeof((h)->f) && (h)->f != NULL)

/** Kinds of backend option values. */
typedef enum collprof_opt_type {
    COLLPROF_OPT_STRING = 0, /**< any non-empty text */
    COLLPROF_OPT_INT = 1,    /**< a whole number in [min, max] */
    COLLPROF_OPT_CHOICE = 2  /**< one of the comma-separated choices */
} collprof_opt_type_t;

/** Option flags. */
enum {
    /** also spelled --NAME VALUE on the command line (the core has no option of that name) */
    COLLPROF_OPTF_LONG = 1u << 0
};

/**
 * One option a backend takes (-B NAME=VALUE).  The core lists them
 * (--list, --help-backend NAME), checks every -B against them before any
 * rank starts, and records each backend's effective values in the summary
 * and the result file.
 */
typedef struct collprof_option {
    const char *name; /**< lower case, [a-z0-9-], e.g. "ofi-provider" */
    collprof_opt_type_t type;
    const char *def;     /**< the default as text, or NULL: none (the library decides) */
    long long min, max;  /**< COLLPROF_OPT_INT: the inclusive range */
    const char *choices; /**< COLLPROF_OPT_CHOICE: "a,b,c" */
    const char *help;    /**< one line, no trailing period */
    unsigned flags;      /**< COLLPROF_OPTF_* */
} collprof_option_t;

/**
 * What this rank measures with, for the result file (describe()).  The
 * caller zeroes it and sets size; empty strings mean "not known".
 */
typedef struct collprof_provenance {
    size_t size;         /**< sizeof(collprof_provenance_t), set by the caller */
    char timer[64];      /**< run_batch's clock, e.g. "cudaEventElapsedTime"; "" without one */
    char memory[64];     /**< how buffers of the memtype are allocated, e.g. "cudaMalloc" */
    char device[64];     /**< "host" or the accelerator, e.g. "cuda:0 NVIDIA H100 80GB HBM3" */
    char transport[128]; /**< provider and interface in use, e.g. "tcp;ofi_rxm on lo" */
} collprof_provenance_t;

/** A named way to perform some operations ("ring", "bruck", ...). */
typedef struct collprof_variant {
    const char *name;        /**< short, lower case, no spaces or commas */
    const char *description; /**< one line */
    uint32_t ops;            /**< COLLPROF_BIT(op) of the ops it applies to */
} collprof_variant_t;

/** Capabilities, filled by query(). Strings and arrays are owned by the plugin. */
typedef struct collprof_caps {
    size_t size;                        /**< sizeof(collprof_caps_t), set by the caller */
    const char *library_version;        /**< e.g. "Open MPI v4.1.4" */
    uint32_t ops;                       /**< COLLPROF_BIT(collprof_op_t) */
    uint32_t dtypes;                    /**< COLLPROF_BIT(collprof_dtype_t) */
    uint32_t redops;                    /**< COLLPROF_BIT(collprof_redop_t) */
    uint32_t memtypes;                  /**< COLLPROF_BIT(collprof_memtype_t) */
    const collprof_variant_t *variants; /**< "default" is implied, not listed */
    size_t nvariants;
    /*
     * Appended fields.  The caller sets size to the sizeof(collprof_caps_t)
     * it was built with and zeroes the struct; a plugin writes an appended
     * field only when size covers it (COLLPROF_CAPS_HAS(caps, field)), so a
     * newer plugin works with an older core and the other way round.  Such
     * an append keeps COLLPROF_PLUGIN_ABI_VERSION.
     */
    /**
     * Link rate of the transport in Gbit/s (1e9 bit/s), 0 = unknown.  Before
     * init() it may describe the provider/NIC the plugin would pick by
     * default; the core queries again after a successful init() and then it
     * must describe the link actually in use (libfabric:
     * fi_info->nic->link_attr->speed / 1e9).
     */
    double link_gbps;
    /**
     * The listed variant that "default" runs, or NULL when "default" is the
     * library's own choice and no listed variant.  The core then plans one
     * cell, "default", where both would run (an alias makes no second cell).
     */
    const char *default_variant;
    /**
     * COLLPROF_BIT(op) of the ops that post() takes (ABI 2.3, with the post
     * and wait slots); COLLPROF_BIT(COLLPROF_OP_SENDRECV) stands for the
     * point-to-point send and recv (see post()).  0: none.
     */
    uint32_t post_ops;
    /**
     * COLLPROF_BIT(op) of the ops besides the variable ones that the plugin
     * also runs (and posts, where post_ops has them too) with per-rank
     * blocks in recvcounts/rdispls (see the table above): only
     * COLLPROF_OP_REDUCESCATTER, a reduce-scatter of unequal blocks
     * (MPI_Reduce_scatter).  0: none; collprof --replay then composes one
     * of a reduce per block to its owner.
     */
    uint32_t var_ops;
} collprof_caps_t;

/** sizeof(collprof_caps_t) before any append: the least a plugin accepts in caps->size. */
#define COLLPROF_CAPS_SIZE_V1 offsetof(collprof_caps_t, link_gbps)

/** Does caps->size (set by the caller) cover field? */
#define COLLPROF_CAPS_HAS(caps, field)                                                             \
    ((caps)->size >= offsetof(collprof_caps_t, field) + sizeof((caps)->field))

/** One operation to perform. */
typedef struct collprof_args {
    collprof_op_t op;
    collprof_dtype_t dtype;
    collprof_redop_t redop;
    int root;
    int in_place;
    int memtype;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /**< the cell's element count (see the table above) */
    /* alltoallv, allgatherv, gatherv, scatterv: per-peer element counts and
     * displacements (elements; see the table above) */
    const size_t *sendcounts;
    const size_t *sdispls;
    const size_t *recvcounts;
    const size_t *rdispls;
    /* sendrecv */
    int peer_send;
    int peer_recv;
    /*
     * Appended for the non-blocking operations (COLLPROF_OPF_NONBLOCKING:
     * iallreduce, iallgather, ialltoall, ibroadcast; no ABI bump): a plugin
     * reads them only for such an op, which the core asks of a plugin only
     * when its query() sets the op's bit, so older plugins never see them.
     * The op's buffers are those of its blocking twin (collprof_op_blocking).
     * run() posts the operation (MPI_Iallreduce; an NCCL call on the stream),
     * calls overlap(overlap_arg) once on the calling thread when overlap is
     * not NULL, then waits until the operation is complete on this rank.
     * The core times run() and, inside overlap(), a calibrated host
     * computation: what a rank computes while its collective progresses.
     */
    void (*overlap)(void *arg);
    void *overlap_arg;
} collprof_args_t;

/** Backend flags. */
enum {
    COLLPROF_BACKEND_RTLD_GLOBAL = 1u << 0,  /**< make the plugin's libraries global (MPI) */
    COLLPROF_BACKEND_DEVICE_TIMER = 1u << 1, /**< times itself through run_batch */
    COLLPROF_BACKEND_ON_REQUEST = 1u << 2,   /**< runs only when named (-b NAME), listed always */
    /** init() may be called again, on one host per group, for split cells (host->world_ranks);
     *  the contexts live side by side and are finalized before the whole job's.  --repeats
     *  uses it too: one more context per repeat, on a group of every rank, finalized after it */
    COLLPROF_BACKEND_GROUPS = 1u << 3,
    /** buffers from mem_alloc() on one context may be used by the plugin's other contexts in
     *  the same process (plain host memory, nothing registered with a context): collprof
     *  --repeats then keeps a cell's buffers across the fresh contexts of its repeats, and
     *  collprof --alloc mmap|hugepages may pass host buffers it mapped itself */
    COLLPROF_BACKEND_SHARED_BUFFERS = 1u << 4,
    /** with COLLPROF_BACKEND_GROUPS: init() on a group host is collective over the group's
     *  members alone (through its oob_* functions only, nothing of the whole job), and a peer
     *  that stops answering fails init() or an operation within the host's "timeout" option
     *  (seconds, read at init).  collprof --screen then starts a context per pair of nodes,
     *  and goes on past a node that stopped */
    COLLPROF_BACKEND_LOCAL_GROUPS = 1u << 5
};

typedef struct collprof_backend {
    size_t size;          /**< sizeof(collprof_backend_t) */
    uint32_t abi_version; /**< COLLPROF_PLUGIN_ABI_VERSION */
    const char *name;     /**< must match the file name collprof_<name>.so */
    const char *version;  /**< plugin version */
    const char *description;
    uint32_t flags;

    /**
     * LOCAL.  Capabilities.  Called with ctx NULL before init() (for --list
     * and the plan) and must then not start communication; it may set the
     * library's environment variables and start its tool interface (the MPI
     * plugin sets OMPI_MCA_coll_tuned_use_dynamic_rules and calls
     * MPI_T_init_thread).  Called again with the context after a successful
     * init(): the answer may then depend on what init() found (GPUs, the
     * provider in use, its link rate).
     */
    int (*query)(void *ctx, collprof_caps_t *caps);

    /** COLLECTIVE.  Set up the library; *ctx is set only on success. */
    int (*init)(const collprof_host_t *host, void **ctx);
    /** COLLECTIVE. */
    int (*finalize)(void *ctx);

    /**
     * COLLECTIVE.  Make variant current for op (NULL or "default": the library's own
     * choice).  Called collectively before the cells that use it.
     */
    int (*select_variant)(void *ctx, collprof_op_t op, const char *variant);

    /** COLLECTIVE (every rank allocates the same number of bytes). */
    int (*mem_alloc)(void *ctx, int memtype, size_t bytes, void **ptr);
    /** COLLECTIVE. */
    int (*mem_free)(void *ctx, int memtype, void *ptr);
    /** LOCAL.  Copy between host and the backend's memory (device memtypes). */
    int (*mem_copy)(void *ctx, int memtype, void *dst, const void *src, size_t bytes,
                    int to_device);

    /** COLLECTIVE.  Perform one operation; returns when it is complete on this rank.  The
     *  buffers may lie anywhere inside a mem_alloc() allocation (--rotate-buffers). */
    int (*run)(void *ctx, const collprof_args_t *args);

    /**
     * COLLECTIVE.  Optional (COLLPROF_BACKEND_DEVICE_TIMER): run iters operations back to
     * back, timing each on the device, and write times_us[iters].
     */
    int (*run_batch)(void *ctx, const collprof_args_t *args, int iters, double *times_us);

    /**
     * LOCAL.  Message for the last error on this context (or before init: NULL
     * ctx).  Meaningful only after a call failed; success does not clear it.
     */
    const char *(*last_error)(void *ctx);

    /* ---- ABI 2 ---- */
    /** The options the backend takes (-B NAME=VALUE); NULL when none. */
    const collprof_option_t *options;
    size_t noptions;
    /**
     * COLLPROF_BIT(op) of the ops whose variants the backend wants compared
     * side by side in a study table of the summary and `collprof-report
     * study` (the ofi plugin: alltoall, its RMA-write schedules); 0: none.
     */
    uint32_t study_ops;
    /**
     * LOCAL, after init().  What this rank's cells on memtype are measured
     * with: run_batch's timer, the memory, the device, the transport.
     * collprof_no_describe when the backend has nothing to add: the core
     * then records its own host timer and allocation.
     */
    int (*describe)(void *ctx, int memtype, collprof_provenance_t *out);

    /* ---- ABI 2.2: optional slots (NULL or beyond size: none; no ABI bump) ---- */
    /**
     * LOCAL, after init(), never in a timed region.  The rate at which the
     * device copies bytes from one buffer of memtype to another of the same
     * memory (device to device), timed on the device, in GB/s (1e9 B/s,
     * bytes copied / time): the limit that the summary sets beside the busBW
     * of cells on memtype.  The plugin allocates and frees its own buffers.
     * COLLPROF_ERR_NOT_SUPPORTED for memory it has no device copy for (host).
     */
    int (*copy_rate)(void *ctx, int memtype, size_t bytes, double *gbs);

    /* ---- ABI 2.3: optional, both or neither (collprof --replay, docs/replay.md) ---- */
    /**
     * Post one operation and return without waiting for it; *req names it
     * for wait().  Only the ops whose bit caps->post_ops sets.  A collective
     * op is COLLECTIVE as run() is (every rank posts the context's
     * collectives in the same order); a point-to-point op is LOCAL: a send is
     * op COLLPROF_OP_SENDRECV with peer_recv -1 (count elements of sendbuf to
     * context rank peer_send), a recv the same with peer_send -1 (count
     * elements into recvbuf from peer_recv); the sends from one rank to
     * another match that rank's recvs from it in the order posted.  Several
     * ops may be in flight at once, each with its own buffers; the plugin
     * must not block in post() on a peer that has not posted yet.
     */
    int (*post)(void *ctx, const collprof_args_t *args, void **req);
    /**
     * Wait until the op req (from post()) is complete on this rank and free
     * req.  While it waits, every op in flight on the context progresses (a
     * rank waiting on one op never stalls a peer that waits on another).
     */
    int (*wait)(void *ctx, void *req);

    /* ---- optional, with post and wait (collprof --replay's coalesced calls) ---- */
    /**
     * LOCAL.  begin 1: the posts that follow, up to group(ctx, 0), are one
     * coalesced call of the trace (the ops of one ncclGroupStart/ncclGroupEnd,
     * PyTorch's coalescing manager): a library with group calls may launch
     * them as one.  begin 0: the call is complete (everything posted since
     * begin 1 is under way; the ops are then waited as usual).  Never nested;
     * a collective call inside is posted in the same order on every member,
     * as any collective post.  NULL: the core posts the ops one by one.
     */
    int (*group)(void *ctx, int begin);

    /* ---- optional (collprof --replay's process groups) ---- */
    /**
     * COLLECTIVE over ctx (every rank of its context, in the same order).  A
     * context for a group of ctx's ranks made from ctx (NCCL: ncclCommSplit
     * of its communicator) instead of a fresh init() on the group's members:
     * host is the group's host table as init() takes it (the group's rank,
     * nranks, world_ranks and oob functions) on a member, NULL on a rank
     * outside the group, which takes part and gets *out NULL.  *out is
     * finalized with finalize().  NULL: the core calls init() on the members
     * alone (COLLPROF_BACKEND_GROUPS).
     */
    int (*split)(void *ctx, const collprof_host_t *host, void **out);

    /* ---- optional (collprof --replay --gaps compute on the device) ---- */
    /**
     * LOCAL, between ops.  Keep ctx's device busy for us microseconds with
     * work that contends with the collectives for its memory bandwidth and
     * its cores (nccl: a kernel that reads and writes a buffer larger than
     * the device's cache on every multiprocessor), on a stream of its own
     * beside the collectives' (an op posted before it progresses meanwhile),
     * and return when the work is done, near us from the call (what starting
     * it and seeing it end cost is the plugin's to take off).  us 0: set the
     * work up (load, calibrate) and run nothing: the core calls that once per
     * context before the replays.  *how on success: a few words on what the
     * work is ("busy kernel"), a string of the plugin's that outlives ctx.
     * COLLPROF_ERR_NOT_SUPPORTED: none here; the core then fills the gaps on
     * the host, as without the slot.  Any other error: last_error(ctx) says
     * why, and the core fills the rest of the replay's gaps on the host.
     */
    int (*compute)(void *ctx, double us, const char **how);
} collprof_backend_t;

/** sizeof(collprof_backend_t) of ABI 2 before any optional slot: the least the core accepts. */
#define COLLPROF_BACKEND_SIZE_V2 offsetof(collprof_backend_t, copy_rate)

/** Does the plugin's entry struct have the optional slot `field`, set? */
#define COLLPROF_BACKEND_HAS(be, field)                                                            \
    ((be)->size >= offsetof(collprof_backend_t, field) + sizeof((be)->field) && (be)->field != NULL)

/*
 * Shared "not supported" stubs for unimplemented slots.  They are static
 * inline so a plugin needs no core symbol.
 */
static inline int collprof_no_select_variant(void *ctx, collprof_op_t op, const char *variant)
{
    (void)ctx;
    (void)op;
    return (variant == NULL || variant[0] == '\0' || !__builtin_strcmp(variant, "default"))
               ? COLLPROF_OK
               : COLLPROF_ERR_NOT_SUPPORTED;
}
static inline int collprof_no_mem_copy(void *ctx, int memtype, void *dst, const void *src,
                                       size_t bytes, int to_device)
{
    (void)ctx, (void)memtype, (void)dst, (void)src, (void)bytes, (void)to_device;
    return COLLPROF_ERR_NOT_SUPPORTED;
}
static inline int collprof_no_run_batch(void *ctx, const collprof_args_t *args, int iters,
                                        double *times_us)
{
    (void)ctx, (void)args, (void)iters, (void)times_us;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

/* optional (NULL does as well in C; C++ must name every field) */
static inline int collprof_no_copy_rate(void *ctx, int memtype, size_t bytes, double *gbs)
{
    (void)ctx, (void)memtype, (void)bytes, (void)gbs;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

static inline int collprof_no_describe(void *ctx, int memtype, collprof_provenance_t *out)
{
    (void)ctx, (void)memtype, (void)out;
    return COLLPROF_ERR_NOT_SUPPORTED;
}

#ifdef __cplusplus
}
#endif
#endif /* COLLPROF_PLUGIN_H */
