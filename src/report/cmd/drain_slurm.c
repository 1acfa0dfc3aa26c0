/*
 * Slurm for the drain and resume of collprof-report screen (drain.h): scontrol found by an
 * absolute path (--scontrol, or PATH without its empty and relative elements, so that a
 * planted ./scontrol never runs), run without a shell; its node records (`show node -o`:
 * name, state, reason) and a partition's size read; Slurm host lists matched.
 */
#include "config.h"

#include "base/exec.h"
#include "base/util.h"
#include "report/cmd/drain.h"
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int cp_drain_ours(const char *reason)
{
    return strncmp(reason, "collprof:", 9) == 0;
}

int cp_drain_find_scontrol(const char *given, const char *what, char *exe, size_t len)
{
    if (given != NULL) {
        if (given[0] != '/' || !cp_exec_runnable(given) || strlen(given) >= len) {
            cp_report_error("screen: --scontrol %s: not an absolute path to an executable "
                            "file: %s",
                            given, what);
            return CP_REPORT_EXIT_BAD;
        }
        snprintf(exe, len, "%s", given);
        return 0;
    }
    if (cp_exec_find("scontrol", exe, len) == 0) { /* never the current directory */
        return 0;
    }
    cp_report_error("screen: scontrol is not in PATH (its absolute directories; or give "
                    "--scontrol PATH): %s",
                    what);
    return CP_REPORT_EXIT_BAD;
}

int cp_drain_exec(const char *exe, char *const argv[], char **out, char *msg, size_t len)
{
    return cp_exec_capture(exe, argv, out, msg, len);
}

void cp_drain_how(int rc, const char *msg, char *buf, size_t len)
{
    if (rc < 0) {
        snprintf(buf, len, "%s", msg);
    } else {
        snprintf(buf, len, "exit %d%s%s", rc, msg[0] ? ": " : "", msg);
    }
}

/* The value of " KEY=" in line (the first), up to the next space, into buf; 0 or -1. */
static int field(const char *line, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = line; (p = strstr(p, key)) != NULL; p += kl) {
        if ((p == line || p[-1] == ' ') && p[kl] == '=') {
            size_t vl = strcspn(p + kl + 1, " \n");
            if (vl == 0 || vl >= len) {
                return -1;
            }
            memcpy(buf, p + kl + 1, vl);
            buf[vl] = '\0';
            return 0;
        }
    }
    return -1;
}

/* One `show node -o` line into *nd: 0, or -1 when it is not a node record. */
static int parse_node(const char *line, cp_drain_node_t *nd)
{
    char state[256];
    memset(nd, 0, sizeof(*nd));
    if (strncmp(line, "NodeName=", 9) != 0 || field(line, "NodeName", nd->name, sizeof(nd->name)) ||
        field(line, "State", state, sizeof(state))) {
        return -1;
    }
    nd->drained = strstr(state, "DRAIN") != NULL;
    nd->offline = nd->drained || strstr(state, "DOWN") != NULL || strstr(state, "FAIL") != NULL;
    const char *r = strstr(line, " Reason=");
    if (r != NULL) { /* up to " [user@time]" (the one-liner's end of the reason) */
        char raw[256];
        r += 8;
        const char *end = strstr(r, " [");
        size_t rl = end ? (size_t)(end - r) : strlen(r);
        snprintf(raw, sizeof(raw), "%.*s", (int)(rl < sizeof(raw) ? rl : sizeof(raw) - 1), r);
        cp_text_sanitize(raw, nd->reason, sizeof(nd->reason));
    }
    return 0;
}

int cp_drain_read_nodes(const char *exe, cp_drain_node_t **nodes, size_t *n)
{
    char *argv[] = {"scontrol", "show", "node", "-o", NULL}, msg[512], *out = NULL;
    int rc = cp_drain_exec(exe, argv, &out, msg, sizeof(msg));
    size_t cap = 0;
    *nodes = NULL;
    *n = 0;
    if (rc != 0 || out == NULL) {
        char how[600];
        cp_drain_how(rc, msg, how, sizeof(how));
        cp_report_error("screen: %s show node -o failed (%s): nothing changed", exe, how);
        free(out);
        return CP_REPORT_EXIT_BAD;
    }
    for (char *line = out, *next; line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next != NULL) {
            *next++ = '\0';
        }
        if (*line == '\0') {
            continue;
        }
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            cp_drain_node_t *b = realloc(*nodes, cap * sizeof(**nodes));
            if (b == NULL) {
                break;
            }
            *nodes = b;
        }
        if (parse_node(line, &(*nodes)[*n]) != 0) {
            char shown[120];
            cp_text_sanitize(line, shown, sizeof(shown));
            cp_report_error("screen: %s show node -o: not a node record: '%s': nothing "
                            "changed",
                            exe, shown);
            free(out);
            free(*nodes);
            *nodes = NULL;
            *n = 0;
            return CP_REPORT_EXIT_BAD;
        }
        (*n)++;
    }
    free(out);
    return 0;
}

const cp_drain_node_t *cp_drain_find_node(const cp_drain_node_t *nodes, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(nodes[i].name, name)) {
            return &nodes[i];
        }
    }
    return NULL;
}

int cp_drain_partition_size(const char *exe, const char *part, int *size)
{
    char name[128], msg[512], *out = NULL, total[32];
    snprintf(name, sizeof(name), "%s", part);
    char *argv[] = {"scontrol", "show", "partition", "-o", name, NULL};
    int rc = cp_drain_exec(exe, argv, &out, msg, sizeof(msg));
    char *end = NULL;
    long v = 0;
    if (rc == 0 && out != NULL && field(out, "TotalNodes", total, sizeof(total)) == 0) {
        errno = 0;
        v = strtol(total, &end, 10);
    }
    free(out);
    if (end == NULL || *end != '\0' || errno != 0 || v < 1 || v > 1000000000L) {
        char how[600];
        cp_drain_how(rc, msg, how, sizeof(how));
        cp_report_error("screen: %s show partition -o %s: no TotalNodes (%s): the circuit "
                        "breaker cannot size the partition: nothing drained",
                        exe, part, how);
        return CP_REPORT_EXIT_BAD;
    }
    *size = (int)v;
    return 0;
}

/* ---- Slurm host lists -------------------------------------------------------------------- */

/* 1 when digits (dl of them) is a number within lo-hi as written in the range: a bound with
 * leading zeros fixes the width; else no leading zeros. */
static int in_range(const char *digits, size_t dl, const char *lo, size_t ll, const char *hi,
                    size_t hl)
{
    int padded = (ll > 1 && lo[0] == '0') || (hl > 1 && hi[0] == '0');
    if (dl == 0 || dl > 18 || ll == 0 || ll > 18 || hl == 0 || hl > 18) {
        return 0;
    }
    if (padded ? dl != ll : (dl > 1 && digits[0] == '0')) {
        return 0;
    }
    long long v = strtoll(digits, NULL, 10), a = strtoll(lo, NULL, 10), b = strtoll(hi, NULL, 10);
    return v >= a && v <= b;
}

/* One host list element (no top-level comma), el[0..len): 1, 0 or -1 (see drain.h). */
static int element_has(const char *el, size_t len, const char *name)
{
    const char *open = memchr(el, '[', len);
    size_t nl = strlen(name);
    if (open == NULL) {
        return len == nl && !memcmp(el, name, nl);
    }
    const char *close = memchr(open, ']', len - (size_t)(open - el));
    if (close == NULL || memchr(close, '[', len - (size_t)(close - el)) != NULL) {
        return -1;
    }
    size_t pl = (size_t)(open - el), sl = len - (size_t)(close + 1 - el);
    if (nl <= pl + sl || memcmp(name, el, pl) || memcmp(name + nl - sl, close + 1, sl)) {
        return 0;
    }
    const char *digits = name + pl;
    size_t dl = nl - pl - sl;
    for (size_t k = 0; k < dl; k++) {
        if (!isdigit((unsigned char)digits[k])) {
            return 0;
        }
    }
    for (const char *r = open + 1; r < close;) { /* "1-4,7" */
        const char *comma = memchr(r, ',', (size_t)(close - r));
        const char *e = comma ? comma : close;
        const char *dash = memchr(r, '-', (size_t)(e - r));
        const char *hi = dash ? dash + 1 : r;
        size_t ll = (size_t)((dash ? dash : e) - r), hl = (size_t)(e - hi);
        for (const char *q = r; q < e; q++) {
            if (!isdigit((unsigned char)*q) && q != dash) {
                return -1;
            }
        }
        if (in_range(digits, dl, r, ll, hi, hl)) {
            return 1;
        }
        r = comma ? comma + 1 : close;
    }
    return 0;
}

int cp_drain_hostlist_has(const char *list, const char *name)
{
    int bad = 0;
    for (const char *p = list; *p != '\0';) {
        const char *e = p;
        int depth = 0;
        while (*e != '\0' && (*e != ',' || depth > 0)) {
            depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
            if (depth < 0 || depth > 1) {
                return -1;
            }
            e++;
        }
        int r = element_has(p, (size_t)(e - p), name);
        if (r == 1) {
            return 1;
        }
        bad |= r < 0;
        p = *e == ',' ? e + 1 : e;
    }
    return bad ? -1 : 0;
}
