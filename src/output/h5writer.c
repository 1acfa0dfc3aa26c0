#include "config.h"

#include "output/h5writer.h"

#include "schema/h5schema.h"

#include "base/log.h"
#include "runner/prov.h"
#include "base/util.h"
#include "slurm/slurm_meta.h"

#include <hdf5.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

struct cp_h5 {
    hid_t file;
    hid_t row_type;
    hid_t results;
    hid_t cells;
    hsize_t nrows;
    hid_t counters, counter_type; /* /counters, created with its first rows (have_counters) */
    hsize_t ncounters;
    int have_counters;
    hid_t replay, replay_type; /* /replay, created with its first rows (have_replay) */
    hsize_t nreplay;
    int have_replay;
    int broken; /* a write failed: the library's view of the file is unreliable */
};

/* ---- small helpers ------------------------------------------------------ */

static int attr_str(hid_t obj, const char *name, const char *value)
{
    return cp_h5_write_attr(obj, name, COLLPROF_STR, &value);
}

/* A table of the schema, then free(recs). */
static int write_table(hid_t file, const cp_h5_table_t *tab, void *recs, size_t n)
{
    int rc = cp_h5_write_table(file, tab, recs, n);
    free(recs);
    return rc;
}

/* A 1-D dataset of /cells/<cell> with n elements. */
static int write_cell_array(hid_t grp, int id, const void *buf, size_t n)
{
    const cp_h5_dataset_t *ds = &cp_h5_cell_datasets[id];
    return cp_h5_write_records(grp, ds->name, cp_h5_native(ds->kind), buf, n);
}

/* ---- tables written once ------------------------------------------------ */

static int write_ranks(hid_t file, const cp_run_info_t *ri)
{
    const cp_boot_t *b = ri->boot;
    collprof_rank_row_t *recs = calloc((size_t)b->nranks, sizeof(*recs));
    if (recs == NULL) {
        return -1;
    }
    for (int r = 0; r < b->nranks; r++) {
        recs[r].rank = r;
        snprintf(recs[r].hostname, sizeof(recs[r].hostname), "%s", cp_boot_host(b, r));
        recs[r].node_id = b->node_ids[r];
        recs[r].local_rank = b->local_ranks[r];
        recs[r].pid = b->pids[r];
        snprintf(recs[r].cpu_affinity, sizeof(recs[r].cpu_affinity), "%s",
                 ri->affinity ? ri->affinity[r] : "");
        cp_prov_rank(ri->plugins, ri->nplugins, r, &recs[r]);
        cp_log_path(r, recs[r].log, sizeof(recs[r].log));
    }
    return write_table(file, &cp_h5_table_ranks, recs, (size_t)b->nranks);
}

static int write_backends(hid_t file, const cp_run_info_t *ri)
{
    collprof_backend_row_t *recs = calloc((size_t)ri->nplugins + 1, sizeof(*recs));
    if (recs == NULL) {
        return -1;
    }
    for (int i = 0; i < ri->nplugins; i++) {
        cp_run_backend_row(ri, i, &recs[i]);
    }
    return write_table(file, &cp_h5_table_backends, recs, (size_t)ri->nplugins);
}

static int write_environment(hid_t file)
{
    size_t n = 0, cap = 0;
    collprof_env_row_t *recs = NULL;
    for (char **e = environ; *e; e++) {
        char name[sizeof(recs->name)];
        const char *value = cp_env_captured(*e, name, sizeof(name));
        if (value == NULL) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            collprof_env_row_t *g = realloc(recs, cap * sizeof(*recs));
            if (g == NULL) {
                free(recs);
                return -1;
            }
            recs = g;
        }
        memset(&recs[n], 0, sizeof(recs[n]));
        snprintf(recs[n].name, sizeof(recs[n].name), "%s", name);
        snprintf(recs[n].value, sizeof(recs[n].value), "%s", value);
        n++;
    }
    return write_table(file, &cp_h5_table_environment, recs, n);
}

static int write_root_attrs(hid_t file, const cp_run_info_t *ri)
{
    const cp_boot_t *b = ri->boot;
    char iso[64], version[32], cmd[8192] = "", timing[256];
    cp_policy_describe(ri->opt->sync, ri->opt->batch, ri->opt->alloc, ri->opt->rotate, timing,
                       sizeof(timing));
    for (int i = 0; i < ri->argc; i++) {
        strncat(cmd, i ? " " : "", sizeof(cmd) - strlen(cmd) - 1);
        strncat(cmd, ri->argv[i], sizeof(cmd) - strlen(cmd) - 1);
    }
    collprof_root_attrs_t attrs = {
        .command_line = cmd,
        .world_size = b->nranks,
        .node_count = b->nnodes,
        .launcher = b->launcher,
        .pmix_version = b->pmix_version,
        .tag = ri->opt->tag,
        .timing = timing,
        .check = ri->opt->check ? "exact" : "disabled",
        .link_gbps = ri->opt->link_gbps, /* --link-gbps, 0 = not given */
        .status = "incomplete",
        /* measured here, not imported (collprof-report import sets them) */
        .imported_from = "",
        .imported_version = "",
        .imported_format = "",
        .imported_file = "",
    };
    cp_h5_root_schema(&attrs, version, sizeof(version), iso, sizeof(iso));
    int rc = cp_h5_write_root(file, &attrs);
    cp_slurm_kv_t kv[CP_SLURM_META_MAX];
    int nkv = cp_slurm_meta(kv, CP_SLURM_META_MAX);
    for (int i = 0; i < nkv; i++) {
        rc |= attr_str(file, kv[i].key, kv[i].value);
    }
    return rc;
}

int cp_h5_open(const char *path, const cp_run_info_t *ri, cp_h5_t **out, char *err, size_t errlen)
{
    cp_h5_t *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* no library clean-up at exit: after a failed write (a full disk) it
     * crashes closing the file again; every file is closed explicitly */
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* we report errors ourselves */
    /*
     * The caller reserved the name with an empty file (O_EXCL).  Never open
     * it again by name: in a directory others can write, it may have become
     * a link to someone else's file.  Remove whatever is there and create
     * anew with O_EXCL (H5F_ACC_EXCL), which follows no link: the worst an
     * intruder can do is make this fail.
     */
    unlink(path);
    h->file = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (h->file < 0) {
        snprintf(err, errlen, "cannot create HDF5 file %s", path);
        free(h);
        return -1;
    }
    h->row_type = cp_h5_row_type(&cp_h5_table_results);
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {64};
    hid_t sp = H5Screate_simple(1, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    h->results = H5Dcreate2(h->file, cp_h5_table_results.name, h->row_type, sp, H5P_DEFAULT, dcpl,
                            H5P_DEFAULT);
    cp_h5_release(dcpl);
    cp_h5_release(sp);
    h->cells = H5Gcreate2(h->file, COLLPROF_CELLS_GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (h->results < 0 || h->cells < 0 || write_root_attrs(h->file, ri) != 0 ||
        write_ranks(h->file, ri) != 0 || write_backends(h->file, ri) != 0 ||
        write_environment(h->file) != 0 || H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0) {
        snprintf(err, errlen, "cannot write the header of HDF5 file %s", path);
        cp_h5_close(h, "aborted");
        return -1;
    }
    *out = h;
    return 0;
}

/* SAMPLE_TILE x SAMPLE_TILE samples: one chunk of the dataset, the most write_samples copies */
#define SAMPLE_TILE 1024

/* One tile of d: iterations i0.. x ranks q0.., transposed from rank-major into t. */
static int write_tile(hid_t d, hid_t nt, const cp_result_t *r, double *t, hsize_t i0, hsize_t q0)
{
    hsize_t ni = (hsize_t)r->iters - i0 < SAMPLE_TILE ? (hsize_t)r->iters - i0 : SAMPLE_TILE;
    hsize_t nq = (hsize_t)r->nranks - q0 < SAMPLE_TILE ? (hsize_t)r->nranks - q0 : SAMPLE_TILE;
    for (hsize_t q = 0; q < nq; q++) {
        const double *from = r->samples + (size_t)(q0 + q) * (size_t)r->iters + (size_t)i0;
        for (hsize_t i = 0; i < ni; i++) {
            t[i * nq + q] = from[i];
        }
    }
    hsize_t start[2] = {i0, q0}, count[2] = {ni, nq};
    hid_t fs = H5Dget_space(d);
    hid_t ms = H5Screate_simple(2, count, NULL);
    int rc = fs >= 0 && ms >= 0 &&
                     H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0 &&
                     H5Dwrite(d, nt, ms, fs, H5P_DEFAULT, t) >= 0
                 ? 0
                 : -1;
    cp_h5_release(ms);
    cp_h5_release(fs);
    return rc;
}

/*
 * [iterations x ranks]: samples arrive rank-major, the file is iteration-major.  Written a
 * chunk at a time, each transposed into one tile's buffer (8 MiB at most), so that rank 0 holds
 * no second copy of every rank's samples (n x iterations x 8 bytes: 32.8 GB at 4,096 ranks and
 * a million iterations) and every chunk is compressed once.
 */
static int write_samples(hid_t grp, const cp_result_t *r)
{
    hsize_t dims[2] = {(hsize_t)r->iters, (hsize_t)r->nranks};
    hsize_t chunk[2] = {dims[0] < SAMPLE_TILE ? dims[0] : SAMPLE_TILE,
                        dims[1] < SAMPLE_TILE ? dims[1] : SAMPLE_TILE};
    double *t = malloc(sizeof(double) * (size_t)chunk[0] * (size_t)chunk[1]);
    if (t == NULL) {
        return -1;
    }
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 4);
    }
    const cp_h5_dataset_t *ds = &cp_h5_cell_datasets[CP_H5_CELL_SAMPLES];
    hid_t nt = cp_h5_native(ds->kind);
    hid_t sp = H5Screate_simple(ds->dims, dims, NULL);
    hid_t d = H5Dcreate2(grp, ds->name, nt, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc = d >= 0 ? 0 : -1;
    for (hsize_t i0 = 0; rc == 0 && i0 < dims[0]; i0 += chunk[0]) {
        for (hsize_t q0 = 0; rc == 0 && q0 < dims[1]; q0 += chunk[1]) {
            rc = write_tile(d, nt, r, t, i0, q0);
        }
    }
    cp_h5_release(d);
    cp_h5_release(sp);
    cp_h5_release(dcpl);
    free(t);
    return rc;
}

/* /cells/<cell>: the raw data of a cell that ran; -1 when the group cannot be made, else *rc. */
static int write_cell(hid_t cells, const collprof_result_row_t *row, const cp_result_t *r, int *rc)
{
    char name[32];
    cp_h5_cell_name(row->cell, name, sizeof(name));
    hid_t g = H5Gcreate2(cells, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) {
        return -1;
    }
#define CP_H5_CELL_ATTR(col) *rc |= attr_str(g, #col, row->col);
    COLLPROF_CELL_ATTRS(CP_H5_CELL_ATTR)
#undef CP_H5_CELL_ATTR
    *rc |= write_samples(g, r);
    *rc |= write_cell_array(g, CP_H5_CELL_RANK_MEAN, r->rank_mean, (size_t)r->nranks);
    if (r->send_bytes != NULL && r->recv_bytes != NULL) {
        *rc |= write_cell_array(g, CP_H5_CELL_SEND_BYTES, r->send_bytes, (size_t)r->nranks);
        *rc |= write_cell_array(g, CP_H5_CELL_RECV_BYTES, r->recv_bytes, (size_t)r->nranks);
    }
    if (r->repeats > 1 && r->rep_p50 != NULL && r->rep_iters != NULL) {
        *rc |= write_cell_array(g, CP_H5_CELL_REP_P50, r->rep_p50, (size_t)r->repeats);
        *rc |= write_cell_array(g, CP_H5_CELL_REP_ITERS, r->rep_iters, (size_t)r->repeats);
    }
    if (r->prov != NULL && r->prov->differ) { /* the row says "per rank" */
        size_t n = (size_t)r->prov->nranks, len = n * sizeof(*r->prov->ranks);
        void *recs = malloc(len); /* write_table sanitizes and frees its copy */
        *rc |= recs == NULL
                   ? -1
                   : write_table(g, &cp_h5_table_provenance, memcpy(recs, r->prov->ranks, len), n);
    }
    cp_h5_release(g);
    return 0;
}

/* /counters: created with the first cell that has some, extended by each after it. */
static int append_counters(cp_h5_t *h, int cell, const cp_result_t *r)
{
    const cp_h5_table_t *tab = &cp_h5_table_counters;
    if (!h->have_counters) {
        hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {256};
        hid_t sp = H5Screate_simple(1, dims, maxdims), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, chunk);
        h->counter_type = cp_h5_row_type(tab);
        h->counters =
            H5Dcreate2(h->file, tab->name, h->counter_type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
        cp_h5_release(dcpl);
        cp_h5_release(sp);
        h->have_counters = 1;
    }
    hsize_t n = (hsize_t)r->ncounters, newsize[1] = {h->ncounters + n}, start[1] = {h->ncounters};
    collprof_counter_row_t *rows = malloc((size_t)n * sizeof(*rows));
    if (h->counters < 0 || rows == NULL || H5Dset_extent(h->counters, newsize) < 0) {
        free(rows);
        return -1;
    }
    for (hsize_t k = 0; k < n; k++) {
        rows[k] = r->counters[k];
        rows[k].cell = cell;
        cp_h5_sanitize_row(tab, &rows[k]);
    }
    hid_t fs = H5Dget_space(h->counters), ms = H5Screate_simple(1, &n, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, &n, NULL);
    int rc = H5Dwrite(h->counters, h->counter_type, ms, fs, H5P_DEFAULT, rows) < 0;
    cp_h5_release(ms);
    cp_h5_release(fs);
    free(rows);
    h->ncounters += n;
    return rc ? -1 : 0;
}

int cp_h5_cell(cp_h5_t *h, const collprof_result_row_t *row, const cp_result_t *r)
{
    int rc = 0;
    /* the row */
    hsize_t newsize[1] = {h->nrows + 1}, start[1] = {h->nrows}, one[1] = {1};
    if (H5Dset_extent(h->results, newsize) < 0) {
        h->broken = 1;
        return -1;
    }
    hid_t fs = H5Dget_space(h->results), ms = H5Screate_simple(1, one, NULL);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, one, NULL);
    collprof_result_row_t clean = *row;
    cp_h5_sanitize_row(&cp_h5_table_results, &clean);
    rc |= H5Dwrite(h->results, h->row_type, ms, fs, H5P_DEFAULT, &clean) < 0;
    cp_h5_release(ms);
    cp_h5_release(fs);
    h->nrows++;
    /* the raw data of a cell that ran */
    if (r->samples != NULL && r->rank_mean != NULL && write_cell(h->cells, row, r, &rc) != 0) {
        h->broken = 1;
        return -1;
    }
    if (r->ncounters > 0 && append_counters(h, row->cell, r) != 0) {
        h->broken = 1;
        return -1;
    }
    /* a killed run keeps everything up to here */
    rc |= H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0;
    h->broken |= rc != 0;
    return rc ? -1 : 0;
}

/* A table written whole at the end of a run (/links, /screen): 0, or -1 (the file is then
 * broken). */
static int whole_table(cp_h5_t *h, const cp_h5_table_t *tab, const void *rows, size_t n)
{
    /* a copy: write_table sanitises the strings (the backends' messages) and frees it */
    void *copy = malloc(tab->recsize * (n > 0 ? n : 1));
    if (copy == NULL) {
        return -1;
    }
    memcpy(copy, rows, tab->recsize * n);
    int rc = write_table(h->file, tab, copy, n);
    rc |= H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0;
    h->broken |= rc != 0;
    return rc ? -1 : 0;
}

int cp_h5_links(cp_h5_t *h, const collprof_link_row_t *rows, size_t n)
{
    return whole_table(h, &cp_h5_table_links, rows, n);
}

int cp_h5_screen(cp_h5_t *h, const collprof_screen_row_t *rows, size_t n)
{
    return whole_table(h, &cp_h5_table_screen, rows, n);
}

/* /replay: an extendible table, created with its first rows. */
static int replay_table(cp_h5_t *h)
{
    if (!h->have_replay) {
        hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {1024};
        hid_t sp = H5Screate_simple(1, dims, maxdims), dcpl = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(dcpl, 1, chunk);
        h->replay_type = cp_h5_row_type(&cp_h5_table_replay);
        h->replay = H5Dcreate2(h->file, cp_h5_table_replay.name, h->replay_type, sp, H5P_DEFAULT,
                               dcpl, H5P_DEFAULT);
        cp_h5_release(dcpl);
        cp_h5_release(sp);
        h->have_replay = 1;
    }
    return h->replay >= 0 ? 0 : -1;
}

int cp_h5_replay(cp_h5_t *h, uint64_t at, const collprof_replay_row_t *rows, size_t n)
{
    errno = 0; /* (the caller's message: no older error's) */
    hsize_t cnt[1] = {n}, start[1] = {at}, size[1] = {at + n > h->nreplay ? at + n : h->nreplay};
    collprof_replay_row_t *copy = malloc((n + 1) * sizeof(*copy)); /* sanitised */
    int rc = copy == NULL || replay_table(h) != 0 || H5Dset_extent(h->replay, size) < 0;
    h->nreplay = rc ? h->nreplay : size[0];
    for (size_t i = 0; !rc && i < n; i++) {
        copy[i] = rows[i];
        cp_h5_sanitize_row(&cp_h5_table_replay, &copy[i]);
    }
    hid_t fs = !rc && n > 0 ? H5Dget_space(h->replay) : -1;
    hid_t ms = !rc && n > 0 ? H5Screate_simple(1, cnt, NULL) : -1;
    if (!rc && n > 0) {
        rc = H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ||
             H5Dwrite(h->replay, h->replay_type, ms, fs, H5P_DEFAULT, copy) < 0;
    }
    cp_h5_release(ms);
    cp_h5_release(fs);
    free(copy);
    rc |= H5Fflush(h->file, H5F_SCOPE_GLOBAL) < 0;
    h->broken |= rc != 0;
    return rc ? -1 : 0;
}

void cp_h5_close(cp_h5_t *h, const char *status)
{
    if (h == NULL) {
        return;
    }
    if (h->broken) {
        /* leave the file as the last successful flush left it: closing
         * would try to write again (and HDF5 1.10 may crash doing so) */
        free(h);
        return;
    }
    if (h->file >= 0) {
        attr_str(h->file, cp_h5_root_attrs[CP_H5_ATTR_status].name, status);
    }
    cp_h5_release(h->results);
    cp_h5_release(h->cells);
    cp_h5_release(h->row_type);
    if (h->have_counters) {
        cp_h5_release(h->counters);
        cp_h5_release(h->counter_type);
    }
    if (h->have_replay) {
        cp_h5_release(h->replay);
        cp_h5_release(h->replay_type);
    }
    if (h->file >= 0) {
        H5Fclose(h->file);
    }
    free(h);
}
