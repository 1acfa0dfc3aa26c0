/*
 * The JSON reader's (json.c) checks of one token's text, apart from the
 * parse: strings of valid UTF-8 without NUL, numbers read without strtoll or
 * strtod where they are whole or a short decimal; the look-up of an object's
 * member; yajl's grammar errors in the reader's words.  Each runs for every string, name or number
 * of a trace: the common case is taken first.
 */
#include "config.h"

#include "report/import/json.h"

#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

const char *cp_json_text_error(const unsigned char *s, size_t len)
{
    size_t ascii = 0; /* the common case, ASCII without NUL, in one pass, 8 bytes a step */
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    for (uint64_t w; len - ascii >= 8; ascii += 8) {
        memcpy(&w, s + ascii, 8);
        if (((w - ones) | w) & highs) { /* a byte 0 (which borrows) or past 0x7f */
            break;
        }
    }
    while (ascii < len && (unsigned)(s[ascii] - 1) < 0x7f) {
        ascii++;
    }
    if (ascii == len) {
        return NULL;
    }
    if (memchr(s, '\0', len) != NULL) {
        return "a string holds a control character or a bad escape";
    }
    for (size_t i = 0; i < len;) {
        unsigned cp;
        int k = s[i] < 0x80 ? 1 : cp_utf8_seq(s + i, len - i, &cp);
        if (k <= 0) {
            return "a string is not valid UTF-8";
        }
        i += (size_t)k;
    }
    return NULL;
}

int cp_json_whole(const char *s, size_t len, long long *out)
{
    size_t i = len > 0 && s[0] == '-';
    if (len - i == 0 || len - i > 19) {
        return 0;
    }
    unsigned long long v = 0; /* 19 digits fit */
    for (; i < len; i++) {
        unsigned digit = (unsigned)(unsigned char)s[i] - '0';
        if (digit > 9) {
            return 0;
        }
        v = v * 10 + digit;
    }
    if (v > (unsigned long long)LLONG_MAX + (s[0] == '-')) {
        return 0; /* out of range: strtoll says so */
    }
    *out = s[0] == '-' ? (long long)(0 - v) : (long long)v;
    return 1;
}

/* 10^0..10^22: each exact as a double */
static const double tens[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                              1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                              1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The digits of s[*i..len) into *m (at most 2^53: 0 when more), their count in *n. */
static int digits(const char *s, size_t len, size_t *i, uint64_t *m, int *n)
{
    for (unsigned d; *i < len && (d = (unsigned)(unsigned char)s[*i] - '0') <= 9; (*i)++, (*n)++) {
        if (*m > (UINT64_C(1) << 53) / 10) {
            return 0;
        }
        *m = *m * 10 + d;
    }
    return 1;
}

int cp_json_decimal(const char *s, size_t len, double *out)
{
    size_t i = len > 0 && s[0] == '-';
    uint64_t m = 0;
    int nint = 0, nfrac = 0, e = 0;
    if (!digits(s, len, &i, &m, &nint)) {
        return 0;
    }
    if (i < len && s[i] == '.' && (++i, !digits(s, len, &i, &m, &nfrac))) {
        return 0;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        int neg = s[++i] == '-', ne = 0;
        i += s[i] == '-' || s[i] == '+';
        for (; i < len && ne < 4; i++, ne++) {
            e = e * 10 + (s[i] - '0');
        }
        e = neg ? -e : e;
    }
    e -= nfrac;
    if (i != len || m > (UINT64_C(1) << 53) || e < -22 || e > 22) {
        return 0; /* (a long exponent, digits past 2^53, or a power not exact: strtod) */
    }
    /* the mantissa and the power of ten exact: one rounding, as strtod's (Clinger's fast path) */
    double d = e < 0 ? (double)m / tens[-e] : (double)m * tens[e];
    *out = s[0] == '-' ? -d : d;
    return 1;
}

const char *cp_json_number(const char *s, size_t len, double *d, long long *i, int *whole)
{
    char buf[64];
    *i = 0;
    if (len >= sizeof(buf)) {
        return "a number of too many digits";
    }
    if ((*whole = cp_json_whole(s, len, i)) != 0) {
        *d = (double)*i;
        return NULL;
    }
    if (cp_json_decimal(s, len, d)) { /* 0.25: not a whole number, exact without strtod */
        return NULL;
    }
    memcpy(buf, s, len);
    buf[len] = '\0';
    *whole = memchr(buf, '.', len) == NULL && memchr(buf, 'e', len) == NULL &&
             memchr(buf, 'E', len) == NULL;
    errno = 0;
    if (*whole && (*i = strtoll(buf, NULL, 10), errno == 0)) {
        *d = (double)*i; /* a whole number: exact where it fits 64 bits */
    } else {
        *whole = 0;
        errno = 0;
        *d = strtod(buf, NULL);
    }
    return !isfinite(*d) || errno == ERANGE ? "a number out of range" : NULL;
}

/* a == b, for the short names of a look-up: inline, not a call to strcmp per name */
static inline int same(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

const cp_json_t *cp_json_get(const cp_json_t *obj, const char *key)
{
    if (obj == NULL || obj->type != CP_JSON_OBJ) {
        return NULL;
    }
    /* the two places where the member of this name (by the name's address: the callers'
     * literals) was found last: the entries of a stream have their members in one order (two:
     * a name in two kinds of object, as "name" in a node and in its attrs).  A hint, checked
     * before it is used (collprof-report is one thread); names are never twice in an object. */
    static size_t hint[64][2];
    size_t *h = hint[((uintptr_t)key * UINT64_C(0x9e3779b97f4a7c15)) >> 58];
    for (int k = 0; k < 2; k++) {
        if (h[k] < obj->n && same(obj->keys[h[k]], key)) {
            return obj->kids[h[k]];
        }
    }
    if (!(obj->keybits & cp_json_keybit(key))) {
        return NULL; /* no name begins as key does */
    }
    for (size_t i = 0; i < obj->n; i++) {
        if (obj->keys[i][0] == key[0] && same(obj->keys[i], key)) {
            h[1] = h[0];
            h[0] = i;
            return obj->kids[i];
        }
    }
    return NULL;
}

const char *cp_json_grammar_words(const char *said)
{
    static const char *const map[][2] = {
        {"invalid character inside string", "a string holds a control character or a bad escape"},
        {"occurs before a character", "a string holds a control character or a bad escape"},
        {"after '\\u'", "a string holds a control character or a bad escape"},
        {"invalid bytes in UTF8", "a string is not valid UTF-8"},
        {"malformed number", "a malformed number"},
        {"premature EOF", "truncated (the document ends inside it)"},
        {"trailing garbage", "more after the document"},
        {"separated by a colon", "expected ':'"},
        {"inside map, I expect", "expected ',' or '}'"},
        {"after array element", "expected ',' or ']'"},
        {"invalid object key", "expected a member name"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (strstr(said, map[i][0]) != NULL) {
            return map[i][1];
        }
    }
    return "an unexpected character"; /* invalid char or literal, unallowed token */
}
