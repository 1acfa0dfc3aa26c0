/*
 * Provenance: what the cells of one backend on one memory kind are
 * measured with on every rank (the clock of the samples, how the buffers
 * were allocated, the device, the transport).  The backend's describe()
 * answers what only it knows; the core adds what it decides itself (which
 * clock times an iteration).  Gathered once per backend and memory kind,
 * after init and before any cell, over the out-of-band channel: nothing
 * of it is in a timed region.  The result file records it per cell
 * (/results timer, allocation, device; /cells/<cell>/provenance where the
 * ranks differ) and per rank (/ranks device, transport).
 */
#ifndef COLLPROF_CORE_PROV_H
#define COLLPROF_CORE_PROV_H

#include <collprof/schema.h>

#include "plan/plan.h"
#include "runner/agree.h"
#include "plugin/loader.h"

/** The clock the core times an iteration with (cp_now_us). */
#define CP_PROV_HOST_TIMER "CLOCK_MONOTONIC"
/** A /results value where the ranks differ. */
#define CP_PROV_PER_RANK "per rank"

typedef struct cp_prov {
    int nranks;
    collprof_provenance_row_t *ranks; /**< [nranks] every rank's facts on rank 0; this rank's
                                            alone on the others */
    int differ;                       /**< the ranks' timer, allocation or device differ */
    char timer[64], allocation[64], device[64]; /**< common to the ranks, or CP_PROV_PER_RANK */
} cp_prov_t;

/**
 * Collective over oob: the provenance of every backend with a context on
 * every memory kind the plan runs it on, into p->prov[memtype].  Every
 * rank has the same plan and the same initialised backends, so every rank
 * makes the same calls, even where a rank finds no memory for them.  0, or
 * -1 when the out-of-band exchange failed or a rank had no memory for it
 * (every rank then has -1 for that backend and memory kind, and the cells
 * record no provenance).
 */
int cp_prov_gather(cp_plugin_t *plugins, int nplugins, const cp_plan_t *plan, const cp_oob_t *oob,
                   int rank, int nranks);
void cp_prov_free(cp_plugin_t *plugins, int nplugins);

/** The /results provenance columns of a cell that reached the runner. */
void cp_prov_row(const cp_prov_t *pv, collprof_result_row_t *row);

/** Rank r's /ranks device and transport, from every backend's provenance. */
void cp_prov_rank(const cp_plugin_t *plugins, int nplugins, int r, collprof_rank_row_t *row);

#endif /* COLLPROF_CORE_PROV_H */
