/*
 * collprof --list and --help-backend NAME: every backend that loads, with
 * its library, operations, dtypes, reductions, memory kinds, link rate,
 * variants and options (their names; with --help-backend, each with its
 * range, default and help).
 */
#include "config.h"

#include "run/listing.h"

#include "cli/bopts.h"
#include "base/log.h"
#include "plugin/loader.h"
#include "run/exit.h"

#include <stdio.h>
#include <string.h>

/* --list: the names; --help-backend: each with its range, default and help */
static void print_options(const collprof_backend_t *be, int full)
{
    if (full) {
        cp_bopts_print(stdout, be);
        return;
    }
    printf("  options:   ");
    for (size_t i = 0; i < be->noptions; i++) {
        printf(" %s%s", be->options[i].flags & COLLPROF_OPTF_LONG ? "--" : "", be->options[i].name);
    }
    printf("%s\n", be->noptions ? "  (collprof --help-backend NAME)" : " none");
}

static void print_list(const cp_plugin_t *plugins, int n, int full)
{
    printf("collprof %s backends (plugins from %s):\n", PACKAGE_VERSION, cp_plugins_search_path());
    if (n == 0) {
        printf("  none found: build them, or set COLLPROF_PLUGIN_PATH to their directory\n");
    }
    for (int i = 0; i < n; i++) {
        const cp_plugin_t *p = &plugins[i];
        if (!p->usable) {
            printf("\n%s: NOT AVAILABLE: %s\n", p->name, p->error);
            continue;
        }
        printf("\n%s %s: %s\n", p->name, p->be->version, p->be->description);
        printf("  library:    %s\n", p->caps.library_version ? p->caps.library_version : "?");
        printf("  operations:");
        for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
            if (p->caps.ops & COLLPROF_BIT(op)) {
                printf(" %s", collprof_op_name(op));
            }
        }
        printf("\n  dtypes:    ");
        for (int t = 0; t < COLLPROF_DTYPE_COUNT; t++) {
            if (p->caps.dtypes & COLLPROF_BIT(t)) {
                printf(" %s", collprof_dtype_info((collprof_dtype_t)t)->name);
            }
        }
        printf("\n  reductions:");
        for (int r = 0; r < COLLPROF_REDOP_COUNT; r++) {
            if (p->caps.redops & COLLPROF_BIT(r)) {
                printf(" %s", collprof_redop_name((collprof_redop_t)r));
            }
        }
        printf("\n  memory:    ");
        for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
            if (p->caps.memtypes & COLLPROF_BIT(m)) {
                printf(" %s", collprof_memtype_name(m));
            }
        }
        if (p->caps.link_gbps > 0) {
            printf("\n  link:        %g Gbit/s (reported by the transport)", p->caps.link_gbps);
        } else {
            printf("\n  link:        not reported (give --link-gbps X for %%-of-link figures)");
        }
        printf("\n  variants:\n    %-24s %s\n", "default", "the library's own choice");
        for (size_t v = 0; v < p->caps.nvariants; v++) {
            const collprof_variant_t *var = &p->caps.variants[v];
            char ops[256] = "";
            for (int op = 0; op < COLLPROF_OP_COUNT; op++) {
                if (var->ops & COLLPROF_BIT(op)) {
                    strncat(ops, ops[0] ? "," : "", sizeof(ops) - strlen(ops) - 1);
                    strncat(ops, collprof_op_name(op), sizeof(ops) - strlen(ops) - 1);
                }
            }
            printf("    %-24s [%s] %s\n", var->name, ops, var->description);
        }
        print_options(p->be, full);
    }
}

/* --list, or --help-backend NAME */
int cp_listing_run(const cp_options_t *opt)
{
    cp_plugin_t *plugins = NULL;
    int n = 0, full = opt->help_backend[0] != '\0';
    char only[1][64];
    snprintf(only[0], sizeof(only[0]), "%s", opt->help_backend);
    cp_log_setup(-1, 0, NULL, opt->verbose);
    if (cp_plugins_load(full ? only : NULL, full, &plugins, &n) != 0) {
        return CP_EXIT_FAILED;
    }
    int rc = CP_EXIT_OK;
    if (full && (n != 1 || plugins[0].be == NULL)) {
        char avail[1024], msg[2048];
        cp_plugins_available(avail, sizeof(avail));
        snprintf(msg, sizeof(msg), "--help-backend: no backend '%s' loads (%s; found: %s)",
                 opt->help_backend, n == 1 ? plugins[0].error : "not found",
                 avail[0] ? avail : "none");
        cp_error_line("collprof", msg);
        rc = CP_EXIT_USAGE;
    } else {
        print_list(plugins, n, full);
    }
    cp_plugins_unload(plugins, n);
    return rc;
}
