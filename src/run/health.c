/*
 * collprof --healthcheck (health.h): the host memory copy, every operation of the local
 * backends on this node's ranks, each NIC's loopback, under one deadline; one line out.
 */
#include "config.h"

#include "run/health.h"

#include "base/util.h"
#include "run/health_int.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GRACE_S 2.0 /* of the budget kept for stopping a run, the line and a drain */

/* This node's ranks: --np, else the CPUs this process may use, 2 to 8. */
static int node_ranks(const cp_options_t *opt)
{
    cpu_set_t set;
    int n = 2;
    if (opt->np > 0) {
        return opt->np;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        n = CPU_COUNT(&set);
    }
    return n < 2 ? 2 : n > 8 ? 8 : n;
}

/* The user's --backends, comma-separated ("" when none was given: every one that loads). */
static void given_backends(const cp_options_t *opt, char *buf, size_t len)
{
    buf[0] = '\0';
    const cp_spec_t *s = opt->nspecs > 0 ? &opt->specs[0] : NULL;
    for (int i = 0; s != NULL && i < s->nbackends; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", used ? "," : "", s->backends[i]);
    }
}

/*
 * Every operation of the local backends at a small and a medium size: those on host memory on
 * this node's ranks, those on device memory alone (nccl) on one rank per GPU, as NCCL needs.
 */
static void check_collectives(cp_hc_t *hc)
{
    const cp_spec_t *s = hc->opt->nspecs > 0 ? &hc->opt->specs[0] : NULL;
    char host[1024], device[1024];
    cp_hc_backends(s != NULL ? (char(*)[64])s->backends : NULL, s != NULL ? s->nbackends : 0, host,
                   device, sizeof(host));
    if (host[0] == '\0' && device[0] == '\0') { /* the run says why (no plugin, a bad name) */
        given_backends(hc->opt, host, sizeof(host));
    }
    if (host[0] != '\0' || device[0] == '\0') {
        const char *args[] = {"--ops", "all", host[0] ? "--backends" : NULL, host, NULL};
        cp_hc_collective_run(hc, "collectives", args, "");
    }
    if (device[0] == '\0' || hc->status != CP_HC_OK) {
        return;
    }
    int gpus = cp_hc_gpus(), np = hc->np;
    if (gpus == 0) {
        cp_hc_note(hc, "gpus: none listed, %s not run", device);
        return;
    }
    const char *args[] = {"--ops", "all", "--backends", device, NULL};
    hc->np = gpus;
    cp_hc_collective_run(hc, "gpus", args, "");
    hc->np = np;
}

/* Each NIC's loopback: ofi's tcp provider between two of this node's ranks, through the
 * interface's own address. */
static void check_nics(cp_hc_t *hc, const char *nics)
{
    char backends[1024];
    given_backends(hc->opt, backends, sizeof(backends));
    if (nics[0] == '\0') {
        cp_hc_note(hc, "nics: %s", strcmp(hc->opt->hc_nics, "none") ? "none up" : "none asked");
        return;
    }
    if ((backends[0] != '\0' && strstr(backends, "ofi") == NULL) || !cp_hc_backend_here("ofi")) {
        cp_hc_note(hc, "nics: skipped (no ofi backend%s)", backends[0] ? " in --backends" : "");
        return;
    }
    char save[1024];
    snprintf(save, sizeof(save), "%s", nics);
    for (char *sp = NULL, *n = strtok_r(save, ",", &sp); n != NULL && hc->status == CP_HC_OK;
         n = strtok_r(NULL, ",", &sp)) {
        char check[64];
        snprintf(check, sizeof(check), "nic %s", n);
        const char *args[] = {"--ops", "sendrecv,allreduce",       "--backends", "ofi",
                              "-B",    "ofi-provider=tcp;ofi_rxm", NULL};
        int np = hc->np;
        hc->np = 2;
        cp_hc_collective_run(hc, check, args, n);
        hc->np = np;
    }
}

/* The private directory of the runs' files, emptied and removed. */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    rmdir(dir);
}

/* The one line: stdout on a pass, stderr else (LBNL NHC's form on a failure). */
static void say(const cp_hc_t *hc, const char *note)
{
    double t = cp_now_s() - hc->t0;
    if (hc->status == CP_HC_OK) {
        printf("collprof: healthcheck: ok (%d checks in %.1f s%s%s)%s\n", hc->nchecks, t,
               hc->notes[0] ? "; " : "", hc->notes, note);
    } else if (hc->status == CP_HC_FAILED) {
        fprintf(stderr, "ERROR:  collprof:  Health check failed:  %s:  %s%s\n", hc->check, hc->what,
                note);
    } else {
        fprintf(stderr, "collprof: healthcheck: inconclusive: %s: %s%s\n", hc->check, hc->what,
                note);
    }
    fflush(stdout);
    fflush(stderr);
}

int cp_health_run(const cp_options_t *opt)
{
    cp_hc_t hc = {.opt = opt, .t0 = cp_now_s()};
    char lock[4300];
    int lfd = cp_hc_lock(&hc, lock, sizeof(lock));
    if (lfd == -2) { /* the one that runs gives the verdict, and counts it */
        printf("collprof: healthcheck: skipped: a check of this node that started earlier still "
               "runs (%s)\n",
               lock);
        fflush(stdout);
        return CP_HC_OK;
    }
    hc.deadline = hc.t0 + opt->hc_time_s - GRACE_S;
    hc.np = node_ranks(opt);
    const char *tmp = getenv("TMPDIR");
    snprintf(hc.dir, sizeof(hc.dir), "%s/collprof-hc-XXXXXX",
             tmp != NULL && tmp[0] == '/' && strlen(tmp) < 200 ? tmp : "/tmp");
    ssize_t n = readlink("/proc/self/exe", hc.exe, sizeof(hc.exe) - 1);
    if (n <= 0 || mkdtemp(hc.dir) == NULL) {
        cp_hc_fail(&hc, CP_HC_INCONCLUSIVE, "setup",
                   n <= 0 ? "this program's path is unknown" : "no private directory in %s",
                   hc.dir);
        say(&hc, "");
        return CP_HC_INCONCLUSIVE;
    }
    hc.exe[n] = '\0';
    char nics[1024];
    if (cp_hc_nic_list(&hc, nics, sizeof(nics)) == 0) { /* a NIC named wrong: nothing runs */
        cp_hc_copy(&hc);
    }
    if (hc.status == CP_HC_OK) {
        check_collectives(&hc);
    }
    if (hc.status == CP_HC_OK) {
        check_nics(&hc, nics);
    }
    if (opt->verbose > 0) {
        fprintf(stderr, "collprof: healthcheck: the runs' files kept in %s\n", hc.dir);
    } else {
        remove_dir(hc.dir);
    }
    char note[600];
    cp_hc_drain(&hc, note, sizeof(note));
    say(&hc, note);
    if (lfd >= 0) {
        close(lfd);
    }
    return hc.status;
}
