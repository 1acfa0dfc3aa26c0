/*
 * `collprof-report screen --format drain` (report.h): one scontrol line per flagged node, its
 * reason "collprof: screen: ..." (the owner's prefix, then the evidence), for nodes of the
 * run's allocation only.  With --state, the failing verdicts in a row so far: a node is due
 * on its --drain-after'th (2); with --apply, the due nodes drained through scontrol (an
 * absolute path, never a shell) unless Slurm has them offline already, under a circuit
 * breaker (at most --max-drain-share of the partition per --window, from the state file;
 * once tripped, nothing until --reset-breaker).  --resume: the run's nodes that collprof
 * drained (their reason starts with "collprof:"), and no other, resumed.
 */
#include "config.h"

#include "base/util.h"
#include "screen/screen.h"
#include "screen/screen_out.h"
#include "report/cmd/drain.h"
#include "report/read/reader.h"
#include "report/report.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

/* 1 when name is a plain host name (safe_name leaves it as it is). */
static int plain_name(const char *name)
{
    char safe[80];
    safe_name(name, safe, sizeof(safe));
    return safe[0] != '\0' && !strcmp(safe, name);
}

/* The drain reason of flagged node rows[i]: the owner's prefix, its partners by name, the
 * figures by number alone, so that it is safe in double quotes and as one argument. */
static void drain_reason(const collprof_screen_row_t *rows, size_t n, size_t i, char *buf,
                         size_t len)
{
    const collprof_screen_row_t *r = &rows[i];
    char with[80];
    if (r->confirm_with < 0 && strstr(r->evidence, "validation:") != NULL) { /* not the pairs */
        safe_name(r->backend, with, sizeof(with));
        snprintf(buf, len,
                 "collprof: screen: slow in the validation allreduce (backend %s, seed %llu)", with,
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
    snprintf(buf, len, "collprof: screen: slow, %.2fx of the %s with %d of %d partners%s%s",
             r->score, !strcmp(r->reference, "baseline") ? "baseline" : "median", r->slow_partners,
             r->partners, with[0] ? ", confirmed with " : "", with);
}

/* The drain line of flagged node rows[i]. */
static void drain_line(FILE *out, const collprof_screen_row_t *rows, size_t n, size_t i)
{
    char host[80], reason[256];
    safe_name(rows[i].host_a, host, sizeof(host));
    drain_reason(rows, n, i, reason, sizeof(reason));
    fprintf(out, "scontrol update nodename=%s state=drain reason=\"%s\"\n", host, reason);
}

/* A comment line for each node that is unreachable or untested: never drained. */
static void not_drained(const collprof_screen_row_t *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const collprof_screen_row_t *r = &rows[i];
        int gone = !strcmp(r->verdict, "unreachable");
        if (!strcmp(r->what, "node") && (gone || !strcmp(r->verdict, "untested"))) {
            char host[80];
            safe_name(r->host_a, host, sizeof(host));
            printf("# %s: %s: never drained (%s)\n", host, r->verdict,
                   gone ? "it stopped answering: see to the node and its network"
                        : "no pair of it was measured: not a verdict on its speed");
        }
    }
}

/* ---- the nodes of the verdict ------------------------------------------------------------- */

/* A node of the verdict (every backend's rows): flagged by one, or healthy in all. */
typedef struct pick {
    const char *host;
    size_t row; /* its first flagged row, else its first */
    int flagged, healthy;
    int count;   /* with --state: its failing verdicts in a row, this one included */
    int due;     /* to be drained: flagged --drain-after times in a row */
    int offline; /* Slurm has it drained or down already */
} pick_t;

/* The nodes of rows[0..n), each once, in *np; NULL (and *np 0) when out of memory. */
static pick_t *picks(const collprof_screen_row_t *rows, size_t n, size_t *np)
{
    pick_t *p = calloc(n + 1, sizeof(*p));
    int large = 0;
    *np = 0;
    for (size_t i = 0; p != NULL && i < n; i++) {
        if (i == 0 || strcmp(rows[i].backend, rows[i - 1].backend) != 0) {
            large = cp_screen_large_slow(rows, n, i, NULL, NULL); /* its slow ones: not drained */
        }
        if (strcmp(rows[i].what, "node") != 0) {
            continue;
        }
        size_t k = 0;
        while (k < *np && strcmp(p[k].host, rows[i].host_a) != 0) {
            k++;
        }
        if (k == *np) {
            p[(*np)++] = (pick_t){rows[i].host_a, i, 0, 1, 0, 0, 0};
        }
        /* only a slow node is drained: an unreachable or untested one may be the network's
         * or the set-up's (the exclude list still leaves an unreachable one out); nor a slow
         * one where a large part of the allocation is (judge against a baseline) */
        int bad = !strcmp(rows[i].verdict, "slow") && !large;
        p[k].row = bad && !p[k].flagged ? i : p[k].row;
        p[k].flagged |= bad;
        p[k].healthy &= !strcmp(rows[i].verdict, "healthy");
    }
    return p;
}

/* 1 when host is one of the run's: a rank's host and, where the file has the job's nodes
 * (slurm_nodelist), one of those; 0 when not; -1 when that list cannot be read. */
static int in_allocation(const cp_report_file_t *f, const char *host)
{
    int rank_host = 0;
    for (int r = 0; r < f->nranks && !rank_host; r++) {
        rank_host = !strcmp(f->ranks[r].hostname, host);
    }
    const char *list = cp_report_slurm(f, "nodelist");
    return !rank_host ? 0 : list[0] == '\0' ? 1 : cp_drain_hostlist_has(list, host);
}

/* Each flagged node of p[0..np) a plain host name of the run's allocation: 0, or the exit
 * status 2 after a one-line error (nothing is drained). */
static int check_hosts(const cp_report_file_t *f, const pick_t *p, size_t np)
{
    for (size_t k = 0; k < np; k++) {
        if (!p[k].flagged) {
            continue;
        }
        char shown[160];
        cp_text_sanitize(p[k].host, shown, sizeof(shown));
        int in = plain_name(p[k].host) ? in_allocation(f, p[k].host) : -2;
        if (in == 1) {
            continue;
        }
        const char *list = cp_report_slurm(f, "nodelist");
        if (in == -2) {
            cp_report_error("screen: %s: flagged node '%s' is not a plain host name: nothing "
                            "drained",
                            f->path, shown);
        } else if (in < 0) {
            cp_report_error("screen: %s: its job's node list '%s' (slurm_nodelist) is not a "
                            "Slurm host list this reads: nothing drained",
                            f->path, list);
        } else {
            cp_report_error("screen: %s: flagged node %s is outside the run's allocation (its "
                            "ranks' hosts%s%s): refused, nothing drained",
                            f->path, shown, list[0] ? " within its job's nodes " : "", list);
        }
        return CP_REPORT_EXIT_BAD;
    }
    return 0;
}

/* The identity of f's screen (its creation time, job and step), as a state file token. */
static void screen_id(const cp_report_file_t *f, char *buf, size_t len)
{
    const char *job = cp_report_slurm(f, "job_id"), *step = cp_report_slurm(f, "step_id");
    snprintf(buf, len, "%s/j%s.%s", f->root.created[0] ? f->root.created : f->path,
             job[0] ? job : "-", step[0] ? step : "-");
    for (char *c = buf; *c != '\0'; c++) {
        *c = isalnum((unsigned char)*c) || strchr("._:/+-", *c) ? *c : '_';
    }
}

/* s as printable ASCII (others '?') into buf. */
static void ascii(const char *s, char *buf, size_t len)
{
    size_t j = 0;
    for (; s[j] != '\0' && j + 1 < len; j++) {
        buf[j] = (unsigned char)s[j] >= 0x20 && (unsigned char)s[j] < 0x7f ? s[j] : '?';
    }
    buf[j] = '\0';
}

/* ---- --apply ----------------------------------------------------------------------------- */

/* The partition of f's job as a state file token, "-" when the file has none. */
static void part_name(const cp_report_file_t *f, char *part, size_t len)
{
    safe_name(cp_report_slurm(f, "partition"), part, len);
    if (part[0] == '\0') {
        snprintf(part, len, "-");
    }
}

/* The breaker's partition of f and its size (from scontrol, else the run's np nodes): 0, or
 * the exit status 2 after the error. */
static int partition(const cp_report_file_t *f, const char *exe, size_t np, char *part, size_t len,
                     int *size)
{
    part_name(f, part, len);
    if (!strcmp(part, "-")) {
        *size = (int)np;
        return 0;
    }
    return cp_drain_partition_size(exe, part, size);
}

/* The circuit breaker for nnew more drains: 0 when they fit, else it trips (recorded in the
 * state file) and the exit status 2 after a one-line error. */
static int breaker(const cp_report_file_t *f, const cp_report_drain_opts_t *o, cp_drain_state_t *st,
                   const char *exe, size_t np, int nnew, long long now)
{
    char part[64], why[256];
    int size;
    if (partition(f, exe, np, part, sizeof(part), &size) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    int cap = (int)floor(o->max_share * size + 1e-9);
    cap = cap < 1 ? 1 : cap;
    int recent = cp_drain_state_recent(st, part, now, o->window);
    if (recent + nnew <= cap) {
        return 0;
    }
    snprintf(why, sizeof(why),
             "%d more drain%s with %d in the last %lld s would pass %g%% of %s%s's %d nodes (at "
             "most %d)",
             nnew, nnew == 1 ? "" : "s", recent, o->window, o->max_share * 100,
             part[0] == '-' ? "the run" : "partition ", part[0] == '-' ? "" : part, size, cap);
    st->tripped = now;
    snprintf(st->trip_why, sizeof(st->trip_why), "%s", why);
    int saved = cp_drain_state_save(o->state, st);
    cp_report_error("screen: --apply: circuit breaker tripped: %s: nothing drained; it stays "
                    "tripped until --reset-breaker%s",
                    why, saved ? " (and it could not be recorded)" : "");
    return CP_REPORT_EXIT_BAD;
}

/* Run exe update nodename=host state=WHAT [reason=reason]: its exit status (see
 * cp_drain_exec), its first line in msg. */
static int update(const char *exe, const char *host, const char *state, const char *reason,
                  char *msg, size_t len)
{
    char node[128], st[32], why[320];
    snprintf(node, sizeof(node), "nodename=%s", host);
    snprintf(st, sizeof(st), "state=%s", state);
    snprintf(why, sizeof(why), "reason=%s", reason ? reason : "");
    char *argv[] = {"scontrol", "update", node, st, reason ? why : NULL, NULL};
    return cp_drain_exec(exe, argv, NULL, msg, len);
}

/* Mark the due nodes of p[0..np) that Slurm has offline already (left as they are, said so):
 * the others' count; or -1 after the error (a node Slurm does not know). */
static int left_as_they_are(const cp_drain_node_t *nodes, size_t nn, pick_t *p, size_t np)
{
    int nnew = 0;
    for (size_t k = 0; k < np; k++) {
        const cp_drain_node_t *nd = p[k].due ? cp_drain_find_node(nodes, nn, p[k].host) : NULL;
        if (p[k].due && nd == NULL) {
            cp_report_error("screen: --apply: %s is not a node of this Slurm cluster (scontrol "
                            "show node): nothing drained",
                            p[k].host);
            return -1;
        }
        if (nd != NULL && (nd->drained || (nd->offline && nd->reason[0] != '\0'))) {
            p[k].offline = 1;
            printf("# %s: already %s by %s (reason '%s'): left as it is\n", p[k].host,
                   nd->drained ? "drained" : "down",
                   cp_drain_ours(nd->reason) ? "collprof" : "someone else", nd->reason);
        }
        nnew += p[k].due && !p[k].offline;
    }
    return nnew;
}

/* Drain the due nodes of p[0..np) that are not offline, after the breaker (status: the
 * screen's exit status; returns the command's). */
static int apply(const cp_report_file_t *f, const collprof_screen_row_t *rows, size_t n, pick_t *p,
                 size_t np, cp_drain_state_t *st, const cp_report_drain_opts_t *o, long long now,
                 int status)
{
    char exe[4096];
    cp_drain_node_t *nodes = NULL;
    size_t nn = 0;
    if (cp_drain_find_scontrol(o->scontrol, "nothing drained", exe, sizeof(exe)) != 0 ||
        cp_drain_read_nodes(exe, &nodes, &nn) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    int nnew = left_as_they_are(nodes, nn, p, np);
    free(nodes);
    if (nnew < 0 || (nnew > 0 && breaker(f, o, st, exe, np, nnew, now) != 0)) {
        return CP_REPORT_EXIT_BAD;
    }
    char part[64];
    part_name(f, part, sizeof(part));
    for (size_t k = 0; k < np; k++) { /* recorded first: a drain always counts */
        if (p[k].due && !p[k].offline && cp_drain_state_drained(st, p[k].host, part, now) != 0) {
            cp_report_error("screen: out of memory");
            return CP_REPORT_EXIT_BAD;
        }
    }
    cp_drain_state_prune(st, now - (o->window > 7 * 86400 ? o->window : 7 * 86400));
    if (cp_drain_state_save(o->state, st) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    int done = 0;
    for (size_t k = 0; k < np; k++) {
        char reason[256], msg[512], how[600];
        if (!p[k].due || p[k].offline) {
            continue;
        }
        drain_reason(rows, n, p[k].row, reason, sizeof(reason));
        int rc = update(exe, p[k].host, "drain", reason, msg, sizeof(msg));
        if (rc != 0) {
            for (size_t j = k; j < np; j++) { /* not drained: not counted */
                if (p[j].due && !p[j].offline) {
                    cp_drain_state_undrain(st, p[j].host);
                }
            }
            cp_drain_state_save(o->state, st);
            cp_drain_how(rc, msg, how, sizeof(how));
            cp_report_error("screen: --apply: %s refused to drain %s (%s): drained %d of %d; a "
                            "drain needs root or a Slurm operator, and slurmctld",
                            exe, p[k].host, how, done, nnew);
            return CP_REPORT_EXIT_BAD;
        }
        printf("# drained %s: %s\n", p[k].host, reason);
        done++;
    }
    printf("# --apply: drained %d of %d flagged node%s through %s (collprof-report screen "
           "FILE --resume --apply returns them)\n",
           done, nnew, nnew == 1 ? "" : "s", exe);
    return status;
}

/* The failing verdicts of p[0..np) counted into st (the screen of f): each flagged node's
 * count and whether it is due, said for those not due; the healthy ones' counts reset. */
static int count_verdicts(const cp_report_file_t *f, const collprof_screen_row_t *rows, size_t n,
                          pick_t *p, size_t np, cp_drain_state_t *st,
                          const cp_report_drain_opts_t *o, long long now)
{
    char id[128], file[256];
    screen_id(f, id, sizeof(id));
    ascii(f->path, file, sizeof(file));
    for (size_t k = 0; k < np; k++) {
        const cp_drain_fail_t *was = cp_drain_state_fail(st, p[k].host);
        if (p[k].flagged) {
            p[k].count = cp_drain_state_failed(st, p[k].host, id, file, now);
            if (p[k].count < 0) {
                cp_report_error("screen: out of memory");
                return CP_REPORT_EXIT_BAD;
            }
            p[k].due = p[k].count >= o->drain_after;
        } else if (p[k].healthy && was != NULL) {
            printf("# %s: healthy: its %d failing verdict%s in a row forgotten\n", p[k].host,
                   was->count, was->count == 1 ? "" : "s");
            cp_drain_state_forget(st, p[k].host);
        }
    }
    for (size_t k = 0; k < np; k++) {
        char reason[256];
        drain_reason(rows, n, p[k].row, reason, sizeof(reason));
        if (p[k].flagged && p[k].due) {
            drain_line(stdout, rows, n, p[k].row);
        } else if (p[k].flagged) {
            printf("# %s: failing verdict %d of %d in a row: not drained yet (%s)\n", p[k].host,
                   p[k].count, o->drain_after, reason);
        }
    }
    return 0;
}

/* The breaker as it stands, for --apply: 0 to go on, else the exit status 2 after the
 * error (tripped, and no --reset-breaker). */
static int breaker_state(cp_drain_state_t *st, const cp_report_drain_opts_t *o)
{
    char when[64] = "?";
    time_t t = (time_t)st->tripped;
    struct tm tm;
    if (st->tripped && gmtime_r(&t, &tm) != NULL) {
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    if (st->tripped && !o->reset_breaker) {
        cp_report_error("screen: --apply: the circuit breaker tripped at %s (%s): nothing "
                        "drained, the state file unchanged; see to it, then add "
                        "--reset-breaker",
                        when, st->trip_why);
        return CP_REPORT_EXIT_BAD;
    }
    if (o->reset_breaker && st->tripped) {
        printf("# --reset-breaker: the circuit breaker, tripped at %s (%s), is reset\n", when,
               st->trip_why);
    } else if (o->reset_breaker) {
        printf("# --reset-breaker: the circuit breaker was not tripped\n");
    }
    if (o->reset_breaker) {
        st->tripped = 0;
        st->trip_why[0] = '\0';
    }
    return 0;
}

int cp_report_drain(const cp_report_file_t *f, const collprof_screen_row_t *rows, size_t n,
                    const cp_report_drain_opts_t *o, int status)
{
    size_t np = 0;
    pick_t *p = picks(rows, n, &np);
    cp_drain_state_t st;
    int rc = status;
    if (p == NULL) {
        cp_report_error("screen: out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    if (check_hosts(f, p, np) != 0) {
        free(p);
        return CP_REPORT_EXIT_BAD;
    }
    not_drained(rows, n);
    if (o->state == NULL) { /* no history: every flagged node's line (--apply needs one) */
        for (size_t k = 0; k < np; k++) {
            if (p[k].flagged) {
                drain_line(stdout, rows, n, p[k].row);
            }
        }
        free(p);
        return status;
    }
    int lock = o->apply ? cp_drain_state_lock(o->state) : -2;
    if (lock == -1 || cp_drain_state_load(o->state, &st) != 0) {
        if (lock >= 0) {
            close(lock);
        }
        free(p);
        return CP_REPORT_EXIT_BAD;
    }
    long long now = (long long)time(NULL);
    if (o->apply && breaker_state(&st, o) != 0) {
        rc = CP_REPORT_EXIT_BAD;
    } else if (count_verdicts(f, rows, n, p, np, &st, o, now) != 0) {
        rc = CP_REPORT_EXIT_BAD;
    } else if (o->apply) {
        int due = 0;
        for (size_t k = 0; k < np; k++) {
            due += p[k].due;
        }
        if (due > 0) {
            rc = apply(f, rows, n, p, np, &st, o, now, status);
        } else {
            printf("# --apply: no node to drain%s\n", status == 1 ? " yet" : "");
            rc = cp_drain_state_save(o->state, &st) != 0 ? CP_REPORT_EXIT_BAD : status;
        }
    }
    cp_drain_state_free(&st);
    if (lock >= 0) {
        close(lock);
    }
    free(p);
    return rc;
}

/* ---- --resume ---------------------------------------------------------------------------- */

/* The nodes of f's run (its ranks' hosts, plain names, each once) that Slurm has drained
 * with collprof's reason, into p (*np); the others drained said so.  NULL when out of memory. */
static pick_t *drained_by_us(const cp_report_file_t *f, const cp_drain_node_t *nodes, size_t nn,
                             size_t *np)
{
    pick_t *p = calloc((size_t)f->nranks + 1, sizeof(*p));
    *np = 0;
    for (int r = 0; p != NULL && r < f->nranks; r++) {
        const char *h = f->ranks[r].hostname;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) {
            seen = !strcmp(f->ranks[q].hostname, h);
        }
        const cp_drain_node_t *nd =
            seen || !plain_name(h) ? NULL : cp_drain_find_node(nodes, nn, h);
        if (nd != NULL && nd->drained && cp_drain_ours(nd->reason)) {
            p[(*np)++].host = h;
            printf("scontrol update nodename=%s state=resume\n", h);
        } else if (nd != NULL && nd->offline && nd->reason[0] != '\0') {
            printf("# %s: %s by someone else (reason '%s'): not resumed\n", h,
                   nd->drained ? "drained" : "down", nd->reason);
        }
    }
    return p;
}

int cp_report_resume(const cp_report_file_t *f, const cp_report_drain_opts_t *o)
{
    char exe[4096];
    cp_drain_node_t *nodes = NULL;
    cp_drain_state_t st;
    size_t nn = 0, np = 0;
    memset(&st, 0, sizeof(st));
    int lock = o->apply && o->state != NULL ? cp_drain_state_lock(o->state) : -2;
    if (lock == -1 || (lock >= 0 && cp_drain_state_load(o->state, &st) != 0) ||
        cp_drain_find_scontrol(o->scontrol, "nothing resumed", exe, sizeof(exe)) != 0 ||
        cp_drain_read_nodes(exe, &nodes, &nn) != 0) {
        cp_drain_state_free(&st);
        if (lock >= 0) {
            close(lock);
        }
        return CP_REPORT_EXIT_BAD;
    }
    pick_t *p = drained_by_us(f, nodes, nn, &np);
    int rc = p == NULL ? CP_REPORT_EXIT_BAD : CP_REPORT_EXIT_OK, done = 0;
    if (p == NULL) {
        cp_report_error("screen: out of memory");
    }
    for (size_t k = 0; o->apply && rc == 0 && k < np; k++) {
        char msg[512], how[600];
        int urc = update(exe, p[k].host, "resume", NULL, msg, sizeof(msg));
        if (urc != 0) {
            cp_drain_how(urc, msg, how, sizeof(how));
            cp_report_error("screen: --resume: %s refused to resume %s (%s): resumed %d of %zu",
                            exe, p[k].host, how, done, np);
            rc = CP_REPORT_EXIT_BAD;
            break;
        }
        printf("# resumed %s\n", p[k].host);
        cp_drain_state_forget(&st, p[k].host);
        done++;
    }
    if (o->apply && p != NULL) {
        if (o->state != NULL && done > 0 && cp_drain_state_save(o->state, &st) != 0) {
            rc = CP_REPORT_EXIT_BAD;
        }
        if (rc == 0) {
            printf("# --resume --apply: resumed %d node%s drained by collprof through %s\n", done,
                   done == 1 ? "" : "s", exe);
        }
    }
    free(p);
    free(nodes);
    cp_drain_state_free(&st);
    if (lock >= 0) {
        close(lock);
    }
    return rc;
}
