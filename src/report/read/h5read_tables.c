/*
 * The result file's tables (h5read_int.h): each read by field name into the schema's row
 * type, its size bounded against the file's, every row checked; and the slurm_* attributes.
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

/*
 * Is d's data in this file, and would elems elements of ft unpack to no
 * more than the file could hold?  A virtual dataset or one with external
 * storage reads other files (a FIFO would hang, /dev/zero never ends); a
 * dataset far larger than its storage, or than the whole file, is a
 * decompression bomb.  0, or -1 with the reason in err.
 */
int rd_size_plausible(hid_t d, hid_t ft, hsize_t elems, const char *what, char *err, size_t errlen)
{
    hid_t dcpl = H5Dget_create_plist(d);
    H5D_layout_t layout = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    int external = dcpl >= 0 ? H5Pget_external_count(dcpl) : -1;
    cp_h5_release(dcpl);
    if (layout == H5D_LAYOUT_ERROR || external < 0) {
        rd_h5_fail(err, errlen, "cannot read the layout of %s", what);
        return -1;
    }
    if (layout == H5D_VIRTUAL || external > 0) {
        snprintf(err, errlen, "%s is a%s dataset: its data would come from other files", what,
                 layout == H5D_VIRTUAL ? " virtual" : "n external");
        return -1;
    }
    double stored = (double)H5Dget_storage_size(d);
    double logical = (double)elems * (double)H5Tget_size(ft);
    double most = rd_file_bytes * CP_REPORT_FILE_EXPANSION + CP_REPORT_SLACK;
    if (logical > stored * CP_REPORT_MAX_EXPANSION + CP_REPORT_SLACK || logical > most) {
        snprintf(err, errlen,
                 "corrupted: %s claims %llu elements (%.0f bytes) but the file stores %.0f bytes "
                 "of it (%.0f in all)",
                 what, (unsigned long long)elems, logical, stored, rd_file_bytes);
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
    } else if (rd_size_plausible(d, ft, dims[0], what, err, errlen) != 0) {
        /* err says why */
    } else if (dims[0] > 0 && (*out = calloc((size_t)dims[0], tab->recsize)) == NULL) {
        snprintf(err, errlen, "corrupted: /%s claims %llu rows", tab->name,
                 (unsigned long long)dims[0]);
    } else if (dims[0] > 0 && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        rd_h5_fail(err, errlen, "cannot read /%s", tab->name);
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
 * not negative; /replay's may be -1, its "not recorded").
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
            if (c->kind == COLLPROF_STR && !rd_valid_text(v.s, c->size)) {
                snprintf(err, errlen, "corrupted: /%s row %zu, column '%s' is not valid text",
                         tab->name, i, c->name);
                return -1;
            }
            if (c->kind == COLLPROF_F64 && (!isfinite(v.d) || v.d < 0) &&
                !(tab == &cp_h5_table_replay && v.d == -1)) {
                snprintf(err, errlen, "corrupted: /%s row %zu, column '%s' is %g", tab->name, i,
                         c->name, v.d);
                return -1;
            }
        }
    }
    return 0;
}

/* A table's own check of record i: 0, or -1 with the reason in err. */

/*
 * Read a whole table of the schema into *out (calloc'd, *n records) and
 * check its fields, then each record with check (when not NULL).  0 when
 * read, or when absent and optional; -1 on error (*out NULL).
 */
int rd_read_table(hid_t file, const cp_h5_table_t *tab, int optional, row_check_t *check,
                  const cp_report_file_t *f, void **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    htri_t ex = H5Lexists(file, tab->name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            rd_h5_fail(err, errlen, "cannot look up /%s", tab->name);
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
        rd_h5_fail(err, errlen, "cannot open /%s", tab->name);
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

int rd_read_results(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc =
        rd_read_table(file, &cp_h5_table_results, 0, check_row, f, &recs, &f->nrows, err, errlen);
    f->rows = recs;
    return rc;
}

int rd_read_ranks(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    size_t n;
    int rc = rd_read_table(file, &cp_h5_table_ranks, 0, check_rank, f, &recs, &n, err, errlen);
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

int rd_read_backends(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = rd_read_table(file, &cp_h5_table_backends, 1, check_backend, f, &recs, &f->nbackends,
                           err, errlen);
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
int rd_read_links(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc =
        rd_read_table(file, &cp_h5_table_links, 1, check_link, f, &recs, &f->nlinks, err, errlen);
    f->links = recs;
    return rc;
}

static int check_counter(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                         size_t errlen)
{
    const collprof_counter_row_t *r = rec;
    long long nodes = f->root.node_count > 0 ? f->root.node_count : 1 << 20;
    if (r->cell < 0 || r->node < 0 || r->node >= nodes || r->ops < 0) {
        snprintf(err, errlen, "corrupted: /counters row %zu", i);
        return -1;
    }
    return 0;
}

/* The counters around the cells, optional: files before 1.11 and runs with --counters none
 * have none. */
int rd_read_counters(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = rd_read_table(file, &cp_h5_table_counters, 1, check_counter, f, &recs, &f->ncounters,
                           err, errlen);
    f->counters = recs;
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
int rd_read_screen(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = rd_read_table(file, &cp_h5_table_screen, 1, check_screen, f, &recs, &f->nscreen, err,
                           errlen);
    f->screen = recs;
    return rc;
}

/* /environment: the variables that shape communication, as the writer recorded them. */
int rd_read_environment(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc =
        rd_read_table(file, &cp_h5_table_environment, 1, NULL, NULL, &recs, &f->nenv, err, errlen);
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
        rd_h5_fail(it->err, it->errlen, "cannot read attribute '%.64s'", name);
    } else if (H5Tget_class(ft) != H5T_STRING || H5Sget_simple_extent_npoints(sp) != 1) {
        rc = 0; /* not one of the writer's: not shown */
    } else if (rd_read_str_raw(a, ft, name, &raw, it->err, it->errlen) == 0) {
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
int rd_read_slurm(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
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
            rd_h5_fail(err, errlen, "cannot list the root attributes");
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

/* The rows of the 1-D dataset name (0 when absent): 0, or -1. */
static int count_rows(hid_t file, const char *name, uint64_t *n, char *err, size_t errlen)
{
    *n = 0;
    htri_t ex = H5Lexists(file, name, H5P_DEFAULT);
    if (ex <= 0) {
        if (ex < 0) {
            rd_h5_fail(err, errlen, "cannot look up /%s", name);
        }
        return ex < 0 ? -1 : 0;
    }
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID;
    hsize_t dims[1] = {0};
    int rc = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
                     H5Sget_simple_extent_dims(sp, dims, NULL) == 1
                 ? 0
                 : -1;
    if (rc != 0) {
        snprintf(err, errlen, "corrupted: /%s is not a table", name);
    }
    *n = (uint64_t)dims[0];
    cp_h5_release(sp);
    cp_h5_release(d);
    return rc;
}

int rd_read_trace_counts(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    return count_rows(file, cp_h5_table_trace_ops.name, &f->trace_ops, err, errlen) != 0 ||
                   count_rows(file, cp_h5_table_trace_groups.name, &f->trace_groups, err, errlen) !=
                       0
               ? -1
               : 0;
}

static const char *const replay_statuses[] = {"ok", "wrong", "error", "unsupported", "skipped"};

static int check_replay(const void *rec, size_t i, const cp_report_file_t *f, char *err,
                        size_t errlen)
{
    const collprof_replay_row_t *r = rec;
    int known = 0, op = !strcmp(r->what, "op"), rank = !strcmp(r->what, "rank"); /* (--gaps) */
    (void)f;
    for (size_t v = 0; v < sizeof(replay_statuses) / sizeof(replay_statuses[0]); v++) {
        known |= !strcmp(r->status, replay_statuses[v]);
    }
    if (!known || (!op && !rank && strcmp(r->what, "type") != 0 && strcmp(r->what, "trace") != 0) ||
        r->backend[0] == '\0' || (op && (r->rank < 0 || r->seq < 0 || r->group < 0)) ||
        (rank && r->rank < 0) || r->rank < -1 || r->group < -1 || r->ops < 0 || r->iterations < 0 ||
        !(r->time_p50_us >= 0) || r->time_p50_us > 1e15 || !(r->critical_us < 1e15) ||
        r->straggler < -1 || r->straggler_ops < 0) {
        snprintf(err, errlen, "corrupted: /replay row %zu", i);
        return -1;
    }
    return 0;
}

/* A replay's rows, optional: files of other runs, and before 1.11, have none. */
int rd_read_replay(hid_t file, cp_report_file_t *f, char *err, size_t errlen)
{
    void *recs;
    int rc = rd_read_table(file, &cp_h5_table_replay, 1, check_replay, f, &recs, &f->nreplay, err,
                           errlen);
    f->replay = recs;
    return rc;
}
