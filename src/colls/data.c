#include "config.h"

#include "colls/data.h"

#include <math.h>
#include <string.h>
#include <strings.h>

int cp_dtype_from_name(const char *name)
{
    for (int i = 0; i < COLLPROF_DTYPE_COUNT; i++) {
        const collprof_dtype_info_t *t = collprof_dtype_info(i);
        if (!strcasecmp(name, t->name) || (t->alias[0][0] && !strcasecmp(name, t->alias[0])) ||
            (t->alias[1][0] && !strcasecmp(name, t->alias[1]))) {
            return i;
        }
    }
    return -1;
}

int cp_redop_from_name(const char *name)
{
    for (int i = 0; i < COLLPROF_REDOP_COUNT; i++) {
        if (!strcasecmp(name, collprof_redop_name(i))) {
            return i;
        }
    }
    return -1;
}

/* IEEE half <-> float for the exact small integers we use (and NaN). */
static uint16_t half_from_float(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffffu;
    if (((x >> 23) & 0xff) == 0xff) {
        return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
    }
    if (f == 0.0f) {
        return (uint16_t)sign;
    }
    if (exp <= 0 || exp >= 31) { /* outside what we store: make it NaN */
        return 0x7e00u;
    }
    return (uint16_t)(sign | ((uint32_t)exp << 10) | (mant >> 13));
}

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else { /* subnormal */
            float f = ldexpf((float)mant, -24);
            return sign ? -f : f;
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

void cp_data_set(collprof_dtype_t t, void *buf, size_t i, int64_t v)
{
    switch (t) {
    case COLLPROF_DTYPE_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case COLLPROF_DTYPE_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case COLLPROF_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case COLLPROF_DTYPE_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case COLLPROF_DTYPE_INT64: ((int64_t *)buf)[i] = v; break;
    case COLLPROF_DTYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case COLLPROF_DTYPE_FLOAT16: ((uint16_t *)buf)[i] = half_from_float((float)v); break;
    case COLLPROF_DTYPE_BFLOAT16: {
        float f = (float)v; /* exact: |v| <= 256 fits bfloat16's 8-bit mantissa */
        uint32_t x;
        memcpy(&x, &f, 4);
        ((uint16_t *)buf)[i] = (uint16_t)(x >> 16);
        break;
    }
    case COLLPROF_DTYPE_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case COLLPROF_DTYPE_FLOAT64: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

static int from_double(double d, int64_t *v)
{
    if (!(d == d) || d != floor(d) || fabs(d) > 9.0e15) {
        return -1;
    }
    *v = (int64_t)d;
    return 0;
}

int cp_data_get(collprof_dtype_t t, const void *buf, size_t i, int64_t *v)
{
    switch (t) {
    case COLLPROF_DTYPE_INT8: *v = ((const int8_t *)buf)[i]; return 0;
    case COLLPROF_DTYPE_UINT8: *v = ((const uint8_t *)buf)[i]; return 0;
    case COLLPROF_DTYPE_INT32: *v = ((const int32_t *)buf)[i]; return 0;
    case COLLPROF_DTYPE_UINT32: *v = ((const uint32_t *)buf)[i]; return 0;
    case COLLPROF_DTYPE_INT64: *v = ((const int64_t *)buf)[i]; return 0;
    case COLLPROF_DTYPE_UINT64: {
        uint64_t u = ((const uint64_t *)buf)[i];
        *v = u > (uint64_t)INT64_MAX ? -1 : (int64_t)u;
        return 0;
    }
    case COLLPROF_DTYPE_FLOAT16: return from_double(half_to_float(((const uint16_t *)buf)[i]), v);
    case COLLPROF_DTYPE_BFLOAT16: {
        uint32_t x = (uint32_t)((const uint16_t *)buf)[i] << 16;
        float f;
        memcpy(&f, &x, 4);
        return from_double(f, v);
    }
    case COLLPROF_DTYPE_FLOAT32: return from_double(((const float *)buf)[i], v);
    case COLLPROF_DTYPE_FLOAT64: return from_double(((const double *)buf)[i], v);
    default: return -1;
    }
}

/* Values stay below a modulus that is at most exact_max - 1 (so 0xFF
 * poison never matches) and is odd, so consecutive elements differ. */
int64_t cp_data_value(collprof_dtype_t t, int r, uint64_t i)
{
    int64_t m = collprof_dtype_info(t)->exact_max - 1;
    if (m > 1000003) {
        m = 1000003;
    }
    return (int64_t)(((uint64_t)r * 7919u + i * 13u + 1u) % (uint64_t)m);
}

/* Largest per-rank summand so that n of them stay below exact_max - 1. */
static int64_t sum_bound(collprof_dtype_t t, int n)
{
    int64_t m = (collprof_dtype_info(t)->exact_max - 2) / n;
    return m > 7 ? 7 : m;
}

int64_t cp_data_contrib(collprof_dtype_t t, collprof_redop_t op, int n, int r, uint64_t i)
{
    switch (op) {
    case COLLPROF_REDOP_SUM: {
        int64_t m = sum_bound(t, n);
        if (m <= 0) { /* huge n in a tiny type: exactly one rank contributes 1 */
            return ((uint64_t)r + i) % (uint64_t)n == 0;
        }
        return (int64_t)(((uint64_t)r * 31u + i * 17u + 3u) % (uint64_t)(m + 1));
    }
    case COLLPROF_REDOP_PROD:
        /* i % 3 ranks contribute a 2, the others 1: products 1, 2 or 4 */
        return ((i + (uint64_t)r) % (uint64_t)n) < (i % 3) ? 2 : 1;
    case COLLPROF_REDOP_MIN:
    case COLLPROF_REDOP_MAX:
    default: {
        int64_t m = collprof_dtype_info(t)->exact_max - 1;
        if (m > 101) {
            m = 101;
        }
        return (int64_t)(((uint64_t)r * 37u + i * 11u + 5u) % (uint64_t)m);
    }
    }
}

/*
 * The expected result of a reduction without a loop over the ranks.  A
 * rank's contribution at element i is periodic in r and in i (sum: with
 * the modulus m + 1 <= 8; min and max: with m <= 101; prod: i % 3), so
 * the result at i depends on i modulo that period only, and over the
 * ranks on full periods of r plus a remainder shorter than one.  Cost:
 * O(period) per element, whatever n is; the table below makes it O(1).
 */
static uint64_t redop_period(collprof_dtype_t t, collprof_redop_t op, int n)
{
    switch (op) {
    case COLLPROF_REDOP_PROD: return 3;
    case COLLPROF_REDOP_SUM: {
        int64_t m = sum_bound(t, n);
        return m <= 0 ? 1 : (uint64_t)(m + 1);
    }
    case COLLPROF_REDOP_MIN:
    case COLLPROF_REDOP_MAX:
    default: {
        int64_t m = collprof_dtype_info(t)->exact_max - 1;
        return (uint64_t)(m > 101 ? 101 : m);
    }
    }
}

int64_t cp_data_reduced(collprof_dtype_t t, collprof_redop_t op, int n, uint64_t i)
{
    if (op == COLLPROF_REDOP_PROD) {
        uint64_t twos = i % 3 < (uint64_t)n ? i % 3 : (uint64_t)n;
        return (int64_t)1 << twos;
    }
    /* contributions repeat in r with this period (it divides the modulus) */
    uint64_t per = redop_period(t, op, n);
    if (op == COLLPROF_REDOP_SUM && sum_bound(t, n) <= 0) {
        return 1; /* exactly one rank contributes a 1 */
    }
    uint64_t nn = (uint64_t)n, head = nn < per ? nn : per;
    int64_t acc = cp_data_contrib(t, op, n, 0, i);
    for (uint64_t r = 1; r < head; r++) {
        int64_t c = cp_data_contrib(t, op, n, (int)r, i);
        if (op == COLLPROF_REDOP_SUM) {
            acc += c;
        } else if (op == COLLPROF_REDOP_MIN) {
            acc = c < acc ? c : acc;
        } else {
            acc = c > acc ? c : acc;
        }
    }
    if (op == COLLPROF_REDOP_SUM && nn > per) {
        /* acc is one full period; then nn / per of them and a partial one */
        int64_t part = 0;
        for (uint64_t r = 0; r < nn % per; r++) {
            part += cp_data_contrib(t, op, n, (int)r, i);
        }
        acc = acc * (int64_t)(nn / per) + part;
    }
    return acc;
}

int cp_data_reduced_init(cp_reduced_t *tab, collprof_dtype_t t, collprof_redop_t op, int n)
{
    if (n < 1) {
        return -1;
    }
    uint64_t per = redop_period(t, op, n);
    if (per == 0 || per > CP_REDUCED_MAX_PERIOD) {
        return -1;
    }
    tab->period = (unsigned)per;
    for (uint64_t i = 0; i < per; i++) {
        tab->v[i] = cp_data_reduced(t, op, n, i);
    }
    return 0;
}
