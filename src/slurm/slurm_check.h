/* Wrong ways of starting collprof under Slurm, found before any bootstrap. */
#ifndef COLLPROF_SLURM_CHECK_H
#define COLLPROF_SLURM_CHECK_H

#include <stddef.h>

/**
 * Return -1 with a one-line message in err (no "collprof: error: " prefix)
 * when this process is one task of a multi-task srun step that has no PMIx
 * server (srun --mpi=none, --mpi=pmi2, or MpiDefault=none): every task would
 * otherwise run as a separate single-rank world.  Return 0 otherwise,
 * including outside Slurm, in a batch script, and in one-task steps.  Reads
 * the environment only; never blocks.  First, SLURM_JOB_ID, SLURM_STEP_ID and
 * SLURM_ARRAY_TASK_ID, which go into the output files' names, must be Slurm
 * ids (1 to 32 letters, digits, '_' or '-'; no '/', no control characters):
 * -1 naming the variable otherwise.
 */
int cp_slurm_check_launch(char *err, size_t len);

#endif
