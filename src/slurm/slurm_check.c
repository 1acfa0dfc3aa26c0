#include "config.h"

#include "slurm/slurm_check.h"
#include "boot/boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A non-negative decimal environment value, or -1. */
static long env_count(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || v[0] < '0' || v[0] > '9') {
        return -1;
    }
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' ? n : -1;
}

int cp_slurm_check_launch(char *err, size_t len)
{
    if (getenv("SLURM_JOB_ID") == NULL || getenv("SLURM_STEP_ID") == NULL ||
        getenv("COLLPROF_SELF_LAUNCHED") != NULL || cp_boot_have_pmix_env()) {
        return 0;
    }
    /* the step's task count; SLURM_NTASKS is the job's when the step does not say */
    long ntasks = env_count("SLURM_STEP_NUM_TASKS");
    if (ntasks < 0) {
        ntasks = env_count("SLURM_NTASKS");
    }
    if (ntasks <= 1) {
        return 0;
    }
    const char *how = getenv("PMI_FD") != NULL || getenv("PMI_RANK") != NULL
                          ? "srun --mpi=pmi2 (PMI-2, not PMIx)"
                          : "srun without PMIx (--mpi=none, or MpiDefault is not pmix)";
    snprintf(err, len,
             "this Slurm step has %ld tasks but no PMIx server: it was started by %s, so every "
             "task would run alone as a 1-rank world; start collprof with srun --mpi=pmix "
             "(srun --mpi=list shows the plugins your Slurm has)",
             ntasks, how);
    return -1;
}
