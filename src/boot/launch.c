#include "config.h"

/*
 * Self-launch: collprof --np N starts N local ranks of itself.
 *
 * Embedded mode runs a PMIx server inside this process (libpmix server API),
 * registers one namespace with the job-level and per-proc data that PMIx
 * clients and Open MPI's direct-launch path (ess/pmi) read, then forks and
 * execs /proc/self/exe once per rank.  MPIRUN mode re-execs the same command
 * line under mpirun instead.  Both modes share the supervision loop: reap
 * children, forward SIGINT/SIGTERM, kill the survivors when a rank fails, and
 * honour the job timeout.
 */

#include "boot/boot.h"
#include "collprof/status.h"
#include "core/log.h"

#include <pmix.h>
#include <pmix_server.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CP_MPIRUN_PATH
#define CP_MPIRUN_PATH ""
#endif

extern char **environ;

/* Seconds the survivors get after a rank fails before they are SIGKILLed. */
#define GRACE_S 5.0
/* Once the job is failing, a further exit shortens the wait to this. */
#define GRACE_SHORT_S 1.0
/* After a forwarded SIGINT/SIGTERM or a timeout, SIGKILL follows after this. */
#define SIGNAL_GRACE_S 3.0
/* Exit status reported when the job ran past opts->timeout_s (as timeout(1)). */
#define TIMEOUT_STATUS 124

/* One supervised child: a rank (embedded mode) or mpirun (MPIRUN mode). */
typedef struct child {
    pid_t pid; /* 0 when never started */
    int alive;
    int connected; /* PMIx_Init reached the server */
    int finalized; /* PMIx_Finalize reached the server */
    int status;    /* exit status as a shell reports it, once dead */
} child_t;

/*
 * State shared between the supervising thread and PMIx's progress thread
 * (where the server module callbacks run).  Everything below is guarded by
 * lock.
 */
typedef struct job {
    pthread_mutex_t lock;
    child_t *children;
    int nchildren;
    int aborted; /* a client called PMIx_Abort */
    int abort_rank;
    int abort_status;
    int nconnected;
    int fence_upcalls; /* fence_nb calls (diagnostic) */
} job_t;

static job_t job = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Completion of a non-blocking PMIx server call. */
typedef struct op_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    pmix_status_t status;
} op_wait_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void op_wait_init(op_wait_t *w)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->done = 0;
    w->status = PMIX_SUCCESS;
}

static void op_wait_destroy(op_wait_t *w)
{
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
}

static void op_done_cb(pmix_status_t status, void *cbdata)
{
    op_wait_t *w = cbdata;
    pthread_mutex_lock(&w->lock);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* rc is what the non-blocking call returned; wait for its callback if one comes. */
static pmix_status_t op_wait_result(op_wait_t *w, pmix_status_t rc)
{
    if (rc == PMIX_OPERATION_SUCCEEDED) {
        return PMIX_SUCCESS;
    }
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        pthread_cond_wait(&w->cond, &w->lock);
    }
    rc = w->status;
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Server module: runs on PMIx's progress thread.                          */

static int rank_of(const pmix_proc_t *proc)
{
    if (proc == NULL || proc->rank >= (pmix_rank_t)job.nchildren) {
        return -1;
    }
    return (int)proc->rank;
}

static pmix_status_t srv_client_connected(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    pthread_mutex_lock(&job.lock);
    int r = rank_of(proc);
    if (r >= 0 && !job.children[r].connected) {
        job.children[r].connected = 1;
        job.nconnected++;
    }
    pthread_mutex_unlock(&job.lock);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t srv_client_finalized(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    pthread_mutex_lock(&job.lock);
    int r = rank_of(proc);
    if (r >= 0) {
        job.children[r].finalized = 1;
    }
    pthread_mutex_unlock(&job.lock);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t srv_abort(const pmix_proc_t *proc, void *server_object, int status,
                               const char msg[], pmix_proc_t procs[], size_t nprocs,
                               pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    (void)procs;
    (void)nprocs;
    /* Whatever subset the client names, the job cannot go on without it:
     * kill every other rank now; the caller exits by itself once released
     * (the supervision loop kills it after a grace period otherwise). */
    pthread_mutex_lock(&job.lock);
    int r = rank_of(proc);
    if (!job.aborted) {
        job.aborted = 1;
        job.abort_rank = r;
        job.abort_status = status;
        cp_log(CP_LOG_ERROR, "rank %d called abort with status %d%s%s", r, status,
               msg != NULL && msg[0] != '\0' ? ": " : "", msg != NULL ? msg : "");
    }
    pthread_mutex_unlock(&job.lock);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    kill(getpid(), SIGCHLD); /* wake the supervision loop */
    return PMIX_SUCCESS;
}

static void release_copy(void *cbdata)
{
    free(cbdata);
}

/* Every participant is local, so the local contribution is the whole
 * collective: hand it straight back. */
static pmix_status_t srv_fence_nb(const pmix_proc_t procs[], size_t nprocs,
                                  const pmix_info_t info[], size_t ninfo, char *data,
                                  size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)procs;
    (void)nprocs;
    (void)info;
    (void)ninfo;
    pthread_mutex_lock(&job.lock);
    job.fence_upcalls++;
    pthread_mutex_unlock(&job.lock);
    if (cbfunc == NULL) {
        return PMIX_SUCCESS;
    }
    char *copy = NULL;
    if (ndata > 0) {
        copy = malloc(ndata);
        if (copy == NULL) {
            return PMIX_ERR_NOMEM;
        }
        memcpy(copy, data, ndata);
    }
    cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, release_copy, copy);
    return PMIX_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Environment arrays (malloc'd strings: PMIx_server_setup_fork edits them). */

static void env_free(char **env)
{
    if (env == NULL) {
        return;
    }
    for (char **e = env; *e != NULL; e++) {
        free(*e);
    }
    free(env);
}

/* Variables that name a PMIx server or job other than ours. */
static int env_is_stale_pmix(const char *var)
{
    return (strncmp(var, "PMIX_", 5) == 0 && strncmp(var, "PMIX_MCA_", 9) != 0) ||
           strncmp(var, "COLLPROF_SELF_LAUNCHED=", 23) == 0 ||
           strncmp(var, "COLLPROF_LAUNCHER=", 18) == 0;
}

/* What mpirun (Open MPI 4.1) sets for its ranks: stale when we run under one. */
static int env_is_stale_mpirun(const char *var)
{
    static const char *const names[] = {
        "OMPI_COMM_WORLD_",
        "OMPI_APP_CTX_NUM_PROCS=",
        "OMPI_COMMAND=",
        "OMPI_ARGV=",
        "OMPI_FILE_LOCATION=",
        "OMPI_FIRST_RANKS=",
        "OMPI_NUM_APP_CTX=",
        "OMPI_UNIVERSE_SIZE=",
        "OMPI_MCA_ess=",
        "OMPI_MCA_ess_base_jobid=",
        "OMPI_MCA_ess_base_vpid=",
        "OMPI_MCA_pmix=",
        "OMPI_MCA_initial_wdir=",
        "OMPI_MCA_mpi_oversubscribe=",
        "OMPI_MCA_shmem_RUNTIME_QUERY_hint=",
        "OMPI_MCA_orte_app_num=",
        "OMPI_MCA_orte_bound_at_launch=",
        "OMPI_MCA_orte_ess_node_rank=",
        "OMPI_MCA_orte_ess_num_procs=",
        "OMPI_MCA_orte_hnp_uri=",
        "OMPI_MCA_orte_jobfam_session_dir=",
        "OMPI_MCA_orte_launch=",
        "OMPI_MCA_orte_local_daemon_uri=",
        "OMPI_MCA_orte_num_nodes=",
        "OMPI_MCA_orte_precondition_transports=",
        "OMPI_MCA_orte_top_session_dir=",
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strncmp(var, names[i], strlen(names[i])) == 0) {
            return 1;
        }
    }
    return 0;
}

/* A copy of environ without the variables of an enclosing launch. */
static char **env_clone(void)
{
    size_t n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 1, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    const char *launched = getenv("OMPI_MCA_orte_launch");
    int under_mpirun = getenv("OMPI_COMM_WORLD_SIZE") != NULL || launched != NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (env_is_stale_pmix(environ[i]) ||
            (under_mpirun && env_is_stale_mpirun(environ[i]))) {
            continue;
        }
        env[k] = strdup(environ[i]);
        if (env[k] == NULL) {
            env_free(env);
            return NULL;
        }
        k++;
    }
    env[k] = NULL;
    return env;
}

/* Set name=value in env (replacing, or only when absent if !overwrite). */
static int env_set(char ***envp, const char *name, const char *value, int overwrite)
{
    size_t nlen = strlen(name);
    size_t n = 0;
    char **env = *envp;
    for (; env[n] != NULL; n++) {
        if (strncmp(env[n], name, nlen) == 0 && env[n][nlen] == '=') {
            if (!overwrite) {
                return 0;
            }
            break;
        }
    }
    char *entry = malloc(nlen + strlen(value) + 2);
    if (entry == NULL) {
        return -1;
    }
    sprintf(entry, "%s=%s", name, value);
    if (env[n] != NULL) {
        free(env[n]);
        env[n] = entry;
        return 0;
    }
    char **grown = realloc(env, (n + 2) * sizeof(*grown));
    if (grown == NULL) {
        free(entry);
        return -1;
    }
    grown[n] = entry;
    grown[n + 1] = NULL;
    *envp = grown;
    return 0;
}

/* A copy of a NULL-terminated environment array. */
static char **env_dup(char *const *src)
{
    size_t n = 0;
    while (src[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 1, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        env[i] = strdup(src[i]);
        if (env[i] == NULL) {
            env_free(env);
            return NULL;
        }
    }
    return env;
}

/*
 * Open MPI 4.1 started by a PMIx server that is not its own orted comes up
 * as a singleton: its "orte" schizo component declares every process that
 * has no ORTE daemon URI an unmanaged singleton and forces ess=singleton.
 * Without that component no schizo module claims the process, and the ess
 * framework picks its PMIx component, which reads everything from our server
 * (as for srun direct launch).  The session directory goes into our private
 * directory and the shared-memory segments into a private /dev/shm
 * directory, so that nothing is left behind even when ranks are killed.
 * With more ranks than CPUs, say so as mpirun --oversubscribe does: Open MPI
 * then yields when idle instead of spinning (3-5x faster collectives with 4
 * ranks on 2 cores).  These only affect Open MPI processes; user settings
 * win.
 */
static int env_add_ompi(char ***envp, const char *tmpdir, const char *shmdir, int oversubscribed)
{
    if (oversubscribed && env_set(envp, "OMPI_MCA_mpi_oversubscribe", "1", 0) != 0) {
        return -1;
    }
    if (env_set(envp, "OMPI_MCA_schizo", "^orte", 0) != 0 ||
        env_set(envp, "OMPI_MCA_ess", "pmi", 0) != 0 ||
        env_set(envp, "OMPI_MCA_orte_tmpdir_base", tmpdir, 0) != 0) {
        return -1;
    }
    if (shmdir != NULL && env_set(envp, "OMPI_MCA_btl_vader_backing_directory", shmdir, 0) != 0) {
        return -1;
    }
    return 0;
}

/* CPUs this process may run on. */
static int online_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) {
        return CPU_COUNT(&set);
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* ---------------------------------------------------------------------- */
/* Paths. */

/* The executable to run: /proc/self/exe resolved, so argv[0] does not matter. */
static void self_exe(char *buf, size_t size)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n > 0 && (size_t)n < size - 1) {
        buf[n] = '\0';
        if (access(buf, X_OK) == 0) {
            return;
        }
    }
    /* deleted or unreadable link: the kernel still resolves this one */
    snprintf(buf, size, "/proc/self/exe");
}

/* mkdtemp base/collprof.XXXXXX into dir. */
static int make_private_dir(const char *base, char *dir, size_t size)
{
    if ((size_t)snprintf(dir, size, "%s/collprof.XXXXXX", base) >= size) {
        return -1;
    }
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    return 0;
}

static int make_tmp_dir(char *dir, size_t size)
{
    const char *base = getenv("TMPDIR");
    /* PMIx puts Unix socket paths in here: keep them short (sun_path is 108) */
    if (base == NULL || base[0] == '\0' || strlen(base) > 48) {
        base = "/tmp";
    }
    if (make_private_dir(base, dir, size) != 0) {
        cp_log(CP_LOG_ERROR, "cannot create a private directory in %s: %s", base,
               strerror(errno));
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Search PATH for an executable name (no shell involved). */
static int find_in_path(const char *name, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (path == NULL || path[0] == '\0') {
        path = "/usr/local/bin:/usr/bin:/bin";
    }
    while (*path != '\0') {
        const char *end = strchr(path, ':');
        size_t len = end != NULL ? (size_t)(end - path) : strlen(path);
        if (len > 0 && (size_t)snprintf(out, size, "%.*s/%s", (int)len, path, name) < size &&
            access(out, X_OK) == 0) {
            return 0;
        }
        path += len;
        if (*path == ':') {
            path++;
        }
    }
    return -1;
}

/* ---------------------------------------------------------------------- */
/* Children: fork/exec and supervision. */

typedef struct sigstate {
    sigset_t oldmask;
    struct sigaction oldpipe;
} sigstate_t;

/* Block the signals the supervision loop waits for, before PMIx starts its
 * threads (they inherit the mask, so the signals come to us). */
static void signals_take(sigstate_t *ss)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, &ss->oldmask);
    struct sigaction ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &ss->oldpipe);
}

static void signals_restore(const sigstate_t *ss)
{
    /* drop what is still pending so restoring the mask does not deliver it */
    sigset_t pend;
    sigpending(&pend);
    if (sigismember(&pend, SIGCHLD)) {
        struct timespec zero = {0, 0};
        sigset_t one;
        sigemptyset(&one);
        sigaddset(&one, SIGCHLD);
        sigtimedwait(&one, NULL, &zero);
    }
    sigaction(SIGPIPE, &ss->oldpipe, NULL);
    pthread_sigmask(SIG_SETMASK, &ss->oldmask, NULL);
}

/*
 * Fork and exec; the child runs async-signal-safe calls only (the parent
 * has threads).  Returns the pid or -1.
 */
static pid_t spawn(const char *path, char *const argv[], char *const envp[],
                   const sigstate_t *ss, int deathsig)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    /* child */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    (void)ss;
    /* no orphans if the launcher is killed outright */
    prctl(PR_SET_PDEATHSIG, deathsig);
    if (getppid() != parent) {
        _exit(127);
    }
    execve(path, argv, envp);
    static const char msg[] = "collprof: error: exec failed in a launched rank\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)w;
    _exit(127);
}

static int decode_status(int wstatus)
{
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    if (WIFSIGNALED(wstatus)) {
        return 128 + WTERMSIG(wstatus);
    }
    return 1;
}

static void signal_all(int sig)
{
    pthread_mutex_lock(&job.lock);
    for (int i = 0; i < job.nchildren; i++) {
        if (job.children[i].alive) {
            kill(job.children[i].pid, sig);
        }
    }
    pthread_mutex_unlock(&job.lock);
}

/* SIGKILL every live child but one (the one that asked for it). */
static void kill_others(int spare)
{
    pthread_mutex_lock(&job.lock);
    for (int i = 0; i < job.nchildren; i++) {
        if (i != spare && job.children[i].alive) {
            kill(job.children[i].pid, SIGKILL);
        }
    }
    pthread_mutex_unlock(&job.lock);
}

static const char *child_name(int i, int mpirun, char *buf, size_t size)
{
    if (mpirun) {
        snprintf(buf, size, "mpirun");
    } else {
        snprintf(buf, size, "rank %d", i);
    }
    return buf;
}

/*
 * Wait for every child.  Returns the job's exit status: 0, the first
 * failure, the abort status, or TIMEOUT_STATUS.
 */
static int supervise(const cp_launch_opts_t *opts, int mpirun)
{
    const double start = now_s();
    const double never = 1e300;
    double job_deadline = opts->timeout_s > 0 ? start + opts->timeout_s : never;
    double kill_deadline = never;
    int result = 0, failed = 0, timed_out = 0, abort_seen = 0, warned_nofin = 0;
    int nalive = job.nchildren;
    char name[32];

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);

    while (nalive > 0) {
        /* reap */
        for (int i = 0; i < job.nchildren; i++) {
            child_t *c = &job.children[i];
            int wstatus;
            if (!c->alive || waitpid(c->pid, &wstatus, WNOHANG) != c->pid) {
                continue;
            }
            pthread_mutex_lock(&job.lock);
            c->alive = 0;
            c->status = decode_status(wstatus);
            int nofin = c->connected && !c->finalized;
            int aborter = job.aborted && job.abort_rank == i;
            pthread_mutex_unlock(&job.lock);
            nalive--;
            double t = now_s();
            if (c->status != 0) {
                if (!failed) {
                    failed = 1;
                    result = c->status;
                    if (WIFSIGNALED(wstatus)) {
                        cp_log(CP_LOG_ERROR, "%s (pid %d) was killed by signal %d (%s)",
                               child_name(i, mpirun, name, sizeof(name)), (int)c->pid,
                               WTERMSIG(wstatus), strsignal(WTERMSIG(wstatus)));
                    } else if (!aborter) {
                        cp_log(CP_LOG_ERROR, "%s (pid %d) exited with status %d",
                               child_name(i, mpirun, name, sizeof(name)), (int)c->pid,
                               c->status);
                    }
                    if (kill_deadline > t + GRACE_S) {
                        kill_deadline = t + GRACE_S;
                    }
                } else if (kill_deadline > t + GRACE_SHORT_S) {
                    kill_deadline = t + GRACE_SHORT_S;
                }
            } else if (nofin && !mpirun) {
                /* its peers may be waiting for it in a collective */
                if (!warned_nofin) {
                    warned_nofin = 1;
                    cp_log(CP_LOG_WARN, "rank %d exited without calling PMIx_Finalize", i);
                }
                if (kill_deadline > t + GRACE_S) {
                    kill_deadline = t + GRACE_S;
                }
            } else if (failed && kill_deadline > t + GRACE_SHORT_S) {
                kill_deadline = t + GRACE_SHORT_S;
            }
        }
        if (nalive == 0) {
            break;
        }

        double t = now_s();
        pthread_mutex_lock(&job.lock);
        int aborted = job.aborted;
        pthread_mutex_unlock(&job.lock);
        if (aborted && !abort_seen) {
            abort_seen = 1;
            kill_others(job.abort_rank);
            if (kill_deadline > t + GRACE_S) {
                kill_deadline = t + GRACE_S;
            }
        }
        if (t >= job_deadline) {
            cp_log(CP_LOG_ERROR, "job timed out after %.1f s; terminating it", opts->timeout_s);
            timed_out = 1;
            job_deadline = never;
            signal_all(SIGTERM);
            if (kill_deadline > t + SIGNAL_GRACE_S) {
                kill_deadline = t + SIGNAL_GRACE_S;
            }
        }
        if (t >= kill_deadline) {
            cp_log(CP_LOG_WARN, "killing %d remaining %s", nalive,
                   mpirun ? "mpirun process" : nalive == 1 ? "rank" : "ranks");
            signal_all(SIGKILL);
            kill_deadline = t + 1.0; /* repeat until they are gone */
        }

        double wake = kill_deadline < job_deadline ? kill_deadline : job_deadline;
        double wait = wake - t;
        if (wait > 0.25) {
            wait = 0.25; /* also polls the abort flag */
        }
        if (wait < 0.001) {
            wait = 0.001;
        }
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        siginfo_t si;
        int sig = sigtimedwait(&set, &si, &ts);
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            cp_log(CP_LOG_WARN, "caught signal %d (%s); forwarding it to the %s", sig,
                   strsignal(sig), mpirun ? "mpirun process" : "ranks");
            signal_all(sig);
            t = now_s();
            if (kill_deadline > t + SIGNAL_GRACE_S) {
                kill_deadline = t + SIGNAL_GRACE_S;
            }
        }
    }

    if (timed_out) {
        return TIMEOUT_STATUS;
    }
    pthread_mutex_lock(&job.lock);
    if (job.aborted) {
        result = job.abort_status != 0 ? job.abort_status : 1;
    }
    pthread_mutex_unlock(&job.lock);
    return result;
}

/* ---------------------------------------------------------------------- */
/* Embedded PMIx server. */

static int info_add(void *list, const char *key, const void *value, pmix_data_type_t type)
{
    pmix_status_t rc = PMIx_Info_list_add(list, key, value, type);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Info_list_add(%s): %s", key, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

/* Job-level and per-proc data for the namespace, as an info array. */
static int build_job_info(const char *nspace, int np, const char *host, pmix_data_array_t *out)
{
    int ret = -1;
    char *regex = NULL, *ppn = NULL, *peers = NULL;
    void *list = PMIx_Info_list_start();
    if (list == NULL) {
        return -1;
    }

    /* "0,1,...,np-1": the local peers and the proc map of our one node */
    size_t cap = (size_t)np * 12 + 1;
    peers = malloc(cap);
    if (peers == NULL) {
        goto free_list;
    }
    size_t off = 0;
    for (int r = 0; r < np; r++) {
        off += (size_t)snprintf(peers + off, cap - off, "%s%d", r ? "," : "", r);
    }
    /* libpmix 4.2.2 derives the local peers and local size from the proc
     * map and counts its comma-separated entries without expanding ranges
     * ("0-3" would make a local size of 1): list every rank. */
    pmix_status_t rc = PMIx_generate_regex(host, &regex);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_generate_ppn(peers, &ppn);
    }
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx node/proc map generation failed: %s", PMIx_Error_string(rc));
        goto free_strings;
    }

    uint32_t unp = (uint32_t)np, zero32 = 0, one32 = 1;
    pmix_rank_t rank0 = 0;
    bool no = false;
    if (info_add(list, PMIX_UNIV_SIZE, &unp, PMIX_UINT32) || info_add(list, PMIX_JOB_SIZE, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_MAX_PROCS, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_LOCAL_SIZE, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_NODE_SIZE, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_APP_SIZE, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_NODE_MAP, regex, PMIX_REGEX) ||
        info_add(list, PMIX_PROC_MAP, ppn, PMIX_REGEX) ||
        info_add(list, PMIX_LOCAL_PEERS, peers, PMIX_STRING) ||
        info_add(list, PMIX_JOBID, nspace, PMIX_STRING) ||
        info_add(list, PMIX_APPNUM, &zero32, PMIX_UINT32) ||
        info_add(list, PMIX_JOB_NUM_APPS, &one32, PMIX_UINT32) ||
        info_add(list, PMIX_NUM_NODES, &one32, PMIX_UINT32) ||
        info_add(list, PMIX_NODEID, &zero32, PMIX_UINT32) ||
        info_add(list, PMIX_HOSTNAME, host, PMIX_STRING) ||
        info_add(list, PMIX_LOCALLDR, &rank0, PMIX_PROC_RANK) ||
        info_add(list, PMIX_APPLDR, &rank0, PMIX_PROC_RANK) ||
        info_add(list, PMIX_SPAWNED, &no, PMIX_BOOL)) {
        goto free_strings;
    }

    for (int r = 0; r < np; r++) {
        void *plist = PMIx_Info_list_start();
        if (plist == NULL) {
            goto free_strings;
        }
        pmix_rank_t prank = (pmix_rank_t)r;
        uint16_t lrank = (uint16_t)r;
        pmix_data_array_t darray;
        int bad = info_add(plist, PMIX_RANK, &prank, PMIX_PROC_RANK) ||
                  info_add(plist, PMIX_LOCAL_RANK, &lrank, PMIX_UINT16) ||
                  info_add(plist, PMIX_NODE_RANK, &lrank, PMIX_UINT16) ||
                  info_add(plist, PMIX_GLOBAL_RANK, &prank, PMIX_PROC_RANK) ||
                  info_add(plist, PMIX_APP_RANK, &prank, PMIX_PROC_RANK) ||
                  info_add(plist, PMIX_APPNUM, &zero32, PMIX_UINT32) ||
                  info_add(plist, PMIX_NODEID, &zero32, PMIX_UINT32) ||
                  info_add(plist, PMIX_HOSTNAME, host, PMIX_STRING);
        if (!bad) {
            rc = PMIx_Info_list_convert(plist, &darray);
            bad = rc != PMIX_SUCCESS;
        }
        PMIx_Info_list_release(plist);
        if (bad) {
            goto free_strings;
        }
        bad = info_add(list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY);
        PMIX_DATA_ARRAY_DESTRUCT(&darray);
        if (bad) {
            goto free_strings;
        }
    }
    rc = PMIx_Info_list_convert(list, out);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Info_list_convert: %s", PMIx_Error_string(rc));
        goto free_strings;
    }
    ret = 0;

free_strings:
    free(regex);
    free(ppn);
    free(peers);
free_list:
    PMIx_Info_list_release(list);
    return ret;
}

static int server_start(const char *dir)
{
    static pmix_server_module_t module;
    memset(&module, 0, sizeof(module));
    module.client_connected = srv_client_connected;
    module.client_finalized = srv_client_finalized;
    module.abort = srv_abort;
    module.fence_nb = srv_fence_nb;

    pmix_info_t info[3];
    bool no = false;
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_SYSTEM_TMPDIR, dir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[2], PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
    pmix_status_t rc = PMIx_server_init(&module, info, 3);
    for (int i = 0; i < 3; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_init failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

static int register_nspace(const char *nspace, int np, const char *host)
{
    pmix_data_array_t darray;
    if (build_job_info(nspace, np, host, &darray) != 0) {
        return -1;
    }
    op_wait_t w;
    op_wait_init(&w);
    pmix_status_t rc = PMIx_server_register_nspace(nspace, np, (pmix_info_t *)darray.array,
                                                   darray.size, op_done_cb, &w);
    rc = op_wait_result(&w, rc);
    op_wait_destroy(&w);
    PMIX_DATA_ARRAY_DESTRUCT(&darray);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_register_nspace failed: %s", PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

static int register_client(const pmix_proc_t *proc)
{
    op_wait_t w;
    op_wait_init(&w);
    pmix_status_t rc =
        PMIx_server_register_client(proc, geteuid(), getegid(), NULL, op_done_cb, &w);
    rc = op_wait_result(&w, rc);
    op_wait_destroy(&w);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_register_client(rank %u) failed: %s",
               (unsigned)proc->rank, PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

static void deregister_nspace(const char *nspace)
{
    op_wait_t w;
    op_wait_init(&w);
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, nspace);
    PMIx_server_deregister_nspace(ns, op_done_cb, &w);
    (void)op_wait_result(&w, PMIX_SUCCESS);
    op_wait_destroy(&w);
}

/* Register rank r with the server and fork it with base_env plus the
 * server's client variables. */
static int start_rank(int r, const char *nspace, const char *exe, char **argv,
                      char *const *base_env, const sigstate_t *ss)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, nspace, (pmix_rank_t)r);
    if (register_client(&proc) != 0) {
        return -1;
    }
    char **env = env_dup(base_env);
    if (env == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory building the environment of rank %d", r);
        return -1;
    }
    pmix_status_t rc = PMIx_server_setup_fork(&proc, &env);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_setup_fork(rank %d) failed: %s", r,
               PMIx_Error_string(rc));
        env_free(env);
        return -1;
    }
    pthread_mutex_lock(&job.lock);
    pid_t pid = spawn(exe, argv, env, ss, SIGKILL);
    if (pid > 0) {
        job.children[r].pid = pid;
        job.children[r].alive = 1;
    }
    pthread_mutex_unlock(&job.lock);
    int err = errno;
    env_free(env);
    if (pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for rank %d failed: %s", r, strerror(err));
        return -1;
    }
    return 0;
}

static int launch_embedded(int np, char **argv, const cp_launch_opts_t *opts)
{
    int status = 1;
    char dir[PATH_MAX], shmdir[PATH_MAX], exe[PATH_MAX], host[256],
        nspace[PMIX_MAX_NSLEN + 1];
    double t0 = now_s();

    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    host[sizeof(host) - 1] = '\0';
    snprintf(nspace, sizeof(nspace), "collprof.%ld", (long)getpid());
    self_exe(exe, sizeof(exe));

    if (make_tmp_dir(dir, sizeof(dir)) != 0) {
        return 1;
    }
    /* optional: Open MPI's shared-memory segments (tmpfs) */
    int have_shmdir = make_private_dir("/dev/shm", shmdir, sizeof(shmdir)) == 0;
    char **base_env = env_clone();
    if (base_env == NULL || env_set(&base_env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
        env_add_ompi(&base_env, dir, have_shmdir ? shmdir : NULL, np > online_cpus()) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory building the ranks' environment");
        goto free_env;
    }
    job.children = calloc((size_t)np, sizeof(*job.children));
    if (job.children == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory");
        goto free_env;
    }
    job.nchildren = np;
    job.aborted = 0;
    job.nconnected = 0;
    job.fence_upcalls = 0;

    sigstate_t ss;
    signals_take(&ss);
    if (server_start(dir) != 0) {
        goto restore_signals;
    }
    if (register_nspace(nspace, np, host) != 0) {
        goto finalize_server;
    }
    int started = 0;
    for (int r = 0; r < np; r++) {
        if (start_rank(r, nspace, exe, argv, base_env, &ss) != 0) {
            break;
        }
        started++;
    }
    if (started < np) {
        signal_all(SIGKILL);
    }
    cp_log(CP_LOG_INFO, "started %d ranks (namespace %s) in %.3f s", started, nspace,
           now_s() - t0);
    status = supervise(opts, 0);
    if (started < np && status == 0) {
        status = 1;
    }
    cp_log(CP_LOG_DEBUG, "job finished with status %d after %.3f s (%d fence upcalls)", status,
           now_s() - t0, job.fence_upcalls);
    deregister_nspace(nspace);

finalize_server:
    PMIx_server_finalize();
restore_signals:
    signals_restore(&ss);
    free(job.children);
    job.children = NULL;
    job.nchildren = 0;
free_env:
    env_free(base_env);
    if (have_shmdir) {
        remove_tree(shmdir);
    }
    remove_tree(dir);
    return status;
}

/* ---------------------------------------------------------------------- */
/* MPIRUN mode. */

static int mpirun_path(char *out, size_t size)
{
    if (CP_MPIRUN_PATH[0] != '\0' && access(CP_MPIRUN_PATH, X_OK) == 0) {
        snprintf(out, size, "%s", CP_MPIRUN_PATH);
        return 0;
    }
    return find_in_path("mpirun", out, size);
}

static int launch_mpirun(int np, char **argv, const cp_launch_opts_t *opts)
{
    char mpirun[PATH_MAX], exe[PATH_MAX], npstr[16];
    if (mpirun_path(mpirun, sizeof(mpirun)) != 0) {
        cp_log(CP_LOG_ERROR, "mpirun launch requested but no mpirun was found (%s%sPATH)",
               CP_MPIRUN_PATH[0] != '\0' ? CP_MPIRUN_PATH : "",
               CP_MPIRUN_PATH[0] != '\0' ? " or " : "");
        return 1;
    }
    self_exe(exe, sizeof(exe));
    snprintf(npstr, sizeof(npstr), "%d", np);

    int argc = 0;
    while (argv[argc] != NULL) {
        argc++;
    }
    /* fixed options + exe + argv[1..] + NULL */
    char **margv = calloc((size_t)argc + 32, sizeof(*margv));
    char **env = env_clone();
    int status = 1;
    if (margv == NULL || env == NULL || env_set(&env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
        env_set(&env, "COLLPROF_LAUNCHER", "mpirun", 1) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory");
        goto free_args;
    }
    int k = 0;
    margv[k++] = mpirun;
    margv[k++] = "-np";
    margv[k++] = npstr;
    margv[k++] = "--oversubscribe";
    margv[k++] = "--bind-to";
    margv[k++] = "none";
    if (geteuid() == 0) {
        margv[k++] = "--allow-run-as-root";
    }
    margv[k++] = "--mca";
    margv[k++] = "oob_tcp_if_include";
    margv[k++] = "lo";
    margv[k++] = "--mca";
    margv[k++] = "btl_tcp_if_include";
    margv[k++] = "lo";
    margv[k++] = "-x";
    margv[k++] = "COLLPROF_SELF_LAUNCHED";
    margv[k++] = "-x";
    margv[k++] = "COLLPROF_LAUNCHER";
    margv[k++] = exe;
    for (int i = 1; i < argc; i++) {
        margv[k++] = argv[i];
    }
    margv[k] = NULL;

    job.children = calloc(1, sizeof(*job.children));
    if (job.children == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory");
        goto free_args;
    }
    job.nchildren = 1;
    job.aborted = 0;

    sigstate_t ss;
    signals_take(&ss);
    pthread_mutex_lock(&job.lock);
    /* mpirun cleans up its ranks on SIGTERM */
    pid_t pid = spawn(mpirun, margv, env, &ss, SIGTERM);
    int err = errno;
    if (pid > 0) {
        job.children[0].pid = pid;
        job.children[0].alive = 1;
    }
    pthread_mutex_unlock(&job.lock);
    if (pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for mpirun failed: %s", strerror(err));
    } else {
        cp_log(CP_LOG_INFO, "running %d ranks under %s", np, mpirun);
        status = supervise(opts, 1);
    }
    signals_restore(&ss);
    free(job.children);
    job.children = NULL;
    job.nchildren = 0;

free_args:
    env_free(env);
    free(margv);
    return status;
}

/* ---------------------------------------------------------------------- */

int cp_launch_self(int np, char **argv, const cp_launch_opts_t *opts)
{
    static const cp_launch_opts_t defaults = {.mode = CP_LAUNCH_AUTO};
    if (opts == NULL) {
        opts = &defaults;
    }
    if (np < 1 || argv == NULL || argv[0] == NULL) {
        cp_log(CP_LOG_ERROR, "self-launch needs at least one rank and a command line");
        return 1;
    }
    /* AUTO: the embedded server serves Open MPI too (see env_add_ompi), so
     * need_mpi does not call for mpirun. */
    if (opts->mode == CP_LAUNCH_MPIRUN) {
        return launch_mpirun(np, argv, opts);
    }
    return launch_embedded(np, argv, opts);
}
