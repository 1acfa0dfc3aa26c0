#include "config.h"

#include "core/cli.h"

#include "colls/colls.h"
#include "core/data.h"
#include "core/split.h"
#include "core/util.h"

#include <errno.h>
#include <stddef.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void spec_defaults(cp_spec_t *s)
{
    memset(s, 0, sizeof(*s));
    for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
        if (collprof_op_info(op)->flags & COLLPROF_OPF_DEFAULT) {
            s->ops[s->nops++] = op;
        }
    }
    s->dtypes[0] = COLLPROF_DTYPE_FLOAT32;
    s->ndtypes = 1;
    s->redops[0] = COLLPROF_REDOP_SUM;
    s->nredops = 1;
    s->sizes[0] = UINT64_C(1) << 20;
    s->sizes[1] = UINT64_C(4) << 20;
    s->sizes[2] = UINT64_C(16) << 20;
    s->nsizes = 3;
    s->inplace[0] = 0;
    s->ninplace = 1;
    s->imb[0].kind = CP_IMB_UNIFORM;
    snprintf(s->imb[0].label, sizeof(s->imb[0].label), "uniform");
    s->nimb = 1;
    s->iters = 20;
    s->warmup = 5;
    s->root = 0;
}

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

static void spec_free(cp_spec_t *s)
{
    for (int i = 0; i < s->nimb; i++) {
        cp_imbalance_free(&s->imb[i]);
    }
    s->nimb = 0;
}

/* Parse a comma list into a scratch copy; err names the option. */
static int split(const char *what, const char *value, char *scratch, size_t len, char **tok,
                 int max, char *err, size_t errlen)
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
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
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
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
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
    int n = split(what, value, scratch, sizeof(scratch), tok, CP_MAX_LIST, err, errlen);
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
    int n = split("--imbalance", value, scratch, sizeof(scratch), tok, CP_MAX_IMB, err, errlen);
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
    spec_free(s);
    memcpy(s->imb, imb, sizeof(imb[0]) * (size_t)n);
    s->nimb = n;
    return 0;
}

static int parse_count_opt(const char *what, const char *value, long lo, long hi, int *out,
                           char *err, size_t errlen)
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
static int build_sweep(cp_spec_t *s, uint64_t minb, uint64_t maxb, long factor, char *err,
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

/* The vocabularies whose names the command line takes. */
enum { NAMES_OPS, NAMES_DTYPES, NAMES_REDOPS, NAMES_MEMS };

static int keep_any(int i)
{
    (void)i;
    return 1;
}

static int keep_default_op(int op)
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
static const char *join_names(int which, int (*keep)(int), const char *sep, char *buf, size_t len)
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
 * between: asked for by name), "nonblocking" the four non-blocking ones.
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
            item = join_names(NAMES_OPS, keep_blocking_op, ",", names, sizeof(names));
        } else if (tl == 11 && !strncmp(p, "nonblocking", 11)) {
            item = join_names(NAMES_OPS, keep_nonblocking_op, ",", names, sizeof(names));
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

int cp_spec_set(cp_spec_t *s, const char *key, const char *value, char *err, size_t errlen)
{
    char choices[512];
    if (!strcmp(key, "mem") || !strcmp(key, "memory")) {
        if (!strcmp(value, "auto")) {
            s->nmems = 0;
            return 0;
        }
        join_names(NAMES_MEMS, keep_any, ", ", choices, sizeof(choices) - 8);
        strcat(choices, ", auto");
        return parse_names("memory type", value, lookup_mem, COLLPROF_MEM_COUNT, choices, s->mems,
                           &s->nmems, err, errlen);
    }
    if (!strcmp(key, "ops")) {
        char expanded[4096];
        expand_ops(value, expanded, sizeof(expanded));
        join_names(NAMES_OPS, keep_any, ", ", choices, sizeof(choices) - 16);
        strcat(choices, ", nonblocking");
        return parse_names("operation", expanded, lookup_op, COLLPROF_OP_COUNT, choices, s->ops,
                           &s->nops, err, errlen);
    }
    if (!strcmp(key, "dtypes") || !strcmp(key, "dtype")) {
        return parse_names("dtype", value, cp_dtype_from_name, COLLPROF_DTYPE_COUNT,
                           join_names(NAMES_DTYPES, keep_any, ", ", choices, sizeof(choices)),
                           s->dtypes, &s->ndtypes, err, errlen);
    }
    if (!strcmp(key, "redops") || !strcmp(key, "redop")) {
        return parse_names("reduction", value, cp_redop_from_name, COLLPROF_REDOP_COUNT,
                           join_names(NAMES_REDOPS, keep_any, ", ", choices, sizeof(choices)),
                           s->redops, &s->nredops, err, errlen);
    }
    if (!strcmp(key, "counts")) {
        return parse_sizes("counts", value, s, err, errlen);
    }
    if (!strcmp(key, "bytes")) {
        if (parse_sizes("bytes", value, s, err, errlen) != 0) {
            return -1;
        }
        s->sizes_are_bytes = 1;
        return 0;
    }
    if (!strcmp(key, "backends")) {
        return parse_names_into("backends", value, s->backends, &s->nbackends, err, errlen);
    }
    if (!strcmp(key, "variants")) {
        return parse_names_into("variants", value, s->variants, &s->nvariants, err, errlen);
    }
    if (!strcmp(key, "inplace")) {
        return parse_inplace(value, s, err, errlen);
    }
    if (!strcmp(key, "imbalance")) {
        return parse_imbalance(value, s, err, errlen);
    }
    if (!strcmp(key, "iters")) {
        return parse_count_opt("iters", value, 1, 1000000, &s->iters, err, errlen);
    }
    if (!strcmp(key, "warmup")) {
        return parse_count_opt("warmup", value, 0, 1000000, &s->warmup, err, errlen);
    }
    if (!strcmp(key, "root")) {
        return parse_count_opt("root", value, 0, 1 << 24, &s->root, err, errlen);
    }
    snprintf(err, errlen,
             "unknown key '%s' (use backends, variants, ops, dtypes, redops, counts, bytes, "
             "inplace, imbalance, mem, iters, warmup or root)",
             key);
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

/* ---------------------------------------------------------------------- */
/* The options: one table drives getopt_long, the parsing and --help. */

/* What the parse keeps besides opt: the base spec and the byte sweep. */
typedef struct cli_state {
    cp_options_t *opt;
    cp_spec_t base;
    uint64_t minb, maxb;
    long factor;
    int have_counts, have_sweep;
    const char *spelled; /* the option as written, e.g. "--tag=x" */
} cli_state_t;

typedef struct cli_opt cli_opt_t;
typedef int (*cli_handler_t)(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                             size_t len);

/* One option.  Rows without a handler are --help text: a section heading
 * (name NULL) or a note line under the option above (name ""). */
struct cli_opt {
    const char *name;     /* long name */
    int short_name;       /* 0: none */
    const char *arg;      /* value placeholder for --help; NULL: takes no value */
    cli_handler_t handle; /* parses arg into the destination */
    const char *key;      /* cp_spec_set key, or the handler's word */
    size_t off, cap;      /* destination field in cp_options_t and its size */
    const char *help;     /* help text, '\n' starting an indented continuation line;
                           * NULL: the names of key's vocabulary and the default */
};

#define OPT_FIELD(f) offsetof(cp_options_t, f), sizeof(((cp_options_t *)0)->f)

static int *opt_int(cli_state_t *st, const cli_opt_t *o)
{
    return (int *)(void *)((char *)st->opt + o->off);
}

/* A matrix key: the same parser as a --matrix file line. */
static int h_spec(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    return cp_spec_set(&st->base, o->key, arg, why, len);
}

static int h_counts(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    st->have_counts = 1;
    return h_spec(st, o, arg, why, len);
}

static int h_sweep_bound(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                         size_t len)
{
    st->have_sweep = 1;
    return cp_parse_size(arg, o->short_name == 'b' ? &st->minb : &st->maxb, why, len);
}

static int h_sweep_factor(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                          size_t len)
{
    (void)o;
    st->have_sweep = 1;
    if (cp_parse_int(arg, 2, 1024, &st->factor) != 0) {
        snprintf(why, len, "-f: '%s' is not a whole number in 2..1024", arg);
        return -1;
    }
    return 0;
}

/* An int option; key is "NAME LO HI". */
static int h_int(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char what[32];
    long lo, hi;
    if (sscanf(o->key, "%31s %ld %ld", what, &lo, &hi) != 3) {
        return -1;
    }
    return parse_count_opt(what, arg, lo, hi, opt_int(st, o), why, len);
}

static int h_flag(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)arg;
    (void)why;
    (void)len;
    *opt_int(st, o) = 1;
    return 0;
}

static int h_more(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)arg;
    (void)why;
    (void)len;
    (*opt_int(st, o))++;
    return 0;
}

static int h_string(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    if (arg[0] == '\0' || strlen(arg) >= o->cap) {
        (void)st;
        snprintf(why, len, "the value is empty or too long");
        return -1;
    }
    snprintf((char *)st->opt + o->off, o->cap, "%s", arg);
    return 0;
}

/* Free text that goes into the summary and the file as it is: one printable line. */
static int h_text(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char clean[1024];
    cp_text_sanitize(arg, clean, sizeof(clean));
    if (strcmp(clean, arg) != 0) {
        snprintf(why, len, "--%s: control characters or invalid UTF-8 in '%s'", o->name, clean);
        return -1;
    }
    return h_string(st, o, arg, why, len);
}

/* A number in (0, 1e6], or in [0, 1e6] when zero_ok. */
static int parse_real(const char *arg, int zero_ok, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (end == arg || *end != '\0' || errno != 0 || !(zero_ok ? v >= 0 : v > 0.0) || v > 1e6) {
        return -1;
    }
    *out = v;
    return 0;
}

static int h_timeout(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (parse_real(arg, 1, &st->opt->timeout_s) != 0) {
        snprintf(why, len, "--timeout: '%s' is not a number of seconds in 0..1000000 (0: none)",
                 arg);
        return -1;
    }
    return 0;
}

/* --min-time, --max-time (seconds) and --target-ci (percent) */
static int h_adaptive(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    double *dst = (double *)(void *)((char *)st->opt + o->off);
    int pct = !strcmp(o->name, "target-ci");
    if (parse_real(arg, 0, dst) != 0 || (pct && *dst > 100)) {
        snprintf(why, len, "--%s: '%s' is not a number %s", o->name, arg,
                 pct ? "of percent in (0, 100]" : "of seconds in (0, 1000000]");
        return -1;
    }
    return 0;
}

/* The repeat options together; 0, or -1 and a reason. */
static int check_repeats(cp_options_t *opt, char *err, size_t errlen)
{
    int adaptive = opt->min_time_s > 0 || opt->target_ci_pct > 0;
    if (opt->repeats == 0) {
        opt->repeats = 1;
    }
    if (opt->max_time_s == 0 && adaptive) {
        opt->max_time_s =
            opt->min_time_s > CP_DEFAULT_MAX_TIME ? opt->min_time_s : CP_DEFAULT_MAX_TIME;
    }
    if (opt->max_time_s > 0 && opt->min_time_s > opt->max_time_s) {
        snprintf(err, errlen, "--min-time %g is longer than --max-time %g", opt->min_time_s,
                 opt->max_time_s);
        return -1;
    }
    if (opt->fresh_buffers && opt->repeats == 1 && !adaptive) {
        snprintf(err, errlen, "--fresh-buffers needs --repeats, --min-time or --target-ci");
        return -1;
    }
    const char *sweep = opt->screen ? "--screen" : "--link-sweep";
    if ((opt->repeats > 1 || adaptive) && (opt->link_sweep || opt->screen)) {
        snprintf(err, errlen, "--repeats, --min-time and --target-ci do not apply to %s", sweep);
        return -1;
    }
    if ((opt->sync == CP_SYNC_BATCH || opt->rotate > 1) && (opt->link_sweep || opt->screen)) {
        snprintf(err, errlen, "--sync batch and --rotate-buffers do not apply to %s", sweep);
        return -1;
    }
    return 0;
}

static int h_screen_thr(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    double v;
    if (parse_real(arg, 0, &v) != 0 || v >= 1) {
        snprintf(why, len, "--screen-threshold: '%s' is not a number in (0, 1)", arg);
        return -1;
    }
    st->opt->screen_thr = v;
    return 0;
}

static int h_screen_validate(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                             size_t len)
{
    (void)o;
    if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
        snprintf(why, len, "--screen-validate: '%s' is not on or off", arg);
        return -1;
    }
    st->opt->screen_validate = strcmp(arg, "on") == 0 ? 1 : -1;
    return 0;
}

static int h_link_gbps(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (parse_real(arg, 0, &st->opt->link_gbps) != 0) {
        snprintf(why, len, "--link-gbps: '%s' is not a number in (0, 1e6]", arg);
        return -1;
    }
    return 0;
}

static int h_sync(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (cp_sync_parse(arg, &st->opt->sync, &st->opt->batch, why, len) != 0) {
        return -1;
    }
    st->opt->sync_barrier = st->opt->sync != CP_SYNC_NONE;
    return 0;
}

static int h_check(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (cp_check_parse(arg, &st->opt->check_mode, &st->opt->check_k, why, len) != 0) {
        return -1;
    }
    st->opt->check = st->opt->check_mode != CP_CHECK_NONE;
    return 0;
}

/* --check every|sample:K check one operation per sample: not with --sync batch:N, N > 1. */
static int check_check(const cp_options_t *opt, char *err, size_t errlen)
{
    if ((opt->check_mode == CP_CHECK_EVERY || opt->check_mode == CP_CHECK_SAMPLE) &&
        opt->sync == CP_SYNC_BATCH && opt->batch > 1) {
        char name[32];
        snprintf(err, errlen,
                 "--check %s checks one operation's output per timed sample, --sync batch:%d "
                 "times %d together: use --check last with it",
                 cp_check_name(opt->check_mode, opt->check_k, name, sizeof(name)), opt->batch,
                 opt->batch);
        return -1;
    }
    return 0;
}

static int h_alloc(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    cp_alloc_t a;
    if (cp_alloc_parse(arg, &a, why, len) != 0) {
        return -1;
    }
    st->opt->alloc = a;
    return 0;
}

/* --split node,cross (or none) */
static int h_split(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char buf[256], *tok[8];
    (void)o;
    snprintf(buf, sizeof(buf), "%s", arg);
    st->opt->split = 0;
    int n = strlen(arg) < sizeof(buf) ? cp_split_list(buf, tok, 8) : -1;
    if (n < 0) {
        snprintf(why, len, "--split: '%s' is not a comma-separated list of node, cross or none",
                 arg);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *t = tok[i];
        if (!strcmp(t, "none")) {
            continue;
        }
        int k = cp_split_from_name(t);
        if (k <= CP_SPLIT_WORLD) {
            snprintf(why, len, "--split: '%s' is not node, cross or none", t);
            return -1;
        }
        st->opt->split |= COLLPROF_BIT(k);
    }
    return 0;
}

/* "auto" is kept as a spelling of "embedded" (see NEWS). */
static int h_launcher(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (!strcmp(arg, "embedded") || !strcmp(arg, "auto")) {
        st->opt->launch_mode = CP_LAUNCH_EMBEDDED;
    } else if (!strcmp(arg, "mpirun")) {
        st->opt->launch_mode = CP_LAUNCH_MPIRUN;
    } else {
        snprintf(why, len, "--launcher: '%s' is not embedded or mpirun", arg);
        return -1;
    }
    return 0;
}

static int h_backend_opt(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                         size_t len)
{
    cp_options_t *opt = st->opt;
    (void)o;
    if (strchr(arg, '=') == NULL || arg[0] == '=' || strlen(arg) >= 256 ||
        opt->nbackend_opts >= 32) {
        snprintf(why, len, "-B: '%s' is not KEY=VALUE (at most 32, 255 chars)", arg);
        return -1;
    }
    char clean[1024];
    cp_text_sanitize(arg, clean, sizeof(clean));
    if (strcmp(clean, arg) != 0) {
        snprintf(why, len, "-B: control characters or invalid UTF-8 in '%s'", clean);
        return -1;
    }
    snprintf(opt->backend_opts[opt->nbackend_opts++], 256, "%s", arg);
    return 0;
}

/*
 * An option the core does not know, --NAME VALUE or --NAME=VALUE: kept as a
 * backend option that some backend must declare COLLPROF_OPTF_LONG (checked
 * once the plugins are loaded, bopts.c).  *used: 1 when VALUE was the next
 * argument (one that starts with '-' is not taken).
 */
#define CP_OPT_NAME_CHARS "abcdefghijklmnopqrstuvwxyz0123456789-"

static int defer_long(cli_state_t *st, const char *next, int *used, char *why, size_t len)
{
    if (next != NULL && next[0] == '-') {
        next = NULL; /* an option, not a value: write --NAME=-1 for such a value */
    }
    cp_options_t *opt = st->opt;
    const char *name = st->spelled + 2, *eq = strchr(name, '=');
    size_t nl = eq ? (size_t)(eq - name) : strlen(name);
    const char *value = eq ? eq + 1 : next;
    *used = eq == NULL && next != NULL;
    if (strncmp(st->spelled, "--", 2) != 0 || nl == 0 || strspn(name, CP_OPT_NAME_CHARS) < nl) {
        snprintf(why, len, "unknown option '%s' (see collprof --help)", st->spelled);
        return -1;
    }
    if (value == NULL) { /* a backend's option takes a value: so this is none */
        snprintf(why, len, "unknown option '--%.*s' (see collprof --help)", (int)nl, name);
        return -1;
    }
    if (nl + strlen(value) + 1 >= 256 || opt->nbackend_opts >= 32) {
        snprintf(why, len, "--%.*s: too long (or over 32 backend options)", (int)nl, name);
        return -1;
    }
    opt->backend_opt_long[opt->nbackend_opts] = 1;
    snprintf(opt->backend_opts[opt->nbackend_opts++], 256, "%.*s=%s", (int)nl, name, value);
    return 0;
}

/* --sweep-sizes SMALL,LARGE */
static int h_sweep_sizes(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                         size_t len)
{
    char buf[128], *comma;
    uint64_t *v = st->opt->sweep_bytes;
    (void)o;
    snprintf(buf, sizeof(buf), "%s", arg);
    comma = strchr(buf, ',');
    if (comma == NULL) {
        snprintf(why, len, "--sweep-sizes: '%s' is not SMALL,LARGE (e.g. 8,4M)", arg);
        return -1;
    }
    *comma = '\0';
    if (cp_parse_size(buf, &v[0], why, len) != 0 ||
        cp_parse_size(comma + 1, &v[1], why, len) != 0) {
        return -1;
    }
    if (v[0] % 4 != 0 || v[1] % 4 != 0 || v[0] >= v[1]) {
        snprintf(why, len,
                 "--sweep-sizes: '%s': both sizes must be multiples of 4 bytes (float32) and "
                 "SMALL below LARGE",
                 arg);
        return -1;
    }
    return 0;
}

#define SECTION(title)                                                                             \
    {                                                                                              \
        NULL, 0, NULL, NULL, NULL, 0, 0, title                                                     \
    }
#define NOTE(text)                                                                                 \
    {                                                                                              \
        "", 0, NULL, NULL, NULL, 0, 0, text                                                        \
    }
#define SPEC(name, s, arg, key, help)                                                              \
    {                                                                                              \
        name, s, arg, h_spec, key, 0, 0, help                                                      \
    }

static const cli_opt_t cli_opts[] = {
    SECTION("Launching (ranks bootstrap through PMIx):"),
    {"np", 0, "N", h_int, "--np 1 1024", OPT_FIELD(np),
     "self-launch N local ranks (embedded PMIx server)"},
    {"launcher", 0, "MODE", h_launcher, NULL, 0, 0, "embedded (default) or mpirun, for --np"},
    NOTE("(or run under: mpirun -np N collprof ... | srun --mpi=pmix -n N collprof ...)"),
    SECTION("The matrix (each list is comma-separated; 'all' selects everything):"),
    SPEC("backends", 0, "LIST", "backends", "backends to run (default: all that load)"),
    SPEC("variants", 0, "LIST", "variants", "variants, e.g. default,ring (default: all)"),
    SPEC("ops", 0, "LIST", "ops", NULL),
    {"counts", 0, "LIST", h_counts, "counts", 0, 0,
     "element counts, K/M/G suffixes (default: 1M,4M,16M)"},
    {"minbytes", 'b', "SIZE", h_sweep_bound, NULL, 0, 0,
     "byte sweep start, as in nccl-tests (replaces --counts)"},
    {"maxbytes", 'e', "SIZE", h_sweep_bound, NULL, 0, 0, "byte sweep end"},
    {"stepfactor", 'f', "F", h_sweep_factor, NULL, 0, 0, "byte sweep multiplier (default: 2)"},
    SPEC("dtype", 'd', "LIST", "dtypes", NULL),
    SPEC("redop", 'o', "LIST", "redops", NULL),
    SPEC("root", 'r', "N", "root", "root rank of rooted operations (default: 0)"),
    SPEC("inplace", 0, "MODE", "inplace", "out, in or both (default: out)"),
    SPEC("imbalance", 0, "LIST", "imbalance",
         "alltoallv traffic; allgatherv, gatherv, scatterv block\n"
         "sizes: uniform, linear, spread:S, moe[:HOT[:BIAS]],\n"
         "file:PATH (default: uniform)"),
    SPEC("mem", 0, "LIST", "mem",
         "buffer memory: host, pinned, device, or auto (default:\n"
         "auto, the backend's own: host where it offers host\n"
         "memory, else its first kind, e.g. device)"),
    {"matrix", 0, "FILE", h_string, NULL, OPT_FIELD(matrix_file),
     "read the matrix from FILE (see collprof(1))"},
    SECTION("Measurement:"),
    SPEC("iters", 'n', "N", "iters", "timed iterations per cell (default: 20)"),
    SPEC("warmup", 'w', "N", "warmup", "warm-up iterations per cell (default: 5)"),
    {"check", 'c', "MODE", h_check, NULL, 0, 0,
     "which results are verified exactly (the warm-up never):\n"
     "last: one extra run after the timed loop, not the timed\n"
     "iterations' own outputs; every: each timed iteration's\n"
     "output (fresh inputs before each, the fill and check\n"
     "not timed); sample:K: timed iterations K, 2K, ... and\n"
     "the last; 0: none; 1: the default (default: last)"},
    {"sync", 0, "MODE", h_sync, NULL, 0, 0,
     "barrier: a barrier (not timed) before each operation;\n"
     "none: operations back to back; batch[:N]: a barrier,\n"
     "then N operations timed together, divided by N, each\n"
     "sample (nccl-tests' way; N default 20)\n"
     "(default: barrier)"},
    {"alloc", 0, "KIND", h_alloc, NULL, 0, 0,
     "host buffers: malloc (the backend's own), mmap, or\n"
     "hugepages (MAP_HUGETLB, else transparent huge pages)\n"
     "(default: malloc)"},
    {"rotate-buffers", 0, "N", h_int, "--rotate-buffers 1 1024", OPT_FIELD(rotate),
     "cycle operations through N copies of the buffers, so\n"
     "that one does not find the last one's data in cache\n"
     "(default: 1, the same buffers every time)"},
    {"timeout", 0, "SECONDS", h_timeout, NULL, 0, 0,
     "watchdog: longest one operation (or any other step) may\n"
     "take before the run stops with a report of the ranks\n"
     "that did not arrive (default: 60 s + 1 s per 10 MB of\n"
     "the cell's largest buffer; 0: no watchdog)"},
    {"repeats", 0, "R", h_int, "--repeats 1 1000", OPT_FIELD(repeats),
     "run each cell R times, each on fresh communicators, and\n"
     "report the median of the repeats' p50s with its 95 %\n"
     "interval (from 6 repeats) and bimodal cells (default: 1)"},
    {"fresh-buffers", 0, NULL, h_flag, NULL, OPT_FIELD(fresh_buffers),
     "with repeats: new buffers for every repeat too (default:\n"
     "the cell's buffers, where its backend can share them)"},
    {"min-time", 0, "SECONDS", h_adaptive, NULL, OPT_FIELD(min_time_s),
     "repeat each cell until its repeats took SECONDS"},
    {"target-ci", 0, "PCT", h_adaptive, NULL, OPT_FIELD(target_ci_pct),
     "repeat each cell until its 95 % interval is at most PCT\n"
     "percent of the median wide (6 repeats or more)"},
    {"max-time", 0, "SECONDS", h_adaptive, NULL, OPT_FIELD(max_time_s),
     "start no further repeat of a cell after SECONDS in it\n"
     "(default: none; 60, or --min-time if longer, with\n"
     "--min-time or --target-ci)"},
    {"link-sweep", 0, NULL, h_flag, NULL, OPT_FIELD(link_sweep),
     "measure every pair of nodes instead of the matrix:\n"
     "node x node bandwidth and latency (see collprof(1))"},
    {"screen", 0, NULL, h_flag, NULL, OPT_FIELD(screen),
     "find the bad nodes and links: random pairings of the\n"
     "nodes, each pair judged against the median of all (of\n"
     "its path class, same-switch or cross-switch, under a\n"
     "Slurm tree topology), suspects confirmed with another\n"
     "partner (collprof(1)); exit status 0 healthy, 1 flagged,\n"
     "2 inconclusive"},
    {"screen-rounds", 0, "R", h_int, "--screen-rounds 1 64", OPT_FIELD(screen_rounds),
     "random rounds of the screen before its confirmation\n"
     "round (default: 3)"},
    {"screen-threshold", 0, "X", h_screen_thr, NULL, 0, 0,
     "a pair is slow below X times the reference (default:\n"
     "0.8; a noisy cluster may want less)"},
    {"screen-validate", 0, "on|off", h_screen_validate, NULL, 0, 0,
     "after the rounds, one allreduce of the healthy nodes,\n"
     "halved in parallel when it fails (default: on)"},
    {"baseline", 0, "FILE", h_string, NULL, OPT_FIELD(baseline),
     "judge the screen against a baseline (collprof-report\n"
     "baseline) instead of its own median: each pair against\n"
     "its path class's row, else the \"any\" row"},
    {"seed", 0, "N", h_int, "--seed 1 2147483647", OPT_FIELD(seed),
     "the screen's pairings (default: drawn, printed and\n"
     "recorded, so that a run can be repeated)"},
    {"split", 0, "LIST", h_split, NULL, 0, 0,
     "also run each cell on node (the ranks of each node) and\n"
     "cross (one rank per node) groups, every group at once\n"
     "(nccl-tests' split communicators; default: none)"},
    {"sweep-sizes", 0, "S,L", h_sweep_sizes, NULL, 0, 0,
     "link sweep messages: latency at S, bandwidth at L\n"
     "bytes (default: 8,4M)"},
    {"backend-opt", 'B', "K=V", h_backend_opt, NULL, 0, 0,
     "option for a backend plugin (the last one of a key wins)"},
    NOTE("(a backend's options marked --NAME in --help-backend also take --NAME VALUE)"),
    {"link-gbps", 0, "X", h_link_gbps, NULL, 0, 0,
     "link rate in Gbit/s for 'BusBW as % of link rate' when\n"
     "the provider reports none (recorded with the run)"},
    SECTION("Output:"),
    {"output-dir", 0, "DIR", h_string, NULL, OPT_FIELD(output_dir),
     "where the summary goes (default: $SLURM_SUBMIT_DIR\n"
     "under Slurm, else the current directory)"},
    {"tag", 0, "TEXT", h_text, NULL, OPT_FIELD(tag), "label recorded in the summary"},
    {"log-dir", 0, "DIR", h_string, NULL, OPT_FIELD(log_dir),
     "also write one log per rank to DIR: every step with an\n"
     "ISO-8601 timestamp, whatever -v says (default: none)"},
    {"list", 0, NULL, h_flag, NULL, OPT_FIELD(list),
     "list backends, operations, dtypes, variants, options"},
    {"help-backend", 0, "NAME", h_string, NULL, OPT_FIELD(help_backend),
     "a backend's operations, variants and options, in full"},
    {"dry-run", 0, NULL, h_flag, NULL, OPT_FIELD(dry_run),
     "print the plan and exit without communicating"},
    {"verbose", 'v', NULL, h_more, NULL, OPT_FIELD(verbose),
     "timestamped per-rank progress (twice: debug)"},
    {"help", 'h', NULL, h_flag, NULL, OPT_FIELD(help), "this help"},
    {"version", 'V', NULL, h_flag, NULL, OPT_FIELD(version), "version"},
};

#define N_CLI_OPTS (sizeof(cli_opts) / sizeof(cli_opts[0]))
/* getopt_long's value for a long-only option: OPT_LONG + its row */
#define OPT_LONG 256

/* Width of the help text of an option's vocabulary list. */
#define NAMES_WIDTH 54

/* Membership in the default spec, for the "(default: ...)" of a vocabulary. */
static cp_spec_t default_spec;
static int names_which;

static int keep_default(int i)
{
    const int *v = names_which == NAMES_DTYPES ? default_spec.dtypes : default_spec.redops;
    int n = names_which == NAMES_DTYPES ? default_spec.ndtypes : default_spec.nredops;
    for (int k = 0; k < n; k++) {
        if (v[k] == i) {
            return 1;
        }
    }
    return 0;
}

/* "a,b,c,...\n... (default: x)": a vocabulary's names wrapped at NAMES_WIDTH. */
static void names_help(int which, char *buf, size_t len)
{
    char all[1024], dflt[512], *save = NULL;
    size_t line = 0;
    spec_defaults(&default_spec);
    names_which = which;
    join_names(which, keep_any, ",", all, sizeof(all));
    join_names(which, which == NAMES_OPS ? keep_default_op : keep_default, ",", dflt, sizeof(dflt));
    buf[0] = '\0';
    for (char *tok = strtok_r(all, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        size_t o = strlen(buf), w = strlen(tok) + (save != NULL && *save != '\0');
        if (line > 0 && line + w > NAMES_WIDTH) {
            snprintf(buf + o, len - o, "\n");
            o++;
            line = 0;
        }
        snprintf(buf + o, len - o, "%s%s", tok, w > strlen(tok) ? "," : "");
        line += w;
    }
    size_t o = strlen(buf);
    int fits = line + strlen(dflt) + 11 <= NAMES_WIDTH; /* " (default: " + ")" */
    snprintf(buf + o, len - o, "%s(default: %s)", fits ? " " : "\n", dflt);
    if (which == NAMES_OPS) {
        o = strlen(buf);
        snprintf(buf + o, len - o, "\nall: every blocking op; nonblocking: the i ones");
    }
}

/* One option's --help entry: "  -x, --name ARG" padded to the text column. */
static void usage_option(FILE *f, const cli_opt_t *o)
{
    char left[64], names[2048];
    int n = 0;
    if (o->short_name != 0) {
        n = snprintf(left, sizeof(left), "-%c, ", o->short_name);
    }
    snprintf(left + n, sizeof(left) - (size_t)n, "--%s%s%s", o->name, o->arg ? " " : "",
             o->arg ? o->arg : "");
    const char *text = o->help;
    if (text == NULL) {
        names_help(!strcmp(o->key, "ops")      ? NAMES_OPS
                   : !strcmp(o->key, "dtypes") ? NAMES_DTYPES
                                               : NAMES_REDOPS,
                   names, sizeof(names));
        text = names;
    }
    size_t first = strcspn(text, "\n");
    fprintf(f, "  %-22s %.*s\n", left, (int)first, text);
    for (text += first; *text == '\n'; text += first) {
        text++;
        first = strcspn(text, "\n");
        fprintf(f, "%25s%.*s\n", "", (int)first, text);
    }
}

void cp_cli_usage(FILE *f)
{
    fputs("Usage: collprof [OPTIONS]\n"
          "Profile collective communication on every backend that loads, check results\n"
          "exactly (by default one extra run per cell after its timed loop: --check), print\n"
          "an nccl-tests-style table and write a timestamped text summary.\n",
          f);
    for (size_t i = 0; i < N_CLI_OPTS; i++) {
        if (cli_opts[i].name == NULL) {
            fprintf(f, "\n%s\n", cli_opts[i].help);
        } else if (cli_opts[i].handle == NULL) {
            fprintf(f, "  %s\n", cli_opts[i].help);
        } else {
            usage_option(f, &cli_opts[i]);
        }
    }
    fputs("\n"
          "Exit status: 0 success, 1 a wrong result or a failed operation, 2 bad input,\n"
          "124 an operation timed out, 128+N stopped by signal N (results so far kept).\n"
          "See collprof(1) for details.\n",
          f);
}

/* getopt_long's tables from cli_opts; longs has N_CLI_OPTS + 1 entries. */
static void getopt_tables(struct option *longs, char *shorts)
{
    size_t k = 0, s = 0;
    shorts[s++] = ':';
    for (size_t i = 0; i < N_CLI_OPTS; i++) {
        const cli_opt_t *o = &cli_opts[i];
        if (o->handle == NULL) {
            continue;
        }
        int has_arg = o->arg != NULL ? required_argument : no_argument;
        longs[k++] = (struct option){o->name, has_arg, NULL,
                                     o->short_name ? o->short_name : OPT_LONG + (int)i};
        if (o->short_name != 0) {
            shorts[s++] = (char)o->short_name;
            if (has_arg) {
                shorts[s++] = ':';
            }
        }
    }
    longs[k] = (struct option){NULL, 0, NULL, 0};
    shorts[s] = '\0';
}

/* The row getopt_long's return value c names; NULL for ':' and '?'. */
static const cli_opt_t *find_opt(int c)
{
    if (c >= OPT_LONG && c < OPT_LONG + (int)N_CLI_OPTS) {
        return &cli_opts[c - OPT_LONG];
    }
    for (size_t i = 0; i < N_CLI_OPTS; i++) {
        if (cli_opts[i].handle != NULL && cli_opts[i].short_name == c) {
            return &cli_opts[i];
        }
    }
    return NULL;
}

/*
 * --link-sweep: the spec becomes its own (sendrecv of float32 at the two
 * sizes, out of place, the default variant); the backends, memory,
 * iterations and warm-up given stay.
 */
static int sweep_spec(cli_state_t *st, char *err, size_t errlen)
{
    cp_options_t *opt = st->opt;
    cp_spec_t *s = &st->base;
    if (opt->matrix_file[0] != '\0' || st->have_counts || st->have_sweep) {
        snprintf(err, errlen,
                 "%s sets its own sizes (--sweep-sizes): it takes no "
                 "--matrix, --counts or -b/-e/-f",
                 opt->screen ? "--screen" : "--link-sweep");
        return -1;
    }
    s->ops[0] = COLLPROF_OP_SENDRECV;
    s->nops = 1;
    s->dtypes[0] = COLLPROF_DTYPE_FLOAT32;
    s->ndtypes = 1;
    s->sizes[0] = opt->sweep_bytes[0];
    s->sizes[1] = opt->sweep_bytes[1];
    s->nsizes = 2;
    s->sizes_are_bytes = 1;
    s->inplace[0] = 0;
    s->ninplace = 1;
    snprintf(s->variants[0], sizeof(s->variants[0]), "default");
    s->nvariants = 1;
    return 0;
}

/* --screen runs as a link sweep of its own rounds; its options need it. */
static int screen_options(cp_options_t *opt, char *err, size_t errlen)
{
    if (opt->screen && opt->link_sweep) {
        snprintf(err, errlen,
                 "--screen and --link-sweep: choose one (the screen measures "
                 "a few random pairings, the sweep every pair)");
        return -1;
    }
    if (!opt->screen && (opt->screen_rounds != 0 || opt->seed != 0 || opt->screen_thr > 0 ||
                         opt->baseline[0] != '\0' || opt->screen_validate != 0)) {
        snprintf(err, errlen,
                 "--screen-rounds, --screen-threshold, --screen-validate, --seed and "
                 "--baseline shape the screen: add --screen");
        return -1;
    }
    if (opt->screen) {
        opt->link_sweep = 1;
        opt->screen_rounds = opt->screen_rounds ? opt->screen_rounds : 3;
        opt->screen_thr = opt->screen_thr > 0 ? opt->screen_thr : 0.8;
        opt->screen_validate = opt->screen_validate >= 0;
    }
    return 0;
}

/* After the options: the link sweep's spec, the byte sweep, then the matrix file or the one
 * spec. */
static int finish_specs(cli_state_t *st, char *err, size_t errlen)
{
    cp_options_t *opt = st->opt;
    if (screen_options(opt, err, errlen) != 0) {
        return -1;
    }
    if (opt->link_sweep && sweep_spec(st, err, errlen) != 0) {
        return -1;
    }
    if (opt->link_sweep && opt->split != 0) {
        snprintf(err, errlen, "%s measures pairs of nodes: it takes no --split",
                 opt->screen ? "--screen" : "--link-sweep");
        return -1;
    }
    if (st->have_counts && st->have_sweep) {
        snprintf(err, errlen, "use either --counts or -b/-e/-f, not both");
        return -1;
    }
    if (st->have_sweep) {
        if (st->minb == 0) {
            st->minb = st->maxb ? st->maxb : UINT64_C(32) << 20;
        }
        if (st->maxb == 0) {
            st->maxb = st->minb;
        }
        if (build_sweep(&st->base, st->minb, st->maxb, st->factor, err, errlen) != 0) {
            return -1;
        }
    }
    if (opt->matrix_file[0] != '\0') {
        if (cp_matrix_load(opt->matrix_file, &st->base, opt, err, errlen) != 0) {
            return -1;
        }
        spec_free(&st->base);
        return 0;
    }
    opt->specs = malloc(sizeof(cp_spec_t));
    if (opt->specs == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    opt->specs[0] = st->base; /* takes ownership of base's file weights */
    st->base.nimb = 0;
    opt->nspecs = 1;
    return 0;
}

/*
 * err = why, naming option o as the user spelled it (--counts, or -b (--minbytes)): a
 * reason that starts with another name of it ("counts:", "-f:") gets this
 * one instead, any other gets it in front.
 */
static void name_option(const char *spelled, const cli_opt_t *o, const char *why, char *err,
                        size_t errlen)
{
    static const char *labels[] = {"counts", "bytes",     "iters",       "warmup",
                                   "root",   "backends",  "variants",    "operation",
                                   "dtype",  "reduction", "memory type", NULL};
    char name[96];
    if (o->short_name != 0 && strncmp(spelled, "--", 2) != 0) {
        snprintf(name, sizeof(name), "-%c (--%s)", o->short_name, o->name);
    } else {
        snprintf(name, sizeof(name), "--%s", o->name);
    }
    size_t nl = strcspn(name, " ");
    if (!strncmp(why, name, nl) && (why[nl] == ':' || why[nl] == ' ' || why[nl] == '\0')) {
        snprintf(err, errlen, "%s", why);
        return;
    }
    const char *colon = strstr(why, ": ");
    size_t ll = colon ? (size_t)(colon - why) : 0;
    int relabel = colon != NULL && why[0] == '-' && memchr(why, ' ', ll) == NULL;
    for (int i = 0; colon != NULL && labels[i] != NULL; i++) {
        relabel |= ll == strlen(labels[i]) && !strncmp(why, labels[i], ll);
    }
    snprintf(err, errlen, "%s: %s", name, relabel ? colon + 2 : why);
}

int cp_cli_parse(int argc, char **argv, cp_options_t *opt, char *err, size_t errlen)
{
    struct option longs[N_CLI_OPTS + 1];
    char shorts[2 * N_CLI_OPTS + 2];
    cli_state_t st = {.opt = opt, .factor = 2};

    memset(opt, 0, sizeof(*opt));
    opt->check = 1;
    opt->check_mode = CP_CHECK_DEFAULT;
    opt->check_k = CP_CHECK_DEFAULT_K;
    opt->sync_barrier = 1;
    opt->sync = CP_SYNC_BARRIER;
    opt->batch = 1;
    opt->rotate = 1;
    opt->timeout_s = -1; /* derived per cell */
    opt->sweep_bytes[0] = 8;
    opt->sweep_bytes[1] = UINT64_C(4) << 20;
    spec_defaults(&st.base);
    getopt_tables(longs, shorts);
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const cli_opt_t *o = find_opt(c);
        st.spelled = argv[optind - 1];
        if (optarg != NULL && optarg == argv[optind - 1] && optind >= 2) {
            st.spelled = argv[optind - 2]; /* "--opt VALUE": the option is the word before */
        }
        if (c == ':') {
            snprintf(err, errlen, "option '%s' needs a value", st.spelled);
            goto fail;
        }
        char why[1024] = "";
        if (o == NULL) {
            int used = 0;
            if (defer_long(&st, optind < argc ? argv[optind] : NULL, &used, why, sizeof(why))) {
                snprintf(err, errlen, "%s", why);
                goto fail;
            }
            optind += used;
            continue;
        }
        if (o->handle(&st, o, optarg, why, sizeof(why)) != 0) {
            name_option(st.spelled, o, why, err, errlen);
            goto fail;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s' (see collprof --help)", argv[optind]);
        goto fail;
    }
    if (check_check(opt, err, errlen) != 0) {
        goto fail;
    }
    if (check_repeats(opt, err, errlen) != 0 || finish_specs(&st, err, errlen) != 0) {
        goto fail;
    }
    if (opt->launch_mode == CP_LAUNCH_MPIRUN && opt->np == 0) {
        snprintf(err, errlen, "--launcher says how --np starts its ranks: give --np N with it");
        goto fail;
    }
    return 0;
fail:
    spec_free(&st.base);
    cp_cli_free(opt);
    return -1;
}

void cp_cli_free(cp_options_t *opt)
{
    for (int i = 0; i < opt->nspecs; i++) {
        spec_free(&opt->specs[i]);
    }
    free(opt->specs);
    opt->specs = NULL;
    opt->nspecs = 0;
}
