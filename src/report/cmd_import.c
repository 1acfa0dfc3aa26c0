/*
 * `collprof-report import [--from FORMAT] INPUT -o OUT.h5`: other tools'
 * results as a collprof result file, so that compare, best, plot, export and
 * summary read them beside collprof's own runs.  The formats: nccl-tests'
 * JSON file (-J, format version 3) and its text table, and the text of the
 * OSU micro-benchmarks' collective latency tests (7.x, with or without -f
 * and -z).  What each source says goes into the row columns of the same
 * meaning; what it does not record stays empty (0 or "").  The mapping is
 * documented in docs/hdf5-schema.md, "Imported files".
 */
#include "config.h"

#include "report/import.h"
#include "report/report.h"

#include <collprof/vocab.h>

#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers of the format readers ---------------------------------------------------- */

int cp_import_fail(cp_import_t *im, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line > 0) {
        snprintf(im->err, sizeof(im->err), "import: %s:%d: %s", im->shown, line, msg);
    } else {
        snprintf(im->err, sizeof(im->err), "import: %s: %s", im->shown, msg);
    }
    return -1;
}

collprof_result_row_t *cp_import_row(cp_import_t *im, int line)
{
    if (im->nrows >= CP_IMPORT_MAX_ROWS) {
        cp_import_fail(im, line, "more than %d results", CP_IMPORT_MAX_ROWS);
        return NULL;
    }
    if (im->nrows == im->cap) {
        size_t cap = im->cap ? im->cap * 2 : 64;
        collprof_result_row_t *g = realloc(im->rows, cap * sizeof(*g));
        if (g == NULL) {
            cp_import_fail(im, line, "out of memory");
            return NULL;
        }
        im->rows = g;
        im->cap = cap;
    }
    collprof_result_row_t *r = &im->rows[im->nrows];
    memset(r, 0, sizeof(*r));
    r->cell = (int32_t)im->nrows++;
    snprintf(r->backend, sizeof(r->backend), "%s", im->backend_name);
    snprintf(r->variant, sizeof(r->variant), "%s", im->variant ? im->variant : "default");
    snprintf(r->redop, sizeof(r->redop), "none");
    snprintf(r->sync, sizeof(r->sync), "%s", "");
    r->warmup = im->warmup;
    return r;
}

int cp_import_op(const char *name)
{
    /* lower case, without '_', '-' and spaces: "All-to-All" is "alltoall" */
    char k[32];
    size_t n = 0;
    for (const char *p = name; *p != '\0' && n + 1 < sizeof(k); p++) {
        if (*p != '_' && *p != '-' && *p != ' ') {
            k[n++] = (char)tolower((unsigned char)*p);
        }
    }
    k[n] = '\0';
    static const char *const alias[][2] = {
        {"bcast", "broadcast"},
        {"alltoallpersonalizedexchange", "alltoall"},
        {"alltoallvpersonalizedexchange", "alltoallv"},
        {"reducescatterblock", "reducescatter"},
    };
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++) {
        if (!strcmp(k, alias[i][0])) {
            snprintf(k, sizeof(k), "%s", alias[i][1]);
        }
    }
    int op = collprof_op_from_name(k);
    /* the non-blocking ops measure something else (post + compute + wait) */
    const collprof_op_info_t *info = collprof_op_info(op);
    return info != NULL && !(info->flags & COLLPROF_OPF_NONBLOCKING) ? op : -1;
}

/* a and b agree within what printing either with two decimals (or 3 digits) loses */
static int agrees(double file, double ours)
{
    return fabs(file - ours) <= 0.011 + 0.02 * fabs(ours);
}

int cp_import_finish(cp_import_t *im, collprof_result_row_t *r, int line, double algbw,
                     double busbw)
{
    double t = r->time_mean_us;
    if (!(t > 0)) {
        return cp_import_fail(im, line, "time %g us is not a positive duration", t);
    }
    if (t > 1e12 || r->bytes > (UINT64_C(1) << 50)) {
        return cp_import_fail(im, line, "time or size out of range");
    }
    r->algbw_gbs = (double)r->bytes / t * 1e-3;
    int op = collprof_op_from_name(r->op);
    r->busbw_gbs = im->nranks > 0 ? r->algbw_gbs * collprof_busbw_factor(op, im->nranks) : 0;
    if (algbw >= 0 && !agrees(algbw, r->algbw_gbs)) {
        return cp_import_fail(im, line, "algbw %g GB/s is not size / time (%.3g GB/s)", algbw,
                              r->algbw_gbs);
    }
    if (busbw >= 0 && im->nranks > 0 && !agrees(busbw, r->busbw_gbs)) {
        return cp_import_fail(im, line,
                              "busbw %g GB/s is not collprof's (%.3g GB/s for %s on %d ranks)",
                              busbw, r->busbw_gbs, r->op, im->nranks);
    }
    snprintf(r->status, sizeof(r->status), "%s", r->wrong > 0 ? "wrong" : "ok");
    r->repeats = r->iterations > 0 ? 1 : 0; /* 0: iterations not recorded (OSU without -f) */
    return 0;
}

int cp_import_rank(cp_import_t *im, int line, const char *host, long pid, const char *device)
{
    if (im->nrank_rows >= CP_IMPORT_MAX_RANKS) {
        return cp_import_fail(im, line, "more than %d ranks", CP_IMPORT_MAX_RANKS);
    }
    int n = im->nrank_rows;
    if ((n & (n - 1)) == 0) {
        collprof_rank_row_t *g = realloc(im->rank_rows, sizeof(*g) * (size_t)(n ? 2 * n : 1));
        if (g == NULL) {
            return cp_import_fail(im, line, "out of memory");
        }
        im->rank_rows = g;
    }
    collprof_rank_row_t *r = &im->rank_rows[n];
    memset(r, 0, sizeof(*r));
    r->rank = n;
    snprintf(r->hostname, sizeof(r->hostname), "%s", host);
    snprintf(r->device, sizeof(r->device), "%s", device);
    r->pid = pid;
    r->node_id = -1;
    for (int q = 0; q < n && r->node_id < 0; q++) {
        if (!strcmp(im->rank_rows[q].hostname, r->hostname)) {
            r->node_id = im->rank_rows[q].node_id;
        }
    }
    if (r->node_id < 0) {
        r->node_id = im->nnodes++;
    }
    for (int q = 0; q < n; q++) {
        r->local_rank += im->rank_rows[q].node_id == r->node_id;
    }
    im->nrank_rows++;
    return 0;
}

int cp_import_number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* digits only: strtod also takes "nan", "inf" and hexadecimal */
    int plain = strspn(s, "0123456789.eE+-") == strlen(s) && s[0] != '\0';
    if (!plain || *end != '\0' || errno == ERANGE || !isfinite(v) || v < 0) {
        return -1;
    }
    *out = v;
    return 0;
}

int cp_import_valid_line(const char *line)
{
    const unsigned char *p = (const unsigned char *)line;
    size_t n = strlen(line);
    while (n > 0) {
        unsigned cp;
        int k = cp_utf8_seq(p, n, &cp);
        if (k <= 0) {
            return 0;
        }
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

void cp_import_free(cp_import_t *im)
{
    free(im->rows);
    free(im->rank_rows);
    free(im->env);
}

/* ---- the command ----------------------------------------------------------------------- */

enum { FROM_AUTO, FROM_NCCL_JSON, FROM_NCCL_TEXT, FROM_OSU };
static const char *const from_names[] = {"auto", "nccl-tests-json", "nccl-tests", "osu"};

typedef struct settings {
    cp_import_t im;
    int from;
    const char *input, *out;
    char command[4096];
} settings_t;

static void usage(FILE *f)
{
    fprintf(f, "Usage: collprof-report import [--from FORMAT] INPUT -o OUT.h5\n"
               "Read another tool's results into a collprof result file (marked as imported),\n"
               "for compare, best, plot, export and summary beside collprof's own runs.\n"
               "\n"
               "  --from FORMAT   auto (default: by the content), nccl-tests-json (-J output,\n"
               "                  format version 3), nccl-tests (its text table) or osu (the\n"
               "                  text of an OSU collective latency test, 7.x, with or without\n"
               "                  -f and -z; several tests one after the other are fine)\n"
               "  -o, --output OUT.h5   the file to write (it must not exist)\n"
               "  --backend NAME  the backend the cells name (default: nccl for nccl-tests,\n"
               "                  mpi for OSU): compare matches cells by backend\n"
               "  --variant NAME  the variant they name (default: default)\n"
               "  --op OP         the operation, where the source does not say it\n"
               "  --ranks N       the number of ranks, where the source does not say it (OSU):\n"
               "                  needed for busBW and for the ops whose size is per rank\n"
               "  -h, --help      this help\n"
               "\n"
               "What the source did not record (per-rank samples, percentiles) stays empty.\n"
               "Exit status: 0 written, 2 bad usage or an input that cannot be read (one\n"
               "error line naming the file and line; nothing is written).\n");
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    double v;
    switch (k) {
    case CP_REPORT_OPERAND: s->input = val; return 0;
    case 1:
        s->from = cp_report_parse_choice("import", "--from", val, from_names, 4,
                                         "auto, nccl-tests-json, nccl-tests or osu");
        return s->from < 0 ? -1 : 0;
    case 2: s->out = val; return 0;
    case 3:
    case 4:
        if (val[0] == '\0' || strlen(val) >= (k == 3 ? 32 : 64) ||
            strspn(val, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:+-") !=
                strlen(val)) {
            cp_report_error("import: --%s '%s' is not a name (letters, digits, _.:+-)",
                            k == 3 ? "backend" : "variant", val);
            return -1;
        }
        *(k == 3 ? &s->im.backend : &s->im.variant) = val;
        return 0;
    case 5:
        if (cp_import_op(val) < 0) {
            cp_report_error("import: --op '%s' is not an operation collprof knows", val);
            return -1;
        }
        s->im.op = val;
        return 0;
    default:
        if (cp_report_parse_double("import", "--ranks", val, 1, CP_IMPORT_MAX_RANKS, &v) != 0) {
            return -1;
        }
        if (v != floor(v)) {
            cp_report_error("import: --ranks '%s' is not a whole number", val);
            return -1;
        }
        s->im.ranks = (int)v;
        return 0;
    }
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    return s->input == NULL ? "no input file given"
           : s->out == NULL ? "-o OUT.h5 is required"
                            : NULL;
}

/* The input, whole, NUL-terminated: NULL after the error. */
static char *slurp(settings_t *s, size_t *len)
{
    struct stat st;
    int fd = open(s->input, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    const char *why = NULL;
    if (fd < 0) {
        why = strerror(errno);
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file (a FIFO, device, socket or directory)";
    } else if (st.st_size == 0) {
        why = "empty file";
    } else if ((uint64_t)st.st_size > CP_IMPORT_MAX_BYTES) {
        why = "larger than 64 MiB";
    }
    char *buf = why == NULL ? malloc((size_t)st.st_size + 1) : NULL;
    if (why == NULL && buf == NULL) {
        why = "out of memory";
    }
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n <= 0) {
            why = n < 0 ? strerror(errno) : "it shrank while read";
            break;
        }
        got += (size_t)n;
    }
    if (fd >= 0) {
        close(fd);
    }
    if (why != NULL) {
        free(buf);
        cp_import_fail(&s->im, 0, "%s", why);
        return NULL;
    }
    buf[got] = '\0';
    *len = got;
    return buf;
}

/* The format by the content: JSON, a nccl-tests table, or OSU. */
static int guess(const char *text)
{
    const char *p = text + strspn(text, " \t\r\n");
    if (*p == '{') {
        return FROM_NCCL_JSON;
    }
    if (strstr(text, "# OSU ") != NULL) {
        return FROM_OSU;
    }
    if (strstr(text, "nccl-tests") != NULL || strstr(text, "out-of-place") != NULL) {
        return FROM_NCCL_TEXT;
    }
    return FROM_AUTO;
}

static int run(void *ctx, cp_report_file_t **files, int n)
{
    settings_t *s = ctx;
    (void)files;
    (void)n;
    char shown[4096];
    cp_text_sanitize(s->input, shown, sizeof(shown));
    s->im.shown = shown;
    size_t len = 0;
    char *text = slurp(s, &len);
    int rc = text == NULL ? -1 : 0, from = s->from;
    if (rc == 0 && from == FROM_AUTO && (from = guess(text)) == FROM_AUTO) {
        rc = cp_import_fail(&s->im, 0,
                            "not a format import reads (nccl-tests JSON or text, OSU text): "
                            "name one with --from");
    }
    if (rc == 0 && memchr(text, '\0', len) != NULL) {
        rc = cp_import_fail(&s->im, 0, "a NUL byte: not a text file");
    }
    if (rc == 0) {
        rc = from == FROM_NCCL_JSON   ? cp_import_nccl_json(&s->im, text, len)
             : from == FROM_NCCL_TEXT ? cp_import_nccl_text(&s->im, text, len)
                                      : cp_import_osu(&s->im, text, len);
    }
    if (rc == 0 && s->im.nrows == 0) {
        rc = cp_import_fail(&s->im, 0, "no results in it");
    }
    if (rc == 0) {
        rc = cp_import_write(&s->im, s->out, s->command);
    }
    free(text);
    if (rc != 0) {
        cp_report_error("%s", s->im.err);
    } else {
        printf("%s: %zu cells from %s (%s) written to %s\n", shown, s->im.nrows, s->im.tool,
               s->im.format, s->out);
    }
    cp_import_free(&s->im);
    return rc == 0 ? CP_REPORT_EXIT_OK : CP_REPORT_EXIT_BAD;
}

int cp_report_cmd_import(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {{"help", 'h', 0},  {"from", 0, 1},    {"output", 'o', 1},
                                           {"backend", 0, 1}, {"variant", 0, 1}, {"op", 0, 1},
                                           {"ranks", 0, 1},   {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {
        "import", usage, opts, option, check, CP_REPORT_FILES_SOURCE, run};
    settings_t *s = calloc(1, sizeof(*s));
    if (s == NULL) {
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    snprintf(s->command, sizeof(s->command), "collprof-report");
    for (int i = 0; i < argc; i++) {
        strncat(s->command, " ", sizeof(s->command) - strlen(s->command) - 1);
        strncat(s->command, argv[i], sizeof(s->command) - strlen(s->command) - 1);
    }
    int rc = cp_report_run(&cmd, s, argc, argv);
    free(s);
    return rc;
}
