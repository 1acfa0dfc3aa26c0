/*
 * The trace file (trace.h): the root attributes and the empty tables of a
 * result file (so that every collprof-report command opens it), and the
 * trace tables of include/collprof/schema.h.  /trace_ops and /trace_splits
 * are chunked datasets that grow a block at a time as the readers add ops;
 * /trace_groups and /trace_members are written at the end.  Written under a
 * temporary name and published as the import's output once complete.
 */
#include "config.h"

#include "report/import/import.h"
#include "report/import/trace.h"

#include "base/util.h"
#include "schema/h5schema.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cp_trace_fail(cp_trace_t *t, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    const char *name = t->shown != NULL ? t->shown : "";
    if (t->err[0] == '\0') {
        if (line > 0) {
            snprintf(t->err, sizeof(t->err), "import: %s:%d: %s", name, line, msg);
        } else if (name[0] != '\0') {
            snprintf(t->err, sizeof(t->err), "import: %s: %s", name, msg);
        } else {
            snprintf(t->err, sizeof(t->err), "import: %s", msg);
        }
    }
    return -1;
}

/* An empty, growable 1-D dataset of tab's rows. */
static hid_t growable(hid_t file, const cp_h5_table_t *tab)
{
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {CP_TRACE_BLOCK};
    hid_t sp = H5Screate_simple(1, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hid_t t = cp_h5_row_type(tab);
    H5Pset_chunk(dcpl, 1, chunk);
    /* the bytes shuffled (each byte of every row, then the next: the rows' like fields side
     * by side) make deflate twice as fast and the output a tenth of what it was */
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 1);
    hid_t d = H5Dcreate2(file, tab->name, t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    cp_h5_release(t);
    cp_h5_release(dcpl);
    cp_h5_release(sp);
    return d;
}

/* rows[0..n) appended to d (which holds *have rows): 0, or -1. */
static int append(hid_t d, const cp_h5_table_t *tab, void *rows, size_t n, uint64_t *have)
{
    if (n == 0) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        cp_h5_sanitize_row(tab, (char *)rows + i * tab->recsize);
    }
    hsize_t size[1] = {*have + n}, start[1] = {*have}, count[1] = {n};
    if (H5Dset_extent(d, size) < 0) {
        return -1;
    }
    hid_t fs = H5Dget_space(d), ms = H5Screate_simple(1, count, NULL), t = cp_h5_row_type(tab);
    int rc = fs >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                     H5Dwrite(d, t, ms, fs, H5P_DEFAULT, rows) >= 0
                 ? 0
                 : -1;
    cp_h5_release(t);
    cp_h5_release(ms);
    cp_h5_release(fs);
    *have += rc == 0 ? n : 0;
    return rc;
}

int cp_trace_open(cp_trace_t *t, const char *out)
{
    t->file = t->ops = t->splits = H5I_INVALID_HID;
    if (strlen(out) > 4000) {
        return cp_trace_fail(t, 0, "the output name is too long");
    }
    t->buf = malloc(CP_TRACE_BLOCK * sizeof(*t->buf));
    if (t->buf == NULL) {
        return cp_trace_fail(t, 0, "out of memory");
    }
    snprintf(t->tmp, sizeof(t->tmp), "%s.import-tmp.%ld", out, (long)getpid());
    H5E_BEGIN_TRY
    {
        t->file = H5Fcreate(t->tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        if (t->file >= 0) {
            cp_tmp_set(t->tmp);
            t->ops = growable(t->file, &cp_h5_table_trace_ops);
            t->splits = growable(t->file, &cp_h5_table_trace_splits);
        }
    }
    H5E_END_TRY
    if (t->file < 0 || t->ops < 0 || t->splits < 0) {
        char safe[4096];
        cp_text_sanitize(out, safe, sizeof(safe));
        t->shown = NULL;
        return cp_trace_fail(t, 0,
                             "output %s: cannot write it (no such directory, no "
                             "permission, or full)",
                             safe);
    }
    return 0;
}

int cp_trace_flush(cp_trace_t *t)
{
    int rc = 0;
    H5E_BEGIN_TRY
    {
        rc = append(t->ops, &cp_h5_table_trace_ops, t->buf, t->nbuf, &t->nops) != 0 ||
                     append(t->splits, &cp_h5_table_trace_splits, t->sbuf, t->nsbuf, &t->nsplits) !=
                         0
                 ? -1
                 : 0;
    }
    H5E_END_TRY
    t->nbuf = t->nsbuf = 0;
    return rc;
}

/* /trace_groups and /trace_members; a group none of whose members a file named is an error. */
static int put_groups(cp_trace_t *t)
{
    size_t nm = 0;
    for (size_t g = 0; g < t->ngroups; g++) {
        nm += (size_t)t->groups[g].size;
    }
    collprof_trace_group_row_t *rows = calloc(t->ngroups + 1, sizeof(*rows));
    collprof_trace_member_row_t *mem = calloc(nm + 1, sizeof(*mem));
    int rc = rows != NULL && mem != NULL ? 0 : cp_trace_fail(t, 0, "out of memory");
    size_t off = 0;
    for (size_t g = 0; rc == 0 && g < t->ngroups; g++) {
        const cp_trace_group_t *G = &t->groups[g];
        collprof_trace_group_row_t *r = &rows[g];
        r->group = (int32_t)g;
        snprintf(r->name, sizeof(r->name), "%s", G->name);
        snprintf(r->desc, sizeof(r->desc), "%s", G->desc);
        snprintf(r->source_hash, sizeof(r->source_hash), "%s", G->key);
        r->size = G->size;
        r->member_off = (int64_t)off;
        for (int i = 0; i < G->size; i++) {
            mem[off++].rank = G->members[i];
        }
    }
    if (rc == 0 && (cp_h5_write_table(t->file, &cp_h5_table_trace_groups, rows, t->ngroups) != 0 ||
                    cp_h5_write_table(t->file, &cp_h5_table_trace_members, mem, nm) != 0)) {
        rc = -1;
    }
    free(rows);
    free(mem);
    return rc;
}

static int world_size(const cp_trace_t *t)
{
    int world = 0;
    for (int r = 0; r < t->nseq; r++) {
        world = t->next_seq[r] > 0 ? r + 1 : world;
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        for (int i = 0; i < t->groups[g].size; i++) {
            world = t->groups[g].members[i] + 1 > world ? t->groups[g].members[i] + 1 : world;
        }
    }
    return world;
}

/* The root attributes and the empty tables every collprof-report command reads. */
static int put_root(cp_trace_t *t, const char *command)
{
    char iso[64], version[32], safe_cmd[4096], name[256], note[1024];
    const char *base = t->shown != NULL ? strrchr(t->shown, '/') : NULL;
    cp_text_sanitize(base != NULL       ? base + 1
                     : t->shown != NULL ? t->shown
                                        : "",
                     name, sizeof(name));
    cp_text_sanitize(command, safe_cmd, sizeof(safe_cmd));
    cp_text_sanitize(t->note, note, sizeof(note));
    collprof_root_attrs_t a = {
        .command_line = safe_cmd,
        .world_size = world_size(t),
        .launcher = "",
        .pmix_version = "",
        .tag = "",
        .timing = note,
        .check = "",
        .status = "complete",
        .imported_from = t->tool,
        .imported_version = "",
        .imported_format = t->format,
        .imported_file = name,
    };
    cp_h5_root_schema(&a, version, sizeof(version), iso, sizeof(iso));
    collprof_backend_row_t b;
    memset(&b, 0, sizeof(b));
    int rc = cp_h5_write_root(t->file, &a);
    rc |= cp_h5_write_table(t->file, &cp_h5_table_results, &b, 0);
    rc |= cp_h5_write_table(t->file, &cp_h5_table_ranks, &b, 0);
    rc |= cp_h5_write_table(t->file, &cp_h5_table_backends, &b, 0);
    rc |= cp_h5_write_table(t->file, &cp_h5_table_environment, &b, 0);
    return rc;
}

int cp_trace_close(cp_trace_t *t, const char *out, const char *command)
{
    int rc = 0, saved = 0;
    H5E_BEGIN_TRY
    {
        rc = cp_trace_flush(t) == 0 && put_groups(t) == 0 && put_root(t, command) == 0 ? 0 : -1;
        cp_h5_release(t->ops);
        cp_h5_release(t->splits);
        t->ops = t->splits = H5I_INVALID_HID;
        rc |= H5Fclose(t->file) < 0 ? -1 : 0;
        t->file = H5I_INVALID_HID;
        if (rc == 0 && cp_import_publish(t->tmp, out) != 0) {
            saved = errno;
            rc = -1;
        }
        unlink(t->tmp);
        cp_tmp_set(NULL);
    }
    H5E_END_TRY
    if (rc != 0 && t->err[0] == '\0') {
        char safe[4096];
        cp_text_sanitize(out, safe, sizeof(safe));
        snprintf(t->err, sizeof(t->err), "import: output %s: %s", safe,
                 saved == EEXIST ? "exists (an import never replaces a file)"
                 : saved != 0    ? strerror(saved)
                                 : "cannot write it (no such directory, no permission, or full)");
    }
    return rc;
}

void cp_trace_free(cp_trace_t *t)
{
    if (t->file >= 0) {
        H5E_BEGIN_TRY
        {
            cp_h5_release(t->ops);
            cp_h5_release(t->splits);
            H5Fclose(t->file);
        }
        H5E_END_TRY
        unlink(t->tmp);
        cp_tmp_set(NULL);
    }
    for (size_t g = 0; g < t->ngroups; g++) {
        free(t->groups[g].members);
    }
    free(t->groups);
    free(t->buf);
    free(t->sbuf);
    free(t->next_seq);
    cp_strset_free(&t->keys);
    memset(t, 0, sizeof(*t));
    t->file = H5I_INVALID_HID;
}
