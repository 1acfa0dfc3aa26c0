/*
 * What collprof-report screen --baseline and links --baseline share: the baseline file read
 * and checked, its reference for one backend of a result file (at the message sizes that
 * file's pairs were measured at), and the words that say which figures a verdict was judged
 * against.  The judging itself is the screen's (src/screen/screen.h).
 */
#include "config.h"

#include "base/util.h"
#include "schema/baseline.h"
#include "report/links_data.h"
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

int cp_report_base_load(const char *cmd, const char *path, cp_report_base_t *b)
{
    char err[1024];
    memset(b, 0, sizeof(*b));
    cp_text_sanitize(path, b->shown, sizeof(b->shown));
    if (cp_baseline_read(path, &b->rows, &b->n, err, sizeof(err)) != 0) {
        cp_report_error("%s: --baseline %s", cmd, err);
        return CP_REPORT_EXIT_BAD;
    }
    return 0;
}

void cp_report_base_free(cp_report_base_t *b)
{
    free(b->rows);
    memset(b, 0, sizeof(*b));
}

int cp_report_base_ref(const char *cmd, const cp_report_base_t *b, const cp_report_file_t *f,
                       const char *backend, cp_report_ref_t *r)
{
    char err[1024];
    memset(r, 0, sizeof(*r));
    r->lat_bytes = cp_report_links_bytes(f, backend, "latency");
    r->bw_bytes = cp_report_links_bytes(f, backend, "bandwidth");
    if (r->lat_bytes == 0 || r->bw_bytes == 0) {
        cp_report_error("%s: %s has no %s pairs of backend %s (/links) to judge against the "
                        "baseline",
                        cmd, f->path, r->lat_bytes == 0 ? "latency" : "bandwidth", backend);
        return CP_REPORT_EXIT_BAD;
    }
    if (cp_baseline_ref(b->rows, b->n, backend, r->lat_bytes, r->bw_bytes, &r->ref, err,
                        sizeof(err)) != 0) {
        cp_report_error("%s: --baseline %s does not fit %s: %s", cmd, b->shown, f->path, err);
        return CP_REPORT_EXIT_BAD;
    }
    return 0;
}

void cp_report_base_words(const cp_report_base_t *b, const char *backend, const cp_report_ref_t *r,
                          char *buf, size_t len)
{
    snprintf(buf, len,
             "the baseline %s (%s: %.4g GB/s at %llu B, MAD %.3f; %.4g us at %llu B, MAD %.3f)",
             b->shown, backend, r->ref.bw_gbs, r->bw_bytes, r->ref.bw_mad, r->ref.lat_us,
             r->lat_bytes, r->ref.lat_mad);
}
