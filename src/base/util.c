#include "config.h"

#include "base/util.h"

#include <collprof/plugin.h>

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>

extern char **environ;

int cp_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
    if (s == NULL || *s == '\0') {
        snprintf(err, errlen, "empty size");
        return -1;
    }
    if (!isdigit((unsigned char)s[0])) {
        snprintf(err, errlen,
                 "'%s' is not a positive number (use digits with an optional K/M/G suffix)", s);
        return -1;
    }
    uint64_t v = 0;
    const char *p = s;
    while (isdigit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (CP_MAX_SIZE * 1024 - d) / 10) {
            snprintf(err, errlen, "'%s' is too large", s);
            return -1;
        }
        v = v * 10 + d;
        p++;
    }
    static const char units[] = "KMGT"; /* powers of 1024 */
    const char *u = *p != '\0' ? strchr(units, toupper((unsigned char)*p)) : NULL;
    uint64_t mult = 1;
    if (u != NULL) {
        mult = UINT64_C(1) << (10 * (unsigned)(u - units + 1));
        p++;
    }
    if (mult > 1 && toupper((unsigned char)*p) == 'B') {
        p++;
    }
    if (*p != '\0') {
        snprintf(err, errlen, "'%s' has an unknown suffix '%s' (use K, M, G or T)", s, p);
        return -1;
    }
    if (v == 0) {
        snprintf(err, errlen, "'%s' is zero; sizes must be at least 1", s);
        return -1;
    }
    if (v > CP_MAX_SIZE / mult) {
        snprintf(err, errlen, "'%s' is too large (the limit is 1T)", s);
        return -1;
    }
    *out = v * mult;
    return 0;
}

int cp_read_line(FILE *f, char *line, size_t size, int *lineno)
{
    if (fgets(line, (int)size, f) == NULL) {
        return 0;
    }
    (*lineno)++;
    if (strchr(line, '\n') == NULL && !feof(f)) {
        return -1;
    }
    char *hash = strchr(line, '#');
    if (hash != NULL) {
        *hash = '\0';
    }
    return 1;
}

int cp_parse_int(const char *s, long lo, long hi, long *out)
{
    if (s == NULL || *s == '\0') {
        return -1;
    }
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p)) {
            return -1;
        }
    }
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < lo || v > hi) {
        return -1;
    }
    *out = v;
    return 0;
}

int cp_split_list(char *s, char **tok, int max)
{
    int n = 0;
    char *p = s;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma != NULL) {
            *comma = '\0';
        }
        if (*p == '\0' || n >= max) {
            return -1;
        }
        tok[n++] = p;
        if (comma == NULL) {
            break;
        }
        p = comma + 1;
    }
    return n;
}

const char *cp_fmt_thousands(uint64_t v, char *buf, size_t len)
{
    char digits[32];
    int nd = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v);
    size_t o = 0;
    for (int i = 0; i < nd && o + 1 < len; i++) {
        if (i > 0 && (nd - i) % 3 == 0 && o + 2 < len) {
            buf[o++] = ',';
        }
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

const char *cp_fmt_bytes(uint64_t v, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KB", "MB", "GB", "TB"};
    double d = (double)v;
    int u = 0;
    while (d >= 1024.0 && u < 4) {
        d /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", d, unit[u]);
    return buf;
}

const char *cp_fmt_ranges(const int *v, int n, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && o < len; i++) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1) {
            j++;
        }
        int w = j > i ? snprintf(buf + o, len - o, "%s%d-%d", o ? "," : "", v[i], v[j])
                      : snprintf(buf + o, len - o, "%s%d", o ? "," : "", v[i]);
        if (w < 0) {
            break;
        }
        o += (size_t)w;
        i = j;
    }
    return buf;
}

int cp_nofile_fit(long need, long *soft, long *hard)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        rl.rlim_cur = rl.rlim_max = RLIM_INFINITY; /* nothing known: nothing refused */
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need) {
        struct rlimit up = rl;
        up.rlim_cur =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)need ? (rlim_t)need : rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &up) == 0) {
            rl = up;
        }
    }
    if (soft != NULL) {
        *soft = rl.rlim_cur == RLIM_INFINITY ? -1 : (long)rl.rlim_cur;
    }
    if (hard != NULL) {
        *hard = rl.rlim_max == RLIM_INFINITY ? -1 : (long)rl.rlim_max;
    }
    return rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)need ? 0 : -1;
}

double cp_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

double cp_now_s(void)
{
    return cp_now_us() * 1e-6;
}

void cp_utc_compact(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm);
}

void cp_utc_iso(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int cp_utf8_seq(const unsigned char *p, size_t n, unsigned *cp)
{
    unsigned c = p[0], min;
    int more;
    if (c < 0x80) {
        *cp = c;
        return n > 0 ? 1 : 0;
    } else if ((c & 0xe0) == 0xc0) {
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
    /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
        return 0;
    }
    *cp = c;
    return more + 1;
}

int cp_bidi_control(unsigned cp)
{
    return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t cp_text_sanitize(const char *in, char *out, size_t len)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0, left = strlen(in);
    if (len == 0) {
        return 0;
    }
    while (*s != '\0') {
        unsigned cp = 0;
        int n = cp_utf8_seq(s, left, &cp);
        char esc[8] = "";
        if (n == 0 || cp < 0x20 || cp == 0x7f) {
            snprintf(esc, sizeof(esc), *s == '\n' ? "\\n" : *s == '\t' ? "\\t" : "\\x%02x", *s);
            n = 1;
        } else if (cp_bidi_control(cp)) { /* they reorder what a terminal shows */
            snprintf(esc, sizeof(esc), "\\u%04x", cp);
        }
        size_t w = esc[0] ? strlen(esc) : (size_t)n;
        if (o + w >= len) {
            break; /* cut before a whole character or escape, never inside one */
        }
        memcpy(out + o, esc[0] ? esc : (const char *)s, w);
        o += w;
        s += n;
        left -= (size_t)n;
    }
    out[o] = '\0';
    return o;
}

/* Does s contain word, in any case? */
static int has_word(const char *s, const char *word)
{
    size_t wl = strlen(word);
    for (; *s != '\0'; s++) {
        if (!strncasecmp(s, word, wl)) {
            return 1;
        }
    }
    return 0;
}

static int name_is_secret(const char *name)
{
    static const char *const words[] = {"TOKEN", "KEY",  "SECRET", "PASS",   "PWD",
                                        "CRED",  "AUTH", "JWT",    "COOKIE", "PRIVATE"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (has_word(name, words[i])) {
            return 1;
        }
    }
    return 0;
}

/* A value that is itself a credential: a JWT or a token of a well-known service. */
static int value_is_secret(const char *v)
{
    static const char *const prefixes[] = {"ghp_",   "gho_",  "ghs_",  "ghu_", "github_pat_",
                                           "glpat-", "xoxb-", "xoxp-", "AKIA", "sk-"};
    for (const char *p = v; *p != '\0'; p++) {
        if (!strncmp(p, "eyJ", 3) && strchr(p, '.') != NULL) {
            return 1; /* base64url of '{"': a JSON web token */
        }
        for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
            size_t pl = strlen(prefixes[i]);
            if ((p == v || !isalnum((unsigned char)p[-1])) && !strncmp(p, prefixes[i], pl) &&
                strspn(p + pl,
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") >= 12) {
                return 1;
            }
        }
    }
    return 0;
}

/*
 * Copy v into out[len], replacing the password of every URL
 * ("scheme://user:PASSWORD@host") and the value of every "password=",
 * "passwd=", "pwd=", "token=" or "secret=" inside it by <redacted>.
 */
static void redact_inside(const char *v, char *out, size_t len)
{
    static const char *const keys[] = {"password=", "passwd=", "pwd=", "token=", "secret="};
    size_t o = 0;
    while (*v != '\0' && o + 1 < len) {
        const char *cut = NULL; /* where a secret starts; it ends at a delimiter */
        const char *end = NULL;
        if (!strncmp(v, "://", 3)) {
            size_t host = strcspn(v + 3, "/ ");
            const char *at = memchr(v + 3, '@', host), *colon = memchr(v + 3, ':', host);
            if (at != NULL && colon != NULL && colon < at) {
                cut = colon + 1;
                end = at;
            }
        }
        for (size_t i = 0; cut == NULL && i < sizeof(keys) / sizeof(keys[0]); i++) {
            size_t kl = strlen(keys[i]);
            if (!strncasecmp(v, keys[i], kl)) {
                cut = v + kl;
                end = cut + strcspn(cut, ",; &");
            }
        }
        if (cut == NULL) {
            out[o++] = *v++;
            continue;
        }
        int n = snprintf(out + o, len - o, "%.*s<redacted>", (int)(cut - v), v);
        o = n > 0 && o + (size_t)n < len ? o + (size_t)n : len - 1;
        v = end;
    }
    out[o] = '\0';
}

const char *cp_env_captured(const char *kv, char *name, size_t len)
{
    static const char *prefixes[] = {"NCCL_",     "FI_",    "OMPI_", "UCX_",      "GLOO_",
                                     "PMIX_MCA_", "SLURM_", "CUDA_", "COLLPROF_", "GLIBC_TUNABLES",
                                     NULL};
    static __thread char value[4096];
    char redacted[4096];
    const char *eq = strchr(kv, '=');
    if (eq == NULL) {
        return NULL;
    }
    size_t nl = (size_t)(eq - kv);
    int match = 0;
    for (int i = 0; prefixes[i] && !match; i++) {
        size_t pl = strlen(prefixes[i]);
        match = nl >= pl && !strncmp(kv, prefixes[i], pl);
    }
    if (!match || nl >= len) {
        return NULL;
    }
    memcpy(name, kv, nl);
    name[nl] = '\0';
    if (name_is_secret(name) || value_is_secret(eq + 1)) {
        return "<redacted>";
    }
    redact_inside(eq + 1, redacted, sizeof(redacted));
    cp_text_sanitize(redacted, value, sizeof(value));
    return value;
}

char *cp_redact(const char *name, const char *value, char *out, size_t len)
{
    if ((name != NULL && name_is_secret(name)) || value_is_secret(value)) {
        snprintf(out, len, "<redacted>");
    } else {
        redact_inside(value, out, len);
    }
    return out;
}

void *cp_alloc_pages(size_t bytes)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, bytes ? bytes : 1) != 0) {
        return NULL;
    }
    return p;
}

void cp_free_pages(void *p, size_t bytes)
{
    (void)bytes;
    free(p);
}

/* A regular file opened for reading, never blocking on a FIFO; NULL with err. */
FILE *cp_fopen_regular(const char *path, const char *what, char *err, size_t errlen)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot read %s '%s': not a regular file", what, path);
        close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s '%s': %s", what, path, strerror(errno));
        close(fd);
    }
    return f;
}

void cp_env_reserve(void)
{
    static char spare[] = COLLPROF_ENV_SLOT "=";
    static char **reserved; /* kept: a later setenv copies environ and drops this array */
    size_t have = 0;
    if (reserved != NULL) {
        return; /* once */
    }
    while (environ[have] != NULL) {
        have++;
    }
    char **e = malloc((have + COLLPROF_ENV_SLOTS + 1) * sizeof(*e));
    if (e == NULL) {
        return; /* the plugins fall back to setenv */
    }
    memcpy(e, environ, have * sizeof(*e));
    for (int i = 0; i < COLLPROF_ENV_SLOTS; i++) {
        e[have + (size_t)i] = spare;
    }
    e[have + COLLPROF_ENV_SLOTS] = NULL;
    reserved = environ = e;
}

/* ---- the temporary file being written ------------------------------------- */

static char tmp_path[4200];
static volatile sig_atomic_t tmp_on;

void cp_tmp_set(const char *path)
{
    tmp_on = 0;
    if (path != NULL && snprintf(tmp_path, sizeof(tmp_path), "%s", path) < (int)sizeof(tmp_path)) {
        tmp_on = 1;
    }
}

void cp_tmp_unlink(void)
{
    if (tmp_on) {
        tmp_on = 0;
        unlink(tmp_path);
    }
}

/* SA_RESETHAND: the signal, blocked while this runs, kills the process on return */
static void on_stop(int sig)
{
    int e = errno;
    cp_tmp_unlink();
    raise(sig);
    errno = e;
}

void cp_tmp_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_stop;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction old;
        /* a signal ignored by the caller (nohup, a shell's background job) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
            sigaction(sigs[i], &sa, NULL);
        }
    }
}

int cp_fd_drain(int fd, double max_s)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        return -1;
    }
    unsigned long req = S_ISFIFO(st.st_mode) ? FIONREAD : SIOCOUTQ;
    double end = cp_now_s() + max_s;
    for (;;) {
        int left = 0;
        if (ioctl(fd, req, &left) != 0 || left <= 0) {
            return 0;
        }
        if (cp_now_s() >= end) {
            return 1;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
