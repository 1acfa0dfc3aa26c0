#include "config.h"

#include "runner/prov.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* This rank's facts: the backend's describe(), then what the core decides itself. */
static void prov_local(const cp_plugin_t *p, int memtype, int rank, collprof_provenance_row_t *out)
{
    collprof_provenance_t d;
    memset(&d, 0, sizeof(d));
    d.size = sizeof(d);
    if (p->be->describe(p->ctx, memtype, &d) != COLLPROF_OK) {
        memset(&d, 0, sizeof(d)); /* nothing to add: every field "not known" */
    }
    memset(out, 0, sizeof(*out));
    out->rank = rank;
    /* the runner times with run_batch exactly when the backend has a device timer */
    if (p->be->flags & COLLPROF_BACKEND_DEVICE_TIMER) {
        snprintf(out->timer, sizeof(out->timer), "%.*s", (int)sizeof(d.timer), d.timer);
    } else {
        snprintf(out->timer, sizeof(out->timer), "%s", CP_PROV_HOST_TIMER);
    }
    snprintf(out->allocation, sizeof(out->allocation), "%.*s", (int)sizeof(d.memory), d.memory);
    if (d.device[0] != '\0') {
        snprintf(out->device, sizeof(out->device), "%.*s", (int)sizeof(d.device), d.device);
    } else if (memtype != COLLPROF_MEM_DEVICE) {
        snprintf(out->device, sizeof(out->device), "host"); /* host memory, host clock */
    }
    snprintf(out->transport, sizeof(out->transport), "%.*s", (int)sizeof(d.transport), d.transport);
}

/* One column over the ranks: the common value, or CP_PROV_PER_RANK; 1 when they differ. */
static int merge(const cp_prov_t *pv, size_t off, char *out, size_t len)
{
    const char *first = (const char *)&pv->ranks[0] + off;
    for (int q = 1; q < pv->nranks; q++) {
        if (strcmp(first, (const char *)&pv->ranks[q] + off) != 0) {
            snprintf(out, len, "%s", CP_PROV_PER_RANK);
            return 1;
        }
    }
    snprintf(out, len, "%s", first);
    return 0;
}

/* Rank 0's merge of the ranks' columns, for the others. */
typedef struct prov_merged {
    int differ;
    char timer[64], allocation[64], device[64];
} prov_merged_t;

/* Rank 0: merge the rows into m, m->differ -1 when a rank's row is not its own (a rank short of
 * memory sends rank -1: it had no room for the answer). */
static void prov_merge(const cp_prov_t *pv, prov_merged_t *m)
{
    for (int q = 0; q < pv->nranks; q++) {
        if (pv->ranks[q].rank != q) {
            m->differ = -1;
            return;
        }
    }
    m->differ = merge(pv, offsetof(collprof_provenance_row_t, timer), m->timer, sizeof(m->timer));
    m->differ |= merge(pv, offsetof(collprof_provenance_row_t, allocation), m->allocation,
                       sizeof(m->allocation));
    m->differ |=
        merge(pv, offsetof(collprof_provenance_row_t, device), m->device, sizeof(m->device));
}

/* Collective: every rank's facts for p on memtype to rank 0, which merges the columns and sends
 * the merge to every rank (not an allgather: through the TCP tree rank 0 would send ranks^2
 * rows); pv->ranks holds every rank's row on rank 0 and this rank's alone elsewhere.  Every rank
 * makes the same calls whatever it could allocate, and they agree: rank 0 first says whether it
 * has room for the rows (without it, no gather), a rank without room sends its row as rank -1,
 * and rank 0's merge then says -1 to every rank (NULL everywhere). */
static cp_prov_t *prov_one(const cp_plugin_t *p, int memtype, const cp_oob_t *oob, int rank,
                           int nranks)
{
    collprof_provenance_row_t mine, spare;
    prov_merged_t m;
    _Static_assert(sizeof(m.timer) == sizeof(((cp_prov_t *)0)->timer), "prov_merged_t.timer");
    _Static_assert(sizeof(m.allocation) == sizeof(((cp_prov_t *)0)->allocation),
                   "prov_merged_t.allocation");
    _Static_assert(sizeof(m.device) == sizeof(((cp_prov_t *)0)->device), "prov_merged_t.device");
    prov_local(p, memtype, rank, &mine);
    memset(&m, 0, sizeof(m));
    cp_prov_t *pv = calloc(1, sizeof(*pv));
    collprof_provenance_row_t *all = calloc((size_t)nranks, sizeof(*all));
    int room = pv != NULL && all != NULL;
    int rc = oob->bcast(&room, sizeof(room), 0); /* rank 0's room: the others' is in their row */
    mine.rank = pv != NULL && all != NULL ? rank : -1;
    /* whatever the broadcast did here, so that every rank makes the same calls; spare: this
     * rank is not rank 0, whose room the broadcast said */
    rc |= room ? oob->gather(&mine, all != NULL ? all : &spare, sizeof(mine)) : 0;
    if (rc == 0 && room && pv != NULL && all != NULL) {
        all[rank] = mine;
        pv->nranks = nranks;
        pv->ranks = all;
        if (rank == 0) {
            prov_merge(pv, &m);
        }
    }
    m.differ = rank == 0 && rc != 0 ? -1 : m.differ; /* rank 0: -1 when its part failed */
    rc |= room ? oob->bcast(&m, sizeof(m), 0) : 0;
    if (rc != 0 || !room || m.differ < 0 || pv == NULL || all == NULL) {
        free(pv);
        free(all);
        return NULL;
    }
    pv->differ = m.differ;
    memcpy(pv->timer, m.timer, sizeof(pv->timer));
    memcpy(pv->allocation, m.allocation, sizeof(pv->allocation));
    memcpy(pv->device, m.device, sizeof(pv->device));
    pv->timer[sizeof(pv->timer) - 1] = pv->allocation[sizeof(pv->allocation) - 1] =
        pv->device[sizeof(pv->device) - 1] = '\0';
    return pv;
}

/* Does the plan run a cell of plugin i on memtype? */
static int plan_runs(const cp_plan_t *plan, int i, int memtype)
{
    for (int c = 0; c < plan->ncells; c++) {
        const cp_cell_t *cell = &plan->cells[c];
        if (cell->plugin == i && cell->memtype == memtype &&
            cell->pre_status == COLLPROF_CELL_PENDING) {
            return 1;
        }
    }
    return 0;
}

int cp_prov_gather(cp_plugin_t *plugins, int nplugins, const cp_plan_t *plan, const cp_oob_t *oob,
                   int rank, int nranks)
{
    int rc = 0;
    /* every rank makes the same exchanges, whatever failed before */
    for (int i = 0; i < nplugins; i++) {
        for (int m = 0; m < COLLPROF_MEM_COUNT && plugins[i].ctx != NULL; m++) {
            if (plan_runs(plan, i, m)) {
                plugins[i].prov[m] = prov_one(&plugins[i], m, oob, rank, nranks);
                rc |= plugins[i].prov[m] != NULL ? 0 : -1;
            }
        }
    }
    return rc;
}

void cp_prov_free(cp_plugin_t *plugins, int nplugins)
{
    for (int i = 0; i < nplugins; i++) {
        for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
            if (plugins[i].prov[m] != NULL) {
                free(plugins[i].prov[m]->ranks);
                free(plugins[i].prov[m]);
                plugins[i].prov[m] = NULL;
            }
        }
    }
}

void cp_prov_row(const cp_prov_t *pv, collprof_result_row_t *row)
{
    snprintf(row->timer, sizeof(row->timer), "%s", pv->timer);
    snprintf(row->allocation, sizeof(row->allocation), "%s", pv->allocation);
    snprintf(row->device, sizeof(row->device), "%s", pv->device);
}

/* Append "sep text" to buf[len] unless text is empty or already there. */
static void add_once(char *buf, size_t len, const char *sep, const char *text)
{
    if (text[0] == '\0' || strstr(buf, text) != NULL) {
        return;
    }
    strncat(buf, buf[0] ? sep : "", len - strlen(buf) - 1);
    strncat(buf, text, len - strlen(buf) - 1);
}

void cp_prov_rank(const cp_plugin_t *plugins, int nplugins, int r, collprof_rank_row_t *row)
{
    char dev[sizeof(row->device)] = "";
    row->transport[0] = '\0';
    for (int i = 0; i < nplugins; i++) {
        int said = 0;
        for (int m = 0; m < COLLPROF_MEM_COUNT; m++) {
            const cp_prov_t *pv = plugins[i].prov[m];
            if (pv == NULL || r >= pv->nranks) {
                continue;
            }
            const collprof_provenance_row_t *q = &pv->ranks[r];
            const char *d = q->device[0] ? q->device : "not reported";
            if (strcmp(d, "host") != 0) {
                add_once(dev, sizeof(dev), "; ", d);
            }
            if (!said && q->transport[0] != '\0') {
                char t[sizeof(row->transport)];
                snprintf(t, sizeof(t), "%s: %s", plugins[i].name, q->transport);
                add_once(row->transport, sizeof(row->transport), "; ", t);
                said = 1;
            }
        }
    }
    snprintf(row->device, sizeof(row->device), "%s", dev[0] ? dev : "host");
}
