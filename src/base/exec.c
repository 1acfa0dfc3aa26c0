#include "config.h"

#include "base/exec.h"

#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX (64u << 20) /* a program's output read at most */

int cp_exec_runnable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

int cp_exec_find(const char *name, char *exe, size_t len)
{
    const char *path = getenv("PATH");
    for (const char *p = path; p != NULL && *p != '\0';) {
        const char *colon = strchr(p, ':');
        size_t dl = colon ? (size_t)(colon - p) : strlen(p);
        if (dl > 0 && p[0] == '/') { /* an empty element is the current directory: never */
            int w = snprintf(exe, len, "%.*s/%s", (int)dl, p, name);
            if (w > 0 && (size_t)w < len && cp_exec_runnable(exe)) {
                return 0;
            }
        }
        p = colon ? colon + 1 : NULL;
    }
    return -1;
}

/* Read fd to its end into a malloc'd string (at most OUT_MAX bytes kept); NULL: no memory. */
static char *read_all(int fd)
{
    size_t cap = 4096, got = 0;
    char *buf = malloc(cap);
    for (ssize_t r; buf != NULL && (r = read(fd, buf + got, cap - 1 - got)) != 0;) {
        if (r < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        got += (size_t)r;
        if (got == cap - 1 && cap < OUT_MAX) {
            char *b = realloc(buf, cap * 2);
            if (b == NULL) {
                free(buf);
                return NULL;
            }
            buf = b;
            cap *= 2;
        } else if (got == cap - 1) { /* past the cap: the rest drained, not kept */
            char sink[4096];
            while (read(fd, sink, sizeof(sink)) > 0) {
            }
            break;
        }
    }
    if (buf != NULL) {
        buf[got] = '\0';
    }
    return buf;
}

int cp_exec_capture(const char *exe, char *const argv[], char **out, char *msg, size_t len)
{
    int fd[2];
    msg[0] = '\0';
    if (out != NULL) {
        *out = NULL;
    }
    fflush(stdout);
    fflush(stderr);
    if (pipe(fd) != 0) {
        snprintf(msg, len, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(msg, len, "fork: %s", strerror(errno));
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[0]);
        close(fd[1]);
        execv(exe, argv);
        _exit(127);
    }
    close(fd[1]);
    char *text = read_all(fd[0]);
    close(fd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (text != NULL) {
        size_t nl = strcspn(text, "\n");
        char c = text[nl];
        text[nl] = '\0'; /* its first line, printable */
        cp_text_sanitize(text, msg, len);
        text[nl] = c;
    }
    if (out != NULL) {
        *out = text;
    } else {
        free(text);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
