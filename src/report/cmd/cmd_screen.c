/*
 * collprof-report screen FILE [--format text|slurm|drain|json] [--backend NAME]
 * [--baseline BASE.h5 [--threshold X]] [--apply] [--state FILE] [--resume] ...: the verdict
 * of a collprof --screen run (/screen), as the run printed it, as a Slurm host list to
 * exclude, as the scontrol lines that drain the flagged nodes (printed; run through scontrol
 * only with --apply, after --drain-after failing verdicts in a row, under a circuit breaker:
 * screen_drain.c), or as a versioned JSON document (screen_json.c); --resume returns the nodes
 * collprof drained.  With --baseline the run's pairs (its /links rows, by round: the random
 * rounds, then the confirmation) are judged again against a baseline file by the
 * screen's own method (src/screen/screen.h), so that an old run, or a cluster slow as a whole,
 * is judged against what the cluster should do.  Exit status 0 healthy, 1 something flagged
 * (drained or not), 2 inconclusive or misconfigured (a file that cannot be read, a drain
 * refused); --resume 0 or 2.
 */
#include "config.h"

#include "screen/links.h"
#include "screen/screen.h"
#include "base/util.h"
#include "screen/screen_out.h"
#include "report/read/reader.h"
#include "report/links_data.h"
#include "report/report.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { FMT_TEXT, FMT_SLURM, FMT_DRAIN, FMT_JSON };
static const char *const format_names[] = {"text", "slurm", "drain", "json"};

typedef struct settings {
    int format;
    const char *backend;  /* NULL: every backend */
    const char *baseline; /* NULL: the run's own verdict */
    double threshold;     /* with a baseline: slow below it (0: the run's) */
    int format_set;       /* --format given */
    int resume;           /* --resume */
    cp_report_drain_opts_t drain;
} settings_t;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: collprof-report screen FILE [--format text|slurm|drain|json] "
            "[--backend NAME]\n"
            "                              [--baseline BASE.h5 [--threshold X]]\n"
            "                              [--state FILE [--drain-after N]] [--apply]\n"
            "                              [--max-drain-share P] [--window SECONDS]\n"
            "                              [--reset-breaker] [--scontrol PATH]\n"
            "       collprof-report screen FILE --resume [--apply] [--state FILE] "
            "[--scontrol PATH]\n"
            "The verdict of a collprof --screen run: healthy, slow and unreachable nodes,\n"
            "slow links, with the pairs behind each verdict.\n"
            "  --format text   the verdict as the run printed it (default)\n"
            "  --format slurm  the nodes to exclude, as a Slurm host list (n[3,17-18]),\n"
            "                  for sbatch --exclude; empty when none\n"
            "  --format drain  one 'scontrol update nodename=... state=drain reason=\"collprof:\n"
            "                  screen: ...\"' line per flagged node of the run's allocation\n"
            "                  (printed, not run without --apply)\n"
            "  --format json   a versioned document (format collprof-screen, version %d)\n"
            "  --backend NAME  that backend's screen only (default: every backend's)\n"
            "  --baseline BASE.h5  judge the run's pairs again against a baseline file\n"
            "                  (collprof-report baseline), by the screen's method, instead of\n"
            "                  printing the run's own verdict: a cluster slow as a whole is\n"
            "                  caught, and old runs are judged by today's baseline.  The\n"
            "                  baseline must have the backend and message sizes of the run\n"
            "  --threshold X   with --baseline: a pair is slow below X times the baseline,\n"
            "                  X in (0, 1) (default: the run's --screen-threshold)\n"
            "  --state FILE    with --format drain: the failing verdicts in a row per node,\n"
            "                  the drains and the circuit breaker, kept in FILE (written\n"
            "                  with --apply only); a node's line is printed on its\n"
            "                  --drain-after'th failing verdict in a row, a healthy verdict\n"
            "                  resets it\n"
            "  --drain-after N failing verdicts in a row before a drain (default 2)\n"
            "  --apply         with --format drain and --state: also run the lines through\n"
            "                  scontrol (root or a Slurm operator), printing each node\n"
            "                  drained; a node Slurm has drained or down already is left\n"
            "                  as it is.  Without it nothing is ever run\n"
            "  --max-drain-share P  the circuit breaker: more than P (0.1: 10 %%) of the\n"
            "                  partition's nodes (at least 1) drained within --window trips\n"
            "                  it: nothing drained, exit 2, until --reset-breaker\n"
            "  --window SECONDS  the breaker's window (default 3600)\n"
            "  --reset-breaker with --apply: reset a tripped breaker first\n"
            "  --scontrol PATH scontrol's absolute path (default: the first in PATH's\n"
            "                  absolute directories; empty and relative ones are skipped)\n"
            "  --resume        print 'scontrol update nodename=... state=resume' for each\n"
            "                  node of FILE's run that Slurm has drained with a reason\n"
            "                  starting 'collprof:' (never another's drain); --apply runs\n"
            "                  them (and clears their failing verdicts in --state)\n"
            "Exit status: 0 healthy, 1 a node or link flagged (drained or not), 2\n"
            "inconclusive or misconfigured: bad usage, a file that cannot be read, a baseline\n"
            "that does not fit, a flagged node outside the run's allocation, a state file\n"
            "that is not ours, the circuit breaker, scontrol missing or refusing.  With\n"
            "--resume: 0, or 2.\n",
            CP_REPORT_SCREEN_JSON_VERSION);
}

/* An integer option in [lo, hi] into *v: 0, or -1 after the error. */
static int parse_int(const char *opt, const char *val, double lo, double hi, long long *v)
{
    double d;
    if (cp_report_parse_double("screen", opt, val, lo, hi, &d) != 0) {
        return -1;
    }
    if (d != (double)(long long)d) {
        cp_report_error("screen: %s '%s' is not a whole number", opt, val);
        return -1;
    }
    *v = (long long)d;
    return 0;
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    long long v = 0;
    switch (k) {
    case 1:
        s->format = cp_report_parse_choice("screen", "--format", val, format_names, 4,
                                           "text, slurm, drain or json");
        s->format_set = 1;
        return s->format < 0 ? -1 : 0;
    case 2: s->backend = val; return 0;
    case 3: s->baseline = val; return 0;
    case 4: return cp_report_parse_double("screen", "--threshold", val, 1e-9, 1, &s->threshold);
    case 5: s->drain.apply = 1; return 0;
    case 6: s->drain.state = val; return 0;
    case 7:
        if (parse_int("--drain-after", val, 1, 1000, &v) != 0) {
            return -1;
        }
        s->drain.drain_after = (int)v;
        return 0;
    case 8:
        return cp_report_parse_double("screen", "--max-drain-share", val, 1e-9, 1,
                                      &s->drain.max_share);
    case 9: return parse_int("--window", val, 1, 1e9, &s->drain.window);
    case 10: s->drain.reset_breaker = 1; return 0;
    case 11:
        if (val[0] != '/') {
            cp_report_error("screen: --scontrol %s: not an absolute path", val);
            return -1;
        }
        s->drain.scontrol = val;
        return 0;
    default: s->resume = 1; return 0;
    }
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    const cp_report_drain_opts_t *d = &s->drain;
    int drain_opts = d->state || d->drain_after || d->max_share > 0 || d->window ||
                     d->reset_breaker || d->scontrol;
    if (s->resume && !s->format_set) {
        s->format = FMT_DRAIN;
    }
    if (s->resume && (s->format != FMT_DRAIN || s->baseline || d->drain_after || d->max_share > 0 ||
                      d->window || d->reset_breaker)) {
        return "--resume takes --apply, --state and --scontrol only (and --format drain)";
    }
    if (d->apply && s->format != FMT_DRAIN) {
        return "--apply runs the drain lines: it needs --format drain";
    }
    if (drain_opts && s->format != FMT_DRAIN) {
        return "--state, --drain-after, --max-drain-share, --window, --reset-breaker and "
               "--scontrol are for the drain: they need --format drain";
    }
    if (d->apply && !s->resume && d->state == NULL) {
        return "--apply needs --state FILE: the failing verdicts so far and the circuit "
               "breaker's drains (the sbatch template names one)";
    }
    if (d->drain_after && d->state == NULL) {
        return "--drain-after counts failing verdicts in --state FILE: it needs --state";
    }
    if ((d->max_share > 0 || d->window || d->reset_breaker) && !d->apply) {
        return "--max-drain-share, --window and --reset-breaker are the circuit breaker of "
               "--apply: they need --apply";
    }
    if (s->threshold >= 1) {
        return "--threshold: a fraction of the baseline below 1";
    }
    if (s->threshold > 0 && s->baseline == NULL) {
        return "--threshold judges the pairs again: it needs --baseline BASE.h5";
    }
    s->drain.drain_after = d->drain_after ? d->drain_after : 2;
    s->drain.max_share = d->max_share > 0 ? d->max_share : 0.1;
    s->drain.window = d->window ? d->window : 3600;
    return NULL;
}

/* ---- the run's pairs judged again --------------------------------------------------------- */

/* The screen of rows [first, end) with options o into s (cp_screen_init'ed here), its pairs
 * from f's /links, the unreachable marked, names[node] its host; *bad the schedule check's.
 * As cp_screen_add_rows, or -3 when s could not be set up (nothing to free). */
static int load(cp_screen_t *s, const cp_screen_opts_t *o, const cp_report_file_t *f,
                const collprof_screen_row_t *rows, size_t first, size_t end, const char **names,
                int *bad)
{
    int n = 0;
    for (size_t i = first; i < end; i++) {
        int top = !strcmp(rows[i].what, "node") ? rows[i].node_a : rows[i].node_b;
        n = top + 1 > n ? top + 1 : n;
    }
    if (cp_screen_init(s, n, o) != 0) {
        return -3;
    }
    for (size_t i = first; i < end; i++) {
        if (!strcmp(rows[i].what, "node")) {
            names[rows[i].node_a] = rows[i].host_a;
            if (!strcmp(rows[i].verdict, "unreachable")) {
                cp_screen_unreachable(s, rows[i].node_a);
            }
        }
    }
    int rc =
        cp_screen_add_rows(s, f->links, f->nlinks, rows[first].backend, cp_screen_random_rounds(s));
    *bad = rc >= 0 ? cp_screen_schedule_check(s) : -1;
    return rc;
}

/*
 * Judge again backend's screen of f, its rows [first, end) of the run's verdict, against
 * the baseline: its pairs rebuilt from /links, judged, attributed and decided by the screen's
 * method, the new verdict's rows appended to *out (*nout).  0, or the exit status 2 after the
 * error.
 */
static int rejudge(const settings_t *st, const cp_report_file_t *f, const cp_report_base_t *b,
                   const collprof_screen_row_t *rows, size_t first, size_t end,
                   cp_report_rejudged_t *j, collprof_screen_row_t **out, size_t *nout)
{
    const collprof_screen_row_t *h = &rows[first];
    snprintf(j->backend, sizeof(j->backend), "%s", h->backend);
    if (cp_report_base_ref("screen", b, f, h->backend, &j->ref) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    int n = 0;
    for (size_t i = first; i < end; i++) {
        int top = !strcmp(rows[i].what, "node") ? rows[i].node_a : rows[i].node_b;
        n = top + 1 > n ? top + 1 : n;
    }
    cp_screen_opts_t o;
    cp_screen_opts_default(&o);
    o.rounds = cp_report_screen_rounds(f->root.command_line);
    o.seed = h->seed;
    o.thr = st->threshold > 0 ? st->threshold : h->threshold;
    o.has_baseline = 1;
    o.baseline = j->ref.ref;
    cp_screen_t s;
    const char **names = calloc((size_t)n + 1, sizeof(char *));
    int bad = -1, rc = names == NULL ? -1 : load(&s, &o, f, rows, first, end, names, &bad);
    if (rc >= 0 && bad >= 0 && n <= CP_SCREEN_SMALL_NODES) { /* written before the small round */
        cp_screen_free(&s);
        o.small_round = 0;
        rc = load(&s, &o, f, rows, first, end, names, &bad);
    }
    if (rc == -3) {
        free(names);
        cp_report_error("screen: out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    if (rc == -2) {
        cp_report_error("screen: %s: a /links row of backend %s names a node outside its "
                        "screen (%d nodes) or a negative round",
                        f->path, h->backend, n);
    } else if (rc < 0 || bad == -2) {
        cp_report_error("screen: out of memory");
    } else if (bad >= 0) {
        cp_report_error("screen: %s: the pairs of round %d of backend %s are not the schedule "
                        "of seed %llu on %d nodes (with --screen-rounds %d, from its command "
                        "line): its random rounds cannot be told from its confirmation",
                        f->path, bad + 1, h->backend, (unsigned long long)h->seed, n, o.rounds);
    } else {
        s.rounds_run = h->rounds > s.rounds_run ? h->rounds : s.rounds_run;
        cp_screen_judge(&s, &o.baseline);
        rc = cp_screen_replay(&s) < 0 || cp_screen_rows(&s, h->backend, names, out, nout) != 0 ? -1
                                                                                               : 0;
        if (rc != 0) {
            cp_report_error("screen: out of memory");
        }
    }
    int ok = rc == 0 && bad == -1;
    cp_screen_free(&s);
    free(names);
    return ok ? 0 : CP_REPORT_EXIT_BAD;
}

/* Each backend's screen of rows[0..n) judged again: the new rows in *out (*nout), what each
 * was judged against in *jout (one per backend); 0, or the exit status 2 after the error. */
static int rejudge_all(const settings_t *st, const cp_report_file_t *f, const cp_report_base_t *b,
                       const collprof_screen_row_t *rows, size_t n, collprof_screen_row_t **out,
                       size_t *nout, cp_report_rejudged_t **jout)
{
    cp_report_rejudged_t *j = calloc(n + 1, sizeof(*j));
    *out = NULL;
    *nout = 0;
    *jout = NULL;
    if (j == NULL) {
        cp_report_error("screen: out of memory");
        return CP_REPORT_EXIT_BAD;
    }
    for (size_t i = 0, k = 0; i < n; k++) {
        size_t e = i + 1;
        while (e < n && !strcmp(rows[e].backend, rows[i].backend)) {
            e++;
        }
        if (rejudge(st, f, b, rows, i, e, &j[k], out, nout) != 0) {
            free(*out);
            free(j);
            *out = NULL;
            *nout = 0;
            return CP_REPORT_EXIT_BAD;
        }
        i = e;
    }
    *jout = j;
    return 0;
}

/* "# re-judged against the baseline ..." of each backend of rows[0..n), on out. */
static void say_rejudged(FILE *out, const cp_report_file_t *f, const cp_report_base_t *b,
                         const collprof_screen_row_t *rows, size_t n, const cp_report_rejudged_t *j,
                         const char *prefix)
{
    for (size_t i = 0, k = 0; i < n; k++) {
        char words[1024];
        cp_report_base_words(b, j[k].backend, &j[k].ref, words, sizeof(words));
        fprintf(out,
                "%sre-judged against %s, slow below %.2fx: not the run's own verdict (the "
                "one collprof-report screen %s prints without --baseline)\n",
                prefix, words, rows[i].threshold, f->path);
        while (i < n && !strcmp(rows[i].backend, j[k].backend)) {
            i++;
        }
    }
}

/* The rows of backend (every row when NULL) into a new array; *n of them. */
static collprof_screen_row_t *pick(const cp_report_file_t *f, const char *backend, size_t *n)
{
    collprof_screen_row_t *rows = malloc(sizeof(*rows) * (f->nscreen + 1));
    *n = 0;
    for (size_t i = 0; rows != NULL && i < f->nscreen; i++) {
        if (backend == NULL || !strcmp(f->screen[i].backend, backend)) {
            rows[(*n)++] = f->screen[i];
        }
    }
    return rows;
}

/* The verdict of rows[0..n) in the format asked for; the exit status. */
static int print_verdict(const settings_t *s, const cp_report_file_t *f,
                         const collprof_screen_row_t *rows, size_t n, const cp_report_base_t *b,
                         const cp_report_rejudged_t *j)
{
    int status = cp_screen_status(rows, n);
    if (s->format == FMT_TEXT) {
        for (size_t i = 0, k = 0; i < n; k++) { /* each backend: what it was judged against */
            size_t e = i + 1;
            while (e < n && !strcmp(rows[e].backend, rows[i].backend)) {
                e++;
            }
            if (j != NULL) {
                say_rejudged(stdout, f, b, rows + i, e - i, j + k, "\n# ");
            }
            cp_screen_print(stdout, rows + i, e - i, f->links, f->nlinks);
            i = e;
        }
    } else if (s->format == FMT_SLURM) {
        char ex[65536];
        if (j != NULL) { /* standard output is the host list alone */
            say_rejudged(stderr, f, b, rows, n, j, "collprof-report: screen: ");
        }
        cp_screen_exclude_list(rows, n, NULL, ex, sizeof(ex));
        printf("%s\n", ex);
    } else if (s->format == FMT_DRAIN) {
        if (j != NULL) { /* a shell comment: the lines stay a script */
            say_rejudged(stdout, f, b, rows, n, j, "# ");
        }
        status = cp_report_drain(f, rows, n, &s->drain, status);
    } else {
        cp_report_screen_json(stdout, f, rows, n, b, j);
    }
    return status;
}

static int run(void *ctx, cp_report_file_t **files, int nfiles)
{
    const settings_t *s = ctx;
    const cp_report_file_t *f = files[0];
    cp_report_base_t base;
    (void)nfiles;
    if (s->resume) {
        return cp_report_resume(f, &s->drain);
    }
    if (s->baseline != NULL && cp_report_base_load("screen", s->baseline, &base) != 0) {
        return CP_REPORT_EXIT_BAD;
    }
    size_t n = 0, nj = 0;
    collprof_screen_row_t *rows = NULL, *again = NULL;
    cp_report_rejudged_t *j = NULL;
    int status = CP_REPORT_EXIT_BAD;
    if (f->nscreen == 0) {
        cp_report_error("screen: %s has no screen verdict (/screen): run collprof --screen "
                        "on 2 or more nodes",
                        f->path);
    } else if ((rows = pick(f, s->backend, &n)) == NULL) {
        cp_report_error("screen: out of memory");
    } else if (n == 0) {
        cp_report_error("screen: %s has no screen of backend %s", f->path, s->backend);
    } else if (s->baseline == NULL) {
        status = print_verdict(s, f, rows, n, NULL, NULL);
    } else if (rejudge_all(s, f, &base, rows, n, &again, &nj, &j) == 0) {
        status = print_verdict(s, f, again, nj, &base, j);
    }
    free(rows);
    free(again);
    free(j);
    if (s->baseline != NULL) {
        cp_report_base_free(&base);
    }
    return status;
}

int cp_report_cmd_screen(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0},          {"format", 0, 1}, {"backend", 0, 1},       {"baseline", 0, 1},
        {"threshold", 0, 1},       {"apply", 0, 0},  {"state", 0, 1},         {"drain-after", 0, 1},
        {"max-drain-share", 0, 1}, {"window", 0, 1}, {"reset-breaker", 0, 0}, {"scontrol", 0, 1},
        {"resume", 0, 0},          {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {"screen", usage, opts, option, check, CP_REPORT_FILES_ONE,
                                        run};
    settings_t s = {FMT_TEXT, NULL, NULL, 0, 0, 0, {0}};
    return cp_report_run(&cmd, &s, argc, argv);
}
