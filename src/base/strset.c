/*
 * The string set of strset.h: linear probing in a table kept at most half
 * full, every size checked for overflow before it is allocated.
 */
#include "config.h"

#include "base/strset.h"

#include <stdlib.h>
#include <string.h>

uint64_t cp_strhash(const char *s, size_t len)
{
    const uint64_t k = UINT64_C(0x9e3779b97f4a7c15);
    uint64_t x = UINT64_C(1469598103934665603) ^ len, w;
    size_t i = 0;
    for (; len - i >= 8; i += 8) { /* 8 bytes a step: JSON member names are long */
        memcpy(&w, s + i, 8);
        x = (x ^ w) * k;
        x ^= x >> 32;
    }
    for (w = 0; i < len; i++) {
        w = w << 8 | (unsigned char)s[i];
    }
    x = (x ^ w) * k;
    x ^= x >> 29; /* the low bits, which pick the slot, depend on every byte */
    x *= k;
    return x ^ (x >> 32);
}

/* *p resized to n elements of size each (n * size checked): 0, or -1. */
static int resize(void *p, size_t n, size_t size)
{
    if (n > SIZE_MAX / size) {
        return -1;
    }
    void *g = realloc(*(void **)p, n * size);
    if (g == NULL) {
        return -1;
    }
    *(void **)p = g;
    return 0;
}

/* The table at cap slots, every key placed again by its stored hash. */
static int rehash(cp_strset_t *s, size_t cap)
{
    if (cap > SIZE_MAX / sizeof(uint32_t)) {
        return -1;
    }
    uint32_t *slots = calloc(cap, sizeof(uint32_t));
    if (slots == NULL) {
        return -1;
    }
    for (size_t id = 0; id < s->n; id++) {
        size_t i = s->hash[id] & (cap - 1);
        while (slots[i] != 0) {
            i = (i + 1) & (cap - 1);
        }
        slots[i] = (uint32_t)id + 1;
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

/* Room for one more key of len bytes: 0, or -1. */
static int make_room(cp_strset_t *s, size_t len)
{
    if (s->n >= INT32_MAX || len > SIZE_MAX / 2 - s->off[s->n]) {
        return -1;
    }
    size_t used = s->off[s->n], need = used + len + 1;
    if (need > s->buf_room) {
        size_t room = s->buf_room < 256 ? 256 : s->buf_room;
        while (room < need) {
            room *= 2;
        }
        if (resize(&s->buf, room, 1) != 0) {
            return -1;
        }
        s->buf_room = room;
    }
    if (s->n + 1 >= s->room) {
        size_t room = s->room < 16 ? 16 : s->room * 2;
        if (resize(&s->off, room + 1, sizeof(*s->off)) != 0 ||
            resize(&s->hash, room, sizeof(*s->hash)) != 0) {
            return -1;
        }
        s->room = room;
    }
    if (2 * (s->n + 1) > s->cap) {
        return rehash(s, s->cap < 16 ? 16 : s->cap * 2);
    }
    return 0;
}

long cp_strset_put(cp_strset_t *s, const char *key, size_t len, int *added)
{
    *added = 0;
    if (s->off == NULL && (s->off = calloc(1, sizeof(*s->off))) == NULL) {
        return -1;
    }
    uint32_t h = (uint32_t)cp_strhash(key, len);
    for (size_t i = s->cap ? h & (s->cap - 1) : 0; s->cap != 0; i = (i + 1) & (s->cap - 1)) {
        uint32_t id = s->slots[i];
        if (id == 0) {
            break;
        }
        id--;
        if (s->hash[id] == h && s->off[id + 1] - s->off[id] == len + 1 &&
            memcmp(s->buf + s->off[id], key, len) == 0) {
            return (long)id;
        }
    }
    if (make_room(s, len) != 0) {
        return -1;
    }
    size_t id = s->n, at = s->off[id];
    memcpy(s->buf + at, key, len);
    s->buf[at + len] = '\0';
    s->off[id + 1] = at + len + 1;
    s->hash[id] = h;
    size_t i = h & (s->cap - 1);
    while (s->slots[i] != 0) {
        i = (i + 1) & (s->cap - 1);
    }
    s->slots[i] = (uint32_t)id + 1;
    s->n++;
    *added = 1;
    return (long)id;
}

const char *cp_strset_key(const cp_strset_t *s, long id)
{
    return id >= 0 && (size_t)id < s->n ? s->buf + s->off[id] : NULL;
}

int cp_strset_is(const cp_strset_t *s, long id, const char *key, size_t len)
{
    return id >= 0 && (size_t)id < s->n && s->off[id + 1] - s->off[id] == len + 1 &&
           memcmp(s->buf + s->off[id], key, len) == 0;
}

void cp_strset_truncate(cp_strset_t *s, size_t n)
{
    if (n >= s->n) {
        return;
    }
    s->n = n;
    memset(s->slots, 0, s->cap * sizeof(*s->slots));
    for (size_t id = 0; id < n; id++) {
        size_t i = s->hash[id] & (s->cap - 1);
        while (s->slots[i] != 0) {
            i = (i + 1) & (s->cap - 1);
        }
        s->slots[i] = (uint32_t)id + 1;
    }
}

void cp_strset_clear(cp_strset_t *s)
{
    if (s->cap > 1024 || s->buf_room > 65536) {
        cp_strset_free(s);
        return;
    }
    if (s->slots != NULL) {
        memset(s->slots, 0, s->cap * sizeof(*s->slots));
    }
    s->n = 0;
    if (s->off != NULL) {
        s->off[0] = 0;
    }
}

void cp_strset_free(cp_strset_t *s)
{
    free(s->slots);
    free(s->off);
    free(s->hash);
    free(s->buf);
    memset(s, 0, sizeof(*s));
}
