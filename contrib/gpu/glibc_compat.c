/*
 * glibc_compat.c: arc4random, arc4random_buf and arc4random_uniform (glibc
 * 2.36) for a machine whose glibc is older, built by contrib/gpu/bundle.sh
 * as libcp_glibc_compat.so without symbol versions, so that its definitions
 * satisfy the versioned references of the bundle's compat copies of
 * libraries built against glibc 2.36 (see weak_glibc_versions.py).
 * contrib/gpu/run.sh preloads it only when the machine's glibc lacks them.
 * The bytes come from getrandom(2), as glibc's own implementation does.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>

void arc4random_buf(void *buf, size_t n)
{
    unsigned char *p = buf;

    while (n > 0) {
        ssize_t got = getrandom(p, n, 0);

        if (got < 0) {
            if (errno == EINTR)
                continue;
            abort(); /* as glibc: no entropy is not an error it reports */
        }
        p += got;
        n -= (size_t)got;
    }
}

uint32_t arc4random(void)
{
    uint32_t v;

    arc4random_buf(&v, sizeof v);
    return v;
}

uint32_t arc4random_uniform(uint32_t bound)
{
    uint32_t min, v;

    if (bound < 2)
        return 0;
    min = -bound % bound; /* 2^32 mod bound: reject below it, no modulo bias */
    do
        v = arc4random();
    while (v < min);
    return v % bound;
}
