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

/* The Slurm ids that name the output files: -1 with err when one is not an id. */
static int check_ids(char *err, size_t len)
{
    static const char *vars[] = {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_ARRAY_TASK_ID", NULL};
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";
    for (int i = 0; vars[i] != NULL; i++) {
        const char *v = getenv(vars[i]);
        size_t n = v != NULL ? strlen(v) : 0;
        if (v != NULL && (n == 0 || n > 32 || strspn(v, ok) != n)) {
            snprintf(err, len,
                     "%s='%.40s%s' is not a Slurm id (1 to 32 letters, digits, '_' or '-'): it "
                     "would go into the output files' names",
                     vars[i], v, n > 40 ? "..." : "");
            return -1;
        }
    }
    return 0;
}

int cp_slurm_check_launch(char *err, size_t len)
{
    if (check_ids(err, len) != 0) {
        return -1;
    }
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
