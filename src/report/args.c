/*
 * Command-line helpers shared by the subcommands.  The parser is our own
 * rather than getopt_long so that every mistake gives the same one-line
 * "collprof-report: error: ..." message (getopt prints its own wording)
 * and options may follow operands, as users type them.
 */
#include "config.h"

#include "report/report.h"

#include "format/format.h"
#include "base/util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void cp_report_error(const char *fmt, ...)
{
    va_list ap;
    char msg[2048], safe[4096];
    fflush(stdout); /* keep the error after what was already printed */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* names, paths and HDF5's messages: one line, no control or bidi characters */
    cp_text_sanitize(msg, safe, sizeof(safe));
    fprintf(stderr, "collprof-report: error: %s\n", safe);
}

/*
 * The output file path, opened for writing without blocking on a FIFO: a
 * FIFO, socket, directory or block device is refused (a character device
 * such as /dev/null is fine).  NULL after the error line.
 */
static FILE *open_output(const char *path)
{
    struct stat st;
    int fd = path[0] == '\0'
                 ? (errno = ENOENT, -1)
                 : open(path, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0 && errno == ENXIO) { /* a FIFO that nobody reads */
        errno = EINVAL;
    }
    if (fd >= 0 && (fstat(fd, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))) {
        close(fd);
        fd = -1;
        errno = EINVAL;
    }
    if (fd >= 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) != 0) {
        close(fd);
        fd = -1;
    }
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && out == NULL) {
        close(fd);
    }
    if (out == NULL) {
        cp_report_error("output '%s': %s", path,
                        errno == EINVAL ? "not a regular file (a FIFO, socket or directory)"
                                        : strerror(errno));
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return out;
}

enum { ARG_END = -1, ARG_OPERAND = -2, ARG_ERROR = -3 };

typedef struct args {
    int argc;
    char **argv;
    int next;
    int only_operands; /* after "--" */
    const char *cmd;   /* subcommand, for messages */
} args_t;

static int unknown(const args_t *a, const char *arg)
{
    cp_report_error("%s: unknown option '%s' (see 'collprof-report %s --help')", a->cmd, arg,
                    a->cmd);
    return ARG_ERROR;
}

/*
 * Next option (its index in opts, value in *val when it takes one), an
 * operand (ARG_OPERAND, in *val), ARG_END, or ARG_ERROR after printing why.
 */
static int next_arg(args_t *a, const cp_report_opt_t *opts, char **val)
{
    *val = NULL;
    if (a->next >= a->argc) {
        return ARG_END;
    }
    char *arg = a->argv[a->next++];
    if (a->only_operands || arg[0] != '-' || arg[1] == '\0') { /* "-" is an operand */
        *val = arg;
        return ARG_OPERAND;
    }
    if (!strcmp(arg, "--")) {
        a->only_operands = 1;
        return next_arg(a, opts, val);
    }
    int k = -1;
    char *inline_val = NULL;
    if (arg[1] == '-') {
        char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (int i = 0; opts[i].name != NULL; i++) {
            if (strlen(opts[i].name) == len && !strncmp(opts[i].name, name, len)) {
                k = i;
            }
        }
        if (k < 0) {
            return unknown(a, arg);
        }
        if (eq != NULL) {
            if (!opts[k].has_arg) {
                cp_report_error("%s: option '--%s' takes no value", a->cmd, opts[k].name);
                return ARG_ERROR;
            }
            inline_val = eq + 1;
        }
    } else {
        for (int i = 0; opts[i].name != NULL; i++) {
            if (opts[i].short_name != 0 && opts[i].short_name == arg[1]) {
                k = i;
            }
        }
        if (k < 0) {
            return unknown(a, arg);
        }
        if (arg[2] != '\0') {
            if (!opts[k].has_arg) { /* no bundling of flags: none of ours needs it */
                return unknown(a, arg);
            }
            inline_val = arg + 2; /* -oFILE */
        }
    }
    if (opts[k].has_arg) {
        if (inline_val == NULL) {
            if (a->next >= a->argc) {
                cp_report_error("%s: option '--%s' needs a value", a->cmd, opts[k].name);
                return ARG_ERROR;
            }
            inline_val = a->argv[a->next++];
        }
        *val = inline_val;
    }
    return k;
}

int cp_report_parse_double(const char *cmd, const char *opt, const char *s, double lo, double hi,
                           double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !isfinite(v) || v < lo || v > hi) {
        cp_report_error("%s: %s '%s' is not a number from %g to %g", cmd, opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

int cp_report_parse_choice(const char *cmd, const char *opt, const char *s,
                           const char *const *names, int n, const char *expected)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(s, names[i])) {
            return i;
        }
    }
    cp_report_error("%s: %s '%s' is not %s", cmd, opt, s, expected);
    return -1;
}

/* ---- operands -------------------------------------------------------------------- */

static int push(char ***v, int *n, int *cap, const char *s)
{
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 16;
        char **g = realloc(*v, sizeof(char *) * (size_t)c);
        if (g == NULL) {
            return -1;
        }
        *v = g;
        *cap = c;
    }
    if (((*v)[*n] = strdup(s)) == NULL) {
        return -1;
    }
    (*n)++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* collprof_*.h5, the names collprof gives its result files */
static int is_result_name(const char *name)
{
    size_t len = strlen(name);
    return !strncmp(name, "collprof_", 9) && len > 12 && !strcmp(name + len - 3, ".h5");
}

static void free_paths(char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        free(paths[i]);
    }
    free(paths);
}

/*
 * Expand operands: a directory stands for its collprof_*.h5 files in name
 * order, anything else for itself.  Returns the count (>= 0) or -1 after
 * printing an error; free with free_paths().
 */
static int expand_paths(char **operands, int n, char ***out)
{
    char **v = NULL;
    int cnt = 0, cap = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        if (stat(operands[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
            /* a missing file is reported, with its reason, when it is opened */
            if (push(&v, &cnt, &cap, operands[i]) != 0) {
                goto oom;
            }
            continue;
        }
        DIR *d = opendir(operands[i]);
        if (d == NULL) {
            cp_report_error("%s: %s", operands[i], strerror(errno));
            free_paths(v, cnt);
            return -1;
        }
        int first = cnt;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!is_result_name(e->d_name)) {
                continue;
            }
            size_t len = strlen(operands[i]) + strlen(e->d_name) + 2;
            char *p = malloc(len);
            int rc = p ? 0 : -1;
            if (p != NULL) {
                snprintf(p, len, "%s/%s", operands[i], e->d_name);
                rc = push(&v, &cnt, &cap, p);
                free(p);
            }
            if (rc != 0) {
                closedir(d);
                goto oom;
            }
        }
        closedir(d);
        if (cnt == first) {
            cp_report_error("%s: no collprof_*.h5 result files in this directory", operands[i]);
            free_paths(v, cnt);
            return -1;
        }
        /* timestamps in the names make name order run order */
        qsort(v + first, (size_t)(cnt - first), sizeof(char *), by_name);
    }
    *out = v;
    return cnt;
oom:
    cp_report_error("out of memory");
    free_paths(v, cnt);
    return -1;
}

/* One file: the operand, or the only result file of a directory.  -1 after an error. */
static int single_path(const char *cmd, char *operand, char **out)
{
    char **found;
    int n = expand_paths(&operand, 1, &found);
    if (n < 0) {
        return -1;
    }
    if (n != 1) {
        cp_report_error("%s: %s holds %d result files: name one", cmd, operand, n);
        free_paths(found, n);
        return -1;
    }
    *out = found[0];
    free(found);
    return 0;
}

/* Open one file, or print why not and return -1. */
static int open_one(const char *path, cp_report_file_t **f)
{
    char err[1024];
    if (cp_report_open(path, f, err, sizeof(err)) != 0) {
        cp_report_error("%s: %s", path, err);
        return -1;
    }
    return 0;
}

static void close_all(cp_report_file_t **files, int n)
{
    if (files == NULL) {
        return;
    }
    for (int i = 0; i < n; i++) {
        cp_report_close(files[i]);
    }
    free(files);
}

/*
 * Open every path; on the first failure prints the error, closes what was
 * opened and returns -1.
 */
static int open_all(char **paths, int n, cp_report_file_t ***out)
{
    cp_report_file_t **files = calloc((size_t)(n > 0 ? n : 1), sizeof(*files));
    if (files == NULL) {
        cp_report_error("out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (open_one(paths[i], &files[i]) != 0) {
            close_all(files, i);
            return -1;
        }
    }
    *out = files;
    return 0;
}

/* ---- a subcommand's run -------------------------------------------------------- */

#define CONTINUE (-1) /* parse(): go on */

/* The operands of each cp_report_files_t: how many, and what to say when wrong. */
static const struct {
    int min, max; /* max 0: any number */
    const char *too_few, *too_many;
} operands[] = {
    [CP_REPORT_FILES_ALL] = {1, 0, "no result file given", NULL},
    [CP_REPORT_FILES_EACH] = {1, 0, "no result file given", NULL},
    [CP_REPORT_FILES_ONE] = {1, 1, "no result file given", "takes one file"},
    [CP_REPORT_FILES_BASE_NEW] = {2, 2, "needs two files, BASE and NEW",
                                  "takes two files, BASE and NEW"},
    [CP_REPORT_FILES_SOURCE] = {1, 1, "no input file given", "takes one input file"},
    [CP_REPORT_FILES_SOURCES] = {1, 0, "no input file given", NULL},
};

/* Parse the command line into ops[0..*n): CONTINUE, or the exit status (--help, or an error). */
static int parse(const cp_report_cmd_t *c, void *ctx, int argc, char **argv, char **ops, int *n)
{
    args_t a = {argc, argv, 1, 0, c->name};
    char *val;
    int k;
    while ((k = next_arg(&a, c->opts, &val)) != ARG_END) {
        if (k == ARG_ERROR) {
            return CP_REPORT_EXIT_BAD;
        } else if (k == 0) {
            c->usage(stdout);
            return CP_REPORT_EXIT_OK;
        } else if (k == ARG_OPERAND && operands[c->files].max > 0 && *n == operands[c->files].max) {
            cp_report_error("%s: %s (extra '%s')", c->name, operands[c->files].too_many, val);
            return CP_REPORT_EXIT_BAD;
        } else if (k == ARG_OPERAND) {
            ops[(*n)++] = val;
            if ((c->files == CP_REPORT_FILES_SOURCE || c->files == CP_REPORT_FILES_SOURCES) &&
                c->option(ctx, CP_REPORT_OPERAND, val) != 0) {
                return CP_REPORT_EXIT_BAD;
            }
        } else if (c->option(ctx, k, val) != 0) {
            return CP_REPORT_EXIT_BAD;
        }
    }
    const char *why = c->check ? c->check(ctx) : NULL;
    if (why == NULL && *n < operands[c->files].min) {
        why = operands[c->files].too_few;
    }
    if (why != NULL) {
        cp_report_error("%s: %s (see 'collprof-report %s --help')", c->name, why, c->name);
        return CP_REPORT_EXIT_BAD;
    }
    return CONTINUE;
}

/* The paths the operands stand for, as c->files says: the count, or -1 after an error. */
static int resolve(const cp_report_cmd_t *c, char **ops, int n, char ***out)
{
    if (c->files == CP_REPORT_FILES_ALL || c->files == CP_REPORT_FILES_EACH) {
        return expand_paths(ops, n, out);
    }
    char **paths = calloc((size_t)n + 1, sizeof(char *));
    if (paths == NULL) {
        cp_report_error("out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (single_path(c->name, ops[i], &paths[i]) != 0) {
            free_paths(paths, i);
            return -1;
        }
    }
    *out = paths;
    return n;
}

/* CP_REPORT_FILES_EACH: a bad file is reported and skipped, the others are still worth it. */
static int run_each(const cp_report_cmd_t *c, void *ctx, char **paths, int n)
{
    int rc = CP_REPORT_EXIT_OK;
    for (int i = 0; i < n; i++) {
        cp_report_file_t *f;
        if (open_one(paths[i], &f) != 0) {
            rc = CP_REPORT_EXIT_BAD;
            continue;
        }
        int r = c->run(ctx, &f, 1);
        rc = r != CP_REPORT_EXIT_OK ? r : rc;
        cp_report_close(f);
    }
    return rc;
}

int cp_report_run(const cp_report_cmd_t *c, void *ctx, int argc, char **argv)
{
    char **ops = calloc((size_t)argc + 1, sizeof(char *)), **paths = NULL;
    if (ops == NULL) {
        cp_report_error("out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    int nops = 0, rc = parse(c, ctx, argc, argv, ops, &nops);
    if (rc == CONTINUE &&
        (c->files == CP_REPORT_FILES_SOURCE || c->files == CP_REPORT_FILES_SOURCES)) {
        free(ops);
        return c->run(ctx, NULL, 0);
    }
    int n = rc == CONTINUE ? resolve(c, ops, nops, &paths) : 0;
    free(ops);
    if (rc != CONTINUE || n < 0) {
        return rc != CONTINUE ? rc : CP_REPORT_EXIT_BAD;
    }
    cp_report_file_t **files;
    if (c->files == CP_REPORT_FILES_EACH) {
        rc = run_each(c, ctx, paths, n);
    } else if (open_all(paths, n, &files) != 0) {
        rc = CP_REPORT_EXIT_BAD; /* every file is read before anything is done */
    } else {
        rc = c->run(ctx, files, n);
        close_all(files, n);
    }
    free_paths(paths, n);
    return rc;
}

int cp_report_write(const char *path, void (*write)(FILE *out, const void *data), const void *data)
{
    FILE *out = path ? open_output(path) : stdout;
    if (out == NULL) {
        return CP_REPORT_EXIT_BAD;
    }
    write(out, data);
    if (out != stdout) {
        int bad = ferror(out);
        bad |= fclose(out) != 0;
        if (bad) {
            cp_report_error("output '%s': %s", path, strerror(errno));
            return CP_REPORT_EXIT_BAD;
        }
    }
    return CP_REPORT_EXIT_OK;
}

void cp_report_put_escaped(FILE *out, const char *s, const char *const esc[256], int json_controls)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (esc[*p] != NULL) {
            fputs(esc[*p], out);
        } else if (json_controls && *p < 0x20) {
            fprintf(out, "\\u%04x", *p);
        } else {
            fputc(*p, out);
        }
    }
}

void cp_report_cell_name(const collprof_result_row_t *r, char *buf, size_t len)
{
    char label[256], count[32];
    cp_format_label(r, label, sizeof(label));
    snprintf(buf, len, "%s/%s %s %s %s", r->backend, r->variant, label, r->dtype,
             cp_fmt_thousands(r->count, count, sizeof(count)));
}

void cp_report_xml_text(FILE *out, const char *s)
{
    static const char *const esc[256] = {
        ['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;"};
    cp_report_put_escaped(out, s, esc, 0);
}

void cp_report_fmt_double(double d, char *buf, size_t len)
{
    snprintf(buf, len, "%.15g", d);
    if (strtod(buf, NULL) != d) {
        snprintf(buf, len, "%.17g", d);
    }
}

void cp_report_fmt_value(const cp_report_value_t *v, char *buf, size_t len)
{
    if (v->kind == COLLPROF_I32 || v->kind == COLLPROF_I64) {
        snprintf(buf, len, "%lld", v->i);
    } else if (v->kind == COLLPROF_U64) {
        snprintf(buf, len, "%llu", (unsigned long long)v->u);
    } else {
        cp_report_fmt_double(v->d, buf, len);
    }
}

void cp_report_csv_field(FILE *out, const char *s)
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

void cp_report_json_string(FILE *out, const char *s)
{
    static const char *const esc[256] = {
        ['"'] = "\\\"", ['\\'] = "\\\\", ['\n'] = "\\n", ['\r'] = "\\r", ['\t'] = "\\t"};
    fputc('"', out);
    /* the reader has checked the text is UTF-8: other bytes pass unchanged */
    cp_report_put_escaped(out, s, esc, 1);
    fputc('"', out);
}
