/*
 * The JSON reader of `collprof-report import`, on yajl's streaming parser
 * (libyajl): the document is checked whole, strictly (RFC 8259: one value,
 * no trailing commas or comments, strings of valid UTF-8 without NUL,
 * numbers finite as doubles, objects without duplicate member names, nesting
 * at most CP_JSON_MAX_DEPTH deep), but only the parts the caller names are
 * kept, as a tree whose values carry the line they start on.  Memory grows
 * with what is kept (at most max_values values), not with the file: a 64 MiB
 * object of millions of members, or an array of millions of numbers, that
 * the caller does not read is checked and dropped as it streams past.
 */
#ifndef COLLPROF_REPORT_JSON_H
#define COLLPROF_REPORT_JSON_H

#include "base/strset.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CP_JSON_MAX_DEPTH 64
/* The most values kept by default (a year of nccl-tests results is far less). */
#define CP_JSON_MAX_VALUES (1u << 21)

typedef enum cp_json_type {
    CP_JSON_NULL,
    CP_JSON_BOOL,
    CP_JSON_NUM,
    CP_JSON_STR,
    CP_JSON_ARR,
    CP_JSON_OBJ
} cp_json_type_t;

typedef struct cp_json {
    cp_json_type_t type;
    int line;              /**< 1-based line of the value's first character */
    int boolean;           /**< CP_JSON_BOOL */
    double num;            /**< CP_JSON_NUM */
    long long inum;        /**< CP_JSON_NUM written as a whole number that fits: exactly */
    int is_int;            /**< 1 when inum holds it (num is the nearest double) */
    char *str;             /**< CP_JSON_STR: NUL-terminated UTF-8 */
    size_t n;              /**< members or elements */
    struct cp_json **kids; /**< [n] the elements, or the members' values */
    char **keys;           /**< [n] CP_JSON_OBJ: the members' names */
    uint64_t keybits; /**< CP_JSON_OBJ: cp_json_keybit of each name kept (a look-up's quick miss) */
    struct cp_json *next; /**< (while parsing) the next member or element */
    char *name;           /**< (while parsing) its member name */
    void *arena;          /**< the root only: where the whole tree lives */
} cp_json_t;

typedef struct cp_json_opts {
    /** NULL: keep the whole document; else keep only the root object's members of these
     *  names (NULL-terminated list): the root, whatever its type, is kept without the
     *  rest of its content */
    const char *const *keep;
    size_t max_values; /**< the most values kept; 0: CP_JSON_MAX_VALUES */
} cp_json_opts_t;

typedef struct cp_json_error {
    int line;      /**< where it went wrong */
    int too_large; /**< 1: valid so far, but past max_values; 0: not valid JSON */
    int stopped;   /**< cp_json_read_fd: each() stopped the parse (its own error is the one) */
    char msg[256];
} cp_json_error_t;

/** Parse text[0..len): the tree (kept parts), or NULL with the error in *e. */
cp_json_t *cp_json_parse(const char *text, size_t len, const cp_json_opts_t *opts,
                         cp_json_error_t *e);

/** One streamed element (a tree valid until the call returns): 0 to go on, else stop. */
typedef int (*cp_json_each_fn)(void *ctx, const cp_json_t *v);

/** What cp_json_read_fd streams. */
typedef struct cp_json_stream {
    /** NULL: the elements of the root array, or with many every root value; else the
     *  elements of the root object's member of that name (an array), which is also kept */
    const char *member;
    int many;             /**< several root values one after the other (JSON lines) */
    cp_json_each_fn each; /**< NULL: stream nothing (opts->keep says what is kept) */
    void *ctx;
    /** NULL, or the member names (NULL-terminated) that a streamed element's tree keeps: its
     *  members of other names (at any depth) are checked but not kept, and a member kept has
     *  one of these very pointers as its key, so that the reader compares keys with them by
     *  address (and no copy of the name is made) */
    const char *const *names;
} cp_json_stream_t;

/**
 * Read JSON from fd in pieces, checked as cp_json_parse checks it, the streamed elements
 * handed to s->each one at a time and dropped: memory grows with one element (and the kept
 * root members of opts->keep), not with the file.  *root: the kept root (NULL with many, or
 * after an error).  0, or -1 with the error in *e (e->stopped: each() stopped it).
 */
int cp_json_read_fd(int fd, const cp_json_opts_t *opts, const cp_json_stream_t *s, cp_json_t **root,
                    cp_json_error_t *e);

/** Free a tree cp_json_parse returned (the root; its values go with it). */
void cp_json_free(cp_json_t *root);

/** One bit of 64 for a member name, from its first four bytes (those past its end 0). */
static inline uint64_t cp_json_keybit(const char *key)
{
    uint32_t c0 = (unsigned char)key[0], c1 = c0 != 0 ? (unsigned char)key[1] : 0,
             c2 = c1 != 0 ? (unsigned char)key[2] : 0, c3 = c2 != 0 ? (unsigned char)key[3] : 0;
    uint32_t w = c0 | c1 << 8 | c2 << 16 | c3 << 24;
    return UINT64_C(1) << ((w * UINT32_C(0x9e3779b1)) >> 26);
}

/** Member key of object obj, or NULL (also when obj is not an object). */
const cp_json_t *cp_json_get(const cp_json_t *obj, const char *key);

/* json_text.c: the reader's checks of a token's text */

/** NULL when s[0..len) (a string or member name, escapes decoded) is valid UTF-8 without NUL,
 *  else what is wrong with it. */
const char *cp_json_text_error(const unsigned char *s, size_t len);

/** A number token (of JSON's grammar, checked before) that is a whole number of at most 19
 *  digits fitting a long long: 1 with *out exact, else 0 (strtoll and strtod read it). */
int cp_json_whole(const char *s, size_t len, long long *out);

/** A number token (checked before) with at most 2^53 as its digits and a power of ten of at
 *  most 22 either way (0.25, 1.5e3): 1 with *out exactly as strtod reads it, else 0. */
int cp_json_decimal(const char *s, size_t len, double *out);

/** A number token (checked before): NULL with *d (and *i exact where *whole: a whole number that
 *  fits 64 bits), else what is wrong with it (too many digits, out of range). */
const char *cp_json_number(const char *s, size_t len, double *d, long long *i, int *whole);

/** Whether name id of set is s[0..len): cp_strset_is inline, 8 bytes a step (the reader's, once
 *  per member). */
static inline int cp_json_name_is(const cp_strset_t *set, size_t id, const unsigned char *s,
                                  size_t len)
{
    if (id >= set->n || set->off[id + 1] - set->off[id] != len + 1) {
        return 0;
    }
    const char *k = set->buf + set->off[id];
    size_t i = 0;
    uint64_t x, y;
    for (; i + 8 <= len; i += 8) {
        memcpy(&x, k + i, 8);
        memcpy(&y, s + i, 8);
        if (x != y) {
            return 0;
        }
    }
    if (len - i >= 4) { /* the rest as two 4-byte words that may overlap */
        uint32_t a[2], c[2];
        memcpy(&a[0], k + i, 4);
        memcpy(&a[1], k + len - 4, 4);
        memcpy(&c[0], s + i, 4);
        memcpy(&c[1], s + len - 4, 4);
        return a[0] == c[0] && a[1] == c[1];
    }
    for (; i < len; i++) {
        if (k[i] != (char)s[i]) {
            return 0;
        }
    }
    return 1;
}

/** yajl's error message (the grammar) in the reader's words. */
const char *cp_json_grammar_words(const char *said);

#endif /* COLLPROF_REPORT_JSON_H */
