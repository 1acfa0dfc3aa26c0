#include "config.h"

#include "screen/hostlist.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A name split into a prefix and a numeric suffix (num -1 when none; width: the digits when
 * zero-padded, else 0). */
typedef struct host_part {
    const char *name;
    int plen, width;
    long num;
} host_part_t;

static host_part_t split_name(const char *name)
{
    host_part_t h = {name, (int)strlen(name), 0, -1};
    int d = h.plen;
    while (d > 0 && isdigit((unsigned char)name[d - 1]) && h.plen - d < 9) {
        d--;
    }
    if (d < h.plen) {
        /* zero-padded suffixes keep their width ("n003"); plain ones merge whatever it is */
        h.width = name[d] == '0' && h.plen - d > 1 ? h.plen - d : 0;
        h.num = strtol(name + d, NULL, 10);
        h.plen = d;
    }
    return h;
}

static int cmp_part(const void *x, const void *y)
{
    const host_part_t *a = x, *b = y;
    int c = strncmp(a->name, b->name, (size_t)(a->plen < b->plen ? a->plen : b->plen));
    if (c != 0 || a->plen != b->plen) {
        return c != 0 ? c : a->plen - b->plen;
    }
    if (a->width != b->width) {
        return a->width - b->width;
    }
    return (a->num > b->num) - (a->num < b->num);
}

/* Same prefix and width: one bracket group. */
static int same_group(const host_part_t *a, const host_part_t *b)
{
    return a->num >= 0 && b->num >= 0 && a->plen == b->plen && a->width == b->width &&
           strncmp(a->name, b->name, (size_t)a->plen) == 0;
}

/* Append printf-style to buf at *at with snprintf's rules: *at counts what did not fit too. */
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + (*at < len ? *at : len - 1), *at < len ? len - *at : 1, fmt, ap);
    va_end(ap);
    *at += w > 0 ? (size_t)w : 0;
}

/* Print group h[0..m) (same prefix and width) as "p[1-3,7]", or the name alone when m == 1. */
static void put_group(const host_part_t *h, int m, char *buf, size_t len, size_t *at)
{
    if (m == 1) {
        put(buf, len, at, "%s", h[0].name);
        return;
    }
    put(buf, len, at, "%.*s[", h[0].plen, h[0].name);
    for (int i = 0; i < m;) {
        int j = i;
        while (j + 1 < m && h[j + 1].num == h[j].num + 1) {
            j++;
        }
        put(buf, len, at, "%s%0*ld", i ? "," : "", h[i].width, h[i].num);
        if (j > i) {
            put(buf, len, at, "-%0*ld", h[j].width, h[j].num);
        }
        i = j + 1;
    }
    put(buf, len, at, "]");
}

int cp_hostlist(const char *const *names, const unsigned char *pick, int n, char *buf, size_t len)
{
    host_part_t *h = malloc(sizeof(*h) * (size_t)(n > 0 ? n : 1));
    size_t at = 0;
    int m = 0;
    if (len > 0) {
        buf[0] = '\0';
    }
    for (int i = 0; h != NULL && i < n; i++) {
        if (pick[i] && names[i] != NULL) {
            h[m++] = split_name(names[i]);
        }
    }
    if (h != NULL && m > 0 && len > 0) {
        qsort(h, (size_t)m, sizeof(*h), cmp_part);
        int u = 0; /* drop repeated names */
        for (int i = 0; i < m; i++) {
            if (u == 0 || strcmp(h[i].name, h[u - 1].name) != 0) {
                h[u++] = h[i];
            }
        }
        for (int i = 0; i < u;) {
            int j = i + 1;
            while (j < u && same_group(&h[i], &h[j])) {
                j++;
            }
            if (i > 0) {
                put(buf, len, &at, ",");
            }
            put_group(&h[i], j - i, buf, len, &at);
            i = j;
        }
    }
    free(h);
    return (int)at;
}
