#include "config.h"

/*
 * Self-launch: collprof --np N starts N local ranks of itself.
 *
 * Embedded mode: a helper process runs a PMIx server (libpmix server API,
 * launch_server.c) and registers one namespace with the job-level and
 * per-proc data that PMIx clients and Open MPI's direct-launch path
 * (ess/pmi) read; for each rank it sends the client environment
 * (PMIx_server_setup_fork) back to the launcher, which forks and execs
 * /proc/self/exe.  The server lives in its own process because libpmix
 * 4.2.2's server crashes or deadlocks when several clients die at once
 * inside a pending fence (an abort, a timeout, Ctrl-C): the launcher must
 * survive that to report the job's status and clean up.  The launcher
 * itself never calls PMIx and has a single thread.
 *
 * MPIRUN mode re-execs the same command line under mpirun instead
 * (launch_mpirun.c).
 *
 * Both modes share the supervision loop (launch_supervise.c): reap
 * children, forward SIGINT, SIGTERM and SIGHUP, kill the survivors when a
 * rank fails, and honour the job timeout.  The ranks' environment is
 * prepared in launch_env.c.
 */

#include "launch/launch_int.h"
#include "base/log.h"
#include "base/util.h"

#include <pmix_common.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What an embedded launch creates and must undo. */
typedef struct embedded {
    char dir[PATH_MAX];    /* private directory: PMIx sockets, Open MPI session */
    char shmdir[PATH_MAX]; /* private /dev/shm directory, "" when none */
    char exe[PATH_MAX];
    char host[256];
    char nspace[PMIX_MAX_NSLEN + 1];
    int evpipe[2];  /* frames: server -> launcher */
    int cmdpipe[2]; /* closed by the launcher to end the server */
} embedded_t;

/* The base environment of every rank: ours, cleaned, plus the Open MPI settings. */
static int embedded_env(cp_launch_job_t *job, const embedded_t *e, int np)
{
    job->base_env = cp_launch_env_clone();
    if (job->base_env == NULL ||
        cp_launch_env_set(&job->base_env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
        /* the control channel's AF_UNIX listeners go in here (src/chan/unix_sock.c) */
        cp_launch_env_set(&job->base_env, "COLLPROF_RUNDIR", e->dir, 1) != 0 ||
        cp_launch_env_add_ompi(&job->base_env, e->dir, e->shmdir[0] ? e->shmdir : NULL,
                               np > cp_launch_online_cpus()) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory building the ranks' environment");
        return -1;
    }
    return 0;
}

/* Fork the server process; on success the job holds our ends of the pipes. */
static int embedded_fork_server(cp_launch_job_t *job, embedded_t *e, int np)
{
    fflush(NULL); /* the server process must not flush our buffers again */
    pid_t launcher = getpid();
    job->server_pid = fork();
    if (job->server_pid == 0) {
        close(e->evpipe[0]);
        close(e->cmdpipe[1]);
        close(job->sigfd);
        cp_launch_server_main(launcher, np, e->nspace, e->host, e->dir, e->evpipe[1],
                              e->cmdpipe[0]);
    }
    if (job->server_pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for the PMIx server failed: %s", strerror(errno));
        job->server_pid = 0;
        return -1;
    }
    /* only the server may hold the write end, so that its death reads as EOF */
    close(e->evpipe[1]);
    close(e->cmdpipe[0]);
    job->evfd = e->evpipe[0];
    job->cmdfd = e->cmdpipe[1];
    e->evpipe[0] = e->evpipe[1] = e->cmdpipe[0] = e->cmdpipe[1] = -1;
    return 0;
}

static void embedded_close(cp_launch_job_t *job, embedded_t *e)
{
    int fds[] = {e->evpipe[0], e->evpipe[1], e->cmdpipe[0], e->cmdpipe[1], job->evfd, job->cmdfd};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    free(job->children);
    cp_launch_env_free(job->base_env);
    if (e->shmdir[0] != '\0') {
        cp_launch_remove_tree(e->shmdir);
    }
    cp_launch_remove_tree(e->dir);
}

static int launch_embedded(int np, char **argv, const cp_launch_opts_t *opts)
{
    int status = 1;
    embedded_t e = {.evpipe = {-1, -1}, .cmdpipe = {-1, -1}};
    cp_launch_job_t job;
    /* the PMIx server holds two descriptors per rank, rank 0 one per rank for its channel and
     * a backend's mesh one more (the ranks inherit the limit): short of them, the server's
     * accepts fail and every rank waits for good */
    long need = 2L * np + CP_NOFILE_SPARE, soft, hard;
    if (cp_nofile_fit(need, &soft, &hard) != 0) {
        cp_log(CP_LOG_ERROR,
               "--np %d needs about %ld open files, but the limit is %ld (ulimit -n; hard limit "
               "%ld): raise it, e.g. 'ulimit -n %ld', or run fewer ranks",
               np, need, soft, hard, need);
        return 1;
    }

    if (cp_launch_contain() < 0) { /* before the server and the ranks: they inherit it */
        return 1;
    }
    if (gethostname(e.host, sizeof(e.host)) != 0) {
        snprintf(e.host, sizeof(e.host), "localhost");
    }
    e.host[sizeof(e.host) - 1] = '\0';
    snprintf(e.nspace, sizeof(e.nspace), "collprof.%ld", (long)getpid());
    cp_launch_self_exe(e.exe, sizeof(e.exe));
    if (cp_launch_tmp_dir(e.dir, sizeof(e.dir)) != 0) {
        return 1;
    }
    /* optional: Open MPI's shared-memory segments (tmpfs) */
    if (cp_launch_private_dir("/dev/shm", e.shmdir, sizeof(e.shmdir)) != 0) {
        e.shmdir[0] = '\0';
    }
    if (cp_launch_job_init(&job, opts, np) != 0) {
        goto cleanup;
    }
    job.np = np;
    job.argv = argv;
    job.exe = e.exe;
    /* benchmarks only: the same launch of another PMIx program (bench/scale_np.sh's floor) */
    const char *other = getenv("COLLPROF_BENCH_EXEC");
    if (other != NULL && *other != '\0') {
        if (other[0] != '/' || access(other, X_OK) != 0) {
            cp_log(CP_LOG_ERROR, "COLLPROF_BENCH_EXEC=%s: not an executable absolute path", other);
            goto cleanup;
        }
        job.exe = other;
    }
    if (embedded_env(&job, &e, np) != 0) {
        goto cleanup;
    }
    if (pipe2(e.evpipe, O_CLOEXEC) != 0 || pipe2(e.cmdpipe, O_CLOEXEC) != 0) {
        cp_log(CP_LOG_ERROR, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    if (cp_launch_signals_take(&job) != 0) {
        goto cleanup;
    }
    if (embedded_fork_server(&job, &e, np) == 0) {
        status = cp_launch_supervise(&job);
        cp_log(CP_LOG_INFO, "%d ranks (namespace %s) finished with status %d after %.3f s",
               job.nstarted, e.nspace, status, cp_launch_now() - job.t_start);
        cp_launch_server_stop(&job, status == 0 && !job.failed);
    }
    cp_launch_signals_restore(&job);
cleanup:
    embedded_close(&job, &e);
    return status;
}

int cp_launch_self(int np, char **argv, const cp_launch_opts_t *opts)
{
    static const cp_launch_opts_t defaults = {.mode = CP_LAUNCH_EMBEDDED};
    if (opts == NULL) {
        opts = &defaults;
    }
    if (np < 1 || argv == NULL || argv[0] == NULL) {
        cp_log(CP_LOG_ERROR, "self-launch needs at least one rank and a command line");
        return 1;
    }
    if (opts->mode == CP_LAUNCH_MPIRUN) {
        return cp_launch_mpirun(np, argv, opts);
    }
    return launch_embedded(np, argv, opts);
}
