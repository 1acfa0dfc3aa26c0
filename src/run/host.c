/*
 * The host table the plugins hold from init to finalize (collprof_host_t):
 * this rank's identity, logging, the out-of-band channel, and the option
 * policy behind get_option.
 */
#include "config.h"

#include "run/host.h"

#include "cli/bopts.h"
#include "base/log.h"
#include "runner/runner.h"
#include "base/timeouts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const cp_options_t *g_opt;
static const cp_plugin_t *g_plugins; /* the rank's, for the declared defaults */
static int g_nplugins;

/* The user's value (checked against the declarations), else the watchdog's
 * timeout, else the default a plugin declares. */
static const char *host_get_option(const char *key)
{
    const char *v = cp_bopts_given(g_opt, key);
    if (v != NULL) {
        return v;
    }
    /* the watchdog's (the cell's, else --timeout) plus a margin: the watchdog
     * must fire first, as it names the ranks that did not arrive; a library
     * that gave up at the same moment would send its ranks on to the next
     * step and the watchdog would see the hang there, a timeout later */
    if (!strcmp(key, "timeout") && g_opt->screen && cp_tmo_screen_pair(g_opt->timeout_s) > 0) {
        static char sbuf[32]; /* the screen's pair deadline: the library first (timeouts.h) */
        snprintf(sbuf, sizeof(sbuf), "%.0f", cp_tmo_screen_pair(g_opt->timeout_s));
        return sbuf;
    }
    if (!strcmp(key, "timeout")) {
        static char buf[32];
        double t = cp_current_timeout() > 0 ? cp_current_timeout() : g_opt->timeout_s;
        if (t > 0) {
            snprintf(buf, sizeof(buf), "%.0f", (t < 1 ? 1 : t) + CP_TMO_LIBRARY_MARGIN_S);
            return buf;
        }
    }
    /* keys are one name space and the caller is not known: a default only
     * when every plugin that declares the key declares the same one */
    const char *def = NULL;
    for (int i = 0; i < g_nplugins; i++) {
        const collprof_option_t *o = cp_bopt_find(g_plugins[i].be, key);
        if (o != NULL && (o->def == NULL || (def != NULL && strcmp(def, o->def) != 0))) {
            return NULL;
        }
        def = o != NULL ? o->def : def;
    }
    return def;
}

static void host_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vlog(level, NULL, fmt, ap);
    va_end(ap);
}

void cp_host_fill(collprof_host_t *host, const cp_boot_t *b, const cp_options_t *opt,
                  const cp_plugin_t *plugins, int nplugins)
{
    g_opt = opt;
    g_plugins = plugins;
    g_nplugins = nplugins;
    *host = (collprof_host_t){.size = sizeof(*host),
                              .rank = b->rank,
                              .nranks = b->nranks,
                              .local_rank = b->local_rank,
                              .local_size = b->local_size,
                              .node_id = b->node_id,
                              .nnodes = b->nnodes,
                              .hostname = b->hostname,
                              .launcher = b->launcher,
                              .log = host_log,
                              .oob_allgather = cp_oob_allgather,
                              .oob_bcast = cp_oob_bcast,
                              .oob_barrier = cp_oob_barrier,
                              .get_option = host_get_option,
                              .oob_alltoall = cp_oob_alltoall};
}
