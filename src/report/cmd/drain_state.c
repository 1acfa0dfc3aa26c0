/*
 * The drain state file of collprof-report screen --state (drain.h): per node its failing
 * verdicts in a row (count, time, screen, file), the drains collprof ran (for the circuit
 * breaker's window), and whether the breaker tripped.  Text, one record a line:
 *
 *   collprof-drain-state 1
 *   fail NODE COUNT UNIXTIME SCREEN FILE
 *   drained NODE UNIXTIME PARTITION
 *   breaker tripped UNIXTIME WHY
 *
 * Read only from a regular file of this user (or root) that nobody else may write, checked
 * line by line (anything else is refused, never half read); written atomically (a temporary
 * file beside it, fsync'd, renamed over it), so that an error never truncates it; FILE.lock
 * beside it (flock) keeps two runs from reading and writing it at once.
 */
#include "config.h"

#include "report/cmd/drain.h"
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_MAGIC "collprof-drain-state 1"
#define STATE_MAX   (16L << 20) /* bytes */
#define LINE_MAX_   1024

/* 1 when s[0..) is 1 to len-1 characters of set (plus alnum). */
static int token_ok(const char *s, size_t len, const char *set)
{
    size_t n = strlen(s);
    if (n == 0 || n >= len) {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && strchr(set, s[i]) == NULL) {
            return 0;
        }
    }
    return 1;
}

/* 1 when s is printable ASCII text of 0 to len-1 characters. */
static int text_ok(const char *s, size_t len)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e) {
            return 0;
        }
    }
    return n < len;
}

/* A decimal in [lo, hi] into *v: 0, or -1. */
static int number(const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    if (!isdigit((unsigned char)s[0])) {
        return -1;
    }
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *end != '\0' || errno != 0 || *v < lo || *v > hi ? -1 : 0;
}

/* The next space-separated word of *p (NUL-terminated in place), or NULL; rest: the rest
 * of the line instead (may be empty). */
static char *word(char **p, int rest)
{
    char *w = *p;
    if (w == NULL || (!rest && *w == '\0')) {
        return NULL;
    }
    if (rest) {
        *p = NULL;
        return w;
    }
    char *sp = strchr(w, ' ');
    *p = sp ? sp + 1 : NULL;
    if (sp != NULL) {
        *sp = '\0';
    }
    return w;
}

#define TIME_MAX (1LL << 40)
#define NODE_SET "._-"

/* One record line into s: NULL, or what is wrong with it. */
static const char *parse_line(char *line, cp_drain_state_t *s)
{
    char *p = line, *kind = word(&p, 0);
    long long v, t;
    if (kind != NULL && !strcmp(kind, "fail")) {
        char *node = word(&p, 0), *count = word(&p, 0), *time = word(&p, 0);
        char *screen = word(&p, 0), *file = word(&p, 1);
        if (node == NULL || !token_ok(node, 64, NODE_SET) || count == NULL ||
            number(count, 1, 1000000, &v) || time == NULL || number(time, 0, TIME_MAX, &t) ||
            screen == NULL || !token_ok(screen, 128, "._:/+-") || file == NULL ||
            !text_ok(file, 256)) {
            return "a bad fail record";
        }
        if (cp_drain_state_fail(s, node) != NULL) {
            return "a node's fail record twice";
        }
        if (cp_drain_state_failed(s, node, screen, file, t) < 0) {
            return "out of memory";
        }
        cp_drain_state_fail(s, node)->count = (int)v;
        return NULL;
    }
    if (kind != NULL && !strcmp(kind, "drained")) {
        char *node = word(&p, 0), *time = word(&p, 0), *part = word(&p, 0);
        if (node == NULL || !token_ok(node, 64, NODE_SET) || time == NULL ||
            number(time, 0, TIME_MAX, &t) || part == NULL || !token_ok(part, 64, NODE_SET) ||
            p != NULL) {
            return "a bad drained record";
        }
        return cp_drain_state_drained(s, node, part, t) < 0 ? "out of memory" : NULL;
    }
    if (kind != NULL && !strcmp(kind, "breaker")) {
        char *what = word(&p, 0), *time = word(&p, 0), *why = word(&p, 1);
        if (what == NULL || strcmp(what, "tripped") || time == NULL ||
            number(time, 1, TIME_MAX, &t) || why == NULL || !text_ok(why, 256) || s->tripped) {
            return "a bad breaker record";
        }
        s->tripped = t;
        snprintf(s->trip_why, sizeof(s->trip_why), "%s", why);
        return NULL;
    }
    return "a line that is no record";
}

/* The checked text of the state file path into *text: 1 when there is none, 0, or the exit
 * status 2 after the error. */
static int read_checked(const char *path, char **text)
{
    struct stat st, fst;
    *text = NULL;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) {
            return 1;
        }
        cp_report_error("screen: --state %s: %s: nothing changed", path, strerror(errno));
        return CP_REPORT_EXIT_BAD;
    }
    const char *bad = !S_ISREG(st.st_mode)                       ? "not a regular file"
                      : st.st_uid != geteuid() && st.st_uid != 0 ? "owned by another user"
                      : (st.st_mode & 022) != 0                  ? "writable by others"
                      : st.st_size > STATE_MAX                   ? "larger than 16 MiB"
                                                                 : NULL;
    int fd = bad ? -1 : open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (bad == NULL &&
        (fd < 0 || fstat(fd, &fst) != 0 || fst.st_ino != st.st_ino || fst.st_dev != st.st_dev)) {
        bad = fd < 0 ? strerror(errno) : "changed while opened";
    }
    char *buf = bad ? NULL : malloc((size_t)st.st_size + 1);
    ssize_t got = buf ? read(fd, buf, (size_t)st.st_size) : -1;
    if (bad == NULL && (buf == NULL || got != st.st_size)) {
        bad = buf == NULL ? "out of memory" : "a short read";
    }
    if (fd >= 0) {
        close(fd);
    }
    if (bad != NULL) {
        free(buf);
        cp_report_error("screen: --state %s: %s: not used, nothing changed", path, bad);
        return CP_REPORT_EXIT_BAD;
    }
    buf[got] = '\0';
    *text = buf;
    return 0;
}

int cp_drain_state_load(const char *path, cp_drain_state_t *s)
{
    char *text;
    memset(s, 0, sizeof(*s));
    int rc = read_checked(path, &text);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    const char *bad = NULL;
    size_t lineno = 0;
    for (char *line = text, *next; bad == NULL && line != NULL && *line != '\0'; line = next) {
        next = strchr(line, '\n');
        if (next == NULL) {
            bad = "its last line is not ended";
            break;
        }
        *next++ = '\0';
        lineno++;
        if (strlen(line) >= LINE_MAX_) {
            bad = "a line too long";
        } else if (lineno == 1) {
            bad = strcmp(line, STATE_MAGIC) ? "no '" STATE_MAGIC "' first line" : NULL;
        } else {
            bad = parse_line(line, s);
        }
    }
    if (bad == NULL && lineno == 0) {
        bad = "empty";
    }
    free(text);
    if (bad != NULL) {
        cp_drain_state_free(s);
        cp_report_error("screen: --state %s: not a collprof drain state (line %zu: %s): not "
                        "used, nothing changed",
                        path, lineno, bad);
        return CP_REPORT_EXIT_BAD;
    }
    return 0;
}

/* The records of s on out. */
static void write_records(FILE *out, const cp_drain_state_t *s)
{
    fprintf(out, "%s\n", STATE_MAGIC);
    for (size_t i = 0; i < s->nfails; i++) {
        const cp_drain_fail_t *f = &s->fails[i];
        fprintf(out, "fail %s %d %lld %s %s\n", f->node, f->count, f->time, f->screen, f->file);
    }
    for (size_t i = 0; i < s->ndone; i++) {
        fprintf(out, "drained %s %lld %s\n", s->done[i].node, s->done[i].time, s->done[i].part);
    }
    if (s->tripped) {
        fprintf(out, "breaker tripped %lld %s\n", s->tripped, s->trip_why);
    }
}

int cp_drain_state_save(const char *path, const cp_drain_state_t *s)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 16);
    if (tmp == NULL) {
        cp_report_error("screen: out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    snprintf(tmp, pl + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
    int err = out == NULL ? errno : 0;
    if (out != NULL) {
        write_records(out, s);
        err = fflush(out) != 0 || ferror(out) || fsync(fd) != 0 ? errno : 0;
        err = fclose(out) != 0 && err == 0 ? errno : err;
        err = err == 0 && rename(tmp, path) != 0 ? errno : err;
    } else if (fd >= 0) {
        close(fd);
    }
    if (err != 0 || out == NULL) {
        if (fd >= 0) {
            unlink(tmp);
        }
        cp_report_error("screen: --state %s: cannot write it (%s): the file is as it was", path,
                        strerror(err ? err : EIO));
        free(tmp);
        return CP_REPORT_EXIT_BAD;
    }
    free(tmp);
    return 0;
}

int cp_drain_state_lock(const char *path)
{
    size_t pl = strlen(path);
    char *lp = malloc(pl + 8);
    int fd = -1, err = ENOMEM;
    struct stat st;
    if (lp != NULL) {
        snprintf(lp, pl + 8, "%s.lock", path);
        fd = open(lp, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        err = fd < 0 ? errno : fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
    }
    for (int i = 0; err == 0 && i < 600; i++) { /* 60 s at most */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            free(lp);
            return fd;
        }
        err = errno == EWOULDBLOCK ? 0 : errno;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    cp_report_error("screen: --state %s: cannot lock %s.lock (%s): nothing changed", path, path,
                    err ? strerror(err) : "another run held it for 60 s");
    if (fd >= 0) {
        close(fd);
    }
    free(lp);
    return -1;
}

void cp_drain_state_free(cp_drain_state_t *s)
{
    free(s->fails);
    free(s->done);
    memset(s, 0, sizeof(*s));
}

cp_drain_fail_t *cp_drain_state_fail(cp_drain_state_t *s, const char *node)
{
    for (size_t i = 0; i < s->nfails; i++) {
        if (!strcmp(s->fails[i].node, node)) {
            return &s->fails[i];
        }
    }
    return NULL;
}

int cp_drain_state_failed(cp_drain_state_t *s, const char *node, const char *screen,
                          const char *file, long long now)
{
    cp_drain_fail_t *f = cp_drain_state_fail(s, node);
    if (f == NULL) {
        cp_drain_fail_t *b = realloc(s->fails, (s->nfails + 1) * sizeof(*b));
        if (b == NULL) {
            return -1;
        }
        s->fails = b;
        f = &b[s->nfails++];
        memset(f, 0, sizeof(*f));
        snprintf(f->node, sizeof(f->node), "%s", node);
    } else if (!strcmp(f->screen, screen)) { /* the same screen again: one verdict */
        return f->count;
    }
    f->count++;
    f->time = now;
    snprintf(f->screen, sizeof(f->screen), "%s", screen);
    snprintf(f->file, sizeof(f->file), "%s", file);
    return f->count;
}

void cp_drain_state_forget(cp_drain_state_t *s, const char *node)
{
    cp_drain_fail_t *f = cp_drain_state_fail(s, node);
    if (f != NULL) {
        *f = s->fails[--s->nfails];
    }
}

int cp_drain_state_drained(cp_drain_state_t *s, const char *node, const char *part, long long now)
{
    cp_drain_done_t *b = realloc(s->done, (s->ndone + 1) * sizeof(*b));
    if (b == NULL) {
        return -1;
    }
    s->done = b;
    cp_drain_done_t *d = &b[s->ndone++];
    snprintf(d->node, sizeof(d->node), "%s", node);
    snprintf(d->part, sizeof(d->part), "%s", part);
    d->time = now;
    return 0;
}

void cp_drain_state_undrain(cp_drain_state_t *s, const char *node)
{
    for (size_t i = s->ndone; i-- > 0;) {
        if (!strcmp(s->done[i].node, node)) {
            memmove(&s->done[i], &s->done[i + 1], (s->ndone - i - 1) * sizeof(s->done[0]));
            s->ndone--;
            return;
        }
    }
}

int cp_drain_state_recent(const cp_drain_state_t *s, const char *part, long long now,
                          long long window)
{
    int n = 0;
    for (size_t i = 0; i < s->ndone; i++) {
        n += !strcmp(s->done[i].part, part) && s->done[i].time > now - window;
    }
    return n;
}

void cp_drain_state_prune(cp_drain_state_t *s, long long before)
{
    size_t k = 0;
    for (size_t i = 0; i < s->ndone; i++) {
        if (s->done[i].time >= before) {
            s->done[k++] = s->done[i];
        }
    }
    s->ndone = k;
}
