#include "config.h"

/*
 * Where a run's outputs go and under which names (summary.h): the output directory, its
 * check, and the exclusive reservation of the summary's and the result file's names.
 */

#include "output/summary.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cp_output_dir(const cp_options_t *opt)
{
    if (opt->output_dir[0] != '\0') {
        return opt->output_dir;
    }
    const char *s = getenv("SLURM_SUBMIT_DIR");
    return (s != NULL && s[0] != '\0') ? s : ".";
}

int cp_output_dir_check(const char *dir, const char *option, char *err, size_t errlen)
{
    const char *what = !strcmp(option, "--log-dir") ? "log" : "output";
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(err, errlen,
                 "%s directory '%s' does not exist (%s): create it or choose another with %s", what,
                 dir, strerror(errno), option);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s directory '%s' is not a directory: choose another with %s", what,
                 dir, option);
        return -1;
    }
    /* access() says yes to root everywhere; only creating a file tells the truth */
    char probe[4200];
    snprintf(probe, sizeof(probe), "%s/.collprof-probe-XXXXXX", dir);
    int fd = access(dir, W_OK | X_OK) == 0 ? mkstemp(probe) : -1;
    if (fd < 0) {
        snprintf(err, errlen, "%s directory '%s' is not writable: choose another with %s", what,
                 dir, option);
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

int cp_output_create(const char *dir, const char *base, char *path, size_t len, char *h5path,
                     size_t h5len)
{
    for (int k = 1; k < 10000; k++) {
        char suffix[16] = "";
        if (k > 1) {
            snprintf(suffix, sizeof(suffix), "_%d", k);
        }
        snprintf(path, len, "%s/%s%s.txt", dir, base, suffix);
        snprintf(h5path, h5len, "%s/%s%s.h5", dir, base, suffix);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0) {
            if (errno == EEXIST) {
                continue;
            }
            return -1;
        }
#ifdef CP_HAVE_HDF5
        int h5fd = open(h5path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (h5fd < 0) {
            int e = errno;
            close(fd);
            unlink(path);
            if (e == EEXIST) {
                continue;
            }
            errno = e;
            return -1;
        }
        close(h5fd);
#else
        h5path[0] = '\0';
#endif
        return fd;
    }
    errno = EEXIST;
    return -1;
}
