/*
 * An import written as a collprof result file: the root attributes, /results,
 * /ranks, /backends and /environment of include/collprof/schema.h through the
 * descriptor tables of src/schema/h5schema.h, as the run's writer writes them,
 * but no /cells (the sources keep no per-rank samples).  Written under a
 * temporary name and linked to its own at the end, so that a failure leaves
 * nothing behind and an existing file is never replaced.
 */
#include "config.h"

#include "report/import/import.h"

#include "base/util.h"
#include "schema/h5schema.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A schema table of n rows: a sanitized copy of rows written. */
static int put_table(hid_t file, const cp_h5_table_t *tab, const void *rows, size_t n)
{
    void *copy = malloc(tab->recsize * (n ? n : 1));
    if (copy == NULL) {
        return -1;
    }
    if (n > 0) { /* rows may be NULL when there are none (an OSU file has no /environment) */
        memcpy(copy, rows, tab->recsize * n);
    }
    int rc = cp_h5_write_table(file, tab, copy, n);
    free(copy);
    return rc;
}

static int put_root(hid_t file, const cp_import_t *im, const char *command)
{
    char iso[64], version[32], what[128], safe_cmd[4096], name[256];
    const char *base = strrchr(im->shown, '/');
    cp_text_sanitize(base != NULL ? base + 1 : im->shown, name, sizeof(name));
    cp_text_sanitize(command, safe_cmd, sizeof(safe_cmd));
    snprintf(what, sizeof(what), "%s", im->format);
    char tool[64], tver[128], timing[512];
    cp_text_sanitize(im->tool, tool, sizeof(tool));
    cp_text_sanitize(im->version, tver, sizeof(tver));
    cp_text_sanitize(im->timing, timing, sizeof(timing));
    collprof_root_attrs_t attrs = {
        .command_line = safe_cmd,
        .world_size = im->nranks,
        .node_count = im->nnodes,
        .launcher = "",
        .pmix_version = "",
        .tag = "",
        .timing = timing,
        .check = "",
        .link_gbps = 0,
        .status = "complete",
        .imported_from = tool,
        .imported_version = tver,
        .imported_format = what,
        .imported_file = name,
    };
    cp_h5_root_schema(&attrs, version, sizeof(version), iso, sizeof(iso));
    return cp_h5_write_root(file, &attrs);
}

static int put_tables(hid_t file, const cp_import_t *im)
{
    collprof_backend_row_t b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "%s", im->backend_name);
    snprintf(b.library_version, sizeof(b.library_version), "%s", im->library);
    snprintf(b.plugin_version, sizeof(b.plugin_version), "imported");
    snprintf(b.state, sizeof(b.state), "initialised");
    snprintf(b.variants, sizeof(b.variants), "%s", im->variant ? im->variant : "default");
    int rc = put_table(file, &cp_h5_table_results, im->rows, im->nrows);
    rc |= put_table(file, &cp_h5_table_ranks, im->rank_rows, (size_t)im->nrank_rows);
    rc |= put_table(file, &cp_h5_table_backends, &b, 1);
    rc |= put_table(file, &cp_h5_table_environment, im->env, im->nenv);
    return rc;
}

/* tmp under the name out, which must not exist: a hard link (fails if it exists), or where
 * the file system has none, an empty file reserved with O_EXCL and then replaced. */
int cp_import_publish(const char *tmp, const char *out)
{
    if (link(tmp, out) == 0) {
        return 0;
    }
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) {
        return -1;
    }
    int fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -1;
    }
    close(fd);
    if (rename(tmp, out) != 0) {
        int e = errno;
        unlink(out);
        errno = e;
        return -1;
    }
    return 0;
}

int cp_import_write(cp_import_t *im, const char *out, const char *command)
{
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.import-tmp.%ld", out, (long)getpid());
    if (strlen(out) > 4000) {
        return cp_import_fail(im, 0, "the output name is too long");
    }
    int rc = -1, saved = 0;
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        cp_tmp_set(f >= 0 ? tmp : NULL);
        rc = f >= 0 && put_root(f, im, command) == 0 && put_tables(f, im) == 0 ? 0 : -1;
        rc |= f >= 0 && H5Fclose(f) < 0 ? -1 : 0;
        if (rc == 0 && cp_import_publish(tmp, out) != 0) {
            saved = errno;
            rc = -1;
        }
        if (f >= 0) {
            unlink(tmp);
        }
        cp_tmp_set(NULL);
    }
    H5E_END_TRY
    if (rc != 0) {
        char safe[4096];
        cp_text_sanitize(out, safe, sizeof(safe));
        snprintf(im->err, sizeof(im->err), "import: output %s: %s", safe,
                 saved == EEXIST ? "exists (an import never replaces a file)"
                 : saved != 0    ? strerror(saved)
                                 : "cannot write it (no such directory, no permission, or full)");
    }
    return rc;
}
