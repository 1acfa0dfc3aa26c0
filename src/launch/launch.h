/*
 * Starting ranks (collprof --np N): cp_launch_self() runs them under the embedded PMIx server
 * or re-execs under mpirun (src/launch; its internals: launch_int.h).
 */
#ifndef COLLPROF_LAUNCH_LAUNCH_H
#define COLLPROF_LAUNCH_LAUNCH_H

typedef enum cp_launch_mode {
    CP_LAUNCH_EMBEDDED = 0, /**< the embedded PMIx server (it also runs Open MPI 4.1 jobs) */
    CP_LAUNCH_MPIRUN        /**< re-exec under mpirun */
} cp_launch_mode_t;

typedef struct cp_launch_opts {
    cp_launch_mode_t mode;
    double timeout_s; /**< 0: none; else terminate the job after this many seconds */
} cp_launch_opts_t;

/**
 * Start np local ranks running argv (argv[0] is resolved through
 * /proc/self/exe), each with COLLPROF_SELF_LAUNCHED=1 in its environment,
 * wait for them, forward SIGINT/SIGTERM/SIGHUP, and kill the rest (5 s
 * after the first failure) when one dies abnormally.  Returns the exit
 * status for the launcher process: 0 when every rank exited 0, else the
 * first non-zero rank status (128+signal for a signal); the status a rank
 * passed to PMIx_Abort (MPI_Abort); 124 when opts->timeout_s
 * ran out.  Call it before starting any thread: it blocks SIGCHLD, SIGINT,
 * SIGTERM and SIGHUP in the calling thread while it runs.  In embedded mode
 * the ranks also get the Open MPI settings for direct launch (OMPI_MCA_schizo,
 * OMPI_MCA_ess, session and shared-memory directories; see launch_env.c).
 */
int cp_launch_self(int np, char **argv, const cp_launch_opts_t *opts);

#endif /* COLLPROF_LAUNCH_LAUNCH_H */
