/*
 * Loading a result file (docs/hdf5-schema.md) and checking it.
 *
 * Every table is read by field NAME: the memory compound types below are
 * built from the column list, and HDF5 converts the file's records into
 * them member by member.  A file of a newer minor schema version, whose
 * tables only have more columns, therefore reads unchanged.
 *
 * The checks go further than opening: a file that was truncated, or that
 * had bytes overwritten, must be refused with a reason rather than printed
 * as nonsense.  So every string must be valid UTF-8 text, every number
 * finite, and each row's statistics must agree with the raw samples they
 * were computed from (/cells/<cell>): random bytes in either place are
 * caught by the cross-check.
 */
#include "config.h"

#include "report/report.h"

#include "core/stats.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Relative tolerance of the statistics cross-check.  The writer computes
 * them from the same doubles in the same order, so they agree exactly; the
 * slack only allows for another writer summing in another order. */
#define CP_REPORT_STATS_RTOL 1e-9

/* ---- the columns of /results, generated from the one column list --------- */

#define CP_REPORT_FIELD_SIZE(name) sizeof(((collprof_result_row_t *)0)->name)
#define CP_REPORT_COLUMN(name, kind, size, unit, doc)                                              \
    {#name, CP_REPORT_##kind, offsetof(collprof_result_row_t, name), CP_REPORT_FIELD_SIZE(name)},
const cp_report_column_t cp_report_columns[] = {COLLPROF_RESULT_COLUMNS(CP_REPORT_COLUMN)};
#undef CP_REPORT_COLUMN
const size_t cp_report_ncolumns = sizeof(cp_report_columns) / sizeof(cp_report_columns[0]);

void cp_report_column_value(const cp_report_column_t *c, const collprof_result_row_t *r,
                            cp_report_value_t *v)
{
    const char *p = (const char *)r + c->offset;
    memset(v, 0, sizeof(*v));
    v->kind = c->kind;
    switch (c->kind) {
    case CP_REPORT_STR: v->s = p; break;
    case CP_REPORT_I32: {
        int32_t x;
        memcpy(&x, p, sizeof(x));
        v->i = x;
        break;
    }
    case CP_REPORT_U64: memcpy(&v->u, p, sizeof(v->u)); break;
    default: memcpy(&v->d, p, sizeof(v->d)); break;
    }
}

int cp_report_measured(const collprof_result_row_t *r)
{
    return !strcmp(r->status, "ok") || !strcmp(r->status, "wrong");
}

const char *cp_report_host(const cp_report_file_t *f, int rank)
{
    return rank >= 0 && rank < f->nranks ? f->ranks[rank].hostname : "?";
}

/* ---- errors ------------------------------------------------------------------ */

static herr_t first_desc(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    char *buf = data;
    if (buf[0] == '\0' && e->desc != NULL && e->desc[0] != '\0') {
        snprintf(buf, 256, "%s", e->desc);
    }
    return 0;
}

/*
 * A reason for a failed HDF5 call: what we were doing, then HDF5's own
 * innermost message ("truncated file: eof = ...", "inflate() failed"),
 * which is what tells a user what is wrong with the file.
 */
static void h5_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void h5_fail(char *err, size_t errlen, const char *fmt, ...)
{
    char what[512], why[256] = "";
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_desc, why);
    H5Eclear2(H5E_DEFAULT);
    if (why[0] != '\0') {
        snprintf(err, errlen, "%s (%s)", what, why);
    } else {
        snprintf(err, errlen, "%s", what);
    }
}

/* ---- text checks --------------------------------------------------------------- */

/* Valid UTF-8 without control characters (tab allowed), NUL-terminated within max. */
static int valid_text(const char *s, size_t max)
{
    const unsigned char *p = (const unsigned char *)s;
    const unsigned char *end = memchr(p, '\0', max);
    if (end == NULL) {
        return 0;
    }
    while (p < end) {
        unsigned c = *p;
        int more;
        unsigned min;
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
                return 0;
            }
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            more = 1, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            more = 2, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            more = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        if (end - p <= more) {
            return 0;
        }
        for (int k = 1; k <= more; k++) {
            if ((p[k] & 0xc0) != 0x80) {
                return 0;
            }
            c = (c << 6) | (p[k] & 0x3fu);
        }
        /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
            return 0;
        }
        p += more + 1;
    }
    return 1;
}

/* ---- attributes ------------------------------------------------------------------ */

/* A string attribute into *out (malloc'd); "" when absent.  1 present, 0 absent, -1 error. */
static int attr_str(hid_t obj, const char *name, char **out, char *err, size_t errlen)
{
    htri_t ex = H5Aexists(obj, name);
    if (ex < 0) {
        h5_fail(err, errlen, "cannot read the root attributes");
        return -1;
    }
    if (ex == 0) {
        *out = strdup("");
        return *out ? 0 : -1;
    }
    int rc = -1;
    char *v = NULL;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    hid_t mt = H5I_INVALID_HID;
    if (ft < 0 || sp < 0) {
        h5_fail(err, errlen, "cannot read attribute '%s'", name);
        goto out;
    }
    if (H5Tget_class(ft) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        snprintf(err, errlen, "attribute '%s' is not a string", name);
        goto out;
    }
    /* HDF5 does not convert between character sets: read in the file's own */
    mt = H5Tcopy(H5T_C_S1);
    H5Tset_cset(mt, H5Tget_cset(ft));
    if (H5Tis_variable_str(ft) > 0) {
        char *s = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        if (H5Aread(a, mt, &s) < 0) {
            h5_fail(err, errlen, "cannot read attribute '%s'", name);
            goto out;
        }
        v = strdup(s ? s : "");
        H5free_memory(s);
    } else {
        size_t size = H5Tget_size(ft);
        v = calloc(size + 1, 1);
        H5Tset_size(mt, size + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        if (v != NULL && H5Aread(a, mt, v) < 0) {
            h5_fail(err, errlen, "cannot read attribute '%s'", name);
            goto out;
        }
    }
    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (!valid_text(v, strlen(v) + 1)) {
        snprintf(err, errlen, "corrupted: attribute '%s' is not valid text", name);
        goto out;
    }
    *out = v;
    v = NULL;
    rc = 1;
out:
    free(v);
    if (mt >= 0) {
        H5Tclose(mt);
    }
    if (sp >= 0) {
        H5Sclose(sp);
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    if (a >= 0) {
        H5Aclose(a);
    }
    return rc;
}

/*
 * A scalar numeric attribute read as memtype (H5T_NATIVE_LLONG for
 * integers only, H5T_NATIVE_DOUBLE for floats or integers); 1 present,
 * 0 absent (*out untouched), -1 error.
 */
static int attr_number(hid_t obj, const char *name, hid_t memtype, void *out, char *err,
                       size_t errlen)
{
    htri_t ex = H5Aexists(obj, name);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot read the root attributes");
        }
        return ex < 0 ? -1 : 0;
    }
    int floats = H5Tequal(memtype, H5T_NATIVE_DOUBLE) > 0, rc = -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    H5T_class_t cls = ft >= 0 ? H5Tget_class(ft) : H5T_NO_CLASS;
    if (ft < 0 || sp < 0) {
        h5_fail(err, errlen, "cannot read attribute '%s'", name);
    } else if ((cls != H5T_INTEGER && !(floats && cls == H5T_FLOAT)) ||
               H5Sget_simple_extent_npoints(sp) != 1) {
        snprintf(err, errlen, "attribute '%s' is not %s", name, floats ? "a number" : "an integer");
    } else if (H5Aread(a, memtype, out) < 0) {
        h5_fail(err, errlen, "cannot read attribute '%s'", name);
    } else {
        rc = 1;
    }
    if (sp >= 0) {
        H5Sclose(sp);
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    if (a >= 0) {
        H5Aclose(a);
    }
    return rc;
}

static int attr_int(hid_t obj, const char *name, long long *out, char *err, size_t errlen)
{
    return attr_number(obj, name, H5T_NATIVE_LLONG, out, err, errlen);
}

static int attr_double(hid_t obj, const char *name, double *out, char *err, size_t errlen)
{
    return attr_number(obj, name, H5T_NATIVE_DOUBLE, out, err, errlen);
}

static const struct {
    const char *name;
    size_t offset;
} string_attrs[] = {
    {"schema", offsetof(cp_report_file_t, schema)},
    {"schema_version", offsetof(cp_report_file_t, schema_version)},
    {"collprof_version", offsetof(cp_report_file_t, collprof_version)},
    {"created", offsetof(cp_report_file_t, created)},
    {"command_line", offsetof(cp_report_file_t, command_line)},
    {"launcher", offsetof(cp_report_file_t, launcher)},
    {"pmix_version", offsetof(cp_report_file_t, pmix_version)},
    {"tag", offsetof(cp_report_file_t, tag)},
    {"timing", offsetof(cp_report_file_t, timing)},
    {"check", offsetof(cp_report_file_t, check)},
    {"status", offsetof(cp_report_file_t, status)},
};
#define N_STRING_ATTRS (sizeof(string_attrs) / sizeof(string_attrs[0]))

static char **attr_slot(cp_report_file_t *f, size_t i)
{
    return (char **)(void *)((char *)f + string_attrs[i].offset);
}

static int read_root(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_STRING_ATTRS; i++) {
        int rc = attr_str(file, string_attrs[i].name, attr_slot(f, i), err, errlen);
        if (rc < 0) {
            return -1;
        }
        if (rc == 0 && i == 0) {
            snprintf(err, errlen, "not a collprof result file (no 'schema' attribute)");
            return -1;
        }
    }
    if (strcmp(f->schema, COLLPROF_SCHEMA_NAME) != 0) {
        snprintf(err, errlen, "not a collprof result file (schema '%.64s')", f->schema);
        return -1;
    }
    /* the integers are authoritative; the "M.m" string stands in for a writer without them */
    int has_major = attr_int(file, "schema_version_major", &f->major, err, errlen);
    int has_minor =
        has_major >= 0 ? attr_int(file, "schema_version_minor", &f->minor, err, errlen) : -1;
    if (has_major < 0 || has_minor < 0) {
        return -1;
    }
    if (has_major == 0 && sscanf(f->schema_version, "%lld.%lld", &f->major, &f->minor) < 1) {
        snprintf(err, errlen, "no schema version");
        return -1;
    }
    if (f->major > COLLPROF_SCHEMA_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "schema version %lld.%lld is newer than this collprof-report reads (%d.x): use a "
                 "newer collprof-report",
                 f->major, f->minor, COLLPROF_SCHEMA_VERSION_MAJOR);
        return -1;
    }
    if (f->major < 1) {
        snprintf(err, errlen, "unknown schema version %lld.%lld", f->major, f->minor);
        return -1;
    }
    if (attr_int(file, "world_size", &f->world_size, err, errlen) < 0 ||
        attr_int(file, "node_count", &f->node_count, err, errlen) < 0) {
        return -1;
    }
    if (attr_double(file, "link_gbps", &f->link_gbps, err, errlen) < 0) {
        return -1;
    }
    if (!(f->link_gbps >= 0 && f->link_gbps <= 1e9)) { /* also NaN */
        snprintf(err, errlen, "corrupted: link_gbps attribute out of range");
        return -1;
    }
    if (f->world_size < 0 || f->world_size > (1 << 24) || f->node_count < 0 ||
        f->node_count > f->world_size) {
        snprintf(err, errlen, "corrupted: world_size %lld, node_count %lld", f->world_size,
                 f->node_count);
        return -1;
    }
    return 0;
}

/* ---- tables ---------------------------------------------------------------------- */

/* Columns added after schema 1.0: files from before them are still read. */
static int added_in_minor(const char *name)
{
    return !strcmp(name, "memory");
}

/* One field of an in-memory record that a table is read into. */
typedef cp_report_column_t field_t;

/*
 * The memory compound for fields[], checked against the file's type: every
 * field must exist there with a compatible class.  Extra file members are
 * simply not read.
 */
static hid_t mem_type(hid_t ftype, const char *table, const field_t *fields, size_t n,
                      size_t recsize, char *err, size_t errlen)
{
    if (H5Tget_class(ftype) != H5T_COMPOUND) {
        snprintf(err, errlen, "%s is not a table", table);
        return H5I_INVALID_HID;
    }
    hid_t t = H5Tcreate(H5T_COMPOUND, recsize);
    for (size_t i = 0; i < n; i++) {
        const field_t *fl = &fields[i];
        int idx = H5Tget_member_index(ftype, fl->name);
        if (idx < 0 && added_in_minor(fl->name)) {
            H5Eclear2(H5E_DEFAULT); /* a file of an older minor version: left empty */
            continue;
        }
        if (idx < 0) {
            H5Eclear2(H5E_DEFAULT);
            snprintf(err, errlen, "%s has no column '%s'", table, fl->name);
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
        H5T_class_t cls = H5Tget_member_class(ftype, (unsigned)idx);
        hid_t m = H5Tget_member_type(ftype, (unsigned)idx);
        int ok = fl->kind == CP_REPORT_STR   ? cls == H5T_STRING && H5Tis_variable_str(m) == 0
                 : fl->kind == CP_REPORT_F64 ? cls == H5T_FLOAT || cls == H5T_INTEGER
                                             : cls == H5T_INTEGER;
        if (!ok) {
            snprintf(err, errlen, "%s column '%s' has an unexpected type", table, fl->name);
            H5Tclose(m);
            H5Tclose(t);
            return H5I_INVALID_HID;
        }
        if (fl->kind == CP_REPORT_STR) {
            hid_t s = H5Tcopy(H5T_C_S1);
            H5Tset_size(s, fl->size);
            H5Tset_strpad(s, H5T_STR_NULLTERM);
            H5Tset_cset(s, H5Tget_cset(m)); /* no charset conversion in HDF5 */
            H5Tinsert(t, fl->name, fl->offset, s);
            H5Tclose(s);
        } else {
            hid_t nt = fl->kind == CP_REPORT_I32   ? H5T_NATIVE_INT32
                       : fl->kind == CP_REPORT_U64 ? H5T_NATIVE_UINT64
                                                   : H5T_NATIVE_DOUBLE;
            H5Tinsert(t, fl->name, fl->offset, nt);
        }
        H5Tclose(m);
    }
    return t;
}

/*
 * Read a whole 1-D table into *out (calloc'd, *n records).  1 when read,
 * 0 when the table is absent and optional, -1 on error.
 */
static int read_table(hid_t file, const char *name, int optional, const field_t *fields,
                      size_t nfields, size_t recsize, void **out, size_t *n, char *err,
                      size_t errlen)
{
    *out = NULL;
    *n = 0;
    htri_t ex = H5Lexists(file, name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /%s", name);
        } else if (!optional) {
            snprintf(err, errlen, "no /%s table", name);
        }
        return ex == 0 && optional ? 0 : -1;
    }
    int rc = -1;
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t mt = H5I_INVALID_HID;
    if (ft < 0 || sp < 0) {
        h5_fail(err, errlen, "cannot open /%s", name);
        goto out;
    }
    char table[64];
    snprintf(table, sizeof(table), "/%s", name);
    mt = mem_type(ft, table, fields, nfields, recsize, err, errlen);
    if (mt < 0) {
        goto out;
    }
    hsize_t dims[1];
    if (H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        snprintf(err, errlen, "/%s is not a 1-D table", name);
        goto out;
    }
    if (dims[0] > 0) {
        *out = calloc((size_t)dims[0], recsize);
        if (*out == NULL) {
            snprintf(err, errlen, "corrupted: /%s claims %llu rows", name,
                     (unsigned long long)dims[0]);
            goto out;
        }
        if (H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
            h5_fail(err, errlen, "cannot read /%s", name);
            free(*out);
            *out = NULL;
            goto out;
        }
    }
    *n = (size_t)dims[0];
    rc = 1;
out:
    if (mt >= 0) {
        H5Tclose(mt);
    }
    if (sp >= 0) {
        H5Sclose(sp);
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    if (d >= 0) {
        H5Dclose(d);
    }
    return rc;
}

static const char *const known_status[] = {"ok",          "wrong",   "error",
                                           "unsupported", "skipped", "timeout"};

static int check_row(const collprof_result_row_t *r, size_t i, char *err, size_t errlen)
{
    for (size_t c = 0; c < cp_report_ncolumns; c++) {
        const cp_report_column_t *col = &cp_report_columns[c];
        cp_report_value_t v;
        cp_report_column_value(col, r, &v);
        if (col->kind == CP_REPORT_STR && !valid_text(v.s, col->size)) {
            snprintf(err, errlen, "corrupted: /results row %zu, column '%s' is not valid text", i,
                     col->name);
            return -1;
        }
        if (col->kind == CP_REPORT_F64 && (!isfinite(v.d) || v.d < 0)) {
            snprintf(err, errlen, "corrupted: /results row %zu, column '%s' is %g", i, col->name,
                     v.d);
            return -1;
        }
    }
    int known = 0;
    for (size_t k = 0; k < sizeof(known_status) / sizeof(known_status[0]); k++) {
        known |= !strcmp(r->status, known_status[k]);
    }
    const char *bad = !known                                        ? "status"
                      : r->cell < 0                                 ? "cell"
                      : r->op[0] == '\0'                            ? "op"
                      : r->iterations < 0                           ? "iterations"
                      : r->warmup < 0                               ? "warmup"
                      : (r->in_place & ~1) != 0                     ? "in_place"
                      : r->iterations == 0 && cp_report_measured(r) ? "iterations"
                                                                    : NULL;
    if (bad != NULL) {
        snprintf(err, errlen, "corrupted: /results row %zu, column '%s' is out of range", i, bad);
        return -1;
    }
    return 0;
}

static int read_results(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *rows;
    if (read_table(file, "results", 0, cp_report_columns, cp_report_ncolumns,
                   sizeof(collprof_result_row_t), &rows, &f->nrows, err, errlen) < 0) {
        return -1;
    }
    f->rows = rows;
    for (size_t i = 0; i < f->nrows; i++) {
        if (check_row(&f->rows[i], i, err, errlen) != 0) {
            return -1;
        }
    }
    return 0;
}

static int read_ranks(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    static const field_t fields[] = {
        {"rank", CP_REPORT_I32, offsetof(cp_report_rank_t, rank), 0},
        {"hostname", CP_REPORT_STR, offsetof(cp_report_rank_t, hostname), 64},
        {"node_id", CP_REPORT_I32, offsetof(cp_report_rank_t, node_id), 0},
    };
    void *recs;
    size_t n;
    if (read_table(file, "ranks", 0, fields, 3, sizeof(cp_report_rank_t), &recs, &n, err, errlen) <
        0) {
        return -1;
    }
    f->ranks = recs;
    f->nranks = (int)n;
    if (f->world_size == 0) { /* a writer without the attribute: the table says */
        f->world_size = (long long)n;
    }
    if ((long long)n != f->world_size) {
        snprintf(err, errlen, "corrupted: /ranks has %zu rows for %lld ranks", n, f->world_size);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const cp_report_rank_t *r = &f->ranks[i];
        if (r->rank != (int32_t)i || r->node_id < 0 ||
            (f->node_count > 0 && r->node_id >= f->node_count) ||
            !valid_text(r->hostname, sizeof(r->hostname))) {
            snprintf(err, errlen, "corrupted: /ranks row %zu", i);
            return -1;
        }
    }
    return 0;
}

/* 1 when table /name exists and has a member called column */
static int table_has_column(hid_t file, const char *name, const char *column)
{
    int has = 0;
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t t = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    if (t >= 0 && H5Tget_class(t) == H5T_COMPOUND) {
        has = H5Tget_member_index(t, column) >= 0;
    }
    H5Eclear2(H5E_DEFAULT);
    if (t >= 0) {
        H5Tclose(t);
    }
    if (d >= 0) {
        H5Dclose(d);
    }
    return has;
}

static int read_backends(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    static const field_t fields[] = {
        {"name", CP_REPORT_STR, offsetof(cp_report_backend_t, name), 32},
        {"plugin_version", CP_REPORT_STR, offsetof(cp_report_backend_t, plugin_version), 32},
        {"library_version", CP_REPORT_STR, offsetof(cp_report_backend_t, library_version), 128},
        {"state", CP_REPORT_STR, offsetof(cp_report_backend_t, state), 256},
        {"link_gbps", CP_REPORT_F64, offsetof(cp_report_backend_t, link_gbps), 8},
    };
    void *recs;
    /* link_gbps came later (files of collprof 0.1 without it are read with 0) */
    size_t nf = table_has_column(file, "backends", "link_gbps") ? 5 : 4;
    if (read_table(file, "backends", 1, fields, nf, sizeof(cp_report_backend_t), &recs,
                   &f->nbackends, err, errlen) < 0) {
        return -1;
    }
    f->backends = recs;
    for (size_t i = 0; i < f->nbackends; i++) {
        const cp_report_backend_t *b = &f->backends[i];
        if (!valid_text(b->name, sizeof(b->name)) ||
            !valid_text(b->plugin_version, sizeof(b->plugin_version)) ||
            !valid_text(b->library_version, sizeof(b->library_version)) ||
            !valid_text(b->state, sizeof(b->state))) {
            snprintf(err, errlen, "corrupted: /backends row %zu is not valid text", i);
            return -1;
        }
        if (!(b->link_gbps >= 0 && b->link_gbps <= 1e9)) {
            snprintf(err, errlen, "corrupted: /backends row %zu: link_gbps out of range", i);
            return -1;
        }
    }
    return 0;
}

/* /environment is not shown, but it is read so that damage to it is noticed too. */
static int check_environment(hid_t file, char *err, size_t errlen)
{
    typedef struct env_rec {
        char name[128];
        char value[1024];
    } env_rec_t;
    static const field_t fields[] = {
        {"name", CP_REPORT_STR, offsetof(env_rec_t, name), 128},
        {"value", CP_REPORT_STR, offsetof(env_rec_t, value), 1024},
    };
    void *recs;
    size_t n;
    if (read_table(file, "environment", 1, fields, 2, sizeof(env_rec_t), &recs, &n, err, errlen) <
        0) {
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const env_rec_t *e = (const env_rec_t *)recs + i;
        if (!valid_text(e->name, sizeof(e->name)) || !valid_text(e->value, sizeof(e->value))) {
            snprintf(err, errlen, "corrupted: /environment row %zu is not valid text", i);
            rc = -1;
        }
    }
    free(recs);
    return rc;
}

/* ---- /cells/<cell> ------------------------------------------------------------------ */

/*
 * Read a dataset of the expected shape (1-D [d0] when d1 == 0, else
 * [d0 x d1]) into a new buffer of native elements of type nt.
 */
static void *read_array(hid_t grp, const char *cell, const char *name, hid_t nt, size_t elsize,
                        hsize_t d0, hsize_t d1, char *err, size_t errlen)
{
    void *buf = NULL;
    hid_t d = H5Dopen2(grp, name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    int want = d1 == 0 ? 1 : 2;
    hsize_t dims[2] = {0, 0};
    if (sp < 0 || ft < 0) {
        h5_fail(err, errlen, "cannot open /cells/%s/%s", cell, name);
    } else if (H5Sget_simple_extent_ndims(sp) != want ||
               H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] != d0 ||
               (want == 2 && dims[1] != d1) ||
               (H5Tget_class(ft) != H5T_FLOAT && H5Tget_class(ft) != H5T_INTEGER)) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "corrupted: /cells/%s/%s does not have the shape of its row", cell,
                 name);
    } else if ((buf = calloc((size_t)d0 * (size_t)(d1 ? d1 : 1) + 1, elsize)) == NULL) {
        snprintf(err, errlen, "out of memory reading /cells/%s/%s", cell, name);
    } else if (H5Dread(d, nt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        h5_fail(err, errlen, "cannot read /cells/%s/%s", cell, name);
        free(buf);
        buf = NULL;
    }
    if (ft >= 0) {
        H5Tclose(ft);
    }
    if (sp >= 0) {
        H5Sclose(sp);
    }
    if (d >= 0) {
        H5Dclose(d);
    }
    return buf;
}

static int near(double a, double b)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= CP_REPORT_STATS_RTOL * scale + 1e-12;
}

/*
 * Check a cell's raw data against its row and keep what the subcommands
 * need: the per-iteration maxima and the per-rank means (and bytes).
 */
static int load_cell(hid_t grp, const char *name, const collprof_result_row_t *r, int nranks,
                     cp_report_cell_t *c, char *err, size_t errlen)
{
    hsize_t iters = (hsize_t)r->iterations, n = (hsize_t)nranks;
    double *samples = read_array(grp, name, "samples_us", H5T_NATIVE_DOUBLE, sizeof(double), iters,
                                 n, err, errlen);
    if (samples == NULL) {
        return -1;
    }
    c->rank_mean =
        read_array(grp, name, "rank_mean_us", H5T_NATIVE_DOUBLE, sizeof(double), n, 0, err, errlen);
    c->iter_max = calloc((size_t)(iters ? iters : 1), sizeof(double));
    if (c->rank_mean == NULL || c->iter_max == NULL) {
        if (c->iter_max == NULL) {
            snprintf(err, errlen, "out of memory");
        }
        free(samples);
        return -1;
    }
    int rc = 0;
    /* samples are [iterations x ranks]: row i holds every rank's time of iteration i */
    for (hsize_t i = 0; i < iters && rc == 0; i++) {
        double m = 0;
        for (hsize_t q = 0; q < n; q++) {
            double v = samples[i * n + q];
            if (!isfinite(v) || v < 0) {
                rc = -1;
            }
            m = q == 0 || v > m ? v : m;
        }
        c->iter_max[i] = m;
    }
    for (hsize_t q = 0; q < n && rc == 0 && iters > 0; q++) {
        double s = 0;
        for (hsize_t i = 0; i < iters; i++) {
            s += samples[i * n + q];
        }
        if (!near(s / (double)iters, c->rank_mean[q])) {
            rc = -1;
        }
    }
    if (rc != 0) {
        free(samples);
        snprintf(err, errlen, "corrupted: /cells/%s: samples_us and rank_mean_us disagree", name);
        return -1;
    }
    /* each rank's best and typical iteration, for `stragglers` */
    c->rank_min = calloc((size_t)n + 1, sizeof(double));
    c->rank_median = calloc((size_t)n + 1, sizeof(double));
    double *col = malloc(sizeof(double) * ((size_t)iters + 1));
    if (c->rank_min == NULL || c->rank_median == NULL || col == NULL) {
        free(col);
        free(samples);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (hsize_t q = 0; q < n && iters > 0; q++) {
        for (hsize_t i = 0; i < iters; i++) {
            col[i] = samples[i * n + q];
        }
        c->rank_median[q] = cp_report_median(col, (size_t)iters);
        c->rank_min[q] = col[0]; /* sorted by the median */
    }
    free(col);
    free(samples);
    if (cp_report_measured(r)) {
        double *sorted = malloc(sizeof(double) * (size_t)iters);
        if (sorted == NULL) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memcpy(sorted, c->iter_max, sizeof(double) * (size_t)iters);
        cp_stats_t st;
        cp_stats_compute(sorted, (int)iters, &st);
        free(sorted);
        if (!near(st.mean, r->time_mean_us) || !near(st.min, r->time_min_us) ||
            !near(st.p50, r->time_p50_us) || !near(st.p95, r->time_p95_us) ||
            !near(st.p99, r->time_p99_us) || !near(st.max, r->time_max_us)) {
            snprintf(err, errlen,
                     "corrupted: the statistics of cell %d in /results do not match "
                     "/cells/%s/samples_us",
                     r->cell, name);
            return -1;
        }
    }
    htri_t has_send = H5Lexists(grp, "send_bytes", H5P_DEFAULT);
    htri_t has_recv = H5Lexists(grp, "recv_bytes", H5P_DEFAULT);
    if (has_send < 0 || has_recv < 0) {
        h5_fail(err, errlen, "cannot read /cells/%s", name);
        return -1;
    }
    if (has_send > 0 && has_recv > 0) {
        c->send_bytes = read_array(grp, name, "send_bytes", H5T_NATIVE_UINT64, sizeof(uint64_t), n,
                                   0, err, errlen);
        c->recv_bytes = read_array(grp, name, "recv_bytes", H5T_NATIVE_UINT64, sizeof(uint64_t), n,
                                   0, err, errlen);
        if (c->send_bytes == NULL || c->recv_bytes == NULL) {
            return -1;
        }
        /* every byte sent is received: a cheap check of both arrays */
        uint64_t sent = 0, received = 0;
        for (hsize_t q = 0; q < n; q++) {
            sent += c->send_bytes[q];
            received += c->recv_bytes[q];
        }
        if (sent != received) {
            snprintf(err, errlen, "corrupted: /cells/%s: bytes sent and received disagree", name);
            return -1;
        }
    }
    return 0;
}

static int read_cells(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    f->cells = calloc(f->nrows ? f->nrows : 1, sizeof(*f->cells));
    if (f->cells == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    htri_t ex = H5Lexists(file, "cells", H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /cells");
        }
        return ex < 0 ? -1 : 0; /* no raw data at all: rows only */
    }
    hid_t cells = H5Gopen2(file, "cells", H5P_DEFAULT);
    if (cells < 0) {
        h5_fail(err, errlen, "cannot open /cells");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < f->nrows && rc == 0; i++) {
        char name[32];
        snprintf(name, sizeof(name), "%06d", f->rows[i].cell);
        ex = H5Lexists(cells, name, H5P_DEFAULT);
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /cells/%s", name);
            rc = -1;
        } else if (ex > 0) {
            /* absent groups are fine: cells that never ran, or the last cell of a killed run */
            hid_t g = H5Gopen2(cells, name, H5P_DEFAULT);
            if (g < 0) {
                h5_fail(err, errlen, "cannot open /cells/%s", name);
                rc = -1;
            } else {
                rc = load_cell(g, name, &f->rows[i], f->nranks, &f->cells[i], err, errlen);
                H5Gclose(g);
            }
        }
    }
    H5Gclose(cells);
    return rc;
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
        h5_fail(err, errlen, "cannot open the HDF5 file, truncated or corrupted");
    }
    H5Pclose(fapl);
    return file;
}

int cp_report_open(const char *path, cp_report_file_t **out, char *err, size_t errlen)
{
    /* our own one-line errors replace HDF5's stack dumps */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "is a directory");
        return -1;
    }
    FILE *probe = fopen(path, "rb");
    if (probe == NULL) {
        snprintf(err, errlen, "%s", strerror(errno));
        return -1;
    }
    fclose(probe);
    if (st.st_size == 0) {
        snprintf(err, errlen, "empty file (a run that died before writing anything?)");
        return -1;
    }
    htri_t is = H5Fis_hdf5(path);
    if (is <= 0) {
        if (is == 0) {
            snprintf(err, errlen, "not an HDF5 file");
        } else {
            h5_fail(err, errlen, "not a readable HDF5 file");
        }
        return -1;
    }
    cp_report_file_t *f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    hid_t file = open_h5(path, err, errlen);
    int rc = file < 0                                    ? -1
             : read_root(file, f, err, errlen) != 0      ? -1
             : read_results(file, f, err, errlen) != 0   ? -1
             : read_ranks(file, f, err, errlen) != 0     ? -1
             : read_backends(file, f, err, errlen) != 0  ? -1
             : check_environment(file, err, errlen) != 0 ? -1
             : read_cells(file, f, err, errlen) != 0     ? -1
                                                         : 0;
    if (file >= 0 && H5Fclose(file) < 0 && rc == 0) {
        h5_fail(err, errlen, "cannot close the HDF5 file");
        rc = -1;
    }
    if (rc != 0) {
        cp_report_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

void cp_report_close(cp_report_file_t *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < N_STRING_ATTRS; i++) {
        free(*attr_slot(f, i));
    }
    if (f->cells != NULL) {
        for (size_t i = 0; i < f->nrows; i++) {
            free(f->cells[i].iter_max);
            free(f->cells[i].rank_mean);
            free(f->cells[i].rank_min);
            free(f->cells[i].rank_median);
            free(f->cells[i].send_bytes);
            free(f->cells[i].recv_bytes);
        }
    }
    free(f->cells);
    free(f->rows);
    free(f->ranks);
    free(f->backends);
    free(f->path);
    free(f);
}
