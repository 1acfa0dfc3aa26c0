#include "config.h"

/*
 * PMIx client side of the bootstrap: identity, peer tables, and the
 * out-of-band collectives.  The full-world ones (allgather, bcast,
 * barrier) go over a TCP star to rank 0 set up here at start-up
 * (oob_tcp.c), or, when that cannot be set up, over PMIx (put + commit +
 * fence + get of a fresh key).  The group ones, the watchdog's post/fetch
 * and aborts always use PMIx.
 */

#include "boot/boot.h"
#include "boot/oob_tcp.h"
#include "collprof/status.h"
#include "core/log.h"
#include "core/util.h"

#include <pmix.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Module state: PMIx is process-wide, so is this. */
static int pmix_up;         /* PMIx_Init succeeded and not finalized */
static pmix_proc_t my_proc; /* namespace and rank */
static int my_rank;
static int my_nranks = 1;
static unsigned long oob_seq;    /* makes every OOB key fresh */
static cp_oob_stats_t oob_stats; /* what this rank's exchanges cost */
static char tcp_why[256];        /* why the TCP channel is not in use */

/* What each rank contributes to the init allgather. */
typedef struct peer_info {
    char hostname[256];
    int32_t local_rank;
    int32_t pid;
    cp_tcp_pub_t tcp; /* rank 0's TCP listeners; empty for the others */
} peer_info_t;

int cp_boot_have_pmix_env(void)
{
    static const char *const vars[] = {
        "PMIX_NAMESPACE",   "PMIX_SERVER_URI41", "PMIX_SERVER_URI4",
        "PMIX_SERVER_URI3", "PMIX_SERVER_URI21", "PMIX_SERVER_URI2",
    };
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && v[0] != '\0') {
            return 1;
        }
    }
    return 0;
}

static int env_is(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v != NULL && strcmp(v, value) == 0;
}

static const char *detect_launcher(void)
{
    if (env_is("COLLPROF_SELF_LAUNCHED", "1")) {
        return env_is("COLLPROF_LAUNCHER", "mpirun") ? "self+mpirun" : "self";
    }
    /* mpirun first: in a Slurm allocation it starts its daemons with srun, so
     * its ranks inherit the daemons' SLURM_STEP_ID too */
    if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) {
        return "mpirun";
    }
    if (getenv("SLURM_JOB_ID") != NULL && getenv("SLURM_STEP_ID") != NULL) {
        return "slurm";
    }
    return "pmix";
}

static void local_hostname(char *buf, size_t size)
{
    if (gethostname(buf, size) != 0) {
        snprintf(buf, size, "localhost");
    }
    buf[size - 1] = '\0';
    char raw[256];
    snprintf(raw, sizeof(raw), "%s", buf);
    cp_text_sanitize(raw, buf, size); /* the kernel takes any bytes; our files take one line */
}

/* Integer value of any PMIx integer type; -1 when it is not one. */
static int value_to_int(const pmix_value_t *v, long *out)
{
    switch (v->type) {
    case PMIX_UINT8: *out = v->data.uint8; return 0;
    case PMIX_UINT16: *out = v->data.uint16; return 0;
    case PMIX_UINT32: *out = (long)v->data.uint32; return 0;
    case PMIX_UINT64: *out = (long)v->data.uint64; return 0;
    case PMIX_INT8: *out = v->data.int8; return 0;
    case PMIX_INT16: *out = v->data.int16; return 0;
    case PMIX_INT32: *out = v->data.int32; return 0;
    case PMIX_INT64: *out = (long)v->data.int64; return 0;
    case PMIX_INT: *out = v->data.integer; return 0;
    case PMIX_UINT: *out = (long)v->data.uint; return 0;
    case PMIX_SIZE: *out = (long)v->data.size; return 0;
    case PMIX_PROC_RANK: *out = (long)v->data.rank; return 0;
    default: return -1;
    }
}

/*
 * Read an integer key of rank (or PMIX_RANK_WILDCARD).  optional: look only
 * in data the server already gave us, and stay quiet when it is absent.
 */
static int get_int(pmix_rank_t rank, const char *key, int optional, long *out)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, my_proc.nspace, rank);
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Get(&proc, key, optional ? &info : NULL, optional ? 1 : 0, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (rc != PMIX_SUCCESS || val == NULL) {
        if (!optional) {
            cp_log(CP_LOG_ERROR, "PMIx_Get(%s) failed: %s", key, PMIx_Error_string(rc));
        }
        return -1;
    }
    long v;
    int ret = value_to_int(val, &v);
    if (ret == 0) {
        *out = v;
    } else if (!optional) {
        cp_log(CP_LOG_ERROR, "PMIx_Get(%s): unexpected type %s", key,
               PMIx_Data_type_string(val->type));
    }
    PMIX_VALUE_RELEASE(val);
    return ret;
}

static int get_hostname(char *buf, size_t size)
{
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    pmix_value_t *val = NULL;
    pmix_status_t rc = PMIx_Get(&my_proc, PMIX_HOSTNAME, &info, 1, &val);
    PMIX_INFO_DESTRUCT(&info);
    int ret = -1;
    if (rc == PMIX_SUCCESS && val != NULL) {
        if (val->type == PMIX_STRING && val->data.string != NULL && val->data.string[0] != '\0') {
            cp_text_sanitize(val->data.string, buf, size); /* one printable line */
            ret = 0;
        }
        PMIX_VALUE_RELEASE(val);
    }
    return ret;
}

static void free_tables(cp_boot_t *b)
{
    free(b->hostnames);
    free(b->node_ids);
    free(b->local_ranks);
    free(b->pids);
    b->hostnames = NULL;
    b->node_ids = NULL;
    b->local_ranks = NULL;
    b->pids = NULL;
}

static int alloc_tables(cp_boot_t *b, int n)
{
    b->hostnames = calloc((size_t)n, sizeof(*b->hostnames));
    b->node_ids = calloc((size_t)n, sizeof(*b->node_ids));
    b->local_ranks = calloc((size_t)n, sizeof(*b->local_ranks));
    b->pids = calloc((size_t)n, sizeof(*b->pids));
    if (b->hostnames == NULL || b->node_ids == NULL || b->local_ranks == NULL || b->pids == NULL) {
        free_tables(b);
        cp_log(CP_LOG_ERROR, "out of memory for the bootstrap tables (%d ranks)", n);
        return -1;
    }
    return 0;
}

static int init_single(cp_boot_t *b)
{
    memset(b, 0, sizeof(*b));
    b->rank = 0;
    b->nranks = 1;
    b->local_rank = 0;
    b->local_size = 1;
    b->node_id = 0;
    b->nnodes = 1;
    local_hostname(b->hostname, sizeof(b->hostname));
    b->launcher = "none";
    if (alloc_tables(b, 1) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    snprintf(b->hostnames[0], sizeof(b->hostnames[0]), "%s", b->hostname);
    b->pids[0] = getpid();
    return COLLPROF_OK;
}

/* Node ids by host name in O(n): open addressing over a table twice the ranks' size. */
static unsigned long host_hash(const char *h)
{
    unsigned long x = 1469598103934665603ul; /* FNV-1a */
    for (; *h; h++) {
        x = (x ^ (unsigned char)*h) * 1099511628211ul;
    }
    return x;
}

/* Rank 0: the per-rank tables from everyone's peer_info_t; -1 out of memory. */
static int fill_tables(cp_boot_t *b, const peer_info_t *all)
{
    size_t cap = 2 * (size_t)b->nranks;
    int *slot = malloc(cap * sizeof(int)); /* a rank of each node seen, or -1 */
    if (slot == NULL) {
        return -1;
    }
    memset(slot, 0xff, cap * sizeof(int));
    int nnodes = 0;
    for (int r = 0; r < b->nranks; r++) {
        snprintf(b->hostnames[r], sizeof(b->hostnames[r]), "%s", all[r].hostname);
        b->local_ranks[r] = all[r].local_rank;
        b->pids[r] = (pid_t)all[r].pid;
        size_t i = host_hash(b->hostnames[r]) % cap;
        while (slot[i] >= 0 && strcmp(b->hostnames[slot[i]], b->hostnames[r]) != 0) {
            i = (i + 1) % cap;
        }
        if (slot[i] < 0) {
            slot[i] = r;
            b->node_ids[r] = nnodes++;
        } else {
            b->node_ids[r] = b->node_ids[slot[i]];
        }
    }
    free(slot);
    b->nnodes = nnodes;
    b->node_id = b->node_ids[b->rank];
    return 0;
}

static void short_version(char *buf, size_t size)
{
    /* "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, ...)" -> "OpenPMIx 4.2.2rc2" */
    const char *v = PMIx_Get_version();
    size_t n = strcspn(v, "(");
    while (n > 0 && v[n - 1] == ' ') {
        n--;
    }
    snprintf(buf, size, "%.*s", (int)n, v);
}

/* Launchers that do not publish local rank/size: derive them from the node ids. */
static void derive_local(cp_boot_t *b)
{
    int lr = 0, ls = 0;
    for (int r = 0; r < b->nranks; r++) {
        if (b->node_ids[r] == b->node_id) {
            lr += r < b->rank;
            ls++;
        }
    }
    if (b->local_rank < 0) {
        b->local_rank = lr;
        for (int r = 0; r < b->nranks; r++) {
            if (b->local_ranks[r] < 0) {
                int k = 0;
                for (int q = 0; q < r; q++) {
                    k += b->node_ids[q] == b->node_ids[r];
                }
                b->local_ranks[r] = k;
            }
        }
    }
    if (b->local_size < 1) {
        b->local_size = ls;
    }
}

/* This rank's identity from the PMIx server (PMIx is up). */
static int read_identity(cp_boot_t *b, const pmix_proc_t *proc)
{
    long v;
    if (get_int(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, 0, &v) != 0) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (v < 1 || v > INT32_MAX || (long)proc->rank >= v) {
        cp_log(CP_LOG_ERROR, "PMIx reports job size %ld for rank %u", v, (unsigned)proc->rank);
        return COLLPROF_ERR_BOOTSTRAP;
    }
    b->rank = (int)proc->rank;
    b->nranks = (int)v;
    my_rank = b->rank;
    my_nranks = b->nranks;
    b->local_rank = get_int(proc->rank, PMIX_LOCAL_RANK, 1, &v) == 0 ? (int)v : -1;
    b->local_size = get_int(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, 1, &v) == 0 ? (int)v : -1;
    if (get_hostname(b->hostname, sizeof(b->hostname)) != 0) {
        local_hostname(b->hostname, sizeof(b->hostname));
    }
    b->launcher = detect_launcher();
    short_version(b->pmix_version, sizeof(b->pmix_version));
    return COLLPROF_OK;
}

/* Bring up the TCP channel of the full-world collectives, or say why the
 * PMIx fences stay (a warning on rank 0 unless COLLPROF_OOB=pmix asked).
 * Every rank decides alike from rank 0's record and whether the job spans
 * several nodes (the launcher's local size), then from rank 0's verdict
 * that every rank connected. */
static void setup_tcp(const cp_boot_t *b, const peer_info_t *p0)
{
    if (b->nranks < 2) {
        return;
    }
    const cp_tcp_pub_t *pub0 = &p0->tcp;
    const char *why = NULL;
    if (pub0->lo[0] == '\0' && pub0->node[0] == '\0') {
        why = b->rank == 0 ? cp_tcp_why() : "rank 0 opened no TCP listener";
    } else if (pub0->node[0] == '\0' && b->local_size != b->nranks) {
        why = b->rank == 0 && cp_tcp_why()[0] ? cp_tcp_why()
                                              : "rank 0 has no address for the other nodes";
    }
    if (why == NULL) {
        int same = strcmp(b->hostname, p0->hostname) == 0;
        if (cp_tcp_connect(b->rank, b->nranks, pub0, same) == 0) {
            return;
        }
        why = cp_tcp_why();
    }
    snprintf(tcp_why, sizeof(tcp_why), "%s", why);
    cp_tcp_close();
    /* a fallback the user did not ask for costs every cell a fence: said without -v */
    cp_log(b->rank == 0 && !cp_oob_pmix_forced() ? CP_LOG_WARN : CP_LOG_INFO,
           "no TCP control channel (%s): collprof's exchanges go through PMIx fences", tcp_why);
}

/* A rank other than 0: the tables from rank 0's message (share_tables). */
static int unpack_tables(cp_boot_t *b, const char *buf, int nnodes, size_t len)
{
    size_t n = (size_t)b->nranks;
    const int32_t *ids = (const int32_t *)buf, *lrs = ids + n;
    const char *at = buf + 8 * n, *end = buf + len;
    char(*names)[256] = calloc((size_t)nnodes, sizeof(*names));
    int ret = names == NULL ? COLLPROF_ERR_NO_MEMORY : COLLPROF_OK;
    for (int k = 0; ret == COLLPROF_OK && k < nnodes; k++) {
        size_t l = strnlen(at, (size_t)(end - at));
        if (l == (size_t)(end - at)) {
            ret = COLLPROF_ERR_BOOTSTRAP;
            break;
        }
        snprintf(names[k], sizeof(names[k]), "%s", at);
        at += l + 1;
    }
    for (size_t r = 0; ret == COLLPROF_OK && r < n; r++) {
        if (ids[r] < 0 || ids[r] >= nnodes) {
            ret = COLLPROF_ERR_BOOTSTRAP;
            break;
        }
        b->node_ids[r] = ids[r];
        b->local_ranks[r] = lrs[r];
        snprintf(b->hostnames[r], sizeof(b->hostnames[r]), "%s", names[ids[r]]);
    }
    free(names);
    if (ret != COLLPROF_OK) {
        cp_log(CP_LOG_ERROR, "the rank table from rank 0 is malformed");
        return ret;
    }
    b->nnodes = nnodes;
    b->node_id = b->node_ids[b->rank];
    b->pids[b->rank] = getpid(); /* the others' pids: rank 0's /ranks table alone */
    return COLLPROF_OK;
}

/*
 * What every rank holds of the others, from rank 0: each rank's node and
 * local rank, and the nodes' names (n ranks: 8 n bytes and the names, where
 * every rank reading every rank's record from PMIx made n^2 gets).  Laid out
 * as int32 node id x n, int32 local rank x n, then one NUL-terminated name
 * per node in node order; a header (nodes, names' bytes) goes first.
 */
static int share_tables(cp_boot_t *b)
{
    size_t n = (size_t)b->nranks;
    int32_t head[2] = {b->nnodes, 0};
    for (size_t r = 0, next = 0; b->rank == 0 && r < n; r++) {
        if ((size_t)b->node_ids[r] == next) { /* a node's first rank: ids grow from 0 */
            head[1] += (int32_t)strlen(b->hostnames[r]) + 1;
            next++;
        }
    }
    int ret = cp_oob_bcast(head, sizeof(head), 0);
    size_t len = 8 * n + (size_t)(head[1] > 0 ? head[1] : 0);
    char *buf = NULL;
    if (ret == COLLPROF_OK && (head[0] < 1 || head[1] < 1 || (buf = malloc(len)) == NULL)) {
        ret = COLLPROF_ERR_NO_MEMORY;
    }
    if (ret == COLLPROF_OK && b->rank == 0) {
        int32_t *ids = (int32_t *)buf, *lrs = ids + n;
        char *at = buf + 8 * n;
        for (size_t r = 0, next = 0; r < n; r++) {
            ids[r] = b->node_ids[r];
            lrs[r] = b->local_ranks[r];
            if ((size_t)b->node_ids[r] == next) {
                at = stpcpy(at, b->hostnames[r]) + 1;
                next++;
            }
        }
    }
    if (ret == COLLPROF_OK) {
        ret = cp_oob_bcast(buf, len, 0);
    }
    if (ret == COLLPROF_OK && b->rank != 0) {
        ret = unpack_tables(b, buf, head[0], len);
    }
    free(buf);
    return ret;
}

/*
 * The per-rank tables and the control channel.  Rank 0's record (its host
 * and listening addresses) reaches every rank through PMIx (one put, one
 * fence, one get each); the channel comes up; then every rank's record goes
 * to rank 0 through it (or through PMIx without it) and rank 0 sends back
 * the tables.  A rank other than 0 makes O(1) PMIx calls whatever n is.
 */
static int gather_tables(cp_boot_t *b)
{
    if (alloc_tables(b, b->nranks) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    peer_info_t mine, p0;
    memset(&mine, 0, sizeof(mine));
    snprintf(mine.hostname, sizeof(mine.hostname), "%s", b->hostname);
    mine.local_rank = b->local_rank;
    mine.pid = (int32_t)getpid();
    /* rank 0's channel takes a descriptor per rank, a backend's mesh (gloo) one more: room for
     * both where the hard limit allows (a launcher not ours may have left the soft one low) */
    cp_nofile_fit(2L * b->nranks + CP_NOFILE_SPARE, NULL, NULL);
    /* the launcher's local size is the only hint before the exchange */
    cp_tcp_listen(b->rank, b->nranks, b->local_size == b->nranks, b->hostname, &mine.tcp);
    peer_info_t *all = b->rank == 0 ? calloc((size_t)b->nranks, sizeof(*all)) : NULL;
    p0 = mine;
    if (b->rank == 0 && all == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory for the bootstrap tables (%d ranks)", b->nranks);
        p0.pid = -1; /* so that every rank stops here */
    }
    int ret = cp_oob_bcast(&p0, sizeof(p0), 0);
    if (ret == COLLPROF_OK && p0.pid < 0) {
        ret = COLLPROF_ERR_NO_MEMORY;
    }
    if (ret == COLLPROF_OK) {
        setup_tcp(b, &p0);
    }
    if (ret == COLLPROF_OK) {
        ret = cp_oob_gather(&mine, all, sizeof(mine));
    }
    if (ret == COLLPROF_OK && b->rank == 0 && fill_tables(b, all) != 0) {
        b->nnodes = 0; /* share_tables tells the others */
    }
    if (ret == COLLPROF_OK) {
        ret = share_tables(b);
    }
    if (ret != COLLPROF_OK) {
        cp_tcp_close();
        free_tables(b);
    }
    free(all);
    return ret;
}

int cp_boot_init(cp_boot_t *boot)
{
    if (boot == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    cp_boot_t b;
    if (pmix_up) {
        cp_log(CP_LOG_ERROR, "cp_boot_init called twice");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (!cp_boot_have_pmix_env()) {
        int rc = init_single(&b);
        if (rc == COLLPROF_OK) {
            my_rank = 0;
            my_nranks = 1;
            *boot = b;
        }
        return rc;
    }

    memset(&b, 0, sizeof(b));
    pmix_proc_t proc;
    pmix_status_t prc = PMIx_Init(&proc, NULL, 0);
    if (prc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Init failed: %s", PMIx_Error_string(prc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    my_proc = proc;
    pmix_up = 1;

    int ret = read_identity(&b, &proc);
    if (ret == COLLPROF_OK) {
        ret = gather_tables(&b);
    }
    if (ret != COLLPROF_OK) {
        cp_tcp_close();
        PMIx_Finalize(NULL, 0);
        pmix_up = 0;
        my_rank = 0;
        my_nranks = 1;
        return ret;
    }
    if (b.local_rank < 0 || b.local_size < 1) {
        derive_local(&b);
    }
    *boot = b;
    return COLLPROF_OK;
}

void cp_boot_finalize(cp_boot_t *boot)
{
    if (pmix_up) {
        cp_oob_log_stats("run");
        cp_tcp_close();
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            cp_log(CP_LOG_WARN, "PMIx_Finalize: %s", PMIx_Error_string(rc));
        }
        pmix_up = 0;
    }
    my_rank = 0;
    my_nranks = 1;
    if (boot != NULL) {
        free_tables(boot);
    }
}

/* ---------------------------------------------------------------------- */
/* Out-of-band collectives. */

/* Whether the full-world collectives stay in this process: no PMIx, or a world of one rank
 * (whose every fence and put would only grow the server's key store: a run of many cells
 * then slowed down with the square of their number), unless COLLPROF_OOB=pmix. */
static int oob_local(void)
{
    return !pmix_up || (my_nranks < 2 && !cp_oob_pmix_forced());
}

static void next_key(char *key, size_t size)
{
    snprintf(key, size, "cp.oob.%lu", oob_seq++);
}

static int put_commit(const char *key, const void *buf, size_t len)
{
    pmix_value_t val;
    PMIX_VALUE_CONSTRUCT(&val);
    val.type = PMIX_BYTE_OBJECT;
    val.data.bo.bytes = (char *)buf;
    val.data.bo.size = len;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, key, &val); /* copies the bytes */
    oob_stats.puts++;
    oob_stats.put_bytes += len;
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

static int fence(int collect)
{
    pmix_proc_t all;
    PMIX_PROC_LOAD(&all, my_proc.nspace, PMIX_RANK_WILDCARD);
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    double t0 = cp_now_us();
    pmix_status_t rc = PMIx_Fence(&all, 1, collect ? &info : NULL, collect ? 1 : 0);
    PMIX_INFO_DESTRUCT(&info);
    oob_stats.fences++;
    oob_stats.fence_s += (cp_now_us() - t0) * 1e-6;
    if (rc != PMIX_SUCCESS) {
        cp_log(CP_LOG_ERROR, "PMIx_Fence failed: %s", PMIx_Error_string(rc));
        return COLLPROF_ERR_BOOTSTRAP;
    }
    return COLLPROF_OK;
}

/* Copy rank's value of key (exactly len bytes) into dst. */
static int get_bytes(int rank, const char *key, void *dst, size_t len)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, my_proc.nspace, (pmix_rank_t)rank);
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
        oob_stats.got_bytes += len;
    }
    PMIX_VALUE_RELEASE(val);
    return ret;
}

void cp_oob_stats(cp_oob_stats_t *out)
{
    *out = oob_stats;
    cp_tcp_stats_t t;
    cp_tcp_stats(&t);
    out->tcp = cp_tcp_on();
    out->tcp_ops = t.ops;
    out->tcp_s = t.op_s;
    out->tcp_sent_bytes = t.sent_bytes;
    out->tcp_got_bytes = t.got_bytes;
}

void cp_oob_log_stats(const char *when)
{
    cp_oob_stats_t s;
    cp_oob_stats(&s);
    char channel[400];
    if (s.tcp || s.tcp_ops > 0) {
        snprintf(channel, sizeof(channel),
                 "%s: %lu collectives (%.3f s in them), %llu bytes sent, %llu bytes read",
                 cp_tcp_on() ? cp_tcp_desc() : "tcp (closed)", s.tcp_ops, s.tcp_s, s.tcp_sent_bytes,
                 s.tcp_got_bytes);
    } else if (oob_local()) {
        snprintf(channel, sizeof(channel), "none (one rank: the collectives stay in the process)");
    } else {
        snprintf(channel, sizeof(channel), "pmix%s%s%s", tcp_why[0] ? " (no tcp: " : "", tcp_why,
                 tcp_why[0] ? ")" : "");
    }
    cp_log(CP_LOG_INFO,
           "oob (%s): %lu fences (%.3f s in them), %lu puts of %llu bytes, %llu bytes read; "
           "channel %s",
           when, s.fences, s.fence_s, s.puts, s.put_bytes, s.got_bytes, channel);
}

const char *cp_oob_channel(char *buf, size_t len)
{
    if (cp_tcp_on()) {
        snprintf(buf, len, "%s (star to rank 0)", cp_tcp_desc());
    } else if (oob_local()) {
        snprintf(buf, len, "none (one rank)");
    } else {
        snprintf(buf, len, "pmix fences%s%s%s", tcp_why[0] ? " (no tcp: " : "", tcp_why,
                 tcp_why[0] ? ")" : "");
    }
    return buf;
}

int cp_oob_allgather(const void *in, void *out, size_t len)
{
    char key[64];
    next_key(key, sizeof(key));
    if (len == 0) {
        return COLLPROF_OK;
    }
    if (in == NULL || out == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    char *dst = out;
    if (oob_local()) {
        memmove(dst, in, len);
        return COLLPROF_OK;
    }
    if (cp_tcp_on()) {
        return cp_tcp_allgather(in, out, len);
    }
    int ret = put_commit(key, in, len);
    if (ret == COLLPROF_OK) {
        ret = fence(1);
    }
    if (ret != COLLPROF_OK) {
        return ret;
    }
    memmove(dst + (size_t)my_rank * len, in, len);
    for (int r = 0; r < my_nranks && ret == COLLPROF_OK; r++) {
        if (r != my_rank) {
            ret = get_bytes(r, key, dst + (size_t)r * len, len);
        }
    }
    return ret;
}

int cp_oob_gather(const void *in, void *out, size_t len)
{
    char key[64];
    next_key(key, sizeof(key));
    if (len == 0) {
        return COLLPROF_OK;
    }
    if (in == NULL || (my_rank == 0 && out == NULL)) {
        return COLLPROF_ERR_INVALID;
    }
    if (oob_local()) {
        memmove(out, in, len);
        return COLLPROF_OK;
    }
    if (cp_tcp_on()) {
        return cp_tcp_gather(in, out, len);
    }
    /* over PMIx: every rank publishes, rank 0 alone reads */
    int ret = put_commit(key, in, len);
    if (ret == COLLPROF_OK) {
        ret = fence(1);
    }
    if (ret != COLLPROF_OK || my_rank != 0) {
        return ret;
    }
    memmove(out, in, len);
    for (int r = 1; r < my_nranks && ret == COLLPROF_OK; r++) {
        ret = get_bytes(r, key, (char *)out + (size_t)r * len, len);
    }
    return ret;
}

/* An all-to-all as an allgather of whole rows (of the job, or of group g when not NULL), each
 * rank keeping its column: n^2 len bytes per rank, for the paths without the TCP star. */
static int alltoall_by_rows(cp_oob_group_t *g, int n, int me, const void *in, void *out, size_t len)
{
    size_t row = (size_t)n * len;
    char *all = (size_t)n <= SIZE_MAX / row ? malloc(row * (size_t)n) : NULL;
    int ret = all == NULL ? COLLPROF_ERR_NO_MEMORY
              : g != NULL ? cp_oob_group_allgather(g, in, all, row)
                          : cp_oob_allgather(in, all, row);
    for (int q = 0; q < n && ret == COLLPROF_OK; q++) {
        memcpy((char *)out + (size_t)q * len, all + (size_t)q * row + (size_t)me * len, len);
    }
    free(all);
    return ret;
}

int cp_oob_alltoall(const void *in, void *out, size_t len)
{
    if (len == 0) {
        return COLLPROF_OK;
    }
    if (in == NULL || out == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    if (oob_local()) {
        memcpy(out, in, len);
        return COLLPROF_OK;
    }
    if (cp_tcp_on()) {
        return cp_tcp_alltoall(in, out, len);
    }
    /* over PMIx: every rank publishes its row and reads the others' */
    return alltoall_by_rows(NULL, my_nranks, my_rank, in, out, len);
}

int cp_oob_bcast(void *buf, size_t len, int root)
{
    char key[64];
    next_key(key, sizeof(key));
    if (root < 0 || root >= my_nranks) {
        cp_log(CP_LOG_ERROR, "OOB broadcast from rank %d of %d", root, my_nranks);
        return COLLPROF_ERR_INVALID;
    }
    if (len == 0 || oob_local()) {
        return COLLPROF_OK;
    }
    if (buf == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    if (cp_tcp_on()) {
        return cp_tcp_bcast(buf, len, root);
    }
    int ret = COLLPROF_OK;
    if (my_rank == root) {
        ret = put_commit(key, buf, len);
    }
    if (ret == COLLPROF_OK) {
        ret = fence(1);
    }
    if (ret == COLLPROF_OK && my_rank != root) {
        ret = get_bytes(root, key, buf, len);
    }
    return ret;
}

int cp_oob_post(const char *key, const void *buf, size_t len)
{
    if (!pmix_up) {
        return COLLPROF_OK;
    }
    return put_commit(key, buf, len);
}

void cp_oob_abort(int status, const char *msg)
{
    if (!pmix_up) {
        return;
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
    pthread_cond_init(&r->cv, NULL);
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
    clock_gettime(CLOCK_REALTIME, &until);
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
    fetch_req_t **reqs = calloc((size_t)(nr > 0 ? nr : 1), sizeof(*reqs));
    if (!pmix_up || reqs == NULL) {
        free(reqs);
        return 0;
    }
    for (int i = 0; i < nr; i++) { /* every request out before the first wait */
        pmix_proc_t proc;
        pmix_status_t rc;
        PMIX_PROC_LOAD(&proc, my_proc.nspace, (pmix_rank_t)ranks[i]);
        got[i] = 0;
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
    if (!pmix_up) {
        return COLLPROF_ERR_BOOTSTRAP;
    }
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, my_proc.nspace, (pmix_rank_t)rank);
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

int cp_oob_barrier(void)
{
    if (oob_local()) {
        return COLLPROF_OK;
    }
    if (cp_tcp_on()) {
        return cp_tcp_barrier();
    }
    return fence(0);
}

/* ---------------------------------------------------------------------- */
/* Out-of-band collectives over a group (split cells).  No fence: Slurm's
 * PMIx plugin (22.05) mixes up fences of disjoint sets of ranks that run at
 * once ("unexpected contrib"), so each member publishes its part under a
 * fresh key and reads the others' as they appear (bounded, like the
 * watchdog's exchange). */

#define GROUP_WAIT_S 300.0 /* the watchdog ends a run that hangs before this */

static void group_key(cp_oob_group_t *g, char *key, size_t size)
{
    snprintf(key, size, "cp.g.%s.%lu", g->tag, g->seq++);
}

/* Member i's value of key into dst. */
static int group_get(cp_oob_group_t *g, int i, const char *key, void *dst, size_t len)
{
    int rc = cp_oob_fetch(g->ranks[i], key, dst, len, GROUP_WAIT_S);
    if (rc != COLLPROF_OK) {
        cp_log(CP_LOG_ERROR, "group %s: rank %d did not publish %s within %.0f s", g->tag,
               g->ranks[i], key, GROUP_WAIT_S);
        return rc;
    }
    oob_stats.got_bytes += len;
    return COLLPROF_OK;
}

int cp_oob_group_allgather(cp_oob_group_t *g, const void *in, void *out, size_t len)
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
    if (!pmix_up || g->n == 1) {
        return COLLPROF_OK;
    }
    int ret = put_commit(key, in, len);
    for (int i = 0; i < g->n && ret == COLLPROF_OK; i++) {
        if (i != g->me) {
            ret = group_get(g, i, key, dst + (size_t)i * len, len);
        }
    }
    return ret;
}

int cp_oob_group_bcast(cp_oob_group_t *g, void *buf, size_t len, int root)
{
    char key[96];
    group_key(g, key, sizeof(key));
    if (root < 0 || root >= g->n) {
        cp_log(CP_LOG_ERROR, "OOB broadcast from group rank %d of %d", root, g->n);
        return COLLPROF_ERR_INVALID;
    }
    if (len == 0 || !pmix_up || g->n == 1) {
        return COLLPROF_OK;
    }
    if (buf == NULL) {
        return COLLPROF_ERR_INVALID;
    }
    return g->me == root ? put_commit(key, buf, len) : group_get(g, root, key, buf, len);
}

int cp_oob_group_alltoall(cp_oob_group_t *g, const void *in, void *out, size_t len)
{
    /* each member publishes its row (fresh keys, as the group's allgather) */
    return len == 0 ? COLLPROF_OK : alltoall_by_rows(g, g->n, g->me, in, out, len);
}

int cp_oob_group_barrier(cp_oob_group_t *g)
{
    unsigned char one = 1, *all = malloc((size_t)g->n);
    if (all == NULL) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    int rc = cp_oob_group_allgather(g, &one, all, 1);
    free(all);
    return rc;
}
