#include "config.h"

#include "run/health_int.h"

#include "base/util.h"
#include "run/health_log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_ARGS 128

/* What the watch of one run keeps: the cells file's unread part and the cell it is in. */
typedef struct watch {
    int fd;
    char buf[8 * CP_HEALTH_LINE];
    size_t used;
    char cell[256]; /* the cell started last */
    int passed;
    int failed;        /* this run failed a check (or an earlier check had) */
    char skipped[320]; /* the first skipped cell's reason */
} watch_t;

/* The tab-separated fields of line into f (at most n); how many there are. */
static int split_tabs(char *line, char **f, int n)
{
    int k = 0;
    for (char *p = line; k < n;) {
        f[k++] = p;
        p = strchr(p, '\t');
        if (p == NULL) {
            break;
        }
        *p++ = '\0';
    }
    return k;
}

/* One line of the cells file (health_log.h). */
static void on_line(cp_hc_t *hc, const char *check, char *line, watch_t *w)
{
    char *f[8];
    int n = split_tabs(line, f, 8);
    if (n >= 3 && strcmp(f[0], "S") == 0) {
        snprintf(w->cell, sizeof(w->cell), "%s", f[2]);
        return;
    }
    if (n < 7 || strcmp(f[0], "D") != 0 || hc->status != CP_HC_OK) {
        return;
    }
    const char *status = f[2], *name = f[6], *reason = n > 7 ? f[7] : "";
    double p50_ms = strtod(f[4], NULL) * 1e-3;
    if (strcmp(status, "ok") == 0) {
        if (p50_ms > hc->opt->hc_max_ms) {
            cp_hc_fail(hc, CP_HC_FAILED, check, "%s: slow: p50 %.1f ms, above the ceiling of %g ms",
                       name, p50_ms, hc->opt->hc_max_ms);
        } else {
            w->passed++;
            hc->nchecks++;
        }
    } else if (strcmp(status, "wrong") == 0) {
        cp_hc_fail(hc, CP_HC_FAILED, check, "%s: wrong data (#wrong %s)", name, f[3]);
    } else if (strcmp(status, "skipped") == 0 && strstr(reason, "initialisation failed") != NULL) {
        cp_hc_fail(hc, CP_HC_FAILED, check, "%s", reason); /* a backend that failed to start */
    } else if (strcmp(status, "skipped") == 0) {
        if (w->skipped[0] == '\0') {
            snprintf(w->skipped, sizeof(w->skipped), "%s", reason[0] ? reason : "skipped");
        }
    } else if (strcmp(status, "unsupported") != 0) {
        cp_hc_fail(hc, CP_HC_FAILED, check, "%s: %s%s%s", name, status, reason[0] ? ": " : "",
                   reason);
    }
    w->failed = hc->status != CP_HC_OK;
}

/* Read what the run appended and handle its complete lines. */
static void read_lines(cp_hc_t *hc, const char *check, watch_t *w)
{
    for (;;) {
        ssize_t r = read(w->fd, w->buf + w->used, sizeof(w->buf) - 1 - w->used);
        if (r <= 0) {
            return;
        }
        w->used += (size_t)r;
        w->buf[w->used] = '\0';
        char *start = w->buf, *nl;
        while ((nl = strchr(start, '\n')) != NULL) {
            *nl = '\0';
            on_line(hc, check, start, w);
            start = nl + 1;
        }
        w->used = strlen(start);
        memmove(w->buf, start, w->used);
        if (w->used == sizeof(w->buf) - 1) { /* a line past any the log writes: dropped */
            w->used = 0;
        }
    }
}

/* The child: its own process group, output to log, the run's environment, then exec. */
static void child(const cp_hc_t *hc, char **argv, const char *cells, const char *log,
                  const char *iface)
{
    setpgid(0, 0);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int null = open("/dev/null", O_RDONLY);
    if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
        _exit(127);
    }
    /* a launcher around this check (srun, mpirun) is not the ranks' (they get the embedded
     * PMIx server): its identity and PMIx are not passed on (PMIx's own settings, PMIX_MCA_*,
     * are: under the sanitizers they keep its components loaded, for their leak reports) */
    static const char *const launcher[] = {
        "PMIX_",          "PMI_", "OMPI_COMM_WORLD_", "SLURM_STEP_ID=", "SLURM_PROCID=",
        "SLURM_LOCALID=", NULL};
    for (int again = 1; again;) {
        again = 0;
        for (char **e = environ; *e != NULL && !again; e++) {
            int drop = 0;
            for (int k = 0; launcher[k] != NULL; k++) {
                drop |= strncmp(*e, launcher[k], strlen(launcher[k])) == 0;
            }
            drop &= strncmp(*e, "PMIX_MCA_", 9) != 0; /* PMIx's settings: the ranks' too */
            if (drop) {
                char name[256];
                snprintf(name, sizeof(name), "%.*s", (int)strcspn(*e, "="), *e);
                unsetenv(name);
                again = 1;
            }
        }
    }
    setenv("COLLPROF_HEALTHCHECK_CELLS", cells, 1);
    if (iface[0] != '\0') { /* the transport's traffic through this NIC's own address */
        setenv("FI_TCP_IFACE", iface, 1);
        setenv("FI_SOCKETS_IFACE", iface, 1);
    }
    execv(hc->exe, argv);
    _exit(127);
}

/* Stop the run's process group: TERM, a second's grace, then KILL; reaped. */
static void stop_group(pid_t pid, int *st)
{
    kill(-pid, SIGTERM);
    for (int i = 0; i < 50; i++) {
        if (waitpid(pid, st, WNOHANG) == pid) {
            kill(-pid, SIGKILL); /* a rank the launcher left behind */
            return;
        }
        usleep(20000);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
    }
}

/* The run's own error line from its log (the first "error" line, else its last line). */
static void log_error(const char *log, char *buf, size_t len)
{
    FILE *f = fopen(log, "re");
    char line[CP_HEALTH_LINE], last[CP_HEALTH_LINE] = "";
    buf[0] = '\0';
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (line[0] != '\0' && line[0] != '#') {
            snprintf(last, sizeof(last), "%s", line);
        }
        if (buf[0] == '\0' && strstr(line, "error") != NULL) {
            const char *p = strstr(line, "collprof: error: ") == line ? line + 17 : line;
            cp_text_sanitize(p, buf, len);
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (buf[0] == '\0') {
        cp_text_sanitize(last[0] ? last : "no message", buf, len);
    }
}

/* argv of the run: the fixed matrix around args, the user's -B and --launcher. */
static int build_argv(const cp_hc_t *hc, const char *const *args, char **argv, char *np, char *tmo,
                      char (*bopts)[260])
{
    const cp_options_t *o = hc->opt;
    int n = 0;
    snprintf(np, 16, "%d", hc->np);
    snprintf(tmo, 32, "%.0f", o->hc_time_s + 5); /* the deadline here comes first */
    const char *fixed[] = {"collprof", "--np",      np,  "--variants", "default", "--counts",
                           "1K,256K",  "-n",        "5", "-w",         "1",       "--output-dir",
                           hc->dir,    "--timeout", tmo, NULL};
    for (int i = 0; fixed[i] != NULL; i++) {
        argv[n++] = (char *)fixed[i];
    }
    for (int i = 0; args[i] != NULL && n < MAX_ARGS - 70; i++) {
        argv[n++] = (char *)args[i];
    }
    for (int i = 0; i < o->nbackend_opts && i < 32; i++) {
        snprintf(bopts[i], 260, "%s", o->backend_opts[i]);
        argv[n++] = "-B";
        argv[n++] = bopts[i];
    }
    if (o->launch_mode == CP_LAUNCH_MPIRUN) {
        argv[n++] = "--launcher";
        argv[n++] = "mpirun";
    }
    argv[n] = NULL;
    return n;
}

/* After the run ended by itself with status st: what it did not say cell by cell. */
static void judge_exit(cp_hc_t *hc, const char *check, const watch_t *w, int st, const char *log)
{
    char why[512];
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (w->failed || (code == 0 && w->passed > 0)) {
        return;
    }
    log_error(log, why, sizeof(why));
    if (code == 0 || code == 2 || code == 127) {
        cp_hc_fail(hc, CP_HC_INCONCLUSIVE, check, "%s%s",
                   code == 0     ? "no cell could run: "
                   : code == 127 ? "could not start: "
                                 : "",
                   why);
    } else if (w->passed == 0 && w->skipped[0] != '\0') { /* nothing could run: why */
        cp_hc_fail(hc, CP_HC_FAILED, check, "%s", w->skipped);
    } else {
        cp_hc_fail(hc, CP_HC_FAILED, check, "the run ended with status %d%s%s", code,
                   w->cell[0] ? " in " : "", w->cell);
    }
}

int cp_hc_collective_run(cp_hc_t *hc, const char *check, const char *const *args, const char *iface)
{
    char *argv[MAX_ARGS], np[16], tmo[32], bopts[32][260], cells[512], log[512];
    build_argv(hc, args, argv, np, tmo, bopts);
    snprintf(cells, sizeof(cells), "%s/%s.cells", hc->dir, check);
    snprintf(log, sizeof(log), "%s/%s.log", hc->dir, check);
    watch_t *w = calloc(1, sizeof(*w));
    if (w == NULL || (w->fd = open(cells, O_RDONLY | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        free(w);
        cp_hc_fail(hc, CP_HC_INCONCLUSIVE, check, "no room for the run's files in %s", hc->dir);
        return 0;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        child(hc, argv, cells, log, iface);
    }
    int st = 0, passed = 0;
    if (pid < 0) {
        cp_hc_fail(hc, CP_HC_INCONCLUSIVE, check, "fork: %s", strerror(errno));
        goto out;
    }
    setpgid(pid, pid);
    for (;;) {
        read_lines(hc, check, w);
        if (w->failed) {
            stop_group(pid, &st);
            break;
        }
        if (waitpid(pid, &st, WNOHANG) == pid) {
            kill(-pid, SIGKILL); /* a rank the launcher left behind */
            read_lines(hc, check, w);
            judge_exit(hc, check, w, st, log);
            break;
        }
        if (cp_now_s() >= hc->deadline) {
            stop_group(pid, &st);
            cp_hc_fail(hc, CP_HC_FAILED, check, "no answer within the %g s budget, %s%s",
                       hc->opt->hc_time_s, w->cell[0] ? "in " : "before its first cell", w->cell);
            break;
        }
        usleep(20000);
    }
    passed = w->passed;
out:
    close(w->fd);
    free(w);
    return passed;
}
