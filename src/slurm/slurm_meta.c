#include "config.h"

#include "slurm/slurm_meta.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#ifdef HAVE_LIBSLURM
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#endif

/* key, then the environment variables that may give it, first found wins */
static const char *const env_fields[][4] = {
    {"slurm_job_id", "SLURM_JOB_ID", "SLURM_JOBID", NULL},
    {"slurm_step_id", "SLURM_STEP_ID", "SLURM_STEPID", NULL},
    {"slurm_array_job_id", "SLURM_ARRAY_JOB_ID", NULL, NULL},
    {"slurm_array_task_id", "SLURM_ARRAY_TASK_ID", NULL, NULL},
    {"slurm_array_task_count", "SLURM_ARRAY_TASK_COUNT", NULL, NULL},
    {"slurm_job_name", "SLURM_JOB_NAME", NULL, NULL},
    {"slurm_cluster", "SLURM_CLUSTER_NAME", NULL, NULL},
    {"slurm_partition", "SLURM_JOB_PARTITION", NULL, NULL},
    {"slurm_account", "SLURM_JOB_ACCOUNT", NULL, NULL},
    {"slurm_qos", "SLURM_JOB_QOS", NULL, NULL},
    {"slurm_reservation", "SLURM_JOB_RESERVATION", NULL, NULL},
    {"slurm_job_user", "SLURM_JOB_USER", NULL, NULL},
    {"slurm_submit_host", "SLURM_SUBMIT_HOST", NULL, NULL},
    {"slurm_submit_dir", "SLURM_SUBMIT_DIR", NULL, NULL},
    {"slurm_nodelist", "SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL},
    {"slurm_nnodes", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", NULL},
    {"slurm_ntasks", "SLURM_NTASKS", "SLURM_NPROCS", NULL},
    {"slurm_step_nodelist", "SLURM_STEP_NODELIST", NULL, NULL},
    {"slurm_step_num_tasks", "SLURM_STEP_NUM_TASKS", NULL, NULL},
    {"slurm_step_tasks_per_node", "SLURM_STEP_TASKS_PER_NODE", NULL, NULL},
    {"slurm_nodename", "SLURMD_NODENAME", NULL, NULL},
    {"slurm_cpus_on_node", "SLURM_CPUS_ON_NODE", NULL, NULL},
    {"slurm_job_cpus_per_node", "SLURM_JOB_CPUS_PER_NODE", NULL, NULL},
    {"slurm_cpus_per_task", "SLURM_CPUS_PER_TASK", NULL, NULL},
    {"slurm_overcommit", "SLURM_OVERCOMMIT", NULL, NULL},
    {"slurm_distribution", "SLURM_DISTRIBUTION", NULL, NULL},
    {"slurm_cpu_bind", "SLURM_CPU_BIND", NULL, NULL},
    {"slurm_mem_per_node", "SLURM_MEM_PER_NODE", NULL, NULL},
    {"slurm_mem_per_cpu", "SLURM_MEM_PER_CPU", NULL, NULL},
    {"slurm_gpus_on_node", "SLURM_GPUS_ON_NODE", NULL, NULL},
    {"slurm_gpus", "SLURM_GPUS", NULL, NULL},
    {"slurm_gpus_per_node", "SLURM_GPUS_PER_NODE", NULL, NULL},
    {"slurm_gpus_per_task", "SLURM_GPUS_PER_TASK", NULL, NULL},
    {"slurm_job_gpus", "SLURM_JOB_GPUS", NULL, NULL},
    {"slurm_step_gpus", "SLURM_STEP_GPUS", NULL, NULL},
};
#define N_ENV_FIELDS ((int)(sizeof(env_fields) / sizeof(env_fields[0])))

/* at most this many come from slurm_load_job, and one slurm_meta_source */
#define N_JOB_FIELDS 12

_Static_assert(N_ENV_FIELDS + N_JOB_FIELDS + 1 <= CP_SLURM_META_MAX,
               "CP_SLURM_META_MAX is too small");

const char *cp_slurm_meta_get(const cp_slurm_kv_t *kv, int n, const char *key)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(kv[i].key, key)) {
            return kv[i].value;
        }
    }
    return NULL;
}

/* append key=value unless the key is there, the value empty, or kv full */
static int put(cp_slurm_kv_t *kv, int n, int max, const char *key, const char *value)
{
    if (n >= max || value == NULL || value[0] == '\0' || cp_slurm_meta_get(kv, n, key) != NULL) {
        return n;
    }
    snprintf(kv[n].key, sizeof(kv[n].key), "%s", key);
    snprintf(kv[n].value, sizeof(kv[n].value), "%s", value);
    return n + 1;
}

int cp_slurm_meta_env(cp_slurm_kv_t *kv, int max)
{
    int n = 0;
    if (kv == NULL || max <= 0 || getenv("SLURM_JOB_ID") == NULL) {
        return 0;
    }
    for (int f = 0; f < N_ENV_FIELDS; f++) {
        for (int v = 1; v < 4 && env_fields[f][v] != NULL; v++) {
            const char *value = getenv(env_fields[f][v]);
            if (value != NULL && value[0] != '\0') {
                n = put(kv, n, max, env_fields[f][0], value);
                break;
            }
        }
    }
    return n;
}

#ifdef HAVE_LIBSLURM
/* The libslurm part, looked up once: facts, or why there are none. */
static cp_slurm_kv_t job_kv[N_JOB_FIELDS];
static int job_n = -1;
static char job_why[256];

static void utc_iso(time_t t, char *buf, size_t len)
{
    struct tm tm;
    buf[0] = '\0';
    if (t > 0 && gmtime_r(&t, &tm) != NULL) {
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
}

/* the N of "gres/gpu=N" in a TRES string ("cpu=4,mem=1G,node=1,gres/gpu=2"), or "" */
static void tres_gpus(const char *tres, char *buf, size_t len)
{
    buf[0] = '\0';
    for (const char *p = tres; p != NULL && (p = strstr(p, "gres/gpu")) != NULL; p++) {
        if ((p == tres || p[-1] == ',') && p[8] == '=') {
            snprintf(buf, len, "%ld", strtol(p + 9, NULL, 10));
            return;
        }
    }
}

/* The job id to ask slurmctld about, or 0 with job_why saying why it is not asked. */
static unsigned long job_to_ask(void)
{
    const char *conf = getenv("SLURM_CONF");
    struct stat st;
    if (conf == NULL || conf[0] == '\0') {
        conf = "/etc/slurm/slurm.conf";
    }
    const char *off = getenv("COLLPROF_SLURM_LOOKUP"), *own = getenv("COLLPROF_NP_CONTAINED");
    if (off != NULL && !strcmp(off, "0")) {
        snprintf(job_why, sizeof(job_why), "off (COLLPROF_SLURM_LOOKUP=0)");
        return 0;
    }
    /* --np's ranks in their own network namespace (src/launch/launch_netns.c): no route to
     * slurmctld, and libslurm spent 10 s a lookup retrying the name before it gave up */
    if (own != NULL && !strcmp(own, "1")) {
        snprintf(job_why, sizeof(job_why),
                 "not asked (--np's private network namespace: slurmctld out of reach)");
        return 0;
    }
    /* libslurm exits the process when it finds no configuration */
    if (stat(conf, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(job_why, sizeof(job_why), "not asked (no configuration file %s)", conf);
        return 0;
    }
    char *end;
    unsigned long id = strtoul(getenv("SLURM_JOB_ID"), &end, 10);
    if (*end != '\0' || id == 0 || id >= NO_VAL) {
        snprintf(job_why, sizeof(job_why), "not asked (SLURM_JOB_ID is not a job id)");
        return 0;
    }
    return id;
}

static void load_job(void)
{
    job_n = 0;
    unsigned long id = job_to_ask();
    if (id == 0) {
        return;
    }
    slurm_init(NULL);
    job_info_msg_t *msg = NULL;
    if (slurm_load_job(&msg, (uint32_t)id, SHOW_DETAIL) != SLURM_SUCCESS || msg == NULL ||
        msg->record_count < 1) {
        snprintf(job_why, sizeof(job_why), "failed: %s", slurm_strerror(slurm_get_errno()));
        if (msg != NULL) {
            slurm_free_job_info_msg(msg);
        }
        slurm_fini();
        return;
    }
    const slurm_job_info_t *j = &msg->job_array[0];
    char buf[64];
    int n = 0;
    if (j->time_limit == INFINITE) {
        n = put(job_kv, n, N_JOB_FIELDS, "slurm_time_limit", "UNLIMITED");
    } else if (j->time_limit != NO_VAL) {
        snprintf(buf, sizeof(buf), "%u min", j->time_limit);
        n = put(job_kv, n, N_JOB_FIELDS, "slurm_time_limit", buf);
    }
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_partition", j->partition);
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_account", j->account);
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_qos", j->qos);
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_nodelist", j->nodes);
    snprintf(buf, sizeof(buf), "%u", j->num_nodes);
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_nnodes", buf);
    snprintf(buf, sizeof(buf), "%u", j->num_cpus);
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_job_num_cpus", buf);
    const char *node = getenv("SLURMD_NODENAME");
    if (node != NULL && j->job_resrcs != NULL) {
        int cpus = slurm_job_cpus_allocated_on_node(j->job_resrcs, node);
        if (cpus > 0) {
            snprintf(buf, sizeof(buf), "%d", cpus);
            n = put(job_kv, n, N_JOB_FIELDS, "slurm_cpus_on_node", buf);
        }
    }
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_tres_alloc", j->tres_alloc_str);
    tres_gpus(j->tres_alloc_str, buf, sizeof(buf));
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_job_num_gpus", buf);
    utc_iso(j->submit_time, buf, sizeof(buf));
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_submit_time", buf);
    utc_iso(j->start_time, buf, sizeof(buf));
    n = put(job_kv, n, N_JOB_FIELDS, "slurm_start_time", buf);
    job_n = n;
    snprintf(job_why, sizeof(job_why), "ok");
    slurm_free_job_info_msg(msg);
    slurm_fini();
}
#endif

int cp_slurm_meta(cp_slurm_kv_t *kv, int max)
{
    int n = cp_slurm_meta_env(kv, max);
    if (n == 0) {
        return 0;
    }
    const char *source = "environment";
#ifdef HAVE_LIBSLURM
    char why[320];
    if (job_n < 0) {
        load_job();
    }
    for (int i = 0; i < job_n; i++) {
        n = put(kv, n, max, job_kv[i].key, job_kv[i].value);
    }
    if (!strcmp(job_why, "ok")) {
        source = "environment+slurm_load_job";
    } else {
        snprintf(why, sizeof(why), "environment; slurm_load_job: %s", job_why);
        source = why;
    }
#endif
    return put(kv, n, max, "slurm_meta_source", source);
}
