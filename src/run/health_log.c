#include "config.h"

#include "run/health_log.h"

#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>

/* Rank 0's log file under the health check, opened once; NULL elsewhere. */
static FILE *log_file(const cp_rank_run_t *rr)
{
    static FILE *f;
    static int tried;
    const char *path = getenv("COLLPROF_HEALTHCHECK_CELLS");
    if (!tried && rr->boot.rank == 0 && path != NULL && path[0] == '/') {
        tried = 1;
        f = fopen(path, "ae");
    }
    return rr->boot.rank == 0 ? f : NULL;
}

static void cell_name(const cp_rank_run_t *rr, int i, char *buf, size_t len)
{
    const cp_cell_t *c = &rr->plan.cells[i];
    snprintf(buf, len, "%s/%s %s %s %llu", rr->plugins[c->plugin].name, c->variant,
             collprof_op_name(c->op), collprof_dtype_name(c->dtype), (unsigned long long)c->count);
}

void cp_health_log_start(const cp_rank_run_t *rr, int i)
{
    FILE *f = log_file(rr);
    if (f != NULL) {
        char name[256];
        cell_name(rr, i, name, sizeof(name));
        fprintf(f, "S\t%d\t%s\n", i, name);
        fflush(f);
    }
}

void cp_health_log_done(const cp_rank_run_t *rr, int i, const cp_result_t *res)
{
    FILE *f = log_file(rr);
    if (f != NULL) {
        const cp_cell_t *c = &rr->plan.cells[i];
        char name[256], reason[512];
        cell_name(rr, i, name, sizeof(name));
        cp_text_sanitize(res->fig.reason, reason, sizeof(reason));
        for (char *p = reason; *p != '\0'; p++) {
            *p = *p == '\t' ? ' ' : *p;
        }
        fprintf(f, "D\t%d\t%s\t%llu\t%.3f\t%llu\t%s\t%s\n", i,
                collprof_cell_status_name(res->fig.status), (unsigned long long)res->fig.wrong,
                res->fig.stats.p50, (unsigned long long)(c->count * collprof_dtype_size(c->dtype)),
                name, reason);
        fflush(f);
    }
}
