#include "config.h"

#include "output/h5writer.h"

#include "core/log.h"
#include "core/util.h"
#include "slurm/slurm_meta.h"

#include <hdf5.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

extern char **environ;

struct cp_h5 {
    hid_t file;
    hid_t row_type;
    hid_t results;
    hid_t cells;
    hsize_t nrows;
    int broken; /* a write failed: the library's view of the file is unreliable */
};

/* ---- small helpers ------------------------------------------------------ */

static hid_t str_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static int attr_str(hid_t obj, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    hid_t a = H5Aexists(obj, name) > 0 ? H5Aopen(obj, name, H5P_DEFAULT)
                                       : H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, t, &value) >= 0 ? 0 : -1;
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(sp);
    H5Tclose(t);
    return rc;
}

static int attr_double(hid_t obj, const char *name, double value)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &value) >= 0 ? 0 : -1;
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(sp);
    return rc;
}

static int attr_int(hid_t obj, const char *name, long long value)
{
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(obj, name, H5T_NATIVE_LLONG, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_LLONG, &value) >= 0 ? 0 : -1;
    if (a >= 0) {
        H5Aclose(a);
    }
    H5Sclose(sp);
    return rc;
}

/* The compound type of collprof_result_row_t, generated from the column list. */
static hid_t row_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(collprof_result_row_t));
#define CP_H5_STR(name, size)                                                                      \
    {                                                                                              \
        hid_t s = str_type(size);                                                                  \
        H5Tinsert(t, #name, offsetof(collprof_result_row_t, name), s);                             \
        H5Tclose(s);                                                                               \
    }
#define CP_H5_I32(name, size)                                                                      \
    H5Tinsert(t, #name, offsetof(collprof_result_row_t, name), H5T_NATIVE_INT32);
#define CP_H5_U64(name, size)                                                                      \
    H5Tinsert(t, #name, offsetof(collprof_result_row_t, name), H5T_NATIVE_UINT64);
#define CP_H5_F64(name, size)                                                                      \
    H5Tinsert(t, #name, offsetof(collprof_result_row_t, name), H5T_NATIVE_DOUBLE);
#define CP_H5_FIELD(name, kind, size, unit, doc) CP_H5_##kind(name, size)
    COLLPROF_RESULT_COLUMNS(CP_H5_FIELD)
#undef CP_H5_FIELD
#undef CP_H5_STR
#undef CP_H5_I32
#undef CP_H5_U64
#undef CP_H5_F64
    return t;
}

/* Write n records (of a compound or plain type) as a 1-D dataset in one go. */
static int write_table(hid_t loc, const char *name, hid_t type, const void *recs, size_t n)
{
    hsize_t dims[1] = {n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc =
        d >= 0 && (n == 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, recs) >= 0) ? 0 : -1;
    if (d >= 0) {
        H5Dclose(d);
    }
    H5Sclose(sp);
    return rc;
}

/* ---- tables written once ------------------------------------------------ */

typedef struct rank_rec {
    int32_t rank;
    char hostname[64];
    int32_t node_id;
    int32_t local_rank;
    int64_t pid;
    char cpu_affinity[256];
    char device[64];
} rank_rec_t;

static int write_ranks(hid_t file, const cp_run_info_t *ri)
{
    const cp_boot_t *b = ri->boot;
    rank_rec_t *recs = calloc((size_t)b->nranks, sizeof(*recs));
    if (recs == NULL) {
        return -1;
    }
    for (int r = 0; r < b->nranks; r++) {
        recs[r].rank = r;
        snprintf(recs[r].hostname, sizeof(recs[r].hostname), "%s", b->hostnames[r]);
        recs[r].node_id = b->node_ids[r];
        recs[r].local_rank = b->local_ranks[r];
        recs[r].pid = b->pids[r];
        snprintf(recs[r].cpu_affinity, sizeof(recs[r].cpu_affinity), "%s",
                 ri->affinity ? ri->affinity[r] : "");
        snprintf(recs[r].device, sizeof(recs[r].device), "host");
    }
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(rank_rec_t));
    hid_t s64 = str_type(64), s256 = str_type(256);
    H5Tinsert(t, "rank", offsetof(rank_rec_t, rank), H5T_NATIVE_INT32);
    H5Tinsert(t, "hostname", offsetof(rank_rec_t, hostname), s64);
    H5Tinsert(t, "node_id", offsetof(rank_rec_t, node_id), H5T_NATIVE_INT32);
    H5Tinsert(t, "local_rank", offsetof(rank_rec_t, local_rank), H5T_NATIVE_INT32);
    H5Tinsert(t, "pid", offsetof(rank_rec_t, pid), H5T_NATIVE_INT64);
    H5Tinsert(t, "cpu_affinity", offsetof(rank_rec_t, cpu_affinity), s256);
    H5Tinsert(t, "device", offsetof(rank_rec_t, device), s64);
    int rc = write_table(file, "ranks", t, recs, (size_t)b->nranks);
    H5Tclose(s64);
    H5Tclose(s256);
    H5Tclose(t);
    free(recs);
    return rc;
}

typedef struct backend_rec {
    char name[32];
    char plugin_version[32];
    char library_version[128];
    char state[256];
    char variants[2048];
    double link_gbps; /* 0 = not reported */
} backend_rec_t;

static int write_backends(hid_t file, const cp_run_info_t *ri)
{
    backend_rec_t *recs = calloc((size_t)ri->nplugins + 1, sizeof(*recs));
    if (recs == NULL) {
        return -1;
    }
    for (int i = 0; i < ri->nplugins; i++) {
        const cp_plugin_t *p = &ri->plugins[i];
        backend_rec_t *r = &recs[i];
        snprintf(r->name, sizeof(r->name), "%s", p->name);
        snprintf(r->plugin_version, sizeof(r->plugin_version), "%s", p->be ? p->be->version : "");
        snprintf(r->library_version, sizeof(r->library_version), "%s",
                 p->caps.library_version ? p->caps.library_version : "");
        if (p->ctx != NULL) {
            snprintf(r->state, sizeof(r->state), "initialised");
        } else if (!cp_plan_uses(ri->plan, i) && p->usable) {
            snprintf(r->state, sizeof(r->state), "not used");
        } else {
            snprintf(r->state, sizeof(r->state), "failed: %.240s", p->error);
        }
        r->link_gbps = p->caps.link_gbps > 0 ? p->caps.link_gbps : 0.0;
        snprintf(r->variants, sizeof(r->variants), "default");
        for (size_t v = 0; v < p->caps.nvariants; v++) {
            strncat(r->variants, ",", sizeof(r->variants) - strlen(r->variants) - 1);
            strncat(r->variants, p->caps.variants[v].name,
                    sizeof(r->variants) - strlen(r->variants) - 1);
        }
    }
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(backend_rec_t));
    hid_t s32 = str_type(32), s128 = str_type(128), s256 = str_type(256), s2k = str_type(2048);
    H5Tinsert(t, "name", offsetof(backend_rec_t, name), s32);
    H5Tinsert(t, "plugin_version", offsetof(backend_rec_t, plugin_version), s32);
    H5Tinsert(t, "library_version", offsetof(backend_rec_t, library_version), s128);
    H5Tinsert(t, "state", offsetof(backend_rec_t, state), s256);
    H5Tinsert(t, "variants", offsetof(backend_rec_t, variants), s2k);
    H5Tinsert(t, "link_gbps", offsetof(backend_rec_t, link_gbps), H5T_NATIVE_DOUBLE);
    int rc = write_table(file, "backends", t, recs, (size_t)ri->nplugins);
    H5Tclose(s32);
    H5Tclose(s128);
    H5Tclose(s256);
    H5Tclose(s2k);
    H5Tclose(t);
    free(recs);
    return rc;
}

typedef struct env_rec {
    char name[128];
    char value[1024];
} env_rec_t;

static int write_environment(hid_t file)
{
    size_t n = 0, cap = 0;
    env_rec_t *recs = NULL;
    for (char **e = environ; *e; e++) {
        char name[128];
        const char *value = cp_env_captured(*e, name, sizeof(name));
        if (value == NULL) {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 32;
            env_rec_t *g = realloc(recs, cap * sizeof(*recs));
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
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(env_rec_t));
    hid_t s128 = str_type(128), s1k = str_type(1024);
    H5Tinsert(t, "name", offsetof(env_rec_t, name), s128);
    H5Tinsert(t, "value", offsetof(env_rec_t, value), s1k);
    int rc = write_table(file, "environment", t, recs, n);
    H5Tclose(s128);
    H5Tclose(s1k);
    H5Tclose(t);
    free(recs);
    return rc;
}

static int write_root_attrs(hid_t file, const cp_run_info_t *ri)
{
    const cp_boot_t *b = ri->boot;
    char iso[64], version[32], cmd[8192] = "";
    cp_utc_iso(iso, sizeof(iso));
    snprintf(version, sizeof(version), "%d.%d", COLLPROF_SCHEMA_VERSION_MAJOR,
             COLLPROF_SCHEMA_VERSION_MINOR);
    for (int i = 0; i < ri->argc; i++) {
        strncat(cmd, i ? " " : "", sizeof(cmd) - strlen(cmd) - 1);
        strncat(cmd, ri->argv[i], sizeof(cmd) - strlen(cmd) - 1);
    }
    int rc = 0;
    rc |= attr_str(file, "schema", COLLPROF_SCHEMA_NAME);
    rc |= attr_str(file, "schema_version", version);
    rc |= attr_int(file, "schema_version_major", COLLPROF_SCHEMA_VERSION_MAJOR);
    rc |= attr_int(file, "schema_version_minor", COLLPROF_SCHEMA_VERSION_MINOR);
    rc |= attr_str(file, "collprof_version", PACKAGE_VERSION);
    rc |= attr_str(file, "created", iso);
    rc |= attr_str(file, "command_line", cmd);
    rc |= attr_int(file, "world_size", b->nranks);
    rc |= attr_int(file, "node_count", b->nnodes);
    rc |= attr_str(file, "launcher", b->launcher);
    rc |= attr_str(file, "pmix_version", b->pmix_version);
    rc |= attr_str(file, "tag", ri->opt->tag);
    rc |= attr_str(file, "timing",
                   ri->opt->sync_barrier ? "barrier before each iteration; "
                                           "per-iteration max over ranks"
                                         : "back to back; per-iteration max over ranks");
    rc |= attr_str(file, "check", ri->opt->check ? "exact" : "disabled");
    rc |= attr_double(file, "link_gbps", ri->opt->link_gbps); /* --link-gbps, 0 = not given */
    cp_slurm_kv_t kv[CP_SLURM_META_MAX];
    int nkv = cp_slurm_meta(kv, CP_SLURM_META_MAX);
    for (int i = 0; i < nkv; i++) {
        rc |= attr_str(file, kv[i].key, kv[i].value);
    }
    rc |= attr_str(file, "status", "incomplete");
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
    /* the empty file was created exclusively by the caller: truncating it is safe */
    h->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (h->file < 0) {
        snprintf(err, errlen, "cannot create HDF5 file %s", path);
        free(h);
        return -1;
    }
    h->row_type = row_type();
    hsize_t dims[1] = {0}, maxdims[1] = {H5S_UNLIMITED}, chunk[1] = {64};
    hid_t sp = H5Screate_simple(1, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, chunk);
    h->results = H5Dcreate2(h->file, "results", h->row_type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    h->cells = H5Gcreate2(h->file, "cells", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
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

static int write_samples(hid_t grp, const cp_result_t *r)
{
    /* [iterations x ranks]: samples arrive rank-major, the file is iteration-major */
    hsize_t dims[2] = {(hsize_t)r->iters, (hsize_t)r->nranks};
    double *t = malloc(sizeof(double) * (size_t)r->iters * (size_t)r->nranks);
    if (t == NULL) {
        return -1;
    }
    for (int q = 0; q < r->nranks; q++) {
        for (int i = 0; i < r->iters; i++) {
            t[(size_t)i * (size_t)r->nranks + (size_t)q] =
                r->samples[(size_t)q * (size_t)r->iters + (size_t)i];
        }
    }
    hsize_t chunk[2] = {dims[0] < 1024 ? dims[0] : 1024, dims[1] < 1024 ? dims[1] : 1024};
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 4);
    }
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(grp, "samples_us", H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    int rc =
        d >= 0 && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, t) >= 0 ? 0 : -1;
    if (d >= 0) {
        H5Dclose(d);
    }
    H5Sclose(sp);
    H5Pclose(dcpl);
    free(t);
    return rc;
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
    rc |= H5Dwrite(h->results, h->row_type, ms, fs, H5P_DEFAULT, row) < 0;
    H5Sclose(ms);
    H5Sclose(fs);
    h->nrows++;

    /* the raw data of a cell that ran */
    if (r->samples != NULL && r->rank_mean != NULL) {
        char name[32];
        snprintf(name, sizeof(name), "%06d", row->cell);
        hid_t g = H5Gcreate2(h->cells, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0) {
            h->broken = 1;
            return -1;
        }
        rc |= attr_str(g, "backend", row->backend);
        rc |= attr_str(g, "variant", row->variant);
        rc |= attr_str(g, "op", row->op);
        rc |= write_samples(g, r);
        rc |= write_table(g, "rank_mean_us", H5T_NATIVE_DOUBLE, r->rank_mean, (size_t)r->nranks);
        if (r->send_bytes != NULL && r->recv_bytes != NULL) {
            rc |= write_table(g, "send_bytes", H5T_NATIVE_UINT64, r->send_bytes, (size_t)r->nranks);
            rc |= write_table(g, "recv_bytes", H5T_NATIVE_UINT64, r->recv_bytes, (size_t)r->nranks);
        }
        H5Gclose(g);
    }
    /* a killed run keeps everything up to here */
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
        attr_str(h->file, "status", status);
    }
    if (h->results >= 0) {
        H5Dclose(h->results);
    }
    if (h->cells >= 0) {
        H5Gclose(h->cells);
    }
    H5Tclose(h->row_type);
    if (h->file >= 0) {
        H5Fclose(h->file);
    }
    free(h);
}
