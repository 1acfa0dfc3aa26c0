/*
 * What the option parser's files share (cli.h): spec.c (the matrix keys' table, a spec's
 * defaults, the value parsers shared with matrix files, the matrix-file loader),
 * cli_handlers.c (each option's handler), cli_help.c (--help) and cli.c (the option table
 * that drives getopt_long, the parsing and --help).
 * Internal to src/cli.
 */
#ifndef COLLPROF_CORE_CLI_INT_H
#define COLLPROF_CORE_CLI_INT_H

#include "cli/cli.h"

#include <stddef.h>
#include <stdint.h>

/* The vocabularies whose names the command line takes. */
enum { NAMES_OPS, NAMES_DTYPES, NAMES_REDOPS, NAMES_MEMS };

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
    const char *dflt;     /* the default, an argument the handler takes before argv's (and
                           * --help says); NULL: none, or a matrix key's (spec.c) */
};

#define OPT_FIELD(f) offsetof(cp_options_t, f), sizeof(((cp_options_t *)0)->f)

/* cli.c: the option table (cli_nopts rows), which drives getopt_long, the parse and --help */
extern const cli_opt_t cli_opts[];
extern const size_t cli_nopts;

/* spec.c */
int cli_build_sweep(cp_spec_t *s, uint64_t minb, uint64_t maxb, long factor, char *err,
                    size_t errlen);
const char *cli_join_names(int which, int (*keep)(int), const char *sep, char *buf, size_t len);
int cli_keep_any(int i);
int cli_keep_default_op(int op);
int cli_parse_count_opt(const char *what, const char *value, long lo, long hi, int *out, char *err,
                        size_t errlen);
void cp_spec_defaults(cp_spec_t *s);
/* The default of matrix key key, as its value ("20", "1M,4M,16M"); NULL: none, or no such key. */
const char *cp_spec_default(const char *key);
void cp_spec_free(cp_spec_t *s);
int cli_split(const char *what, const char *value, char *scratch, size_t len, char **tok, int max,
              char *err, size_t errlen);

/* cli_handlers.c */
int cli_h_spec(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_check_check(const cp_options_t *opt, char *err, size_t errlen);
int cli_check_repeats(cp_options_t *opt, char *err, size_t errlen);
int cli_defer_long(cli_state_t *st, const char *next, int *used, char *why, size_t len);
int cli_h_adaptive(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_alloc(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_backend_opt(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_check(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_counts(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_variants(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_flag(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_int(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_real(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_launcher(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_link_gbps(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_more(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_screen_thr(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_screen_validate(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why,
                          size_t len);
int cli_h_split(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_string(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_sweep_bound(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_sweep_factor(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_sweep_sizes(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_counters(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_sync(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_text(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);
int cli_h_timeout(cli_state_t *st, const cli_opt_t *o, const char *arg, char *why, size_t len);

#endif
