/*
 * Self-launch internals (collprof --np N), shared by the files of src/launch, top to bottom
 * (each calls only files below it):
 *
 *   launch.c            cp_launch_self() and the embedded-server launch
 *   launch_mpirun.c     the re-exec under mpirun
 *   launch_server.c     the PMIx server process (its own process: see launch.c)
 *   launch_supervise.c  the launcher's loop: fork/exec, reap, signals, timeouts
 *   launch_env.c        the ranks' environment, paths, private directories
 */
#ifndef COLLPROF_LAUNCH_LAUNCH_INT_H
#define COLLPROF_LAUNCH_LAUNCH_INT_H

#include "launch/launch.h"

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Frames from the server process to the launcher. */
enum {
    CP_LAUNCH_MSG_ENV = 1,
    CP_LAUNCH_MSG_CONNECTED,
    CP_LAUNCH_MSG_FINALIZED,
    CP_LAUNCH_MSG_ABORT
};

typedef struct cp_launch_msg {
    int32_t type;
    int32_t rank;
    int32_t status;
    uint32_t len; /* payload bytes that follow */
} cp_launch_msg_t;

/* ---- launch_env.c --------------------------------------------------- */

double cp_launch_now(void);
int cp_launch_write_all(int fd, const void *buf, size_t len);
int cp_launch_read_all(int fd, void *buf, size_t len);

/* Environment arrays: malloc'd strings (PMIx_server_setup_fork edits them). */
void cp_launch_env_free(char **env);
/** A copy of environ without the variables of an enclosing launch. */
char **cp_launch_env_clone(void);
/** A copy of a NULL-terminated environment array. */
char **cp_launch_env_dup(char *const *src);
/** Set name=value (replacing, or only when absent if !overwrite). */
int cp_launch_env_set(char ***envp, const char *name, const char *value, int overwrite);
/** Set a "NAME=value" entry, replacing any NAME. */
int cp_launch_env_put(char ***envp, const char *entry);
/** The Open MPI settings for direct launch under our server (see launch_env.c). */
int cp_launch_env_add_ompi(char ***envp, const char *tmpdir, const char *shmdir,
                           int oversubscribed);
/** Unset, in this process, the variables that name another PMIx server or job. */
void cp_launch_scrub_own_env(void);
/** CPUs this process may run on. */
int cp_launch_online_cpus(void);

/** The executable to run: /proc/self/exe resolved, so argv[0] does not matter. */
void cp_launch_self_exe(char *buf, size_t size);
/** mkdtemp base/collprof.XXXXXX into dir. */
int cp_launch_private_dir(const char *base, char *dir, size_t size);
/** A private directory under $TMPDIR (short) or /tmp; logs its errors. */
int cp_launch_tmp_dir(char *dir, size_t size);
void cp_launch_remove_tree(const char *dir);
/** Search PATH for an executable name (no shell involved). */
int cp_launch_find_in_path(const char *name, char *out, size_t size);

/* ---- launch_netns.c ------------------------------------------------- */

/** This process (and the server and ranks it starts after) in a private network namespace
 *  with loopback alone, unless COLLPROF_NP_NETNS=0: 0 contained, 1 not (said at info level,
 *  a warning with COLLPROF_NP_NETNS=1), -1 half done (logged): the launch must stop. */
int cp_launch_contain(void);

/* ---- launch_server.c ------------------------------------------------ */

/**
 * The server process: serve the namespace until the launcher closes cmdfd
 * (or dies), sending frames on evfd.  Never returns.
 */
void cp_launch_server_main(pid_t launcher, int np, const char *nspace, const char *host,
                           const char *dir, int evfd, int cmdfd) __attribute__((noreturn));

/* ---- launch_supervise.c --------------------------------------------- */

/* One supervised child: a rank (embedded mode) or mpirun (MPIRUN mode). */
typedef struct cp_launch_child {
    pid_t pid; /* 0 when never started */
    int alive;
    int connected; /* PMIx_Init reached the server */
    int finalized; /* PMIx_Finalize reached the server */
    int status;    /* exit status as a shell reports it, once dead */
} cp_launch_child_t;

typedef struct cp_launch_job {
    double timeout_s; /* 0: none */
    int mpirun;       /* the one child is mpirun */
    int np;
    cp_launch_child_t *children;
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
} cp_launch_job_t;

/** Zero a job for nchildren children (allocated); -1 when out of memory. */
int cp_launch_job_init(cp_launch_job_t *job, const cp_launch_opts_t *opts, int nchildren);
/** Block the signals the loop takes through a signalfd. */
int cp_launch_signals_take(cp_launch_job_t *job);
void cp_launch_signals_restore(cp_launch_job_t *job);
/** Set the disposition of sigs[0..n-1] to handler (SIG_IGN, SIG_DFL); async-signal-safe. */
void cp_launch_signals_set(void (*handler)(int), const int *sigs, size_t n);
/**
 * Fork and exec: the child gets default signal handling, the mask given,
 * and dies with deathsig when the launcher dies.  Returns the pid or -1.
 */
pid_t cp_launch_spawn(const char *path, char *const argv[], char *const envp[],
                      const sigset_t *mask, int deathsig);
/** Run until every started child is gone; returns the job's exit status. */
int cp_launch_supervise(cp_launch_job_t *job);
/** End the server process: let it finalize after a clean job, else kill it. */
void cp_launch_server_stop(cp_launch_job_t *job, int clean);

/* ---- launch_mpirun.c ------------------------------------------------ */

/** Re-exec argv under mpirun -np np and supervise it. */
int cp_launch_mpirun(int np, char **argv, const cp_launch_opts_t *opts);

#endif /* COLLPROF_LAUNCH_LAUNCH_INT_H */
