#include "config.h"

#include "format/cflags.h"

#include <stdint.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int ends_with_any(const char *s, const char *const *list)
{
    for (; *list != NULL; list++) {
        if (ends_with(s, *list)) {
            return 1;
        }
    }
    return 0;
}

/* InfiniBand PortCounters errors, EFA and mlx5 error hw_counters. */
static const char *const link_errors[] = {"/symbol_error",
                                          "/link_error_recovery",
                                          "/link_downed",
                                          "/port_rcv_errors",
                                          "/port_xmit_discards",
                                          "/local_link_integrity_errors",
                                          "/excessive_buffer_overrun_errors",
                                          "/port_rcv_remote_physical_errors",
                                          "/VL15_dropped",
                                          "/rx_drops",
                                          "/rdma_read_wr_err",
                                          "/rdma_write_wr_err",
                                          "/packet_seq_err",
                                          "/out_of_sequence",
                                          "/local_ack_timeout_err",
                                          "/rnr_nak_retry_err",
                                          "/out_of_buffer",
                                          NULL};
/* EFA's SRD retransmissions and degraded connections, mlx5's retransmitted requests. */
static const char *const retrans[] = {"/retrans_pkts",
                                      "/retrans_bytes",
                                      "/retrans_timeout_events",
                                      "/impaired_remote_conn_events",
                                      "/unresponsive_remote_events",
                                      "/duplicate_request",
                                      "/implied_nak_seq_err",
                                      NULL};
static const char *const net_errors[] = {"/rx_errors", "/tx_errors", "/rx_dropped", "/tx_dropped",
                                         NULL};

static const char *gpu_flag(const collprof_counter_row_t *r)
{
    if (ends_with(r->name, "/throttle_reasons")) {
        return ((uint64_t)r->delta & CP_CFLAG_THROTTLE_MASK) ? "GPU throttled" : NULL;
    }
    if (r->delta <= 0) {
        return NULL;
    }
    if (ends_with(r->name, "/power_capped_time") || ends_with(r->name, "/thermal_capped_time")) {
        return "GPU throttled";
    }
    if (ends_with(r->name, "/ecc_uncorrected")) {
        return "GPU ECC errors";
    }
    if (ends_with(r->name, "/xid_errors")) {
        return "GPU Xid errors";
    }
    return ends_with(r->name, "/pcie_replays") ? "PCIe replays" : NULL;
}

const char *cp_cflag(const collprof_counter_row_t *r)
{
    if (strcmp(r->source, "path") == 0) { /* the path check's verdict (counters/path_check.h) */
        if (strcmp(r->name, "verdict") != 0) {
            return NULL;
        }
        return strcmp(r->unit, "other-nic") == 0 ? "path: other NIC"
               : strcmp(r->unit, "excess") == 0  ? "path: excess bytes"
                                                 : NULL;
    }
    if (strcmp(r->source, "gpu") == 0) {
        return gpu_flag(r);
    }
    if (strcmp(r->source, "host") == 0) {
        return strcmp(r->name, "cpu_steal_pct") == 0 && r->delta > CP_CFLAG_STEAL_PCT ? "CPU steal"
                                                                                      : NULL;
    }
    if (r->delta <= 0 || strcmp(r->kind, "counter") != 0) {
        return NULL;
    }
    if (strcmp(r->source, "net") == 0) {
        return ends_with_any(r->name, net_errors) ? "interface errors or drops" : NULL;
    }
    if (ends_with_any(r->name, retrans)) {
        return "retransmissions";
    }
    return ends_with_any(r->name, link_errors) ? "link errors" : NULL;
}

int cp_cflag_notes(const collprof_counter_row_t *rows, size_t n, FILE *f)
{
    int lines = 0;
    for (size_t k = 0; rows != NULL && k < n; k++) {
        const char *why = cp_cflag(&rows[k]);
        if (why == NULL) {
            continue;
        }
        if (strcmp(rows[k].source, "path") == 0) {
            cp_cflag_path_note(rows, n, k, f);
            lines++;
            continue;
        }
        const int gauge = strcmp(rows[k].kind, "gauge") == 0;
        fprintf(f, "    counters: node %d (%s): %s %s%g%s%s (%s)\n", rows[k].node, rows[k].host,
                rows[k].name, gauge ? "" : "+", rows[k].delta, rows[k].unit[0] ? " " : "",
                rows[k].unit, why);
        lines++;
    }
    return lines;
}

static const char *const kinds[CP_CFLAG_KINDS] = {
    "link errors",  "retransmissions", "interface errors or drops",
    "CPU steal",    "GPU throttled",   "GPU ECC errors",
    "PCIe replays", "path: other NIC", "path: excess bytes", "GPU Xid errors"};

void cp_cflag_tally_add(cp_cflag_tally_t *t, int cell, const collprof_counter_row_t *rows, size_t n)
{
    for (size_t i = 0; rows != NULL && i < n; i++) {
        const char *why = cp_cflag(&rows[i]);
        for (int k = 0; why != NULL && k < CP_CFLAG_KINDS; k++) {
            if (strcmp(why, kinds[k]) == 0 && t->last[k] != cell + 1) {
                t->cells[k]++;
                t->last[k] = cell + 1;
            }
        }
    }
}

const char *cp_cflag_tally_text(const cp_cflag_tally_t *t, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < CP_CFLAG_KINDS; k++) {
        if (t->cells[k] > 0 && at < len) {
            at += (size_t)snprintf(buf + at, len - at, "%s%s in %d cell%s", at ? "; " : "",
                                   kinds[k], t->cells[k], t->cells[k] == 1 ? "" : "s");
        }
    }
    if (at == 0) {
        snprintf(buf, len, "nothing");
    }
    return buf;
}
