/*
 * Command-line helpers shared by the subcommands.  The parser is our own
 * rather than getopt_long so that every mistake gives the same one-line
 * "collprof-report: error: ..." message (getopt prints its own wording)
 * and options may follow operands, as users type them.
 */
#include "config.h"

#include "report/report.h"

#include "output/format.h"
#include "core/util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void cp_report_error(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout); /* keep the error after what was already printed */
    fputs("collprof-report: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static int unknown(const cp_report_args_t *a, const char *arg)
{
    cp_report_error("%s: unknown option '%s' (see 'collprof-report %s --help')", a->cmd, arg,
                    a->cmd);
    return CP_REPORT_ARG_ERROR;
}

int cp_report_next_arg(cp_report_args_t *a, const cp_report_opt_t *opts, char **val)
{
    *val = NULL;
    if (a->next >= a->argc) {
        return CP_REPORT_ARG_END;
    }
    char *arg = a->argv[a->next++];
    if (a->only_operands || arg[0] != '-' || arg[1] == '\0') { /* "-" is an operand */
        *val = arg;
        return CP_REPORT_ARG_OPERAND;
    }
    if (!strcmp(arg, "--")) {
        a->only_operands = 1;
        return cp_report_next_arg(a, opts, val);
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
                return CP_REPORT_ARG_ERROR;
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
                return CP_REPORT_ARG_ERROR;
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

int cp_report_one_file(const char *cmd, char **file, char *val)
{
    if (*file != NULL) {
        cp_report_error("%s: takes one file (extra '%s')", cmd, val);
        return -1;
    }
    *file = val;
    return 0;
}

int cp_report_need_file(const char *cmd, int given)
{
    if (!given) {
        cp_report_error("%s: no result file given (see 'collprof-report %s --help')", cmd, cmd);
        return -1;
    }
    return 0;
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

int cp_report_expand_paths(char **operands, int n, char ***out)
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
            cp_report_free_paths(v, cnt);
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
            cp_report_free_paths(v, cnt);
            return -1;
        }
        /* timestamps in the names make name order run order */
        qsort(v + first, (size_t)(cnt - first), sizeof(char *), by_name);
    }
    *out = v;
    return cnt;
oom:
    cp_report_error("out of memory");
    cp_report_free_paths(v, cnt);
    return -1;
}

void cp_report_free_paths(char **paths, int n)
{
    for (int i = 0; i < n; i++) {
        free(paths[i]);
    }
    free(paths);
}

int cp_report_single_path(const char *cmd, char *operand, char **out)
{
    char **found;
    int n = cp_report_expand_paths(&operand, 1, &found);
    if (n < 0) {
        return -1;
    }
    if (n != 1) {
        cp_report_error("%s: %s holds %d result files: name one", cmd, operand, n);
        cp_report_free_paths(found, n);
        return -1;
    }
    *out = found[0];
    free(found);
    return 0;
}

int cp_report_open_all(char **paths, int n, cp_report_file_t ***out)
{
    cp_report_file_t **files = calloc((size_t)(n > 0 ? n : 1), sizeof(*files));
    if (files == NULL) {
        cp_report_error("out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char err[1024];
        if (cp_report_open(paths[i], &files[i], err, sizeof(err)) != 0) {
            cp_report_error("%s: %s", paths[i], err);
            cp_report_close_all(files, i);
            return -1;
        }
    }
    *out = files;
    return 0;
}

void cp_report_close_all(cp_report_file_t **files, int n)
{
    if (files == NULL) {
        return;
    }
    for (int i = 0; i < n; i++) {
        cp_report_close(files[i]);
    }
    free(files);
}

void cp_report_cell_name(const collprof_result_row_t *r, char *buf, size_t len)
{
    char label[256], count[32];
    cp_format_label(r, label, sizeof(label));
    snprintf(buf, len, "%s/%s %s %s %s", r->backend, r->variant, label, r->dtype,
             cp_fmt_thousands(r->count, count, sizeof(count)));
}
