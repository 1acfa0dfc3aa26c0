/*
 * Backend options: -B NAME=VALUE, and --NAME VALUE for the options a
 * backend declares COLLPROF_OPTF_LONG.  The backends declare them
 * (collprof_backend_t.options); the core checks every one given against
 * those declarations before any rank starts, answers the plugins'
 * get_option() and reports each backend's effective values.
 */
#ifndef COLLPROF_CORE_BOPTS_H
#define COLLPROF_CORE_BOPTS_H

#include <stddef.h>
#include <stdio.h>

#include "cli/cli.h"
#include "plugin/loader.h"

/**
 * Check every backend option of opt against the declarations of the
 * plugins (those loaded, else every plugin found): 0, or -1 with a
 * one-line message (the caller exits 2).
 */
int cp_bopts_check(const cp_options_t *opt, const cp_plugin_t *plugins, int n, char *err,
                   size_t len);

/** Is v a value of option o?  0, or -1 with why. */
int cp_bopt_value_ok(const collprof_option_t *o, const char *v, char *why, size_t len);

/** The declaration of key by be, or NULL. */
const collprof_option_t *cp_bopt_find(const collprof_backend_t *be, const char *key);

/** The value the user gave key (the last one wins), or NULL. */
const char *cp_bopts_given(const cp_options_t *opt, const char *key);

/**
 * be's effective options, "NAME=VALUE NAME=VALUE (default) ..." (a default
 * is marked, one that the library chooses reads NAME=auto); "" when be
 * declares none.
 */
void cp_bopts_effective(const cp_options_t *opt, const collprof_backend_t *be, char *buf,
                        size_t len);

/** --help-backend: the options of be, one per line with type, range and default. */
void cp_bopts_print(FILE *f, const collprof_backend_t *be);

#endif /* COLLPROF_CORE_BOPTS_H */
