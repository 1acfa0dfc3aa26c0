/*
 * The model of replay_path.c and replay_path_end.c (replay_path.h): its state, shared by the
 * two files.
 */
#ifndef COLLPROF_RUN_REPLAY_PATH_INT_H
#define COLLPROF_RUN_REPLAY_PATH_INT_H

#include "run/replay_path.h"

/* An op on a chain that can still become the path: the op it cost (for an instance, the
 * member that issued it last), its cost, the chain before it. */
typedef struct pnode {
    struct pnode *prev;
    int64_t idx; /* its index among its rank's rows */
    double cost;
    int32_t rank, refs;
} pnode_t;

/* A member of a group: its rank and its count of the group's collectives. */
typedef struct pmem {
    int32_t rank, pad;
    int64_t count;
} pmem_t;

/* A group: its members' counts, every instance's skew and straggler, its pending instance
 * (the k-th: instances complete in k order, each member being in every earlier one). */
typedef struct pgrp {
    pmem_t *mem; /* by rank */
    size_t nmem, capmem;
    int64_t k, kmax;
    double *skew;   /* [kmax] */
    int32_t *strag; /* [kmax] */
    size_t expect, arrived;
    double ready, cost, lo, hi;
    int last_rank, hi_rank; /* the member whose issue set ready; the one that issued last */
    int64_t last_idx;
    pnode_t *last_prev; /* the chain before last_rank's arrival */
} pgrp_t;

/* A rank's cursor: its records [base, base + len) in buf, the next to model at pos. */
typedef struct prk {
    cp_prec_t *buf;
    size_t len, pos, cap;
    uint64_t base, fetched, n;
    double avail; /* when the model frees it */
    pnode_t *last, *best;
    double best_fin;
    int64_t best_idx;
    int waiting, done;
} prk_t;

/* An op of the path, in (rank, idx) order once the path is known. */
typedef struct pentry {
    int32_t rank, pad;
    int64_t idx;
    double cost;
} pentry_t;

struct cp_path {
    int nr;
    size_t per;
    int drain; /* the model stalled: every remaining record wanted at once */
    prk_t *rk;
    pgrp_t *g;
    size_t ng;
    int *stack, top;
    pnode_t *best; /* the finished ranks' op that ends last */
    int best_rank;
    double best_fin;
    int64_t best_idx;
    pentry_t *path;
    size_t npath;
    int oom;
};

/* Drop a reference to x (freeing what no chain holds any more). */
void cp_pnode_drop(pnode_t *x);
/* Rank r is done: its last op's chain dropped, its best op weighed against the others'. */
void cp_path_finish(cp_path_t *p, int r);
/* The stalled model's remaining instances: their skews and stragglers.  0, or -1. */
int cp_path_drain(cp_path_t *p, cp_path_pull_fn pull, void *arg);
/* The path from p's best op back: p's path[], sorted by (rank, idx); its length, -1. */
double cp_path_walk(cp_path_t *p);
/* Path entries by (rank, idx). */
int cp_pentry_cmp(const void *a, const void *b);
/* Group g's member rank's count, 0 when not a member. */
int64_t cp_path_count_of(const pgrp_t *g, int rank);

#endif /* COLLPROF_RUN_REPLAY_PATH_INT_H */
