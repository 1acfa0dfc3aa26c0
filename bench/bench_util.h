/* Shared by the bench/ programs: a monotonic clock and a sort order. */
#ifndef COLLPROF_BENCH_UTIL_H
#define COLLPROF_BENCH_UTIL_H

#include <errno.h>
#include <stdlib.h>
#include <time.h>

__attribute__((unused)) static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

__attribute__((unused)) static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* a positive count with an optional K, M or G suffix (powers of 1024); 0 on success */
__attribute__((unused)) static int bench_parse_count(const char *s, long long *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || v <= 0) {
        return -1;
    }
    switch (*end) {
    case 'K':
    case 'k':
        v *= 1024LL;
        end++;
        break;
    case 'M':
    case 'm':
        v *= 1024LL * 1024LL;
        end++;
        break;
    case 'G':
    case 'g':
        v *= 1024LL * 1024LL * 1024LL;
        end++;
        break;
    default: break;
    }
    if (*end != '\0') {
        return -1;
    }
    *out = v;
    return 0;
}

#endif /* COLLPROF_BENCH_UTIL_H */
