/* Backend options: checked against the plugins' declarations (see bopts.h). */
#include "cli/bopts.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

const collprof_option_t *cp_bopt_find(const collprof_backend_t *be, const char *key)
{
    for (size_t i = 0; be != NULL && i < be->noptions; i++) {
        if (!strcmp(be->options[i].name, key)) {
            return &be->options[i];
        }
    }
    return NULL;
}

/* Is v one of the comma-separated choices? */
static int is_choice(const char *choices, const char *v)
{
    size_t vl = strlen(v);
    for (const char *c = choices; c != NULL && *c != '\0';) {
        size_t cl = strcspn(c, ",");
        if (cl == vl && !strncmp(c, v, vl)) {
            return 1;
        }
        c += cl + (c[cl] == ',');
    }
    return 0;
}

int cp_bopt_value_ok(const collprof_option_t *o, const char *v, char *why, size_t len)
{
    long v_int;
    if (v[0] == '\0') {
        snprintf(why, len, "%s: the value is empty", o->name);
        return -1;
    }
    if (o->type == COLLPROF_OPT_INT && cp_parse_int(v, (long)o->min, (long)o->max, &v_int) != 0) {
        snprintf(why, len, "%s=%s: expected a whole number in %lld..%lld", o->name, v, o->min,
                 o->max);
        return -1;
    }
    if (o->type == COLLPROF_OPT_CHOICE && !is_choice(o->choices, v)) {
        snprintf(why, len, "%s=%s: expected one of %s", o->name, v, o->choices);
        return -1;
    }
    return 0;
}

const char *cp_bopts_given(const cp_options_t *opt, const char *key)
{
    size_t kl = strlen(key);
    for (int i = opt->nbackend_opts - 1; i >= 0; i--) { /* the last one wins */
        if (!strncmp(opt->backend_opts[i], key, kl) && opt->backend_opts[i][kl] == '=') {
            return opt->backend_opts[i] + kl + 1;
        }
    }
    return NULL;
}

/* Check "key=value" (spelled --key when is_long) against plugins[0..n): 1 when some
 * plugin declares it, 0 when none does, -1 with err when a declaration refuses the value. */
static int check_one(const char *kv, int is_long, const cp_plugin_t *plugins, int n, char *err,
                     size_t len)
{
    char key[256];
    size_t kl = strcspn(kv, "=");
    snprintf(key, sizeof(key), "%.*s", (int)kl, kv);
    int found = 0;
    for (int i = 0; i < n; i++) {
        const collprof_option_t *o = cp_bopt_find(plugins[i].be, key);
        if (o == NULL || (is_long && !(o->flags & COLLPROF_OPTF_LONG))) {
            continue;
        }
        char why[512];
        if (cp_bopt_value_ok(o, kv + kl + 1, why, sizeof(why)) != 0) {
            snprintf(err, len, "%s%s (backend %s; see collprof --help-backend %s)",
                     is_long ? "--" : "-B ", why, plugins[i].name, plugins[i].name);
            return -1;
        }
        found = 1;
    }
    return found;
}

/* Every plugin found, for an option the selected ones do not declare. */
static int check_all(const char *kv, int is_long, char *err, size_t len)
{
    cp_plugin_t *all = NULL;
    int nall = 0;
    if (cp_plugins_load(NULL, 0, &all, &nall) != 0) {
        snprintf(err, len, "out of memory loading plugins");
        return -1;
    }
    int rc = check_one(kv, is_long, all, nall, err, len);
    cp_plugins_unload(all, nall);
    return rc;
}

int cp_bopts_check(const cp_options_t *opt, const cp_plugin_t *plugins, int n, char *err,
                   size_t len)
{
    for (int i = 0; i < opt->nbackend_opts; i++) {
        const char *kv = opt->backend_opts[i];
        int is_long = opt->backend_opt_long[i];
        int rc = check_one(kv, is_long, plugins, n, err, len);
        if (rc == 0) {
            rc = check_all(kv, is_long, err, len);
        }
        if (rc < 0) {
            return -1;
        }
        if (rc == 0 && is_long) {
            snprintf(err, len, "unknown option '--%.*s' (see collprof --help)",
                     (int)strcspn(kv, "="), kv);
            return -1;
        }
        if (rc == 0) {
            snprintf(err, len,
                     "-B %.*s: no backend takes this option (see collprof --list and "
                     "collprof --help-backend NAME)",
                     (int)strcspn(kv, "="), kv);
            return -1;
        }
    }
    return 0;
}

void cp_bopts_effective(const cp_options_t *opt, const collprof_backend_t *be, char *buf,
                        size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; be != NULL && i < be->noptions && used < len; i++) {
        const collprof_option_t *o = &be->options[i];
        const char *v = cp_bopts_given(opt, o->name);
        int n = snprintf(buf + used, len - used, "%s%s=%s%s", used ? " " : "", o->name,
                         v        ? v
                         : o->def ? o->def
                                  : "auto",
                         v ? "" : " (default)");
        used += n > 0 ? (size_t)n : 0;
    }
}

void cp_bopts_print(FILE *f, const collprof_backend_t *be)
{
    if (be->noptions == 0) {
        fprintf(f, "  options:    none\n");
        return;
    }
    fprintf(f, "  options (-B NAME=VALUE; those shown as --NAME also take --NAME VALUE):\n");
    for (size_t i = 0; i < be->noptions; i++) {
        const collprof_option_t *o = &be->options[i];
        char type[160];
        if (o->type == COLLPROF_OPT_INT) {
            snprintf(type, sizeof(type), "%lld..%lld", o->min, o->max);
        } else if (o->type == COLLPROF_OPT_CHOICE) {
            snprintf(type, sizeof(type), "one of %s", o->choices);
        } else {
            snprintf(type, sizeof(type), "text");
        }
        fprintf(f, "    %s%s=VALUE  (%s; default %s)\n      %s\n",
                o->flags & COLLPROF_OPTF_LONG ? "--" : "", o->name, type,
                o->def ? o->def : "chosen at run time", o->help);
    }
}
