/*
 * collprof vocabulary: the one definition of operations, element types,
 * reduction operators, memory kinds and cell statuses.
 *
 * Each table is an X-macro; the enums of the plugin ABI, the names stored
 * in result files and on the command line, and each operation's facts are
 * generated from it.  Ids are stable (they are part of the plugin ABI and
 * of the result files): append rows, never renumber.  Adding an operation
 * is one row here plus its file under src/colls/ (docs/architecture.md).
 *
 * Header-only: plugins use the inline helpers at the end to name and size
 * things, so no plugin spells an operation or type name itself.
 */
#ifndef COLLPROF_VOCAB_H
#define COLLPROF_VOCAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- operation facts ------------------------------------------------ */

/** Flags of an operation (the F column of COLLPROF_OP_TABLE). */
enum {
    COLLPROF_OPF_REDUCES = 1u << 0,  /**< takes a reduction operator */
    COLLPROF_OPF_ROOTED = 1u << 1,   /**< has a root rank */
    COLLPROF_OPF_SPLIT = 1u << 2,    /**< count is split in n blocks (rounded down to a multiple) */
    COLLPROF_OPF_NODATA = 1u << 3,   /**< moves no data: no sizes, buffers, check or in-place */
    COLLPROF_OPF_VARIABLE = 1u << 4, /**< per-peer or per-rank counts (--imbalance) */
    COLLPROF_OPF_DEFAULT = 1u << 5,  /**< in the default matrix */
    /** posted, overlapped with a host computation, then waited for (OSU's osu_i* method):
     *  the buffers, data and check of its blocking twin (collprof_op_blocking) */
    COLLPROF_OPF_NONBLOCKING = 1u << 6
};

/** busBW = algBW x factor (nccl-tests conventions; docs/metrics.md). */
typedef enum collprof_busbw {
    COLLPROF_BUSBW_NONE = 0, /**< 0: moves no data */
    COLLPROF_BUSBW_ONE,      /**< 1: bound by one link (broadcast, reduce, sendrecv) */
    COLLPROF_BUSBW_SPLIT,    /**< (n-1)/n: each rank exchanges n-1 of n blocks */
    COLLPROF_BUSBW_RING2     /**< 2(n-1)/n: a ring reduce-scatter then allgather */
} collprof_busbw_t;

/** Buffer shapes, in elements of the cell's count (see plugin.h's table). */
typedef enum collprof_shape {
    COLLPROF_SHAPE_NONE = 0, /**< no buffer */
    COLLPROF_SHAPE_FULL,     /**< count on every rank */
    COLLPROF_SHAPE_BLOCK,    /**< count/n on every rank */
    COLLPROF_SHAPE_ROOT,     /**< count on the root only */
    COLLPROF_SHAPE_VAR       /**< per-peer (per-rank) counts and displacements */
} collprof_shape_t;

/*
 * X(ID, id, name, label, flags, busbw, send shape, recv shape, alias)
 * name: the command-line and file name; label: the display name; alias: another accepted
 * spelling ("" = none).
 */
/* clang-format off */
#define COLLPROF_OP_TABLE(X)                                                                        \
    X(ALLREDUCE,     0,  "allreduce",     "AllReduce",     COLLPROF_OPF_REDUCES | COLLPROF_OPF_DEFAULT, \
      RING2, FULL,  FULL, "")                                                                       \
    X(ALLGATHER,     1,  "allgather",     "AllGather",     COLLPROF_OPF_SPLIT | COLLPROF_OPF_DEFAULT, \
      SPLIT, BLOCK, FULL, "")                                                                       \
    X(REDUCESCATTER, 2,  "reducescatter", "ReduceScatter",                                          \
      COLLPROF_OPF_REDUCES | COLLPROF_OPF_SPLIT | COLLPROF_OPF_DEFAULT, SPLIT, FULL, BLOCK, "")     \
    X(ALLTOALL,      3,  "alltoall",      "AllToAll",      COLLPROF_OPF_SPLIT | COLLPROF_OPF_DEFAULT, \
      SPLIT, FULL,  FULL, "")                                                                       \
    X(ALLTOALLV,     4,  "alltoallv",     "AllToAllv",     COLLPROF_OPF_VARIABLE, SPLIT, VAR, VAR, "") \
    X(BROADCAST,     5,  "broadcast",     "Broadcast",     COLLPROF_OPF_ROOTED, ONE, NONE, FULL, "bcast") \
    X(REDUCE,        6,  "reduce",        "Reduce",        COLLPROF_OPF_REDUCES | COLLPROF_OPF_ROOTED, \
      ONE,   FULL,  ROOT, "")                                                                       \
    X(GATHER,        7,  "gather",        "Gather",        COLLPROF_OPF_ROOTED | COLLPROF_OPF_SPLIT, \
      SPLIT, BLOCK, ROOT, "")                                                                       \
    X(SCATTER,       8,  "scatter",       "Scatter",       COLLPROF_OPF_ROOTED | COLLPROF_OPF_SPLIT, \
      SPLIT, ROOT,  BLOCK, "")                                                                      \
    X(BARRIER,       9,  "barrier",       "Barrier",       COLLPROF_OPF_NODATA, NONE, NONE, NONE, "") \
    X(SENDRECV,      10, "sendrecv",      "SendRecv",      0, ONE, FULL, FULL, "")                  \
    X(ALLGATHERV,    11, "allgatherv",    "AllGatherv",    COLLPROF_OPF_VARIABLE, SPLIT, VAR, VAR, "") \
    X(IALLREDUCE,    12, "iallreduce",    "IAllReduce",    COLLPROF_OPF_REDUCES | COLLPROF_OPF_NONBLOCKING, \
      RING2, FULL,  FULL, "")                                                                       \
    X(IALLGATHER,    13, "iallgather",    "IAllGather",    COLLPROF_OPF_SPLIT | COLLPROF_OPF_NONBLOCKING, \
      SPLIT, BLOCK, FULL, "")                                                                       \
    X(IALLTOALL,     14, "ialltoall",     "IAllToAll",     COLLPROF_OPF_SPLIT | COLLPROF_OPF_NONBLOCKING, \
      SPLIT, FULL,  FULL, "")                                                                       \
    X(IBROADCAST,    15, "ibroadcast",    "IBroadcast",    COLLPROF_OPF_ROOTED | COLLPROF_OPF_NONBLOCKING, \
      ONE,   NONE,  FULL, "ibcast")                                                                 \
    X(GATHERV,       16, "gatherv",       "Gatherv",       COLLPROF_OPF_ROOTED | COLLPROF_OPF_VARIABLE, \
      SPLIT, VAR,   VAR, "")                                                                        \
    X(SCATTERV,      17, "scatterv",      "Scatterv",      COLLPROF_OPF_ROOTED | COLLPROF_OPF_VARIABLE, \
      SPLIT, VAR,   VAR, "")

/* X(ID, id, name, size in bytes, is_float, exact_max, alias, alias) */
#define COLLPROF_DTYPE_TABLE(X)                                                                      \
    X(INT8,     0, "int8",     1, 0, 127,                  "char",   "")                             \
    X(UINT8,    1, "uint8",    1, 0, 255,                  "",       "")                             \
    X(INT32,    2, "int32",    4, 0, INT64_C(1) << 24,     "int",    "")                             \
    X(UINT32,   3, "uint32",   4, 0, INT64_C(1) << 24,     "",       "")                             \
    X(INT64,    4, "int64",    8, 0, INT64_C(1) << 24,     "",       "")                             \
    X(UINT64,   5, "uint64",   8, 0, INT64_C(1) << 24,     "",       "")                             \
    X(FLOAT16,  6, "float16",  2, 1, 2048,                 "half",   "fp16")                         \
    X(BFLOAT16, 7, "bfloat16", 2, 1, 256,                  "bf16",   "")                             \
    X(FLOAT32,  8, "float32",  4, 1, INT64_C(1) << 24,     "float",  "fp32")                         \
    X(FLOAT64,  9, "float64",  8, 1, INT64_C(1) << 24,     "double", "fp64")

/* X(ID, id, name) */
#define COLLPROF_REDOP_TABLE(X)                                                                      \
    X(SUM,  0, "sum")                                                                                \
    X(PROD, 1, "prod")                                                                               \
    X(MIN,  2, "min")                                                                                \
    X(MAX,  3, "max")

/* X(ID, id, name, description) */
#define COLLPROF_MEM_TABLE(X)                                                                        \
    X(HOST,   0, "host",   "pageable host memory")                                                   \
    X(PINNED, 1, "pinned", "page-locked / registered host memory")                                   \
    X(DEVICE, 2, "device", "accelerator memory")

/* X(ID, id, name, meaning): the status column of a result row */
#define COLLPROF_CELL_STATUS_TABLE(X)                                                                \
    X(PENDING,     0, "pending",     "not run yet")                                                  \
    X(OK,          1, "ok",          "ran, every element right")                                     \
    X(WRONG,       2, "wrong",       "ran, #wrong > 0")                                              \
    X(UNSUPPORTED, 3, "unsupported", "the backend does not offer this combination")                  \
    X(ERROR,       4, "error",       "the backend failed")                                           \
    X(SKIPPED,     5, "skipped",     "not run (backend failed to initialise, size too small)")       \
    X(TIMEOUT,     6, "timeout",     "an operation did not complete within the watchdog timeout")    \
    X(INCOMPLETE,  7, "incomplete",  "the run stopped while it ran (a signal, a full disk)")      \
    X(NOSETUP,     8, "nosetup",     "a screen pair's channel or backend context could not be set up") \
    X(UNREACHABLE, 9, "unreachable", "a screen pair's partner stopped answering")
/* clang-format on */

/* ---- the enums ---------------------------------------------------------- */

#define COLLPROF_ENUM_OP(ID, id, ...)     COLLPROF_OP_##ID = id,
#define COLLPROF_ENUM_DTYPE(ID, id, ...)  COLLPROF_DTYPE_##ID = id,
#define COLLPROF_ENUM_REDOP(ID, id, ...)  COLLPROF_REDOP_##ID = id,
#define COLLPROF_ENUM_MEM(ID, id, ...)    COLLPROF_MEM_##ID = id,
#define COLLPROF_ENUM_STATUS(ID, id, ...) COLLPROF_CELL_##ID = id,

/** Operations.  Values are stable: they are stored in result files. */
typedef enum collprof_op { COLLPROF_OP_TABLE(COLLPROF_ENUM_OP) COLLPROF_OP_COUNT } collprof_op_t;
/** Element types.  Values are stable. */
typedef enum collprof_dtype {
    COLLPROF_DTYPE_TABLE(COLLPROF_ENUM_DTYPE) COLLPROF_DTYPE_COUNT
} collprof_dtype_t;
/** Reduction operators.  Values are stable. */
typedef enum collprof_redop {
    COLLPROF_REDOP_TABLE(COLLPROF_ENUM_REDOP) COLLPROF_REDOP_COUNT
} collprof_redop_t;
/** Memory kinds a backend can operate on. */
typedef enum collprof_memtype {
    COLLPROF_MEM_TABLE(COLLPROF_ENUM_MEM) COLLPROF_MEM_COUNT
} collprof_memtype_t;
/** Outcome of one cell. */
typedef enum collprof_cell_status {
    COLLPROF_CELL_STATUS_TABLE(COLLPROF_ENUM_STATUS) COLLPROF_CELL_STATUS_COUNT
} collprof_cell_status_t;

/* ---- descriptors -------------------------------------------------------- */

typedef struct {
    const char *name;  /**< "allreduce" */
    const char *label; /**< "AllReduce" */
    unsigned flags;    /**< COLLPROF_OPF_* */
    collprof_busbw_t busbw;
    collprof_shape_t send, recv;
    const char *alias; /**< another accepted spelling ("bcast"; "" = none) */
} collprof_op_info_t;

typedef struct {
    const char *name;
    size_t size;
    int is_float;
    int64_t exact_max;    /**< collprof only uses values below it */
    const char *alias[2]; /**< other accepted spellings ("" = none) */
} collprof_dtype_info_t;

/* Rows are positional (C++ plugins include this header): ids run 0, 1, 2...
 * in table order, which tests/unit/test_vocab.c checks. */
#define COLLPROF_OP_INFO(ID, id, name, label, flags, bw, s, r, alias)                              \
    {name, label, flags, COLLPROF_BUSBW_##bw, COLLPROF_SHAPE_##s, COLLPROF_SHAPE_##r, alias},
#define COLLPROF_DTYPE_INFO(ID, id, name, size, fl, max, a1, a2) {name, size, fl, max, {a1, a2}},
#define COLLPROF_NAME_OF(ID, id, name, ...)                      name,

/** Facts of op, or NULL when op is out of range. */
static inline const collprof_op_info_t *collprof_op_info(int op)
{
    static const collprof_op_info_t t[COLLPROF_OP_COUNT] = {COLLPROF_OP_TABLE(COLLPROF_OP_INFO)};
    return op >= 0 && op < COLLPROF_OP_COUNT ? &t[op] : NULL;
}

static inline const collprof_dtype_info_t *collprof_dtype_info(int dtype)
{
    static const collprof_dtype_info_t t[COLLPROF_DTYPE_COUNT] = {
        COLLPROF_DTYPE_TABLE(COLLPROF_DTYPE_INFO)};
    return dtype >= 0 && dtype < COLLPROF_DTYPE_COUNT ? &t[dtype] : NULL;
}

/** Name of op ("?" when out of range). */
static inline const char *collprof_op_name(int op)
{
    const collprof_op_info_t *i = collprof_op_info(op);
    return i != NULL ? i->name : "?";
}

static inline const char *collprof_dtype_name(int dtype)
{
    const collprof_dtype_info_t *i = collprof_dtype_info(dtype);
    return i != NULL ? i->name : "?";
}

/** Bytes per element (0 when out of range). */
static inline size_t collprof_dtype_size(int dtype)
{
    const collprof_dtype_info_t *i = collprof_dtype_info(dtype);
    return i != NULL ? i->size : 0;
}

static inline const char *collprof_redop_name(int redop)
{
    static const char *const t[COLLPROF_REDOP_COUNT] = {COLLPROF_REDOP_TABLE(COLLPROF_NAME_OF)};
    return redop >= 0 && redop < COLLPROF_REDOP_COUNT ? t[redop] : "?";
}

static inline const char *collprof_memtype_name(int mem)
{
    static const char *const t[COLLPROF_MEM_COUNT] = {COLLPROF_MEM_TABLE(COLLPROF_NAME_OF)};
    return mem >= 0 && mem < COLLPROF_MEM_COUNT ? t[mem] : "?";
}

static inline const char *collprof_cell_status_name(int s)
{
    static const char *const t[COLLPROF_CELL_STATUS_COUNT] = {
        COLLPROF_CELL_STATUS_TABLE(COLLPROF_NAME_OF)};
    return s >= 0 && s < COLLPROF_CELL_STATUS_COUNT ? t[s] : "?";
}

/** The id whose name (exactly) is name, or -1.  For file and option values. */
static inline int collprof_op_from_name(const char *name)
{
    for (int i = 0; i < COLLPROF_OP_COUNT; i++) {
        if (!strcmp(name, collprof_op_info(i)->name)) {
            return i;
        }
    }
    return -1;
}

static inline int collprof_cell_status_from_name(const char *name)
{
    for (int i = 0; i < COLLPROF_CELL_STATUS_COUNT; i++) {
        if (!strcmp(name, collprof_cell_status_name(i))) {
            return i;
        }
    }
    return -1;
}

/**
 * The blocking operation a non-blocking one (COLLPROF_OPF_NONBLOCKING) posts
 * and waits for (iallreduce: allreduce); op itself for every other one.
 */
static inline int collprof_op_blocking(int op)
{
    switch (op) {
    case COLLPROF_OP_IALLREDUCE: return COLLPROF_OP_ALLREDUCE;
    case COLLPROF_OP_IALLGATHER: return COLLPROF_OP_ALLGATHER;
    case COLLPROF_OP_IALLTOALL: return COLLPROF_OP_ALLTOALL;
    case COLLPROF_OP_IBROADCAST: return COLLPROF_OP_BROADCAST;
    default: return op;
    }
}

/** busBW factor of op on n ranks (nccl-tests conventions). */
static inline double collprof_busbw_factor(int op, int n)
{
    const collprof_op_info_t *i = collprof_op_info(op);
    double nd = (double)n;
    switch (i != NULL ? i->busbw : COLLPROF_BUSBW_NONE) {
    case COLLPROF_BUSBW_RING2: return 2.0 * (nd - 1.0) / nd;
    case COLLPROF_BUSBW_SPLIT: return (nd - 1.0) / nd;
    case COLLPROF_BUSBW_ONE: return 1.0;
    case COLLPROF_BUSBW_NONE:
    default: return 0.0;
    }
}

/** Elements of a buffer of shape s for a cell of count elements on n ranks. */
static inline uint64_t collprof_shape_elems(collprof_shape_t s, uint64_t count, int n, int is_root)
{
    switch (s) {
    case COLLPROF_SHAPE_FULL: return count;
    case COLLPROF_SHAPE_BLOCK: return n > 0 ? count / (uint64_t)n : 0;
    case COLLPROF_SHAPE_ROOT: return is_root ? count : 0;
    case COLLPROF_SHAPE_NONE:
    case COLLPROF_SHAPE_VAR:
    default: return 0;
    }
}

#ifdef __cplusplus
}
#endif
#endif /* COLLPROF_VOCAB_H */
