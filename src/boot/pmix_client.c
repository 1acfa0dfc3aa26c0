#include "config.h"

/*
 * PMIx client side of the bootstrap: identity, then the control channel
 * (src/chan/chan_start.c) and the per-rank tables (tables.c) over it.  The
 * channel's collectives are in src/chan (oob.c, oob_group.c, oob_pmix.c,
 * tcp_coll.c); the PMIx session they read (this process, the job's size) in
 * src/chan/pmix_session.c, which cp_boot_init opens and closes.
 */

#include "boot/tables.h"
#include "chan/chan.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/util.h"

#include <pmix.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Read an integer key of rank (or PMIX_RANK_WILDCARD); optional: stay quiet when absent. */
static int get_int(pmix_rank_t rank, const char *key, int optional, long *out)
{
    pmix_status_t rc;
    pmix_value_t *val = cp_pmix_value(rank, key, optional, &rc);
    if (val == NULL) {
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
    pmix_status_t rc;
    pmix_value_t *val = cp_pmix_value(cp_pmix_self()->rank, PMIX_HOSTNAME, 1, &rc);
    int ret = -1;
    if (val != NULL) {
        if (val->type == PMIX_STRING && val->data.string != NULL && val->data.string[0] != '\0') {
            cp_text_sanitize(val->data.string, buf, size); /* one printable line */
            ret = 0;
        }
        PMIX_VALUE_RELEASE(val);
    }
    return ret;
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
    if (cp_tables_alloc(b, 1) != 0 || cp_tables_names(b, 1) != 0) {
        cp_tables_free(b);
        return COLLPROF_ERR_NO_MEMORY;
    }
    snprintf(b->node_names[0], sizeof(b->node_names[0]), "%s", b->hostname);
    b->pids[0] = getpid();
    return COLLPROF_OK;
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
    cp_pmix_session_size(b->rank, b->nranks);
    b->local_rank = get_int(proc->rank, PMIX_LOCAL_RANK, 1, &v) == 0 ? (int)v : -1;
    b->local_size = get_int(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, 1, &v) == 0 ? (int)v : -1;
    if (get_hostname(b->hostname, sizeof(b->hostname)) != 0) {
        local_hostname(b->hostname, sizeof(b->hostname));
    }
    b->launcher = detect_launcher();
    short_version(b->pmix_version, sizeof(b->pmix_version));
    return COLLPROF_OK;
}

/*
 * The control channel and the per-rank tables.  Rank 0's record reaches
 * every rank through PMIx (one fence) while the channel comes up
 * (cp_chan_start); then every rank's record goes to rank 0 through the
 * channel and rank 0 sends back the tables.  A rank other than 0 makes O(1)
 * PMIx calls whatever n is.
 */
static int gather_tables(cp_boot_t *b)
{
    if (cp_tables_alloc(b, b->nranks) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    peer_info_t mine, p0;
    memset(&mine, 0, sizeof(mine));
    snprintf(mine.hostname, sizeof(mine.hostname), "%s", b->hostname);
    mine.local_rank = b->local_rank;
    mine.pid = (int32_t)getpid();
    /* rank 0's channel takes a descriptor per rank of its node and per node, a backend's mesh
     * (gloo) one per rank: room for both where the hard limit allows (a launcher not ours may
     * have left the soft one low) */
    cp_nofile_fit(2L * b->nranks + CP_NOFILE_SPARE, NULL, NULL);
    peer_info_t *all = b->rank == 0 ? calloc((size_t)b->nranks, sizeof(*all)) : NULL;
    p0 = mine;
    if (b->rank == 0 && all == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory for the bootstrap tables (%d ranks)", b->nranks);
        p0.pid = -1; /* so that every rank stops here */
    }
    int ret = cp_chan_start(b, &mine, &p0);
    if (ret == COLLPROF_OK && p0.pid < 0) {
        ret = COLLPROF_ERR_NO_MEMORY;
    }
    if (ret == COLLPROF_OK) {
        ret = cp_oob_gather(&mine, all, sizeof(mine));
    }
    if (ret == COLLPROF_OK && b->rank == 0 && cp_tables_fill(b, all) != 0) {
        b->nnodes = 0; /* cp_tables_share tells the others */
    }
    if (ret == COLLPROF_OK) {
        ret = cp_tables_share(b);
    }
    if (ret != COLLPROF_OK) {
        cp_chan_close();
        cp_tables_free(b);
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
    if (cp_pmix_self() != NULL) {
        cp_log(CP_LOG_ERROR, "cp_boot_init called twice");
        return COLLPROF_ERR_BOOTSTRAP;
    }
    if (!cp_boot_have_pmix_env()) {
        int rc = init_single(&b);
        if (rc == COLLPROF_OK) {
            cp_pmix_session_size(0, 1);
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
    cp_pmix_session_open(&proc);

    int ret = read_identity(&b, &proc);
    if (ret == COLLPROF_OK) {
        ret = gather_tables(&b);
    }
    if (ret != COLLPROF_OK) {
        cp_chan_close();
        PMIx_Finalize(NULL, 0);
        cp_pmix_session_close();
        return ret;
    }
    if (b.local_rank < 0 || b.local_size < 1) {
        cp_tables_derive_local(&b);
    }
    *boot = b;
    return COLLPROF_OK;
}

void cp_boot_finalize(cp_boot_t *boot)
{
    if (cp_pmix_self() != NULL) {
        cp_oob_log_stats("run");
        cp_chan_close();
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            cp_log(CP_LOG_WARN, "PMIx_Finalize: %s", PMIx_Error_string(rc));
        }
    }
    cp_pmix_session_close();
    if (boot != NULL) {
        cp_tables_free(boot);
    }
}
