#include "config.h"

/*
 * The halving's evidence in words (halve.h): for a node or a link it names, the chain of
 * groups that failed down to it, with their figures against the prediction.
 */

#include "screen/halve.h"

#include "screen/hostlist.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct out {
    char *buf;
    size_t len, at;
} out_t;

__attribute__((format(printf, 2, 3))) static void put(out_t *o, const char *fmt, ...)
{
    if (o->at >= o->len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o->buf + o->at, o->len - o->at, fmt, ap);
    va_end(ap);
    o->at += w > 0 ? (size_t)w : 0;
    if (o->at >= o->len) {
        o->at = o->len;
    }
}

/* The host list of group k's nodes. */
static void group_names(const cp_halve_t *h, size_t k, const char *const *names, char *buf,
                        size_t len)
{
    const cp_halve_group_t *g = &h->g[k];
    unsigned char *pick = calloc((size_t)(h->n > 0 ? h->n : 1), 1);
    buf[0] = '\0';
    if (pick == NULL || names == NULL) {
        if (g->count > 0) {
            snprintf(buf, len, "%d nodes from node %d", g->count, h->nodes[g->first]);
        }
        free(pick);
        return;
    }
    for (int j = 0; j < g->count; j++) {
        pick[h->nodes[g->first + j]] = 1;
    }
    cp_hostlist(names, pick, h->n, buf, len);
    free(pick);
}

/* Group k's figure: "0.05" (GB/s), "wrong", "error". */
static void figure(const cp_halve_group_t *g, char *buf, size_t len)
{
    if (g->wrong > 0) {
        snprintf(buf, len, "%llu wrong", (unsigned long long)g->wrong);
    } else if (g->failed || g->busbw <= 0) {
        snprintf(buf, len, "failed");
    } else {
        snprintf(buf, len, "%.3g", g->busbw);
    }
}

static const char *name_or(const char *const *names, int i, char *tmp, size_t len)
{
    if (names != NULL && names[i] != NULL && names[i][0]) {
        return names[i];
    }
    snprintf(tmp, len, "node %d", i);
    return tmp;
}

/* The level-0 group's words (and its second try's). */
static void root_words(const cp_halve_t *h, out_t *o)
{
    const cp_halve_group_t *g = &h->g[0];
    char f[32];
    figure(g, f, sizeof(f));
    put(o, "allreduce over %d nodes %s%s", g->count, f,
        g->busbw > 0 && !g->failed ? " GB/s busbw" : "");
    double e = cp_halve_expect(&h->opt, g->count);
    if (e > 0 && g->busbw > 0 && !g->failed && g->wrong == 0) {
        put(o, " (%.2fx the %.3g the pairs predict)", g->busbw / e, e);
    }
    if (h->ng > 1 && h->g[1].retry && h->g[1].verdict != CP_HALVE_PENDING) {
        figure(&h->g[1], f, sizeof(f));
        put(o, "; again %s (%s)", f, h->g[1].verdict == CP_HALVE_FAIL ? "fails" : "passes");
    }
}

/* The children of parent p, side by side: "halves n[1-4] 0.04 | n[5-8] 0.38" or "n3 with n7
 * 0.03 | n4 with n8 0.36". */
static void level_words(const cp_halve_t *h, int p, const char *const *names, out_t *o)
{
    int first = 1;
    for (size_t k = 0; k < h->ng; k++) {
        const cp_halve_group_t *g = &h->g[k];
        if (g->parent != p || g->verdict == CP_HALVE_PENDING) {
            continue;
        }
        char f[32], who[160], t1[32], t2[32];
        figure(g, f, sizeof(f));
        if (g->witness) {
            snprintf(who, sizeof(who), "%s with %s", name_or(names, h->nodes[g->first], t1, 32),
                     name_or(names, h->nodes[g->first + 1], t2, 32));
        } else {
            group_names(h, k, names, who, sizeof(who));
        }
        put(o, "%s%s %s%s", first ? (g->witness ? "; witnesses " : "; halves ") : " | ", who, f,
            g->verdict == CP_HALVE_FAIL ? " (fails)" : "");
        first = 0;
    }
}

/* Words of the chain from level 0 down to group k's children. */
static void chain(const cp_halve_t *h, int k, const char *const *names, out_t *o)
{
    int path[64], m = 0;
    for (int p = k; p >= 0 && m < 64; p = h->g[p].parent) {
        path[m++] = p;
    }
    root_words(h, o);
    for (int i = m - 1; i >= 0; i--) {
        level_words(h, path[i], names, o);
    }
}

void cp_halve_evidence(const cp_halve_t *h, int node, const char *const *names, char *buf,
                       size_t len)
{
    out_t o = {.buf = buf, .len = len, .at = 0};
    if (len > 0) {
        buf[0] = '\0';
    }
    if (h->ng == 0) {
        return;
    }
    if (node >= 0 && node < h->n && h->culprit_group[node] >= 0) {
        chain(h, h->g[h->culprit_group[node]].parent, names, &o);
        return;
    }
    if (node >= 0) {
        return;
    }
    if (h->outcome == CP_HALVE_PASSED || h->outcome == CP_HALVE_RUNNING) {
        root_words(h, &o);
        put(&o, ", %s", h->outcome == CP_HALVE_PASSED ? "passed" : "not finished");
        return;
    }
    if (h->first_unexplained >= 0) {
        chain(h, h->first_unexplained, names, &o);
        char who[160];
        group_names(h, (size_t)h->first_unexplained, names, who, sizeof(who));
        put(&o, "; unexplained: %s fails, its parts do not (or no witness was left)", who);
    } else {
        root_words(h, &o);
    }
    int named = 0;
    for (int i = 0; i < h->n; i++) {
        named += h->culprit[i];
    }
    put(&o, "; %d levels, %d node%s and %d link%s named", h->levels, named, named == 1 ? "" : "s",
        h->nlinks, h->nlinks == 1 ? "" : "s");
}

void cp_halve_link_evidence(const cp_halve_t *h, int l, const char *const *names, char *buf,
                            size_t len)
{
    out_t o = {.buf = buf, .len = len, .at = 0};
    if (len > 0) {
        buf[0] = '\0';
    }
    if (l < 0 || l >= h->nlinks) {
        return;
    }
    chain(h, h->link_group[l], names, &o);
    put(&o, "; together they fail, apart they pass");
}
