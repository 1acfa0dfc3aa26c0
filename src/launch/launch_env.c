#include "config.h"

/*
 * Self-launch: what the ranks inherit.  Their environment (the caller's,
 * without the variables of an enclosing launch, plus ours), the paths
 * (our executable, mpirun), private directories, and the small I/O helpers
 * the launcher and the server process share.
 */

#include "launch/launch_int.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <ftw.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

double cp_launch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Move exactly len bytes (out: write buf to fd, else read fd into buf). */
static int io_all(int fd, char *p, size_t len, int out)
{
    while (len > 0) {
        ssize_t n = out ? write(fd, p, len) : read(fd, p, len);
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

int cp_launch_write_all(int fd, const void *buf, size_t len)
{
    return io_all(fd, (char *)buf, len, 1);
}

int cp_launch_read_all(int fd, void *buf, size_t len)
{
    return io_all(fd, buf, len, 0);
}

/* ---------------------------------------------------------------------- */
/* Environment arrays (malloc'd strings: PMIx_server_setup_fork edits them). */

void cp_launch_env_free(char **env)
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

/* A copy of src; filter: without the variables of an enclosing launch. */
static char **env_copy(char *const *src, int filter)
{
    size_t n = 0;
    while (src[n] != NULL) {
        n++;
    }
    char **env = calloc(n + 1, sizeof(*env));
    if (env == NULL) {
        return NULL;
    }
    int under_mpirun = filter && (getenv("OMPI_COMM_WORLD_SIZE") != NULL ||
                                  getenv("OMPI_MCA_orte_launch") != NULL);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (filter &&
            (env_is_stale_pmix(src[i]) || (under_mpirun && env_is_stale_mpirun(src[i])))) {
            continue;
        }
        env[k] = strdup(src[i]);
        if (env[k] == NULL) {
            cp_launch_env_free(env);
            return NULL;
        }
        k++;
    }
    env[k] = NULL;
    return env;
}

char **cp_launch_env_clone(void)
{
    return env_copy(environ, 1);
}

char **cp_launch_env_dup(char *const *src)
{
    return env_copy(src, 0);
}

/* Set name=value in env (replacing, or only when absent if !overwrite). */
int cp_launch_env_set(char ***envp, const char *name, const char *value, int overwrite)
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
int cp_launch_env_put(char ***envp, const char *entry)
{
    const char *eq = strchr(entry, '=');
    if (eq == NULL || eq == entry) {
        return 0; /* not a variable: ignore */
    }
    char *name = strndup(entry, (size_t)(eq - entry));
    if (name == NULL) {
        return -1;
    }
    int rc = cp_launch_env_set(envp, name, eq + 1, 1);
    free(name);
    return rc;
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
int cp_launch_env_add_ompi(char ***envp, const char *tmpdir, const char *shmdir, int oversubscribed)
{
    if (oversubscribed && cp_launch_env_set(envp, "OMPI_MCA_mpi_oversubscribe", "1", 0) != 0) {
        return -1;
    }
    if (cp_launch_env_set(envp, "OMPI_MCA_schizo", "^orte", 0) != 0 ||
        cp_launch_env_set(envp, "OMPI_MCA_ess", "pmi", 0) != 0 ||
        cp_launch_env_set(envp, "OMPI_MCA_orte_tmpdir_base", tmpdir, 0) != 0) {
        return -1;
    }
    if (shmdir != NULL &&
        cp_launch_env_set(envp, "OMPI_MCA_btl_vader_backing_directory", shmdir, 0) != 0) {
        return -1;
    }
    return 0;
}

/* Our server must not see the variables of an enclosing PMIx job. */
void cp_launch_scrub_own_env(void)
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

/* CPUs this process may run on. */
int cp_launch_online_cpus(void)
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
void cp_launch_self_exe(char *buf, size_t size)
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

/* This node's tag in the directories' names: 8 hex digits of its host name (FNV-1a), so that
 * on a TMPDIR shared by nodes a sweep tells its own node's directories from the others'. */
static void host_tag(char tag[9])
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0) {
        snprintf(host, sizeof(host), "localhost");
    }
    host[sizeof(host) - 1] = '\0';
    uint32_t x = 2166136261u;
    for (const char *h = host; *h; h++) {
        x = (x ^ (unsigned char)*h) * 16777619u;
    }
    snprintf(tag, 9, "%08x", (unsigned)x);
}

/*
 * Remove base/collprof.<tag>.<pid>.XXXXXX directories that a launcher of this
 * node (tag) killed with SIGKILL left behind: only real directories of this
 * user whose launcher pid no longer exists here (a pid in use again keeps
 * its directory: the next sweep gets it).  Another node's, on a shared
 * TMPDIR, carry another tag: its pids mean nothing here.
 */
static void sweep_stale(const char *base, const char *tag)
{
    DIR *d = opendir(base);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        long pid = 0;
        int used = 0;
        char path[PATH_MAX], theirs[9];
        struct stat st;
        if (sscanf(e->d_name, "collprof.%8[0-9a-f].%ld.%*6[A-Za-z0-9]%n", theirs, &pid, &used) !=
                2 ||
            e->d_name[used] != '\0' || used == 0 || pid <= 0 || strcmp(theirs, tag) != 0 ||
            (size_t)snprintf(path, sizeof(path), "%s/%s", base, e->d_name) >= sizeof(path) ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
            continue;
        }
        cp_log(CP_LOG_INFO, "removing %s, left by launcher %ld that is gone", path, pid);
        cp_launch_remove_tree(path);
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* mkdtemp base/collprof.<tag>.<pid>.XXXXXX into dir, after removing those of dead launchers of
 * this node. */
int cp_launch_private_dir(const char *base, char *dir, size_t size)
{
    char tag[9];
    host_tag(tag);
    sweep_stale(base, tag);
    if ((size_t)snprintf(dir, size, "%s/collprof.%s.%ld.XXXXXX", base, tag, (long)getpid()) >=
        size) {
        return -1;
    }
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    cp_log(CP_LOG_INFO, "launcher: private directory %s", dir);
    return 0;
}

int cp_launch_tmp_dir(char *dir, size_t size)
{
    const char *base = getenv("TMPDIR");
    /* PMIx puts Unix socket paths in here: keep them short (sun_path is 108; the directory's
     * own name takes 33 more) */
    if (base == NULL || base[0] == '\0' || strlen(base) > 40) {
        base = "/tmp";
    }
    if (cp_launch_private_dir(base, dir, size) != 0) {
        cp_log(CP_LOG_ERROR, "cannot create a private directory in %s (%s): %s", base,
               base[0] == '/' && strcmp(base, "/tmp") == 0 ? "the default" : "TMPDIR",
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

void cp_launch_remove_tree(const char *dir)
{
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Search PATH for an executable name (no shell involved). */
int cp_launch_find_in_path(const char *name, char *out, size_t size)
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
