#include "config.h"

/*
 * Self-launch, MPIRUN mode (--launcher mpirun): re-exec the same command
 * line under Open MPI's mpirun on loopback and supervise the one mpirun
 * process like a rank.
 */

#include "launch/launch_int.h"
#include "base/log.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CP_MPIRUN_PATH
#define CP_MPIRUN_PATH ""
#endif

static int mpirun_path(char *out, size_t size)
{
    if (CP_MPIRUN_PATH[0] != '\0' && access(CP_MPIRUN_PATH, X_OK) == 0) {
        snprintf(out, size, "%s", CP_MPIRUN_PATH);
        return 0;
    }
    return cp_launch_find_in_path("mpirun", out, size);
}

/* mpirun's command line: fixed options, exe, argv[1..], NULL (strings not copied). */
static char **mpirun_argv(char *mpirun, char *npstr, char *exe, char **argv)
{
    static char *const fixed[] = {
        "--oversubscribe",
        "--bind-to",
        "none",
        "--mca",
        "oob_tcp_if_include",
        "lo",
        "--mca",
        "btl_tcp_if_include",
        "lo",
        "-x",
        "COLLPROF_SELF_LAUNCHED",
        "-x",
        "COLLPROF_LAUNCHER",
    };
    const size_t nfixed = sizeof(fixed) / sizeof(fixed[0]);
    int argc = 0;
    while (argv[argc] != NULL) {
        argc++;
    }
    char **margv = calloc((size_t)argc + nfixed + 8, sizeof(*margv));
    if (margv == NULL) {
        return NULL;
    }
    int k = 0;
    margv[k++] = mpirun;
    margv[k++] = "-np";
    margv[k++] = npstr;
    for (size_t i = 0; i < 3; i++) {
        margv[k++] = fixed[i];
    }
    if (geteuid() == 0) {
        margv[k++] = "--allow-run-as-root";
    }
    for (size_t i = 3; i < nfixed; i++) {
        margv[k++] = fixed[i];
    }
    margv[k++] = exe;
    for (int i = 1; i < argc; i++) {
        margv[k++] = argv[i];
    }
    margv[k] = NULL;
    return margv;
}

int cp_launch_mpirun(int np, char **argv, const cp_launch_opts_t *opts)
{
    char mpirun[PATH_MAX], exe[PATH_MAX], npstr[16];
    if (mpirun_path(mpirun, sizeof(mpirun)) != 0) {
        cp_log(CP_LOG_ERROR, "mpirun launch requested but no mpirun was found (%s%sPATH)",
               CP_MPIRUN_PATH[0] != '\0' ? CP_MPIRUN_PATH : "",
               CP_MPIRUN_PATH[0] != '\0' ? " or " : "");
        return 1;
    }
    cp_launch_self_exe(exe, sizeof(exe));
    snprintf(npstr, sizeof(npstr), "%d", np);

    int status = 1;
    cp_launch_job_t job;
    if (cp_launch_job_init(&job, opts, 1) != 0) {
        return 1;
    }
    job.mpirun = 1;
    job.np = 1;
    char **margv = mpirun_argv(mpirun, npstr, exe, argv);
    char **env = cp_launch_env_clone();
    if (margv == NULL || env == NULL ||
        cp_launch_env_set(&env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
        cp_launch_env_set(&env, "COLLPROF_LAUNCHER", "mpirun", 1) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory");
        goto free_args;
    }
    if (cp_launch_signals_take(&job) != 0) {
        goto free_args;
    }
    /* mpirun cleans up its ranks on SIGTERM */
    pid_t pid = cp_launch_spawn(mpirun, margv, env, &job.oldmask, SIGTERM);
    if (pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for mpirun failed: %s", strerror(errno));
    } else {
        job.children[0].pid = pid;
        job.children[0].alive = 1;
        job.nalive = 1;
        job.nstarted = 1;
        cp_log(CP_LOG_INFO, "running %d ranks under %s", np, mpirun);
        status = cp_launch_supervise(&job);
    }
    cp_launch_signals_restore(&job);

free_args:
    free(job.children);
    cp_launch_env_free(env);
    free(margv);
    return status;
}
