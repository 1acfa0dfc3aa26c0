#include "config.h"

/*
 * PMIx underneath the control channel: the "pmix" transport of the
 * full-world collectives (a fresh key, a put and a fence per collective:
 * the fall-back when no TCP tree comes up, or COLLPROF_OOB=pmix), the group
 * collectives without a tree, and the watchdog's key-value exchange
 * (post/fetch without a fence) and abort.
 */

#include "chan/chan.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/timeouts.h"
#include "base/util.h"

#include <pmix.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long oob_seq; /* makes every OOB key fresh */
/* What this rank's PMIx exchanges cost (PMIx fields).  The watchdog thread puts too
 * (cp_oob_post): the counters move under stats_mu, never held across a PMIx call. */
static cp_oob_stats_t oob_stats;
static pthread_mutex_t stats_mu = PTHREAD_MUTEX_INITIALIZER;

void cp_pmix_stats(cp_oob_stats_t *out)
{
    pthread_mutex_lock(&stats_mu);
    *out = oob_stats;
    pthread_mutex_unlock(&stats_mu);
}

/* One exchange's cost: puts, bytes put, fences and their seconds, bytes read. */
static void stats_add(unsigned long puts, size_t put_bytes, unsigned long fences, double fence_s,
                      size_t got_bytes)
{
    pthread_mutex_lock(&stats_mu);
    oob_stats.puts += puts;
    oob_stats.put_bytes += put_bytes;
    oob_stats.fences += fences;
    oob_stats.fence_s += fence_s;
    oob_stats.got_bytes += got_bytes;
    pthread_mutex_unlock(&stats_mu);
}

static void next_key(char *key, size_t size)
{
    snprintf(key, size, "cp.oob.%lu", oob_seq++);
}

int cp_pmix_put(const char *key, const void *buf, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)buf;
    val.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val); /* copies the bytes */
    stats_add(1, len, 0, 0.0, 0);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Put(%s) failed: %s", key, PMIx_Error_string(rc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    rc = PMIx_Commit();
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Commit failed: %s", PMIx_Error_string(rc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

int cp_pmix_fence(int collect)
{
    pmix_proc_t all;
    PMIX_PROC_LOAD(&all, cp_pmix_self()->nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    double t0 = cp_now_us();
    pmix_status_t rc = PMIx_Fence(&all, 1, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT(&info);
    stats_add(0, 0, 1, (cp_now_us() - t0) * 1e-6, 0);
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Fence failed: %s", PMIx_Error_string(rc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

/* Copy rank's value of key (exactly len bytes) into dst. */
int cp_pmix_get(int rank, const char *key, void *dst, size_t len)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, cp_pmix_self()->nspace, (pmix_rank_t)rank);
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Get(&proc, key, NULL, 0, &val);
    if (rc != PMIX_SUCCESS || val == NULL) {
        cp_log(CP_LOG_ERROR, "PMIx_Get(%s) from rank %d failed: %s", key, rank,
               PMIx_Error_string(rc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    int ret = COLLPROF_OK;
    if (val->type != PMIX_BYTE_OBJECT || val->data.bo.size != len) {
        cp_log(CP_LOG_ERROR, "PMIx_Get(%s) from rank %d: got %s of %zu bytes, expected %zu bytes",
               key, rank, PMIx_Data_type_string(val->type),
               val->type == PMIX_BYTE_OBJECT ? val->data.bo.size : (size_t)0, len);
        ret = COLLPROF_ERR_BOOTSTRAP;
    } else {
        memcpy(dst, val->data.bo.bytes, len);
        stats_add(0, 0, 0, 0.0, len);
    }
    PMIX_VALUE_RELEASE(val);
    return ret;
}

/* ---------------------------------------------------------------------- */
/* The "pmix" transport of the full-world collectives (cp_chan_pmix).  The arguments were
 * checked by oob.c; len > 0. */

static int my_rank(void)
{
    return (int)cp_pmix_self()->rank;
}

static int pmix_allgather(const void *in, void *out, size_t len)
{
    char key[64];
    next_key(key, sizeof(key));
    int ret = cp_pmix_put(key, in, len);
    ret = ret == COLLPROF_OK ? cp_pmix_fence(1) : ret;
    if (ret != COLLPROF_OK) {
        return ret;
    }
    char *dst = out;
    int me = my_rank(), n = cp_oob_nranks();
    memmove(dst + (size_t)me * len, in, len);
    for (int r = 0; r < n && ret == COLLPROF_OK; r++) {
        if (r != me) {
            ret = cp_pmix_get(r, key, dst + (size_t)r * len, len);
        }
    }
    return ret;
}

/* every rank publishes, rank 0 alone reads */
static int pmix_gather(const void *in, void *out, size_t len)
{
    char key[64];
    next_key(key, sizeof(key));
    int ret = cp_pmix_put(key, in, len);
    ret = ret == COLLPROF_OK ? cp_pmix_fence(1) : ret;
    if (ret != COLLPROF_OK || my_rank() != 0) {
        return ret;
    }
    memmove(out, in, len);
    for (int r = 1; r < cp_oob_nranks() && ret == COLLPROF_OK; r++) {
        ret = cp_pmix_get(r, key, (char *)out + (size_t)r * len, len);
    }
    return ret;
}

static int pmix_bcast(void *buf, size_t len, int root)
{
    char key[64];
    next_key(key, sizeof(key));
    int ret = my_rank() == root ? cp_pmix_put(key, buf, len) : COLLPROF_OK;
    ret = ret == COLLPROF_OK ? cp_pmix_fence(1) : ret;
    if (ret == COLLPROF_OK && my_rank() != root) {
        ret = cp_pmix_get(root, key, buf, len);
    }
    return ret;
}

/* every rank publishes its row and reads the others' */
static int pmix_alltoall(const void *in, void *out, size_t len)
{
    return cp_pmix_alltoall_by_rows(NULL, cp_oob_nranks(), my_rank(), in, out, len);
}

static int pmix_barrier(void)
{
    return cp_pmix_fence(0);
}

const cp_chan_t cp_chan_pmix = {"pmix",     pmix_allgather, pmix_gather,
                                pmix_bcast, pmix_alltoall,  pmix_barrier};

/* ---------------------------------------------------------------------- */
/* The watchdog's exchange and aborts. */

int cp_oob_post(const char *key, const void *buf, size_t len)
{
    if (cp_pmix_self() == NULL) {
        return COLLPROF_OK;
    }
    return cp_pmix_put(key, buf, len);
}

void cp_oob_abort(int status, const char *msg)
{
    if (cp_pmix_self() == NULL) {
        return;
    }
    /* the launcher ends every rank, this one too, as it hears of the abort: what this rank
     * wrote last (rank 0's verdict) must have left its stdout and stderr first.  A step daemon
     * forwards what it read from the pipes; what was still in them when srun was told to
     * end the step was lost once under load (the screen's verdict of a stopped node).  The
     * callers flush their streams (a lock here could be a stopped thread's). */
    int out = cp_fd_drain(STDOUT_FILENO, 5.0), err = cp_fd_drain(STDERR_FILENO, 1.0);
    if ((out == 0 || err == 0) && out != 1 && err != 1) {
        struct timespec ts = {0, 200 * 1000 * 1000}; /* the daemon's turn to send it on */
        nanosleep(&ts, NULL);
    }
    alarm(5); /* the default action ends us if the server does not answer */
    PMIx_Abort(status, msg, NULL, 0);
    alarm(0);
}

/*
 * One PMIx_Get_nb of a key of another rank, waited for at most wait_s.  A
 * blocking PMIx_Get does not return while the server cannot reach the
 * rank's node (a link down), whatever PMIX_TIMEOUT says; the watchdog must
 * go on all the same.  A request given up on stays with PMIx: its callback
 * frees it.
 */
typedef struct fetch_req {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, abandoned;
    pmix_status_t status;
    size_t size; /* of data; SIZE_MAX: not a byte object */
    void *data;
    /* what PMIx_Get_nb was given: PMIx reads them later, on its own thread, so they live
     * here until the callback (not on the caller's stack) */
    pmix_proc_t proc;
    pmix_info_t info;
    char key[PMIX_MAX_KEYLEN + 1];
} fetch_req_t;

static void fetch_req_free(fetch_req_t *r)
{
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    PMIX_INFO_DESTRUCT(&r->info);
    free(r->data);
    free(r);
}

static void fetch_cb(pmix_status_t status, pmix_value_t *kv, void *cbdata)
{
    fetch_req_t *r = cbdata;
    pthread_mutex_lock(&r->mu);
    if (r->abandoned) {
        pthread_mutex_unlock(&r->mu);
        fetch_req_free(r);
        return;
    }
    r->status = status;
    r->size = SIZE_MAX;
    if (status == PMIX_SUCCESS && kv != NULL && kv->type == PMIX_BYTE_OBJECT) {
        r->data = malloc(kv->data.bo.size ? kv->data.bo.size : 1);
        if (r->data != NULL) {
            memcpy(r->data, kv->data.bo.bytes, kv->data.bo.size);
            r->size = kv->data.bo.size;
        }
    }
    r->done = 1;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* One PMIx_Get_nb of key on proc: the request, or NULL (*rc: why). */
static fetch_req_t *fetch_start(const pmix_proc_t *proc, const char *key, pmix_status_t *rc)
{
    fetch_req_t *r = calloc(1, sizeof(*r));
    if (r == NULL) {
        *rc = PMIX_ERR_NOMEM;
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_t ca; /* deadlines on the monotonic clock: a clock step moves none */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    int secs = 1;
    PMIX_INFO_LOAD(&r->info, PMIX_TIMEOUT, &secs, PMIX_INT);
    r->proc = *proc;
    snprintf(r->key, sizeof(r->key), "%s", key);
    *rc = PMIx_Get_nb(&r->proc, r->key, &r->info, 1, fetch_cb, r);
    if (*rc != PMIX_SUCCESS) {
        fetch_req_free(r);
        return NULL;
    }
    return r;
}

/* Wait for r until the absolute time until; then PMIX_SUCCESS with len bytes in dst,
 * PMIX_ERR_TIMEOUT (r abandoned: its callback frees it), or PMIx's status.  r is gone. */
static pmix_status_t fetch_finish(fetch_req_t *r, const struct timespec *until, void *dst,
                                  size_t len)
{
    pthread_mutex_lock(&r->mu);
    while (!r->done && pthread_cond_timedwait(&r->cv, &r->mu, until) == 0) {
    }
    if (!r->done) {
        r->abandoned = 1; /* the callback frees it */
        pthread_mutex_unlock(&r->mu);
        return PMIX_ERR_TIMEOUT;
    }
    pthread_mutex_unlock(&r->mu);
    pmix_status_t rc = r->status;
    if (rc == PMIX_SUCCESS) {
        rc = r->size == len ? PMIX_SUCCESS : PMIX_ERR_BAD_PARAM;
        if (rc == PMIX_SUCCESS) {
            memcpy(dst, r->data, len);
        }
    }
    fetch_req_free(r);
    return rc;
}

static struct timespec deadline_in(double wait_s)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long long ns = until.tv_nsec + (long long)(wait_s * 1e9);
    until.tv_sec += (time_t)(ns / 1000000000LL);
    until.tv_nsec = (long)(ns % 1000000000LL);
    return until;
}

/* Returns PMIX_SUCCESS with len bytes in dst, PMIX_ERR_TIMEOUT, or PMIx's status. */
static pmix_status_t get_bounded(const pmix_proc_t *proc, const char *key, void *dst, size_t len,
                                 double wait_s)
{
    pmix_status_t rc;
    fetch_req_t *r = fetch_start(proc, key, &rc);
    if (r == NULL) {
        return rc;
    }
    struct timespec until = deadline_in(wait_s);
    return fetch_finish(r, &until, dst, len);
}

int cp_oob_fetch_all(const int *ranks, int nr, const char *key, void *dst, size_t len,
                     double wait_s, int *got)
{
    int n = 0;
    for (int i = 0; i < nr; i++) {
        got[i] = 0; /* whatever happens below */
    }
    fetch_req_t **reqs = calloc((size_t)(nr > 0 ? nr : 1), sizeof(*reqs));
    if (cp_pmix_self() == NULL || reqs == NULL) {
        free(reqs);
        return 0;
    }
    for (int i = 0; i < nr; i++) { /* every request out before the first wait */
        pmix_proc_t proc;
        pmix_status_t rc;
        PMIX_PROC_LOAD(&proc, cp_pmix_self()->nspace, (pmix_rank_t)ranks[i]);
        reqs[i] = fetch_start(&proc, key, &rc);
    }
    struct timespec until = deadline_in(wait_s);
    for (int i = 0; i < nr; i++) {
        if (reqs[i] != NULL &&
            fetch_finish(reqs[i], &until, (char *)dst + (size_t)i * len, len) == PMIX_SUCCESS) {
            got[i] = 1;
            n++;
        }
    }
    free(reqs);
    return n;
}

int cp_oob_fetch(int rank, const char *key, void *dst, size_t len, double timeout_s)
{
    if (cp_pmix_self() == NULL) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, cp_pmix_self()->nspace, (pmix_rank_t)rank);
    double deadline = cp_now_us() * 1e-6 + timeout_s;
    for (;;) {
        double left = deadline - cp_now_us() * 1e-6;
        pmix_status_t rc = get_bounded(&proc, key, dst, len, left > 0.5 ? left : 0.5);
        if (rc == PMIX_SUCCESS) {
            return COLLPROF_OK;
        }
        if (rc == PMIX_ERR_BAD_PARAM) {
            return COLLPROF_ERR_BOOTSTRAP;
        }
        if (cp_now_us() * 1e-6 >= deadline) {
            return COLLPROF_ERR_TIMEOUT;
        }
        usleep(100000); /* not there yet (NOT_FOUND comes back at once) */
    }
}

/* An all-to-all as an allgather of whole rows (of the job, or of group g when not NULL), each
 * rank keeping its column: n^2 len bytes per rank, for the paths without the TCP tree. */
int cp_pmix_alltoall_by_rows(cp_oob_group_t *g, int n, int me, const void *in, void *out,
                             size_t len)
{
    size_t row = (size_t)n * len;
    char *all = (size_t)n <= SIZE_MAX / row ? malloc(row * (size_t)n) : NULL;
    int ret = all == NULL ? COLLPROF_ERR_NO_MEMORY
              : g != NULL ? cp_pmix_group_allgather(g, in, all, row)
                          : pmix_allgather(in, all, row);
    for (int q = 0; q < n && ret == COLLPROF_OK; q++) {
        memcpy((char *)out + (size_t)q * len, all + (size_t)q * row + (size_t)me * len, len);
    }
    free(all);
    return ret;
}

/* ---------------------------------------------------------------------- */
/* Out-of-band collectives over a group (split cells).  No fence: Slurm's
 * PMIx plugin (22.05) mixes up fences of disjoint sets of ranks that run at
 * once ("unexpected contrib"), so each member publishes its part under a
 * fresh key and reads the others' as they appear (bounded, like the
 * watchdog's exchange). */

static void group_key(cp_oob_group_t *g, char *key, size_t size)
{
    snprintf(key, size, "cp.g.%s.%lu", g->tag, g->seq++);
}

/* Member i's value of key into dst. */
static int group_get(cp_oob_group_t *g, int i, const char *key, void *dst, size_t len)
{
    int rc = cp_oob_fetch(g->ranks[i], key, dst, len, CP_TMO_GROUP_WAIT_S);
    if (rc != COLLPROF_OK) {
        cp_log(CP_LOG_ERROR, "group %s: rank %d did not publish %s within %.0f s", g->tag,
               g->ranks[i], key, CP_TMO_GROUP_WAIT_S);
        return rc;
    }
    stats_add(0, 0, 0, 0.0, len);
    return COLLPROF_OK;
}

int cp_pmix_group_allgather(cp_oob_group_t *g, const void *in, void *out, size_t len)
{
    char key[96];
    group_key(g, key, sizeof(key));
    if (len == 0) {
        return COLLPROF_OK;
    }
    if (in == NULL || out == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    char *dst = out;
    memmove(dst + (size_t)g->me * len, in, len);
    if (cp_pmix_self() == NULL || g->n == 1) {
        return COLLPROF_OK;
    }
    int ret = cp_pmix_put(key, in, len);
    for (int i = 0; i < g->n && ret == COLLPROF_OK; i++) {
        if (i != g->me) {
            ret = group_get(g, i, key, dst + (size_t)i * len, len);
        }
    }
    return ret;
}

int cp_pmix_group_bcast(cp_oob_group_t *g, void *buf, size_t len, int root)
{
    char key[96];
    group_key(g, key, sizeof(key));
    if (root < 0 || root >= g->n) {
        cp_log(CP_LOG_ERROR, "OOB broadcast from group rank %d of %d", root, g->n);
        return COLLPROF_ERR_INVALID;
    }
    if (len == 0 || cp_pmix_self() == NULL || g->n == 1) {
        return COLLPROF_OK;
    }
    if (buf == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    return g->me == root ? cp_pmix_put(key, buf, len) : group_get(g, root, key, buf, len);
}

int cp_pmix_group_alltoall(cp_oob_group_t *g, const void *in, void *out, size_t len)
{
    /* each member publishes its row (fresh keys, as the group's allgather) */
    return len == 0 ? COLLPROF_OK : cp_pmix_alltoall_by_rows(g, g->n, g->me, in, out, len);
}
