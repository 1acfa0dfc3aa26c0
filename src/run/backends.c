/*
 * The backends of a run: which plugins to load (those the specs name), the
 * ones that cannot run said once, and their initialisation and finalisation
 * on every rank together.  A backend whose init answers
 * COLLPROF_ERR_NO_DEVICE has nothing to run on here (no GPU, no driver, a
 * driver too old for its runtime): said as a note with the plugin's reason,
 * not as an error; every other failure is an error.
 */
#include "config.h"

#include "run/backends.h"

#include "base/log.h"
#include "runner/runner.h"

#include <stdio.h>
#include <string.h>

char (*cp_backends_only(const cp_options_t *opt, int *n))[64]
{
    /* load only what some spec names, unless one spec wants them all */
    static char names[CP_MAX_LIST][64];
    int k = 0;
    for (int i = 0; i < opt->nspecs; i++) {
        if (opt->specs[i].nbackends == 0) {
            *n = 0;
            return NULL;
        }
        for (int b = 0; b < opt->specs[i].nbackends; b++) {
            int dup = 0;
            for (int j = 0; j < k; j++) {
                dup |= !strcmp(names[j], opt->specs[i].backends[b]);
            }
            if (!dup && k < CP_MAX_LIST) {
                snprintf(names[k++], 64, "%s", opt->specs[i].backends[b]);
            }
        }
    }
    *n = k;
    return names;
}

void cp_backends_report_unusable(const cp_plugin_t *plugins, int n, const cp_options_t *opt)
{
    int nonly;
    cp_backends_only(opt, &nonly);
    for (int i = 0; i < n; i++) {
        if (!plugins[i].usable && plugins[i].be == NULL &&
            strstr(plugins[i].error, "no collprof_") == plugins[i].error && nonly > 0) {
            continue; /* an unknown name: the plan reports it as bad input */
        }
        if (!plugins[i].usable) {
            cp_error_once("backend %s skipped: %s", plugins[i].name, plugins[i].error);
        }
    }
}

/* Collective: initialise one backend on every rank; 0 when every rank has it. */
static int init_backend(cp_plugin_t *p, const cp_boot_t *b, collprof_host_t *host)
{
    cp_log(CP_LOG_INFO, "backend %s: initialising (%s)", p->name,
           p->caps.library_version ? p->caps.library_version : "?");
    void *ctx = NULL;
    int rc = p->be->init(host, &ctx);
    char why[480] = "";
    cp_agreement_t a;
    if (rc == COLLPROF_ERR_NO_DEVICE) { /* the plugin's reason says what is missing */
        snprintf(why, sizeof(why), "%s", p->be->last_error(NULL));
    } else if (rc != COLLPROF_OK) {
        snprintf(why, sizeof(why), "%s: %s", collprof_status_string(rc), p->be->last_error(NULL));
    }
    if (cp_agree(b->nranks, rc, why, &a) != CP_AGREE_OK) {
        if (a.result == CP_AGREE_FAILED && a.status == COLLPROF_ERR_NO_DEVICE) {
            /* nothing to run on here (no GPU, no driver): a note, not an error */
            snprintf(p->error, sizeof(p->error), "%s", a.msg);
            cp_note_once("backend %s skipped: %s", p->name, p->error);
        } else {
            snprintf(p->error, sizeof(p->error), "initialisation failed on rank %d: %s", a.rank,
                     a.msg);
            cp_error_once("backend %s skipped: %s", p->name, p->error);
        }
        if (rc == COLLPROF_OK) {
            p->be->finalize(ctx);
        }
        return -1;
    }
    p->ctx = ctx;
    /* again now that the plugin knows its transport (the link rate in use) */
    collprof_caps_t caps;
    memset(&caps, 0, sizeof(caps));
    caps.size = sizeof(caps);
    if (p->be->query(ctx, &caps) == COLLPROF_OK) {
        p->caps = caps;
    }
    cp_log(CP_LOG_INFO, "backend %s: ready", p->name);
    return 0;
}

int cp_backends_init(cp_plugin_t *plugins, int n, const cp_plan_t *plan, const cp_boot_t *b,
                     collprof_host_t *host)
{
    int usable = 0;
    for (int i = 0; i < n; i++) {
        if (cp_plan_uses(plan, i) && init_backend(&plugins[i], b, host) == 0) {
            usable++;
        }
    }
    return usable;
}

void cp_backends_finalize(cp_plugin_t *plugins, int n)
{
    for (int i = 0; i < n; i++) {
        if (plugins[i].ctx != NULL) {
            plugins[i].be->finalize(plugins[i].ctx);
            plugins[i].ctx = NULL;
            cp_log(CP_LOG_DEBUG, "backend %s: finalized", plugins[i].name);
        }
    }
}
