/* What the result files capture of the environment (src/base/util.c): which variables, which
 * secrets are redacted (by name and by value), that every value is one printable line, and the
 * log's escaping of what it prints (cp_escape).  Then the temporary file being written
 * (cp_tmp_set): a SIGTERM removes it and still kills; an ignored SIGTERM stays ignored.  And
 * a plugin's default for a library's variable (collprof_env_default): into a spare entry,
 * the environment keeping its shape, a user's value kept, setenv once none is left.  And
 * cp_fd_drain, the wait of an abort for its stdout to be read: a pipe and a socket read late,
 * one never read, a file. */
#include "config.h"

#include "base/log.h"
#include "base/util.h"
#include "tap.h"

#include <collprof/plugin_util.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child with cp_tmp_signals (SIGTERM ignored first when ignore) that creates path, names it
 * the temporary file when named, and raises SIGTERM: its wait status. */
static int tmp_child(const char *path, int ignore, int named)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (ignore) {
            signal(SIGTERM, SIG_IGN);
        }
        cp_tmp_signals();
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) {
            _exit(9);
        }
        close(fd);
        cp_tmp_set(named ? path : NULL);
        raise(SIGTERM);
        _exit(7);
    }
    int st = -1;
    return pid > 0 && waitpid(pid, &st, 0) == pid ? st : -1;
}

static int env_count(void)
{
    int n = 0;
    while (environ[n] != NULL) {
        n++;
    }
    return n;
}

static void env_default_checks(void)
{
    cp_env_reserve();
    char **e0 = environ;
    int n0 = env_count();
    collprof_env_default("CP_TEST_NEW", "CP_TEST_NEW=one");
    const char *v = getenv("CP_TEST_NEW");
    ok(v != NULL && !strcmp(v, "one") && environ == e0 && env_count() == n0,
       "collprof_env_default: set in a spare entry, the environment keeps its place and size");
    collprof_env_default("CP_TEST_NEW", "CP_TEST_NEW=two");
    v = getenv("CP_TEST_NEW");
    ok(v != NULL && !strcmp(v, "one"), "... once set, kept (got %s)", v ? v : "(none)");
    setenv("CP_TEST_USER", "mine", 1);
    collprof_env_default("CP_TEST_USER", "CP_TEST_USER=default");
    v = getenv("CP_TEST_USER");
    ok(v != NULL && !strcmp(v, "mine"), "a user's value is kept (got %s)", v ? v : "(none)");
    static const char *const kvs[] = {"CP_T0=a", "CP_T1=a", "CP_T2=a", "CP_T3=a", "CP_T4=a",
                                      "CP_T5=a", "CP_T6=a", "CP_T7=a", "CP_T8=a", "CP_T9=a",
                                      "CP_TA=a", "CP_TB=a", "CP_TC=a", "CP_TD=a", "CP_TE=a",
                                      "CP_TF=a", "CP_TG=a", "CP_TH=a"};
    int all = 1;
    for (size_t i = 0; i < sizeof(kvs) / sizeof(kvs[0]); i++) {
        char name[8];
        snprintf(name, sizeof(name), "%.5s", kvs[i]);
        all &= collprof_env_default(name, kvs[i]) == 0;
        v = getenv(name);
        all &= v != NULL && !strcmp(v, "a");
    }
    ok(all, "%d names, more than the %d spare entries: those past them by setenv, every one set",
       (int)(sizeof(kvs) / sizeof(kvs[0])), COLLPROF_ENV_SLOTS);
}

static void tmp_checks(void)
{
    char path[64];
    snprintf(path, sizeof(path), "/tmp/collprof-test-tmp.%ld", (long)getpid());
    int st = tmp_child(path, 0, 1);
    ok(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && access(path, F_OK) != 0,
       "cp_tmp_set: SIGTERM while the file is written removes it, and the process dies of it");
    st = tmp_child(path, 0, 0);
    ok(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && access(path, F_OK) == 0,
       "cp_tmp_set(NULL) (renamed to its own name by then): SIGTERM leaves the file");
    unlink(path);
    st = tmp_child(path, 1, 1);
    ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 7 && access(path, F_OK) == 0,
       "SIGTERM ignored by the caller (nohup): still ignored, nothing removed");
    unlink(path);
}

/* the captured value of kv, or "(none)" */
static const char *cap(const char *kv)
{
    static char name[128];
    const char *v = cp_env_captured(kv, name, sizeof(name));
    return v ? v : "(none)";
}

static void check(const char *kv, const char *want)
{
    const char *got = cap(kv);
    ok(!strcmp(got, want), "%s -> %s (got %s)", kv, want, got);
}

/* fds[1] written 4 KiB; a child reads fds[0] after delay_ms (never when negative): how long
 * cp_fd_drain(fds[1], 2 s) took, its result in *rc */
static double drain_after(int fds[2], int delay_ms, int *rc)
{
    char buf[4096];
    memset(buf, 'x', sizeof(buf));
    ok(write(fds[1], buf, sizeof(buf)) == (ssize_t)sizeof(buf), "4 KiB written");
    pid_t pid = fork();
    if (pid == 0) {
        if (delay_ms >= 0) {
            usleep((useconds_t)delay_ms * 1000);
            size_t got = 0;
            while (got < sizeof(buf)) {
                ssize_t r = read(fds[0], buf, sizeof(buf) - got);
                if (r <= 0) {
                    _exit(1);
                }
                got += (size_t)r;
            }
        } else {
            pause();
        }
        _exit(0);
    }
    double t = cp_now_s();
    *rc = cp_fd_drain(fds[1], 2.0);
    t = cp_now_s() - t;
    if (delay_ms < 0) {
        kill(pid, SIGKILL);
    }
    waitpid(pid, NULL, 0);
    close(fds[0]);
    close(fds[1]);
    return t;
}

static void drain_checks(void)
{
    int fds[2], rc;
    if (pipe(fds) == 0) {
        double t = drain_after(fds, 300, &rc);
        ok(rc == 0 && t >= 0.25 && t < 2.0, "drain: a pipe read 0.3 s later: 0 after %.2f s", t);
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0) {
        double t = drain_after(fds, 300, &rc);
        ok(rc == 0 && t >= 0.25 && t < 2.0, "drain: a socket read 0.3 s later: 0 after %.2f s", t);
    }
    if (pipe(fds) == 0) {
        double t = drain_after(fds, -1, &rc);
        ok(rc == 1 && t >= 1.9, "drain: a pipe never read: 1 after %.2f s (the 2 s given)", t);
    }
    char path[] = "/tmp/collprof-drain.XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        ok(write(fd, "x", 1) == 1 && cp_fd_drain(fd, 2.0) == -1, "drain: a file: -1 at once");
        close(fd);
        unlink(path);
    }
}

int main(void)
{
    /* what is captured */
    check("NCCL_ALGO=Ring", "Ring");
    check("FI_PROVIDER=tcp;ofi_rxm", "tcp;ofi_rxm");
    check("HOME=/root", "(none)");
    check("PMIX_SERVER_URI41=pmix-server.123;tcp4://127.0.0.1:4000", "(none)");
    check("PMIX_NAMESPACE=slurm.pmix.12.0", "(none)");
    check("PMIX_MCA_gds=hash", "hash");
    /* secrets by name, in any case */
    check("COLLPROF_API_TOKEN=x", "<redacted>");
    check("SLURM_JWT=abc", "<redacted>");
    check("OMPI_MCA_btl_tcp_password=hunter2", "<redacted>");
    check("FI_PSM3_PWD=abc", "<redacted>");
    check("UCX_AUTH_MODE=x", "<redacted>");
    check("SLURM_COOKIE=1", "<redacted>");
    check("CUDA_PRIVATE_DIR=/x", "<redacted>");
    /* secrets by value */
    check("SLURM_EXPORT_X=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2ln", "<redacted>");
    check("COLLPROF_X=ghp_abcdefghijklmnopqrstuvwxyz0123", "<redacted>");
    check("COLLPROF_X=AKIAABCDEFGHIJKLMNOP", "<redacted>");
    check("NCCL_DEBUG=INFO", "INFO");
    check("COLLPROF_URL=https://alice:hunter2@example.org/x",
          "https://alice:<redacted>@example.org/x");
    check("COLLPROF_URL=https://example.org/a:b@c", "https://example.org/a:b@c");
    check("OMPI_MCA_x=user=bob,Password=hunter2,port=1", "user=bob,Password=<redacted>,port=1");
    check("COLLPROF_DB=host=h token=abc dbname=d", "host=h token=<redacted> dbname=d");
    /* one printable line of valid UTF-8 */
    check("COLLPROF_TAG=a\nresult: PASSED", "a\\nresult: PASSED");
    check("COLLPROF_TAG=\x1b[31mred", "\\x1b[31mred");
    check("COLLPROF_TAG=caf\xc3\xa9", "caf\xc3\xa9");
    check("COLLPROF_TAG=bad\xff\xc3", "bad\\xff\\xc3");

    char out[8];
    size_t n = cp_text_sanitize("ab\xc3\xa9\xc3\xa9", out, sizeof(out));
    ok(n == 6 && !strcmp(out, "ab\xc3\xa9\xc3\xa9"), "a cut keeps whole characters (%zu)", n);
    n = cp_text_sanitize("abcde\xc3\xa9", out, 7);
    ok(n == 5 && !strcmp(out, "abcde"), "a character that does not fit is left out whole");
    n = cp_text_sanitize("abcd\n", out, 6);
    ok(n == 4 && !strcmp(out, "abcd"), "an escape that does not fit is left out whole");

    /* bidirectional overrides and isolates reorder what a terminal shows: escaped */
    char wide[64];
    cp_text_sanitize("a\xe2\x80\xae"
                     "b\xe2\x81\xa6"
                     "c\xe2\x80\x94"
                     "d",
                     wide, sizeof(wide));
    ok(!strcmp(wide, "a\\u202eb\\u2066c\xe2\x80\x94"
                     "d"),
       "U+202E and U+2066 escaped, U+2014 kept (%s)", wide);

    /* the log's escaping: every line of collprof's stderr goes through it */
    cp_escape("x\033[2J\ny\xff\xe2\x80\xab"
              "z",
              wide, sizeof(wide));
    ok(!strcmp(wide, "x\\x1b[2J\\ny\\xff\\u202bz"), "cp_escape: control, invalid, bidi (%s)", wide);
    cp_escape("abc\033", wide, 6);
    ok(!strcmp(wide, "abc"), "cp_escape: an escape that does not fit is left out whole");
    tmp_checks();
    env_default_checks();
    drain_checks();
    return tap_done();
}
