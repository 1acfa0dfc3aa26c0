#include "config.h"

#include "plan/plan.h"

#include "colls/colls.h"
#include "colls/data.h"
#include "runner/runner.h"
#include "runner/split.h"
#include "base/util.h"
#include "format/best.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int push(cp_plan_t *plan, int *cap, const cp_cell_t *c)
{
    if (plan->ncells == *cap) {
        int ncap = *cap ? *cap * 2 : 64;
        cp_cell_t *g = realloc(plan->cells, sizeof(cp_cell_t) * (size_t)ncap);
        if (g == NULL) {
            return -1;
        }
        plan->cells = g;
        *cap = ncap;
    }
    plan->cells[plan->ncells++] = *c;
    return 0;
}

static int find_plugin(const cp_plugin_t *plugins, int n, const char *name)
{
    for (int i = 0; i < n; i++) {
        if (!strcmp(plugins[i].name, name)) {
            return i;
        }
    }
    return -1;
}

/* Does the list hold "default" and is v the variant that "default" runs? */
static int default_alias(const cp_plugin_t *p, const char *v, const char **list, int n)
{
    const char *d = COLLPROF_CAPS_HAS(&p->caps, default_variant) ? p->caps.default_variant : NULL;
    if (d == NULL || strcmp(v, d) != 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        if (!strcmp(list[i], "default")) {
            return 1;
        }
    }
    return 0;
}

int cp_plan_variants(const cp_spec_t *s, const cp_plugin_t *p, const char **out, int max)
{
    const char *want[256];
    int nwant = 0, n = 0;
    if (s->nvariants == 0) {
        want[nwant++] = "default";
        for (size_t i = 0; i < p->caps.nvariants && nwant < 256; i++) {
            want[nwant++] = p->caps.variants[i].name;
        }
    } else {
        for (int i = 0; i < s->nvariants && nwant < 256; i++) {
            want[nwant++] = s->variants[i];
        }
    }
    for (int i = 0; i < nwant && n < max; i++) {
        if (!default_alias(p, want[i], want, nwant)) {
            out[n++] = want[i];
        }
    }
    return n;
}

static void unsupported_reason(const cp_plugin_t *p, const cp_cell_t *c, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!(p->caps.ops & COLLPROF_BIT(c->op))) {
        snprintf(buf, len, "%s does not offer %s", p->name, collprof_op_name(c->op));
    } else if (!(p->caps.dtypes & COLLPROF_BIT(c->dtype))) {
        snprintf(buf, len, "%s does not offer dtype %s", p->name,
                 collprof_dtype_info(c->dtype)->name);
    } else if ((cp_op_flags(c->op) & COLLPROF_OPF_REDUCES) &&
               !(p->caps.redops & COLLPROF_BIT(c->redop))) {
        snprintf(buf, len, "%s does not offer reduction %s", p->name,
                 collprof_redop_name(c->redop));
    } else if (!(p->caps.memtypes & COLLPROF_BIT(c->memtype))) {
        snprintf(buf, len, "%s does not offer %s memory", p->name,
                 collprof_memtype_name(c->memtype));
    }
}

/* The plugins spec s selects, in order, into sel (room for max(nplugins, nbackends)). */
static int select_backends(const cp_spec_t *s, const cp_plugin_t *plugins, int nplugins, int *sel,
                           char *err, size_t errlen)
{
    int nsel = 0;
    for (int i = 0; s->nbackends == 0 && i < nplugins; i++) {
        /* a backend that runs only on request (self) is left out of the default */
        if (plugins[i].usable && !(plugins[i].be->flags & COLLPROF_BACKEND_ON_REQUEST)) {
            sel[nsel++] = i;
        }
    }
    for (int b = 0; b < s->nbackends; b++) {
        int i = find_plugin(plugins, nplugins, s->backends[b]);
        if (i < 0 || (plugins[i].be == NULL && plugins[i].error[0] != '\0' &&
                      strstr(plugins[i].error, "no collprof_") == plugins[i].error)) {
            char avail[512];
            cp_plugins_available(avail, sizeof(avail));
            snprintf(err, errlen, "unknown backend '%s' (available: %s; plugins are read from %s)",
                     s->backends[b], avail[0] ? avail : "none", cp_plugins_search_path());
            return -1;
        }
        if (plugins[i].usable) {
            sel[nsel++] = i;
        }
    }
    if (nsel == 0 && s->nbackends > 0) { /* every named one failed to load: say why */
        int i = find_plugin(plugins, nplugins, s->backends[0]);
        snprintf(err, errlen, "backend %s cannot be used: %s", s->backends[0],
                 i >= 0 ? plugins[i].error : "not found");
        return -1;
    }
    if (nsel == 0) {
        snprintf(err, errlen,
                 "no backend is available (plugins are read from %s; see collprof --list)",
                 cp_plugins_search_path());
        return -1;
    }
    return nsel;
}

/* Every named variant must exist somewhere in the selection. */
static int check_variants(const cp_spec_t *s, const cp_plugin_t *plugins, const int *sel, int nsel,
                          char *err, size_t errlen)
{
    for (int v = 0; v < s->nvariants; v++) {
        int found = 0;
        char offered[1024] = "default";
        for (int k = 0; k < nsel; k++) {
            const cp_plugin_t *p = &plugins[sel[k]];
            for (int o = 0; o < s->nops; o++) {
                found |= cp_plugin_has_variant(p, (collprof_op_t)s->ops[o], s->variants[v]);
            }
            for (size_t i = 0; i < p->caps.nvariants; i++) {
                strncat(offered, ", ", sizeof(offered) - strlen(offered) - 1);
                strncat(offered, p->caps.variants[i].name, sizeof(offered) - strlen(offered) - 1);
            }
        }
        if (!found) {
            snprintf(err, errlen,
                     "unknown variant '%.64s' for the selected backends and operations (offered: "
                     "%.700s; see collprof --list)",
                     s->variants[v], offered);
            return -1;
        }
    }
    return 0;
}

/*
 * The matrix of one spec as one odometer over its dimensions, outermost
 * first; the run order of the cells is this order.  Inner lengths depend on
 * the outer positions (a backend's variants and memory, an op's reductions,
 * in-place modes and traffic patterns); a zero length skips the position.
 */
enum {
    DIM_BACKEND,
    DIM_VARIANT,
    DIM_DTYPE,
    DIM_SIZE,
    DIM_OP,
    DIM_MEM, /* 0 when the op makes no cell here (the first dimension under it) */
    DIM_REDOP,
    DIM_INPLACE,
    DIM_IMB,
    DIM_COUNT
};

typedef struct matrix_it {
    const cp_spec_t *s;
    const cp_plugin_t *plugins;
    const int *sel;
    int nsel;
    int idx[DIM_COUNT], len[DIM_COUNT];
    /* per backend */
    const char *vars[256];
    int nvars;
    int mems[COLLPROF_MEM_COUNT], nmems;
} matrix_it_t;

static const cp_plugin_t *it_plugin(const matrix_it_t *it)
{
    return &it->plugins[it->sel[it->idx[DIM_BACKEND]]];
}

static collprof_op_t it_op(const matrix_it_t *it)
{
    return (collprof_op_t)it->s->ops[it->idx[DIM_OP]];
}

/* A backend's variants and memory types (nmems == 0 in the spec: its own). */
static void it_backend(matrix_it_t *it)
{
    const cp_spec_t *s = it->s;
    const cp_plugin_t *p = it_plugin(it);
    it->nvars = cp_plan_variants(s, p, it->vars, 256);
    it->nmems = s->nmems;
    memcpy(it->mems, s->mems, sizeof(it->mems));
    if (it->nmems == 0) { /* the backend's own: host where it can, else what it has */
        it->nmems = 1;
        it->mems[0] = COLLPROF_MEM_HOST;
        for (int m = COLLPROF_MEM_COUNT - 1; m >= 0; m--) {
            if (p->caps.memtypes & COLLPROF_BIT(m)) {
                it->mems[0] = m;
            }
        }
    }
}

/* Length of dimension d at the current outer position. */
static int dim_len(matrix_it_t *it, int d)
{
    const cp_spec_t *s = it->s;
    unsigned fl = d > DIM_OP ? cp_op_flags(it_op(it)) : 0;
    switch (d) {
    case DIM_BACKEND: return it->nsel;
    case DIM_VARIANT: it_backend(it); return it->nvars;
    case DIM_DTYPE: return s->ndtypes;
    case DIM_SIZE: return s->nsizes;
    case DIM_OP: return s->nops;
    case DIM_MEM:
        if (!cp_plugin_has_variant(it_plugin(it), it_op(it), it->vars[it->idx[DIM_VARIANT]]) ||
            ((fl & COLLPROF_OPF_NODATA) && (it->idx[DIM_SIZE] > 0 || it->idx[DIM_DTYPE] > 0))) {
            return 0; /* a barrier has no size or dtype: once is enough */
        }
        return it->nmems;
    case DIM_REDOP: return (fl & COLLPROF_OPF_REDUCES) ? s->nredops : 1;
    case DIM_INPLACE: return (fl & COLLPROF_OPF_NODATA) ? 1 : s->ninplace;
    case DIM_IMB: return (fl & COLLPROF_OPF_VARIABLE) ? s->nimb : 1;
    default: return 0;
    }
}

/*
 * Advance to the next complete position: increment dimension d (none when
 * d < 0: the first position) and restart every dimension inside it.
 * Returns 0 when the matrix is exhausted.
 */
static int it_step(matrix_it_t *it, int d)
{
    for (;;) {
        if (d >= 0 && ++it->idx[d] >= it->len[d]) {
            if (d == 0) {
                return 0;
            }
            d--; /* carry */
            continue;
        }
        int e = d + 1;
        for (; e < DIM_COUNT; e++) {
            it->idx[e] = 0;
            it->len[e] = dim_len(it, e);
            if (it->len[e] == 0) {
                break;
            }
        }
        if (e == DIM_COUNT) {
            return 1;
        }
        if (e == 0) {
            return 0;
        }
        d = e - 1; /* nothing inside this position: the next one */
    }
}

/* The cell at the iterator's position. */
static void it_cell(const matrix_it_t *it, int nranks, cp_cell_t *c)
{
    const cp_spec_t *s = it->s;
    const int *ix = it->idx;
    collprof_op_t op = it_op(it);
    const unsigned fl = cp_op_flags(op);
    const collprof_dtype_info_t *dt =
        collprof_dtype_info((collprof_dtype_t)s->dtypes[ix[DIM_DTYPE]]);
    uint64_t req = s->sizes[ix[DIM_SIZE]];
    if (s->sizes_are_bytes) {
        req /= dt->size;
    }
    if (req == 0) {
        req = 1;
    }
    memset(c, 0, sizeof(*c));
    c->plugin = it->sel[ix[DIM_BACKEND]];
    snprintf(c->variant, sizeof(c->variant), "%s", it->vars[ix[DIM_VARIANT]]);
    c->op = op;
    c->dtype = (collprof_dtype_t)s->dtypes[ix[DIM_DTYPE]];
    c->redop = (collprof_redop_t)s->redops[ix[DIM_REDOP]];
    c->root = (fl & COLLPROF_OPF_ROOTED) ? s->root : 0;
    c->in_place = (fl & COLLPROF_OPF_NODATA) ? 0 : s->inplace[ix[DIM_INPLACE]];
    c->memtype = it->mems[ix[DIM_MEM]];
    c->requested = (fl & COLLPROF_OPF_NODATA) ? 0 : req;
    c->count = cp_coll_effective_count(op, req, nranks);
    c->imb = (fl & COLLPROF_OPF_VARIABLE) ? &s->imb[ix[DIM_IMB]] : NULL;
    c->iters = s->iters;
    c->warmup = s->warmup;
    c->group_n = nranks;
    unsupported_reason(it_plugin(it), c, c->pre_reason, sizeof(c->pre_reason));
    if (c->pre_reason[0] != '\0') {
        c->pre_status = COLLPROF_CELL_UNSUPPORTED;
    } else if (!(fl & COLLPROF_OPF_NODATA) && c->count == 0) {
        c->pre_status = COLLPROF_CELL_SKIPPED;
        snprintf(c->pre_reason, sizeof(c->pre_reason),
                 "%llu elements cannot be split over %d ranks", (unsigned long long)req, nranks);
    }
}

/* Check spec s and append its cells to the plan. */
static int expand_spec(const cp_spec_t *s, const cp_plugin_t *plugins, int nplugins, int nranks,
                       cp_plan_t *plan, int *cap, char *err, size_t errlen)
{
    int room = nplugins > s->nbackends ? nplugins : s->nbackends;
    int *sel = malloc(sizeof(*sel) * (size_t)(room > 0 ? room : 1));
    int ret = -1;
    if (sel == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int nsel = select_backends(s, plugins, nplugins, sel, err, errlen);
    if (nsel < 0 || check_variants(s, plugins, sel, nsel, err, errlen) != 0) {
        goto out;
    }
    if (s->root >= nranks) {
        snprintf(err, errlen, "root %d does not exist in a job of %d ranks", s->root, nranks);
        goto out;
    }
    for (int i = 0; i < s->nimb; i++) {
        if (cp_imbalance_validate(&s->imb[i], nranks, err, errlen) != 0) {
            goto out;
        }
    }
    matrix_it_t it = {.s = s, .plugins = plugins, .sel = sel, .nsel = nsel};
    for (int more = it_step(&it, -1); more; more = it_step(&it, DIM_COUNT - 1)) {
        cp_cell_t c;
        it_cell(&it, nranks, &c);
        if (push(plan, cap, &c) != 0) {
            snprintf(err, errlen, "out of memory");
            goto out;
        }
        plan->plugins_used[c.plugin] = 1;
    }
    ret = 0;
out:
    free(sel);
    return ret;
}

int cp_plan_uses(const cp_plan_t *plan, int plugin)
{
    return plugin >= 0 && plugin < plan->nplugins && plan->plugins_used[plugin];
}

int cp_plan_build(const cp_options_t *opt, const cp_plugin_t *plugins, int nplugins, int nranks,
                  const cp_plan_node_t *node, cp_plan_t *plan, char *err, size_t errlen)
{
    int cap = 0;
    memset(plan, 0, sizeof(*plan));
    plan->nranks = nranks;
    plan->plugins_used = calloc(nplugins > 0 ? (size_t)nplugins : 1, 1);
    if (plan->plugins_used == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    plan->nplugins = nplugins;
    for (int i = 0; i < opt->nspecs; i++) {
        char why[1024];
        if (expand_spec(&opt->specs[i], plugins, nplugins, nranks, plan, &cap, why, sizeof(why)) !=
            0) {
            if (opt->specs[i].line > 0) {
                snprintf(err, errlen, "%s:%d: %s", opt->matrix_file, opt->specs[i].line, why);
            } else {
                snprintf(err, errlen, "%s", why);
            }
            cp_plan_free(plan);
            return -1;
        }
    }
    if (node != NULL && cp_plan_memory_guard(opt, plugins, node, plan, err, errlen) != 0) {
        cp_plan_free(plan);
        return -1;
    }
    return 0;
}

/* Cell c run on a group of gn ranks of kind instead of the whole job. */
static void split_cell(cp_cell_t *c, int kind, int gn, int me, const cp_plugin_t *p)
{
    const unsigned fl = cp_op_flags(c->op);
    char why[160] = "";
    c->split = kind;
    c->group_n = gn;
    c->group_rank = me;
    if (!(fl & COLLPROF_OPF_NODATA)) {
        c->count = cp_coll_effective_count(c->op, c->requested, gn);
    }
    if (c->pre_status != COLLPROF_CELL_PENDING) {
        return;
    }
    if (!(p->be->flags & COLLPROF_BACKEND_GROUPS)) {
        c->pre_status = COLLPROF_CELL_UNSUPPORTED;
        snprintf(c->pre_reason, sizeof(c->pre_reason),
                 "backend %s runs on the whole job only (no %s groups)", p->name,
                 cp_split_name(kind));
    } else if ((fl & COLLPROF_OPF_ROOTED) && c->root >= gn) {
        c->pre_status = COLLPROF_CELL_UNSUPPORTED;
        snprintf(c->pre_reason, sizeof(c->pre_reason), "root %d is outside a %s group of %d ranks",
                 c->root, cp_split_name(kind), gn);
    } else if (c->imb != NULL && cp_imbalance_validate(c->imb, gn, why, sizeof(why)) != 0) {
        c->pre_status = COLLPROF_CELL_UNSUPPORTED;
        snprintf(c->pre_reason, sizeof(c->pre_reason), "%s group: %s", cp_split_name(kind), why);
    } else if (!(fl & COLLPROF_OPF_NODATA) && c->count == 0) {
        c->pre_status = COLLPROF_CELL_SKIPPED;
        snprintf(c->pre_reason, sizeof(c->pre_reason),
                 "%llu elements cannot be split over a group of %d ranks",
                 (unsigned long long)c->requested, gn);
    }
}

int cp_plan_split(unsigned kinds, const cp_plugin_t *plugins, const struct cp_boot *b,
                  cp_plan_t *plan, char *err, size_t errlen)
{
    int gn[CP_SPLIT_KINDS] = {b->nranks, 0, 0}, me[CP_SPLIT_KINDS] = {b->rank, 0, 0}, cap = 0;
    if (kinds == 0 || plan->ncells == 0) {
        return 0;
    }
    for (int k = CP_SPLIT_NODE; k < CP_SPLIT_KINDS; k++) {
        cp_split_place(b, k, &gn[k], &me[k]);
    }
    cp_plan_t out = *plan;
    out.cells = NULL;
    out.ncells = 0;
    for (int i = 0; i < plan->ncells; i++) {
        int bad = push(&out, &cap, &plan->cells[i]) != 0;
        for (int k = CP_SPLIT_NODE; k < CP_SPLIT_KINDS && !bad; k++) {
            if (kinds & COLLPROF_BIT(k)) {
                cp_cell_t c = plan->cells[i];
                split_cell(&c, k, gn[k], me[k], &plugins[c.plugin]);
                bad = push(&out, &cap, &c) != 0;
            }
        }
        if (bad) {
            free(out.cells);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    free(plan->cells);
    *plan = out;
    return 0;
}

void cp_plan_free(cp_plan_t *plan)
{
    free(plan->cells);
    free(plan->plugins_used);
    memset(plan, 0, sizeof(*plan));
}

void cp_plan_print(const cp_plan_t *plan, const cp_plugin_t *plugins, FILE *f)
{
    fprintf(f, "# collprof plan: %d cells on %d ranks\n", plan->ncells, plan->nranks);
    fprintf(f, "# %-8s %-22s %-14s %-9s %-5s %6s %12s %14s %6s %6s  %s\n", "backend", "variant",
            "op", "type", "redop", "inplc", "count", "bytes", "iters", "warmup", "note");
    for (int i = 0; i < plan->ncells; i++) {
        const cp_cell_t *c = &plan->cells[i];
        const collprof_dtype_info_t *dt = collprof_dtype_info(c->dtype);
        fprintf(f, "  %-8s %-22s %-14s %-9s %-5s %6s %12llu %14llu %6d %6d  %s%s%s%s%s%s%s\n",
                plugins[c->plugin].name, c->variant, collprof_op_name(c->op), dt->name,
                (cp_op_flags(c->op) & COLLPROF_OPF_REDUCES) ? collprof_redop_name(c->redop) : "-",
                c->in_place ? "in" : "out", (unsigned long long)c->count,
                (unsigned long long)(c->count * dt->size), c->iters, c->warmup,
                c->split ? cp_split_name(c->split) : "", c->split ? " split " : "",
                c->memtype != COLLPROF_MEM_HOST ? collprof_memtype_name(c->memtype) : "",
                c->memtype != COLLPROF_MEM_HOST ? " memory " : "", c->imb ? c->imb->label : "",
                c->pre_status != COLLPROF_CELL_PENDING ? (c->imb ? " " : "") : "",
                c->pre_status != COLLPROF_CELL_PENDING ? c->pre_reason : "");
    }
}
