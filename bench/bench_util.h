/* Shared by the bench/ programs: a monotonic clock and a sort order. */
#ifndef COLLPROF_BENCH_UTIL_H
#define COLLPROF_BENCH_UTIL_H

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

#endif /* COLLPROF_BENCH_UTIL_H */
