#include "config.h"

#include "screen/screen_out.h"

#include "screen/hostlist.h"

#include <stdlib.h>
#include <string.h>

/* A new zeroed row at the end of *rows, or NULL. */
static collprof_screen_row_t *grow(collprof_screen_row_t **rows, size_t *n)
{
    collprof_screen_row_t *g = realloc(*rows, (*n + 1) * sizeof(*g));
    if (g == NULL) {
        return NULL;
    }
    *rows = g;
    memset(&g[*n], 0, sizeof(g[0]));
    return &g[(*n)++];
}

/* The fields every row of s shares. */
static void common(const cp_screen_t *s, const char *backend, collprof_screen_row_t *r)
{
    snprintf(r->backend, sizeof(r->backend), "%s", backend);
    r->ref_bw_gbs = s->ref.bw_gbs;
    r->ref_lat_us = s->ref.lat_us;
    snprintf(r->reference, sizeof(r->reference), "%s", s->ref.source ? "baseline" : "screen");
    r->threshold = s->opt.thr;
    r->seed = s->opt.seed;
    r->rounds = s->rounds_run;
    cp_screen_class_words(&s->ref, r->path_refs, sizeof(r->path_refs));
}

static const char *name_of(const char *const *names, int i)
{
    return names != NULL && names[i] != NULL ? names[i] : "";
}

/* The row of suspect link l. */
static int link_row(const cp_screen_t *s, int l, const char *backend, const char *const *names,
                    collprof_screen_row_t **rows, size_t *n)
{
    collprof_screen_row_t *r = grow(rows, n);
    if (r == NULL) {
        return -1;
    }
    int a = s->link_a[l], b = s->link_b[l];
    common(s, backend, r);
    snprintf(r->what, sizeof(r->what), "link");
    r->node_a = a;
    r->node_b = b;
    snprintf(r->host_a, sizeof(r->host_a), "%s", name_of(names, a));
    snprintf(r->host_b, sizeof(r->host_b), "%s", name_of(names, b));
    snprintf(r->verdict, sizeof(r->verdict), "%s", cp_screen_verdict_name(s->link_verdict[l]));
    r->suspect = 1;
    r->confirm_with = b;
    r->score = 1.0;
    size_t at = 0;
    for (size_t i = 0; i < s->npairs; i++) { /* the link's own pairs only */
        const cp_screen_pair_t *p = &s->pairs[i];
        if (p->a == (a < b ? a : b) && p->b == (a < b ? b : a) && p->phase != CP_SCREEN_REPEAT) {
            r->score = p->score < r->score ? p->score : r->score;
            int w =
                snprintf(r->evidence + at, sizeof(r->evidence) - at, "%s%s %.2fx (%s%s%s)",
                         at ? ", " : "", p->slow ? "slow" : "ok", p->score,
                         p->phase == CP_SCREEN_CONFIRM ? "confirm" : "random",
                         r->path_refs[0] ? ", " : "", r->path_refs[0] ? cp_path_name(p->path) : "");
            at += w > 0 && (size_t)w < sizeof(r->evidence) - at ? (size_t)w : 0;
        }
    }
    return 0;
}

int cp_screen_rows(const cp_screen_t *s, const char *backend, const char *const *names,
                   collprof_screen_row_t **rows, size_t *n)
{
    for (int i = 0; i < s->n; i++) {
        collprof_screen_row_t *r = grow(rows, n);
        if (r == NULL) {
            return -1;
        }
        common(s, backend, r);
        snprintf(r->what, sizeof(r->what), "node");
        r->node_a = i;
        r->node_b = -1;
        snprintf(r->host_a, sizeof(r->host_a), "%s", name_of(names, i));
        snprintf(r->verdict, sizeof(r->verdict), "%s", cp_screen_verdict_name(s->verdict[i]));
        cp_screen_node_stats(s, i, &r->partners, &r->slow_partners, &r->score);
        r->suspect = s->suspect[i];
        r->confirm_with = s->confirm_with[i];
        cp_screen_evidence(s, i, names, r->evidence, sizeof(r->evidence));
    }
    for (int l = 0; l < s->nlinks; l++) {
        if (link_row(s, l, backend, names, rows, n) != 0) {
            return -1;
        }
    }
    return 0;
}

/* How much an outcome says against the pair, to merge its two rows: the one that says most
 * wins (an end gone, then wrong data, a timeout, no set-up, measured). */
static int weight(int outcome)
{
    static const int w[] = {[CP_SCREEN_MEASURED] = 0,
                            [CP_SCREEN_NOSETUP] = 1,
                            [CP_SCREEN_TIMEOUT] = 2,
                            [CP_SCREEN_WRONG] = 3,
                            [CP_SCREEN_PARTNER_GONE] = 4};
    return outcome >= 0 && outcome <= CP_SCREEN_PARTNER_GONE ? w[outcome] : 1;
}

void cp_screen_pair_merge(cp_screen_pair_t *p, const collprof_link_row_t *row)
{
    int c = cp_path_parse(row->path), o = cp_screen_outcome_of(row->status);
    p->path = c < 0 ? CP_PATH_ANY : c; /* a class this collprof does not know: "any" */
    if (weight(o) > weight(p->outcome)) {
        p->outcome = o;
    } else if (o != CP_SCREEN_MEASURED) {
        /* the pair's outcome already says as much */
    } else if (!strcmp(row->kind, "latency")) {
        p->lat_us = row->time_p50_us;
    } else {
        p->bw_gbs = cp_screen_row_bw_gbs(row);
    }
}

double cp_screen_row_bw_gbs(const collprof_link_row_t *row)
{
    return row->time_p50_us > 0 ? (double)row->bytes / row->time_p50_us * 1e-3 : 0;
}

/* qsort: rows (pointers to them) by round, then pair. */
static int by_round(const void *x, const void *y)
{
    const collprof_link_row_t *a = *(const collprof_link_row_t *const *)x;
    const collprof_link_row_t *b = *(const collprof_link_row_t *const *)y;
    return a->round != b->round     ? (a->round > b->round) - (a->round < b->round)
           : a->node_a != b->node_a ? (a->node_a > b->node_a) - (a->node_a < b->node_a)
                                    : (a->node_b > b->node_b) - (a->node_b < b->node_b);
}

int cp_screen_add_rows(cp_screen_t *s, const collprof_link_row_t *rows, size_t n,
                       const char *backend, int random)
{
    const collprof_link_row_t **by = malloc(sizeof(*by) * (n + 1));
    size_t m = 0;
    if (by == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const collprof_link_row_t *r = &rows[i];
        if (strcmp(r->backend, backend) != 0) {
            continue;
        }
        if (r->node_a < 0 || r->node_b < 0 || r->node_a >= s->n || r->node_b >= s->n ||
            r->node_a == r->node_b || r->round < 0) {
            free(by);
            return -2;
        }
        by[m++] = r;
    }
    qsort(by, m, sizeof(*by), by_round);
    int added = 0;
    for (size_t k = 0; k < m; k++) {
        const collprof_link_row_t *r = by[k];
        cp_screen_pair_t *last = s->npairs > 0 ? &s->pairs[s->npairs - 1] : NULL;
        int a = r->node_a < r->node_b ? r->node_a : r->node_b;
        int b = r->node_a < r->node_b ? r->node_b : r->node_a;
        if (k == 0 || last->round != r->round || last->a != a || last->b != b) {
            cp_screen_pair_t p = {.a = a, .b = b, .round = r->round};
            p.phase = r->round < random ? CP_SCREEN_RANDOM : CP_SCREEN_CONFIRM;
            if (cp_screen_add(s, &p) != 0) {
                free(by);
                return -1;
            }
            added++;
            last = &s->pairs[s->npairs - 1];
        }
        cp_screen_pair_merge(last, r);
        s->rounds_run = r->round + 1 > s->rounds_run ? r->round + 1 : s->rounds_run;
    }
    free(by);
    return cp_screen_mark_repairs(s, random) < 0 ? -1 : added;
}

static int is(const collprof_screen_row_t *r, const char *verdict)
{
    return strcmp(r->verdict, verdict) == 0;
}

int cp_screen_excluded(const collprof_screen_row_t *row)
{
    return !strcmp(row->what, "node") && (is(row, "slow") || is(row, "unreachable"));
}

int cp_screen_large_slow(const collprof_screen_row_t *rows, size_t n, size_t at, int *slow,
                         int *judged)
{
    size_t first = at, end = at;
    while (first > 0 && !strcmp(rows[first - 1].backend, rows[at].backend)) {
        first--;
    }
    while (end < n && !strcmp(rows[end].backend, rows[at].backend)) {
        end++;
    }
    int s = 0, j = 0, own = at < n && !strcmp(rows[at].reference, "screen");
    for (size_t i = first; i < end; i++) {
        if (!strcmp(rows[i].what, "node") && (is(&rows[i], "slow") || is(&rows[i], "healthy"))) {
            j++;
            s += is(&rows[i], "slow");
        }
    }
    if (slow != NULL) {
        *slow = s;
    }
    if (judged != NULL) {
        *judged = j;
    }
    return own && j > 0 && s > CP_SCREEN_LARGE_SLOW * j;
}

int cp_screen_status(const collprof_screen_row_t *rows, size_t n)
{
    int flagged = 0, unsure = n == 0, large = 0;
    for (size_t i = 0; i < n; i++) {
        const collprof_screen_row_t *r = &rows[i];
        if (i == 0 || strcmp(r->backend, rows[i - 1].backend) != 0) { /* a backend's first */
            large = cp_screen_large_slow(rows, n, i, NULL, NULL);
            unsure |= large;
        }
        if (large && !strcmp(r->what, "node") && is(r, "slow")) {
            continue; /* not flagged: judge against a baseline */
        }
        flagged |= cp_screen_excluded(r) || (!strcmp(r->what, "link") && is(r, "slow")) ||
                   (!strcmp(r->what, "verify") && is(r, "failed"));
        unsure |= is(r, "inconclusive") || is(r, "untested");
        unsure |= !strcmp(r->reference, "screen") && r->ref_bw_gbs <= 0 && r->ref_lat_us <= 0;
    }
    return flagged ? 1 : unsure ? 2 : 0;
}

int cp_screen_exclude_list(const collprof_screen_row_t *rows, size_t n, const char *backend,
                           char *buf, size_t len)
{
    const char **names = calloc(n + 1, sizeof(char *));
    unsigned char *pick = calloc(n + 1, 1);
    int w = 0;
    if (names != NULL && pick != NULL) {
        int large = 0;
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || strcmp(rows[i].backend, rows[i - 1].backend) != 0) {
                large = cp_screen_large_slow(rows, n, i, NULL, NULL);
            }
            names[i] = rows[i].host_a;
            pick[i] = cp_screen_excluded(&rows[i]) && !(large && is(&rows[i], "slow")) &&
                      (backend == NULL || !strcmp(rows[i].backend, backend));
        }
        w = cp_hostlist(names, pick, (int)n, buf, len);
    } else if (len > 0) {
        buf[0] = '\0';
    }
    free(names);
    free(pick);
    return w;
}

int cp_screen_nic_state(const collprof_link_row_t *l)
{
    if (l->nic_path[0] == '\0') {
        return 0;
    }
    return !strcmp(l->nic_path, "ok") || !strcmp(l->nic_path, "unknown") ? 1 : 2;
}

/* names[nd] when it has one, else "node N" in buf. */
static const char *name_or(const char *const *names, int nnames, int nd, char *buf, size_t len)
{
    if (names != NULL && nd >= 0 && nd < nnames && names[nd] != NULL && names[nd][0] != '\0') {
        return names[nd];
    }
    snprintf(buf, len, "node %d", nd);
    return buf;
}

int cp_screen_print_nic_paths(FILE *f, const collprof_link_row_t *links, size_t nl,
                              const char *backend, const char *const *names, int nnames)
{
    int checked = 0, flagged = 0;
    for (size_t i = 0; links != NULL && i < nl; i++) {
        const collprof_link_row_t *l = &links[i];
        int state = strcmp(l->backend, backend) != 0 ? 0 : cp_screen_nic_state(l);
        checked += state > 0;
        if (state < 2) {
            continue;
        }
        char a[32], b[32];
        flagged++;
        fprintf(f,
                "nic path: %s-%s (round %d): %s: %.2fx the message per operation, via %s (expected "
                "%s)\n",
                name_or(names, nnames, l->node_a, a, sizeof(a)),
                name_or(names, nnames, l->node_b, b, sizeof(b)), l->round + 1, l->nic_path,
                l->nic_ratio, l->nic_via[0] ? l->nic_via : "no interface",
                l->nic_expected[0] ? l->nic_expected : "not known");
    }
    if (checked > 0) {
        fprintf(f,
                "nic paths: %d of %d checked pairs went over another NIC or moved far more than "
                "the message\n",
                flagged, checked);
    }
    return flagged;
}

/* The path check of the backend's pairs among the /links rows (docs/screen.md), their nodes
 * named by the node rows [first, end).  Beside the verdict: it judges nothing. */
static void print_paths(FILE *f, const collprof_screen_row_t *rows, size_t first, size_t end,
                        const collprof_link_row_t *links, size_t nl)
{
    int n = 0;
    for (size_t i = first; i < end; i++) {
        n = !strcmp(rows[i].what, "node") && rows[i].node_a >= n ? rows[i].node_a + 1 : n;
    }
    const char **names = calloc((size_t)n + 1, sizeof(char *));
    for (size_t i = first; names != NULL && i < end; i++) {
        if (!strcmp(rows[i].what, "node") && rows[i].node_a >= 0) {
            names[rows[i].node_a] = rows[i].host_a;
        }
    }
    cp_screen_print_nic_paths(f, links, nl, rows[first].backend, names, names != NULL ? n : 0);
    free(names);
}

/* The verdict of one backend's rows [first, end). */
static void print_backend(FILE *f, const collprof_screen_row_t *rows, size_t first, size_t end,
                          const collprof_link_row_t *links, size_t nl)
{
    const collprof_screen_row_t *h = &rows[first];
    int counts[5] = {0};
    fprintf(f,
            "\n== screen: %s, %d rounds (seed %llu), reference %s: %.2f GB/s, %.1f us; slow "
            "below %.2fx ==\n",
            h->backend, h->rounds, (unsigned long long)h->seed,
            !strcmp(h->reference, "baseline") ? "the baseline" : "the healthy nodes", h->ref_bw_gbs,
            h->ref_lat_us, h->threshold);
    if (h->path_refs[0] != '\0') { /* 1.10: judged by path class */
        fprintf(f, "paths: each pair against its class: %s\n", h->path_refs);
    }
    for (size_t i = first; i < end; i++) {
        const collprof_screen_row_t *r = &rows[i];
        int link = !strcmp(r->what, "link");
        if (!strcmp(r->what, "verify")) {
            continue; /* after the nodes and links */
        }
        for (int v = 0; !link && v < 5; v++) {
            counts[v] += !strcmp(r->verdict, cp_screen_verdict_name(v));
        }
        if (!is(r, "healthy") || link) {
            fprintf(f, "%-12s %s%s%s: %s", r->verdict, r->host_a, link ? "-" : "",
                    link ? r->host_b : "", r->evidence[0] ? r->evidence : "no pair finished");
            fprintf(f, "%s\n", link && is(r, "healthy") ? " (not confirmed: cleared)" : "");
        }
    }
    char ex[1024];
    cp_screen_exclude_list(rows + first, end - first, NULL, ex, sizeof(ex));
    fprintf(f, "nodes: %d healthy, %d slow, %d unreachable, %d inconclusive, %d untested\n",
            counts[CP_SCREEN_HEALTHY], counts[CP_SCREEN_SLOW], counts[CP_SCREEN_UNREACHABLE],
            counts[CP_SCREEN_INCONCLUSIVE], counts[CP_SCREEN_UNTESTED]);
    for (size_t i = first; i < end; i++) {
        if (!strcmp(rows[i].what, "verify")) {
            fprintf(f, "validation: %s: %s\n", rows[i].verdict, rows[i].evidence);
        }
    }
    int slow, judged, nodes = 0;
    for (size_t i = first; i < end; i++) {
        nodes += !strcmp(rows[i].what, "node");
    }
    if (nodes == 3 && !strcmp(h->reference, "screen")) { /* what 3 nodes cannot tell */
        fprintf(f, "note: 3 nodes meet in 3 pairs, 2 each, which cannot tell a node at 0.7x from "
                   "noise: without a baseline only a node at about 0.5x or slower is found "
                   "(docs/screen.md); judge against one (--baseline FILE)\n");
    }
    if (cp_screen_large_slow(rows, end, first, &slow, &judged)) {
        fprintf(f,
                "verdict: a large part of the allocation is slow (%d of %d judged nodes, more "
                "than %.0f %%): judge against a baseline (--baseline FILE); nothing flagged\n",
                slow, judged, 100 * CP_SCREEN_LARGE_SLOW);
    }
    print_paths(f, rows, first, end, links, nl);
    fprintf(f, "exclude: %s\n", ex[0] ? ex : "(none)");
}

void cp_screen_print(FILE *f, const collprof_screen_row_t *rows, size_t n,
                     const collprof_link_row_t *links, size_t nlinks)
{
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(rows[j].backend, rows[i].backend)) {
            j++;
        }
        print_backend(f, rows, i, j, links, nlinks);
        i = j;
    }
}
