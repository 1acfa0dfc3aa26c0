/*
 * Private header of the MPI backend: the process-wide state, the context
 * and what the files of the plugin call in each other.  Every file of the
 * plugin includes this header and no other's.
 *
 *   mpi_backend.c  entry struct, query, init/finalize (starting and stopping MPI, the
 *                  group communicator), memory, describe
 *   mpi_tuned.c    Open MPI's coll/tuned algorithms through MPI_T: discovery (the variant
 *                  table), whether they can be forced, select_variant() forcing one
 *   mpi_run.c      run(): every operation as one MPI call on the op's communicator
 *   mpi_util.c     the process-wide state (mpi_be), errors and logging
 *
 * Calls go down only, top to bottom: mpi_backend.c > mpi_tuned.c > mpi_run.c > mpi_util.c.
 */
#ifndef CP_MPI_INTERNAL_H
#define CP_MPI_INTERNAL_H

#include <stddef.h>

#include <mpi.h>

#include <collprof/plugin_util.h>

#define MPI_BE_ERR_LEN      512
#define MPI_BE_NAME_LEN     48
#define MPI_BE_DESC_LEN     384
#define MPI_BE_MAX_ALGS     24
#define MPI_BE_MAX_VARIANTS 64

/* ---- process-wide state (MPI itself is process-wide) ------------------ */

/* One algorithm of one op: its collprof name and its enum value. */
typedef struct mpi_be_alg {
    char name[MPI_BE_NAME_LEN];
    int value;
} mpi_be_alg_t;

/* The coll/tuned control variable that governs one collprof op. */
typedef struct mpi_be_opvar {
    const char *stem; /* "allreduce": the variable is coll_tuned_<stem>_algorithm */
    int found;        /* the variable exists in this library */
    int nalgs;
    mpi_be_alg_t algs[MPI_BE_MAX_ALGS];
} mpi_be_opvar_t;

typedef struct mpi_be_state {
    int tool_state; /* 0 never tried, 1 MPI_T initialised by us, -1 failed */
    int discovered; /* the variant table below is final */
    int mpi_owned;  /* we called MPI_Init_thread, so we call MPI_Finalize */
    mpi_be_opvar_t opvars[COLLPROF_OP_COUNT];
    collprof_variant_t variants[MPI_BE_MAX_VARIANTS];
    char vnames[MPI_BE_MAX_VARIANTS][MPI_BE_NAME_LEN];
    char vdescs[MPI_BE_MAX_VARIANTS][MPI_BE_DESC_LEN];
    size_t nvariants;
    char libversion[128];
    char err[MPI_BE_ERR_LEN]; /* last_error(NULL): query/init failures */
} mpi_be_state_t;

/* the one instance (mpi_util.c) */
extern mpi_be_state_t mpi_be;

/* ---- per-init context ------------------------------------------------- */

typedef struct mpi_be_ctx {
    const collprof_host_t *host;
    int rank;
    int nranks;
    int forcing_ok; /* coll_tuned_use_dynamic_rules is on and MPI_T works */
    char forcing_why[160];
    MPI_Comm base; /* MPI_COMM_WORLD, or the group's communicator (split cells) */
    MPI_Comm comm[COLLPROF_OP_COUNT]; /* base or our duplicate */
    /* alltoallv/allgatherv arguments converted to int, sized nranks at init so that
     * run() never allocates inside the timed region */
    int *a2av_scounts, *a2av_sdispls, *a2av_rcounts, *a2av_rdispls;
    char err[MPI_BE_ERR_LEN];
} mpi_be_ctx_t;

/* mpi_util.c */
__attribute__((format(printf, 2, 3))) void mpi_be_set_error(mpi_be_ctx_t *ctx, const char *fmt,
                                                            ...);
__attribute__((format(printf, 3, 4))) void mpi_be_log(const mpi_be_ctx_t *ctx, int level,
                                                      const char *fmt, ...);
int mpi_be_mpi_error(mpi_be_ctx_t *ctx, const char *call, int rc);

/* mpi_tuned.c */
void mpi_be_discover(void);
void mpi_be_check_forcing(mpi_be_ctx_t *ctx);
int mpi_be_select_variant(void *vctx, collprof_op_t op, const char *variant);
void mpi_be_cvar_str(const char *name, char *buf, size_t len);

/* mpi_run.c */
int mpi_be_run(void *vctx, const collprof_args_t *a);
/* post(): the ops posted besides the four with a non-blocking twin and point-to-point */
#define COLLPROF_MPI_POST_MORE                                                                     \
    (COLLPROF_BIT(COLLPROF_OP_BARRIER) | COLLPROF_BIT(COLLPROF_OP_REDUCE) |                        \
     COLLPROF_BIT(COLLPROF_OP_REDUCESCATTER) | COLLPROF_BIT(COLLPROF_OP_GATHER) |                  \
     COLLPROF_BIT(COLLPROF_OP_SCATTER))
/* post(): the variable ops (MPI_Ialltoallv, MPI_Iallgatherv, MPI_Igatherv, MPI_Iscatterv) */
#define COLLPROF_MPI_POST_VAR                                                                      \
    (COLLPROF_BIT(COLLPROF_OP_ALLTOALLV) | COLLPROF_BIT(COLLPROF_OP_ALLGATHERV) |                  \
     COLLPROF_BIT(COLLPROF_OP_GATHERV) | COLLPROF_BIT(COLLPROF_OP_SCATTERV))
int mpi_be_post_op(void *vctx, const collprof_args_t *a, void **req);
int mpi_be_wait(void *vctx, void *req);

#endif /* CP_MPI_INTERNAL_H */
