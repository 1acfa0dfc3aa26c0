#include "config.h"

#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/time.h>
#include <time.h>

static int log_rank = -1;
static int log_nranks = 0;
static char log_host[64] = "";
static int log_verbosity = 0;
static FILE *log_file;     /* --log-dir: every message, every level */
static char log_dir[4096]; /* where the per-rank logs are ("" without --log-dir) */
static char log_run[96];   /* the run's part of their names */
static int log_holding;    /* cp_log_hold: warnings wait in held[] */
static char held[8][2048];
static int nheld;

/* The length of the UTF-8 sequence at p (at most n bytes), its code point in *cp; 0 if invalid. */
static int utf8_seq(const unsigned char *p, size_t n, unsigned *cp)
{
    unsigned c = p[0], min;
    int more;
    if ((c & 0xe0) == 0xc0) {
        more = 1, min = 0x80, c &= 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        more = 2, min = 0x800, c &= 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        more = 3, min = 0x10000, c &= 0x07;
    } else {
        return 0;
    }
    if (n <= (size_t)more) {
        return 0;
    }
    for (int k = 1; k <= more; k++) {
        if ((p[k] & 0xc0) != 0x80) {
            return 0;
        }
        c = (c << 6) | (p[k] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }
    *cp = c;
    return more + 1;
}

char *cp_escape(const char *in, char *out, size_t outlen)
{
    const unsigned char *p = (const unsigned char *)(in ? in : "");
    size_t o = 0, n = strlen((const char *)p);
    if (outlen == 0) {
        return out;
    }
    while (*p != '\0' && o + 1 < outlen) {
        char esc[16] = "";
        unsigned cp = 0;
        int len = *p >= 0x80 ? utf8_seq(p, n, &cp) : 1;
        if (len == 0 || *p < 0x20 || *p == 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", *p);
            len = 1;
        } else if ((cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) {
            snprintf(esc, sizeof(esc), "\\u%04x", cp);
        }
        size_t add = esc[0] ? strlen(esc) : (size_t)len;
        if (o + add >= outlen) {
            break;
        }
        memcpy(out + o, esc[0] ? esc : (const char *)p, add);
        o += add;
        p += len;
        n -= (size_t)len;
    }
    out[o] = '\0';
    return out;
}

void cp_error_line(const char *prog, const char *msg)
{
    char safe[4096];
    fprintf(stderr, "%s: error: %s\n", prog, cp_escape(msg, safe, sizeof(safe)));
    fflush(stderr);
}

void cp_log_hold(int on)
{
    log_holding = on;
    if (!on) {
        for (int i = 0; i < nheld; i++) {
            fputs(held[i], stderr);
        }
        fflush(stderr);
        nheld = 0;
    }
}

void cp_log_hold_drop(void)
{
    nheld = 0;
    log_holding = 0;
}

void cp_log_setup(int rank, int nranks, const char *hostname, int verbosity)
{
    log_rank = rank;
    log_nranks = nranks;
    log_verbosity = verbosity;
    if (hostname != NULL) {
        snprintf(log_host, sizeof(log_host), "%s", hostname);
    }
}

int cp_log_verbosity(void)
{
    return log_verbosity;
}

/* "2026-11-22T00:15:30.123Z" */
static void iso_now(char *buf, size_t len)
{
    struct timeval tv;
    struct tm tm;
    char ts[40];
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, len, "%s.%03ldZ", ts, (long)(tv.tv_usec / 1000));
}

/* One timestamped line in this rank's log (--log-dir), when there is one. */
__attribute__((format(printf, 1, 2))) static void file_line(const char *fmt, ...)
{
    if (log_file == NULL) {
        return;
    }
    char ts[48];
    va_list ap;
    iso_now(ts, sizeof(ts));
    flockfile(log_file); /* one line, whichever thread writes (the watchdog's too) */
    fprintf(log_file, "%s ", ts);
    va_start(ap, fmt);
    vfprintf(log_file, fmt, ap);
    va_end(ap);
    fputc('\n', log_file);
    fflush(log_file);
    funlockfile(log_file);
}

void cp_vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    /* INFO needs --verbose, DEBUG needs -vv; errors and warnings always print. */
    int console = !(level >= CP_LOG_INFO && level - 1 > log_verbosity);
    if (!console && log_file == NULL) {
        return;
    }
    char raw[2048], msg[4096], ts[48];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    cp_escape(raw, msg, sizeof(msg));
    const char *tag = level == CP_LOG_ERROR ? "error: " : level == CP_LOG_WARN ? "warning: " : "";
    file_line("%s%s%s", prefix ? prefix : "", tag, msg);
    if (!console) {
        return;
    }
    char line[4400];
    if (log_verbosity > 0 || level >= CP_LOG_INFO) {
        iso_now(ts, sizeof(ts));
        snprintf(line, sizeof(line), "[%s r%d/%d %s] %s%s%s\n", ts, log_rank, log_nranks, log_host,
                 prefix ? prefix : "", tag, msg);
    } else if (log_rank >= 0 && log_nranks > 1) {
        snprintf(line, sizeof(line), "collprof[%d]: %s%s%s\n", log_rank, prefix ? prefix : "", tag,
                 msg);
    } else {
        snprintf(line, sizeof(line), "collprof: %s%s%s\n", prefix ? prefix : "", tag, msg);
    }
    if (level == CP_LOG_WARN && log_holding) {
        if (nheld < (int)(sizeof(held) / sizeof(held[0]))) {
            snprintf(held[nheld++], sizeof(held[0]), "%s", line);
        }
        return;
    }
    fputs(line, stderr);
    fflush(stderr);
}

void cp_log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vlog(level, NULL, fmt, ap);
    va_end(ap);
}

void cp_error_once(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    file_line("error: %s", msg);
    if (log_rank > 0) {
        return;
    }
    cp_error_line("collprof", msg);
}

int cp_log_path(int rank, char *buf, size_t len)
{
    if (log_dir[0] == '\0') {
        return -1;
    }
    snprintf(buf, len, "%s/collprof_%s_r%d.log", log_dir, log_run, rank);
    return 0;
}

int cp_log_file_open(const char *dir, const char *run, int rank, char *err, size_t errlen)
{
    char path[4300];
    snprintf(log_dir, sizeof(log_dir), "%s", dir);
    snprintf(log_run, sizeof(log_run), "%s", run);
    cp_log_path(rank, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || (log_file = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "--log-dir: cannot create %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        log_dir[0] = '\0';
        return -1;
    }
    file_line("collprof %s: rank %d of %d on %s, log of run %s", PACKAGE_VERSION, rank, log_nranks,
              log_host, run);
    return 0;
}

void cp_log_file_close(void)
{
    if (log_file != NULL) {
        file_line("end of log");
        fclose(log_file);
        log_file = NULL;
    }
}
