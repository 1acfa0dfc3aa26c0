/* Unit tests for src/slurm: job facts from the environment and the launch check. */
#include "config.h"

#include "tap.h"
#include "slurm/slurm_check.h"
#include "slurm/slurm_meta.h"

#include <stdlib.h>
#include <string.h>

extern char **environ;

/* a clean slate: no SLURM_*, PMIX_*, PMI_* or COLLPROF_* variable */
static void clear_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e; e++) {
            if (!strncmp(*e, "SLURM", 5) || !strncmp(*e, "PMI", 3) ||
                !strncmp(*e, "COLLPROF_", 9)) {
                size_t l = strcspn(*e, "=");
                if (l < sizeof(name)) {
                    memcpy(name, *e, l);
                    name[l] = '\0';
                }
                break;
            }
        }
        if (name[0] == '\0') {
            return;
        }
        unsetenv(name);
    }
}

static int eq(const cp_slurm_kv_t *kv, int n, const char *key, const char *want)
{
    const char *v = cp_slurm_meta_get(kv, n, key);
    return v != NULL && !strcmp(v, want);
}

static void test_meta(void)
{
    cp_slurm_kv_t kv[CP_SLURM_META_MAX];
    clear_env();
    ok(cp_slurm_meta(kv, CP_SLURM_META_MAX) == 0, "outside Slurm: no facts");
    setenv("SLURM_JOB_NAME", "x", 1);
    ok(cp_slurm_meta(kv, CP_SLURM_META_MAX) == 0, "no SLURM_JOB_ID: no facts");

    /* no libslurm lookup here: the configuration does not exist */
    static const char *const job_env[][2] = {
        {"SLURM_CONF", "/nonexistent/slurm.conf"},
        {"SLURM_JOB_ID", "1234"},
        {"SLURM_STEPID", "3"},
        {"SLURM_ARRAY_JOB_ID", "1200"},
        {"SLURM_ARRAY_TASK_ID", "34"},
        {"SLURM_JOB_PARTITION", "debug"},
        {"SLURM_JOB_ACCOUNT", ""},
        {"SLURM_NODELIST", "node[01-04]"},
        {"SLURM_JOB_NODELIST", "node[01-08]"},
        {"SLURM_CPUS_ON_NODE", "64"},
        {"SLURM_GPUS_ON_NODE", "4"},
        {"SLURM_CLUSTER_NAME", "big"},
    };
    for (size_t i = 0; i < sizeof(job_env) / sizeof(job_env[0]); i++) {
        setenv(job_env[i][0], job_env[i][1], 1);
    }
    int n = cp_slurm_meta(kv, CP_SLURM_META_MAX);
    ok(n == 11, "11 facts (got %d)", n);
    ok(!strcmp(kv[0].key, "slurm_job_id") && !strcmp(kv[0].value, "1234"), "job id first");
    ok(eq(kv, n, "slurm_step_id", "3"), "step id from the old SLURM_STEPID");
    ok(eq(kv, n, "slurm_array_job_id", "1200") && eq(kv, n, "slurm_array_task_id", "34"),
       "array job and task");
    ok(eq(kv, n, "slurm_job_name", "x") && eq(kv, n, "slurm_partition", "debug") &&
           eq(kv, n, "slurm_cluster", "big"),
       "name, partition, cluster");
    ok(cp_slurm_meta_get(kv, n, "slurm_account") == NULL, "an empty value is left out");
    ok(eq(kv, n, "slurm_nodelist", "node[01-08]"), "SLURM_JOB_NODELIST before SLURM_NODELIST");
    ok(eq(kv, n, "slurm_cpus_on_node", "64") && eq(kv, n, "slurm_gpus_on_node", "4"),
       "cpus and gpus on the node");
    const char *src = cp_slurm_meta_get(kv, n, "slurm_meta_source");
    ok(src != NULL && !strcmp(kv[n - 1].key, "slurm_meta_source") &&
           !strncmp(src, "environment", 11),
       "source last: '%s'", src ? src : "(none)");
#ifdef HAVE_LIBSLURM
    ok(src != NULL && strstr(src, "no configuration file /nonexistent/slurm.conf") != NULL,
       "libslurm not asked without a configuration file");
#endif
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (!strcmp(kv[i].key, kv[j].key)) {
                ok(0, "key %s twice", kv[i].key);
            }
        }
    }
    ok(cp_slurm_meta(kv, 3) == 3 && !strcmp(kv[2].key, "slurm_array_job_id"), "max is respected");
    ok(cp_slurm_meta(NULL, 5) == 0 && cp_slurm_meta(kv, 0) == 0, "no room: 0");

    char longv[2000];
    memset(longv, 'a', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    setenv("SLURM_JOB_NAME", longv, 1);
    n = cp_slurm_meta_env(kv, CP_SLURM_META_MAX);
    ok(strlen(cp_slurm_meta_get(kv, n, "slurm_job_name")) == CP_SLURM_VALUE_MAX - 1,
       "a long value is cut");
}

static void test_check(void)
{
    char err[512];
    clear_env();
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "outside Slurm: fine");
    setenv("SLURM_JOB_ID", "7", 1);
    setenv("SLURM_NTASKS", "4", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "batch script or salloc shell: fine");
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_STEP_NUM_TASKS", "1", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "a 1-task step: fine");
    setenv("SLURM_STEP_NUM_TASKS", "2", 1);
    err[0] = '\0';
    ok(cp_slurm_check_launch(err, sizeof(err)) == -1 && strstr(err, "--mpi=pmix") &&
           strstr(err, "2 tasks") && strstr(err, "--mpi=none"),
       "srun --mpi=none -n 2: error naming --mpi=pmix: %s", err);
    setenv("PMI_FD", "5", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == -1 && strstr(err, "pmi2"),
       "srun --mpi=pmi2: says PMI-2");
    unsetenv("PMI_FD");
    unsetenv("SLURM_STEP_NUM_TASKS");
    ok(cp_slurm_check_launch(err, sizeof(err)) == -1 && strstr(err, "4 tasks"),
       "SLURM_NTASKS when the step count is missing");
    setenv("PMIX_NAMESPACE", "slurm.pmix.7.0", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "with PMIx: fine");
    unsetenv("PMIX_NAMESPACE");
    setenv("PMIX_SERVER_URI41", "x", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "with a PMIx server URI: fine");
    unsetenv("PMIX_SERVER_URI41");
    setenv("COLLPROF_SELF_LAUNCHED", "1", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "ranks of --np: fine");
    unsetenv("COLLPROF_SELF_LAUNCHED");
    setenv("SLURM_NTASKS", "x", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "a count that is no number: fine");
    char small[16];
    setenv("SLURM_NTASKS", "3", 1);
    ok(cp_slurm_check_launch(small, sizeof(small)) == -1 && strlen(small) == 15,
       "a small buffer is filled, not overrun");
}

/* The ids that go into the output files' names must be ids. */
static void test_ids(void)
{
    static const char *bad[][2] = {{"SLURM_JOB_ID", "../x"},
                                   {"SLURM_JOB_ID", "1/2"},
                                   {"SLURM_JOB_ID", ""},
                                   {"SLURM_STEP_ID", "0\n1"},
                                   {"SLURM_STEP_ID", "0\033[2J"},
                                   {"SLURM_ARRAY_TASK_ID", ".."},
                                   {"SLURM_JOB_ID", "123456789012345678901234567890123"}};
    char err[512];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        clear_env();
        setenv("SLURM_JOB_ID", "7", 1);
        setenv("SLURM_STEP_ID", "batch", 1);
        setenv(bad[i][0], bad[i][1], 1);
        err[0] = '\0';
        ok(cp_slurm_check_launch(err, sizeof(err)) == -1 && strstr(err, bad[i][0]) == err,
           "%s of %zu characters refused, naming it", bad[i][0], strlen(bad[i][1]));
    }
    clear_env();
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "extern", 1);
    setenv("SLURM_ARRAY_TASK_ID", "17", 1);
    ok(cp_slurm_check_launch(err, sizeof(err)) == 0, "real ids: fine");
    clear_env();
}

int main(void)
{
    test_meta();
    test_ids();
    test_check();
    return tap_done();
}
