/*
 * memcpy bandwidth at given buffer sizes, the yardstick of bench/backends.sh.
 *
 * Policy (printed with the results): one thread; source and destination
 * from posix_memalign(4096) (as collprof's and the ofi plugin's buffers),
 * both touched with memset before timing; transparent huge pages as the
 * system decides (no madvise) unless --thp (MADV_HUGEPAGE) or --no-thp
 * (MADV_NOHUGEPAGE); one untimed warm-up copy, then N timed copies of the
 * same buffers (warm, no cache rotation), CLOCK_MONOTONIC around each;
 * bandwidth = bytes / median time in GB/s (1e9 B/s), bytes copied (the
 * memory traffic is twice that: read + write).
 *
 * Usage: memcpy_bw [-n N] [--thp|--no-thp] SIZE...   (SIZE in bytes, K/M/G = 2^10/20/30)
 * Output: one line per size: "memcpy <bytes> <GB/s median> <us median> <us min>".
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench_util.h"

static int parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) {
        return -1;
    }
    switch (*end) {
    case 'k':
    case 'K':
        v <<= 10;
        end++;
        break;
    case 'm':
    case 'M':
        v <<= 20;
        end++;
        break;
    case 'g':
    case 'G':
        v <<= 30;
        end++;
        break;
    default: break;
    }
    if (*end != '\0' || v == 0 || v > (1ULL << 40)) {
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    int n = 20, thp = -1, first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (!strcmp(argv[first], "-n") && first + 1 < argc) {
            n = atoi(argv[first + 1]);
            first += 2;
        } else if (!strcmp(argv[first], "--thp")) {
            thp = 1;
            first++;
        } else if (!strcmp(argv[first], "--no-thp")) {
            thp = 0;
            first++;
        } else {
            fprintf(stderr, "memcpy_bw: unknown option '%s'\n", argv[first]);
            return 2;
        }
    }
    if (n < 1 || n > 100000 || first >= argc) {
        fprintf(stderr, "usage: memcpy_bw [-n N] [--thp|--no-thp] SIZE...\n");
        return 2;
    }
    printf("# memcpy_bw: 1 thread, posix_memalign(4096), pages touched, huge pages: %s, "
           "1 warm-up + %d timed copies of the same buffers, median\n",
           thp < 0 ? "system default (no madvise)"
           : thp   ? "MADV_HUGEPAGE"
                   : "MADV_NOHUGEPAGE",
           n);
    double *t = calloc((size_t)n, sizeof(double));
    if (t == NULL) {
        return 1;
    }
    for (int a = first; a < argc; a++) {
        size_t len;
        void *src = NULL, *dst = NULL;
        if (parse_size(argv[a], &len) != 0) {
            fprintf(stderr, "memcpy_bw: bad size '%s'\n", argv[a]);
            return 2;
        }
        if (posix_memalign(&src, 4096, len) != 0 || posix_memalign(&dst, 4096, len) != 0) {
            fprintf(stderr, "memcpy_bw: out of memory for %zu bytes\n", len);
            return 1;
        }
        if (thp >= 0) {
            madvise(src, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
            madvise(dst, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        }
        memset(src, 1, len);
        memset(dst, 2, len);
        memcpy(dst, src, len); /* warm-up */
        for (int i = 0; i < n; i++) {
            double t0 = now_us();
            memcpy(dst, src, len);
            t[i] = now_us() - t0;
            /* keep the copy observable */
            ((volatile char *)src)[i % len] = ((volatile char *)dst)[(i * 7) % len];
        }
        qsort(t, (size_t)n, sizeof(double), cmp_double);
        double med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
        printf("memcpy %zu %.3f %.1f %.1f\n", len, (double)len / (med * 1e-6) / 1e9, med, t[0]);
        fflush(stdout);
        free(src);
        free(dst);
    }
    free(t);
    return 0;
}
