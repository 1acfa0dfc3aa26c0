#include "config.h"

/*
 * Specs (cli_int.h): a spec's defaults, the value parsers that options and matrix files
 * share (cp_spec_set), and the matrix-file loader.
 */

#include "cli/cli_int.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/split.h"
#include "base/util.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy a spec; file weights are shared read-only, so duplicate them. */
static int spec_copy(cp_spec_t *dst, const cp_spec_t *src)
{
    *dst = *src;
    for (int i = 0; i < src->nimb; i++) {
        if (src->imb[i].weights != NULL) {
            size_t bytes = (size_t)src->imb[i].file_n * (size_t)src->imb[i].file_n * sizeof(double);
            dst->imb[i].weights = malloc(bytes);
            if (dst->imb[i].weights == NULL) {
                return -1;
            }
            memcpy(dst->imb[i].weights, src->imb[i].weights, bytes);
        }
    }
    return 0;
}

void cp_spec_free(cp_spec_t *s)
{
    for (int i = 0; i < s->nimb; i++) {
        cp_imbalance_free(&s->imb[i]);
    }
    s->nimb = 0;
}

/* Parse a comma list into a scratch copy; err names the option. */
int cli_split(const char *what, const char *value, char *scratch, size_t len, char **tok, int max,
              char *err, size_t errlen)
{
    if (strlen(value) >= len) {
        snprintf(err, errlen, "%s: list is too long", what);
        return -1;
    }
    strcpy(scratch, value);
    int n = cp_split_list(scratch, tok, max);
    if (n < 0) {
        snprintf(err, errlen, "%s: '%s' is not a comma-separated list (empty item or more than %d)",
                 what, value, max);
    }
    return n;
}

static int parse_names(const char *what, const char *value, int (*lookup)(const char *), int count,
                       const char *choices, int *out, int *nout, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    if (!strcmp(value, "all")) {
        for (int i = 0; i < count; i++) {
            out[i] = i;
        }
        *nout = count;
        return 0;
    }
    int n = cli_split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        int v = lookup(tok[i]);
        if (v < 0) {
            snprintf(err, errlen, "unknown %s '%s' (choose from %s, or all)", what, tok[i],
                     choices);
            return -1;
        }
        int dup = 0;
        for (int j = 0; j < m; j++) {
            dup |= out[j] == v;
        }
        if (!dup) {
            if (m >= count) {
                break;
            }
            out[m++] = v;
        }
    }
    *nout = m;
    return 0;
}

static int parse_sizes(const char *what, const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    int n = cli_split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char why[256];
        if (cp_parse_size(tok[i], &s->sizes[i], why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: %s", what, why);
            return -1;
        }
    }
    s->nsizes = n;
    s->sizes_are_bytes = 0;
    return 0;
}

static int parse_names_into(const char *what, const char *value, char (*out)[64], int *nout,
                            char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_LIST];
    if (!strcmp(value, "all")) {
        *nout = 0;
        return 0;
    }
    int n = cli_split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
    if (n < 0) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (strlen(tok[i]) >= 64) {
            snprintf(err, errlen, "%s: name '%.40s...' is too long", what, tok[i]);
            return -1;
        }
        snprintf(out[i], 64, "%s", tok[i]);
    }
    *nout = n;
    return 0;
}

static int parse_inplace(const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    if (!strcmp(value, "out")) {
        s->inplace[0] = 0;
        s->ninplace = 1;
    } else if (!strcmp(value, "in")) {
        s->inplace[0] = 1;
        s->ninplace = 1;
    } else if (!strcmp(value, "both")) {
        s->inplace[0] = 0;
        s->inplace[1] = 1;
        s->ninplace = 2;
    } else {
        snprintf(err, errlen, "--inplace: '%s' is not out, in or both", value);
        return -1;
    }
    return 0;
}

static int parse_imbalance(const char *value, cp_spec_t *s, char *err, size_t errlen)
{
    char scratch[4096], *tok[CP_MAX_IMB];
    int n = cli_split("--imbalance", value, scratch, sizeof(scratch), tok, CP_MAX_IMB, err, errlen);
    if (n < 0) {
        return -1;
    }
    cp_imbalance_t imb[CP_MAX_IMB];
    for (int i = 0; i < n; i++) {
        if (cp_imbalance_parse(tok[i], &imb[i], err, errlen) != 0) {
            for (int j = 0; j < i; j++) {
                cp_imbalance_free(&imb[j]);
            }
            return -1;
        }
    }
    cp_spec_free(s);
    memcpy(s->imb, imb, sizeof(imb[0]) * (size_t)n);
    s->nimb = n;
    return 0;
}

int cli_parse_count_opt(const char *what, const char *value, long lo, long hi, int *out, char *err,
                        size_t errlen)
{
    long v;
    if (cp_parse_int(value, lo, hi, &v) != 0) {
        snprintf(err, errlen, "%s: '%s' is not a whole number in %ld..%ld", what, value, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Byte sweep: minbytes..maxbytes multiplying by factor, as nccl-tests -b/-e/-f. */
int cli_build_sweep(cp_spec_t *s, uint64_t minb, uint64_t maxb, long factor, char *err,
                    size_t errlen)
{
    if (minb > maxb) {
        snprintf(err, errlen, "-b %llu is larger than -e %llu", (unsigned long long)minb,
                 (unsigned long long)maxb);
        return -1;
    }
    int n = 0;
    for (uint64_t b = minb; b <= maxb; b *= (uint64_t)factor) {
        if (n == CP_MAX_LIST) {
            snprintf(err, errlen, "-b/-e/-f: the sweep has more than %d sizes; raise -f",
                     CP_MAX_LIST);
            return -1;
        }
        s->sizes[n++] = b;
        if (b > maxb / (uint64_t)factor) {
            break;
        }
    }
    s->nsizes = n;
    s->sizes_are_bytes = 1;
    return 0;
}

int cli_keep_any(int i)
{
    (void)i;
    return 1;
}

int cli_keep_default_op(int op)
{
    return (collprof_op_info(op)->flags & COLLPROF_OPF_DEFAULT) != 0;
}

static int keep_blocking_op(int op)
{
    return (collprof_op_info(op)->flags & COLLPROF_OPF_NONBLOCKING) == 0;
}

static int keep_nonblocking_op(int op)
{
    return !keep_blocking_op(op);
}

/* The names of one vocabulary that keep() accepts, joined by sep, into buf. */
const char *cli_join_names(int which, int (*keep)(int), const char *sep, char *buf, size_t len)
{
    const char *(*name)(int) = which == NAMES_OPS      ? collprof_op_name
                               : which == NAMES_DTYPES ? collprof_dtype_name
                               : which == NAMES_REDOPS ? collprof_redop_name
                                                       : collprof_memtype_name;
    int count = which == NAMES_OPS      ? COLLPROF_OP_COUNT
                : which == NAMES_DTYPES ? COLLPROF_DTYPE_COUNT
                : which == NAMES_REDOPS ? COLLPROF_REDOP_COUNT
                                        : COLLPROF_MEM_COUNT;
    buf[0] = '\0';
    for (int i = 0; i < count; i++) {
        size_t o = strlen(buf);
        if (keep(i) && o < len) {
            snprintf(buf + o, len - o, "%s%s", o > 0 ? sep : "", name(i));
        }
    }
    return buf;
}

static int lookup_op(const char *n)
{
    return cp_coll_from_name(n);
}

/*
 * An --ops list with its groups spelled out into out: "all" is every
 * blocking operation (the non-blocking ones run twice and compute in
 * between: asked for by name), "nonblocking" the four non-blocking ones, "default" those of
 * the default matrix.
 */
static void expand_ops(const char *value, char *out, size_t len)
{
    const char *p = value;
    out[0] = '\0';
    for (;;) {
        size_t tl = strcspn(p, ","), o = strlen(out);
        char names[512];
        const char *item = NULL;
        if (tl == 3 && !strncmp(p, "all", 3)) {
            item = cli_join_names(NAMES_OPS, keep_blocking_op, ",", names, sizeof(names));
        } else if (tl == 11 && !strncmp(p, "nonblocking", 11)) {
            item = cli_join_names(NAMES_OPS, keep_nonblocking_op, ",", names, sizeof(names));
        } else if (tl == 7 && !strncmp(p, "default", 7)) {
            item = cli_join_names(NAMES_OPS, cli_keep_default_op, ",", names, sizeof(names));
        }
        if (item != NULL) {
            snprintf(out + o, len - o, "%s%s", item, p[tl] == ',' ? "," : "");
        } else {
            snprintf(out + o, len - o, "%.*s", (int)(tl + (p[tl] == ',')), p);
        }
        if (p[tl] != ',') {
            return;
        }
        p += tl + 1;
    }
}

static int lookup_mem(const char *n)
{
    for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
        if (!strcmp(n, collprof_memtype_name(m))) {
            return m;
        }
    }
    return -1;
}

/* ---- the matrix keys --------------------------------------------------- */

static int set_mem(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    char choices[512];
    if (!strcmp(value, "auto")) {
        s->nmems = 0;
        return 0;
    }
    cli_join_names(NAMES_MEMS, cli_keep_any, ", ", choices, sizeof(choices) - 8);
    strcat(choices, ", auto");
    return parse_names("memory type", value, lookup_mem, COLLPROF_MEM_COUNT, choices, s->mems,
                       &s->nmems, err, errlen);
}

static int set_ops(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    char choices[512], expanded[4096];
    expand_ops(value, expanded, sizeof(expanded));
    cli_join_names(NAMES_OPS, cli_keep_any, ", ", choices, sizeof(choices) - 32);
    strcat(choices, ", nonblocking, default");
    return parse_names("operation", expanded, lookup_op, COLLPROF_OP_COUNT, choices, s->ops,
                       &s->nops, err, errlen);
}

static int set_dtypes(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    char choices[512];
    return parse_names("dtype", value, cp_dtype_from_name, COLLPROF_DTYPE_COUNT,
                       cli_join_names(NAMES_DTYPES, cli_keep_any, ", ", choices, sizeof(choices)),
                       s->dtypes, &s->ndtypes, err, errlen);
}

static int set_redops(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    char choices[512];
    return parse_names("reduction", value, cp_redop_from_name, COLLPROF_REDOP_COUNT,
                       cli_join_names(NAMES_REDOPS, cli_keep_any, ", ", choices, sizeof(choices)),
                       s->redops, &s->nredops, err, errlen);
}

static int set_counts(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return parse_sizes("counts", value, s, err, errlen);
}

static int set_bytes(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    if (parse_sizes("bytes", value, s, err, errlen) != 0) {
        return -1;
    }
    s->sizes_are_bytes = 1;
    return 0;
}

static int set_backends(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return parse_names_into("backends", value, s->backends, &s->nbackends, err, errlen);
}

static int set_variants(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return parse_names_into("variants", value, s->variants, &s->nvariants, err, errlen);
}

static int set_iters(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return cli_parse_count_opt("iters", value, 1, 1000000, &s->iters, err, errlen);
}

static int set_warmup(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return cli_parse_count_opt("warmup", value, 0, 1000000, &s->warmup, err, errlen);
}

static int set_root(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return cli_parse_count_opt("root", value, 0, 1 << 24, &s->root, err, errlen);
}

static int set_inplace(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return parse_inplace(value, s, err, errlen);
}

static int set_imbalance(cp_spec_t *s, const char *value, char *err, size_t errlen)
{
    return parse_imbalance(value, s, err, errlen);
}

/* The keys of a matrix (a --matrix file's lines, and the options that set the same): name,
 * another spelling, the default as a value of the key (set through the same parser), the
 * parser.  The "unknown key" message, cp_spec_defaults and --help's defaults come from here. */
typedef struct spec_key {
    const char *name, *alias, *dflt;
    int (*set)(cp_spec_t *s, const char *value, char *err, size_t errlen);
} spec_key_t;

static const spec_key_t spec_keys[] = {
    {"backends", NULL, "all", set_backends},
    {"variants", NULL, "all", set_variants},
    {"ops", NULL, "default", set_ops},
    {"dtypes", "dtype", "float32", set_dtypes},
    {"redops", "redop", "sum", set_redops},
    {"counts", NULL, "1M,4M,16M", set_counts},
    {"bytes", NULL, NULL, set_bytes},
    {"inplace", NULL, "out", set_inplace},
    {"imbalance", NULL, "uniform", set_imbalance},
    {"mem", "memory", "auto", set_mem},
    {"iters", NULL, "20", set_iters},
    {"warmup", NULL, "5", set_warmup},
    {"root", NULL, "0", set_root},
};
#define NKEYS (sizeof(spec_keys) / sizeof(spec_keys[0]))

static const spec_key_t *find_key(const char *key)
{
    for (size_t i = 0; i < NKEYS; i++) {
        const spec_key_t *k = &spec_keys[i];
        if (!strcmp(key, k->name) || (k->alias != NULL && !strcmp(key, k->alias))) {
            return k;
        }
    }
    return NULL;
}

const char *cp_spec_default(const char *key)
{
    const spec_key_t *k = find_key(key);
    return k != NULL ? k->dflt : NULL;
}

void cp_spec_defaults(cp_spec_t *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < NKEYS; i++) {
        char err[256];
        if (spec_keys[i].dflt != NULL && spec_keys[i].set(s, spec_keys[i].dflt, err, sizeof(err))) {
            abort(); /* a default its own parser refuses: a bug here, caught by every test */
        }
    }
}

int cp_spec_set(cp_spec_t *s, const char *key, const char *value, char *err, size_t errlen)
{
    const spec_key_t *k = find_key(key);
    if (k != NULL) {
        return k->set(s, value, err, errlen);
    }
    char names[256] = "";
    for (size_t i = 0; i < NKEYS; i++) {
        size_t o = strlen(names);
        snprintf(names + o, sizeof(names) - o, "%s%s",
                 i == 0          ? ""
                 : i + 1 < NKEYS ? ", "
                                 : " or ",
                 spec_keys[i].name);
    }
    snprintf(err, errlen, "unknown key '%s' (use %s)", key, names);
    return -1;
}

int cp_matrix_load(const char *path, const cp_spec_t *base, cp_options_t *opt, char *err,
                   size_t errlen)
{
    FILE *f = cp_fopen_regular(path, "matrix file", err, errlen);
    int cap = opt->nspecs;
    if (f == NULL) {
        return -1;
    }
    char line[8192];
    int lineno = 0, rc = -1;
    int got;
    while ((got = cp_read_line(f, line, sizeof(line), &lineno)) != 0) {
        if (got < 0) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            goto out;
        }
        char *save = NULL, *tok = strtok_r(line, " \t\r\n", &save);
        if (tok == NULL) {
            continue;
        }
        if (opt->nspecs >= CP_MAX_SPECS) {
            snprintf(err, errlen, "%s:%d: more than %d blocks; split the matrix over several runs",
                     path, lineno, CP_MAX_SPECS);
            goto out;
        }
        if (opt->nspecs == cap) {
            cap = cap ? 2 * cap : 16;
            cp_spec_t *grown = realloc(opt->specs, sizeof(cp_spec_t) * (size_t)cap);
            if (grown == NULL) {
                snprintf(err, errlen, "out of memory");
                goto out;
            }
            opt->specs = grown;
        }
        cp_spec_t *s = &opt->specs[opt->nspecs];
        if (spec_copy(s, base) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        opt->nspecs++;
        s->line = lineno;
        for (; tok != NULL; tok = strtok_r(NULL, " \t\r\n", &save)) {
            char *eq = strchr(tok, '=');
            if (eq == NULL || eq == tok || eq[1] == '\0') {
                snprintf(err, errlen, "%s:%d: '%s' is not key=value", path, lineno, tok);
                goto out;
            }
            *eq = '\0';
            char why[1024];
            if (cp_spec_set(s, tok, eq + 1, why, sizeof(why)) != 0) {
                snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
                goto out;
            }
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "cannot read matrix file '%s': %s", path, strerror(errno));
        goto out;
    }
    if (opt->nspecs == 0) {
        snprintf(err, errlen, "matrix file '%s' has no lines to run", path);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}
