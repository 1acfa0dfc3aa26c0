/*
 * collprof-report simulate screen [--nodes N] [--slow I:F,...] [--slow-count K --factor F]
 * [--link A-B:F] [--hung I] [--setup-fail I] [--noise P] [--baseline] [--seeds A-B]
 * [--format text|json] [--grid]: the screen's real judgement (matchings, confirmation,
 * rechecks, validation halving, baselines) run on a model cluster over many seeds
 * (src/screen/sim.h), and how often its verdict was right: one case from the options, or the
 * built-in grid of node counts, faults and noise.  Reads no file.  Exit status 0, or 2 for
 * bad usage.
 */
#include "config.h"

#include "report/report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { FMT_TEXT, FMT_JSON };
static const char *const format_names[] = {"text", "json"};

typedef struct settings {
    int what; /* the operand "screen" was given */
    int format;
    int grid;
    int nodes; /* 0: not given */
    cp_sim_fault_t *faults;
    int nfaults, cap;
    int slow_count;
    double factor; /* < 0: not given */
    double noise;
    int baseline;
    double spine;
    int lat_with_bulk;
    unsigned long long seed_lo, seed_hi;
    int seeds_given;
    char why[160]; /* check()'s message */
} settings_t;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: collprof-report simulate screen --nodes N [FAULTS] [--noise P] [--baseline]\n"
            "                                [--seeds A-B] [--format text|json]\n"
            "       collprof-report simulate screen --grid [--format text|json]\n"
            "The screen's own judgement (collprof --screen: random rounds, confirmation,\n"
            "rechecks, the validation allreduce and its halving) run on a model cluster, one\n"
            "screen per seed, and how often its verdict was right.  Reads no file.\n"
            "  --nodes N         the cluster's nodes (2 to 65536)\n"
            "  --slow I:F[,...]  node I at F times the healthy bandwidth (0 < F <= 1)\n"
            "  --slow-count K    K nodes drawn from each seed, at --factor F (default 0.5)\n"
            "  --link A-B:F      the link between nodes A and B at F; A-*:F: the link of A and\n"
            "                    its partner in a random round (one the rounds cover)\n"
            "  --hung I[,...]    node I stops answering\n"
            "  --setup-fail I[,...]  node I's pairs cannot be set up\n"
            "  --noise P         each pair's figures times uniform [1 - P, 1 + P]: 0.1 or 10%%\n"
            "                    (default 10%%)\n"
            "  --baseline        judge against a baseline of the healthy cluster's figures\n"
            "  --spine F         two leaf switches, cross-switch pairs at F (classes known)\n"
            "  --lat-with-bulk   with --spine: each pair's bandwidth test right after its own\n"
            "                    latency test, as before 2026-12-06 (a latency probe may wait\n"
            "                    behind another pair's bulk on the spine); by default every\n"
            "                    latency probe of a round runs before any bandwidth test\n"
            "  --seeds A-B       the seeds, one screen each (default 1-100)\n"
            "  --format text     one line per case (default); json: one document\n"
            "  --grid            the built-in grid: every N from 2 to 64, 128, 1024, 4096;\n"
            "                    one slow node at 0.3-0.9x and noise 5-30 %%, k slow nodes,\n"
            "                    healthy clusters, a link, a hung node, a set-up failure,\n"
            "                    baselines on 2 to 5 nodes, a spine at 0.5x from 8 nodes\n"
            "Per case: runs, exact (every bad node and link named as it should be, nothing\n"
            "else, the right exit status), missed, false_positive, inconclusive (exit 2),\n"
            "untested (nodes), the rounds (mean, max) and the exit statuses.\n"
            "Exit status: 0, or 2 for bad usage.\n");
}

/* A new fault at the end of s's, or NULL after the error. */
static cp_sim_fault_t *grow(settings_t *s)
{
    if (s->nfaults == s->cap) {
        int cap = s->cap ? 2 * s->cap : 8;
        cp_sim_fault_t *v = realloc(s->faults, sizeof(*v) * (size_t)cap);
        if (v == NULL) {
            cp_report_error("simulate: out of memory");
            return NULL;
        }
        s->faults = v;
        s->cap = cap;
    }
    cp_sim_fault_t *f = &s->faults[s->nfaults++];
    memset(f, 0, sizeof(*f));
    f->b = -1;
    f->f = 1.0;
    return f;
}

/* A whole non-negative integer of s (up to hi) ending at *end's stop characters; -1 if not. */
static long number(const char *s, char **end, long hi)
{
    errno = 0;
    if (*s < '0' || *s > '9') {
        return -1;
    }
    long v = strtol(s, end, 10);
    return errno != 0 || v > hi ? -1 : v;
}

/* A whole number from lo to 65536 (the whole of val) for option opt; -1 after the error. */
static int whole(const char *opt, const char *val, int lo)
{
    char *end = (char *)val;
    long v = number(val, &end, 65536);
    if (v < lo || *end != '\0') {
        cp_report_error("simulate: %s '%s' is not a number from %d to 65536", opt, val, lo);
        return -1;
    }
    return (int)v;
}

/* A factor in (0, 1] from s (the whole of it); -1 when not. */
static double factor_of(const char *s)
{
    char *end;
    errno = 0;
    double f = strtod(s, &end);
    return end == s || *end != '\0' || errno != 0 || !(f > 0 && f <= 1) ? -1 : f;
}

/* One item of a list option: "I:F" (slow), "A-B:F" or "A-*:F" (link), "I" (hung, set-up). */
static int item(settings_t *s, int kind, char *it)
{
    char *end = it, *colon = strchr(it, ':');
    cp_sim_fault_t *f = grow(s);
    if (f == NULL) {
        return -2;
    }
    f->kind = kind;
    f->a = (int)number(it, &end, 65535);
    if (f->a < 0) {
        return -1;
    }
    if (kind == CP_SIM_LINK && *end == '-' && !strncmp(end + 1, "*:", 2)) {
        f->kind = CP_SIM_LINK_PAIRED;
        end += 2;
    } else if (kind == CP_SIM_LINK) {
        f->b = *end == '-' ? (int)number(end + 1, &end, 65535) : -1;
        if (f->b < 0 || f->b == f->a) {
            return -1;
        }
    }
    if (kind == CP_SIM_HUNG || kind == CP_SIM_NOSETUP) {
        return *end == '\0' ? 0 : -1;
    }
    if (end != colon || colon == NULL) {
        return -1;
    }
    f->f = factor_of(colon + 1);
    return f->f > 0 ? 0 : -1;
}

/* A comma-separated list of option opt's items; 0, or -1 after the error. */
static int list(settings_t *s, int kind, const char *opt, const char *val, const char *form)
{
    char buf[4096];
    snprintf(buf, sizeof(buf), "%s", val);
    for (char *save = NULL, *it = strtok_r(buf, ",", &save); it != NULL;
         it = strtok_r(NULL, ",", &save)) {
        int rc = item(s, kind, it);
        if (rc == -1) {
            cp_report_error("simulate: %s '%s' is not %s", opt, it, form);
        }
        if (rc != 0) {
            return -1;
        }
    }
    if (strlen(val) >= sizeof(buf) || val[0] == '\0') {
        cp_report_error("simulate: %s '%.40s': not %s", opt, val, form);
        return -1;
    }
    return 0;
}

/* --noise P: a fraction, or a percentage with '%'. */
static int noise_of(settings_t *s, const char *val)
{
    char buf[64];
    size_t len = strlen(val);
    int pct = len > 0 && len < sizeof(buf) && val[len - 1] == '%';
    snprintf(buf, sizeof(buf), "%.*s", (int)(pct ? len - 1 : len), val);
    double hi = pct ? 90 : 0.9;
    if (len >= sizeof(buf) ||
        cp_report_parse_double("simulate", "--noise", buf, 0, hi, &s->noise) != 0) {
        if (len >= sizeof(buf)) {
            cp_report_error("simulate: --noise: not a number from 0 to 0.9 (or 0%% to 90%%)");
        }
        return -1;
    }
    s->noise /= pct ? 100 : 1;
    return 0;
}

/* --seeds A-B (or A). */
static int seeds_of(settings_t *s, const char *val)
{
    char *end = (char *)val;
    long a = number(val, &end, 1000000000L), b = a;
    if (a >= 0 && *end == '-') {
        b = number(end + 1, &end, 1000000000L);
    }
    if (a < 1 || b < a || *end != '\0' || b - a >= 1000000) {
        cp_report_error("simulate: --seeds '%s' is not A-B with 1 <= A <= B and at most "
                        "1000000 seeds",
                        val);
        return -1;
    }
    s->seed_lo = (unsigned long long)a;
    s->seed_hi = (unsigned long long)b;
    s->seeds_given = 1;
    return 0;
}

static int option(void *ctx, int k, char *val)
{
    settings_t *s = ctx;
    double d;
    switch (k) {
    case CP_REPORT_OPERAND:
        if (strcmp(val, "screen") != 0) {
            cp_report_error("simulate: '%s' is not what it simulates (screen)", val);
            return -1;
        }
        s->what = 1;
        return 0;
    case 1: return (s->nodes = whole("--nodes", val, 2)) < 0 ? -1 : 0;
    case 2: return list(s, CP_SIM_SLOW, "--slow", val, "I:F (node I at factor F, 0 < F <= 1)");
    case 3: return (s->slow_count = whole("--slow-count", val, 0)) < 0 ? -1 : 0;
    case 4:
        if (cp_report_parse_double("simulate", "--factor", val, 1e-6, 1, &d) != 0) {
            return -1;
        }
        s->factor = d;
        return 0;
    case 5: return list(s, CP_SIM_LINK, "--link", val, "A-B:F or A-*:F (0 < F <= 1)");
    case 6: return list(s, CP_SIM_HUNG, "--hung", val, "a node number");
    case 7: return list(s, CP_SIM_NOSETUP, "--setup-fail", val, "a node number");
    case 8: return noise_of(s, val);
    case 9: s->baseline = 1; return 0;
    case 10: return seeds_of(s, val);
    case 11:
        s->format =
            cp_report_parse_choice("simulate", "--format", val, format_names, 2, "text or json");
        return s->format < 0 ? -1 : 0;
    case 12: s->grid = 1; return 0;
    case 14: s->lat_with_bulk = 1; return 0;
    default: return cp_report_parse_double("simulate", "--spine", val, 1e-6, 1, &s->spine);
    }
}

/* The first fault of s that names a node outside the cluster, in s->why; NULL when none. */
static const char *outside(settings_t *s)
{
    int links = 0;
    for (int i = 0; i < s->nfaults; i++) {
        const cp_sim_fault_t *f = &s->faults[i];
        links += f->kind == CP_SIM_LINK || f->kind == CP_SIM_LINK_PAIRED;
        if (f->a >= s->nodes || f->b >= s->nodes) {
            snprintf(s->why, sizeof(s->why), "node %d is not one of the %d nodes (0 to %d)",
                     f->a >= s->nodes ? f->a : f->b, s->nodes, s->nodes - 1);
            return s->why;
        }
    }
    if (links > CP_SIM_MAX_LINKS) {
        snprintf(s->why, sizeof(s->why), "%d links: at most %d", links, CP_SIM_MAX_LINKS);
        return s->why;
    }
    return NULL;
}

static const char *check(void *ctx)
{
    settings_t *s = ctx;
    if (!s->what) {
        return "what to simulate: screen";
    }
    if (s->grid) {
        int other = s->nodes || s->nfaults || s->slow_count || s->factor >= 0 || s->noise >= 0 ||
                    s->baseline || s->spine > 0 || s->seeds_given || s->lat_with_bulk;
        return other ? "--grid runs its own cases: only --format goes with it" : NULL;
    }
    if (s->nodes == 0) {
        return "--nodes N is required (or --grid)";
    }
    if (s->lat_with_bulk && s->spine <= 0) {
        return "--lat-with-bulk is about pairs that share a spine: it needs --spine F";
    }
    if (s->slow_count > s->nodes) {
        return "--slow-count: more nodes than the cluster has";
    }
    if (s->factor >= 0 && s->slow_count == 0) {
        return "--factor is the factor of --slow-count K's nodes: it needs --slow-count";
    }
    return outside(s);
}

static int run(void *ctx, cp_report_file_t **files, int nfiles)
{
    settings_t *s = ctx;
    cp_report_sim_t *cases = NULL;
    size_t n = 0;
    double secs = 0;
    (void)files, (void)nfiles;
    if (s->grid) {
        if (cp_report_sim_grid(&cases, &n) != 0) {
            return CP_REPORT_EXIT_BAD;
        }
    } else if ((cases = calloc(1, sizeof(*cases))) == NULL) {
        cp_report_error("simulate: out of memory");
        return CP_REPORT_EXIT_BAD;
    } else {
        n = 1;
        cp_sim_case_t *k = &cases[0].k;
        k->n = s->nodes;
        k->faults = s->faults; /* the case owns them now */
        k->nfaults = s->nfaults;
        s->faults = NULL;
        k->slow_count = s->slow_count;
        k->factor = s->factor >= 0 ? s->factor : 0.5;
        k->noise = s->noise >= 0 ? s->noise : 0.10;
        k->baseline = s->baseline;
        k->spine = s->spine;
        k->lat_with_bulk = s->lat_with_bulk;
        k->validate = 1;
        k->seed_lo = s->seeds_given ? s->seed_lo : 1;
        k->seed_hi = s->seeds_given ? s->seed_hi : 100;
    }
    int rc = cp_report_sim_run(cases, n, &secs);
    if (rc == 0 && s->format == FMT_JSON) {
        cp_report_sim_json(stdout, cases, n);
    } else if (rc == 0) {
        cp_report_sim_text(stdout, cases, n, secs);
    }
    cp_report_sim_free(cases, n);
    return rc;
}

int cp_report_cmd_simulate(int argc, char **argv)
{
    static const cp_report_opt_t opts[] = {
        {"help", 'h', 0}, {"nodes", 0, 1},    {"slow", 0, 1},          {"slow-count", 0, 1},
        {"factor", 0, 1}, {"link", 0, 1},     {"hung", 0, 1},          {"setup-fail", 0, 1},
        {"noise", 0, 1},  {"baseline", 0, 0}, {"seeds", 0, 1},         {"format", 0, 1},
        {"grid", 0, 0},   {"spine", 0, 1},    {"lat-with-bulk", 0, 0}, {NULL, 0, 0}};
    static const cp_report_cmd_t cmd = {
        "simulate", usage, opts, option, check, CP_REPORT_FILES_SOURCE, run};
    settings_t s = {.format = FMT_TEXT, .factor = -1, .noise = -1};
    int rc = cp_report_run(&cmd, &s, argc, argv);
    free(s.faults);
    return rc;
}
