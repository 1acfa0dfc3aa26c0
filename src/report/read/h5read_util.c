/*
 * What every file of the result-file reader uses (h5read_int.h), the bottom of read/ but for
 * rstats.c: a column's value and whether a row is measured, for generic code; the reason for
 * a failed HDF5 call; the text check; a string attribute as the file has it; and the size of
 * the file being read.
 */
#include "config.h"

#include "report/read/h5read_int.h"

#include <collprof/vocab.h>

#include "base/util.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The size of the file being read (cp_report_open): the most its tables may unpack to. */
double rd_file_bytes;

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
void rd_h5_fail(char *err, size_t errlen, const char *fmt, ...)
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
int rd_valid_text(const char *s, size_t max)
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

/* ---- string attributes ----------------------------------------------------------- */

/* A string attribute (fixed or variable length) into *out, malloc'd, as the file has it. */
int rd_read_str_raw(hid_t a, hid_t ft, const char *name, char **out, char *err, size_t errlen)
{
    /* HDF5 does not convert between character sets: read in the file's own */
    int var = H5Tis_variable_str(ft) > 0;
    size_t size = var ? 0 : H5Tget_size(ft);
    hid_t mt = cp_h5_str_type(var ? H5T_VARIABLE : size + 1, H5Tget_cset(ft));
    char *v = NULL, *s = NULL;
    herr_t rd = var ? H5Aread(a, mt, &s) : (v = calloc(size + 1, 1)) ? H5Aread(a, mt, v) : 0;
    cp_h5_release(mt);
    if (rd < 0) {
        rd_h5_fail(err, errlen, "cannot read attribute '%.64s'", name);
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
