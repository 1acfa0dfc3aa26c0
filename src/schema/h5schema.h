/*
 * The HDF5 result file's format as data: descriptor tables generated from
 * the one declaration in include/collprof/schema.h, and the HDF5 types
 * they map to.  The writer (h5writer.c) and the reader
 * (src/report/read/h5read.c) both work from these, so neither spells a table,
 * column, attribute or dataset name of its own.
 */
#ifndef COLLPROF_OUTPUT_H5SCHEMA_H
#define COLLPROF_OUTPUT_H5SCHEMA_H

#include <collprof/schema.h>
#include <hdf5.h>
#include <stddef.h>

/** One column of a table: a member of the row struct and of the compound type. */
typedef struct cp_h5_column {
    const char *name;
    collprof_kind_t kind;
    int opt;       /**< may be absent from a file (added after 1.0) */
    size_t offset; /**< in the row struct */
    size_t size;   /**< bytes of the field */
} cp_h5_column_t;

/** A table: a 1-D dataset at the root of the file, one row struct per record. */
typedef struct cp_h5_table {
    const char *name;
    const cp_h5_column_t *columns;
    size_t ncolumns;
    size_t recsize; /**< sizeof the row struct */
} cp_h5_table_t;

/* cp_h5_table_results, _ranks, _backends, _environment, _links */
#define CP_H5_TABLE_DECL(table, columns, type) extern const cp_h5_table_t cp_h5_table_##table;
COLLPROF_TABLES(CP_H5_TABLE_DECL)
/* cp_h5_table_trace_ops, _trace_groups, _trace_members, _trace_splits: a trace file's */
COLLPROF_TRACE_TABLES(CP_H5_TABLE_DECL)
/* cp_h5_table_replay: a replay's (collprof --replay) */
COLLPROF_REPLAY_TABLES(CP_H5_TABLE_DECL)
/* cp_h5_table_provenance: a table inside /cells/<cell> */
COLLPROF_CELL_TABLES(CP_H5_TABLE_DECL)
#undef CP_H5_TABLE_DECL

/** A root attribute: a member of collprof_root_attrs_t. */
typedef struct cp_h5_attr {
    const char *name;
    collprof_kind_t kind;
    size_t offset;
} cp_h5_attr_t;

#define CP_H5_ATTR_ID(name, kind, doc) CP_H5_ATTR_##name,
enum { COLLPROF_ROOT_ATTRS(CP_H5_ATTR_ID) CP_H5_NROOT_ATTRS };
#undef CP_H5_ATTR_ID
extern const cp_h5_attr_t cp_h5_root_attrs[CP_H5_NROOT_ATTRS];

/** A dataset of /cells/<cell>. */
typedef struct cp_h5_dataset {
    const char *name;
    collprof_kind_t kind;
    int dims;
} cp_h5_dataset_t;

#define CP_H5_CELL_ID(id, name, kind, dims, doc) CP_H5_CELL_##id,
enum { COLLPROF_CELL_DATASETS(CP_H5_CELL_ID) CP_H5_CELL_NDATASETS };
#undef CP_H5_CELL_ID
extern const cp_h5_dataset_t cp_h5_cell_datasets[CP_H5_CELL_NDATASETS];

/** The name of a cell's group under /cells. */
void cp_h5_cell_name(int cell, char *buf, size_t len);

/** The native HDF5 type of a number kind (a predefined type: not to be closed). */
hid_t cp_h5_native(collprof_kind_t kind);

/** A fixed-size (or H5T_VARIABLE) NUL-terminated string type in charset cset. */
hid_t cp_h5_str_type(size_t size, H5T_cset_t cset);

/** Add column c to compound t: native numbers, strings in charset cset. */
void cp_h5_insert(hid_t t, const cp_h5_column_t *c, H5T_cset_t cset);

/** The compound type of a table's row struct, strings in UTF-8: the type written. */
hid_t cp_h5_row_type(const cp_h5_table_t *tab);

/** A scalar attribute of a schema kind (strings variable-length UTF-8), created or overwritten:
 *  0, or -1. */
int cp_h5_write_attr(hid_t obj, const char *name, collprof_kind_t kind, const void *value);

/** The schema's own root attributes into *a (its name, "major.minor" in version, the major and
 *  minor numbers, collprof's version, created: now, UTC, in iso); the others are the caller's.
 *  version and iso must outlive *a. */
void cp_h5_root_schema(collprof_root_attrs_t *a, char *version, size_t vlen, char *iso,
                       size_t ilen);
/** n rows of table tab as its dataset on file, each row made printable first (in place): 0, or
 *  -1. */
int cp_h5_write_table(hid_t file, const cp_h5_table_t *tab, void *rows, size_t n);
/** Every root attribute of *a on file: 0, or nonzero when one could not be written. */
int cp_h5_write_root(hid_t file, const collprof_root_attrs_t *a);

/** n records of type as a 1-D dataset name of loc, written in one go: 0, or -1. */
int cp_h5_write_records(hid_t loc, const char *name, hid_t type, const void *recs, size_t n);

/** Make every string column of row (a record of tab) one line of valid UTF-8 that fits its
 *  field (cp_text_sanitize): what any reader can take, whatever a host name, a tag or a
 *  library's message held. */
void cp_h5_sanitize_row(const cp_h5_table_t *tab, void *row);

/** Close any HDF5 id (file, group, dataset, attribute, type, space, list); ids < 0 are skipped. */
void cp_h5_release(hid_t id);

#endif /* COLLPROF_OUTPUT_H5SCHEMA_H */
