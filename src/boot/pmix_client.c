#include "config.h"

/*
 * PMIx client side of the bootstrap: identity, then the control channel
 * (chan_start.c) and the per-rank tables (tables.c) over it.  The channel's
 * collectives are in oob.c, oob_group.c, oob_pmix.c and tcp_coll.c.
 */

#include "chan/chan.h"
#include "boot/tables.h"
#include "chan/tree_shape.h"
#include "collprof/status.h"
#include "base/log.h"
#include "base/util.h"

#include <pmix.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Module state: PMIx is process-wide, so is this. */
static int pmix_up;         /* PMIx_Init succeeded and not finalized */
static pmix_proc_t my_proc; /* namespace and rank */
static int my_rank;
static int my_nranks = 1;

const pmix_proc_t *cp_pmix_self(void)
{
    return pmix_up ? &my_proc : NULL;
}

int cp_oob_nranks(void)
{
    return my_nranks;
}

int cp_oob_rank(void)
{
    return my_rank;
}

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

/* PMIx_Get of key on rank (or PMIX_RANK_WILDCARD); optional: look only in data the server
 * already gave us.  The value (PMIX_VALUE_RELEASE it), or NULL with *rc. */
static pmix_value_t *get_value(pmix_rank_t rank, const char *key, int optional, pmix_status_t *rc)
{
    pmix_proc_t proc;
    PMIX_PROC_LOAD(&proc, my_proc.nspace, rank);
    pmix_info_t info;
    bool yes = true;
    PMIX_INFO_LOAD(&info, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    pmix_value_t *val = NULL;
    *rc = PMIx_Get(&proc, key, optional ? &info : NULL, optional ? 1 : 0, &val);
    PMIX_INFO_DESTRUCT(&info);
    if (*rc != PMIX_SUCCESS && val != NULL) {
        PMIX_VALUE_RELEASE(val);
        val = NULL;
    }
    return val;
}

/* Read an integer key of rank (or PMIX_RANK_WILDCARD); optional: stay quiet when absent. */
static int get_int(pmix_rank_t rank, const char *key, int optional, long *out)
{
    pmix_status_t rc;
    pmix_value_t *val = get_value(rank, key, optional, &rc);
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
    pmix_value_t *val = get_value(my_proc.rank, PMIX_HOSTNAME, 1, &rc);
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
    if (cp_tables_alloc(b, 1) != 0) {
        return COLLPROF_ERR_NO_MEMORY;
    }
    snprintf(b->hostnames[0], sizeof(b->hostnames[0]), "%s", b->hostname);
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

/* The lowest rank of this node and how many: from PMIX_LOCAL_PEERS ("0,1,2,3", ranges
 * "0-3" too), which every launcher we run under publishes. */
int cp_pmix_local_peers(int *lowest, int *count)
{
    pmix_status_t rc;
    pmix_value_t *val = get_value(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, 1, &rc);
    long lo = -1, n = 0;
    if (val != NULL && val->type == PMIX_STRING && val->data.string) {
        for (const char *p = val->data.string; *p != '\0';) {
            char *end;
            long a = strtol(p, &end, 10), z = a;
            if (end == p || a < 0) {
                n = 0;
                break;
            }
            if (*end == '-') {
                p = end + 1;
                z = strtol(p, &end, 10);
            }
            lo = lo < 0 || a < lo ? a : lo;
            n += z >= a ? z - a + 1 : 0;
            p = *end == ',' ? end + 1 : end;
            if (*end != ',' && *end != '\0') {
                n = 0;
                break;
            }
        }
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    if (n < 1 || lo < 0 || lo >= my_nranks || n > my_nranks) {
        return -1;
    }
    *lowest = (int)lo;
    *count = (int)n;
    return 0;
}

/* The lowest rank on node and how many (PMIx_Resolve_peers): 0, or -1. */
static int node_peers(const char *node, int *lowest, int *count)
{
    pmix_proc_t *procs = NULL;
    size_t np = 0;
    pmix_status_t rc = PMIx_Resolve_peers(node, my_proc.nspace, &procs, &np);
    long lo = -1;
    for (size_t i = 0; rc == PMIX_SUCCESS && i < np; i++) {
        lo = lo < 0 || (long)procs[i].rank < lo ? (long)procs[i].rank : lo;
    }
    if (procs != NULL) {
        PMIX_PROC_FREE(procs, np);
    }
    if (rc != PMIX_SUCCESS || np == 0 || lo < 0 || lo >= my_nranks) {
        return -1;
    }
    *lowest = (int)lo;
    *count = (int)np;
    return 0;
}

/* PMIX_HOSTNAME of rank, as the launcher spells it (its node list's names): 0, or -1. */
static int host_of(pmix_rank_t rank, char *buf, size_t size)
{
    pmix_status_t rc;
    pmix_value_t *val = get_value(rank, PMIX_HOSTNAME, 1, &rc);
    int ret = -1;
    if (val != NULL && val->type == PMIX_STRING && val->data.string != NULL &&
        strlen(val->data.string) < size && val->data.string[0] != '\0') {
        snprintf(buf, size, "%s", val->data.string);
        ret = 0;
    }
    if (val != NULL) {
        PMIX_VALUE_RELEASE(val);
    }
    return ret;
}

/* In the launcher's node list (its n names, each ended by '\0'): the positions of host me and
 * of host zero (-1: absent, -2: twice). */
static void find_nodes(const char *list, int n, const char *me, const char *zero, int *pos_me,
                       int *pos0)
{
    const char *p = list;
    *pos_me = *pos0 = -1;
    for (int i = 0; i < n; i++, p += strlen(p) + 1) {
        if (strcmp(p, me) == 0) {
            *pos_me = *pos_me == -1 ? i : -2; /* twice: the list is not one of names */
        }
        if (strcmp(p, zero) == 0) {
            *pos0 = *pos0 == -1 ? i : -2;
        }
    }
}

static const char *nth_name(const char *list, int want)
{
    for (int i = 0; i < want; i++) {
        list += strlen(list) + 1;
    }
    return list;
}

int cp_pmix_node_place(int k, int leader, int nlocal, cp_node_place_t *out, char *why, size_t wlen)
{
    char *list = NULL, me[256], zero[256];
    int n = 0, pos_me = -1, pos0 = -1, lo = -1, cnt = 0;
    if (!pmix_up || PMIx_Resolve_nodes(my_proc.nspace, &list) != PMIX_SUCCESS || list == NULL ||
        list[0] == '\0') {
        snprintf(why, wlen, "PMIx_Resolve_nodes gave no node list");
    } else if (host_of(my_proc.rank, me, sizeof(me)) != 0 || host_of(0, zero, sizeof(zero)) != 0) {
        snprintf(why, wlen, "no PMIX_HOSTNAME for this rank or rank 0");
    } else {
        for (char *c = list; *c != '\0'; c++) { /* "n1,n2,...": one name after the other */
            n += *c == ',' ? (*c = '\0', 1) : 0;
        }
        n++;
        find_nodes(list, n, me, zero, &pos_me, &pos0);
    }
    int ok = n > 0 && pos_me >= 0 && pos0 >= 0;
    if (n > 0 && !ok) {
        snprintf(why, wlen, "the node list (%d nodes) does not hold %s and %s once each", n, me,
                 zero);
    }
    int idx = ok ? cp_tree_node_swap(pos_me, pos0) : 0;
    if (ok && (node_peers(me, &lo, &cnt) != 0 || lo != leader || cnt != nlocal)) {
        snprintf(why, wlen, "PMIx's ranks on %s are not its local peers", me);
        ok = 0;
    }
    int parent = ok ? cp_tree_node_parent(idx, k) : -1;
    if (parent >= 0 &&
        (node_peers(nth_name(list, cp_tree_node_swap(parent, pos0)), &lo, &cnt) != 0 ||
         lo == leader || (parent == 0) != (lo == 0))) {
        snprintf(why, wlen, "PMIx names no ranks for node %d of the tree", parent);
        ok = 0;
    }
    if (ok) {
        out->index = idx;
        out->nnodes = n;
        out->parent_lead = parent >= 0 ? lo : -1;
        out->kid_nodes = cp_tree_node_kids(idx, k, n, &cnt);
    }
    free(list);
    return ok ? 0 : -1;
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
        cp_chan_close();
        PMIx_Finalize(NULL, 0);
        pmix_up = 0;
        my_rank = 0;
        my_nranks = 1;
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
    if (pmix_up) {
        cp_oob_log_stats("run");
        cp_chan_close();
        pmix_status_t rc = PMIx_Finalize(NULL, 0);
        if (rc != PMIX_SUCCESS) {
            cp_log(CP_LOG_WARN, "PMIx_Finalize: %s", PMIx_Error_string(rc));
        }
        pmix_up = 0;
    }
    my_rank = 0;
    my_nranks = 1;
    if (boot != NULL) {
        cp_tables_free(boot);
    }
}
