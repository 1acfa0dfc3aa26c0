/*
 * Agreement over the out-of-band channel: every rank passes its local status and every rank
 * gets the same answer (the first failing rank, its status and its reason), so that a
 * collective step is taken on every rank or on none.  Used by main, the runner, split groups
 * and the provenance gather.
 */
#ifndef COLLPROF_CORE_AGREE_H
#define COLLPROF_CORE_AGREE_H

#include <stddef.h>

/* The out-of-band channel the runner agrees and gathers over: the host
 * table's functions (collective, return collprof_status_t).  cp_oob_world in
 * the product: the job's control channel, whichever boot chose (the TCP
 * tree, PMIx, or one rank alone; src/chan/chan.h); tests bring their own
 * (tests/unit/oob_shm.h). */
typedef struct cp_oob {
    int (*allgather)(const void *in, void *out, size_t len);
    /** to rank 0 alone (out: nranks * len bytes there, untouched elsewhere) */
    int (*gather)(const void *in, void *out, size_t len);
    int (*bcast)(void *buf, size_t len, int root);
    int (*barrier)(void);
} cp_oob_t;

extern const cp_oob_t cp_oob_world;
/** Collectives of one rank by itself: a gather or an allgather copies, the rest do nothing
 *  (a runner that runs a cell alone, cp_runner_t.alone). */
extern const cp_oob_t cp_oob_alone;

/** Outcome of an agreement. */
typedef enum cp_agree_result {
    CP_AGREE_OK = 0,    /**< every rank passed COLLPROF_OK */
    CP_AGREE_FAILED,    /**< some rank failed: the first one is named */
    CP_AGREE_OOB_BROKEN /**< the out-of-band exchange itself failed */
} cp_agree_result_t;

typedef struct cp_agreement {
    cp_agree_result_t result;
    int rank;   /**< the first failing rank, -1 when none */
    int status; /**< its collprof_status_t */
    char msg[480];
} cp_agreement_t;

/**
 * Collective: agree on a local status across ranks over the out-of-band
 * channel.  *out is filled on every rank with the same answer.
 */
cp_agree_result_t cp_agree(int nranks, int status, const char *why, cp_agreement_t *out);
/** The same over another channel. */
cp_agree_result_t cp_agree_over(const cp_oob_t *oob, int nranks, int status, const char *why,
                                cp_agreement_t *out);

#endif /* COLLPROF_CORE_AGREE_H */
