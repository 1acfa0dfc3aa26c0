#include "config.h"

#include "slurm/slurm_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#if defined(HAVE_LIBSLURM) && defined(HAVE_SLURM_LOAD_TOPO)
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

/* 1 when host (or its short name) is in hl. */
static int has_host(hostlist_t hl, const char *host)
{
    char shrt[256];
    snprintf(shrt, sizeof(shrt), "%s", host);
    shrt[strcspn(shrt, ".")] = '\0';
    return slurm_hostlist_find(hl, host) >= 0 || (shrt[0] && slurm_hostlist_find(hl, shrt) >= 0);
}

/* The leaves from the records of msg: the switches found. */
static int leaves_of(const topo_info_response_msg_t *msg, const char *const *hosts, int n,
                     int *leaf)
{
    int found = 0;
    for (uint32_t k = 0; k < msg->record_count; k++) {
        const topo_info_t *t = &msg->topo_array[k];
        if (t->nodes == NULL || t->nodes[0] == '\0') {
            continue; /* a switch of switches */
        }
        hostlist_t hl = slurm_hostlist_create(t->nodes);
        if (hl == NULL) {
            continue;
        }
        int here = 0;
        for (int i = 0; i < n; i++) {
            if (leaf[i] < 0 && hosts[i] != NULL && has_host(hl, hosts[i])) {
                leaf[i] = found;
                here = 1;
            }
        }
        found += here;
        slurm_hostlist_destroy(hl);
    }
    return found;
}
#endif

int cp_slurm_topo_leaves(const char *const *hosts, int n, int *leaf, char *why, size_t len)
{
    for (int i = 0; i < n; i++) {
        leaf[i] = -1;
    }
    snprintf(why, len, "%s", "");
#if defined(HAVE_LIBSLURM) && defined(HAVE_SLURM_LOAD_TOPO)
    const char *conf = getenv("SLURM_CONF"), *job = getenv("SLURM_JOB_ID");
    const char *off = getenv("COLLPROF_SLURM_LOOKUP");
    struct stat st;
    if (conf == NULL || conf[0] == '\0') {
        conf = "/etc/slurm/slurm.conf";
    }
    if (off != NULL && !strcmp(off, "0")) {
        snprintf(why, len, "not asked (COLLPROF_SLURM_LOOKUP=0)");
        return 0;
    }
    if (job == NULL || job[0] == '\0') {
        snprintf(why, len, "not in a Slurm job");
        return 0;
    }
    if (getenv("COLLPROF_NP_CONTAINED") != NULL && !strcmp(getenv("COLLPROF_NP_CONTAINED"), "1")) {
        snprintf(why, len, "not asked (--np's private network namespace: slurmctld out of reach)");
        return 0;
    }
    /* libslurm exits the process when it finds no configuration */
    if (stat(conf, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, len, "not asked (no configuration file %s)", conf);
        return 0;
    }
    slurm_init(NULL);
    topo_info_response_msg_t *msg = NULL;
    int found = 0;
    if (slurm_load_topo(&msg) != SLURM_SUCCESS || msg == NULL) {
        snprintf(why, len, "slurm_load_topo: %s", slurm_strerror(slurm_get_errno()));
    } else if (msg->record_count == 0) {
        snprintf(why, len, "no switches (TopologyPlugin is not topology/tree)");
    } else if ((found = leaves_of(msg, hosts, n, leaf)) == 0) {
        snprintf(why, len, "no node of the job is in the topology's %u switches",
                 (unsigned)msg->record_count);
    }
    if (msg != NULL) {
        slurm_free_topo_info_msg(msg);
    }
    slurm_fini();
    return found;
#else
    (void)hosts;
#ifdef HAVE_LIBSLURM
    snprintf(why, len, "this libslurm's slurm_load_topo is not the one collprof knows (22.05)");
#else
    snprintf(why, len, "collprof was built without libslurm");
#endif
    return 0;
#endif
}
