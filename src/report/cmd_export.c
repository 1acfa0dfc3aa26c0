/*
 * `export --csv|--json`: every row of every file, as data.  The column
 * names and their order are the schema's (COLLPROF_RESULT_COLUMNS) plus
 * `file`, so scripts written against one collprof version keep working as
 * columns are added at the end.
 */
#include "config.h"

#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report export --csv|--json FILE|DIR... [-o OUT]\n"
               "Write one record per cell of every file: the /results columns in schema\n"
               "order, then 'file' (the path it came from).\n"
               "\n"
               "  --csv         comma-separated, a header line first (RFC 4180 quoting)\n"
               "  --json        a JSON array of objects\n"
               "  -o, --output OUT  write to OUT instead of standard output\n"
               "  -h, --help    this help\n"
               "\n"
               "Exit status: 0 success, 2 bad usage or a file that cannot be read (then\n"
               "nothing is written).\n");
}

static void write_csv(FILE *out, cp_report_file_t **files, int n)
{
    for (size_t c = 0; c < cp_h5_table_results.ncolumns; c++) {
        fprintf(out, "%s,", cp_h5_table_results.columns[c].name);
    }
    fprintf(out, "file\n");
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            for (size_t c = 0; c < cp_h5_table_results.ncolumns; c++) {
                cp_report_value_t v;
                char num[64];
                cp_report_column_value(&cp_h5_table_results.columns[c], &files[i]->rows[r], &v);
                if (v.kind == COLLPROF_STR) {
                    cp_report_csv_field(out, v.s);
                } else {
                    cp_report_fmt_value(&v, num, sizeof(num));
                    fputs(num, out);
                }
                fputc(',', out);
            }
            cp_report_csv_field(out, files[i]->path);
            fputc('\n', out);
        }
    }
}

static void write_json(FILE *out, cp_report_file_t **files, int n)
{
    int first = 1;
    fputc('[', out);
    for (int i = 0; i < n; i++) {
        for (size_t r = 0; r < files[i]->nrows; r++) {
            fputs(first ? "\n  {" : ",\n  {", out);
            first = 0;
            for (size_t c = 0; c < cp_h5_table_results.ncolumns; c++) {
                cp_report_value_t v;
                char num[64];
                cp_report_column_value(&cp_h5_table_results.columns[c], &files[i]->rows[r], &v);
                cp_report_json_string(out, cp_h5_table_results.columns[c].name);
                fputs(": ", out);
                if (v.kind == COLLPROF_STR) {
                    cp_report_json_string(out, v.s);
                } else {
                    cp_report_fmt_value(&v, num, sizeof(num)); /* the reader refused NaN and inf */
                    fputs(num, out);
                }
                fputs(", ", out);
            }
            fputs("\"file\": ", out);
            cp_report_json_string(out, files[i]->path);
            fputc('}', out);
        }
    }
    fputs(first ? "]\n" : "\n]\n", out);
}

typedef struct settings {
    int format; /* 1 csv, 2 json (the option indices) */
    const char *output;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k != 1 && k != 2) {
        s->output = val;
    } else if (s->format != 0 && s->format != k) {
        cp_report_error("export: choose one of --csv and --json");
        return -1;
    } else {
        s->format = k;
    }
    return 0;
}

static const char *check(void *ctx)
{
    return ((settings_t *)ctx)->format == 0 ? "--csv or --json is required" : NULL;
}

typedef struct loaded {
    int format;
    cp_report_file_t **files;
    int n;
} loaded_t;

static void write_out(FILE *out, const void *data)
{
    const loaded_t *l = data;
    (l->format == 1 ? write_csv : write_json)(out, l->files, l->n);
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    loaded_t l = {s->format, files, n};
    return cp_report_write(s->output, write_out, &l);
}

int cp_report_cmd_export(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"csv", 0, 0}, {"json", 0, 0}, {"output", 'o', 1}, {NULL, 0, 0}};
    /* every file is read before anything is written: no half-written export */
    static const cp_report_cmd_t cmd = {"export", usage, opts, option, check, CP_REPORT_FILES_ALL,
                                        run};
    settings_t s = {0, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
