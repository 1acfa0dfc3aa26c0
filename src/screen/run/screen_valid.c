#include "config.h"

#include "screen/run/screen_valid.h"

#include "collprof/status.h"
#include "runner/agree.h"
#include "screen/hostlist.h"
#include "base/log.h"
#include "base/util.h"
#include "runner/split.h"
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cp_screen_valid_free(cp_screen_valid_t *v)
{
    cp_halve_free(&v->h);
    free(v->node_ev);
    memset(v, 0, sizeof(*v));
}

/* ---- the level's group: one per rank at a time ----------------------------------------- */

static cp_oob_group_t vgroup;

static int v_allgather(const void *in, void *out, size_t len)
{
    return cp_oob_group_allgather(&vgroup, in, out, len);
}
static int v_bcast(void *buf, size_t len, int root)
{
    return cp_oob_group_bcast(&vgroup, buf, len, root);
}
static int v_alltoall(const void *in, void *out, size_t len)
{
    return cp_oob_group_alltoall(&vgroup, in, out, len);
}
static int v_barrier(void)
{
    return cp_oob_group_barrier(&vgroup);
}

/* This rank's group of a level: the ranks of the nodes of its node's group (group_of[node]),
 * ascending, or itself alone when its node sits the level out.  *n members, *me its place. */
static int *members_of(const cp_boot_t *b, const int *group_of, int *n, int *me)
{
    int *ranks = malloc(sizeof(int) * (size_t)b->nranks);
    int mine = group_of[b->node_id];
    *n = *me = 0;
    for (int q = 0; ranks != NULL && q < b->nranks; q++) {
        if (q == b->rank || (mine >= 0 && group_of[b->node_ids[q]] == mine)) {
            *me = q == b->rank ? *n : *me;
            ranks[(*n)++] = q;
        }
    }
    return ranks;
}

double cp_screen_valid_busbw(double bytes, int m, double slowest_p50_us)
{
    return m > 1 && slowest_p50_us > 0 ? bytes / slowest_p50_us * 1e-3 * 2.0 * (m - 1) / m : 0;
}

/* Rank 0: group k's figures from the level's result: busbw from its slowest member's median
 * (cp_screen_valid_busbw); its wrong elements; failed when the cell's first failing rank is
 * in it (the runner names that rank alone). */
static void group_figures(const cp_boot_t *b, const int *group_of, int k, const cp_result_t *res,
                          uint64_t bytes, int bad, double *busbw, uint64_t *wrong, int *failed)
{
    int iters = res->iters, m = 0;
    double *t = calloc((size_t)(iters > 0 ? iters : 1), sizeof(double)), slowest = 0;
    *wrong = 0;
    *failed = t == NULL;
    int rows = res->samples != NULL && res->srows == b->nranks && iters > 0;
    for (int q = 0; t != NULL && q < b->nranks; q++) {
        if (group_of[b->node_ids[q]] != k) {
            continue;
        }
        m++;
        *failed |= q == bad;
        *wrong += res->rank_wrong != NULL ? res->rank_wrong[q] : 0;
        if (rows) { /* this member's median, as each end of a pair takes its own (p50) */
            memcpy(t, res->samples + (size_t)q * (size_t)iters, sizeof(double) * (size_t)iters);
            cp_stats_t st;
            cp_stats_compute(t, iters, &st);
            slowest = st.p50 > slowest ? st.p50 : slowest;
        }
    }
    *busbw = *failed ? 0 : cp_screen_valid_busbw((double)bytes, m, slowest);
    free(t);
}

cp_cell_t cp_screen_valid_cell(const cp_cell_t *bw, int n, int me)
{
    cp_cell_t c = *bw;
    uint64_t bytes = bw->count * collprof_dtype_size(bw->dtype);
    c.op = COLLPROF_OP_ALLREDUCE;
    c.dtype = COLLPROF_DTYPE_FLOAT32;
    c.redop = COLLPROF_REDOP_SUM;
    c.root = 0;
    c.in_place = 0;
    c.requested = bytes / 4 > 0 ? bytes / 4 : 1;
    c.count = cp_coll_effective_count(COLLPROF_OP_ALLREDUCE, c.requested, n);
    c.imb = NULL;
    c.sweep = 0;
    c.peer = 0;
    c.split = CP_SPLIT_CROSS; /* a group's cell: the context is the runner's (r->ctx) */
    c.group_n = n;
    c.group_rank = me;
    snprintf(c.variant, sizeof(c.variant), "default");
    c.pre_status = COLLPROF_CELL_PENDING;
    c.pre_reason[0] = '\0';
    return c;
}

/* The group's backend context on host (a copy of the runner's, over the level's group
 * channel vgroup); NULL with the reason in why when it could not start. */
static void *level_context(cp_runner_t *r, cp_plugin_t *p, collprof_host_t *host, int n, int me,
                           int level, char *why, size_t wl)
{
    const cp_boot_t *b = r->boot;
    int rc = cp_oob_group_open(&vgroup, b);
    *host = *r->host;
    host->rank = me;
    host->nranks = n;
    host->world_ranks = vgroup.ranks;
    host->world_nranks = b->nranks;
    host->oob_allgather = v_allgather;
    host->oob_bcast = v_bcast;
    host->oob_barrier = v_barrier;
    host->oob_alltoall = v_alltoall;
    void *ctx = NULL;
    char mine_why[480] = "";
    if (rc == COLLPROF_OK) {
        cp_log(CP_LOG_INFO, "screen validation level %d: backend %s on a group of %d ranks", level,
               p->name, n);
        rc = p->be->init(host, &ctx);
        if (rc != COLLPROF_OK) {
            snprintf(mine_why, sizeof(mine_why), "%s: %s", collprof_status_string(rc),
                     p->be->last_error(NULL));
        }
    } else {
        snprintf(mine_why, sizeof(mine_why), "its control channel failed");
    }
    cp_agreement_t ag;
    if (cp_agree(b->nranks, rc, mine_why, &ag) != CP_AGREE_OK) {
        snprintf(why, wl, "level %d: the groups could not start: rank %d: %.200s", level, ag.rank,
                 ag.msg);
        if (rc == COLLPROF_OK) {
            p->be->finalize(ctx);
        }
        cp_oob_group_close(&vgroup);
        return NULL;
    }
    return ctx;
}

/* What the level's allreduce gave, into h (rank 0): 0, or -1 with why when it says nothing
 * about the groups (it timed out, or failed in a way not pinned on a rank of a group). */
static int level_figures(const cp_boot_t *b, const cp_cell_t *c, cp_result_t *res,
                         const int *group_of, int level, int groups, cp_halve_t *h, char *why,
                         size_t wl)
{
    if (res->fig.status != COLLPROF_CELL_OK && res->fig.status != COLLPROF_CELL_WRONG &&
        res->fig.status != COLLPROF_CELL_ERROR) {
        snprintf(why, wl, "level %d: the allreduce %s: %.200s", level,
                 collprof_cell_status_name(res->fig.status), res->fig.reason);
        return -1;
    }
    int bad = -1;
    if (res->fig.status == COLLPROF_CELL_ERROR &&
        (sscanf(res->fig.reason, "rank %d", &bad) != 1 || bad < 0 || bad >= b->nranks ||
         group_of[b->node_ids[bad]] < 0)) {
        /* an error the runner does not pin on a rank of a group: nothing to halve */
        snprintf(why, wl, "level %d: the allreduce failed: %.200s", level, res->fig.reason);
        return -1;
    }
    for (int k = 0; b->rank == 0 && k < groups; k++) {
        double busbw;
        uint64_t wrong;
        int failed;
        group_figures(b, group_of, k, res, c->count * 4, bad, &busbw, &wrong, &failed);
        cp_halve_set(h, k, failed, wrong, busbw);
    }
    return 0;
}

/* Collective: one level, every rank on its group (group_of: the level's grouping of the
 * nodes); rank 0 sets the groups' figures in h.  0, or -1 with why (the level could not
 * run: the same on every rank). */
static int run_level(cp_runner_t *r, const cp_cell_t *bw, const int *group_of, int level,
                     int groups, cp_halve_t *h, char *why, size_t wl)
{
    const cp_boot_t *b = r->boot;
    cp_plugin_t *p = &r->plugins[bw->plugin];
    int n = 0, me = 0;
    int *ranks = members_of(b, group_of, &n, &me);
    cp_agreement_t ag;
    if (cp_agree(b->nranks, ranks == NULL ? COLLPROF_ERR_NO_MEMORY : COLLPROF_OK, "out of memory",
                 &ag) != CP_AGREE_OK) {
        snprintf(why, wl, "level %d: rank %d: %.200s", level, ag.rank, ag.msg);
        free(ranks);
        return -1;
    }
    vgroup = (cp_oob_group_t){.ranks = ranks, .n = n, .me = me};
    int mine = group_of[b->node_id];
    if (mine >= 0) {
        snprintf(vgroup.tag, sizeof(vgroup.tag), "valid%d.%d", level, mine);
    } else {
        snprintf(vgroup.tag, sizeof(vgroup.tag), "valid%d.r%d", level, b->rank);
    }
    collprof_host_t host;
    void *ctx = level_context(r, p, &host, n, me, level, why, wl);
    if (ctx == NULL) {
        free(ranks);
        return -1;
    }
    cp_cell_t c = cp_screen_valid_cell(bw, n, me);
    cp_result_t res;
    r->ctx = ctx;
    cp_run_cell(r, &c, &res);
    r->ctx = NULL;
    p->be->finalize(ctx);
    cp_oob_group_close(&vgroup);
    free(ranks);
    int ret = level_figures(b, &c, &res, group_of, level, groups, h, why, wl);
    cp_result_free(&res);
    return ret;
}

/* ---- the levels -------------------------------------------------------------------------- */

/* Rank 0: the survivors (healthy nodes with a leader, not an end of a slow link) into in[]. */
static void survivors(cp_screen_t *s, const int *lead, unsigned char *in)
{
    cp_screen_judge_opt(s);
    cp_screen_decide(s);
    for (int i = 0; i < s->n; i++) {
        in[i] = s->verdict[i] == CP_SCREEN_HEALTHY && lead[i] >= 0;
    }
    for (int l = 0; l < s->nlinks; l++) {
        if (s->link_verdict[l] == CP_SCREEN_SLOW) {
            in[s->link_a[l]] = in[s->link_b[l]] = 0;
        }
    }
}

/* Rank 0: the host names of the nodes ([n], borrowed from the boot tables). */
static const char **node_names(const cp_boot_t *b, const int *lead, int n)
{
    const char **names = calloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; names != NULL && i < n; i++) {
        names[i] = lead[i] >= 0 ? cp_boot_host(b, lead[i]) : "";
    }
    return names;
}

/* Rank 0: the level just run, one line on progress. */
static void print_level(FILE *f, const cp_halve_t *h, size_t lfirst, size_t lend,
                        const char *const *names, double secs)
{
    if (f == NULL) {
        return;
    }
    fprintf(f, "# screen validation, level %d: allreduce", h->g[lfirst].level);
    for (size_t k = lfirst; k < lend; k++) {
        const cp_halve_group_t *g = &h->g[k];
        char who[128] = "";
        unsigned char *pick = calloc((size_t)h->n, 1);
        for (int j = 0; pick != NULL && j < g->count; j++) {
            pick[cp_halve_nodes(h, k)[j]] = 1;
        }
        if (pick != NULL && names != NULL) {
            cp_hostlist(names, pick, h->n, who, sizeof(who));
        }
        free(pick);
        fprintf(f, "%s %s %.3g GB/s%s%s", k == lfirst ? "" : " |", who, g->busbw,
                g->wrong > 0 ? " wrong"
                : g->failed  ? " failed"
                             : "",
                g->verdict == CP_HALVE_FAIL ? " (fails)" : "");
    }
    fprintf(f, " (%.1f s)\n", secs);
    fflush(f);
}

/* The validation; by == NULL: collective over the job (every rank, the groupings broadcast,
 * run_level); else on rank 0 alone, each level run by by->level (the screen's pairs). */
/* Why the validation cannot run (into v->why), or NULL when it can: the same on every rank. */
static const char *cannot_run(const cp_runner_t *r, const cp_cell_t *bw, cp_screen_valid_t *v)
{
    const cp_plugin_t *p = &r->plugins[bw->plugin];
    if (!r->opt->screen_validate) {
        snprintf(v->why, sizeof(v->why), "off (--screen-validate off)");
    } else if (!(p->be->flags & COLLPROF_BACKEND_GROUPS) || r->host == NULL) {
        snprintf(v->why, sizeof(v->why), "backend %s cannot run on a group of ranks", p->name);
    } else if (!(p->caps.ops & COLLPROF_BIT(COLLPROF_OP_ALLREDUCE)) ||
               !(p->caps.dtypes & COLLPROF_BIT(COLLPROF_DTYPE_FLOAT32))) {
        snprintf(v->why, sizeof(v->why), "backend %s has no float32 allreduce", p->name);
    } else {
        return NULL;
    }
    return v->why;
}

/* Rank 0: the halving over the survivors of s, and the node names (*names); the survivors'
 * count, or -1 when out of memory. */
static int setup0(const cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                  cp_screen_valid_t *v, const char ***names)
{
    int n = s->n, m;
    unsigned char *in = calloc((size_t)(n > 0 ? n : 1), 1);
    cp_halve_opts_t o;
    cp_halve_opts_default(&o);
    o.ref_bw_gbs = s->ref.bw_gbs;
    o.ref_lat_us = s->ref.lat_us;
    o.bytes = (double)(bw->count * collprof_dtype_size(bw->dtype));
    o.abs_thr = s->opt.thr / 2; /* the collective's own costs: half the pairs' threshold */
    o.rel_thr = s->opt.thr;
    *names = node_names(r->boot, lead, n);
    if (in != NULL) {
        survivors(s, lead, in);
    }
    m = in == NULL || *names == NULL ? -1 : cp_halve_init(&v->h, n, in, &o);
    v->node_ev = m >= 0 ? calloc((size_t)(n > 0 ? n : 1), sizeof(*v->node_ev)) : NULL;
    m = v->node_ev == NULL ? -1 : m;
    free(in);
    return m;
}

/* Rank 0: the words of the validation's outcome, of each culprit node and each named link. */
static void evidence0(cp_screen_valid_t *v, int n, const char *const *names)
{
    cp_halve_evidence(&v->h, -1, names, v->summary, sizeof(v->summary));
    for (int i = 0; i < n; i++) {
        if (v->h.culprit[i]) {
            cp_halve_evidence(&v->h, i, names, v->node_ev[i], sizeof(v->node_ev[i]));
        }
    }
    for (int l = 0; l < v->h.nlinks; l++) {
        cp_halve_link_evidence(&v->h, l, names, v->link_ev[l], sizeof(v->link_ev[l]));
    }
}

/* Rank 0, a level judged: each cap of the halving that this level hit, logged once with what
 * it dropped (logged: the caps already logged, bits): the time budget (stop), the level
 * bound (max_levels), the failing groups followed per level (max_fail), the links named (8). */
static void caps_hit(cp_screen_valid_t *v, size_t lfirst, size_t lend, int stop, int *logged)
{
    const cp_halve_t *h = &v->h;
    int nf = 0;
    for (size_t k = lfirst; k < lend; k++) {
        nf += h->g[k].verdict == CP_HALVE_FAIL && !h->g[k].witness;
    }
    if (stop && !(*logged & 1)) {
        cp_log(CP_LOG_WARN, "screen validation: %s; what still fails is left unexplained", v->why);
        *logged |= 1;
    }
    int bound = h->g[lfirst].level + 1 >= h->opt.max_levels;
    if (!stop && bound && nf > 0 && !(*logged & 8)) {
        cp_log(CP_LOG_WARN,
               "screen validation: the level bound (%d levels) is reached: %d failing group%s "
               "left unexplained",
               h->opt.max_levels, nf, nf == 1 ? "" : "s");
        *logged |= 8;
    }
    if (!stop && !bound && nf > h->opt.max_fail && !(*logged & 2)) {
        cp_log(CP_LOG_WARN,
               "screen validation: level %d has %d failing groups, the halving follows %d a "
               "level: %d left unexplained",
               h->g[lfirst].level, nf, h->opt.max_fail, nf - h->opt.max_fail);
        *logged |= 2;
    }
    if (h->nlinks >= (int)(sizeof(h->link_a) / sizeof(h->link_a[0])) && !(*logged & 4)) {
        cp_log(CP_LOG_WARN,
               "screen validation: %d links named, the most the halving keeps; any "
               "further link is left unexplained",
               h->nlinks);
        *logged |= 4;
    }
}

/* Rank 0: the level just run (lfirst .. lend) judged and the next planned: failed (it could
 * not run: v->why says why), or stopped after spent s (the time budget; 0: not spent).  0,
 * or -1 when out of memory. */
static int judge0(cp_screen_valid_t *v, int failed, double spent, size_t lfirst, size_t lend,
                  int *logged)
{
    if (spent > 0) {
        snprintf(v->why, sizeof(v->why), "stopped after %.0f s (the budget: 60 s + 10 x level 0's)",
                 spent);
    }
    if (failed) {
        cp_log(CP_LOG_WARN, "screen validation: %s", v->why);
        cp_halve_abort(&v->h);
        return 0;
    }
    if (cp_halve_next(&v->h, spent > 0) < 0) {
        cp_halve_abort(&v->h);
        return -1;
    }
    caps_hit(v, lfirst, lend, spent > 0, logged);
    return 0;
}

static int validate(cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                    cp_screen_valid_t *v, FILE *progress, const cp_valid_by_t *by)
{
    const cp_boot_t *b = r->boot;
    memset(v, 0, sizeof(*v));
    if (cannot_run(r, bw, v) != NULL) {
        return 0;
    }
    double t0 = cp_now_s(), budget = 0;
    int n = s->n, m = 0;
    int *group_of = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    const char **names = NULL;
    if (b->rank == 0) {
        m = setup0(r, bw, s, lead, v, &names);
    }
    if ((by == NULL && cp_oob_bcast(&m, sizeof(m), 0) != 0) || group_of == NULL) {
        m = -1;
    }
    if (m < 2) {
        snprintf(v->why, sizeof(v->why), "%s",
                 m < 0 ? "out of memory" : "fewer than 2 healthy nodes");
        free(group_of);
        free(names);
        return m < 0 ? -1 : 0;
    }
    v->ran = 1;
    int level = 0, ret = 0, logged = 0;
    for (;;) {
        int groups = b->rank == 0 ? cp_halve_level(&v->h, group_of) : 0;
        size_t lfirst = b->rank == 0 ? v->h.lfirst : 0, lend = b->rank == 0 ? v->h.lend : 0;
        if (by == NULL &&
            (cp_oob_bcast(&groups, sizeof(groups), 0) != 0 ||
             (groups > 0 && cp_oob_bcast(group_of, sizeof(int) * (size_t)n, 0) != 0))) {
            ret = -1;
            break;
        }
        if (groups <= 0) {
            break;
        }
        double tl = cp_now_s();
        char why[256] = "";
        int failed =
            (by != NULL ? by->level(by->arg, group_of, level, groups, &v->h, why, sizeof(why))
                        : run_level(r, bw, group_of, level, groups, &v->h, why, sizeof(why))) != 0;
        if (failed) { /* the same on every rank: this level is not judged */
            snprintf(v->why, sizeof(v->why), "%s", why);
            v->ran = level > 0;
        }
        if (b->rank == 0) {
            budget = level == 0 ? 60 + 10 * (cp_now_s() - tl) : budget;
            int stop = !failed && cp_now_s() - t0 > budget;
            ret = judge0(v, failed, stop ? cp_now_s() - t0 : 0, lfirst, lend, &logged) != 0 ? -1
                                                                                            : ret;
            if (!failed) {
                print_level(progress, &v->h, lfirst, lend, names, cp_now_s() - tl);
            }
        }
        level++;
    }
    v->secs = cp_now_s() - t0;
    if (b->rank == 0 && ret == 0) {
        evidence0(v, n, names);
    }
    free(group_of);
    free(names);
    int worst = ret;
    if (by == NULL && cp_oob_bcast(&worst, sizeof(worst), 0) != 0) {
        worst = -1;
    }
    return worst;
}

int cp_screen_validate(cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                       cp_screen_valid_t *v, FILE *progress)
{
    return validate(r, bw, s, lead, v, progress, NULL);
}

int cp_screen_validate_by(cp_runner_t *r, const cp_cell_t *bw, cp_screen_t *s, const int *lead,
                          cp_screen_valid_t *v, FILE *progress, const cp_valid_by_t *by)
{
    return validate(r, bw, s, lead, v, progress, by);
}

/* ---- the rows ---------------------------------------------------------------------------- */

/* A new zeroed row at the end of out's rows, or NULL. */
static collprof_screen_row_t *grow(cp_screen_out_t *out)
{
    collprof_screen_row_t *g = realloc(out->rows, (out->nrows + 1) * sizeof(*g));
    if (g == NULL) {
        return NULL;
    }
    out->rows = g;
    memset(&g[out->nrows], 0, sizeof(g[0]));
    return &g[out->nrows++];
}

int cp_screen_valid_rows(const cp_screen_valid_t *v, const int *lead, const cp_boot_t *b,
                         cp_screen_out_t *out, size_t first)
{
    const cp_halve_t *h = &v->h;
    int levels = v->ran ? h->levels : 0;
    if (first >= out->nrows) {
        return 0; /* no verdict rows to amend */
    }
    for (size_t i = first; i < out->nrows; i++) {
        collprof_screen_row_t *r = &out->rows[i];
        r->rounds += levels;
        int node = r->node_a;
        if (v->ran && !strcmp(r->what, "node") && node >= 0 && node < h->n && h->culprit[node]) {
            snprintf(r->verdict, sizeof(r->verdict), "%s", cp_screen_verdict_name(CP_SCREEN_SLOW));
            size_t at = strlen(r->evidence);
            snprintf(r->evidence + at, sizeof(r->evidence) - at, "%svalidation: %s", at ? "; " : "",
                     v->node_ev[node]);
        }
    }
    collprof_screen_row_t proto = out->rows[first]; /* the rows' common fields */
    for (int l = 0; v->ran && l < h->nlinks; l++) {
        collprof_screen_row_t *r = grow(out);
        if (r == NULL) {
            return -1;
        }
        *r = proto;
        int a = h->link_a[l], c = h->link_b[l];
        snprintf(r->what, sizeof(r->what), "link");
        r->node_a = a;
        r->node_b = c;
        snprintf(r->host_a, sizeof(r->host_a), "%s", lead[a] >= 0 ? cp_boot_host(b, lead[a]) : "");
        snprintf(r->host_b, sizeof(r->host_b), "%s", lead[c] >= 0 ? cp_boot_host(b, lead[c]) : "");
        snprintf(r->verdict, sizeof(r->verdict), "%s", cp_screen_verdict_name(CP_SCREEN_SLOW));
        r->score = 0;
        r->suspect = 0;
        r->partners = r->slow_partners = 0;
        r->confirm_with = -1;
        snprintf(r->evidence, sizeof(r->evidence), "validation: %s", v->link_ev[l]);
    }
    collprof_screen_row_t *r = grow(out);
    if (r == NULL) {
        return -1;
    }
    *r = proto;
    snprintf(r->what, sizeof(r->what), "verify"); /* "validation" in 8 bytes */
    r->node_a = r->node_b = -1;
    r->host_a[0] = r->host_b[0] = '\0';
    r->suspect = r->slow_partners = 0;
    r->confirm_with = -1;
    r->partners = v->ran && h->ng > 0 ? h->g[0].count : 0;
    double e = v->ran && h->ng > 0 ? cp_halve_expect(&h->opt, h->g[0].count) : 0;
    r->score = e > 0 && h->g[0].busbw > 0 ? h->g[0].busbw / e : 0;
    const char *verdict = !v->ran                         ? "skipped"
                          : h->outcome == CP_HALVE_PASSED ? "passed"
                          : h->outcome == CP_HALVE_FOUND  ? "failed"
                          : h->outcome == CP_HALVE_PARTLY ? "failed"
                                                          : "inconclusive";
    snprintf(r->verdict, sizeof(r->verdict), "%s", verdict);
    if (!v->ran) {
        snprintf(r->evidence, sizeof(r->evidence), "not run: %s", v->why);
    } else {
        snprintf(r->evidence, sizeof(r->evidence), "%s%s%s (%.1f s)", v->summary,
                 v->why[0] ? "; " : "", v->why, v->secs);
    }
    return 0;
}
