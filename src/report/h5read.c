/*
 * Loading a result file (docs/hdf5-schema.md) and checking it.
 *
 * Every table is read by field NAME: the memory compound types below are
 * built from the tables of include/collprof/schema.h (through
 * src/output/h5schema.h, as the writer's), and HDF5 converts the file's
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

#include "report/reader.h"

#include <collprof/vocab.h>

#include "core/stats.h"
#include "core/util.h"

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

/* A dataset may unpack to at most this many times the bytes the file stores for it, plus
 * CP_REPORT_SLACK: a small hostile file cannot claim millions of rows and take gigabytes. */
#define CP_REPORT_MAX_EXPANSION 1024.0
#define CP_REPORT_SLACK         (4.0 * 1024 * 1024)
/* and no dataset unpacks to more than 64 times the whole file (gzip of zeros reaches 1000:1) */
#define CP_REPORT_FILE_EXPANSION 64.0

/* ---- values, for generic code ---------------------------------------------- */

void cp_report_column_value(const cp_h5_column_t *c, const void *rec, cp_report_value_t *v)
{
    const char *p = (const char *)rec + c->offset;
    memset(v, 0, sizeof(*v));
    v->kind = c->kind;
    switch (c->kind) {
    case COLLPROF_STR: v->s = p; break;
    case COLLPROF_I32: {
        int32_t x;
        memcpy(&x, p, sizeof(x));
        v->i = x;
        break;
    }
    case COLLPROF_I64: {
        int64_t x;
        memcpy(&x, p, sizeof(x));
        v->i = x;
        break;
    }
    case COLLPROF_U64: memcpy(&v->u, p, sizeof(v->u)); break;
    default: memcpy(&v->d, p, sizeof(v->d)); break;
    }
}

int cp_report_measured(const collprof_result_row_t *r)
{
    int st = collprof_cell_status_from_name(r->status);
    return st == COLLPROF_CELL_OK || st == COLLPROF_CELL_WRONG;
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
        unsigned c = 0;
        int n = cp_utf8_seq(p, (size_t)(end - p), &c);
        /* control characters (tab allowed), invalid UTF-8, and the bidirectional overrides
         * and isolates, which would reorder what a terminal shows */
        if (n == 0 || (c < 0x20 && c != '\t') || c == 0x7f || cp_bidi_control(c)) {
            return 0;
        }
        p += n;
    }
    return 1;
}

/* ---- root attributes ------------------------------------------------------------ */

/* A string attribute (fixed or variable length) into *out, malloc'd, as the file has it. */
static int read_str_raw(hid_t a, hid_t ft, const char *name, char **out, char *err, size_t errlen)
{
    /* HDF5 does not convert between character sets: read in the file's own */
    int var = H5Tis_variable_str(ft) > 0;
    size_t size = var ? 0 : H5Tget_size(ft);
    hid_t mt = cp_h5_str_type(var ? H5T_VARIABLE : size + 1, H5Tget_cset(ft));
    char *v = NULL, *s = NULL;
    herr_t rd = var ? H5Aread(a, mt, &s) : (v = calloc(size + 1, 1)) ? H5Aread(a, mt, v) : 0;
    cp_h5_release(mt);
    if (rd < 0) {
        h5_fail(err, errlen, "cannot read attribute '%.64s'", name);
        free(v);
        return -1;
    }
    if (var) {
        v = strdup(s ? s : "");
        H5free_memory(s);
    }
    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    *out = v;
    return 0;
}

/* A string attribute into *out, malloc'd and checked. */
static int read_str_attr(hid_t a, hid_t ft, const char *name, char **out, char *err, size_t errlen)
{
    char *v;
    if (read_str_raw(a, ft, name, &v, err, errlen) != 0) {
        return -1;
    }
    if (!valid_text(v, strlen(v) + 1)) {
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
            h5_fail(err, errlen, "cannot read the root attributes");
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
        h5_fail(err, errlen, "cannot read attribute '%s'", d->name);
    } else if (!ok || H5Sget_simple_extent_npoints(sp) != 1) {
        snprintf(err, errlen, "attribute '%s' is not %s", d->name,
                 d->kind == COLLPROF_STR   ? "a string"
                 : d->kind == COLLPROF_F64 ? "a number"
                                           : "an integer");
    } else if (d->kind == COLLPROF_STR) {
        rc = read_str_attr(a, ft, d->name, slot, err, errlen) == 0 ? 1 : -1;
    } else if (H5Aread(a, d->kind == COLLPROF_F64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG, slot) <
               0) {
        h5_fail(err, errlen, "cannot read attribute '%s'", d->name);
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

/* ---- tables ---------------------------------------------------------------------- */

/* Whether a file member of class cls can be read as column c. */
static int column_fits(const cp_h5_column_t *c, H5T_class_t cls, hid_t m)
{
    switch (c->kind) {
    case COLLPROF_STR: return cls == H5T_STRING && H5Tis_variable_str(m) == 0;
    case COLLPROF_F64: return cls == H5T_FLOAT || cls == H5T_INTEGER;
    default: return cls == H5T_INTEGER;
    }
}

/*
 * The memory compound of table tab, checked against the file's type: every
 * column must exist there with a compatible class, but for one added later
 * (left empty).  Extra file members are simply not read.
 */
static hid_t mem_type(hid_t ftype, const cp_h5_table_t *tab, char *err, size_t errlen)
{
    if (H5Tget_class(ftype) != H5T_COMPOUND) {
        snprintf(err, errlen, "/%s is not a table", tab->name);
        return H5I_INVALID_HID;
    }
    hid_t t = H5Tcreate(H5T_COMPOUND, tab->recsize);
    for (size_t i = 0; i < tab->ncolumns; i++) {
        const cp_h5_column_t *c = &tab->columns[i];
        int idx = H5Tget_member_index(ftype, c->name);
        if (idx < 0) {
            H5Eclear2(H5E_DEFAULT);
            if (c->opt) {
                continue; /* a file from before the column: left empty */
            }
            snprintf(err, errlen, "/%s has no column '%s'", tab->name, c->name);
            cp_h5_release(t);
            return H5I_INVALID_HID;
        }
        hid_t m = H5Tget_member_type(ftype, (unsigned)idx);
        if (!column_fits(c, H5Tget_member_class(ftype, (unsigned)idx), m)) {
            snprintf(err, errlen, "/%s column '%s' has an unexpected type", tab->name, c->name);
            cp_h5_release(m);
            cp_h5_release(t);
            return H5I_INVALID_HID;
        }
        cp_h5_insert(t, c, H5Tget_cset(m)); /* no charset conversion in HDF5 */
        cp_h5_release(m);
    }
    return t;
}

/* The size of the file being read (cp_report_open): the most its tables may unpack to. */
static double file_bytes;
/* The line a crash while reading it prints (cp_report_crash_line) */
static char crash_line[8300];

const char *cp_report_crash_line(void)
{
    return crash_line;
}

/*
 * Is d's data in this file, and would elems elements of ft unpack to no
 * more than the file could hold?  A virtual dataset or one with external
 * storage reads other files (a FIFO would hang, /dev/zero never ends); a
 * dataset far larger than its storage, or than the whole file, is a
 * decompression bomb.  0, or -1 with the reason in err.
 */
static int size_plausible(hid_t d, hid_t ft, hsize_t elems, const char *what, char *err,
                          size_t errlen)
{
    hid_t dcpl = H5Dget_create_plist(d);
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    int external = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
    cp_h5_release(dcpl);
    if (layout == H5D_LAYOUT_ERROR || external < 0) {
        h5_fail(err, errlen, "cannot read the layout of %s", what);
        return -1;
    }
    if (layout == H5D_VIRTUAL || external > 0) {
        snprintf(err, errlen, "%s is a%s dataset: its data would come from other files", what,
                 layout == H5D_VIRTUAL ? " virtual" : "n external");
        return -1;
    }
    double stored = (double)H5Dget_storage_size(d);
    double logical = (double)elems * (double)H5Tget_size(ft);
    double most = file_bytes * CP_REPORT_FILE_EXPANSION + CP_REPORT_SLACK;
    if (logical > stored * CP_REPORT_MAX_EXPANSION + CP_REPORT_SLACK || logical > most) {
        snprintf(err, errlen,
                 "corrupted: %s claims %llu elements (%.0f bytes) but the file stores %.0f bytes "
                 "of it (%.0f in all)",
                 what, (unsigned long long)elems, logical, stored, file_bytes);
        return -1;
    }
    return 0;
}

/* Read all dims[0] records of dataset d into *out (calloc'd). */
static int read_records(hid_t d, hid_t ft, hid_t sp, const cp_h5_table_t *tab, void **out,
                        size_t *n, char *err, size_t errlen)
{
    hid_t mt = mem_type(ft, tab, err, errlen);
    hsize_t dims[1];
    int rc = -1;
    if (mt < 0) {
        return -1;
    }
    char what[64];
    snprintf(what, sizeof(what), "/%s", tab->name);
    if (H5Sget_simple_extent_ndims(sp) != 1 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        snprintf(err, errlen, "/%s is not a 1-D table", tab->name);
    } else if (size_plausible(d, ft, dims[0], what, err, errlen) != 0) {
        /* err says why */
    } else if (dims[0] > 0 && (*out = calloc((size_t)dims[0], tab->recsize)) == NULL) {
        snprintf(err, errlen, "corrupted: /%s claims %llu rows", tab->name,
                 (unsigned long long)dims[0]);
    } else if (dims[0] > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        h5_fail(err, errlen, "cannot read /%s", tab->name);
        free(*out);
        *out = NULL;
    } else {
        *n = (size_t)dims[0];
        rc = 1;
    }
    cp_h5_release(mt);
    return rc;
}

/*
 * Check every string of every record (valid text) and every float (finite,
 * not negative).
 */
static int check_records(const cp_h5_table_t *tab, const void *recs, size_t n, char *err,
                         size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        const void *rec = (const char *)recs + i * tab->recsize;
        for (size_t k = 0; k < tab->ncolumns; k++) {
            const cp_h5_column_t *c = &tab->columns[k];
            cp_report_value_t v;
            cp_report_column_value(c, rec, &v);
            if (c->kind == COLLPROF_STR && !valid_text(v.s, c->size)) {
                snprintf(err, errlen, "corrupted: /%s row %zu, column '%s' is not valid text",
                         tab->name, i, c->name);
                return -1;
            }
            if (c->kind == COLLPROF_F64 && (!isfinite(v.d) || v.d < 0)) {
                snprintf(err, errlen, "corrupted: /%s row %zu, column '%s' is %g", tab->name, i,
                         c->name, v.d);
                return -1;
            }
        }
    }
    return 0;
}

/* A table's own check of record i: 0, or -1 with the reason in err. */
typedef int row_check_t(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                        size_t errlen);

/*
 * Read a whole table of the schema into *out (calloc'd, *n records) and
 * check its fields, then each record with check (when not NULL).  0 when
 * read, or when absent and optional; -1 on error (*out NULL).
 */
static int read_table(hid_t file, const cp_h5_table_t *tab, int optional, row_check_t *check,
                      const cp_report_file_t *f, void **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    htri_t ex = H5Lexists(file, tab->name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /%s", tab->name);
        } else if (!optional) {
            snprintf(err, errlen, "no /%s table", tab->name);
        }
        return ex == 0 && optional ? 0 : -1;
    }
    int rc = -1;
    hid_t d = H5Dopen2(file, tab->name, H5P_DEFAULT);
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    if (ft < 0 || sp < 0) {
        h5_fail(err, errlen, "cannot open /%s", tab->name);
    } else if (read_records(d, ft, sp, tab, out, n, err, errlen) > 0) {
        rc = check_records(tab, *out, *n, err, errlen);
    }
    for (size_t i = 0; i < *n && rc == 0 && check != NULL; i++) {
        rc = check((const char *)*out + i * tab->recsize, i, f, err, errlen);
    }
    cp_h5_release(sp);
    cp_h5_release(ft);
    cp_h5_release(d);
    if (rc != 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

static int check_row(const void *rec, size_t i, const cp_report_file_t *f, char *err, size_t errlen)
{
    const collprof_result_row_t *r = rec;
    /* a file holds the statuses of cells that ran or were decided, never "pending" */
    int known = collprof_cell_status_from_name(r->status) > COLLPROF_CELL_PENDING;
    /* an imported file (collprof-report import) may not know the iterations (OSU without -f) */
    int imported = f->root.imported_from[0] != '\0';
    const char *bad = !known                                                     ? "status"
                      : r->cell < 0                                              ? "cell"
                      : r->op[0] == '\0'                                         ? "op"
                      : r->iterations < 0                                        ? "iterations"
                      : r->warmup < 0                                            ? "warmup"
                      : (r->in_place & ~1) != 0                                  ? "in_place"
                      : r->iterations == 0 && cp_report_measured(r) && !imported ? "iterations"
                      : r->repeats < 0 || r->repeats > r->iterations             ? "repeats"
                      : r->bimodal && r->repeats < 4                             ? "bimodal"
                                                                                 : NULL;
    if (bad != NULL) {
        snprintf(err, errlen, "corrupted: /results row %zu, column '%s' is out of range", i, bad);
        return -1;
    }
    return 0;
}

static int check_rank(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                      size_t errlen)
{
    const collprof_rank_row_t *r = rec;
    if (r->rank != (int32_t)i || r->node_id < 0 ||
        (f->root.node_count > 0 && r->node_id >= f->root.node_count)) {
        snprintf(err, errlen, "corrupted: /ranks row %zu", i);
        return -1;
    }
    return 0;
}

static int check_backend(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                         size_t errlen)
{
    (void)f;
    if (((const collprof_backend_row_t *)rec)->link_gbps > 1e9) {
        snprintf(err, errlen, "corrupted: /backends row %zu: link_gbps out of range", i);
        return -1;
    }
    return 0;
}

static int read_results(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = read_table(file, &cp_h5_table_results, 0, check_row, f, &recs, &f->nrows, err, errlen);
    f->rows = recs;
    return rc;
}

static int read_ranks(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    size_t n;
    int rc = read_table(file, &cp_h5_table_ranks, 0, check_rank, f, &recs, &n, err, errlen);
    f->ranks = recs;
    f->nranks = (int)n;
    if (rc == 0 && f->root.world_size == 0) { /* a writer without the attribute: the table says */
        f->root.world_size = (long long)n;
    }
    /* an import from a tool that names no hosts (OSU) knows the ranks' number only */
    int counts_only = n == 0 && f->root.imported_from[0] != '\0';
    if (rc == 0 && (long long)n != f->root.world_size && !counts_only) {
        snprintf(err, errlen, "corrupted: /ranks has %zu rows for %lld ranks", n,
                 f->root.world_size);
        rc = -1;
    }
    return rc;
}

static int read_backends(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = read_table(file, &cp_h5_table_backends, 1, check_backend, f, &recs, &f->nbackends, err,
                        errlen);
    f->backends = recs;
    return rc;
}

static int check_link(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                      size_t errlen)
{
    const collprof_link_row_t *r = rec;
    long long nodes = f->root.node_count > 0 ? f->root.node_count : 1 << 20;
    if (r->node_a < 0 || r->node_b <= r->node_a || r->node_b >= nodes ||
        collprof_cell_status_from_name(r->status) <= COLLPROF_CELL_PENDING) {
        snprintf(err, errlen, "corrupted: /links row %zu", i);
        return -1;
    }
    return 0;
}

/* The link sweep, optional: only a collprof --link-sweep run writes it. */
static int read_links(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = read_table(file, &cp_h5_table_links, 1, check_link, f, &recs, &f->nlinks, err, errlen);
    f->links = recs;
    return rc;
}

static const char *const screen_verdicts[] = {"healthy", "slow", "unreachable", "inconclusive",
                                              "untested"};

static const char *const verify_verdicts[] = {"passed", "failed", "inconclusive", "skipped"};

static int check_screen(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                        size_t errlen)
{
    const collprof_screen_row_t *r = rec;
    long long nodes = f->root.node_count > 0 ? f->root.node_count : 1 << 20;
    int node = !strcmp(r->what, "node"), link = !strcmp(r->what, "link"), known = 0;
    for (size_t v = 0; v < sizeof(screen_verdicts) / sizeof(screen_verdicts[0]); v++) {
        known |= !strcmp(r->verdict, screen_verdicts[v]);
    }
    if (!strcmp(r->what, "verify")) { /* the validation collective (1.9): no node of its own */
        for (size_t v = 0; v < sizeof(verify_verdicts) / sizeof(verify_verdicts[0]); v++) {
            known |= !strcmp(r->verdict, verify_verdicts[v]);
        }
        if (!known || r->node_a != -1 || r->node_b != -1 || !(r->score >= 0) || r->partners < 0 ||
            r->partners > nodes) {
            snprintf(err, errlen, "corrupted: /screen row %zu", i);
            return -1;
        }
        return 0;
    }
    if (!known || (!node && !link) || r->node_a < 0 || r->node_a >= nodes ||
        (node && r->node_b != -1) || (link && (r->node_b < 0 || r->node_b >= nodes)) ||
        !(r->score >= 0) || !(r->ref_bw_gbs >= 0) || !(r->ref_lat_us >= 0)) {
        snprintf(err, errlen, "corrupted: /screen row %zu", i);
        return -1;
    }
    return 0;
}

/* The screen's verdict, optional: only a collprof --screen run writes it. */
static int read_screen(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc =
        read_table(file, &cp_h5_table_screen, 1, check_screen, f, &recs, &f->nscreen, err, errlen);
    f->screen = recs;
    return rc;
}

/* /environment: the variables that shape communication, as the writer recorded them. */
static int read_environment(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc =
        read_table(file, &cp_h5_table_environment, 1, NULL, NULL, &recs, &f->nenv, err, errlen);
    f->env = recs;
    return rc;
}

/* ---- slurm_* root attributes -------------------------------------------------------- */

/* at most this many: a file is not a place for an unbounded list of job facts */
#define CP_REPORT_MAX_SLURM 256

typedef struct slurm_iter {
    cp_report_file_t *f;
    char *err;
    size_t errlen;
} slurm_iter_t;

/*
 * One root attribute: kept when it is a scalar string named slurm_*, others are
 * skipped.  The writer copies these from the job as they are (a job name is the
 * user's), so the value is made printable (cp_text_sanitize) rather than refused.
 */
static herr_t slurm_attr(hid_t obj, const char *name, const H5A_info_t *info, void *data)
{
    slurm_iter_t *it = data;
    cp_report_file_t *f = it->f;
    (void)info;
    if (strncmp(name, "slurm_", 6) != 0) {
        return 0;
    }
    if (f->nslurm == CP_REPORT_MAX_SLURM) {
        snprintf(it->err, it->errlen, "corrupted: more than %d slurm_* attributes",
                 CP_REPORT_MAX_SLURM);
        return -1;
    }
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    hid_t ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
    hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
    cp_report_attr_t *at = &f->slurm[f->nslurm];
    char *raw = NULL;
    size_t len = 0;
    int rc = -1;
    if (ft < 0 || sp < 0) {
        h5_fail(it->err, it->errlen, "cannot read attribute '%.64s'", name);
    } else if (H5Tget_class(ft) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        rc = 0; /* not one of the writer's: not shown */
    } else if (read_str_raw(a, ft, name, &raw, it->err, it->errlen) == 0) {
        len = 4 * strlen(raw) + 1; /* room for every byte as \\xNN */
        at->value = malloc(len);
        at->name = malloc(4 * strlen(name) + 1);
        f->nslurm++; /* owned either way */
        rc = at->value != NULL && at->name != NULL ? 1 : -1;
        if (rc < 0) {
            snprintf(it->err, it->errlen, "out of memory");
        } else {
            cp_text_sanitize(raw, at->value, len);
            cp_text_sanitize(name, at->name, 4 * strlen(name) + 1);
        }
        free(raw);
    }
    cp_h5_release(sp);
    cp_h5_release(ft);
    cp_h5_release(a);
    return rc < 0 ? -1 : 0;
}

/* The job facts the writer added under Slurm (docs/hdf5-schema.md), in creation order. */
static int read_slurm(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    slurm_iter_t it = {f, err, errlen};
    hsize_t idx = 0;
    if ((f->slurm = calloc(CP_REPORT_MAX_SLURM, sizeof(*f->slurm))) == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    err[0] = '\0';
    if (H5Aiterate2(file, H5_INDEX_NAME, H5_ITER_INC, &idx, slurm_attr, &it) < 0) {
        if (err[0] == '\0') {
            h5_fail(err, errlen, "cannot list the root attributes");
        }
        return -1;
    }
    return 0;
}

const char *cp_report_slurm(const cp_report_file_t *f, const char *name)
{
    for (size_t i = 0; i < f->nslurm; i++) {
        if (!strcmp(f->slurm[i].name + 6, name)) {
            return f->slurm[i].value;
        }
    }
    return "";
}

/* ---- /cells/<cell> ------------------------------------------------------------------ */

/*
 * Read dataset id of a cell, of the expected shape (1-D [d0] when d1 == 0,
 * else [d0 x d1]), into a new buffer of native elements.
 */
static void *read_array(hid_t grp, const char *cell, int id, hsize_t d0, hsize_t d1, char *err,
                        size_t errlen)
{
    const cp_h5_dataset_t *ds = &cp_h5_cell_datasets[id];
    void *buf = NULL;
    hid_t d = H5Dopen2(grp, ds->name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hid_t ft = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    hsize_t dims[2] = {0, 0};
    if (sp < 0 || ft < 0) {
        h5_fail(err, errlen, "cannot open /cells/%s/%s", cell, ds->name);
    } else if (H5Sget_simple_extent_ndims(sp) != ds->dims ||
               H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] != d0 ||
               (ds->dims == 2 && dims[1] != d1) ||
               (H5Tget_class(ft) != H5T_FLOAT && H5Tget_class(ft) != H5T_INTEGER)) {
        H5Eclear2(H5E_DEFAULT);
        snprintf(err, errlen, "corrupted: /cells/%s/%s does not have the shape of its row", cell,
                 ds->name);
    } else if (size_plausible(d, ft, d0 * (d1 ? d1 : 1), ds->name, err, errlen) != 0) {
        /* err says why */
    } else if ((buf = calloc((size_t)d0 * (size_t)(d1 ? d1 : 1) + 1, sizeof(double))) == NULL) {
        snprintf(err, errlen, "out of memory reading /cells/%s/%s", cell, ds->name);
    } else if (H5Dread(d, cp_h5_native(ds->kind), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
        h5_fail(err, errlen, "cannot read /cells/%s/%s", cell, ds->name);
        free(buf);
        buf = NULL;
    }
    cp_h5_release(ft);
    cp_h5_release(sp);
    cp_h5_release(d);
    return buf;
}

static int near(double a, double b)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= CP_REPORT_STATS_RTOL * scale + 1e-12;
}

/*
 * From samples [iterations x ranks] (row i holds every rank's time of
 * iteration i): the per-iteration maxima into c->iter_max, checked against
 * the per-rank means the file holds.  -1 when they disagree.
 */
static int iteration_maxima(const double *samples, hsize_t iters, hsize_t n, cp_report_cell_t *c)
{
    for (hsize_t i = 0; i < iters; i++) {
        double m = 0;
        for (hsize_t q = 0; q < n; q++) {
            double v = samples[i * n + q];
            if (!isfinite(v) || v < 0) {
                return -1;
            }
            m = q == 0 || v > m ? v : m;
        }
        c->iter_max[i] = m;
    }
    for (hsize_t q = 0; q < n && iters > 0; q++) {
        double s = 0;
        for (hsize_t i = 0; i < iters; i++) {
            s += samples[i * n + q];
        }
        if (!near(s / (double)iters, c->rank_mean[q])) {
            return -1;
        }
    }
    return 0;
}

/* Each rank's best and typical iteration, for `stragglers`. */
static int rank_order_stats(const double *samples, hsize_t iters, hsize_t n, cp_report_cell_t *c)
{
    c->rank_min = calloc((size_t)n + 1, sizeof(double));
    c->rank_median = calloc((size_t)n + 1, sizeof(double));
    double *col = malloc(sizeof(double) * ((size_t)iters + 1));
    if (c->rank_min == NULL || c->rank_median == NULL || col == NULL) {
        free(col);
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
    return 0;
}

/* The row's statistics must be those of the raw samples. */
static int check_row_stats(const collprof_result_row_t *r, const cp_report_cell_t *c,
                           const char *name, char *err, size_t errlen)
{
    size_t iters = (size_t)r->iterations;
    double *sorted = malloc(sizeof(double) * (iters + 1));
    if (sorted == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(sorted, c->iter_max, sizeof(double) * iters);
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
    return 0;
}

/* send_bytes and recv_bytes, when the cell has them (alltoallv, allgatherv). */
static int load_bytes(hid_t grp, const char *name, hsize_t n, cp_report_cell_t *c, char *err,
                      size_t errlen)
{
    const char *send = cp_h5_cell_datasets[CP_H5_CELL_SEND_BYTES].name;
    const char *recv = cp_h5_cell_datasets[CP_H5_CELL_RECV_BYTES].name;
    htri_t has_send = H5Lexists(grp, send, H5P_DEFAULT);
    htri_t has_recv = H5Lexists(grp, recv, H5P_DEFAULT);
    if (has_send < 0 || has_recv < 0) {
        h5_fail(err, errlen, "cannot read /cells/%s", name);
        return -1;
    }
    if (has_send == 0 || has_recv == 0) {
        return 0;
    }
    c->send_bytes = read_array(grp, name, CP_H5_CELL_SEND_BYTES, n, 0, err, errlen);
    c->recv_bytes = read_array(grp, name, CP_H5_CELL_RECV_BYTES, n, 0, err, errlen);
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
    return 0;
}

/* The repeats' figures (median of their p50s, interval, modes) must be those of their
 * p50s, and each p50 that of its repeat's slice of the samples. */
static int check_repeat_figures(const collprof_result_row_t *r, const cp_report_cell_t *c,
                                const char *name, char *err, size_t errlen)
{
    int n = r->repeats;
    double *v = malloc(sizeof(double) * ((size_t)r->iterations + 1));
    if (v == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int bad = 0;
    uint64_t at = 0;
    for (int k = 0; k < n && !bad; k++) {
        uint64_t len = c->rep_iters[k];
        bad = len == 0 || at + len > (uint64_t)r->iterations;
        if (!bad) {
            memcpy(v, c->iter_max + at, sizeof(double) * len);
            cp_stats_t st;
            cp_stats_compute(v, (int)len, &st);
            bad = !near(st.p50, c->rep_p50[k]);
            at += len;
        }
    }
    bad = bad || at != (uint64_t)r->iterations;
    cp_median_ci_t ci;
    cp_modes_t m;
    int bimodal = 0;
    if (!bad) {
        memcpy(v, c->rep_p50, sizeof(double) * (size_t)n);
        cp_stats_median(v, (size_t)n);
        cp_stats_median_ci(v, n, &ci);
        bimodal = cp_stats_bimodal(v, n, &m);
        bad = !near(ci.median, r->rep_p50_us) || !near(ci.lo, r->ci_lo_us) ||
              !near(ci.hi, r->ci_hi_us) || !near(ci.coverage, r->ci_level) ||
              bimodal != r->bimodal || !near(m.lo, r->mode_lo_us) || !near(m.hi, r->mode_hi_us);
    }
    free(v);
    if (bad) {
        snprintf(err, errlen,
                 "corrupted: the repeats of cell %d in /results do not match /cells/%s", r->cell,
                 name);
        return -1;
    }
    return 0;
}

/* repeat_p50_us and repeat_iterations of a cell with repeats (schema 1.4). */
static int load_repeats(hid_t grp, const char *name, const collprof_result_row_t *r,
                        cp_report_cell_t *c, char *err, size_t errlen)
{
    if (r->repeats < 2) {
        return 0;
    }
    c->rep_p50 = read_array(grp, name, CP_H5_CELL_REP_P50, (hsize_t)r->repeats, 0, err, errlen);
    c->rep_iters = c->rep_p50 ? read_array(grp, name, CP_H5_CELL_REP_ITERS, (hsize_t)r->repeats, 0,
                                           err, errlen)
                              : NULL;
    if (c->rep_p50 == NULL || c->rep_iters == NULL) {
        return -1;
    }
    return cp_report_measured(r) ? check_repeat_figures(r, c, name, err, errlen) : 0;
}

/*
 * Check a cell's raw data against its row and keep what the subcommands
 * need: the per-iteration maxima and the per-rank means (and bytes).
 */
static int load_cell(hid_t grp, const char *name, const collprof_result_row_t *r, int nranks,
                     cp_report_cell_t *c, char *err, size_t errlen)
{
    hsize_t iters = (hsize_t)r->iterations, n = (hsize_t)nranks;
    double *samples = read_array(grp, name, CP_H5_CELL_SAMPLES, iters, n, err, errlen);
    if (samples == NULL) {
        return -1;
    }
    c->rank_mean = read_array(grp, name, CP_H5_CELL_RANK_MEAN, n, 0, err, errlen);
    c->iter_max = calloc((size_t)(iters ? iters : 1), sizeof(double));
    int rc = -1;
    if (c->rank_mean == NULL) {
        /* err says why */
    } else if (c->iter_max == NULL) {
        snprintf(err, errlen, "out of memory");
    } else if (iteration_maxima(samples, iters, n, c) != 0) {
        snprintf(err, errlen, "corrupted: /cells/%s: samples_us and rank_mean_us disagree", name);
    } else if (rank_order_stats(samples, iters, n, c) != 0) {
        snprintf(err, errlen, "out of memory");
    } else {
        rc = 0;
    }
    free(samples);
    if (rc == 0 && cp_report_measured(r)) {
        rc = check_row_stats(r, c, name, err, errlen);
    }
    if (rc == 0) {
        rc = load_repeats(grp, name, r, c, err, errlen);
    }
    return rc == 0 ? load_bytes(grp, name, n, c, err, errlen) : -1;
}

/* /cells/<name>/provenance when the cell has it: one row per rank, in rank order. */
static int load_provenance(hid_t grp, const char *name, int nranks, cp_report_cell_t *c, char *err,
                           size_t errlen)
{
    void *recs = NULL;
    size_t n = 0;
    if (read_table(grp, &cp_h5_table_provenance, 1, NULL, NULL, &recs, &n, err, errlen) != 0) {
        return -1;
    }
    c->prov = recs;
    for (size_t q = 0; c->prov != NULL && q < n; q++) {
        if (c->prov[q].rank != (int32_t)q) {
            n = 0; /* reported below */
        }
    }
    if (c->prov != NULL && n != (size_t)nranks) {
        snprintf(err, errlen, "corrupted: /cells/%s/%s is not one row per rank", name,
                 cp_h5_table_provenance.name);
        return -1;
    }
    return 0;
}

/* /cells/<name> when it exists: absent groups are fine (cells that never ran, or the last
 * cell of a killed run) */
static int read_cell(hid_t cells, const collprof_result_row_t *r, int nranks, cp_report_cell_t *c,
                     char *err, size_t errlen)
{
    char name[32];
    cp_h5_cell_name(r->cell, name, sizeof(name));
    htri_t ex = H5Lexists(cells, name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /cells/%s", name);
        }
        return ex < 0 ? -1 : 0;
    }
    hid_t g = H5Gopen2(cells, name, H5P_DEFAULT);
    if (g < 0) {
        h5_fail(err, errlen, "cannot open /cells/%s", name);
        return -1;
    }
    int rc = load_cell(g, name, r, nranks, c, err, errlen);
    if (rc == 0) {
        rc = load_provenance(g, name, nranks, c, err, errlen);
    }
    cp_h5_release(g);
    return rc;
}

static int read_cells(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    f->cells = calloc(f->nrows ? f->nrows : 1, sizeof(*f->cells));
    if (f->cells == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    htri_t ex = H5Lexists(file, COLLPROF_CELLS_GROUP, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            h5_fail(err, errlen, "cannot look up /cells");
        }
        return ex < 0 ? -1 : 0; /* no raw data at all: rows only */
    }
    hid_t cells = H5Gopen2(file, COLLPROF_CELLS_GROUP, H5P_DEFAULT);
    if (cells < 0) {
        h5_fail(err, errlen, "cannot open /cells");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < f->nrows && rc == 0; i++) {
        rc = read_cell(cells, &f->rows[i], f->nranks, &f->cells[i], err, errlen);
    }
    cp_h5_release(cells);
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
    file_bytes = (double)st.st_size;
    htri_t is = H5Fis_hdf5(path);
    if (is == 0) {
        snprintf(err, errlen, "not an HDF5 file");
    } else if (is < 0) {
        h5_fail(err, errlen, "not a readable HDF5 file");
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
    int rc = file < 0                                      ? -1
             : read_root(file, &f->root, err, errlen) != 0 ? -1
             : read_results(file, f, err, errlen) != 0     ? -1
             : read_ranks(file, f, err, errlen) != 0       ? -1
             : read_backends(file, f, err, errlen) != 0    ? -1
             : read_links(file, f, err, errlen) != 0       ? -1
             : read_screen(file, f, err, errlen) != 0      ? -1
             : read_environment(file, f, err, errlen) != 0 ? -1
             : read_slurm(file, f, err, errlen) != 0       ? -1
             : read_cells(file, f, err, errlen) != 0       ? -1
                                                           : 0;
    if (file >= 0 && H5Fclose(file) < 0 && rc == 0) {
        h5_fail(err, errlen, "cannot close the HDF5 file");
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
    void *owned[] = {f->cells,  f->rows, f->ranks, f->backends, f->links,
                     f->screen, f->env,  f->slurm, f->path,     f};
    free_all(owned, sizeof(owned) / sizeof(owned[0]));
}
