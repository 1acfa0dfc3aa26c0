/* Shared by the file harnesses: write the input to a private temporary file. */
#ifndef COLLPROF_TESTS_FUZZ_FILES_H
#define COLLPROF_TESTS_FUZZ_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline int fuzz_tmpfile(const uint8_t *data, size_t size, char *path, size_t len)
{
    snprintf(path, len, "%s/collprof-fuzz-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        return -1;
    }
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            unlink(path);
            return -1;
        }
        off += (size_t)w;
    }
    close(fd);
    return 0;
}

#endif
