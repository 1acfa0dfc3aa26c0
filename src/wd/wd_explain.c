#include "config.h"

/*
 * The watchdog's attribution (watchdog.h, wd_int.h), pure: from the ranks' records, where
 * each rank is, who is behind, who did not answer, in words.
 */

#include "wd/wd_int.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_wd_ranks(const int *ranks, int n, char *buf, size_t len)
{
    cp_fmt_ranges(ranks, n, buf, len);
}

/* A position for ordering: (cell, stage, iteration, step). */
typedef struct pos {
    long long cell, stage, iter, step;
} pos_t;

static pos_t position(const cp_wd_rec_t *r)
{
    pos_t p = {r->cell, 0, 0, 0};
    switch ((cp_wd_phase_t)r->phase) {
    case CP_WD_START: p.cell = -1; break;
    case CP_WD_SETUP: p.stage = 0; break;
    case CP_WD_SYNC: p.stage = 1, p.iter = r->iter, p.step = 0; break;
    case CP_WD_OP: p.stage = 1, p.iter = r->iter, p.step = 1; break;
    case CP_WD_OP_DONE: p.stage = 1, p.iter = r->iter, p.step = 2; break;
    case CP_WD_FILL: p.stage = 1, p.iter = r->iter, p.step = -1; break;
    case CP_WD_VERIFY: p.stage = 1, p.iter = r->iter, p.step = 3; break;
    case CP_WD_CHECK: p.stage = 2; break;
    case CP_WD_GATHER: p.stage = 3; break;
    case CP_WD_WRITE: p.stage = 4; break;
    case CP_WD_FINISH:
    default: p.cell = LLONG_MAX; break;
    }
    return p;
}

static int pos_cmp(pos_t a, pos_t b)
{
    if (a.cell != b.cell) {
        return a.cell < b.cell ? -1 : 1;
    }
    if (a.stage != b.stage) {
        return a.stage < b.stage ? -1 : 1;
    }
    if (a.iter != b.iter) {
        return a.iter < b.iter ? -1 : 1;
    }
    return a.step < b.step ? -1 : a.step > b.step;
}

/* Where a rank is, in words; with_cell adds its cell. */
void cp_wd_where(const cp_wd_rec_t *r, int with_cell, char *buf, size_t len)
{
    char it[64] = "";
    if (r->iter >= 0 && r->iter < r->warmup) {
        snprintf(it, sizeof(it), "warm-up iteration %d", r->iter + 1);
    } else if (r->iter >= 0) {
        snprintf(it, sizeof(it), "iteration %d", r->iter - r->warmup + 1);
    }
    const char *what = "";
    char tmp[128];
    switch ((cp_wd_phase_t)r->phase) {
    case CP_WD_START: what = "starting up (boot, backend initialisation)"; break;
    case CP_WD_SETUP: what = "setting up the cell"; break;
    case CP_WD_SYNC:
        snprintf(tmp, sizeof(tmp), "in the barrier before %s", it);
        what = tmp;
        break;
    case CP_WD_OP:
        snprintf(tmp, sizeof(tmp), "in the operation, %s", it);
        what = tmp;
        break;
    case CP_WD_OP_DONE:
        snprintf(tmp, sizeof(tmp), "past the operation of %s", it);
        what = tmp;
        break;
    case CP_WD_CHECK: what = "in the exact-check run"; break;
    case CP_WD_FILL:
        snprintf(tmp, sizeof(tmp), "filling fresh inputs before %s (--check)", it);
        what = tmp;
        break;
    case CP_WD_VERIFY:
        snprintf(tmp, sizeof(tmp), "checking the output of %s (--check)", it);
        what = tmp;
        break;
    case CP_WD_GATHER: /* the TCP tree, PMIx fences where it could not open, or none */
        what = "gathering results over the control channel";
        break;
    case CP_WD_WRITE: what = "writing results"; break;
    case CP_WD_FINISH:
    default: what = "finishing (closing the backends)"; break;
    }
    if (with_cell && r->cell >= 0 && r->phase != CP_WD_START && r->phase != CP_WD_FINISH) {
        snprintf(buf, len, "in cell %d, %s", r->cell, what);
    } else {
        snprintf(buf, len, "%s", what);
    }
}

void cp_wd_append(char *msg, size_t len, const char *fmt, ...)
{
    size_t o = strlen(msg);
    if (o + 1 >= len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + o, len - o, fmt, ap);
    va_end(ap);
}

/* The rank furthest ahead (-1: none answered) and the longest stall. */
static int find_front(const cp_wd_rec_t *recs, int n, double *stalled)
{
    int front = -1;
    *stalled = 0;
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid) {
            continue;
        }
        if (front < 0 || pos_cmp(position(&recs[q]), position(&recs[front])) > 0) {
            front = q;
        }
        if (recs[q].stalled_s > *stalled) {
            *stalled = recs[q].stalled_s;
        }
    }
    return front;
}

/* Rank q's host name; "?" where the hosts are unknown. */
static const char *host_of(const cp_wd_hosts_t *h, int q)
{
    if (h == NULL || h->names == NULL) {
        return "?";
    }
    return h->names[h->node_of != NULL ? h->node_of[q] : q];
}

/* " Did not arrive: rank q (host) last seen ...;" for the nbehind ranks behind f. */
static void explain_behind(const cp_wd_rec_t *recs, int n, const cp_wd_hosts_t *hosts,
                           const cp_wd_rec_t *f, int nbehind, char *msg, size_t len)
{
    pos_t fp = position(f);
    cp_wd_append(msg, len, " Did not arrive:");
    int shown = 0, last = -1; /* last: the rank furthest behind */
    for (int q = 0; q < n; q++) {
        if (recs[q].valid && (last < 0 || pos_cmp(position(&recs[q]), position(&recs[last])) < 0)) {
            last = q;
        }
    }
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid || pos_cmp(position(&recs[q]), fp) == 0) {
            continue;
        }
        if (shown == 8) {
            cp_wd_append(msg, len, " and %d more;", nbehind - shown);
            break;
        }
        char w[160];
        cp_wd_where(&recs[q], recs[q].cell != f->cell, w, sizeof(w));
        int furthest = nbehind > 1 && pos_cmp(position(&recs[q]), position(&recs[last])) == 0;
        cp_wd_append(msg, len, " rank %d (%s) last seen %s%s;", q, host_of(hosts, q), w,
                     furthest ? " (furthest behind)" : "");
        shown++;
    }
    msg[strlen(msg) - 1] = '.';
}

/* " rank 3 on n2, ranks 4-7 on n3." : the silent ranks grouped by host, in
 * rank order of each host's first; past SILENT_HOSTS hosts, a count. */
#define SILENT_HOSTS 4
static void explain_silent(const int *silent, int nsilent, const cp_wd_hosts_t *hosts, char *msg,
                           size_t len)
{
    int *mine = calloc((size_t)nsilent, sizeof(int)), *done = calloc((size_t)nsilent, sizeof(int));
    int nhosts = 0, left = nsilent;
    char list[256];
    for (int i = 0; i < nsilent && mine != NULL && done != NULL; i++) {
        if (done[i]) {
            continue;
        }
        int n = 0;
        for (int j = i; j < nsilent; j++) {
            if (!done[j] && !strcmp(host_of(hosts, silent[j]), host_of(hosts, silent[i]))) {
                mine[n++] = silent[j];
                done[j] = 1;
            }
        }
        if (nhosts == SILENT_HOSTS) {
            cp_wd_append(msg, len, " and %d more rank%s on other nodes,", left,
                         left > 1 ? "s" : "");
            break;
        }
        cp_wd_ranks(mine, n, list, sizeof(list));
        cp_wd_append(msg, len, " rank%s %s", n > 1 ? "s" : "", list);
        if (hosts != NULL) {
            cp_wd_append(msg, len, " on %s", host_of(hosts, silent[i]));
        }
        cp_wd_append(msg, len, ",");
        nhosts++;
        left -= n;
    }
    free(mine);
    free(done);
    if (msg[0] != '\0' && msg[strlen(msg) - 1] == ',') {
        msg[strlen(msg) - 1] = '.';
    } else {
        cp_wd_append(msg, len, ".");
    }
}

/* The ranks at the front (waiting) and those that did not answer (silent). */
static void explain_rest(const int *waiting, int nwait, const int *silent, int nsilent, int n,
                         int nbehind, const char *fw, const cp_wd_hosts_t *hosts, char *msg,
                         size_t len)
{
    char list[256];
    if (nwait > 0) {
        cp_wd_ranks(waiting, nwait, list, sizeof(list));
        if (nbehind == 0 && nsilent == 0) {
            cp_wd_append(msg, len, " All %d ranks are %s: the backend did not complete it.", n, fw);
        } else {
            cp_wd_append(msg, len, " Waiting (%s): rank%s %s.", fw, nwait > 1 ? "s" : "", list);
        }
    }
    if (nsilent > 0) {
        cp_wd_append(msg, len, " No answer (stopped, dead, or cut off from PMIx):");
        explain_silent(silent, nsilent, hosts, msg, len);
    }
}

/* " Waiting: ranks 0,3 in the operation, iteration 5; rank 1 in the operation,
 * iteration 4." : with ranks that do not answer, those that do are waiting
 * for them wherever they are (a collective left half done by a stopped rank
 * leaves its peers at different places): none is blamed. */
static void explain_groups(const cp_wd_rec_t *recs, int n, int cell, char *msg, size_t len)
{
    int *mine = calloc((size_t)n, sizeof(int)), *done = calloc((size_t)n, sizeof(int));
    int groups = 0;
    char list[256], w[160];
    cp_wd_append(msg, len, " Waiting:");
    for (int q = 0; q < n && mine != NULL && done != NULL; q++) {
        if (!recs[q].valid || done[q]) {
            continue;
        }
        int m = 0;
        for (int j = q; j < n; j++) {
            if (recs[j].valid && !done[j] && pos_cmp(position(&recs[j]), position(&recs[q])) == 0) {
                mine[m++] = j;
                done[j] = 1;
            }
        }
        if (groups++ == 8) {
            cp_wd_append(msg, len, " and others;");
            break;
        }
        cp_wd_ranks(mine, m, list, sizeof(list));
        cp_wd_where(&recs[q], recs[q].cell != cell, w, sizeof(w));
        cp_wd_append(msg, len, " rank%s %s %s;", m > 1 ? "s" : "", list, w);
    }
    free(mine);
    free(done);
    msg[strlen(msg) - 1] = '.';
}

int cp_wd_explain(const cp_wd_rec_t *recs, int n, const cp_wd_hosts_t *hosts,
                  void (*describe)(void *arg, int cell, char *buf, size_t len), void *arg,
                  char *msg, size_t len)
{
    double stalled;
    int front = find_front(recs, n, &stalled);
    msg[0] = '\0';
    if (front < 0) {
        snprintf(msg, len, "no progress, and no rank answered the watchdog");
        return -1;
    }
    const cp_wd_rec_t *f = &recs[front];
    pos_t fp = position(f);
    int cell = (f->phase == CP_WD_START || f->phase == CP_WD_FINISH) ? -1 : f->cell;
    char desc[256] = "";
    if (cell >= 0 && describe != NULL) {
        describe(arg, cell, desc, sizeof(desc));
    }
    int *waiting = calloc((size_t)n, sizeof(int)), *silent = calloc((size_t)n, sizeof(int));
    int nwait = 0, nbehind = 0, nsilent = 0;
    if (waiting == NULL || silent == NULL) {
        free(waiting);
        free(silent);
        snprintf(msg, len, "no progress for %.1f s (out of memory explaining it)", stalled);
        return cell;
    }
    for (int q = 0; q < n; q++) {
        if (!recs[q].valid) {
            silent[nsilent++] = q;
        } else if (pos_cmp(position(&recs[q]), fp) == 0) {
            waiting[nwait++] = q;
        } else {
            nbehind++;
        }
    }
    char fw[160];
    cp_wd_where(f, 0, fw, sizeof(fw));
    if (cell >= 0) {
        snprintf(msg, len, "cell %d (%s) timed out: no progress for %.1f s.", cell, desc, stalled);
    } else {
        snprintf(msg, len, "no progress for %.1f s.", stalled);
    }
    if (nbehind > 0 && nsilent > 0) {
        explain_groups(recs, n, cell, msg, len);
        explain_rest(waiting, 0, silent, nsilent, n, nbehind, fw, hosts, msg, len);
    } else {
        if (nbehind > 0) {
            explain_behind(recs, n, hosts, f, nbehind, msg, len);
        }
        explain_rest(waiting, nwait, silent, nsilent, n, nbehind, fw, hosts, msg, len);
    }
    free(waiting);
    free(silent);
    return cell;
}
