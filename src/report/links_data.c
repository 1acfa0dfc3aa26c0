/*
 * What a file's link sweep and screen are read as (links_data.h), for the commands links and
 * screen, their baselines, plot's heatmaps and export: the nodes, a backend's bandwidth
 * matrix and first row, the message size of its /links rows, and the screen's rounds.
 */
#include "config.h"

#include "report/links_data.h"

#include <stdlib.h>
#include <string.h>

int cp_links_load_nodes(const cp_report_file_t *f, nodes_t *nd)
{
    nd->n = (int)f->root.node_count;
    for (size_t i = 0; i < f->nlinks; i++) {
        nd->n = f->links[i].node_b + 1 > nd->n ? f->links[i].node_b + 1 : nd->n;
    }
    for (int q = 0; q < f->nranks; q++) {
        nd->n = f->ranks[q].node_id + 1 > nd->n ? f->ranks[q].node_id + 1 : nd->n;
    }
    nd->names = calloc((size_t)nd->n + 1, sizeof(char *));
    if (nd->names == NULL) {
        return -1;
    }
    for (int q = f->nranks - 1; q >= 0; q--) {
        nd->names[f->ranks[q].node_id] = f->ranks[q].hostname;
    }
    for (int i = 0; i < nd->n; i++) {
        nd->names[i] = nd->names[i] != NULL ? nd->names[i] : "?";
    }
    return 0;
}

/* 1 when rows[i] is the first row of its backend. */
int cp_links_first_of_backend(const collprof_link_row_t *rows, size_t i)
{
    for (size_t j = 0; j < i; j++) {
        if (!strcmp(rows[j].backend, rows[i].backend)) {
            return 0;
        }
    }
    return 1;
}

/* The bandwidth matrix of backend by --stat. */
void cp_links_bw_matrix(const cp_report_file_t *f, const char *backend, int stat, int n, double *m)
{
    memset(m, 0, sizeof(double) * (size_t)n * (size_t)n);
    for (size_t i = 0; i < f->nlinks; i++) {
        const collprof_link_row_t *r = &f->links[i];
        if (!strcmp(r->backend, backend) && !strcmp(r->kind, "bandwidth") &&
            (!strcmp(r->status, "ok") || !strcmp(r->status, "wrong"))) {
            double v = stat == STAT_BEST ? r->bw_best_gbs : r->bw_gbs;
            m[r->node_a * n + r->node_b] = m[r->node_b * n + r->node_a] = v;
        }
    }
}

unsigned long long cp_report_links_bytes(const cp_report_file_t *f, const char *backend,
                                         const char *kind)
{
    for (size_t i = 0; i < f->nlinks; i++) {
        if (!strcmp(f->links[i].backend, backend) && !strcmp(f->links[i].kind, kind)) {
            return (unsigned long long)f->links[i].bytes;
        }
    }
    return 0;
}

/* The --screen-rounds of the run's command line: the last one given, else 3 (the default). */
int cp_report_screen_rounds(const char *cmdline)
{
    int rounds = 3;
    const char *opt = "--screen-rounds";
    for (const char *p = cmdline; p != NULL && (p = strstr(p, opt)) != NULL;) {
        p += strlen(opt);
        if (*p == '=' || *p == ' ') {
            char *end;
            long v = strtol(p + 1, &end, 10);
            rounds = end != p + 1 && v >= 1 && v <= 64 ? (int)v : rounds;
        }
    }
    return rounds;
}
