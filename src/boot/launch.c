#include "config.h"

/*
 * Self-launch: collprof --np N starts N local ranks of itself.
 *
 * Embedded mode: a helper process runs a PMIx server (libpmix server API)
 * and registers one namespace with the job-level and per-proc data that
 * PMIx clients and Open MPI's direct-launch path (ess/pmi) read; for each
 * rank it sends the client environment (PMIx_server_setup_fork) back to
 * the launcher, which forks and execs /proc/self/exe.  The server lives in
 * its own process because libpmix 4.2.2's server crashes or deadlocks when
 * several clients die at once inside a pending fence (an abort, a timeout,
 * Ctrl-C): the launcher must survive that to report the job's status and
 * clean up.  The launcher itself never calls PMIx and has a single thread.
 *
 * MPIRUN mode re-execs the same command line under mpirun instead.
 *
 * Both modes share the supervision loop: reap children, forward SIGINT,
 * SIGTERM and SIGHUP, kill the survivors when a rank fails, and honour the
 * job timeout.
 */

#include "boot/boot.h"
#include "collprof/status.h"
#include "core/log.h"

#include <pmix.h>
#include <pmix_server.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
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
/* After a forwarded SIGINT/SIGTERM/SIGHUP or a timeout, SIGKILL follows after this. */
#define SIGNAL_GRACE_S 3.0
/* How long the server process may take to finalize after a clean job. */
#define SERVER_EXIT_S 2.0
/* How long the server process may take to hand out every rank's environment. */
#define SERVER_START_S 30.0
/* Exit status reported when the job ran past opts->timeout_s (as timeout(1)). */
#define TIMEOUT_STATUS 124
/* Longest abort message passed on. */
#define ABORT_MSG_MAX 1024

/* Frames from the server process to the launcher. */
enum { MSG_ENV = 1, MSG_CONNECTED, MSG_FINALIZED, MSG_ABORT };

typedef struct msg_hdr {
    int32_t type;
    int32_t rank;
    int32_t status;
    uint32_t len; /* payload bytes that follow */
} msg_hdr_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
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
        if (env_is_stale_pmix(environ[i]) || (under_mpirun && env_is_stale_mpirun(environ[i]))) {
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

/* Set a "NAME=value" entry, replacing any NAME. */
static int env_put(char ***envp, const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (eq == NULL || eq == entry) {
        return 0; /* not a variable: ignore */
    }
    char *name = strndup(entry, (size_t)(eq - entry));
    if (name == NULL) {
        return -1;
    }
    int rc = env_set(envp, name, eq + 1, 1);
    free(name);
    return rc;
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
        cp_log(CP_LOG_ERROR, "cannot create a private directory in %s: %s", base, strerror(errno));
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
/* Job data for the namespace. */

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
    if (info_add(list, PMIX_UNIV_SIZE, &unp, PMIX_UINT32) ||
        info_add(list, PMIX_JOB_SIZE, &unp, PMIX_UINT32) ||
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

/* ---------------------------------------------------------------------- */
/* The server process.  Module callbacks run on PMIx's progress thread. */

typedef struct server {
    int evfd; /* frames to the launcher */
    int np;
    pthread_mutex_t wlock; /* one frame at a time: the main and progress threads both send */
} server_t;

static server_t server = {.evfd = -1, .wlock = PTHREAD_MUTEX_INITIALIZER};

/* Completion of a non-blocking PMIx server call. */
typedef struct op_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    pmix_status_t status;
} op_wait_t;

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

static void server_send(int type, int rank, int status, const void *payload, size_t len)
{
    msg_hdr_t h = {.type = type, .rank = rank, .status = status, .len = (uint32_t)len};
    pthread_mutex_lock(&server.wlock);
    /* a failed write means the launcher is gone: nothing left to tell */
    if (write_all(server.evfd, &h, sizeof(h)) == 0 && len > 0) {
        (void)write_all(server.evfd, payload, len);
    }
    pthread_mutex_unlock(&server.wlock);
}

static int rank_of(const pmix_proc_t *proc)
{
    if (proc == NULL || proc->rank >= (pmix_rank_t)server.np) {
        return -1;
    }
    return (int)proc->rank;
}

static pmix_status_t srv_client_connected(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    server_send(MSG_CONNECTED, rank_of(proc), 0, NULL, 0);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

/* Runs before the client's PMIx_Finalize returns, so the launcher hears of
 * it before the client can exit. */
static pmix_status_t srv_client_finalized(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    server_send(MSG_FINALIZED, rank_of(proc), 0, NULL, 0);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

/* Whatever subset the client names, the job cannot go on without it: the
 * launcher kills every other rank and reports the status; the caller is
 * released and exits by itself. */
static pmix_status_t srv_abort(const pmix_proc_t *proc, void *server_object, int status,
                               const char msg[], pmix_proc_t procs[], size_t nprocs,
                               pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    (void)procs;
    (void)nprocs;
    size_t len = msg != NULL ? strnlen(msg, ABORT_MSG_MAX) : 0;
    server_send(MSG_ABORT, rank_of(proc), status, msg, len);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static void release_copy(void *cbdata)
{
    free(cbdata);
}

/* Every participant is local, so the local contribution is the whole
 * collective: hand it straight back.  (libpmix 4.2.2 completes all-local
 * fences itself and never calls this; other versions may.) */
static pmix_status_t srv_fence_nb(const pmix_proc_t procs[], size_t nprocs,
                                  const pmix_info_t info[], size_t ninfo, char *data, size_t ndata,
                                  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void)procs;
    (void)nprocs;
    (void)info;
    (void)ninfo;
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

/* Register rank r and send its client environment to the launcher. */
static int register_rank(const char *nspace, int r)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, nspace, (pmix_rank_t)r);
    op_wait_t w;
    op_wait_init(&w);
    pmix_status_t rc =
        PMIx_server_register_client(&proc, geteuid(), getegid(), NULL, op_done_cb, &w);
    rc = op_wait_result(&w, rc);
    op_wait_destroy(&w);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_register_client(rank %d) failed: %s", r,
               PMIx_Error_string(rc));
        return -1;
    }
    char **env = calloc(1, sizeof(*env));
    if (env == NULL) {
        return -1;
    }
    rc = PMIx_server_setup_fork(&proc, &env);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_server_setup_fork(rank %d) failed: %s", r,
               PMIx_Error_string(rc));
        env_free(env);
        return -1;
    }
    /* payload: the "NAME=value" strings, each with its NUL */
    size_t len = 0;
    for (char **e = env; *e != NULL; e++) {
        len += strlen(*e) + 1;
    }
    char *payload = malloc(len + 1);
    if (payload == NULL) {
        env_free(env);
        return -1;
    }
    size_t off = 0;
    for (char **e = env; *e != NULL; e++) {
        size_t n = strlen(*e) + 1;
        memcpy(payload + off, *e, n);
        off += n;
    }
    server_send(MSG_ENV, r, 0, payload, len);
    free(payload);
    env_free(env);
    return 0;
}

/* Our server must not see the variables of an enclosing PMIx job. */
static void scrub_own_env(void)
{
    for (;;) {
        char name[256] = "";
        for (char **e = environ; *e != NULL; e++) {
            if (env_is_stale_pmix(*e)) {
                size_t n = strcspn(*e, "=");
                if (n < sizeof(name)) {
                    memcpy(name, *e, n);
                    name[n] = '\0';
                    break;
                }
            }
        }
        if (name[0] == '\0' || unsetenv(name) != 0) {
            return;
        }
    }
}

/*
 * The server process: serve the namespace until the launcher closes cmdfd
 * (or dies).  Ignores the signals the launcher forwards to the ranks: ranks
 * that shut down in an orderly way may still need it.
 */
static void server_main(pid_t launcher, int np, const char *nspace, const char *host,
                        const char *dir, int evfd, int cmdfd) __attribute__((noreturn));
static void server_main(pid_t launcher, int np, const char *nspace, const char *host,
                        const char *dir, int evfd, int cmdfd)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGPIPE, &sa, NULL); /* writes to dead clients */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) {
        _exit(1);
    }
    scrub_own_env();

    server.evfd = evfd;
    server.np = np;
    if (server_start(dir) != 0) {
        _exit(1);
    }
    if (register_nspace(nspace, np, host) != 0) {
        PMIx_server_finalize();
        _exit(1);
    }
    for (int r = 0; r < np; r++) {
        if (register_rank(nspace, r) != 0) {
            PMIx_server_finalize();
            _exit(1);
        }
    }
    for (;;) {
        char c;
        ssize_t n = read(cmdfd, &c, 1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            break; /* EOF: the job is over */
        }
    }
    PMIx_server_finalize();
    _exit(0);
}

/* ---------------------------------------------------------------------- */
/* The launcher: fork/exec and supervision (one thread, no PMIx). */

/* One supervised child: a rank (embedded mode) or mpirun (MPIRUN mode). */
typedef struct child {
    pid_t pid; /* 0 when never started */
    int alive;
    int connected; /* PMIx_Init reached the server */
    int finalized; /* PMIx_Finalize reached the server */
    int status;    /* exit status as a shell reports it, once dead */
} child_t;

typedef struct job {
    const cp_launch_opts_t *opts;
    int mpirun; /* the one child is mpirun */
    int np;
    child_t *children;
    int nstarted; /* ranks handled so far (started or skipped) */
    int nalive;
    int stop_starting;
    /* what the ranks run */
    const char *exe;
    char **argv;
    char **base_env;
    /* launcher plumbing */
    sigset_t oldmask;
    struct sigaction oldchld;
    int sigfd;
    /* server process */
    pid_t server_pid; /* 0 when none or reaped */
    int evfd;         /* frames from it, -1 once closed */
    int cmdfd;        /* closing it ends the server, -1 once closed */
    /* outcome */
    int failed;
    int result;
    int aborted;
    int abort_rank;
    int abort_status;
    int timed_out;
    int warned_nofin;
    int signalled; /* the last signal forwarded */
    int nconnected;
    pid_t first_dead; /* sender of the first SIGCHLD since the last reap, 0: none */
    double t_start;
    double kill_deadline;
    double job_deadline;
} job_t;

#define NEVER 1e300

/* Block the signals the loop takes through a signalfd. */
static int signals_take(job_t *job)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* waitpid needs SIGCHLD not to be ignored */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, &job->oldchld);
    sigprocmask(SIG_BLOCK, &set, &job->oldmask);
    job->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (job->sigfd < 0) {
        cp_log(CP_LOG_ERROR, "signalfd: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &job->oldmask, NULL);
        sigaction(SIGCHLD, &job->oldchld, NULL);
        return -1;
    }
    return 0;
}

static void signals_restore(job_t *job)
{
    close(job->sigfd);
    job->sigfd = -1;
    /* drop a pending SIGCHLD so restoring the mask does not deliver it */
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, SIGCHLD);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&one, NULL, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &job->oldmask, NULL);
    sigaction(SIGCHLD, &job->oldchld, NULL);
}

/*
 * Fork and exec (async-signal-safe calls only in the child).  The child
 * gets default signal handling, the caller's original mask, and dies with
 * deathsig when the launcher dies.  Returns the pid or -1.
 */
static pid_t spawn(const char *path, char *const argv[], char *const envp[], const sigset_t *mask,
                   int deathsig)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGINT, &dfl, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGHUP, &dfl, NULL);
    sigprocmask(SIG_SETMASK, mask, NULL);
    prctl(PR_SET_PDEATHSIG, deathsig);
    if (getppid() != parent) {
        _exit(127);
    }
    execve(path, argv, envp);
    static const char msg[] = "collprof: error: exec failed for a launched process\n";
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

/* Send sig to every live child but spare (-1: none spared). */
static void signal_children(job_t *job, int sig, int spare)
{
    for (int i = 0; i < job->nstarted; i++) {
        if (i != spare && job->children[i].alive) {
            kill(job->children[i].pid, sig);
        }
    }
}

/* Send sig to the children of pid (mpirun's ranks), found through /proc. */
static void signal_grandchildren(pid_t parent, int sig)
{
    DIR *proc = opendir("/proc");
    if (proc == NULL) {
        return;
    }
    struct dirent *de;
    while ((de = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (pid <= 0 || *end != '\0') {
            continue;
        }
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
        const char *rp = strrchr(buf, ')');
        char state;
        long ppid;
        if (rp != NULL && sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent) {
            kill((pid_t)pid, sig);
        }
    }
    closedir(proc);
}

static void arm_kill(job_t *job, double in_s)
{
    double t = now_s() + in_s;
    if (job->kill_deadline > t) {
        job->kill_deadline = t;
    }
}

static const char *child_name(const job_t *job, int i, char *buf, size_t size)
{
    if (job->mpirun) {
        snprintf(buf, size, "mpirun");
    } else {
        snprintf(buf, size, "rank %d", i);
    }
    return buf;
}

/* Start rank r with the base environment plus the server's variables. */
static void start_rank(job_t *job, int r, const char *vars, size_t len)
{
    char **env = env_dup(job->base_env);
    int bad = env == NULL;
    for (size_t off = 0; !bad && off < len; off += strlen(vars + off) + 1) {
        bad = env_put(&env, vars + off) != 0;
    }
    if (bad) {
        cp_log(CP_LOG_ERROR, "out of memory building the environment of rank %d", r);
    } else {
        pid_t pid = spawn(job->exe, job->argv, env, &job->oldmask, SIGKILL);
        if (pid > 0) {
            job->children[r].pid = pid;
            job->children[r].alive = 1;
            job->nalive++;
        } else {
            cp_log(CP_LOG_ERROR, "fork for rank %d failed: %s", r, strerror(errno));
            bad = 1;
        }
    }
    env_free(env);
    if (bad && !job->failed) {
        job->failed = 1;
        job->result = 1;
        job->stop_starting = 1;
        arm_kill(job, 0);
    }
}

static void on_abort(job_t *job, int rank, int status, const char *msg)
{
    if (job->aborted) {
        return;
    }
    job->aborted = 1;
    job->abort_rank = rank;
    job->abort_status = status;
    job->stop_starting = 1;
    cp_log(CP_LOG_ERROR, "rank %d called abort with status %d%s%s", rank, status,
           msg[0] != '\0' ? ": " : "", msg);
    signal_children(job, SIGKILL, rank);
    arm_kill(job, GRACE_S);
}

/* Read and act on one frame; -1 when the server process has gone. */
static int handle_frame(job_t *job)
{
    msg_hdr_t h;
    if (read_all(job->evfd, &h, sizeof(h)) != 0 || h.len > (1u << 24)) {
        return -1;
    }
    char *payload = malloc((size_t)h.len + 1);
    if (payload == NULL) {
        return -1;
    }
    if (read_all(job->evfd, payload, h.len) != 0) {
        free(payload);
        return -1;
    }
    payload[h.len] = '\0';
    int r = h.rank;
    int valid = r >= 0 && r < job->np;
    switch (h.type) {
    case MSG_ENV:
        if (r == job->nstarted) {
            if (!job->stop_starting) {
                start_rank(job, r, payload, h.len);
            }
            job->nstarted++;
        }
        break;
    case MSG_CONNECTED:
        if (valid && !job->children[r].connected) {
            job->children[r].connected = 1;
            if (++job->nconnected == job->np) {
                cp_log(CP_LOG_INFO, "all %d ranks connected %.3f s after launch", job->np,
                       now_s() - job->t_start);
            }
        }
        break;
    case MSG_FINALIZED:
        if (valid) {
            job->children[r].finalized = 1;
        }
        break;
    case MSG_ABORT: on_abort(job, r, h.status, payload); break;
    default: break;
    }
    free(payload);
    return 0;
}

/* Act on every frame already waiting. */
static void drain_frames(job_t *job)
{
    while (job->evfd >= 0) {
        struct pollfd p = {.fd = job->evfd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
            return;
        }
        if (handle_frame(job) != 0) {
            close(job->evfd);
            job->evfd = -1;
        }
    }
}

static void drain_signals(job_t *job)
{
    struct signalfd_siginfo si;
    while (read(job->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            /* SIGCHLDs that arrive together coalesce, keeping the first
             * sender: the child that died first */
            if (job->first_dead == 0) {
                job->first_dead = (pid_t)si.ssi_pid;
            }
            continue; /* reaped below */
        }
        cp_log(CP_LOG_WARN, "caught signal %d (%s); forwarding it to the %s", sig, strsignal(sig),
               job->mpirun ? "mpirun process" : "ranks");
        job->stop_starting = 1;
        job->signalled = sig;
        signal_children(job, sig, -1);
        arm_kill(job, SIGNAL_GRACE_S);
    }
}

/* Log and record the job's first failure. */
static void first_failure(job_t *job, int i, int wstatus)
{
    char name[32];
    child_t *c = &job->children[i];
    job->failed = 1;
    job->result = c->status;
    job->stop_starting = 1;
    if (WIFSIGNALED(wstatus)) {
        cp_log(CP_LOG_ERROR, "%s (pid %d) was killed by signal %d (%s)",
               child_name(job, i, name, sizeof(name)), (int)c->pid, WTERMSIG(wstatus),
               strsignal(WTERMSIG(wstatus)));
    } else if (!(job->aborted && job->abort_rank == i)) {
        cp_log(CP_LOG_ERROR, "%s (pid %d) exited with status %d",
               child_name(job, i, name, sizeof(name)), (int)c->pid, c->status);
    }
    arm_kill(job, GRACE_S);
}

static void reap_children(job_t *job)
{
    /* Failures seen in one pass died within one wake-up of each other: the
     * first is the one whose SIGCHLD came first, else the lowest rank. */
    int first = -1, first_wstatus = 0, nfailed = 0;
    for (int i = 0; i < job->nstarted; i++) {
        child_t *c = &job->children[i];
        int wstatus;
        if (!c->alive || waitpid(c->pid, &wstatus, WNOHANG) != c->pid) {
            continue;
        }
        c->alive = 0;
        c->status = decode_status(wstatus);
        job->nalive--;
        if (c->status != 0) {
            nfailed++;
            if (!job->failed && (first < 0 || c->pid == job->first_dead)) {
                first = i;
                first_wstatus = wstatus;
            }
        } else if (c->connected && !c->finalized && !job->mpirun) {
            /* its peers may be waiting for it in a collective */
            if (!job->warned_nofin) {
                job->warned_nofin = 1;
                cp_log(CP_LOG_WARN, "rank %d exited without calling PMIx_Finalize", i);
            }
            arm_kill(job, GRACE_S);
        } else if (job->failed) {
            arm_kill(job, GRACE_SHORT_S);
        }
    }
    job->first_dead = 0;
    if (nfailed > 0) {
        if (first >= 0) {
            first_failure(job, first, first_wstatus);
        }
        if (nfailed > 1 || first < 0) {
            arm_kill(job, GRACE_SHORT_S);
        }
    }
    if (job->server_pid > 0) {
        int wstatus;
        if (waitpid(job->server_pid, &wstatus, WNOHANG) == job->server_pid) {
            job->server_pid = 0;
            /* a failure to start shows as EOF on evfd; this is a crash mid-job */
            if (job->nstarted == job->np && !job->failed && !job->aborted && job->nalive > 0) {
                cp_log(CP_LOG_WARN, "the embedded PMIx server exited early (status %d)",
                       decode_status(wstatus));
            }
        }
    }
}

/* Poll timeout in ms until the next deadline (capped: also a safety net). */
static int next_timeout_ms(const job_t *job)
{
    double wake = job->kill_deadline < job->job_deadline ? job->kill_deadline : job->job_deadline;
    double wait = wake - now_s();
    if (wait > 1.0) {
        wait = 1.0;
    }
    if (wait < 0) {
        wait = 0;
    }
    return (int)(wait * 1000.0) + 1;
}

/* Run until every started child is gone; returns the job's exit status. */
static int supervise(job_t *job)
{
    const double start = now_s();
    job->kill_deadline = NEVER;
    job->job_deadline = job->opts->timeout_s > 0 ? start + job->opts->timeout_s : NEVER;

    while (job->nalive > 0 || (job->nstarted < job->np && !job->stop_starting)) {
        struct pollfd pfd[2] = {{.fd = job->sigfd, .events = POLLIN},
                                {.fd = job->evfd, .events = POLLIN}};
        int rc = poll(pfd, job->evfd >= 0 ? 2 : 1, next_timeout_ms(job));
        if (rc < 0 && errno != EINTR) {
            cp_log(CP_LOG_ERROR, "poll: %s", strerror(errno));
            sleep(1);
        }
        /* frames first: a rank's finalize notice precedes its exit */
        drain_frames(job);
        drain_signals(job);
        reap_children(job);
        if (job->evfd < 0 && job->nstarted < job->np && !job->stop_starting) {
            /* the server process quit before handing out every rank */
            cp_log(CP_LOG_ERROR, "the embedded PMIx server failed to start the job");
            job->failed = 1;
            job->result = 1;
            job->stop_starting = 1;
            arm_kill(job, 0);
        }

        double t = now_s();
        if (job->nstarted < job->np && !job->stop_starting && t - start > SERVER_START_S) {
            cp_log(CP_LOG_ERROR, "the embedded PMIx server did not start the job within %.0f s",
                   SERVER_START_S);
            job->failed = 1;
            job->result = 1;
            job->stop_starting = 1;
            arm_kill(job, 0);
        }
        if (t >= job->job_deadline) {
            cp_log(CP_LOG_ERROR, "job timed out after %.1f s; terminating it",
                   job->opts->timeout_s);
            job->timed_out = 1;
            job->stop_starting = 1;
            job->job_deadline = NEVER;
            signal_children(job, SIGTERM, -1);
            arm_kill(job, SIGNAL_GRACE_S);
        }
        if (t >= job->kill_deadline && job->nalive > 0) {
            cp_log(CP_LOG_WARN, "killing %d remaining %s", job->nalive,
                   job->mpirun        ? "mpirun process"
                   : job->nalive == 1 ? "rank"
                                      : "ranks");
            if (job->mpirun && job->children[0].alive) {
                /* a wedged mpirun would leave its ranks behind */
                signal_grandchildren(job->children[0].pid, SIGKILL);
            }
            signal_children(job, SIGKILL, -1);
            job->kill_deadline = t + 1.0; /* repeat until they are gone */
        }
    }

    if (job->timed_out) {
        return TIMEOUT_STATUS;
    }
    if (job->aborted) {
        /* what the process exit status can carry; an abort is a failure */
        return job->abort_status > 0 && job->abort_status < 256 ? job->abort_status : 1;
    }
    if (job->result == 0 && job->nstarted < job->np) {
        return job->signalled ? 128 + job->signalled : 1;
    }
    return job->result;
}

/* End the server process: let it finalize after a clean job, else kill it
 * (after abnormal exits it may be wedged in libpmix). */
static void server_stop(job_t *job, int clean)
{
    if (job->cmdfd >= 0) {
        close(job->cmdfd);
        job->cmdfd = -1;
    }
    if (job->server_pid <= 0) {
        return;
    }
    if (clean) {
        double until = now_s() + SERVER_EXIT_S;
        while (now_s() < until) {
            if (waitpid(job->server_pid, NULL, WNOHANG) == job->server_pid) {
                job->server_pid = 0;
                return;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        cp_log(CP_LOG_DEBUG, "the embedded PMIx server did not exit; killing it");
    }
    kill(job->server_pid, SIGKILL);
    waitpid(job->server_pid, NULL, 0);
    job->server_pid = 0;
}

static int launch_embedded(int np, char **argv, const cp_launch_opts_t *opts)
{
    int status = 1;
    char dir[PATH_MAX], shmdir[PATH_MAX], exe[PATH_MAX], host[256], nspace[PMIX_MAX_NSLEN + 1];
    double t0 = now_s();
    int evpipe[2] = {-1, -1}, cmdpipe[2] = {-1, -1};
    job_t job;
    memset(&job, 0, sizeof(job));
    job.opts = opts;
    job.t_start = t0;
    job.np = np;
    job.argv = argv;
    job.exe = exe;
    job.evfd = -1;
    job.cmdfd = -1;
    job.sigfd = -1;

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
    job.base_env = env_clone();
    if (job.base_env == NULL || env_set(&job.base_env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
        env_add_ompi(&job.base_env, dir, have_shmdir ? shmdir : NULL, np > online_cpus()) != 0) {
        cp_log(CP_LOG_ERROR, "out of memory building the ranks' environment");
        goto free_env;
    }
    job.children = calloc((size_t)np, sizeof(*job.children));
    if (job.children == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory");
        goto free_env;
    }
    if (pipe2(evpipe, O_CLOEXEC) != 0 || pipe2(cmdpipe, O_CLOEXEC) != 0) {
        cp_log(CP_LOG_ERROR, "pipe: %s", strerror(errno));
        goto close_pipes;
    }
    if (signals_take(&job) != 0) {
        goto close_pipes;
    }
    fflush(NULL); /* the server process must not flush our buffers again */
    pid_t launcher = getpid();
    job.server_pid = fork();
    if (job.server_pid == 0) {
        close(evpipe[0]);
        close(cmdpipe[1]);
        close(job.sigfd);
        server_main(launcher, np, nspace, host, dir, evpipe[1], cmdpipe[0]);
    }
    if (job.server_pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for the PMIx server failed: %s", strerror(errno));
        job.server_pid = 0;
        goto restore_signals;
    }
    /* only the server may hold the write end, so that its death reads as EOF */
    close(evpipe[1]);
    close(cmdpipe[0]);
    job.evfd = evpipe[0];
    job.cmdfd = cmdpipe[1];
    evpipe[0] = evpipe[1] = cmdpipe[0] = cmdpipe[1] = -1;

    status = supervise(&job);
    cp_log(CP_LOG_INFO, "%d ranks (namespace %s) finished with status %d after %.3f s",
           job.nstarted, nspace, status, now_s() - t0);
    server_stop(&job, status == 0 && !job.failed);

restore_signals:
    signals_restore(&job);
close_pipes:
    for (int i = 0; i < 2; i++) {
        if (evpipe[i] >= 0) {
            close(evpipe[i]);
        }
        if (cmdpipe[i] >= 0) {
            close(cmdpipe[i]);
        }
    }
    if (job.evfd >= 0) {
        close(job.evfd);
    }
    if (job.cmdfd >= 0) {
        close(job.cmdfd);
    }
    free(job.children);
free_env:
    env_free(job.base_env);
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
    int status = 1;
    job_t job;
    memset(&job, 0, sizeof(job));
    job.opts = opts;
    job.mpirun = 1;
    job.np = 1;
    job.evfd = -1;
    job.cmdfd = -1;
    job.sigfd = -1;
    /* fixed options + exe + argv[1..] + NULL */
    char **margv = calloc((size_t)argc + 32, sizeof(*margv));
    char **env = env_clone();
    job.children = calloc(1, sizeof(*job.children));
    if (margv == NULL || env == NULL || job.children == NULL ||
        env_set(&env, "COLLPROF_SELF_LAUNCHED", "1", 1) != 0 ||
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

    if (signals_take(&job) != 0) {
        goto free_args;
    }
    /* mpirun cleans up its ranks on SIGTERM */
    pid_t pid = spawn(mpirun, margv, env, &job.oldmask, SIGTERM);
    if (pid < 0) {
        cp_log(CP_LOG_ERROR, "fork for mpirun failed: %s", strerror(errno));
    } else {
        job.children[0].pid = pid;
        job.children[0].alive = 1;
        job.nalive = 1;
        job.nstarted = 1;
        cp_log(CP_LOG_INFO, "running %d ranks under %s", np, mpirun);
        status = supervise(&job);
    }
    signals_restore(&job);

free_args:
    free(job.children);
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
    /* AUTO: the embedded server serves Open MPI too (see env_add_ompi) */
    if (opts->mode == CP_LAUNCH_MPIRUN) {
        return launch_mpirun(np, argv, opts);
    }
    return launch_embedded(np, argv, opts);
}
