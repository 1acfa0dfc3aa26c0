/*
 * The descriptor tables of the result file, generated from the X-macro
 * lists of include/collprof/schema.h, and their HDF5 types.
 */
#include "config.h"

#include "schema/h5schema.h"

#include "base/util.h"

#include <stdio.h>
#include <string.h>

#define CP_H5_COLUMN(row, name, kind, opt)                                                         \
    {#name, COLLPROF_##kind, opt, offsetof(row, name), sizeof(((row *)0)->name)},

#define CP_H5_TABLE_DEF(table, columns, type)                                                      \
    static const cp_h5_column_t table##_columns[] = {columns(CP_H5_COLUMN_OF_##table)};            \
    const cp_h5_table_t cp_h5_table_##table = {                                                    \
        #table, table##_columns, sizeof(table##_columns) / sizeof(table##_columns[0]),             \
        sizeof(type)};

#define CP_H5_COLUMN_OF_results(name, kind, size, opt, unit, doc)                                  \
    CP_H5_COLUMN(collprof_result_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_ranks(name, kind, size, opt, unit, doc)                                    \
    CP_H5_COLUMN(collprof_rank_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_backends(name, kind, size, opt, unit, doc)                                 \
    CP_H5_COLUMN(collprof_backend_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_environment(name, kind, size, opt, unit, doc)                              \
    CP_H5_COLUMN(collprof_env_row_t, name, kind, opt)

#define CP_H5_COLUMN_OF_provenance(name, kind, size, opt, unit, doc)                               \
    CP_H5_COLUMN(collprof_provenance_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_links(name, kind, size, opt, unit, doc)                                    \
    CP_H5_COLUMN(collprof_link_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_screen(name, kind, size, opt, unit, doc)                                   \
    CP_H5_COLUMN(collprof_screen_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_baseline(name, kind, size, opt, unit, doc)                                 \
    CP_H5_COLUMN(collprof_baseline_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_counters(name, kind, size, opt, unit, doc)                                 \
    CP_H5_COLUMN(collprof_counter_row_t, name, kind, opt)

#define CP_H5_COLUMN_OF_trace_ops(name, kind, size, opt, unit, doc)                                \
    CP_H5_COLUMN(collprof_trace_op_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_trace_groups(name, kind, size, opt, unit, doc)                             \
    CP_H5_COLUMN(collprof_trace_group_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_trace_members(name, kind, size, opt, unit, doc)                            \
    CP_H5_COLUMN(collprof_trace_member_row_t, name, kind, opt)
#define CP_H5_COLUMN_OF_trace_splits(name, kind, size, opt, unit, doc)                             \
    CP_H5_COLUMN(collprof_trace_split_row_t, name, kind, opt)

COLLPROF_TABLES(CP_H5_TABLE_DEF)
#define CP_H5_COLUMN_OF_replay(name, kind, size, opt, unit, doc)                                   \
    CP_H5_COLUMN(collprof_replay_row_t, name, kind, opt)

COLLPROF_TRACE_TABLES(CP_H5_TABLE_DEF)
COLLPROF_REPLAY_TABLES(CP_H5_TABLE_DEF)
COLLPROF_CELL_TABLES(CP_H5_TABLE_DEF)

#define CP_H5_ROOT_ATTR(name, kind, doc)                                                           \
    {#name, COLLPROF_##kind, offsetof(collprof_root_attrs_t, name)},
const cp_h5_attr_t cp_h5_root_attrs[CP_H5_NROOT_ATTRS] = {COLLPROF_ROOT_ATTRS(CP_H5_ROOT_ATTR)};

#define CP_H5_CELL_DATASET(id, name, kind, dims, doc) {#name, COLLPROF_##kind, dims},
const cp_h5_dataset_t cp_h5_cell_datasets[CP_H5_CELL_NDATASETS] = {
    COLLPROF_CELL_DATASETS(CP_H5_CELL_DATASET)};

void cp_h5_cell_name(int cell, char *buf, size_t len)
{
    snprintf(buf, len, COLLPROF_CELL_NAME_FORMAT, cell);
}

hid_t cp_h5_native(collprof_kind_t kind)
{
    switch (kind) {
    case COLLPROF_I32: return H5T_NATIVE_INT32;
    case COLLPROF_I64: return H5T_NATIVE_INT64;
    case COLLPROF_U64: return H5T_NATIVE_UINT64;
    default: return H5T_NATIVE_DOUBLE;
    }
}

hid_t cp_h5_str_type(size_t size, H5T_cset_t cset)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    if (size != H5T_VARIABLE) {
        H5Tset_strpad(t, H5T_STR_NULLTERM);
    }
    H5Tset_cset(t, cset);
    return t;
}

void cp_h5_insert(hid_t t, const cp_h5_column_t *c, H5T_cset_t cset)
{
    if (c->kind != COLLPROF_STR) {
        H5Tinsert(t, c->name, c->offset, cp_h5_native(c->kind));
        return;
    }
    hid_t s = cp_h5_str_type(c->size, cset);
    H5Tinsert(t, c->name, c->offset, s);
    H5Tclose(s);
}

hid_t cp_h5_row_type(const cp_h5_table_t *tab)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, tab->recsize);
    for (size_t i = 0; i < tab->ncolumns; i++) {
        cp_h5_insert(t, &tab->columns[i], H5T_CSET_UTF8);
    }
    return t;
}

void cp_h5_release(hid_t id)
{
    /* every id we open has one reference: dropping it closes the object, whatever it is */
    if (id >= 0) {
        H5Idec_ref(id);
    }
}

int cp_h5_write_attr(hid_t obj, const char *name, collprof_kind_t kind, const void *value)
{
    hid_t t = kind == COLLPROF_STR ? cp_h5_str_type(H5T_VARIABLE, H5T_CSET_UTF8)
                                   : H5Tcopy(cp_h5_native(kind));
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT)
                                       : H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, t, value) >= 0 ? 0 : -1;
    cp_h5_release(a);
    cp_h5_release(sp);
    cp_h5_release(t);
    return rc;
}

int cp_h5_write_records(hid_t loc, const char *name, hid_t type, const void *recs, size_t n)
{
    hsize_t dims[1] = {n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc =
        d >= 0 && (n == 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, recs) >= 0) ? 0 : -1;
    cp_h5_release(d);
    cp_h5_release(sp);
    return rc;
}

void cp_h5_sanitize_row(const cp_h5_table_t *tab, void *row)
{
    for (size_t c = 0; c < tab->ncolumns; c++) {
        const cp_h5_column_t *col = &tab->columns[c];
        if (col->kind != COLLPROF_STR) {
            continue;
        }
        char *field = (char *)row + col->offset, text[4096];
        size_t len = strnlen(field, col->size), k = 0;
        while (k < len && field[k] >= 0x20 && field[k] < 0x7f) {
            k++;
        }
        if (k == len && len < col->size) { /* printable ASCII, terminated: as it is (fast) */
            memset(field + len, 0, col->size - len);
            continue;
        }
        snprintf(text, sizeof(text), "%.*s", (int)col->size, field); /* may lack its NUL */
        memset(field, 0, col->size);
        cp_text_sanitize(text, field, col->size);
    }
}

void cp_h5_root_schema(collprof_root_attrs_t *a, char *version, size_t vlen, char *iso, size_t ilen)
{
    cp_utc_iso(iso, ilen);
    snprintf(version, vlen, "%d.%d", COLLPROF_SCHEMA_VERSION_MAJOR, COLLPROF_SCHEMA_VERSION_MINOR);
    a->schema = COLLPROF_SCHEMA_NAME;
    a->schema_version = version;
    a->schema_version_major = COLLPROF_SCHEMA_VERSION_MAJOR;
    a->schema_version_minor = COLLPROF_SCHEMA_VERSION_MINOR;
    a->collprof_version = PACKAGE_VERSION;
    a->created = iso;
}

int cp_h5_write_table(hid_t file, const cp_h5_table_t *tab, void *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        cp_h5_sanitize_row(tab, (char *)rows + i * tab->recsize);
    }
    hid_t t = cp_h5_row_type(tab);
    int rc = cp_h5_write_records(file, tab->name, t, rows, n);
    cp_h5_release(t);
    return rc;
}

int cp_h5_write_root(hid_t file, const collprof_root_attrs_t *a)
{
    int rc = 0;
    for (size_t i = 0; i < CP_H5_NROOT_ATTRS; i++) {
        const cp_h5_attr_t *d = &cp_h5_root_attrs[i];
        rc |= cp_h5_write_attr(file, d->name, d->kind, (const char *)a + d->offset);
    }
    return rc;
}
