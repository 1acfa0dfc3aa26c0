#include "config.h"

#include "schema/baseline.h"

#include "schema/h5schema.h"

#include "base/util.h"

#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A root string attribute. */
static int put_attr(hid_t file, const char *name, const char *value)
{
    hid_t t = cp_h5_str_type(strlen(value) + 1, H5T_CSET_UTF8);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(file, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    int rc = a >= 0 && H5Awrite(a, t, value) >= 0 ? 0 : -1;
    cp_h5_release(a);
    cp_h5_release(sp);
    cp_h5_release(t);
    return rc;
}

static int write_rows(hid_t file, const collprof_baseline_row_t *rows, size_t n)
{
    hsize_t dims[1] = {n};
    hid_t t = cp_h5_row_type(&cp_h5_table_baseline);
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t d =
        H5Dcreate2(file, cp_h5_table_baseline.name, t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int rc =
        d >= 0 && (n == 0 || H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0) ? 0 : -1;
    cp_h5_release(d);
    cp_h5_release(sp);
    cp_h5_release(t);
    return rc;
}

int cp_baseline_write(const char *path, const collprof_baseline_row_t *rows, size_t n, char *err,
                      size_t errlen)
{
    char tmp[4200];
    int rc;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fcreate(tmp, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
        cp_tmp_set(f >= 0 ? tmp : NULL);
        rc = f >= 0 && put_attr(f, "schema", CP_BASELINE_SCHEMA) == 0 &&
                     put_attr(f, "schema_version", "1") == 0 && write_rows(f, rows, n) == 0
                 ? 0
                 : -1;
        rc |= f >= 0 && H5Fclose(f) < 0 ? -1 : 0;
        if (rc != 0 || rename(tmp, path) != 0) {
            rc = -1;
            if (f >= 0) {
                unlink(tmp);
            }
        }
        cp_tmp_set(NULL);
    }
    H5E_END_TRY /* (no return inside: it restores HDF5's error printing) */
        if (rc != 0)
    {
        snprintf(err, errlen, "%s: cannot write the baseline file", path);
    }
    return rc;
}

/* The root attribute name as text into buf ("" when absent or not a string). */
static void get_attr(hid_t file, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    hid_t a = H5Aexists(file, name) > 0 ? H5Aopen(file, name, H5P_DEFAULT) : -1;
    hid_t ft = a >= 0 ? H5Aget_type(a) : -1;
    if (ft >= 0 && H5Tget_class(ft) == H5T_STRING && !H5Tis_variable_str(ft) &&
        H5Tget_size(ft) < len) {
        hid_t t = cp_h5_str_type(H5Tget_size(ft), H5T_CSET_UTF8);
        if (H5Aread(a, t, buf) < 0) {
            buf[0] = '\0';
        }
        buf[len - 1] = '\0';
        cp_h5_release(t);
    }
    cp_h5_release(ft);
    cp_h5_release(a);
}

/* A row any judgement can use: strings ended, figures finite and positive. */
static int row_ok(collprof_baseline_row_t *r)
{
    r->backend[sizeof(r->backend) - 1] = r->kind[sizeof(r->kind) - 1] = '\0';
    r->path_class[sizeof(r->path_class) - 1] = '\0';
    return isfinite(r->median) && r->median > 0 && isfinite(r->mad_log) && r->mad_log >= 0 &&
           r->pairs > 0 && (!strcmp(r->kind, "bandwidth") || !strcmp(r->kind, "latency"));
}

/* The rows of /baseline (n of them, at most 1e6) into *out. */
static int read_rows(hid_t f, collprof_baseline_row_t **out, size_t *n)
{
    hid_t d = H5Lexists(f, "baseline", H5P_DEFAULT) > 0 ? H5Dopen2(f, "baseline", H5P_DEFAULT) : -1;
    hid_t sp = d >= 0 ? H5Dget_space(d) : -1;
    hsize_t dims[1] = {0};
    int ok = sp >= 0 && H5Sget_simple_extent_ndims(sp) == 1 &&
             H5Sget_simple_extent_dims(sp, dims, NULL) == 1 && dims[0] > 0 && dims[0] <= 1000000;
    hid_t t = ok ? cp_h5_row_type(&cp_h5_table_baseline) : -1;
    collprof_baseline_row_t *rows = ok ? calloc((size_t)dims[0], sizeof(*rows)) : NULL;
    ok = rows != NULL && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0;
    for (size_t i = 0; ok && i < (size_t)dims[0]; i++) {
        ok = row_ok(&rows[i]);
    }
    cp_h5_release(t);
    cp_h5_release(sp);
    cp_h5_release(d);
    if (!ok) {
        free(rows);
        return -1;
    }
    *out = rows;
    *n = (size_t)dims[0];
    return 0;
}

int cp_baseline_read(const char *path, collprof_baseline_row_t **rows, size_t *n, char *err,
                     size_t errlen)
{
    int rc = -1;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* a FIFO would wait for a writer forever */
        snprintf(err, errlen, "%s: not a regular file (a FIFO, device, socket or directory)", path);
        return -1;
    }
    H5E_BEGIN_TRY
    {
        hid_t f = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
        char schema[64];
        if (f < 0) {
            snprintf(err, errlen, "%s: not a readable HDF5 file", path);
        } else if (get_attr(f, "schema", schema, sizeof(schema)),
                   strcmp(schema, CP_BASELINE_SCHEMA) != 0) {
            snprintf(err, errlen,
                     "%s: not a baseline file (make one with collprof-report baseline FILES "
                     "-o BASE.h5)",
                     path);
        } else if (read_rows(f, rows, n) != 0) {
            snprintf(err, errlen, "%s: corrupted /baseline table", path);
        } else {
            rc = 0;
        }
        cp_h5_release(f);
    }
    H5E_END_TRY
    return rc;
}

int cp_baseline_ref(const collprof_baseline_row_t *rows, size_t n, const char *backend,
                    uint64_t lat_bytes, uint64_t bw_bytes, cp_screen_ref_t *ref, char *err,
                    size_t errlen)
{
    memset(ref, 0, sizeof(*ref));
    int have[CP_PATH_NCLASSES] = {0};
    for (size_t i = 0; i < n; i++) {
        const collprof_baseline_row_t *r = &rows[i];
        int c = cp_path_parse(r->path_class);
        if (strcmp(r->backend, backend) != 0 || c < 0) {
            continue; /* a class this collprof does not know: not judged by it */
        }
        /* the "any" row in the reference itself, a class's in its slot */
        cp_screen_cref_t *cr = &ref->cls[c];
        double *med = NULL, *mad = NULL;
        if (!strcmp(r->kind, "latency") && r->bytes == lat_bytes) {
            med = c == CP_PATH_ANY ? &ref->lat_us : &cr->lat_us;
            mad = c == CP_PATH_ANY ? &ref->lat_mad : &cr->lat_mad;
            have[c] |= 1;
        } else if (!strcmp(r->kind, "bandwidth") && r->bytes == bw_bytes) {
            med = c == CP_PATH_ANY ? &ref->bw_gbs : &cr->bw_gbs;
            mad = c == CP_PATH_ANY ? &ref->bw_mad : &cr->bw_mad;
            have[c] |= 2;
        }
        if (med != NULL) {
            *med = r->median, *mad = r->mad_log;
        }
    }
    if (have[CP_PATH_ANY] != 3) {
        snprintf(err, errlen,
                 "the baseline has no %sfigures of %s at %llu and %llu bytes (--sweep-sizes): "
                 "make it from screens or link sweeps of that backend and those sizes",
                 have[CP_PATH_ANY] == 0   ? ""
                 : have[CP_PATH_ANY] == 1 ? "bandwidth "
                                          : "latency ",
                 backend, (unsigned long long)lat_bytes, (unsigned long long)bw_bytes);
        memset(ref, 0, sizeof(*ref));
        return -1;
    }
    for (int c = 1; c < CP_PATH_NCLASSES; c++) {
        /* a class with both figures is judged by them; one with a part of them, or none, by
         * the "any" row */
        ref->cls[c].own = have[c] == 3;
        if (!ref->cls[c].own) {
            memset(&ref->cls[c], 0, sizeof(ref->cls[c]));
        }
    }
    ref->source = 1;
    return 0;
}
