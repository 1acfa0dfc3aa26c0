#include "config.h"

#include "run/health_int.h"

#include "base/exec.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Where scontrol is looked for when PATH has none (slurmd runs HealthCheckProgram with an
 * environment of its own): absolute directories only. */
static const char *const sbin_dirs[] = {"/usr/bin", "/usr/local/bin", "/opt/slurm/bin", "/usr/sbin",
                                        NULL};

/* This node's name as Slurm knows it: SLURMD_NODENAME (slurmd sets it for the health check
 * program), else the short host name; 0, or -1 when it is not a plain name. */
static int node_name(char *buf, size_t len)
{
    const char *env = getenv("SLURMD_NODENAME");
    struct utsname u;
    if (env != NULL && env[0] != '\0') {
        snprintf(buf, len, "%s", env);
    } else if (uname(&u) == 0) {
        snprintf(buf, len, "%.*s", (int)strcspn(u.nodename, "."), u.nodename);
    } else {
        return -1;
    }
    if (buf[0] == '\0' || buf[0] == '-' ||
        strspn(buf, "abcdefghijklmnopqrstuvwxyz"
                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen(buf)) {
        return -1;
    }
    return 0;
}

static int find_scontrol(char *exe, size_t len)
{
    if (cp_exec_find("scontrol", exe, len) == 0) {
        return 0;
    }
    for (int i = 0; sbin_dirs[i] != NULL; i++) {
        snprintf(exe, len, "%s/scontrol", sbin_dirs[i]);
        if (cp_exec_runnable(exe)) {
            return 0;
        }
    }
    return -1;
}

/* The count's file: --healthcheck-state, else /run/collprof/healthcheck-NODE. */
static void state_path(const cp_hc_t *hc, const char *node, char *path, size_t len)
{
    if (hc->opt->hc_state[0] != '\0') {
        snprintf(path, len, "%s", hc->opt->hc_state);
    } else {
        mkdir("/run/collprof", 0700);
        snprintf(path, len, "/run/collprof/healthcheck-%s", node);
    }
}

int cp_hc_lock(const cp_hc_t *hc, char *path, size_t len)
{
    char node[256];
    path[0] = '\0';
    if (!hc->opt->hc_drain || node_name(node, sizeof(node)) != 0) {
        return -1;
    }
    state_path(hc, node, path, len);
    size_t used = strlen(path);
    snprintf(path + used, len - used, ".lock");
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        return -1; /* no lock: the check runs all the same */
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int busy = errno == EWOULDBLOCK;
        close(fd);
        return busy ? -2 : -1;
    }
    return fd;
}

/* The failures in a row so far (0 when none is recorded), and the file's path in path. */
static int read_count(const cp_hc_t *hc, const char *node, char *path, size_t len)
{
    state_path(hc, node, path, len);
    FILE *f = fopen(path, "re");
    int n = 0;
    if (f != NULL) {
        if (fscanf(f, "%d", &n) != 1 || n < 0) {
            n = 0;
        }
        fclose(f);
    }
    return n;
}

static int write_count(const char *path, int n)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (f == NULL) {
        return -1;
    }
    int ok = fprintf(f, "%d\n", n) > 0;
    ok &= fclose(f) == 0;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* The node's State and Reason from `scontrol show node NAME -o`; 0, or -1 (msg). */
static int node_state(const char *exe, const char *node, char *state, char *reason, size_t len,
                      char *msg, size_t mlen)
{
    char *argv[] = {"scontrol", "show", "node", (char *)node, "-o", NULL}, *out = NULL;
    int rc = cp_exec_capture(exe, argv, &out, msg, mlen);
    state[0] = reason[0] = '\0';
    const char *s = out != NULL ? strstr(out, " State=") : NULL;
    if (rc != 0 || s == NULL) {
        free(out);
        return -1;
    }
    snprintf(state, len, "%.*s", (int)strcspn(s + 7, " \n"), s + 7);
    const char *r = strstr(out, " Reason=");
    if (r != NULL) {
        r += 8;
        const char *end = strstr(r, " [");
        size_t rl = end != NULL ? (size_t)(end - r) : strcspn(r, "\n");
        snprintf(reason, len, "%.*s", (int)rl, r);
    }
    free(out);
    return 0;
}

/* Drain node with the failure as its reason; what happened into note. */
static void drain(const cp_hc_t *hc, const char *node, char *note, size_t len)
{
    char exe[4096], state[256], reason[256], msg[512], arg[320], nodearg[300];
    if (find_scontrol(exe, sizeof(exe)) != 0) {
        snprintf(note, len, " [not drained: no scontrol in PATH's absolute directories]");
        return;
    }
    if (node_state(exe, node, state, reason, sizeof(state), msg, sizeof(msg)) != 0) {
        snprintf(note, len, " [not drained: scontrol show node %s: %s]", node, msg);
        return;
    }
    int offline = strstr(state, "DRAIN") || strstr(state, "DOWN") || strstr(state, "FAIL");
    if (offline && strncmp(reason, "collprof:", 9) != 0) {
        snprintf(note, len, " [not drained: %s is %s for a reason not collprof's]", node, state);
        return;
    }
    char why[200];
    snprintf(why, sizeof(why), "collprof: healthcheck: %s: %s", hc->check, hc->what);
    for (char *p = why; *p != '\0'; p++) { /* a reason scontrol keeps as one word list */
        *p = *p == '"' || *p == '\'' || *p == '\n' ? ' ' : *p;
    }
    snprintf(nodearg, sizeof(nodearg), "NodeName=%s", node);
    snprintf(arg, sizeof(arg), "Reason=%s", why);
    char *argv[] = {"scontrol", "update", nodearg, "State=DRAIN", arg, NULL};
    int rc = cp_exec_capture(exe, argv, NULL, msg, sizeof(msg));
    if (rc < 0) {
        snprintf(note, len, " [not drained: scontrol update: %s]", msg);
        return;
    }
    if (rc != 0) {
        snprintf(note, len, " [not drained: scontrol update: exit status %d%s%s]", rc,
                 msg[0] ? ": " : "", msg);
        return;
    }
    snprintf(note, len, " [%s drained]", node);
}

void cp_hc_drain(const cp_hc_t *hc, char *note, size_t len)
{
    char node[256], path[4200];
    note[0] = '\0';
    if (!hc->opt->hc_drain || hc->status == CP_HC_INCONCLUSIVE) {
        return; /* inconclusive: never a drain, and the count stays */
    }
    if (node_name(node, sizeof(node)) != 0) {
        snprintf(note, len, " [not drained: this node's name is unknown]");
        return;
    }
    int n = read_count(hc, node, path, sizeof(path));
    if (hc->status == CP_HC_OK) {
        if (n > 0 && unlink(path) != 0 && errno != ENOENT) {
            snprintf(note, len, " [%s: %s]", path, strerror(errno));
        }
        return;
    }
    n++;
    if (hc->opt->hc_confirm <= 1) { /* at once: no count needed */
        drain(hc, node, note, len);
        return;
    }
    if (write_count(path, n) != 0) {
        snprintf(note, len, " [not drained: %s could not be written: %s]", path, strerror(errno));
        return;
    }
    if (n < hc->opt->hc_confirm) {
        snprintf(note, len, " [failure %d of %d in a row before a drain]", n, hc->opt->hc_confirm);
        return;
    }
    drain(hc, node, note, len);
}
