/*
 * A set of strings, each with an id in order of first appearance (0, 1, ...),
 * found in O(1): an open-addressing hash table over the keys, kept
 * back to back in one buffer.  The start-up tables (src/boot/tables.c) number
 * nodes by host name with it; collprof-report import numbers its ranks' nodes
 * and refuses duplicate JSON member names.
 */
#ifndef COLLPROF_BASE_STRSET_H
#define COLLPROF_BASE_STRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_strset {
    uint32_t *slots; /**< [cap] id + 1 of the key there, 0 when empty */
    size_t cap;      /**< a power of two, at least twice n */
    size_t *off;     /**< [n + 1] where key id starts in buf; off[n]: buf's length */
    uint32_t *hash;  /**< [n] each key's hash (a rehash need not read the keys) */
    size_t n, room;  /**< ids given; room in off and hash */
    char *buf;       /**< the keys, each NUL-terminated */
    size_t buf_room;
} cp_strset_t;

/** A 64-bit hash of s[0..len) (8 bytes a step, multiplied and folded; not keyed). */
uint64_t cp_strhash(const char *s, size_t len);

/**
 * The id of key[0..len) (it may hold no NUL), added when it is new (*added 1,
 * else 0): -1 when out of memory or when the set would pass INT32_MAX keys.
 * A zeroed cp_strset_t is an empty set.
 */
long cp_strset_put(cp_strset_t *s, const char *key, size_t len, int *added);

/** Key id (NUL-terminated), valid until the next put, clear or free. */
const char *cp_strset_key(const cp_strset_t *s, long id);

/** 1 when key id is key[0..len), else 0. */
int cp_strset_is(const cp_strset_t *s, long id, const char *key, size_t len);

/** Keep only the first n keys (ids 0..n-1); O(the table's size). */
void cp_strset_truncate(cp_strset_t *s, size_t n);

/** Empty the set for reuse (a large one gives its memory back). */
void cp_strset_clear(cp_strset_t *s);

void cp_strset_free(cp_strset_t *s);

#endif /* COLLPROF_BASE_STRSET_H */
