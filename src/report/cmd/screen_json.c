/*
 * collprof-report screen --format json (cmd_screen.c): the verdict as a versioned document,
 * format "collprof-screen" (docs/screen.md, docs/collprof-report.1): per backend the seed, the
 * rounds, the reference (and, judged again, the baseline's), the exclude list, the nodes and
 * links with their verdicts, the validation collective, and the pairs' path check from the
 * file's /links rows (files of 1.12 on: which NIC carried each pair's bytes).
 */
#include "config.h"

#include "screen/screen_out.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

static void json_row(FILE *out, const collprof_screen_row_t *r, int first)
{
    int link = !strcmp(r->what, "link");
    fprintf(out, "%s\n      {\"host\": ", first ? "" : ",");
    cp_report_json_string(out, r->host_a);
    if (link) {
        fprintf(out, ", \"peer\": ");
        cp_report_json_string(out, r->host_b);
    }
    fprintf(out, ", \"node\": %d, \"verdict\": ", r->node_a);
    cp_report_json_string(out, r->verdict);
    char score[32];
    cp_report_fmt_double(r->score, score, sizeof(score));
    fprintf(out, ", \"score\": %s, \"suspect\": %s, \"partners\": %d, \"slow_partners\": %d, ",
            score, r->suspect ? "true" : "false", r->partners, r->slow_partners);
    fprintf(out, "\"evidence\": ");
    cp_report_json_string(out, r->evidence);
    fputc('}', out);
}

/* What a backend's screen was judged against, when it was judged again (json_backend). */
static void json_rejudged(FILE *out, const cp_report_base_t *b, const cp_report_rejudged_t *j)
{
    char bw[32], bwm[32], lat[32], latm[32];
    cp_report_fmt_double(j->ref.ref.bw_gbs, bw, sizeof(bw));
    cp_report_fmt_double(j->ref.ref.bw_mad, bwm, sizeof(bwm));
    cp_report_fmt_double(j->ref.ref.lat_us, lat, sizeof(lat));
    cp_report_fmt_double(j->ref.ref.lat_mad, latm, sizeof(latm));
    fprintf(out, ",\n     \"rejudged\": {\"baseline\": ");
    cp_report_json_string(out, b->shown);
    fprintf(out,
            ", \"bw_gbs\": %s, \"bw_mad_log\": %s, \"bw_bytes\": %llu, \"lat_us\": %s, "
            "\"lat_mad_log\": %s, \"lat_bytes\": %llu}",
            bw, bwm, j->ref.bw_bytes, lat, latm, j->ref.lat_bytes);
}

/* The comma-separated list s as a JSON array of strings. */
static void json_list(FILE *out, const char *s)
{
    fputc('[', out);
    for (const char *p = s; *p != '\0';) {
        size_t k = strcspn(p, ",");
        char name[128];
        snprintf(name, sizeof(name), "%.*s", (int)(k < sizeof(name) ? k : sizeof(name) - 1), p);
        fprintf(out, "%s", p == s ? "" : ", ");
        cp_report_json_string(out, name);
        p += k + (p[k] == ',');
    }
    fputc(']', out);
}

/* The host of node nd among the node rows [first, end), or "node N" in buf. */
static const char *host_of(const collprof_screen_row_t *rows, size_t first, size_t end, int nd,
                           char *buf, size_t len)
{
    for (size_t i = first; i < end; i++) {
        if (!strcmp(rows[i].what, "node") && rows[i].node_a == nd && rows[i].host_a[0]) {
            return rows[i].host_a;
        }
    }
    snprintf(buf, len, "node %d", nd);
    return buf;
}

/* One checked pair's path check (cp_screen_nic_state > 0). */
static void json_nic_pair(FILE *out, const collprof_link_row_t *l, const char *a, const char *b,
                          int first)
{
    char ratio[32], nic[32];
    cp_report_fmt_double(l->nic_ratio, ratio, sizeof(ratio));
    snprintf(nic, sizeof(nic), "%.0f", l->nic_ratio * (double)l->bytes);
    fprintf(out, "%s\n        {\"host\": ", first ? "" : ",");
    cp_report_json_string(out, a);
    fprintf(out, ", \"peer\": ");
    cp_report_json_string(out, b);
    fprintf(out, ", \"node\": %d, \"peer_node\": %d, \"round\": %d, \"verdict\": ", l->node_a,
            l->node_b, l->round);
    cp_report_json_string(out, l->nic_path);
    fprintf(out,
            ", \"flagged\": %s, \"bytes\": %llu, \"ratio\": %s, \"nic_bytes_per_op\": %s, "
            "\"via\": ",
            cp_screen_nic_state(l) == 2 ? "true" : "false", (unsigned long long)l->bytes, ratio,
            nic);
    json_list(out, l->nic_via);
    fprintf(out, ", \"expected\": ");
    json_list(out, l->nic_expected);
    fputc('}', out);
}

/* The path check of the backend of rows [first, end) from links[0..nl): "nic_paths", the
 * counts the text's "nic paths:" line gives and every checked pair; nothing when none was
 * checked (--counters none, a file before 1.12). */
static void json_nic_paths(FILE *out, const collprof_screen_row_t *rows, size_t first, size_t end,
                           const collprof_link_row_t *links, size_t nl)
{
    int checked = 0, flagged = 0;
    for (size_t i = 0; links != NULL && i < nl; i++) {
        int state =
            strcmp(links[i].backend, rows[first].backend) ? 0 : cp_screen_nic_state(&links[i]);
        checked += state > 0;
        flagged += state == 2;
    }
    if (checked == 0) {
        return;
    }
    fprintf(out, ",\n     \"nic_paths\": {\"checked\": %d, \"flagged\": %d, \"pairs\": [", checked,
            flagged);
    int any = 0;
    for (size_t i = 0; i < nl; i++) {
        const collprof_link_row_t *l = &links[i];
        if (strcmp(l->backend, rows[first].backend) != 0 || cp_screen_nic_state(l) == 0) {
            continue;
        }
        char a[32], b[32];
        json_nic_pair(out, l, host_of(rows, first, end, l->node_a, a, sizeof(a)),
                      host_of(rows, first, end, l->node_b, b, sizeof(b)), !any);
        any = 1;
    }
    fprintf(out, "\n     ]}");
}

/* One backend's document: rows [first, end), the path check from f's /links; j: what it was judged
 * against again, or NULL. */
static void json_backend(FILE *out, const cp_report_file_t *f, const collprof_screen_row_t *rows,
                         size_t first, size_t end, const cp_report_base_t *b,
                         const cp_report_rejudged_t *j)
{
    const collprof_screen_row_t *h = &rows[first];
    char ex[4096], bw[32], lat[32], thr[32];
    cp_screen_exclude_list(rows + first, end - first, NULL, ex, sizeof(ex));
    cp_report_fmt_double(h->ref_bw_gbs, bw, sizeof(bw));
    cp_report_fmt_double(h->ref_lat_us, lat, sizeof(lat));
    cp_report_fmt_double(h->threshold, thr, sizeof(thr));
    fprintf(out, "    {\"backend\": ");
    cp_report_json_string(out, h->backend);
    fprintf(out,
            ", \"seed\": %llu, \"rounds\": %d, \"status\": %d,\n     \"reference\": {\"source\": ",
            (unsigned long long)h->seed, h->rounds, cp_screen_status(rows + first, end - first));
    cp_report_json_string(out, h->reference);
    fprintf(out, ", \"bw_gbs\": %s, \"lat_us\": %s, \"threshold\": %s", bw, lat, thr);
    if (h->path_refs[0] != '\0') { /* 1.10: judged by path class */
        fprintf(out, ", \"paths\": ");
        cp_report_json_string(out, h->path_refs);
    }
    fprintf(out, "}");
    if (j != NULL) {
        json_rejudged(out, b, j);
    }
    fprintf(out, ",\n     \"exclude\": ");
    cp_report_json_string(out, ex);
    for (int link = 0; link < 2; link++) {
        fprintf(out, ",\n     \"%s\": [", link ? "links" : "nodes");
        int any = 0;
        for (size_t i = first; i < end; i++) {
            if (!strcmp(rows[i].what, link ? "link" : "node")) {
                json_row(out, &rows[i], !any);
                any = 1;
            }
        }
        fprintf(out, "%s]", any ? "\n     " : "");
    }
    for (size_t i = first; i < end; i++) { /* the validation collective (absent before it) */
        const collprof_screen_row_t *r = &rows[i];
        if (!strcmp(r->what, "verify")) {
            char score[32];
            cp_report_fmt_double(r->score, score, sizeof(score));
            fprintf(out, ",\n     \"validation\": {\"verdict\": ");
            cp_report_json_string(out, r->verdict);
            fprintf(out, ", \"nodes\": %d, \"score\": %s, \"evidence\": ", r->partners, score);
            cp_report_json_string(out, r->evidence);
            fputc('}', out);
        }
    }
    json_nic_paths(out, rows, first, end, f->links, f->nlinks);
    fputc('}', out);
}

void cp_report_screen_json(FILE *out, const cp_report_file_t *f, const collprof_screen_row_t *rows,
                           size_t n, const cp_report_base_t *b, const cp_report_rejudged_t *j)
{
    fprintf(out, "{\"format\": \"collprof-screen\", \"version\": %d, \"file\": ",
            CP_REPORT_SCREEN_JSON_VERSION);
    cp_report_json_string(out, f->path);
    if (b != NULL) {
        fprintf(out, ", \"baseline\": ");
        cp_report_json_string(out, b->shown);
    }
    fprintf(out, ", \"status\": %d,\n  \"screens\": [\n", cp_screen_status(rows, n));
    for (size_t i = 0, k = 0; i < n; k++) {
        size_t j2 = i + 1;
        while (j2 < n && !strcmp(rows[j2].backend, rows[i].backend)) {
            j2++;
        }
        if (i > 0) {
            fprintf(out, ",\n");
        }
        json_backend(out, f, rows, i, j2, b, j != NULL ? &j[k] : NULL);
        i = j2;
    }
    fprintf(out, "\n  ]}\n");
}
