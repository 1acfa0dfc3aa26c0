#include "config.h"

/*
 * collprof --help (cli.h, cli_int.h): every row of the option table, a vocabulary's names
 * wrapped with its default, a matrix key's default from its row in spec.c.
 */

#include "cli/cli_int.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/split.h"
#include "base/util.h"

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    cp_spec_defaults(&default_spec);
    names_which = which;
    cli_join_names(which, cli_keep_any, ",", all, sizeof(all));
    cli_join_names(which, which == NAMES_OPS ? cli_keep_default_op : keep_default, ",", dflt,
                   sizeof(dflt));
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
    const char *text = o->help, *dflt = o->dflt;
    char with[1024];
    if (dflt == NULL && o->key != NULL) {
        dflt = cp_spec_default(o->key); /* a matrix key's, from its row in spec.c */
    }
    if (text != NULL && dflt != NULL && strstr(text, "(default") == NULL) {
        const char *last = strrchr(text, '\n');
        size_t tail = strlen(last != NULL ? last + 1 : text) + strlen(dflt) + 12;
        snprintf(with, sizeof(with), "%s%s(default: %s)", text, tail > NAMES_WIDTH ? "\n" : " ",
                 dflt);
        text = with;
    }
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
    for (size_t i = 0; i < cli_nopts; i++) {
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
