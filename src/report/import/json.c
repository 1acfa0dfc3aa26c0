/*
 * The strict JSON reader of json.h: recursive descent over the text, with
 * the depth bounded so that a hostile file cannot exhaust the stack.
 */
#include "config.h"

#include "report/import/json.h"

#include "base/util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *p, *end;
    int line;
    char *err;
    size_t errlen;
} parser_t;

static cp_json_t *fail(parser_t *ps, const char *what)
{
    if (ps->err[0] == '\0') {
        snprintf(ps->err, ps->errlen, "%s", what);
    }
    return NULL;
}

static void skip_ws(parser_t *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
        ps->line += *ps->p == '\n';
        ps->p++;
    }
}

static cp_json_t *node(parser_t *ps, cp_json_type_t type)
{
    cp_json_t *v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return fail(ps, "out of memory");
    }
    v->type = type;
    v->line = ps->line;
    return v;
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
            return -1;
        }
        v = v * 16 + (unsigned)d;
    }
    *out = v;
    return 0;
}

/* Code point cp as UTF-8 at out: its length. */
static size_t put_utf8(unsigned cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* \uXXXX (a surrogate pair as one) after the backslash-u at s: the code point, or -1. */
static long unicode_escape(parser_t *ps, const char **s)
{
    unsigned hi, lo;
    if (ps->end - *s < 4 || hex4(*s, &hi) != 0) {
        return -1;
    }
    *s += 4;
    if (hi >= 0xdc00 && hi <= 0xdfff) {
        return -1;
    }
    if (hi < 0xd800 || hi > 0xdbff) {
        return hi;
    }
    if (ps->end - *s < 6 || (*s)[0] != '\\' || (*s)[1] != 'u' || hex4(*s + 2, &lo) != 0 ||
        lo < 0xdc00 || lo > 0xdfff) {
        return -1;
    }
    *s += 6;
    return 0x10000 + (((long)hi - 0xd800) << 10) + ((long)lo - 0xdc00);
}

/* One escape after the backslash at *s into out: its length, 0 when invalid. */
static size_t escape(parser_t *ps, const char **s, char *out)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    char c = *(*s)++;
    const char *k = c != '\0' ? strchr(from, c) : NULL;
    if (k != NULL) {
        *out = to[k - from];
        return 1;
    }
    if (c != 'u') {
        return 0;
    }
    long cp = unicode_escape(ps, s);
    return cp <= 0 ? 0 : put_utf8((unsigned)cp, out); /* \u0000 would end the string early */
}

static char *string_body(parser_t *ps)
{
    const char *s = ps->p + 1; /* after the quote */
    const char *q = s;
    while (q < ps->end && *q != '"') {
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    }
    if (q >= ps->end) {
        fail(ps, "unterminated string");
        return NULL;
    }
    char *out = malloc((size_t)(q - s) + 1), *o = out;
    if (out == NULL) {
        fail(ps, "out of memory");
        return NULL;
    }
    while (s < q) {
        unsigned cp;
        int n = cp_utf8_seq((const unsigned char *)s, (size_t)(q - s), &cp);
        size_t w = 0;
        if (*s == '\\') {
            s++;
            w = escape(ps, &s, o);
        } else if (n > 0 && cp >= 0x20) {
            memcpy(o, s, (size_t)n);
            s += n;
            w = (size_t)n;
        }
        if (w == 0) {
            free(out);
            fail(ps, n == 0 ? "a string is not valid UTF-8"
                            : "a string holds a control character or a bad escape");
            return NULL;
        }
        o += w;
    }
    *o = '\0';
    ps->p = q + 1;
    return out;
}

static cp_json_t *number(parser_t *ps)
{
    const char *s = ps->p;
    s += s < ps->end && *s == '-';
    int ok = s < ps->end && (*s == '0' || (*s >= '1' && *s <= '9'));
    const char *d = s;
    while (s < ps->end && *s >= '0' && *s <= '9') {
        s++;
    }
    ok = ok && !(*d == '0' && s - d > 1);
    if (ok && s < ps->end && *s == '.') {
        const char *f = ++s;
        while (s < ps->end && *s >= '0' && *s <= '9') {
            s++;
        }
        ok = s > f;
    }
    if (ok && s < ps->end && (*s == 'e' || *s == 'E')) {
        s += s + 1 < ps->end && (s[1] == '+' || s[1] == '-') ? 2 : 1;
        const char *e = s;
        while (s < ps->end && *s >= '0' && *s <= '9') {
            s++;
        }
        ok = s > e;
    }
    char buf[64];
    if (!ok || s - ps->p >= (long)sizeof(buf)) {
        return fail(ps, !ok ? "a malformed number" : "a number of too many digits");
    }
    memcpy(buf, ps->p, (size_t)(s - ps->p));
    buf[s - ps->p] = '\0';
    errno = 0;
    double v = strtod(buf, NULL);
    if (!isfinite(v) || errno == ERANGE) {
        return fail(ps, "a number out of range");
    }
    cp_json_t *n = node(ps, CP_JSON_NUM);
    if (n != NULL) {
        n->num = v;
        ps->p = s;
    }
    return n;
}

static cp_json_t *value(parser_t *ps, int depth);

/* Append kid (and key, for objects) to v. */
static int add(parser_t *ps, cp_json_t *v, cp_json_t *kid, char *key)
{
    /* room doubles at each power of two: appending stays linear on a huge array */
    size_t cap = v->n == 0 ? 1 : v->n * 2;
    int grow = (v->n & (v->n - 1)) == 0;
    cp_json_t **k = grow ? realloc(v->kids, sizeof(*k) * cap) : v->kids;
    char **keys = key == NULL         ? NULL
                  : grow && k != NULL ? realloc(v->keys, sizeof(*keys) * cap)
                                      : v->keys;
    if (k != NULL) {
        v->kids = k;
    }
    if (keys != NULL) {
        v->keys = keys;
    }
    if (k == NULL || (key != NULL && keys == NULL)) {
        cp_json_free(kid);
        free(key);
        fail(ps, "out of memory");
        return -1;
    }
    v->kids[v->n] = kid;
    if (key != NULL) {
        v->keys[v->n] = key;
    }
    v->n++;
    return 0;
}

/* One member "key": value of object v. */
static int member(parser_t *ps, cp_json_t *v, int depth)
{
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != '"') {
        fail(ps, "expected a member name");
        return -1;
    }
    char *key = string_body(ps);
    if (key == NULL) {
        return -1;
    }
    if (cp_json_get(v, key) != NULL) {
        free(key);
        fail(ps, "a duplicate member name");
        return -1;
    }
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        free(key);
        fail(ps, "expected ':'");
        return -1;
    }
    ps->p++;
    cp_json_t *kid = value(ps, depth + 1);
    if (kid == NULL) {
        free(key);
        return -1;
    }
    return add(ps, v, kid, key);
}

static cp_json_t *container(parser_t *ps, int depth)
{
    int obj = *ps->p == '{';
    char close = obj ? '}' : ']';
    cp_json_t *v = node(ps, obj ? CP_JSON_OBJ : CP_JSON_ARR);
    if (v == NULL) {
        return NULL;
    }
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return v;
    }
    for (;;) {
        cp_json_t *kid = NULL;
        int rc = obj                                    ? member(ps, v, depth)
                 : (kid = value(ps, depth + 1)) == NULL ? -1
                                                        : add(ps, v, kid, NULL);
        skip_ws(ps);
        if (rc == 0 && ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (rc == 0 && ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return v;
        }
        cp_json_free(v);
        return rc == 0 ? fail(ps, ps->p >= ps->end ? "truncated (the document ends inside it)"
                                  : obj            ? "expected ',' or '}'"
                                                   : "expected ',' or ']'")
                       : NULL;
    }
}

static cp_json_t *literal(parser_t *ps)
{
    static const char *const words[] = {"null", "false", "true"};
    for (int i = 0; i < 3; i++) {
        size_t len = strlen(words[i]);
        if ((size_t)(ps->end - ps->p) >= len && !memcmp(ps->p, words[i], len)) {
            cp_json_t *v = node(ps, i == 0 ? CP_JSON_NULL : CP_JSON_BOOL);
            if (v != NULL) {
                v->boolean = i == 2;
                ps->p += len;
            }
            return v;
        }
    }
    return fail(ps, "an unexpected character");
}

static cp_json_t *value(parser_t *ps, int depth)
{
    skip_ws(ps);
    if (depth > CP_JSON_MAX_DEPTH) {
        return fail(ps, "nested too deeply");
    }
    if (ps->p >= ps->end) {
        return fail(ps, "truncated (a value is missing)");
    }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        return container(ps, depth);
    }
    if (c == '"') {
        cp_json_t *v = node(ps, CP_JSON_STR);
        if (v != NULL && (v->str = string_body(ps)) == NULL) {
            free(v);
            v = NULL;
        }
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        return number(ps);
    }
    return literal(ps);
}

cp_json_t *cp_json_parse(const char *text, size_t len, int *line, char *err, size_t errlen)
{
    parser_t ps = {text, text + len, 1, err, errlen};
    err[0] = '\0';
    cp_json_t *v = value(&ps, 0);
    if (v != NULL) {
        skip_ws(&ps);
        if (ps.p < ps.end) {
            cp_json_free(v);
            v = fail(&ps, "more after the document");
        }
    }
    *line = ps.line;
    return v;
}

void cp_json_free(cp_json_t *v)
{
    if (v == NULL) {
        return;
    }
    for (size_t i = 0; i < v->n; i++) {
        cp_json_free(v->kids[i]);
        if (v->keys != NULL) {
            free(v->keys[i]);
        }
    }
    free(v->kids);
    free(v->keys);
    free(v->str);
    free(v);
}

const cp_json_t *cp_json_get(const cp_json_t *obj, const char *key)
{
    for (size_t i = 0; obj != NULL && obj->type == CP_JSON_OBJ && i < obj->n; i++) {
        if (!strcmp(obj->keys[i], key)) {
            return obj->kids[i];
        }
    }
    return NULL;
}
