#include "config.h"

#include "plugin/loader.h"

#include "base/log.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "collprof_"
#define SUFFIX ".so"

const char *cp_plugins_search_path(void)
{
    const char *env = getenv("COLLPROF_PLUGIN_PATH");
    return (env != NULL && env[0] != '\0') ? env : CP_PKGLIBDIR;
}

/* Name of a plugin file "collprof_<name>.so", or 0 if it is not one. */
static int plugin_name(const char *file, char *name, size_t len)
{
    size_t fl = strlen(file), pl = strlen(PREFIX), sl = strlen(SUFFIX);
    if (fl <= pl + sl || strncmp(file, PREFIX, pl) != 0 || strcmp(file + fl - sl, SUFFIX) != 0) {
        return 0;
    }
    size_t nl = fl - pl - sl;
    if (nl >= len) {
        return 0;
    }
    memcpy(name, file + pl, nl);
    name[nl] = '\0';
    return 1;
}

static int wanted(const char *name, char (*only)[64], int nonly)
{
    if (nonly == 0) {
        return 1;
    }
    for (int i = 0; i < nonly; i++) {
        if (!strcmp(only[i], name)) {
            return 1;
        }
    }
    return 0;
}

/*
 * COLLPROF_BACKEND_RTLD_GLOBAL: the plugin's libraries must be global
 * (Open MPI's dlopened components resolve libmpi's symbols that way).
 * Promote the libraries this dlopen brought in -- the objects after the
 * plugin in the link chain -- but not the plugin itself: every plugin
 * exports collprof_backend_v1, and a global one would interpose on the
 * next plugin's.
 */
static void promote_dependencies(void *handle)
{
    struct link_map *self = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &self) != 0 || self == NULL) {
        return;
    }
    for (struct link_map *m = self->l_next; m != NULL; m = m->l_next) {
        if (m->l_name == NULL || m->l_name[0] == '\0') {
            continue;
        }
        void *g = dlopen(m->l_name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
        if (g != NULL) {
            dlclose(g); /* drops the extra reference; the promotion stays */
        }
    }
}

/*
 * May code at path run in this process?  Only when nobody but root and the
 * invoking user could have put it there: the file and its directory are
 * owned by one of them and writable by nobody else; every directory above
 * may be writable by others only with the sticky bit (as /tmp), where they
 * cannot rename what they do not own.  Symbolic links are resolved first.
 * 0, or -1 with why.
 */
/* One step of cp_plugin_path_trusted: path, strict for the file and its directory. */
static int trusted_one(const char *path, int strict, char *why, size_t len)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(why, len, "cannot stat %s", path);
        return -1;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(why, len, "%s is owned by uid %u, neither root nor you", path,
                 (unsigned)st.st_uid);
        return -1;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (strict || !(st.st_mode & S_ISVTX))) {
        snprintf(why, len, "%s is writable by %s (mode %04o)", path,
                 st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 07777));
        return -1;
    }
    return 0;
}

int cp_plugin_path_trusted(const char *path, char *why, size_t len)
{
    char cur[PATH_MAX];
    if (realpath(path, cur) == NULL) {
        snprintf(why, len, "cannot resolve %s", path);
        return -1;
    }
    for (int depth = 0;; depth++) { /* "/a/b/x.so", "/a/b", "/a", "/" */
        if (trusted_one(cur[0] ? cur : "/", depth < 2, why, len) != 0) {
            return -1;
        }
        char *slash = strrchr(cur, '/');
        if (cur[0] == '\0' || slash == NULL) {
            return 0;
        }
        *slash = '\0';
    }
}

static void load_one(cp_plugin_t *p)
{
    char untrusted[PATH_MAX + 128];
    if (cp_plugin_path_trusted(p->path, untrusted, sizeof(untrusted)) != 0) {
        snprintf(p->error, sizeof(p->error),
                 "refusing to load %s: %s (plugins and their directories must be owned by root "
                 "or you and writable only by their owner)",
                 p->path, untrusted);
        return;
    }
    dlerror();
    p->dl = dlopen(p->path, RTLD_NOW | RTLD_LOCAL);
    if (p->dl == NULL) {
        snprintf(p->error, sizeof(p->error), "cannot load %s: %s", p->path, dlerror());
        return;
    }
    const collprof_backend_t *be = dlsym(p->dl, COLLPROF_BACKEND_SYMBOL);
    if (be == NULL) {
        snprintf(p->error, sizeof(p->error), "%s does not export %s", p->path,
                 COLLPROF_BACKEND_SYMBOL);
        return;
    }
    if (be->abi_version != COLLPROF_PLUGIN_ABI_VERSION || be->size < COLLPROF_BACKEND_SIZE_V2) {
        snprintf(
            p->error, sizeof(p->error),
            "%s was built for plugin ABI %u (size %zu); this collprof speaks ABI %u: rebuild it",
            p->path, be->abi_version, be->size, COLLPROF_PLUGIN_ABI_VERSION);
        return;
    }
    if (be->name == NULL || strcmp(be->name, p->name) != 0) {
        snprintf(p->error, sizeof(p->error), "%s calls itself '%s', not '%s'", p->path,
                 be->name ? be->name : "(null)", p->name);
        return;
    }
    if (!be->query || !be->init || !be->finalize || !be->select_variant || !be->mem_alloc ||
        !be->mem_free || !be->mem_copy || !be->run || !be->run_batch || !be->last_error ||
        !be->describe || (be->noptions > 0 && be->options == NULL)) {
        snprintf(p->error, sizeof(p->error),
                 "%s leaves a slot NULL (use the collprof_no_* stubs): refusing it", p->path);
        return;
    }
    if (be->flags & COLLPROF_BACKEND_RTLD_GLOBAL) {
        promote_dependencies(p->dl);
    }
    p->be = be;
    p->caps.size = sizeof(p->caps);
    int rc = be->query(NULL, &p->caps);
    if (rc != COLLPROF_OK) {
        const char *why = be->last_error(NULL);
        snprintf(p->error, sizeof(p->error), "query failed: %s%s%s", collprof_status_string(rc),
                 why && *why ? ": " : "", why ? why : "");
        return;
    }
    p->usable = 1;
}

void cp_plugins_available(char *buf, size_t len)
{
    char path[8192];
    buf[0] = '\0';
    snprintf(path, sizeof(path), "%s", cp_plugins_search_path());
    char *save = NULL;
    for (char *dir = strtok_r(path, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
        DIR *d = dir[0] == '/' ? opendir(dir) : NULL;
        struct dirent *e;
        while (d != NULL && (e = readdir(d)) != NULL) {
            char name[64];
            if (plugin_name(e->d_name, name, sizeof(name)) && strstr(buf, name) == NULL) {
                strncat(buf, buf[0] ? ", " : "", len - strlen(buf) - 1);
                strncat(buf, name, len - strlen(buf) - 1);
            }
        }
        if (d != NULL) {
            closedir(d);
        }
    }
}

/* Append a zeroed entry named name; NULL when out of memory (list unchanged). */
static cp_plugin_t *add_plugin(cp_plugin_t **list, int *n, const char *name)
{
    cp_plugin_t *grown = realloc(*list, sizeof(*grown) * (size_t)(*n + 1));
    if (grown == NULL) {
        return NULL;
    }
    *list = grown;
    cp_plugin_t *p = &grown[(*n)++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    return p;
}

static int find_name(const cp_plugin_t *list, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(list[i].name, name)) {
            return 1;
        }
    }
    return 0;
}

/* Add the wanted plugins of directory dir not seen yet (the first directory wins). */
static int scan_dir(const char *dir, char (*only)[64], int nonly, cp_plugin_t **list, int *n)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        cp_log(CP_LOG_DEBUG, "plugin directory %s: cannot open", dir);
        return 0;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char name[64];
        if (!plugin_name(e->d_name, name, sizeof(name)) || !wanted(name, only, nonly) ||
            find_name(*list, *n, name)) {
            continue;
        }
        cp_plugin_t *p = add_plugin(list, n, name);
        if (p == NULL) {
            closedir(d);
            return -1;
        }
        snprintf(p->path, sizeof(p->path), "%s/%s", dir, e->d_name);
    }
    closedir(d);
    return 0;
}

int cp_plugins_load(char (*only)[64], int nonly, cp_plugin_t **out, int *nout)
{
    cp_plugin_t *list = NULL;
    int n = 0;
    char path[8192];
    snprintf(path, sizeof(path), "%s", cp_plugins_search_path());
    char *save = NULL;
    for (char *dir = strtok_r(path, ":", &save); dir != NULL; dir = strtok_r(NULL, ":", &save)) {
        if (dir[0] != '/') {
            cp_log(CP_LOG_WARN, "ignoring relative plugin directory '%s' in COLLPROF_PLUGIN_PATH",
                   dir);
        } else if (scan_dir(dir, only, nonly, &list, &n) != 0) {
            cp_plugins_unload(list, n);
            return -1;
        }
    }
    /* load in name order so every rank and every run sees the same order */
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (strcmp(list[j].name, list[i].name) < 0) {
                cp_plugin_t t = list[i];
                list[i] = list[j];
                list[j] = t;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        load_one(&list[i]);
    }
    for (int k = 0; k < nonly; k++) { /* requested but not present */
        if (find_name(list, n, only[k])) {
            continue;
        }
        cp_plugin_t *p = add_plugin(&list, &n, only[k]);
        if (p == NULL) {
            cp_plugins_unload(list, n);
            return -1;
        }
        snprintf(p->error, sizeof(p->error), "no collprof_%s.so in %s", only[k],
                 cp_plugins_search_path());
    }
    *out = list;
    *nout = n;
    return 0;
}

void cp_plugins_unload(cp_plugin_t *p, int n)
{
    /* Libraries such as Open MPI do not support being unloaded and
     * reloaded in one process, so plugins stay mapped until exit. */
    free(p);
    (void)n;
}

int cp_plugin_has_variant(const cp_plugin_t *p, collprof_op_t op, const char *v)
{
    if (!strcmp(v, "default")) {
        return 1;
    }
    for (size_t i = 0; i < p->caps.nvariants; i++) {
        if (!strcmp(p->caps.variants[i].name, v) && (p->caps.variants[i].ops & COLLPROF_BIT(op))) {
            return 1;
        }
    }
    return 0;
}
