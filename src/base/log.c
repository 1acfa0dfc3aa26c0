#include "config.h"

#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/time.h>
#include <time.h>

/* The watchdog thread logs too: everything below moves under log_mu (the
 * verbosity alone is atomic, read on every message's fast path).  Never held
 * across a write to stderr, only across one to the --log-dir file. */
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int log_rank = -1;
static int log_nranks = 0;
static char log_host[64] = "";
static atomic_int log_verbosity;
static FILE *log_file;         /* --log-dir: every message, every level */
static atomic_int log_to_file; /* log_file is open: the fast path's look at it */
static char log_dir[4096];     /* where the per-rank logs are ("" without --log-dir) */
static char log_run[96];       /* the run's part of their names */
static int log_holding;        /* cp_log_hold: warnings wait in held[] */
static char held[8][2048];
static int nheld;

char *cp_escape(const char *in, char *out, size_t outlen)
{
    cp_text_sanitize(in ? in : "", out, outlen);
    return out;
}

/* "PROG: TAG: MSG" on stderr, MSG escaped */
static void tagged_line(const char *prog, const char *tag, const char *msg)
{
    char safe[4096];
    fprintf(stderr, "%s: %s: %s\n", prog, tag, cp_escape(msg, safe, sizeof(safe)));
    fflush(stderr);
}

void cp_error_line(const char *prog, const char *msg)
{
    tagged_line(prog, "error", msg);
}

void cp_log_hold(int on)
{
    pthread_mutex_lock(&log_mu);
    log_holding = on;
    if (!on) {
        /* in the lock: a message logged meanwhile waits for the held ones, keeping the order */
        for (int i = 0; i < nheld; i++) {
            fputs(held[i], stderr);
        }
        fflush(stderr);
        nheld = 0;
    }
    pthread_mutex_unlock(&log_mu);
}

void cp_log_hold_drop(void)
{
    pthread_mutex_lock(&log_mu);
    nheld = 0;
    log_holding = 0;
    pthread_mutex_unlock(&log_mu);
}

void cp_log_setup(int rank, int nranks, const char *hostname, int verbosity)
{
    pthread_mutex_lock(&log_mu);
    log_rank = rank;
    log_nranks = nranks;
    atomic_store(&log_verbosity, verbosity);
    if (hostname != NULL) {
        snprintf(log_host, sizeof(log_host), "%s", hostname);
    }
    pthread_mutex_unlock(&log_mu);
}

int cp_log_verbosity(void)
{
    return atomic_load(&log_verbosity);
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

/* One timestamped line in this rank's log (--log-dir), when there is one.  log_mu held:
 * one line at a time, whichever thread writes (the watchdog's too), and never after the
 * file was closed. */
__attribute__((format(printf, 1, 2))) static void file_line(const char *fmt, ...)
{
    if (log_file == NULL) {
        return;
    }
    char ts[48];
    va_list ap;
    iso_now(ts, sizeof(ts));
    fprintf(log_file, "%s ", ts);
    va_start(ap, fmt);
    vfprintf(log_file, fmt, ap);
    va_end(ap);
    fputc('\n', log_file);
    fflush(log_file);
}

void cp_vlog(int level, const char *prefix, const char *fmt, va_list ap)
{
    /* INFO needs --verbose, DEBUG needs -vv; errors and warnings always print. */
    int verbosity = atomic_load(&log_verbosity);
    int console = !(level >= CP_LOG_INFO && level - 1 > verbosity);
    if (!console && !atomic_load(&log_to_file)) {
        return;
    }
    char raw[2048], msg[4096], ts[48];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    cp_escape(raw, msg, sizeof(msg));
    const char *tag = level == CP_LOG_ERROR ? "error: " : level == CP_LOG_WARN ? "warning: " : "";
    pthread_mutex_lock(&log_mu);
    file_line("%s%s%s", prefix ? prefix : "", tag, msg);
    if (!console) {
        pthread_mutex_unlock(&log_mu);
        return;
    }
    char line[4400];
    if (verbosity > 0 || level >= CP_LOG_INFO) {
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
        pthread_mutex_unlock(&log_mu);
        return;
    }
    pthread_mutex_unlock(&log_mu);
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

/* a message every rank reaches identically: in every rank's log, on stderr from rank 0 alone */
__attribute__((format(printf, 2, 0))) static void vonce(const char *tag, const char *fmt,
                                                        va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    pthread_mutex_lock(&log_mu);
    file_line("%s: %s", tag, msg);
    int rank = log_rank;
    pthread_mutex_unlock(&log_mu);
    if (rank > 0) {
        return;
    }
    tagged_line("collprof", tag, msg);
}

void cp_error_once(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vonce("error", fmt, ap);
    va_end(ap);
}

void cp_note_once(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vonce("note", fmt, ap);
    va_end(ap);
}

/* log_mu held. */
static int log_path(int rank, char *buf, size_t len)
{
    if (log_dir[0] == '\0') {
        return -1;
    }
    snprintf(buf, len, "%s/collprof_%s_r%d.log", log_dir, log_run, rank);
    return 0;
}

int cp_log_path(int rank, char *buf, size_t len)
{
    pthread_mutex_lock(&log_mu);
    int rc = log_path(rank, buf, len);
    pthread_mutex_unlock(&log_mu);
    return rc;
}

int cp_log_file_open(const char *dir, const char *run, int rank, char *err, size_t errlen)
{
    char path[4300];
    pthread_mutex_lock(&log_mu);
    snprintf(log_dir, sizeof(log_dir), "%s", dir);
    snprintf(log_run, sizeof(log_run), "%s", run);
    log_path(rank, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || (log_file = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "--log-dir: cannot create %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        log_dir[0] = '\0';
        pthread_mutex_unlock(&log_mu);
        return -1;
    }
    atomic_store(&log_to_file, 1);
    file_line("collprof %s: rank %d of %d on %s, log of run %s", PACKAGE_VERSION, rank, log_nranks,
              log_host, run);
    pthread_mutex_unlock(&log_mu);
    return 0;
}

void cp_log_file_close(void)
{
    pthread_mutex_lock(&log_mu);
    if (log_file != NULL) {
        file_line("end of log");
        fclose(log_file);
        log_file = NULL;
        atomic_store(&log_to_file, 0);
    }
    pthread_mutex_unlock(&log_mu);
}
