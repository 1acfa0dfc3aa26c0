/*
 * `export --csv|--json|--jsonl|--prom|--openmetrics`: every row of every
 * file, as data.  The column names and their order are the schema's
 * (COLLPROF_RESULT_COLUMNS) plus `file`, so scripts written against one
 * collprof version keep working as columns are added at the end.  JSON
 * lines (export_jsonl.c) add the run's metadata to each record; the
 * Prometheus formats (export_prom.c) are metrics.
 *
 * With -o the output replaces its file at once (a temporary file in the
 * same directory, renamed over it): the node exporter's textfile collector
 * or a log shipper never reads half a file.  With --prom or --openmetrics,
 * -o DIR writes DIR/collprof.prom or .om (the textfile collector's directory).
 */
#include "config.h"

#include "report/report.h"

#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* the formats, by option index; the name a directory given to -o gets (metrics only) */
enum { FMT_CSV = 1, FMT_JSON, FMT_OUTPUT, FMT_JSONL, FMT_PROM, FMT_OM };
static const char *const ext[] = {"", "", "", "", "", "prom", "om"};

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report export --csv|--json|--jsonl|--prom|--openmetrics\n"
               "                              FILE|DIR... [-o OUT|DIR]\n"
               "Write one record per cell of every file: the /results columns in schema\n"
               "order, then 'file' (the path it came from); or the files as metrics.\n"
               "\n"
               "  --csv         comma-separated, a header line first (RFC 4180 quoting)\n"
               "  --json        a JSON array of objects\n"
               "  --jsonl       JSON lines: one flat object per cell with the run's metadata,\n"
               "                argv and environment (redacted), every rank's host and device\n"
               "  --prom        Prometheus text format for the node exporter's textfile\n"
               "                collector: the newest value of each series, no timestamps\n"
               "  --openmetrics OpenMetrics with each run's time on its samples and '# EOF':\n"
               "                a history for 'promtool tsdb create-blocks-from openmetrics'\n"
               "  -o, --output OUT  write to OUT instead of standard output, replacing it at\n"
               "                once (temporary file + rename); --prom and --openmetrics\n"
               "                take a directory too, and write collprof.prom or .om there\n"
               "  -h, --help    this help\n"
               "\n"
               "The metrics (collprof_*) are listed in docs/metrics.md.\n"
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
    int format; /* FMT_* (the option indices) */
    const char *output;
} settings_t;

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    if (k == FMT_OUTPUT) {
        s->output = val;
    } else if (s->format != 0 && s->format != k) {
        cp_report_error("export: choose one of --csv, --json, --jsonl, --prom and --openmetrics");
        return -1;
    } else {
        s->format = k;
    }
    return 0;
}

static const char *check(void *ctx)
{
    return ((settings_t *)ctx)->format == 0 ? "--csv, --json, --jsonl, --prom or --openmetrics is "
                                              "required"
                                            : NULL;
}

typedef struct loaded {
    int format;
    cp_report_file_t **files;
    int n;
} loaded_t;

static void write_out(FILE *out, const void *data)
{
    const loaded_t *l = data;
    if (l->format == FMT_JSONL) {
        cp_report_jsonl_write(out, l->files, l->n);
    } else {
        (l->format == FMT_CSV ? write_csv : write_json)(out, l->files, l->n);
    }
}

/*
 * Write path with write(out, data) through a temporary file beside it that
 * is renamed over it; a directory gets the file collprof.<ext>.  0, or the
 * exit status 2 after a one-line error (nothing is left behind then).
 */
static int write_atomic(const char *path, const char *e, void (*write)(FILE *out, const void *data),
                        const void *data)
{
    struct stat st;
    char target[4096], tmp[4200];
    int dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    if (snprintf(target, sizeof(target), dir ? "%s/collprof.%s" : "%s", path, e) >=
        (int)sizeof(target)) {
        cp_report_error("export: output '%.64s...': name too long", path);
        return CP_REPORT_EXIT_BAD;
    }
    /* beside the target, hidden and not *.prom: the textfile collector skips it */
    const char *slash = strrchr(target, '/');
    snprintf(tmp, sizeof(tmp), "%.*s.%s.XXXXXX", slash ? (int)(slash - target + 1) : 0, target,
             slash ? slash + 1 : target);
    int fd = mkstemp(tmp);
    cp_tmp_set(fd >= 0 ? tmp : NULL);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (out == NULL) {
        cp_report_error("export: output '%s': %s", target, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        cp_tmp_set(NULL);
        return CP_REPORT_EXIT_BAD;
    }
    write(out, data);
    /* readable by others like a file made with the umask (mkstemp makes 0600) */
    mode_t mask = umask(022);
    umask(mask);
    int bad = fflush(out) != 0 || ferror(out) || fchmod(fd, 0666 & ~mask) != 0 || fsync(fd) != 0;
    bad |= fclose(out) != 0;
    if (bad || rename(tmp, target) != 0) {
        cp_report_error("export: output '%s': %s", target, strerror(errno));
        unlink(tmp);
        cp_tmp_set(NULL);
        return CP_REPORT_EXIT_BAD;
    }
    cp_tmp_set(NULL);
    return CP_REPORT_EXIT_OK;
}

/* Whether -o path is replaced by a rename: absent, a regular file, or for the metrics a
 * directory (not a device such as /dev/null, which is written in place, nor a FIFO or another
 * directory, which cp_report_write refuses). */
static int renamed(const char *path, int format)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        return errno == ENOENT && path[0] != '\0';
    }
    return S_ISREG(st.st_mode) || (S_ISDIR(st.st_mode) && (format == FMT_PROM || format == FMT_OM));
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    const settings_t *s = ctx;
    loaded_t l = {s->format, files, n};
    cp_report_prom_t *p = NULL;
    if (s->format == FMT_PROM || s->format == FMT_OM) {
        if ((p = cp_report_prom_build(files, n, s->format == FMT_OM)) == NULL) {
            return CP_REPORT_EXIT_BAD;
        }
    }
    void (*write)(FILE *, const void *) = p ? cp_report_prom_write : write_out;
    const void *data = p ? (const void *)p : &l;
    int rc = s->output && renamed(s->output, s->format)
                 ? write_atomic(s->output, ext[s->format], write, data)
                 : cp_report_write(s->output, write, data);
    cp_report_prom_free(p);
    return rc;
}

int cp_report_cmd_export(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0},      {"csv", 0, 0},   {"json", 0, 0},
                                           {"output", 'o', 1},    {"jsonl", 0, 0}, {"prom", 0, 0},
                                           {"openmetrics", 0, 0}, {NULL, 0, 0}};
    /* every file is read before anything is written: no half-written export */
    static const cp_report_cmd_t cmd = {"export", usage, opts, option, check, CP_REPORT_FILES_ALL,
                                        run};
    settings_t s = {0, NULL};
    return cp_report_run(&cmd, &s, argc, argv);
}
