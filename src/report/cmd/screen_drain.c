/*
 * `collprof-report screen --format drain` (report.h): one scontrol line per flagged node,
 * with its evidence as the reason; with --apply, each run through scontrol (found in PATH,
 * never through a shell), and its refusal said in one line.
 */
#include "config.h"

#include "screen/links.h"
#include "screen/screen.h"
#include "base/util.h"
#include "screen/screen_out.h"
#include "report/read/reader.h"
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A host name safe inside a shell word and scontrol's reason: [A-Za-z0-9._-] only. */
static void safe_name(const char *in, char *out, size_t len)
{
    size_t j = 0;
    for (size_t i = 0; in[i] != '\0' && j + 1 < len; i++) {
        unsigned char c = (unsigned char)in[i];
        out[j++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c : '_';
    }
    out[j] = '\0';
}

/* The drain reason of flagged node rows[i]: its partners by name, the figures by number
 * alone, so that it is safe in double quotes and as one argument of scontrol. */
static void drain_reason(const collprof_screen_row_t *rows, size_t n, size_t i, char *buf,
                         size_t len)
{
    const collprof_screen_row_t *r = &rows[i];
    char with[80];
    if (!strcmp(r->verdict, "unreachable")) {
        safe_name(r->backend, with, sizeof(with));
        snprintf(buf, len, "collprof screen: unreachable (backend %s, seed %llu)", with,
                 (unsigned long long)r->seed);
        return;
    }
    if (r->confirm_with < 0 && strstr(r->evidence, "validation:") != NULL) { /* not the pairs */
        safe_name(r->backend, with, sizeof(with));
        snprintf(buf, len,
                 "collprof screen: slow in the validation allreduce (backend %s, seed %llu)", with,
                 (unsigned long long)r->seed);
        return;
    }
    with[0] = '\0';
    for (size_t k = 0; k < n; k++) { /* the confirmation partner, by name */
        if (!strcmp(rows[k].what, "node") && rows[k].node_a == r->confirm_with &&
            !strcmp(rows[k].backend, r->backend)) {
            safe_name(rows[k].host_a, with, sizeof(with));
        }
    }
    snprintf(buf, len, "collprof screen: slow, %.2fx of the %s with %d of %d partners%s%s",
             r->score, !strcmp(r->reference, "baseline") ? "baseline" : "median", r->slow_partners,
             r->partners, with[0] ? ", confirmed with " : "", with);
}

/* The drain line of flagged node rows[i]. */
void cp_report_drain_line(FILE *out, const collprof_screen_row_t *rows, size_t n, size_t i)
{
    char host[80], reason[256];
    safe_name(rows[i].host_a, host, sizeof(host));
    drain_reason(rows, n, i, reason, sizeof(reason));
    fprintf(out, "scontrol update nodename=%s state=drain reason=\"%s\"\n", host, reason);
}

/* ---- --apply: the drain lines run through scontrol ---------------------------------------- */

/* The first executable regular file named prog in $PATH into buf: 0, or -1 when none. */
static int find_in_path(const char *prog, char *buf, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path; p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        struct stat st;
        int w = snprintf(buf, len, "%.*s/%s", (int)dl, dl ? p : ".", prog);
        if (w > 0 && (size_t)w < len && stat(buf, &st) == 0 && S_ISREG(st.st_mode) &&
            access(buf, X_OK) == 0) {
            return 0;
        }
        p = colon ? colon + 1 : NULL;
    }
    return -1;
}

/*
 * Run exe update nodename=host state=drain reason=... (no shell: the reason is one argument),
 * its output (stdout and stderr) kept in msg as one line; its exit status, or -1 when it
 * could not be started (the reason in msg).
 */
static int run_drain(const char *exe, const char *host, const char *reason, char *msg, size_t len)
{
    char node[128], why[320];
    snprintf(node, sizeof(node), "nodename=%s", host);
    snprintf(why, sizeof(why), "reason=%s", reason);
    char *argv[] = {"scontrol", "update", node, "state=drain", why, NULL};
    int fd[2];
    msg[0] = '\0';
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) {
        snprintf(msg, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(msg, len, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(exe, argv);
        _exit(127);
    }
    close(fd[1]);
    char out[4096];
    size_t got = 0;
    for (ssize_t r; (r = read(fd[0], out + got, sizeof(out) - 1 - got)) != 0;) {
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 || (got += (size_t)r) == sizeof(out) - 1) {
            break;
        }
    }
    out[got] = '\0';
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    for (size_t k = 0; k < got; k++) { /* its first line, without the trailing newline */
        if (out[k] == '\n') {
            out[k] = '\0';
            break;
        }
    }
    cp_text_sanitize(out, msg, len);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Drain the flagged nodes of rows[0..n) through scontrol, after their lines were printed:
 * status when all were drained, else the exit status 2 after a one-line error. */
int cp_report_apply_drain(const collprof_screen_row_t *rows, size_t n, int status)
{
    size_t want = 0, done = 0;
    for (size_t i = 0; i < n; i++) {
        want += cp_screen_excluded(&rows[i]);
    }
    if (want == 0) {
        printf("# --apply: no node to drain\n");
        return status;
    }
    char exe[4096];
    if (find_in_path("scontrol", exe, sizeof(exe)) != 0) {
        cp_report_error("screen: --apply: scontrol is not in PATH: nothing drained (the lines "
                        "above were printed, not run)");
        return CP_REPORT_EXIT_BAD;
    }
    for (size_t i = 0; i < n; i++) {
        char host[80], reason[256], msg[512];
        if (!cp_screen_excluded(&rows[i])) {
            continue;
        }
        safe_name(rows[i].host_a, host, sizeof(host));
        if (host[0] == '\0' || strcmp(host, rows[i].host_a) != 0) {
            cp_report_error("screen: --apply: node %d's host name '%s' is not a plain host "
                            "name: not drained (drained %zu of %zu)",
                            rows[i].node_a, rows[i].host_a, done, want);
            return CP_REPORT_EXIT_BAD;
        }
        drain_reason(rows, n, i, reason, sizeof(reason));
        int rc = run_drain(exe, host, reason, msg, sizeof(msg));
        if (rc != 0) {
            char how[600];
            if (rc < 0) {
                snprintf(how, sizeof(how), "%s", msg);
            } else {
                snprintf(how, sizeof(how), "exit %d%s%s", rc, msg[0] ? ": " : "", msg);
            }
            cp_report_error("screen: --apply: %s refused to drain %s (%s): drained %zu of %zu; a "
                            "drain needs root or a Slurm operator, and slurmctld",
                            exe, host, how, done, want);
            return CP_REPORT_EXIT_BAD;
        }
        printf("# drained %s: %s\n", host, reason);
        done++;
    }
    printf("# --apply: drained %zu of %zu flagged node%s through %s (return one with: scontrol "
           "update nodename=NODE state=resume)\n",
           done, want, want == 1 ? "" : "s", exe);
    return status;
}
