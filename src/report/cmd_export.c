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

/* Doubles as the shortest of %.15g and %.17g that reads back as the same value. */
static void fmt_double(double d, char *buf, size_t len)
{
    snprintf(buf, len, "%.15g", d);
    if (strtod(buf, NULL) != d) {
        snprintf(buf, len, "%.17g", d);
    }
}

static void fmt_number(const cp_report_value_t *v, char *buf, size_t len)
{
    if (v->kind == COLLPROF_I32 || v->kind == COLLPROF_I64) {
        snprintf(buf, len, "%lld", v->i);
    } else if (v->kind == COLLPROF_U64) {
        snprintf(buf, len, "%llu", (unsigned long long)v->u);
    } else {
        fmt_double(v->d, buf, len);
    }
}

/* RFC 4180: quote a field holding a comma, a quote or a line break; double the quotes. */
static void csv_field(FILE *out, const char *s)
{
    if (strpbrk(s, ",\"\r\n") == NULL) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') {
            fputc('"', out);
        }
        fputc(*s, out);
    }
    fputc('"', out);
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            /* the reader has checked the text is UTF-8: other bytes pass unchanged */
            if (*p < 0x20) {
                fprintf(out, "\\u%04x", *p);
            } else {
                fputc(*p, out);
            }
        }
    }
    fputc('"', out);
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
                    csv_field(out, v.s);
                } else {
                    fmt_number(&v, num, sizeof(num));
                    fputs(num, out);
                }
                fputc(',', out);
            }
            csv_field(out, files[i]->path);
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
                json_string(out, cp_h5_table_results.columns[c].name);
                fputs(": ", out);
                if (v.kind == COLLPROF_STR) {
                    json_string(out, v.s);
                } else {
                    fmt_number(&v, num, sizeof(num)); /* the reader refused NaN and inf */
                    fputs(num, out);
                }
                fputs(", ", out);
            }
            fputs("\"file\": ", out);
            json_string(out, files[i]->path);
            fputc('}', out);
        }
    }
    fputs(first ? "]\n" : "\n]\n", out);
}

int cp_report_cmd_export(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"csv", 0, 0}, {"json", 0, 0}, {"output", 'o', 1}, {NULL, 0, 0}};
    cp_report_args_t a = {argc, argv, 1, 0, "export"};
    char **operands = calloc((size_t)argc, sizeof(char *)), *val;
    const char *output = NULL;
    int nops = 0, k, format = 0; /* 1 csv, 2 json */
    if (operands == NULL) {
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    while ((k = cp_report_next_arg(&a, opts, &val)) != CP_REPORT_ARG_END) {
        if (k == CP_REPORT_ARG_ERROR) {
            free(operands);
            return CP_REPORT_EXIT_BAD;
        } else if (k == CP_REPORT_ARG_OPERAND) {
            operands[nops++] = val;
        } else if (k == 0) {
            usage(stdout);
            free(operands);
            return CP_REPORT_EXIT_OK;
        } else if (k == 1 || k == 2) {
            if (format != 0 && format != k) {
                cp_report_error("export: choose one of --csv and --json");
                free(operands);
                return CP_REPORT_EXIT_BAD;
            }
            format = k;
        } else {
            output = val;
        }
    }
    const char *why = format == 0 ? "export: --csv or --json is required"
                      : nops == 0 ? "export: no result file given"
                                  : NULL;
    if (why != NULL) {
        cp_report_error("%s (see 'collprof-report export --help')", why);
        free(operands);
        return CP_REPORT_EXIT_BAD;
    }
    char **paths;
    cp_report_file_t **files;
    int n = cp_report_expand_paths(operands, nops, &paths);
    free(operands);
    if (n < 0) {
        return CP_REPORT_EXIT_BAD;
    }
    /* every file is read before anything is written: no half-written export */
    if (cp_report_open_all(paths, n, &files) != 0) {
        cp_report_free_paths(paths, n);
        return CP_REPORT_EXIT_BAD;
    }
    int rc = CP_REPORT_EXIT_OK;
    FILE *out = output ? fopen(output, "w") : stdout;
    if (out == NULL) {
        cp_report_error("%s: %s", output, strerror(errno));
        rc = CP_REPORT_EXIT_BAD;
    } else {
        if (format == 1) {
            write_csv(out, files, n);
        } else {
            write_json(out, files, n);
        }
        if (out != stdout) {
            int bad = ferror(out);
            bad |= fclose(out) != 0;
            if (bad) {
                cp_report_error("%s: %s", output, strerror(errno));
                rc = CP_REPORT_EXIT_BAD;
            }
        }
    }
    cp_report_close_all(files, n);
    cp_report_free_paths(paths, n);
    return rc;
}
