/*
 * `export --jsonl`: one JSON object per line and cell, each complete in
 * itself (JSON lines, what log shippers and notebooks read without HDF5).
 *
 * A record is flat: the format's name and version, the file's schema
 * version, the run's root attributes prefixed run_ (its command line
 * also split into run_argv), the Slurm facts (slurm_*), then the cell's
 * /results columns in schema order, the versions of its backend, the
 * host and device of every rank (rank_hosts, rank_devices, indexed by
 * rank) and the captured environment as one object (env).  The command
 * line, the other run attributes (a tag) and the environment are redacted
 * here (cp_redact): the writer keeps the command line as given, and older
 * writers did not redact the environment.  docs/metrics.md describes the record.
 */
#include "config.h"

#include "report/report.h"

#include "base/util.h"

#include <string.h>

#define CP_JSONL_FORMAT  "collprof-jsonl"
#define CP_JSONL_VERSION 1

/* the longest command line word or variable value redacted (the writer's limits) */
#define CP_JSONL_TEXT 8192

static void key(FILE *out, const char *prefix, const char *name)
{
    fprintf(out, ", \"%s%s\": ", prefix, name); /* the schema's names need no escaping */
}

static void put_value(FILE *out, const cp_report_value_t *v)
{
    char num[64];
    if (v->kind == COLLPROF_STR) {
        cp_report_json_string(out, v->s);
    } else {
        cp_report_fmt_value(v, num, sizeof(num)); /* the reader refused NaN and inf */
        fputs(num, out);
    }
}

/* The command line, redacted, as one string and split at its spaces (how the writer joined). */
static void put_argv(FILE *out, const char *cmd)
{
    static char word[CP_JSONL_TEXT], safe[CP_JSONL_TEXT], joined[CP_JSONL_TEXT];
    for (int pass = 0; pass < 2; pass++) { /* the string, then the array */
        joined[0] = '\0';
        key(out, "run_", pass ? "argv" : "command_line");
        fputs(pass ? "[" : "", out);
        for (const char *p = cmd; *p != '\0';) {
            size_t n = strcspn(p, " ");
            snprintf(word, sizeof(word), "%.*s", (int)n, p);
            cp_redact(NULL, word, safe, sizeof(safe));
            if (pass) {
                fputs(p == cmd ? "" : ", ", out);
                cp_report_json_string(out, safe);
            } else {
                size_t at = strlen(joined); /* appended, cut at the buffer's end */
                snprintf(joined + at, sizeof(joined) - at, "%s%s", p == cmd ? "" : " ", safe);
            }
            p += n + (p[n] == ' ');
        }
        if (pass) {
            fputc(']', out);
        } else {
            cp_report_json_string(out, joined);
        }
    }
}

/* The run: schema version first, then every root attribute (run_*) and the Slurm facts. */
static void put_run(FILE *out, const cp_report_file_t *f)
{
    static char safe[CP_JSONL_TEXT];
    fprintf(out,
            "{\"format\": \"%s\", \"format_version\": %d, \"schema_version\": ", CP_JSONL_FORMAT,
            CP_JSONL_VERSION);
    cp_report_json_string(out, f->root.schema_version);
    fputs(", \"file\": ", out);
    cp_report_json_string(out, f->path);
    for (size_t i = 0; i < CP_H5_NROOT_ATTRS; i++) {
        const cp_h5_attr_t *a = &cp_h5_root_attrs[i];
        const void *slot = (const char *)&f->root + a->offset;
        if (i == CP_H5_ATTR_schema_version) {
            continue; /* above */
        }
        if (i == CP_H5_ATTR_command_line) {
            put_argv(out, f->root.command_line);
            continue;
        }
        key(out, "run_", a->name);
        if (a->kind == COLLPROF_STR) { /* a tag may hold "token=..." too */
            cp_report_json_string(out,
                                  cp_redact(NULL, *(const char *const *)slot, safe, sizeof(safe)));
        } else if (a->kind == COLLPROF_I64) {
            fprintf(out, "%lld", *(const long long *)slot);
        } else {
            char num[64];
            cp_report_fmt_double(*(const double *)slot, num, sizeof(num));
            fputs(num, out);
        }
    }
    for (size_t i = 0; i < f->nslurm; i++) {
        fputs(", ", out);
        cp_report_json_string(out, f->slurm[i].name);
        fputs(": ", out);
        cp_report_json_string(out, f->slurm[i].value);
    }
}

/* Every rank's host and device, indexed by rank, and the environment as one object. */
static void put_ranks_env(FILE *out, const cp_report_file_t *f)
{
    static char safe[CP_JSONL_TEXT];
    const char *list[] = {"rank_hosts", "rank_devices"};
    for (int k = 0; k < 2; k++) {
        key(out, "", list[k]);
        fputc('[', out);
        for (int q = 0; q < f->nranks; q++) {
            fputs(q ? ", " : "", out);
            cp_report_json_string(out, k ? f->ranks[q].device : f->ranks[q].hostname);
        }
        fputc(']', out);
    }
    key(out, "", "env");
    fputc('{', out);
    for (size_t i = 0; i < f->nenv; i++) {
        fputs(i ? ", " : "", out);
        cp_report_json_string(out, f->env[i].name);
        fputs(": ", out);
        cp_report_json_string(out, cp_redact(f->env[i].name, f->env[i].value, safe, sizeof(safe)));
    }
    fputc('}', out);
}

/* The cell: its /results columns and its backend's versions. */
static void put_cell(FILE *out, const cp_report_file_t *f, const collprof_result_row_t *r)
{
    const char *plugin = "", *library = "";
    for (size_t c = 0; c < cp_h5_table_results.ncolumns; c++) {
        cp_report_value_t v;
        cp_report_column_value(&cp_h5_table_results.columns[c], r, &v);
        key(out, "", cp_h5_table_results.columns[c].name);
        put_value(out, &v);
    }
    for (size_t b = 0; b < f->nbackends; b++) {
        if (!strcmp(f->backends[b].name, r->backend)) {
            plugin = f->backends[b].plugin_version;
            library = f->backends[b].library_version;
        }
    }
    key(out, "", "backend_plugin_version");
    cp_report_json_string(out, plugin);
    key(out, "", "backend_library_version");
    cp_report_json_string(out, library);
}

void cp_report_jsonl_write(FILE *out, cp_report_file_t *const *files, int n)
{
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            put_run(out, files[i]);
            put_cell(out, files[i], &files[i]->rows[r]);
            put_ranks_env(out, files[i]);
            fputs("}\n", out);
        }
    }
}
