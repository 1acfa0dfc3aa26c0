/*
 * The host table the plugins hold (collprof_host_t), and the option
 * policy behind its get_option.
 */
#ifndef COLLPROF_RUN_HOST_H
#define COLLPROF_RUN_HOST_H

#include <collprof/plugin.h>

#include "boot/boot.h"
#include "cli/cli.h"
#include "plugin/loader.h"

/**
 * This rank's host table into *host.  Its get_option answers with the
 * user's value for a key (checked against the declarations), else for
 * "timeout" the watchdog's timeout plus a margin, else the default every
 * plugin that declares the key declares alike: opt and plugins must live
 * as long as the table.
 */
void cp_host_fill(collprof_host_t *host, const cp_boot_t *b, const cp_options_t *opt,
                  const cp_plugin_t *plugins, int nplugins);

#endif /* COLLPROF_RUN_HOST_H */
