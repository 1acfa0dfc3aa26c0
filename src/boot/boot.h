/*
 * Bootstrap: who am I, who are my peers, and an out-of-band channel
 * (allgather / broadcast / barrier) that never uses the backend under test
 * (src/chan, chan/oob.h: included here, for every user of boot.h).
 *
 * Three ways in:
 *   - a PMIx server is reachable (mpirun, srun --mpi=pmix, or our own
 *     embedded server for --np, src/launch): PMIx client;
 *   - nothing: one rank, OOB calls are local copies.
 *
 * src/boot's files, top to bottom: pmix_client (cp_boot_init: identity, then the channel and
 * the tables), tables (the per-rank tables); below them src/chan (chan.h).
 */
#ifndef COLLPROF_BOOT_BOOT_H
#define COLLPROF_BOOT_BOOT_H

#include "chan/oob.h"

#include <stdint.h>

/**
 * Connect to the PMIx server named by the environment, or become a single
 * rank when there is none (never hangs: no server in the environment means
 * no PMIx_Init call).  Gathers the per-rank tables.  Logs its own errors.
 */
int cp_boot_init(cp_boot_t *boot);

/** Release PMIx (PMIx_Finalize) and the tables. */
void cp_boot_finalize(cp_boot_t *boot);

/** The bytes every rank holds for the job's tables while it runs (cp_boot_t's node id, local
 *  rank and pid per rank, each node's name once) at ranks ranks on nodes nodes: 12 x ranks
 *  + 256 x nodes (tables.c). */
uint64_t cp_boot_tables_bytes(uint64_t ranks, uint64_t nodes);
/** What start-up holds for a while beyond those tables: the message that carries them to
 *  every rank (8 x ranks + the names) and, on rank 0 (rank0 1), every rank's record and the
 *  set that numbers the nodes by name.  Freed before the first cell. */
uint64_t cp_boot_startup_bytes(uint64_t ranks, uint64_t nodes, int rank0);

/** True when this process runs under a PMIx server (per the environment). */
int cp_boot_have_pmix_env(void);

#endif /* COLLPROF_BOOT_BOOT_H */
