/*
 * Loading a result file (docs/hdf5-schema.md) and checking it.
 *
 * Every table is read by field NAME: the memory compound types below are
 * built from the tables of include/collprof/schema.h (through
 * src/schema/h5schema.h, as the writer's), and HDF5 converts the file's
 * records into them member by member.  A file of a newer minor schema
 * version, whose tables only have more columns, therefore reads
 * unchanged; a column added later (opt) may be missing from an older one.
 *
 * The checks go further than opening: a file that was truncated, or that
 * had bytes overwritten, must be refused with a reason rather than printed
 * as nonsense.  So every string must be valid UTF-8 text, every number
 * finite, and each row's statistics must agree with the raw samples they
 * were computed from (/cells/<cell>): random bytes in either place are
 * caught by the cross-check.
 */
#include "config.h"

#include "report/read/h5read_int.h"

#include <collprof/vocab.h>

#include "base/stats.h"
#include "base/util.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- root attributes ------------------------------------------------------------ */

/* A string attribute into *out, malloc'd and checked. */
static int read_str_attr(hid_t a, hid_t ft, const char *name, char **out, char *err, size_t errlen)
{
    char *v;
    if (rd_read_str_raw(a, ft, name, &v, err, errlen) != 0) {
        return -1;
    }
    if (!rd_valid_text(v, strlen(v) + 1)) {
        snprintf(err, errlen, "corrupted: attribute '%s' is not valid text", name);
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

/*
 * Root attribute d into its member of *root: 1 present, 0 absent (a
 * string is then "", a number untouched), -1 error.  Integers must be
 * integers; a float attribute may also be stored as an integer.
 */
static int read_attr(hid_t obj, const cp_h5_attr_t *d, collprof_root_attrs_t *root, char *err,
                     size_t errlen)
{
    void *slot = (char *)root + d->offset;
    htri_t ex = H5Aexists(obj, d->name);
    if (ex <= 0) {
        if (ex < 0) {
            rd_h5_fail(err, errlen, "cannot read the root attributes");
            return -1;
        }
        return d->kind != COLLPROF_STR ? 0 : (*(char **)slot = strdup("")) ? 0 : -1;
    }
    hid_t a = H5Aopen(obj, d->name, H5P_DEFAULT);
    hid_t ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    H5T_class_t cls = ft >= 0 ? H5Tget_class(ft) : H5T_NO_CLASS;
    int ok = d->kind == COLLPROF_STR   ? cls == H5T_STRING
             : d->kind == COLLPROF_F64 ? cls == H5T_INTEGER || cls == H5T_FLOAT
                                       : cls == H5T_INTEGER;
    int rc = -1;
    if (ft < 0 || sp < 0) {
        rd_h5_fail(err, errlen, "cannot read attribute '%s'", d->name);
    } else if (!ok || H5Sget_simple_extent_npoints(sp) != 1) {
        snprintf(err, errlen, "attribute '%s' is not %s", d->name,
                 d->kind == COLLPROF_STR   ? "a string"
                 : d->kind == COLLPROF_F64 ? "a number"
                                           : "an integer");
    } else if (d->kind == COLLPROF_STR) {
        rc = read_str_attr(a, ft, d->name, slot, err, errlen) == 0 ? 1 : -1;
    } else if (H5Aread(a, d->kind == COLLPROF_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG, slot) <
               0) {
        rd_h5_fail(err, errlen, "cannot read attribute '%s'", d->name);
    } else {
        rc = 1;
    }
    cp_h5_release(sp);
    cp_h5_release(ft);
    cp_h5_release(a);
    return rc;
}

/* The schema and its version: what says whether this reader can read the rest. */
static int check_schema(collprof_root_attrs_t *r, int has_major, char *err, size_t errlen)
{
    /* the integers are authoritative; the "M.m" string stands in for a writer without them */
    if (!has_major && sscanf(r->schema_version, "%lld.%lld", &r->schema_version_major,
                             &r->schema_version_minor) < 1) {
        snprintf(err, errlen, "no schema version");
        return -1;
    }
    long long major = r->schema_version_major, minor = r->schema_version_minor;
    if (major > COLLPROF_SCHEMA_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "schema version %lld.%lld is newer than this collprof-report reads (%d.x): use a "
                 "newer collprof-report",
                 major, minor, COLLPROF_SCHEMA_VERSION_MAJOR);
        return -1;
    }
    if (major < 1) {
        snprintf(err, errlen, "unknown schema version %lld.%lld", major, minor);
        return -1;
    }
    return 0;
}

static int read_root(hid_t file, collprof_root_attrs_t *r, char *err, size_t errlen)
{
    int has_major = 0;
    for (size_t i = 0; i < CP_H5_NROOT_ATTRS; i++) {
        int rc = read_attr(file, &cp_h5_root_attrs[i], r, err, errlen);
        if (rc < 0) {
            return -1;
        }
        if (i == CP_H5_ATTR_schema && rc == 0) {
            snprintf(err, errlen, "not a collprof result file (no 'schema' attribute)");
            return -1;
        }
        if (i == CP_H5_ATTR_schema && strcmp(r->schema, COLLPROF_SCHEMA_NAME) != 0) {
            snprintf(err, errlen, "not a collprof result file (schema '%.64s')", r->schema);
            return -1;
        }
        has_major |= i == CP_H5_ATTR_schema_version_major && rc > 0;
    }
    if (check_schema(r, has_major, err, errlen) != 0) {
        return -1;
    }
    if (!(r->link_gbps >= 0 && r->link_gbps <= 1e9)) { /* also NaN */
        snprintf(err, errlen, "corrupted: link_gbps attribute out of range");
        return -1;
    }
    if (r->world_size < 0 || r->world_size > (1 << 24) || r->node_count < 0 ||
        r->node_count > r->world_size) {
        snprintf(err, errlen, "corrupted: world_size %lld, node_count %lld", r->world_size,
                 r->node_count);
        return -1;
    }
    return 0;
}

/* The line a crash while reading it prints (cp_report_crash_line) */
static char crash_line[8300];

const char *cp_report_crash_line(void)
{
    return crash_line;
}

/* ---- open / close ---------------------------------------------------------------- */

static hid_t open_h5(const char *path, char *err, size_t errlen)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
#if (H5_VERSION_GE(1, 10, 7) && !H5_VERSION_GE(1, 12, 0)) || H5_VERSION_GE(1, 12, 1)
    /* a run that is still writing the file holds a lock; reading it anyway is the point */
    H5Pset_file_locking(fapl, 0, 1);
#endif
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (file < 0) { /* before the next call, which clears HDF5's error stack */
        rd_h5_fail(err, errlen, "cannot open the HDF5 file, truncated or corrupted");
    }
    H5Pclose(fapl);
    return file;
}

/* What can be told before HDF5 opens the file: it exists, is readable, not empty, HDF5. */
static int probe(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory");
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* opening a FIFO would wait for a writer forever */
        snprintf(err, errlen, "not a regular file (a FIFO, device or socket)");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    fclose(f);
    if (st.st_size == 0) {
        snprintf(err, errlen, "empty file (a run that died before writing anything?)");
        return -1;
    }
    rd_file_bytes = (double)st.st_size;
    htri_t is = H5Fis_hdf5(path);
    if (is == 0) {
        snprintf(err, errlen, "not an HDF5 file");
    } else if (is < 0) {
        rd_h5_fail(err, errlen, "not a readable HDF5 file");
    }
    return is > 0 ? 0 : -1;
}

int cp_report_open(const char *path, cp_report_file_t **out, char *err, size_t errlen)
{
    /* our own one-line errors replace HDF5's stack dumps */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    /* a result file has no external links: one could lead to a FIFO (a hang) or to any file */
    if (H5Lis_registered(H5L_TYPE_EXTERNAL) > 0) {
        H5Lunregister(H5L_TYPE_EXTERNAL);
    }
    if (probe(path, err, errlen) != 0) {
        return -1;
    }
    char safe[8192]; /* the name as printed: no control or bidi characters */
    cp_text_sanitize(path, safe, sizeof(safe));
    snprintf(crash_line, sizeof(crash_line),
             "collprof-report: error: %s: reading it crashed or ran out of its memory or time "
             "limit (a damaged or hostile file)\n",
             safe);
    cp_report_file_t *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(safe)) == NULL) {
        free(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    hid_t file = open_h5(path, err, errlen);
    int rc = file < 0                                          ? -1
             : read_root(file, &f->root, err, errlen) != 0     ? -1
             : rd_read_results(file, f, err, errlen) != 0      ? -1
             : rd_read_ranks(file, f, err, errlen) != 0        ? -1
             : rd_read_backends(file, f, err, errlen) != 0     ? -1
             : rd_read_links(file, f, err, errlen) != 0        ? -1
             : rd_read_counters(file, f, err, errlen) != 0     ? -1
             : rd_read_trace_counts(file, f, err, errlen) != 0 ? -1
             : rd_read_replay(file, f, err, errlen) != 0       ? -1
             : rd_read_screen(file, f, err, errlen) != 0       ? -1
             : rd_read_environment(file, f, err, errlen) != 0  ? -1
             : rd_read_slurm(file, f, err, errlen) != 0        ? -1
             : rd_read_cells(file, f, err, errlen) != 0        ? -1
                                                               : 0;
    if (file >= 0 && H5Fclose(file) < 0 && rc == 0) {
        rd_h5_fail(err, errlen, "cannot close the HDF5 file");
        rc = -1;
    }
    crash_line[0] = '\0';
    if (rc != 0) {
        cp_report_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

static void free_all(void *const *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(p[i]);
    }
}

void cp_report_close(cp_report_file_t *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < CP_H5_NROOT_ATTRS; i++) {
        if (cp_h5_root_attrs[i].kind == COLLPROF_STR) {
            free(*(char **)((char *)&f->root + cp_h5_root_attrs[i].offset));
        }
    }
    for (size_t i = 0; f->cells != NULL && i < f->nrows; i++) {
        cp_report_cell_t *c = &f->cells[i];
        void *raw[] = {c->iter_max,   c->rank_mean, c->rank_min, c->rank_median, c->send_bytes,
                       c->recv_bytes, c->prov,      c->rep_p50,  c->rep_iters};
        free_all(raw, sizeof(raw) / sizeof(raw[0]));
    }
    for (size_t i = 0; f->slurm != NULL && i < f->nslurm; i++) {
        free(f->slurm[i].name);
        free(f->slurm[i].value);
    }
    void *owned[] = {f->cells, f->rows,  f->ranks, f->backends, f->links,  f->screen,
                     f->env,   f->slurm, f->path,  f->counters, f->replay, f};
    free_all(owned, sizeof(owned) / sizeof(owned[0]));
}
