/*
 * Backend plugin loader.  Plugins are collprof_<name>.so files found in
 * the directories of COLLPROF_PLUGIN_PATH (colon-separated absolute paths,
 * for running from the build tree) or else in the install directory
 * ($(pkglibdir)).  Relative directories are refused: a plugin never loads
 * from the current directory by accident.
 */
#ifndef COLLPROF_PLUGIN_LOADER_H
#define COLLPROF_PLUGIN_LOADER_H

#include <collprof/plugin.h>

typedef struct cp_plugin {
    char name[64];
    char path[4096];
    void *dl;
    const collprof_backend_t *be; /**< NULL when loading failed */
    collprof_caps_t caps;
    char error[512]; /**< why it failed to load, query or init */
    void *ctx;       /**< after a successful init */
    int usable;      /**< loaded and queried */
    /** after init, per memory kind the plan runs it on: what its cells are measured with */
    struct cp_prov *prov[COLLPROF_MEM_COUNT];
    /** split cells (src/runner/split.c): the context of this rank's group per cp_split_t
     *  (index 0 unused), and why a group could not start */
    void *gctx[3];
    char gerror[3][256];
} cp_plugin_t;

/**
 * Find and load every plugin (or only those named in only[], when nonly >
 * 0).  Plugins that fail to load are returned with usable == 0 and a
 * reason; a name in only[] that is not found anywhere is a plugin with
 * usable == 0 too.  *out is allocated; free with cp_plugins_unload().
 */
int cp_plugins_load(char (*only)[64], int nonly, cp_plugin_t **out, int *nout);
void cp_plugins_unload(cp_plugin_t *p, int n);

/** Comma-separated names of the plugin files in the search path (not loaded). */
void cp_plugins_available(char *buf, size_t len);

/** The directories searched, for messages ("A:B" or the install dir). */
const char *cp_plugins_search_path(void);

/**
 * May the code at path be loaded?  The file and its directory must be owned
 * by root or the invoking user and writable only by their owner; the
 * directories above may be writable by others only with the sticky bit.
 * 0, or -1 with why.
 */
int cp_plugin_path_trusted(const char *path, char *why, size_t len);

/** Is v (or "default") a variant of plugin p for op? */
int cp_plugin_has_variant(const cp_plugin_t *p, collprof_op_t op, const char *v);

#endif /* COLLPROF_PLUGIN_LOADER_H */
