#include "config.h"

/*
 * The PMIx session underneath the control channel (pmix_session.h), at the bottom of
 * src/chan: this process's PMIx name, the job's size and this rank (set by cp_boot_init), a
 * PMIx_Get of one value, this node's local peers and its place in the control tree.
 */

#include "chan/pmix_session.h"
#include "chan/tree_shape.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Module state: PMIx is process-wide, so is this. */
static int pmix_up;         /* PMIx_Init succeeded and not finalized */
static pmix_proc_t my_proc; /* namespace and rank */
static int my_rank;
static int my_nranks = 1;

void cp_pmix_session_open(const pmix_proc_t *proc)
{
    my_proc = *proc;
    pmix_up = 1;
}

void cp_pmix_session_size(int rank, int nranks)
{
    my_rank = rank;
    my_nranks = nranks;
}

void cp_pmix_session_close(void)
{
    pmix_up = 0;
    my_rank = 0;
    my_nranks = 1;
}

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

/* PMIx_Get of key on rank (or PMIX_RANK_WILDCARD); optional: look only in data the server
 * already gave us.  The value (PMIX_VALUE_RELEASE it), or NULL with *rc. */
pmix_value_t *cp_pmix_value(pmix_rank_t rank, const char *key, int optional, pmix_status_t *rc)
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

/* The lowest rank of this node and how many: from PMIX_LOCAL_PEERS ("0,1,2,3", ranges
 * "0-3" too), which every launcher we run under publishes. */
int cp_pmix_local_peers(int *lowest, int *count)
{
    pmix_status_t rc;
    pmix_value_t *val = cp_pmix_value(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, 1, &rc);
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
    pmix_value_t *val = cp_pmix_value(rank, PMIX_HOSTNAME, 1, &rc);
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
