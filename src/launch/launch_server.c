#include "config.h"

/*
 * Self-launch: the embedded PMIx server.  It runs in its own process (see
 * launch.c for why): it registers one namespace with the job-level and
 * per-proc data that PMIx clients and Open MPI's direct-launch path
 * (ess/pmi) read, then for each rank registers the client and sends its
 * environment (PMIx_server_setup_fork) to the launcher in a frame.  Module
 * callbacks run on PMIx's progress thread and report connects, finalizes
 * and aborts to the launcher the same way.
 */

#include "launch/launch_int.h"
#include "base/log.h"

#include <pmix.h>
#include <pmix_server.h>

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* Longest host name libpmix's node regex takes safely (see build_job_info). */
#define CP_PMIX_MAP_HOST_MAX 48

/* Longest abort message passed on. */
#define ABORT_MSG_MAX 1024

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

/* "0,1,...,np-1": the local peers and the proc map of our one node. */
static char *rank_list(int np)
{
    size_t cap = (size_t)np * 12 + 1;
    char *peers = malloc(cap);
    if (peers == NULL) {
        return NULL;
    }
    size_t off = 0;
    for (int r = 0; r < np; r++) {
        off += (size_t)snprintf(peers + off, cap - off, "%s%d", r ? "," : "", r);
    }
    return peers;
}

/* The job-level keys of our one-node job. */
static int add_job_keys(void *list, const char *nspace, int np, const char *host, const char *regex,
                        const char *ppn, const char *peers)
{
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
        return -1;
    }
    return 0;
}

/* Rank r's own keys, as one PMIX_PROC_DATA entry of list. */
static int add_proc_data(void *list, int r, const char *host)
{
    void *plist = PMIx_Info_list_start();
    if (plist == NULL) {
        return -1;
    }
    pmix_rank_t prank = (pmix_rank_t)r;
    uint16_t lrank = (uint16_t)r;
    uint32_t zero32 = 0;
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
        bad = PMIx_Info_list_convert(plist, &darray) != PMIX_SUCCESS;
    }
    PMIx_Info_list_release(plist);
    if (bad) {
        return -1;
    }
    bad = info_add(list, PMIX_PROC_DATA, &darray, PMIX_DATA_ARRAY);
    PMIX_DATA_ARRAY_DESTRUCT(&darray);
    return bad ? -1 : 0;
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
    /* libpmix 4.2.2 derives the local peers and local size from the proc
     * map and counts its comma-separated entries without expanding ranges
     * ("0-3" would make a local size of 1): list every rank. */
    peers = rank_list(np);
    if (peers == NULL) {
        goto free_list;
    }
    /* libpmix 4.2.2's node regex overflows a stack buffer on host names of 57
     * characters and more (a long FQDN, a container's name), and refuses
     * some characters (the kernel takes any): every rank is on this one node,
     * so the map names it by the name's first characters, others as '-'; the
     * ranks still get the whole name (PMIX_HOSTNAME) */
    char mapname[CP_PMIX_MAP_HOST_MAX + 1];
    snprintf(mapname, sizeof(mapname), "%s", host);
    for (char *p = mapname; *p != '\0'; p++) {
        if (!isalnum((unsigned char)*p) && *p != '.' && *p != '-' && *p != '_') {
            *p = '-';
        }
    }
    pmix_status_t rc = PMIx_generate_regex(mapname, &regex);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_generate_ppn(peers, &ppn);
    }
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx node/proc map generation failed: %s", PMIx_Error_string(rc));
        goto free_strings;
    }
    if (add_job_keys(list, nspace, np, host, regex, ppn, peers) != 0) {
        goto free_strings;
    }
    for (int r = 0; r < np; r++) {
        if (add_proc_data(list, r, host) != 0) {
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
    cp_launch_msg_t h = {.type = type, .rank = rank, .status = status, .len = (uint32_t)len};
    pthread_mutex_lock(&server.wlock);
    /* a failed write means the launcher is gone: nothing left to tell */
    if (cp_launch_write_all(server.evfd, &h, sizeof(h)) == 0 && len > 0) {
        (void)cp_launch_write_all(server.evfd, payload, len);
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

/* Tell the launcher of a client's event and release the client. */
static pmix_status_t notify(int type, const pmix_proc_t *proc, pmix_op_cbfunc_t cbfunc,
                            void *cbdata)
{
    server_send(type, rank_of(proc), 0, NULL, 0);
    if (cbfunc != NULL) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t srv_client_connected(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    return notify(CP_LAUNCH_MSG_CONNECTED, proc, cbfunc, cbdata);
}

/* Runs before the client's PMIx_Finalize returns, so the launcher hears of
 * it before the client can exit. */
static pmix_status_t srv_client_finalized(const pmix_proc_t *proc, void *server_object,
                                          pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void)server_object;
    return notify(CP_LAUNCH_MSG_FINALIZED, proc, cbfunc, cbdata);
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
    server_send(CP_LAUNCH_MSG_ABORT, rank_of(proc), status, msg, len);
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
        cp_launch_env_free(env);
        return -1;
    }
    /* payload: the "NAME=value" strings, each with its NUL */
    size_t len = 0;
    for (char **e = env; *e != NULL; e++) {
        len += strlen(*e) + 1;
    }
    char *payload = malloc(len + 1);
    if (payload == NULL) {
        cp_launch_env_free(env);
        return -1;
    }
    size_t off = 0;
    for (char **e = env; *e != NULL; e++) {
        size_t n = strlen(*e) + 1;
        memcpy(payload + off, *e, n);
        off += n;
    }
    server_send(CP_LAUNCH_MSG_ENV, r, 0, payload, len);
    free(payload);
    cp_launch_env_free(env);
    return 0;
}

/*
 * The server process: serve the namespace until the launcher closes cmdfd
 * (or dies).  Ignores the signals the launcher forwards to the ranks: ranks
 * that shut down in an orderly way may still need it.
 */
void cp_launch_server_main(pid_t launcher, int np, const char *nspace, const char *host,
                           const char *dir, int evfd, int cmdfd)
{
    /* SIGPIPE: writes to dead clients */
    static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    cp_launch_signals_set(SIG_IGN, ignored, sizeof(ignored) / sizeof(ignored[0]));
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) {
        _exit(1);
    }
    cp_launch_scrub_own_env();

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
