#include "config.h"

/*
 * The options' handlers (cli_int.h): each parses its argument into cp_options_t, through
 * the spec's parsers where the option is a matrix key.
 */

#include "cli/cli_int.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/split.h"
#include "base/util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int *opt_int(cli_state_t *st, const cli_opt_t *o)
{
    return (int *)(void *)((char *)st->opt + o->off);
}

/* A matrix key: the same parser as a --matrix file line. */
int cli_h_spec(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    return cp_spec_set(&st->base, o->key, arg, why, len);
}

int cli_h_counts(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    st->have_counts = 1;
    return cli_h_spec(st, o, arg, why, len);
}

/* --variants: a matrix key; a replay runs the trace once per variant only when it is given. */
int cli_h_variants(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    st->opt->variants_given = 1;
    return cli_h_spec(st, o, arg, why, len);
}

int cli_h_sweep_bound(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    st->have_sweep = 1;
    return cp_parse_size(arg, o->short_name == 'b' ? &st->minb : &st->maxb, why, len);
}

int cli_h_sweep_factor(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_h_int(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char what[32];
    long lo, hi;
    if (sscanf(o->key, "%31s %ld %ld", what, &lo, &hi) != 3) {
        return -1;
    }
    return cli_parse_count_opt(what, arg, lo, hi, opt_int(st, o), why, len);
}

int cli_h_flag(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)arg;
    (void)why;
    (void)len;
    *opt_int(st, o) = 1;
    return 0;
}

int cli_h_more(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)arg;
    (void)why;
    (void)len;
    (*opt_int(st, o))++;
    return 0;
}

int cli_h_string(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_h_text(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char clean[1024];
    cp_text_sanitize(arg, clean, sizeof(clean));
    if (strcmp(clean, arg) != 0) {
        snprintf(why, len, "--%s: control characters or invalid UTF-8 in '%s'", o->name, clean);
        return -1;
    }
    return cli_h_string(st, o, arg, why, len);
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

/* A number in the range the row's key gives ("--NAME LO HI"), into the row's double field. */
int cli_h_real(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    char what[64];
    double lo, hi, v;
    if (sscanf(o->key, "%63s %lf %lf", what, &lo, &hi) != 3) {
        return -1;
    }
    if (parse_real(arg, 0, &v) != 0 || v < lo || v > hi) {
        snprintf(why, len, "%s: '%s' is not a number in %g..%g", what, arg, lo, hi);
        return -1;
    }
    *(double *)(void *)((char *)st->opt + o->off) = v;
    return 0;
}

int cli_h_timeout(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_h_adaptive(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_check_repeats(cp_options_t *opt, char *err, size_t errlen)
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

int cli_h_screen_thr(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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

int cli_h_screen_validate(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
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

int cli_h_link_gbps(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (parse_real(arg, 0, &st->opt->link_gbps) != 0) {
        snprintf(why, len, "--link-gbps: '%s' is not a number in (0, 1e6]", arg);
        return -1;
    }
    return 0;
}

int cli_h_sync(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (cp_sync_parse(arg, &st->opt->sync, &st->opt->batch, why, len) != 0) {
        return -1;
    }
    st->opt->sync_barrier = st->opt->sync != CP_SYNC_NONE;
    return 0;
}

int cli_h_check(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    if (cp_check_parse(arg, &st->opt->check_mode, &st->opt->check_k, why, len) != 0) {
        return -1;
    }
    st->opt->check = st->opt->check_mode != CP_CHECK_NONE;
    return 0;
}

/* --check every|sample:K check one operation per sample: not with --sync batch:N, N > 1. */
int cli_check_check(const cp_options_t *opt, char *err, size_t errlen)
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

int cli_h_counters(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
{
    (void)o;
    return cp_counters_parse(arg, &st->opt->counters, why, len);
}

int cli_h_alloc(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_h_split(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
int cli_h_launcher(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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

int cli_h_backend_opt(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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

int cli_defer_long(cli_state_t *st, const char *next, int *used, char *why, size_t len)
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
int cli_h_sweep_sizes(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len)
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
