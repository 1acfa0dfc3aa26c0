#include "config.h"

/*
 * Self-launch: the launcher's supervision loop (one thread, no PMIx).  It
 * starts the ranks as the server process hands out their environments
 * (embedded mode) or supervises one mpirun (MPIRUN mode), reaps children,
 * forwards SIGINT, SIGTERM and SIGHUP, kills the survivors when a rank
 * fails, and honours the job timeout.
 */

#include "launch/launch_int.h"
#include "base/log.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds the survivors get after a rank fails before they are SIGKILLed. */
#define GRACE_S 5.0
/* Once the job is failing, a further exit shortens the wait to this. */
#define GRACE_SHORT_S 1.0
/* After a forwarded SIGINT/SIGTERM/SIGHUP or a timeout, SIGKILL follows after this. */
#define SIGNAL_GRACE_S 3.0
/* How long the server process may take to finalize after a clean job. */
#define SERVER_EXIT_S 2.0
/* How long the server process may take to hand out every rank's environment. */
#define SERVER_START_S 30.0
/* Exit status reported when the job ran past its timeout (as timeout(1)). */
#define TIMEOUT_STATUS 124
#define NEVER          1e300

int cp_launch_job_init(cp_launch_job_t *job, const cp_launch_opts_t *opts, int nchildren)
{
    memset(job, 0, sizeof(*job));
    job->timeout_s = opts->timeout_s;
    job->evfd = -1;
    job->cmdfd = -1;
    job->sigfd = -1;
    job->t_start = cp_launch_now();
    job->children = calloc((size_t)nchildren, sizeof(*job->children));
    if (job->children == NULL) {
        cp_log(CP_LOG_ERROR, "out of memory");
        return -1;
    }
    return 0;
}

/* Block the signals the loop takes through a signalfd. */
int cp_launch_signals_take(cp_launch_job_t *job)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    /* waitpid needs SIGCHLD not to be ignored */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, &job->oldchld);
    sigprocmask(SIG_BLOCK, &set, &job->oldmask);
    job->sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (job->sigfd < 0) {
        cp_log(CP_LOG_ERROR, "signalfd: %s", strerror(errno));
        sigprocmask(SIG_SETMASK, &job->oldmask, NULL);
        sigaction(SIGCHLD, &job->oldchld, NULL);
        return -1;
    }
    return 0;
}

void cp_launch_signals_restore(cp_launch_job_t *job)
{
    close(job->sigfd);
    job->sigfd = -1;
    /* drop a pending SIGCHLD so restoring the mask does not deliver it */
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, SIGCHLD);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&one, NULL, &zero) > 0) {
    }
    sigprocmask(SIG_SETMASK, &job->oldmask, NULL);
    sigaction(SIGCHLD, &job->oldchld, NULL);
}

void cp_launch_signals_set(void (*handler)(int), const int *sigs, size_t n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    for (size_t i = 0; i < n; i++) {
        sigaction(sigs[i], &sa, NULL);
    }
}

/*
 * Fork and exec (async-signal-safe calls only in the child).  The child
 * gets default signal handling, the caller's original mask, and dies with
 * deathsig when the launcher dies.  Returns the pid or -1.
 */
pid_t cp_launch_spawn(const char *path, char *const argv[], char *const envp[],
                      const sigset_t *mask, int deathsig)
{
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) {
        return pid;
    }
    static const int reset[] = {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP};
    cp_launch_signals_set(SIG_DFL, reset, sizeof(reset) / sizeof(reset[0]));
    sigprocmask(SIG_SETMASK, mask, NULL);
    prctl(PR_SET_PDEATHSIG, deathsig);
    if (getppid() != parent) {
        _exit(127);
    }
    execve(path, argv, envp);
    static const char msg[] = "collprof: error: exec failed for a launched process\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)w;
    _exit(127);
}

static int decode_status(int wstatus)
{
    if (WIFEXITED(wstatus)) {
        return WEXITSTATUS(wstatus);
    }
    if (WIFSIGNALED(wstatus)) {
        return 128 + WTERMSIG(wstatus);
    }
    return 1;
}

/* Send sig to every live child but spare (-1: none spared). */
static void signal_children(cp_launch_job_t *job, int sig, int spare)
{
    for (int i = 0; i < job->nstarted; i++) {
        if (i != spare && job->children[i].alive) {
            kill(job->children[i].pid, sig);
        }
    }
}

/* Process pid's state and parent from /proc/pid/stat; 0 when unreadable. */
static char proc_stat(long pid, long *ppid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
    const char *rp = strrchr(buf, ')');
    char state;
    if (rp == NULL || sscanf(rp + 1, " %c %ld", &state, ppid) != 2) {
        return 0;
    }
    return state;
}

/* 'T' when pid is stopped (SIGSTOP, a debugger), else its state or 0. */
static char proc_state(pid_t pid)
{
    long ppid;
    return proc_stat((long)pid, &ppid);
}

/* Send sig to the children of pid (mpirun's ranks), found through /proc. */
static void signal_grandchildren(pid_t parent, int sig)
{
    DIR *proc = opendir("/proc");
    if (proc == NULL) {
        return;
    }
    struct dirent *de;
    while ((de = readdir(proc)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (pid <= 0 || *end != '\0') {
            continue;
        }
        long ppid;
        if (proc_stat(pid, &ppid) != 0 && ppid == parent) {
            kill((pid_t)pid, sig);
        }
    }
    closedir(proc);
}

static void arm_kill(cp_launch_job_t *job, double in_s)
{
    double t = cp_launch_now() + in_s;
    if (job->kill_deadline > t) {
        job->kill_deadline = t;
    }
}

static const char *child_name(const cp_launch_job_t *job, int i, char *buf, size_t size)
{
    if (job->mpirun) {
        snprintf(buf, size, "mpirun");
    } else {
        snprintf(buf, size, "rank %d", i);
    }
    return buf;
}

/* Start rank r with the base environment plus the server's variables. */
static void start_rank(cp_launch_job_t *job, int r, const char *vars, size_t len)
{
    char **env = cp_launch_env_dup(job->base_env);
    int bad = env == NULL;
    for (size_t off = 0; !bad && off < len; off += strlen(vars + off) + 1) {
        bad = cp_launch_env_put(&env, vars + off) != 0;
    }
    if (bad) {
        cp_log(CP_LOG_ERROR, "out of memory building the environment of rank %d", r);
    } else {
        pid_t pid = cp_launch_spawn(job->exe, job->argv, env, &job->oldmask, SIGKILL);
        if (pid > 0) {
            job->children[r].pid = pid;
            job->children[r].alive = 1;
            job->nalive++;
        } else {
            cp_log(CP_LOG_ERROR, "fork for rank %d failed: %s", r, strerror(errno));
            bad = 1;
        }
    }
    cp_launch_env_free(env);
    if (bad && !job->failed) {
        job->failed = 1;
        job->result = 1;
        job->stop_starting = 1;
        arm_kill(job, 0);
    }
}

static void on_abort(cp_launch_job_t *job, int rank, int status, const char *msg)
{
    if (job->aborted) {
        return;
    }
    job->aborted = 1;
    job->abort_rank = rank;
    job->abort_status = status;
    job->stop_starting = 1;
    cp_log(CP_LOG_ERROR, "rank %d called abort with status %d%s%s", rank, status,
           msg[0] != '\0' ? ": " : "", msg);
    /* a stopped rank (rank 0 above all: it writes the results) is woken
     * and asked to end, so that it can close its outputs; SIGKILL follows */
    int stopped = 0;
    for (int i = 0; i < job->nstarted; i++) {
        cp_launch_child_t *c = &job->children[i];
        if (i != rank && c->alive && !job->mpirun && proc_state(c->pid) == 'T') {
            kill(c->pid, SIGTERM);
            kill(c->pid, SIGCONT);
            stopped = 1;
        } else if (i != rank && c->alive) {
            kill(c->pid, SIGKILL);
        }
    }
    arm_kill(job, stopped ? GRACE_SHORT_S : GRACE_S);
}

/* Read and act on one frame; -1 when the server process has gone. */
static int handle_frame(cp_launch_job_t *job)
{
    cp_launch_msg_t h;
    if (cp_launch_read_all(job->evfd, &h, sizeof(h)) != 0 || h.len > (1u << 24)) {
        return -1;
    }
    char *payload = malloc((size_t)h.len + 1);
    if (payload == NULL) {
        return -1;
    }
    if (cp_launch_read_all(job->evfd, payload, h.len) != 0) {
        free(payload);
        return -1;
    }
    payload[h.len] = '\0';
    int r = h.rank;
    int valid = r >= 0 && r < job->np;
    switch (h.type) {
    case CP_LAUNCH_MSG_ENV:
        if (r == job->nstarted) {
            if (!job->stop_starting) {
                start_rank(job, r, payload, h.len);
            }
            job->nstarted++;
        }
        break;
    case CP_LAUNCH_MSG_CONNECTED:
        if (valid && !job->children[r].connected) {
            job->children[r].connected = 1;
            if (++job->nconnected == job->np) {
                cp_log(CP_LOG_INFO, "all %d ranks connected %.3f s after launch", job->np,
                       cp_launch_now() - job->t_start);
            }
        }
        break;
    case CP_LAUNCH_MSG_FINALIZED:
        if (valid) {
            job->children[r].finalized = 1;
        }
        break;
    case CP_LAUNCH_MSG_ABORT: on_abort(job, r, h.status, payload); break;
    default: break;
    }
    free(payload);
    return 0;
}

/* Act on every frame already waiting. */
static void drain_frames(cp_launch_job_t *job)
{
    while (job->evfd >= 0) {
        struct pollfd p = {.fd = job->evfd, .events = POLLIN};
        if (poll(&p, 1, 0) <= 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
            return;
        }
        if (handle_frame(job) != 0) {
            close(job->evfd);
            job->evfd = -1;
        }
    }
}

static void drain_signals(cp_launch_job_t *job)
{
    struct signalfd_siginfo si;
    while (read(job->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            /* SIGCHLDs that arrive together coalesce, keeping the first
             * sender: the child that died first */
            if (job->first_dead == 0) {
                job->first_dead = (pid_t)si.ssi_pid;
            }
            continue; /* reaped below */
        }
        cp_log(CP_LOG_WARN, "caught signal %d (%s); forwarding it to the %s", sig, strsignal(sig),
               job->mpirun ? "mpirun process" : "ranks");
        job->stop_starting = 1;
        job->signalled = sig;
        signal_children(job, sig, -1);
        arm_kill(job, SIGNAL_GRACE_S);
    }
}

/* Log and record the job's first failure. */
static void first_failure(cp_launch_job_t *job, int i, int wstatus)
{
    char name[32];
    cp_launch_child_t *c = &job->children[i];
    job->failed = 1;
    job->result = c->status;
    job->stop_starting = 1;
    if (WIFSIGNALED(wstatus)) {
        cp_log(CP_LOG_ERROR, "%s (pid %d) was killed by signal %d (%s)",
               child_name(job, i, name, sizeof(name)), (int)c->pid, WTERMSIG(wstatus),
               strsignal(WTERMSIG(wstatus)));
    } else if (!(job->aborted && job->abort_rank == i)) {
        cp_log(CP_LOG_ERROR, "%s (pid %d) exited with status %d",
               child_name(job, i, name, sizeof(name)), (int)c->pid, c->status);
    }
    arm_kill(job, GRACE_S);
}

static void reap_children(cp_launch_job_t *job)
{
    /* Failures seen in one pass died within one wake-up of each other: the
     * first is the one whose SIGCHLD came first, else the lowest rank. */
    int first = -1, first_wstatus = 0, nfailed = 0;
    for (int i = 0; i < job->nstarted; i++) {
        cp_launch_child_t *c = &job->children[i];
        int wstatus;
        if (!c->alive || waitpid(c->pid, &wstatus, WNOHANG) != c->pid) {
            continue;
        }
        c->alive = 0;
        c->status = decode_status(wstatus);
        job->nalive--;
        if (c->status != 0) {
            nfailed++;
            if (!job->failed && (first < 0 || c->pid == job->first_dead)) {
                first = i;
                first_wstatus = wstatus;
            }
        } else if (c->connected && !c->finalized && !job->mpirun) {
            /* its peers may be waiting for it in a collective */
            if (!job->warned_nofin) {
                job->warned_nofin = 1;
                cp_log(CP_LOG_WARN, "rank %d exited without calling PMIx_Finalize", i);
            }
            arm_kill(job, GRACE_S);
        } else if (job->failed) {
            arm_kill(job, GRACE_SHORT_S);
        }
    }
    job->first_dead = 0;
    if (nfailed > 0) {
        if (first >= 0) {
            first_failure(job, first, first_wstatus);
        }
        if (nfailed > 1 || first < 0) {
            arm_kill(job, GRACE_SHORT_S);
        }
    }
    if (job->server_pid > 0) {
        int wstatus;
        if (waitpid(job->server_pid, &wstatus, WNOHANG) == job->server_pid) {
            job->server_pid = 0;
            /* a failure to start shows as EOF on evfd; this is a crash mid-job */
            if (job->nstarted == job->np && !job->failed && !job->aborted && job->nalive > 0) {
                cp_log(CP_LOG_WARN, "the embedded PMIx server exited early (status %d)",
                       decode_status(wstatus));
            }
        }
    }
}

/* Poll timeout in ms until the next deadline (capped: also a safety net). */
static int next_timeout_ms(const cp_launch_job_t *job)
{
    double wake = job->kill_deadline < job->job_deadline ? job->kill_deadline : job->job_deadline;
    double wait = wake - cp_launch_now();
    if (wait > 1.0) {
        wait = 1.0;
    }
    if (wait < 0) {
        wait = 0;
    }
    return (int)(wait * 1000.0) + 1;
}

/* Run until every started child is gone; returns the job's exit status. */
int cp_launch_supervise(cp_launch_job_t *job)
{
    const double start = cp_launch_now();
    job->kill_deadline = NEVER;
    job->job_deadline = job->timeout_s > 0 ? start + job->timeout_s : NEVER;

    while (job->nalive > 0 || (job->nstarted < job->np && !job->stop_starting)) {
        struct pollfd pfd[2] = {{.fd = job->sigfd, .events = POLLIN},
                                {.fd = job->evfd, .events = POLLIN}};
        int rc = poll(pfd, job->evfd >= 0 ? 2 : 1, next_timeout_ms(job));
        if (rc < 0 && errno != EINTR) {
            cp_log(CP_LOG_ERROR, "poll: %s", strerror(errno));
            sleep(1);
        }
        /* frames first: a rank's finalize notice precedes its exit */
        drain_frames(job);
        drain_signals(job);
        reap_children(job);
        if (job->evfd < 0 && job->nstarted < job->np && !job->stop_starting) {
            /* the server process quit before handing out every rank */
            cp_log(CP_LOG_ERROR, "the embedded PMIx server failed to start the job");
            job->failed = 1;
            job->result = 1;
            job->stop_starting = 1;
            arm_kill(job, 0);
        }

        double t = cp_launch_now();
        if (job->nstarted < job->np && !job->stop_starting && t - start > SERVER_START_S) {
            cp_log(CP_LOG_ERROR, "the embedded PMIx server did not start the job within %.0f s",
                   SERVER_START_S);
            job->failed = 1;
            job->result = 1;
            job->stop_starting = 1;
            arm_kill(job, 0);
        }
        if (t >= job->job_deadline) {
            cp_log(CP_LOG_ERROR, "job timed out after %.1f s; terminating it", job->timeout_s);
            job->timed_out = 1;
            job->stop_starting = 1;
            job->job_deadline = NEVER;
            signal_children(job, SIGTERM, -1);
            arm_kill(job, SIGNAL_GRACE_S);
        }
        if (t >= job->kill_deadline && job->nalive > 0) {
            cp_log(CP_LOG_WARN, "killing %d remaining %s", job->nalive,
                   job->mpirun        ? "mpirun process"
                   : job->nalive == 1 ? "rank"
                                      : "ranks");
            if (job->mpirun && job->children[0].alive) {
                /* a wedged mpirun would leave its ranks behind */
                signal_grandchildren(job->children[0].pid, SIGKILL);
            }
            signal_children(job, SIGKILL, -1);
            job->kill_deadline = t + 1.0; /* repeat until they are gone */
        }
    }

    if (job->timed_out) {
        return TIMEOUT_STATUS;
    }
    if (job->aborted) {
        /* what the process exit status can carry; an abort is a failure */
        return job->abort_status > 0 && job->abort_status < 256 ? job->abort_status : 1;
    }
    if (job->result == 0 && job->nstarted < job->np) {
        return job->signalled ? 128 + job->signalled : 1;
    }
    return job->result;
}

/* End the server process: let it finalize after a clean job, else kill it
 * (after abnormal exits it may be wedged in libpmix). */
void cp_launch_server_stop(cp_launch_job_t *job, int clean)
{
    if (job->cmdfd >= 0) {
        close(job->cmdfd);
        job->cmdfd = -1;
    }
    if (job->server_pid <= 0) {
        return;
    }
    if (clean) {
        double until = cp_launch_now() + SERVER_EXIT_S;
        while (cp_launch_now() < until) {
            if (waitpid(job->server_pid, NULL, WNOHANG) == job->server_pid) {
                job->server_pid = 0;
                return;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        cp_log(CP_LOG_DEBUG, "the embedded PMIx server did not exit; killing it");
    }
    kill(job->server_pid, SIGKILL);
    waitpid(job->server_pid, NULL, 0);
    job->server_pid = 0;
}
