/*
 * collprof-report screen FILE [--format text|slurm|drain|json] [--backend NAME]: the verdict
 * of a collprof --screen run (/screen), as the run printed it, as a Slurm host list to
 * exclude, as the scontrol lines that would drain the flagged nodes (printed, never run), or
 * as a versioned JSON document.  Exit status 0 healthy, 1 something flagged, 2 inconclusive
 * (or a file that cannot be read).
 */
#include "config.h"

#include "output/screen_out.h"
#include "report/reader.h"
#include "report/report.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

enum { FMT_TEXT, FMT_SLURM, FMT_DRAIN, FMT_JSON };
static const char *const format_names[] = {"text", "slurm", "drain", "json"};

#define SCREEN_JSON_VERSION 1

typedef struct settings {
    int format;
    const char *backend; /* NULL: every backend */
} settings_t;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: collprof-report screen FILE [--format text|slurm|drain|json] "
            "[--backend NAME]\n"
            "The verdict of a collprof --screen run: healthy, slow and unreachable nodes,\n"
            "slow links, with the pairs behind each verdict.\n"
            "  --format text   the verdict as the run printed it (default)\n"
            "  --format slurm  the nodes to exclude, as a Slurm host list (n[3,17-18]),\n"
            "                  for sbatch --exclude; empty when none\n"
            "  --format drain  one 'scontrol update nodename=... state=drain reason=...' line\n"
            "                  per flagged node (printed, never run)\n"
            "  --format json   a versioned document (format collprof-screen, version %d)\n"
            "  --backend NAME  that backend's screen only (default: every backend's)\n"
            "Exit status: 0 healthy, 1 a node or link flagged, 2 inconclusive, bad usage or\n"
            "a file that cannot be read.\n",
            SCREEN_JSON_VERSION);
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == 1) {
        s->format = cp_report_parse_choice("screen", "--format", val, format_names, 4,
                                           "text, slurm, drain or json");
        return s->format < 0 ? -1 : 0;
    }
    s->backend = val;
    return 0;
}

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

/* The drain line of a flagged node: its partners by name, the figures by number alone. */
static void drain_line(FILE *out, const collprof_screen_row_t *rows, size_t n, size_t i)
{
    const collprof_screen_row_t *r = &rows[i];
    char host[80], with[80];
    safe_name(r->host_a, host, sizeof(host));
    if (!strcmp(r->verdict, "unreachable")) {
        safe_name(r->backend, with, sizeof(with));
        fprintf(out,
                "scontrol update nodename=%s state=drain reason=\"collprof screen: unreachable "
                "(backend %s, seed %llu)\"\n",
                host, with, (unsigned long long)r->seed);
        return;
    }
    if (r->slow_partners == 0 && strstr(r->evidence, "validation:") != NULL) {
        safe_name(r->backend, with, sizeof(with));
        fprintf(out,
                "scontrol update nodename=%s state=drain reason=\"collprof screen: slow in the "
                "validation allreduce (backend %s, seed %llu)\"\n",
                host, with, (unsigned long long)r->seed);
        return;
    }
    with[0] = '\0';
    for (size_t k = 0; k < n; k++) { /* the confirmation partner, by name */
        if (!strcmp(rows[k].what, "node") && rows[k].node_a == r->confirm_with &&
            !strcmp(rows[k].backend, r->backend)) {
            safe_name(rows[k].host_a, with, sizeof(with));
        }
    }
    fprintf(out,
            "scontrol update nodename=%s state=drain reason=\"collprof screen: slow, %.2fx of "
            "the %s with %d of %d partners%s%s\"\n",
            host, r->score, !strcmp(r->reference, "baseline") ? "baseline" : "median",
            r->slow_partners, r->partners, with[0] ? ", confirmed with " : "", with);
}

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

/* One backend's document: rows [first, end). */
static void json_backend(FILE *out, const collprof_screen_row_t *rows, size_t first, size_t end)
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
    fprintf(out, ", \"bw_gbs\": %s, \"lat_us\": %s, \"threshold\": %s},\n     \"exclude\": ", bw,
            lat, thr);
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
    fputc('}', out);
}

static void print_json(FILE *out, const char *path, const collprof_screen_row_t *rows, size_t n)
{
    fprintf(out,
            "{\"format\": \"collprof-screen\", \"version\": %d, \"file\": ", SCREEN_JSON_VERSION);
    cp_report_json_string(out, path);
    fprintf(out, ", \"status\": %d,\n  \"screens\": [\n", cp_screen_status(rows, n));
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(rows[j].backend, rows[i].backend)) {
            j++;
        }
        if (i > 0) {
            fprintf(out, ",\n");
        }
        json_backend(out, rows, i, j);
        i = j;
    }
    fprintf(out, "\n  ]}\n");
}

/* The rows of backend (every row when NULL) into a new array; *n of them. */
static collprof_screen_row_t *pick(const cp_report_file_t *f, const char *backend, size_t *n)
{
    collprof_screen_row_t *rows = malloc(sizeof(*rows) * (f->nscreen + 1));
    *n = 0;
    for (size_t i = 0; rows != NULL && i < f->nscreen; i++) {
        if (backend == NULL || !strcmp(f->screen[i].backend, backend)) {
            rows[(*n)++] = f->screen[i];
        }
    }
    return rows;
}

static int run(void *ctx, cp_report_file_t **files, int nfiles)
{
    const settings_t *s = ctx;
    const cp_report_file_t *f = files[0];
    (void)nfiles;
    size_t n;
    if (f->nscreen == 0) {
        cp_report_error("screen: %s has no screen verdict (/screen): run collprof --screen "
                        "on 2 or more nodes",
                        f->path);
        return CP_REPORT_EXIT_BAD;
    }
    collprof_screen_row_t *rows = pick(f, s->backend, &n);
    if (rows == NULL || n == 0) {
        if (rows == NULL) {
            cp_report_error("screen: out of memory");
        } else {
            cp_report_error("screen: %s has no screen of backend %s", f->path, s->backend);
        }
        free(rows);
        return CP_REPORT_EXIT_BAD;
    }
    if (s->format == FMT_TEXT) {
        cp_screen_print(stdout, rows, n);
    } else if (s->format == FMT_SLURM) {
        char ex[65536];
        cp_screen_exclude_list(rows, n, NULL, ex, sizeof(ex));
        printf("%s\n", ex);
    } else if (s->format == FMT_DRAIN) {
        for (size_t i = 0; i < n; i++) {
            if (cp_screen_excluded(&rows[i])) {
                drain_line(stdout, rows, n, i);
            }
        }
    } else {
        print_json(stdout, f->path, rows, n);
    }
    int status = cp_screen_status(rows, n);
    free(rows);
    return status;
}

int cp_report_cmd_screen(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"format", 0, 1}, {"backend", 0, 1}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"screen", usage, opts, option, NULL, CP_REPORT_FILES_ONE,
                                        run};
    settings_t s = {FMT_TEXT, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
