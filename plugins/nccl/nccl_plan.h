/*
 * collprof NCCL backend: the parts that need no GPU (and no NCCL or CUDA
 * library at run time), so that tests/unit/test_nccl_plan.t can check them
 * on any machine:
 *
 *  - the variant table (NCCL_ALGO x NCCL_PROTO per operation, the +reg and
 *    +graph modifiers, grouped send/recv "p2p", NCCLX CTran algorithms) and
 *    the environment each variant's communicator is created under;
 *  - setting and restoring that environment around communicator creation;
 *  - NCCL version codes and NCCLX detection;
 *  - ncclResult_t / cudaError_t -> collprof_status_t, dtype and redop maps;
 *  - the grouped send/recv schedule of alltoall, alltoallv, allgatherv,
 *    gather, scatter, gatherv, scatterv and sendrecv (offsets per the
 *    buffer table in <collprof/plugin.h>), in nccl_p2p.c; the rest is in
 *    nccl_plan.c.
 *
 * Only the enums of nccl.h are used here (no NCCL function is called).
 */
#ifndef CP_NCCL_PLAN_H
#define CP_NCCL_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include <collprof/plugin.h>

#define CP_NCCL_NAME_LEN 48
#define CP_NCCL_DESC_LEN 160
#define CP_NCCL_KEY_LEN  160
#define CP_NCCL_MAX_ENV  6
#define CP_NCCL_MAX_VARS 128

/* build-time facts about the linked NCCL that change the plan */
enum {
    CP_NCCL_HAVE_ALLTOALL = 1u << 0, /* ncclAlltoAll */
    CP_NCCL_HAVE_GATHER = 1u << 1,   /* ncclGather */
    CP_NCCL_HAVE_SCATTER = 1u << 2,  /* ncclScatter */
    CP_NCCL_HAVE_REGISTER = 1u << 3, /* ncclCommRegister */
    CP_NCCL_IS_NCCLX = 1u << 4       /* NCCLX (CTran) detected at run time */
};

/** One variant: what the user names, and how to run it. */
typedef struct cp_nccl_variant {
    char name[CP_NCCL_NAME_LEN];
    char desc[CP_NCCL_DESC_LEN];
    uint32_t ops;
    const char *algo;       /* NCCL_ALGO value ("Ring"...), NULL: the library's choice */
    const char *proto;      /* NCCL_PROTO value ("LL"...), NULL: the library's choice */
    const char *ctran_algo; /* NCCLX CTran algorithm ("ctring"...), else NULL */
    /* the environment its communicator is created under (static strings) */
    const char *env_name[CP_NCCL_MAX_ENV];
    const char *env_value[CP_NCCL_MAX_ENV];
    int nenv;
    int p2p;   /* alltoall/gather/scatter as grouped ncclSend/ncclRecv */
    int reg;   /* ncclCommRegister the buffers (outside the timed loop) */
    int graph; /* capture the operation in a CUDA graph once, replay it */
} cp_nccl_variant_t;

typedef struct cp_nccl_plan {
    cp_nccl_variant_t v[CP_NCCL_MAX_VARS]; /* v[0] is "default" (not published) */
    collprof_variant_t pub[CP_NCCL_MAX_VARS];
    size_t n;    /* entries in v, "default" included */
    size_t npub; /* entries in pub (n - 1) */
    unsigned features;
} cp_nccl_plan_t;

/** Fills plan for the given CP_NCCL_* features; 0 on success. */
int cp_nccl_plan_build(cp_nccl_plan_t *plan, unsigned features);

/** The variant called name (NULL, "" or "default": the default), or NULL. */
const cp_nccl_variant_t *cp_nccl_plan_find(const cp_nccl_plan_t *plan, const char *name);

/** Operations that go through grouped send/recv under variant v. */
int cp_nccl_uses_p2p(const cp_nccl_plan_t *plan, const cp_nccl_variant_t *v, collprof_op_t op);

/**
 * The communicator key of v: its environment as "N=V;N=V" ("" for the
 * library's defaults).  Variants with the same key share one communicator
 * (the +reg and +graph modifiers do not change it).
 */
void cp_nccl_variant_key(const cp_nccl_variant_t *v, char *key, size_t len);

/** Saved environment, restored by cp_nccl_env_pop. */
typedef struct cp_nccl_env_saved {
    int n;
    char name[CP_NCCL_MAX_ENV][40];
    const char *was[CP_NCCL_MAX_ENV]; /* swapped: the entry it replaced (a COLLPROF_ENV_SLOT) */
    const char *put[CP_NCCL_MAX_ENV]; /* swapped: the entry it put there; NULL: set by setenv */
    char *old[CP_NCCL_MAX_ENV];       /* setenv: strdup'ed previous value, NULL if unset */
} cp_nccl_env_saved_t;

/**
 * Set every variable of v, remembering what was there; 0 on success.  NCCL has no
 * configuration API for NCCL_ALGO/NCCL_PROTO (ncclConfig_t of 2.28 has neither), so the
 * variables are set in the environment while other threads run (the watchdog, PMIx's,
 * NCCL's and CUDA's own), any of which may call getenv: setenv of a new name reallocates
 * environ and unsetenv moves its entries under such a reader.  So the environment's shape
 * never changes here: a variable is swapped, with one atomic pointer store, into its own
 * entry or into one of the spare entries (COLLPROF_ENV_SLOT, plugin.h) that collprof puts
 * in the environment before any thread starts, and back.  The "NAME=value" strings are
 * never freed (a reader may still hold one).  Without a spare entry (a host that made
 * none), setenv/unsetenv as before.
 */
int cp_nccl_env_push(const cp_nccl_variant_t *v, cp_nccl_env_saved_t *saved);
/** Restores what cp_nccl_env_push changed (in reverse order). */
void cp_nccl_env_pop(cp_nccl_env_saved_t *saved);

/** NCCL_VERSION_CODE -> "2.28.9" (both encodings: < 2.9 and later). */
void cp_nccl_version_string(int code, char *buf, size_t len);

/**
 * Whether the NCCL in use is NCCLX (Meta's fork with CTran): has_symbol
 * answers whether the loaded library exports a symbol.  Plain NCCL has none
 * of the NCCLX-only entry points looked for.
 */
int cp_nccl_detect_ncclx(int (*has_symbol)(const char *sym, void *arg), void *arg);

/** ncclResult_t (as int) -> collprof_status_t */
int cp_nccl_status(int nccl_result);
/** cudaError_t (as int) -> collprof_status_t, for a call on a device that was found: never
 *  COLLPROF_ERR_NO_DEVICE (only cp_nccl_no_gpu decides that nothing is there). */
int cp_nccl_cuda_status(int cuda_error);

/**
 * Whether this rank has nothing to run on, from what cudaGetDeviceCount
 * answered (count_err, and count when it succeeded), the versions
 * cudaDriverGetVersion and cudaRuntimeGetVersion gave (driver 0: none) and,
 * when there is no driver, why libcuda.so.1 does not load (dlerror's text,
 * NULL when it loads).  1 with the reason in why, naming rank, when nothing
 * is there: no CUDA device (cudaErrorNoDevice or a count of 0), no driver
 * (cudaErrorStubLibrary, or no driver version), or a driver older than the
 * runtime (both versions said).  0 when there is a device, or a driver
 * recent enough that fails otherwise: that is an error, not an absence.
 */
int cp_nccl_no_gpu(int count_err, int count, int driver, int runtime, int rank,
                   const char *load_err, char *why, size_t len);

/** collprof dtype -> ncclDataType_t; -1 if NCCL has no exact equivalent. */
int cp_nccl_dtype(collprof_dtype_t dt);
size_t cp_nccl_dtype_size(collprof_dtype_t dt);
/** collprof redop -> ncclRedOp_t; -1 if none. */
int cp_nccl_redop(collprof_redop_t op);

/** Buffers a send/recv refers to. */
enum { CP_NCCL_BUF_SEND = 0, CP_NCCL_BUF_RECV = 1, CP_NCCL_BUF_STAGE = 2 };

typedef struct cp_nccl_xfer {
    int peer;
    int is_send;
    int buf;      /* CP_NCCL_BUF_* */
    size_t off;   /* elements */
    size_t count; /* elements */
} cp_nccl_xfer_t;

/**
 * The grouped send/recv schedule of one operation (alltoall, alltoallv,
 * allgatherv, gather(v), scatter(v), sendrecv) on rank of n: writes at most 2n entries into
 * out and the number of elements of args->recvbuf to copy into a staging
 * buffer first (in-place alltoall/alltoallv/sendrecv send from the staged
 * copy) into *stage_elems.  Returns the number of entries, or -1.
 */
int cp_nccl_p2p_plan(const collprof_args_t *args, int rank, int n, cp_nccl_xfer_t *out,
                     size_t *stage_elems);

#endif /* CP_NCCL_PLAN_H */
