/*
 * Slurm provenance for result files: what job, step, partition, account and
 * nodes a run had, as a list of key/value strings.
 *
 * Sources: the environment Slurm gives every task (always) and, when
 * collprof was built with libslurm (HAVE_LIBSLURM), slurm_load_job() for
 * what the environment lacks (time limit, QOS, allocated TRES ...).  libslurm
 * is asked only when SLURM_JOB_ID is set and a configuration file exists
 * ($SLURM_CONF, else /etc/slurm/slurm.conf): libslurm exits the process when
 * it finds none.  Nothing here is ever fatal: outside Slurm the list is empty.
 */
#ifndef COLLPROF_SLURM_META_H
#define COLLPROF_SLURM_META_H

#include <stddef.h>

#define CP_SLURM_KEY_MAX   48
#define CP_SLURM_VALUE_MAX 512
/** Enough room for every key cp_slurm_meta() can produce. */
#define CP_SLURM_META_MAX 56

/** One fact: key is a lower-case identifier starting with "slurm_". */
typedef struct {
    char key[CP_SLURM_KEY_MAX];
    char value[CP_SLURM_VALUE_MAX];
} cp_slurm_kv_t;

/**
 * Fill kv[0 .. max-1] with the facts about the Slurm job this process runs
 * in; return how many were written (0 outside Slurm, never negative).  Keys
 * appear at most once, in a fixed order; a fact Slurm does not give is left
 * out, never written empty.  When facts exist, the last key is
 * "slurm_meta_source" ("environment", "environment+slurm_load_job", or
 * "environment; slurm_load_job: <why not>").  The libslurm part is looked up
 * once per process and cached.  Values longer than CP_SLURM_VALUE_MAX - 1
 * are cut.
 */
int cp_slurm_meta(cp_slurm_kv_t *kv, int max);

/** The environment part alone (no libslurm): for tests and for callers that must not block. */
int cp_slurm_meta_env(cp_slurm_kv_t *kv, int max);

/** The value of key in kv[0 .. n-1], or NULL. */
const char *cp_slurm_meta_get(const cp_slurm_kv_t *kv, int n, const char *key);

#endif
