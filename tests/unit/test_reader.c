/*
 * libcpreader on the sample result file of each schema version
 * (tests/data/collprof-<major>.<minor>.h5, written by collprof itself: a
 * 2-rank run of the mpi backend, allreduce and alltoallv of 1K floats).
 * Every earlier version must keep reading; a column added later reads as
 * empty or 0 from a file without it.  Then hostile files made from the
 * current sample: a FIFO operand, an external link to a FIFO, a table that
 * claims a million rows in a few bytes.  Each must fail at once with a
 * reason (an alarm turns a hang into a failure).  The 1.2 sample adds the
 * ofi backend and the provenance columns; the 1.6 sample holds a device-memory
 * cell (nccl on the test stand-in) beside a host one; the 1.9 sample a screen's validation
 * collective (a verify row); the 1.10 sample a screen by path class on two switches (the
 * /links path column, /screen path_refs); the 1.8 sample the
 * check column (self, --check sample:2).
 */
#include "config.h"

#include "report/read/reader.h"

#include "tap.h"

#include "schema/h5schema.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static cp_report_file_t *open_sample(const char *version)
{
    const char *src = getenv("COLLPROF_SRCDIR");
    char path[4096], err[1024] = "";
    snprintf(path, sizeof(path), "%s/tests/data/collprof-%s.h5", src ? src : ".", version);
    cp_report_file_t *f = NULL;
    ok(cp_report_open(path, &f, err, sizeof(err)) == 0, "schema %s: %s opens %s", version, path,
       err);
    return f;
}

static void check_common(const cp_report_file_t *f, long long minor)
{
    const collprof_root_attrs_t *a = &f->root;
    ok(!strcmp(a->schema, COLLPROF_SCHEMA_NAME) && a->schema_version_major == 1 &&
           a->schema_version_minor == minor,
       "schema %s %lld.%lld", a->schema, a->schema_version_major, a->schema_version_minor);
    ok(a->world_size == 2 && a->node_count == 1 && f->nranks == 2, "2 ranks on 1 node");
    ok(!strcmp(a->tag, "sample") && !strcmp(a->status, "complete") && !strcmp(a->check, "exact"),
       "tag, status, check attributes");
    ok(f->ranks[1].rank == 1 && f->ranks[1].node_id == 0 && f->ranks[1].local_rank == 1 &&
           f->ranks[1].pid > 0 && !strcmp(f->ranks[1].device, "host"),
       "/ranks row 1");
    int mpi = -1;
    for (size_t i = 0; i < f->nbackends; i++) {
        mpi = !strcmp(f->backends[i].name, "mpi") ? (int)i : mpi;
    }
    ok(mpi >= 0 && !strcmp(f->backends[mpi].state, "initialised") &&
           !strncmp(f->backends[mpi].variants, "default", 7),
       "/backends has mpi, initialised");
    /* mpi's two cells first (the 1.2 sample has ofi's after them) */
    ok(f->nrows == (minor >= 2 ? 4 : 2), "%d rows (%zu)", minor >= 2 ? 4 : 2, f->nrows);
    if (f->nrows < 2) {
        return;
    }
    const collprof_result_row_t *ar = &f->rows[0], *av = &f->rows[1];
    ok(!strcmp(ar->op, "allreduce") && !strcmp(ar->dtype, "float32") && ar->count == 1024 &&
           ar->bytes == 4096 && ar->iterations == 5 && !strcmp(ar->status, "ok"),
       "row 0: allreduce of 1,024 float32, 5 iterations, ok");
    ok(!strcmp(av->op, "alltoallv") && !strcmp(av->imbalance, "uniform") && av->wrong == 0,
       "row 1: alltoallv, uniform");
    const cp_report_cell_t *c = &f->cells[0], *v = &f->cells[1];
    ok(c->iter_max != NULL && c->rank_mean != NULL && c->rank_min != NULL && c->send_bytes == NULL,
       "cell 0: raw samples, no bytes");
    double mx = 0;
    for (int i = 0; i < ar->iterations; i++) {
        mx = c->iter_max[i] > mx ? c->iter_max[i] : mx;
    }
    ok(mx == ar->time_max_us, "cell 0: the max of the per-iteration maxima is time_max_us");
    ok(v->send_bytes != NULL && v->recv_bytes != NULL && v->send_bytes[0] == 4096 &&
           v->recv_bytes[1] == 4096,
       "cell 1: 4096 bytes sent and received per rank");
}

/* A copy of the current sample at dst whose /environment is replaced by what make() writes. */
static hid_t sample_copy(const char *dst)
{
    const char *src = getenv("COLLPROF_SRCDIR");
    char path[4096], cmd[8400];
    snprintf(path, sizeof(path), "%s/tests/data/collprof-%d.%d.h5", src ? src : ".",
             COLLPROF_SCHEMA_VERSION_MAJOR, COLLPROF_SCHEMA_VERSION_MINOR);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod u+w '%s'", path, dst, dst);
    if (system(cmd) != 0) {
        return H5I_INVALID_HID;
    }
    hid_t f = H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f >= 0) {
        H5Ldelete(f, "environment", H5P_DEFAULT);
    }
    return f;
}

/* Open path: it must fail (within the alarm) with an error that contains want. */
static void refused(const char *path, const char *want, const char *what)
{
    cp_report_file_t *f = NULL;
    char err[1024] = "";
    alarm(20);
    int rc = cp_report_open(path, &f, err, sizeof(err));
    alarm(0);
    ok(rc != 0 && strstr(err, want) != NULL, "%s: refused (%s)", what, err);
    if (rc == 0) {
        cp_report_close(f);
    }
}

static char dir[] = "/tmp/cp_reader_XXXXXX", fifo[64], elink[64], huge[64], tampered[64];

/* Before any cp_report_open: it turns external links off for the whole process. */
/* A copy of the 1.4 sample whose first repeat's p50 no longer matches its samples. */
static void make_tampered_repeats(void)
{
    const char *src = getenv("COLLPROF_SRCDIR");
    char cmd[8400];
    snprintf(tampered, sizeof(tampered), "%s/tampered.h5", dir);
    snprintf(cmd, sizeof(cmd), "cp '%s/tests/data/collprof-1.4.h5' '%s' && chmod u+w '%s'",
             src ? src : ".", tampered, tampered);
    hid_t f = system(cmd) == 0 ? H5Fopen(tampered, H5F_ACC_RDWR, H5P_DEFAULT) : -1;
    hid_t d = f >= 0 ? H5Dopen2(f, "cells/000000/repeat_p50_us", H5P_DEFAULT) : -1;
    double p50[4] = {0, 0, 0, 0};
    int done = d >= 0 && H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, p50) >= 0;
    p50[2] *= 2;
    done = done && H5Dwrite(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, p50) >= 0;
    ok(done, "a copy of the 1.4 sample with the p50 of its third repeat doubled");
    if (d >= 0) {
        H5Dclose(d);
    }
    if (f >= 0) {
        H5Fclose(f);
    }
}

static void make_hostile_files(void)
{
    if (mkdtemp(dir) == NULL) {
        ok(0, "mkdtemp");
        return;
    }
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(elink, sizeof(elink), "%s/elink.h5", dir);
    snprintf(huge, sizeof(huge), "%s/huge.h5", dir);
    ok(mkfifo(fifo, 0600) == 0, "mkfifo");
    hid_t f = sample_copy(elink);
    ok(f >= 0 && H5Lcreate_external(fifo, "/x", f, "environment", H5P_DEFAULT, H5P_DEFAULT) >= 0,
       "a copy whose /environment is an external link to a FIFO");
    H5Fclose(f);

    f = sample_copy(huge);
    hsize_t rows = 1000000, chunk = 4096;
    hid_t sp = H5Screate_simple(1, &rows, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_deflate(dcpl, 9);
    hid_t t = cp_h5_row_type(&cp_h5_table_environment);
    hid_t d = f >= 0 ? H5Dcreate2(f, "environment", t, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT) : -1;
    ok(d >= 0, "a copy whose /environment claims a million rows and stores none");
    H5Dclose(d);
    H5Tclose(t);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(f);
    make_tampered_repeats();
}

static void hostile_files(void)
{
    refused(fifo, "not a regular file", "a FIFO operand");
    refused(elink, "environment", "an external link to a FIFO");
    refused(huge, "claims 1000000 elements", "a million empty rows");
    refused(tampered, "the repeats of cell 0 in /results do not match /cells/000000",
            "a repeat's p50 that its samples do not give");
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ok(system(cmd) == 0, "clean up");
}

/* 1.2: what every cell was measured with; mpi and ofi on host memory, timed by collprof */
static void check_provenance_1_2(const cp_report_file_t *f)
{
    int good = f->nrows == 4;
    for (size_t i = 0; i < f->nrows; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        good &= !strcmp(r->timer, "CLOCK_MONOTONIC") && !strcmp(r->device, "host") &&
                !strncmp(r->allocation, "posix_memalign", 14) && f->cells[i].prov == NULL;
    }
    ok(good, "1.2: every row timed by CLOCK_MONOTONIC in posix_memalign'd host memory, the "
             "ranks agreeing (no /cells/<cell>/provenance)");
    for (int q = 0; q < f->nranks; q++) {
        ok(!strcmp(f->ranks[q].device, "host") && strstr(f->ranks[q].transport, "mpi: ") &&
               strstr(f->ranks[q].transport, "ofi: shm"),
           "1.2: /ranks %d: device %s, transport %s", q, f->ranks[q].device, f->ranks[q].transport);
    }
}

/* 1.4: self allreduce, --repeats 4 with the first two repeats slowed by 20 ms per operation */
static void check_repeats_1_4(void)
{
    cp_report_file_t *f = open_sample("1.4");
    if (f == NULL) {
        return;
    }
    const collprof_result_row_t *r = &f->rows[0];
    const cp_report_cell_t *c = &f->cells[0];
    ok(f->nrows == 1 && r->repeats == 4 && c->rep_p50 != NULL && c->rep_iters != NULL,
       "1.4: 4 repeats, each one's p50 and iterations");
    uint64_t sum = 0;
    for (int k = 0; c->rep_iters != NULL && k < 4; k++) {
        sum += c->rep_iters[k];
    }
    ok(sum == (uint64_t)r->iterations && r->iterations == 16,
       "1.4: iterations counts every repeat's (%d)", r->iterations);
    ok(r->ci_level == 0.875 && r->ci_lo_us <= r->rep_p50_us && r->rep_p50_us <= r->ci_hi_us,
       "1.4: [min, max] of 4 repeats covers 87.5 %% around the median of their p50s");
    ok(r->bimodal == 1 && r->mode_lo_n == 2 && r->mode_hi_n == 2 && r->mode_hi_us >= 20000 &&
           c->rep_p50 != NULL && c->rep_p50[0] >= 20000 && c->rep_p50[1] >= 20000 &&
           c->rep_p50[2] < 20000,
       "1.4: bimodal, the two slowed repeats first (modes %.1f and %.1f us)", r->mode_lo_us,
       r->mode_hi_us);
    cp_report_close(f);
}

/* 1.5: mpi, the four non-blocking ops of 1K floats on 2 ranks; 1.4 has none of their columns */
static void check_nonblocking_1_5(void)
{
    static const char *ops[] = {"iallreduce", "iallgather", "ialltoall", "ibroadcast"};
    cp_report_file_t *f = open_sample("1.5");
    if (f == NULL) {
        return;
    }
    ok(f->root.schema_version_minor == 5 && f->root.world_size == 2 && f->nrows == 4 &&
           !strcmp(f->root.tag, "sample"),
       "1.5: schema 1.5, 2 ranks, 4 rows (%zu)", f->nrows);
    for (size_t i = 0; i < f->nrows && i < 4; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        ok(!strcmp(r->op, ops[i]) && !strcmp(r->status, "ok") && r->wrong == 0 &&
               r->overall_us > 0 && r->comm_us > 0 && r->compute_us > 0 && r->overlap_pct >= 0 &&
               r->overlap_pct <= 100 && !strcmp(r->timer, "CLOCK_MONOTONIC"),
           "1.5: %s: overall %.1f, comm %.1f, compute %.1f us, overlap %.1f %%", r->op,
           r->overall_us, r->comm_us, r->compute_us, r->overlap_pct);
    }
    cp_report_close(f);
    f = open_sample("1.4");
    if (f != NULL) {
        ok(f->nrows > 0 && f->rows[0].overall_us == 0 && f->rows[0].comm_us == 0 &&
               f->rows[0].compute_us == 0 && f->rows[0].overlap_pct == 0,
           "1.4: no overlap columns: they read as 0");
        cp_report_close(f);
    }
}

/* 1.5: self allreduce and alltoall, --sync batch:4 --alloc mmap --rotate-buffers 3, -n 4 */
static void check_policy_1_5(void)
{
    cp_report_file_t *f = open_sample("1.5-policy");
    if (f == NULL) {
        return;
    }
    int good = f->nrows == 2;
    for (size_t i = 0; good && i < f->nrows; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        good = !strcmp(r->sync, "batch") && r->batch == 4 && r->rotate == 3 &&
               !strncmp(r->allocation, "mmap anonymous", 14) && !strcmp(r->status, "ok") &&
               r->wrong == 0 && r->iterations == 4;
    }
    ok(good, "1.5: every cell records sync batch, 4 operations per sample, 3 slots, mmap (%s)",
       f->nrows > 0 ? f->rows[0].allocation : "no rows");
    ok(f->root.timing != NULL && strstr(f->root.timing, "batch of 4") != NULL &&
           strstr(f->root.timing, "host buffers: mmap") != NULL &&
           strstr(f->root.timing, "rotation: 3 slots") != NULL,
       "1.5: the timing attribute states the policy (%s)", f->root.timing);
    cp_report_close(f);
    f = open_sample("1.4");
    if (f != NULL) {
        ok(f->nrows > 0 && f->rows[0].sync[0] == '\0' && f->rows[0].batch == 0 &&
               f->rows[0].rotate == 0,
           "1.4: no policy columns: read as empty and 0");
        cp_report_close(f);
    }
}

/* 1.8: self, allreduce and barrier under --check sample:2: the check each cell applied (the
 * barrier has no data); 1.6 has no check column */
static void check_check_1_8(void)
{
    cp_report_file_t *f = open_sample("1.8");
    if (f == NULL) {
        return;
    }
    ok(f->nrows == 2 && !strcmp(f->rows[0].op, "allreduce") &&
           !strcmp(f->rows[0].check, "sample:2") && !strcmp(f->rows[1].check, "none"),
       "1.8: allreduce checked under sample:2, the barrier none (%s, %s)",
       f->nrows > 0 ? f->rows[0].check : "-", f->nrows > 1 ? f->rows[1].check : "-");
    cp_report_close(f);
    f = open_sample("1.6");
    if (f != NULL) {
        ok(f->nrows > 0 && f->rows[0].check[0] == '\0', "1.6: no check column: read as empty");
        cp_report_close(f);
    }
}

/* 1.6: nccl on the CUDA/NCCL stand-in (device memory) and self (host), allreduce of 1K
 * floats: the device cell has a device copy rate and no memcpy rate, the host cell the
 * other way round; 1.5 has no dcopy_gbs */
static void check_device_limit_1_6(void)
{
    cp_report_file_t *f = open_sample("1.6");
    if (f == NULL) {
        return;
    }
    int dev = 0, host = 0;
    for (size_t i = 0; i < f->nrows; i++) {
        const collprof_result_row_t *r = &f->rows[i];
        if (!strcmp(r->memory, "device")) {
            dev += r->dcopy_gbs > 0 && r->copy_gbs == 0 && r->copy1_gbs == 0;
        } else if (!strcmp(r->memory, "host")) {
            host += r->dcopy_gbs == 0 && r->copy_gbs > 0 && r->copy1_gbs > 0;
        }
    }
    ok(f->nrows == 2 && dev == 1 && host == 1,
       "1.6: the device cell has dcopy_gbs and no memcpy rate, the host cell memcpy rates only");
    cp_report_close(f);
    f = open_sample("1.5");
    if (f != NULL) {
        ok(f->nrows > 0 && f->rows[0].dcopy_gbs == 0, "1.5: no dcopy_gbs column: read as 0");
        cp_report_close(f);
    }
}

/* 1.11: /counters, from a run on a fake tree (COLLPROF_SYSFS_ROOT, docs/hdf5-schema.md): per
 * cell 22 rows of node 0, InfiniBand, EFA, net and host; 1.10 has none */
static void check_counters_1_11(void)
{
    cp_report_file_t *f = open_sample("1.11");
    if (f == NULL) {
        return;
    }
    int efa = 0, ib = 0, host = 0, other = 0;
    for (size_t i = 0; i < f->ncounters; i++) {
        const collprof_counter_row_t *r = &f->counters[i];
        other += r->cell != 0 || r->node != 0 || r->ops != 5;
        efa += !strcmp(r->source, "efa") && !strcmp(r->name, "rdmap0s31/1/retrans_pkts");
        ib += !strcmp(r->source, "ib") && !strcmp(r->name, "mlx5_0/1/port_xmit_data") &&
              !strcmp(r->unit, "B");
        host += !strcmp(r->source, "host") && !strcmp(r->kind, "counter");
    }
    ok(f->ncounters == 22 && efa == 1 && ib == 1 && host == 5 && other == 0,
       "1.11: /counters, 22 rows of cell 0 on node 0 (%zu; EFA, InfiniBand, host), 5 ops each",
       f->ncounters);
    cp_report_close(f);
    f = open_sample("1.10");
    if (f != NULL) {
        ok(f->ncounters == 0 && f->counters == NULL, "1.10: no /counters, none read");
        cp_report_close(f);
    }
}

/* 1.12: a replay (collprof --replay of the PARAM fixture with matching all-to-all-v splits,
 * --np 2 --backends self --replay-iters 3): 18 op rows, 8 type rows, a whole trace; the
 * columns of 1.12 (busBW with the bus factor, skew, straggler, the critical path); the 1.11
 * sample has no /replay */
static void check_replay_1_12(void)
{
    cp_report_file_t *f = open_sample("1.12");
    if (f == NULL) {
        return;
    }
    size_t ops = 0, types = 0, traces = 0, badbw = 0;
    double path = 0, crit = -1, whole = 0;
    for (size_t i = 0; i < f->nreplay; i++) {
        const collprof_replay_row_t *r = &f->replay[i];
        ops += !strcmp(r->what, "op");
        types += !strcmp(r->what, "type");
        if (!strcmp(r->what, "trace")) {
            traces++;
            crit = r->critical_us;
            whole = r->time_p50_us;
        }
        path += !strcmp(r->what, "op") && r->critical_us > 0 ? r->critical_us : 0;
        /* all-to-all-v of 2 ranks moves half its bytes over the links: (n-1)/n */
        badbw += !strcmp(r->op, "alltoallv") && !strcmp(r->status, "ok") &&
                 (r->algbw_gbs <= 0 || r->busbw_gbs < r->algbw_gbs * 0.5 * 0.999 ||
                  r->busbw_gbs > r->algbw_gbs * 0.5 * 1.001);
    }
    ok(f->nrows == 0 && ops == 18 && types == 8 && traces == 1,
       "1.12: a replay, no cells: 18 op rows, 8 type rows, one trace (%zu, %zu, %zu)", ops, types,
       traces);
    ok(crit > 0 && crit <= whole && path > crit * 0.999 && path < crit * 1.001,
       "1.12: the critical path (%g us) is the sum of its ops' parts (%g) and at most the "
       "replay (%g)",
       crit, path, whole);
    ok(badbw == 0, "1.12: all-to-all-v's busBW is half its algBW on 2 ranks");
    cp_report_close(f);
    f = open_sample("1.11");
    if (f != NULL) {
        ok(f->nreplay == 0 && f->replay == NULL, "1.11: no /replay, none read");
        cp_report_close(f);
    }
}

/* 1.9: a screen on 4 virtual nodes whose n3 is slow in collectives alone (COLLPROF_FAULT=
 * slowcoll): the rounds pass it, the validation's halving names it (a verify row) */
static void check_verify_1_9(void)
{
    cp_report_file_t *f = open_sample("1.9");
    if (f == NULL) {
        return;
    }
    int nodes = 0, slow = 0, verify = 0;
    for (size_t i = 0; i < f->nscreen; i++) {
        const collprof_screen_row_t *r = &f->screen[i];
        nodes += !strcmp(r->what, "node");
        slow += !strcmp(r->verdict, "slow") && !strcmp(r->host_a, "n3") && r->slow_partners == 0 &&
                strstr(r->evidence, "validation: allreduce over 4") != NULL;
        verify += !strcmp(r->what, "verify") && !strcmp(r->verdict, "failed") && r->node_a == -1 &&
                  r->partners == 4 && r->rounds == 7;
    }
    ok(nodes == 4 && slow == 1 && verify == 1 && f->nrows == 0,
       "1.9: n3 slow by the validation alone, one verify row (failed over 4 nodes, 7 rounds)");
    cp_report_close(f);
}

/* 1.12: a gloo screen on 4 virtual nodes with n1-n2 steered to a veth pair of their own
 * (tests/integration/screen_nic.sh, docs/hdf5-schema.md): the n1-n2 bandwidth row other-nic
 * via cps-n1 and cps-n2, the other bandwidth rows ok via cpnet0, latency rows unchecked; the
 * 1.11 sample's rows (none) and 1.10's read with the columns empty */
static void check_nic_1_12(void)
{
    cp_report_file_t *f = open_sample("1.12-nic");
    if (f == NULL) {
        return;
    }
    int other = 0, fine = 0, bad = 0;
    for (size_t i = 0; i < f->nlinks; i++) {
        const collprof_link_row_t *r = &f->links[i];
        int bw = !strcmp(r->kind, "bandwidth"), n12 = r->node_a == 0 && r->node_b == 1;
        other += bw && n12 && !strcmp(r->nic_path, "other-nic") && strstr(r->nic_via, "cps-n") &&
                 !strcmp(r->nic_expected, "cpnet0") && r->nic_ratio > 0.99 && r->nic_ratio < 1.1;
        fine += bw && !n12 && !strcmp(r->nic_path, "ok") && !strcmp(r->nic_via, "cpnet0");
        bad += !bw && r->nic_path[0] != '\0';
    }
    ok(other == 1 && fine == 5 && bad == 0,
       "1.12: the n1-n2 pair other-nic via cps-n*, %d others ok via cpnet0, latency unchecked",
       fine);
    cp_report_close(f);
    f = open_sample("1.10");
    if (f != NULL) {
        int empty = 1;
        for (size_t i = 0; i < f->nlinks; i++) {
            empty &= f->links[i].nic_path[0] == '\0' && f->links[i].nic_ratio == 0;
        }
        ok(f->nlinks > 0 && empty, "1.10: no nic_* columns: read as not checked");
        cp_report_close(f);
    }
}

/* 1.10: a screen on 8 virtual nodes under 2 leaf switches (slurm-local --switches 2, the
 * spine at 500 Mbit/s, n3 at 20 Mbit/s): every /links row has its path class, the /screen rows
 * the class references (path_refs), n3 slow with its pairs' classes; 1.9 has neither column */
static void check_paths_1_10(void)
{
    cp_report_file_t *f = open_sample("1.10");
    if (f == NULL) {
        return;
    }
    int same = 0, cross = 0, other = 0, refs = 0, slow = 0;
    for (size_t i = 0; i < f->nlinks; i++) {
        const collprof_link_row_t *r = &f->links[i];
        int sa = (r->node_a < 4) == (r->node_b < 4); /* n1-n4 under s1, n5-n8 under s2 */
        same += !strcmp(r->path, "same-switch") && sa;
        cross += !strcmp(r->path, "cross-switch") && !sa;
        other += strcmp(r->path, "same-switch") && strcmp(r->path, "cross-switch");
    }
    for (size_t i = 0; i < f->nscreen; i++) {
        const collprof_screen_row_t *r = &f->screen[i];
        refs += !strcmp(r->what, "node") && strstr(r->path_refs, "same-switch ") == r->path_refs &&
                strstr(r->path_refs, ", cross-switch ") != NULL;
        slow += !strcmp(r->verdict, "slow") && !strcmp(r->host_a, "n3") &&
                strstr(r->evidence, "(random, same-switch)") != NULL;
    }
    ok(same > 0 && cross > 0 && other == 0 && same + cross == (int)f->nlinks && refs == 8 &&
           slow == 1,
       "1.10: /links path classes by the switches (%d same-switch, %d cross-switch, %d other), "
       "path_refs on %d node rows, n3 slow by class",
       same, cross, other, refs);
    size_t procid = f->nenv;
    for (size_t i = 0; i < f->nenv; i++) {
        procid = !strcmp(f->env[i].name, "SLURM_PROCID") ? i : procid;
    }
    ok(!strcmp(cp_report_slurm(f, "partition"), "debug") && cp_report_slurm(f, "nope")[0] == 0 &&
           f->nslurm > 10 && procid < f->nenv && !strcmp(f->env[procid].value, "0"),
       "1.10: the slurm_* attributes (%zu, partition debug) and /environment (%zu) are kept",
       f->nslurm, f->nenv);
    cp_report_close(f);
    f = open_sample("1.9");
    if (f != NULL) {
        ok(f->nlinks > 0 && f->links[0].path[0] == '\0' && f->screen[0].path_refs[0] == '\0',
           "1.9: no path or path_refs column: read as empty (class any)");
        cp_report_close(f);
    }
}

/* 1.7: a screen on 4 virtual nodes with n3's link throttled (the /screen table); 1.6 has
 * none */
static void check_screen_1_7(void)
{
    cp_report_file_t *f = open_sample("1.7");
    if (f == NULL) {
        return;
    }
    int nodes = 0, slow = 0, healthy = 0;
    for (size_t i = 0; i < f->nscreen; i++) {
        const collprof_screen_row_t *r = &f->screen[i];
        nodes += !strcmp(r->what, "node");
        slow += !strcmp(r->verdict, "slow") && !strcmp(r->host_a, "n3") && r->slow_partners == 3;
        healthy += !strcmp(r->verdict, "healthy") && r->seed == 7 && r->ref_bw_gbs > 0;
    }
    ok(nodes == 4 && slow == 1 && healthy == 3 && f->nrows == 0 && f->nlinks >= 12,
       "1.7: /screen has 4 nodes, n3 slow with 3 of 3 partners, 3 healthy; pairs in /links");
    cp_report_close(f);
    f = open_sample("1.6");
    if (f != NULL) {
        ok(f->nscreen == 0 && f->screen == NULL, "1.6: no /screen: none read");
        cp_report_close(f);
    }
}

int main(void)
{
    make_hostile_files();
    cp_report_file_t *f = open_sample("1.0");
    if (f != NULL) {
        check_common(f, 0);
        ok(f->root.link_gbps == 0 && f->backends[0].link_gbps == 0,
           "1.0: link_gbps (added later) reads as 0");
        ok(f->nrows > 0 && f->rows[0].memory[0] == '\0', "1.0: memory (added in 1.1) is empty");
        ok(f->nrows > 0 && f->rows[0].timer[0] == '\0' && f->ranks[0].transport[0] == '\0' &&
               f->cells[0].prov == NULL,
           "1.0: timer, transport, per-rank provenance (added in 1.2) are absent");
        cp_report_close(f);
    }
    f = open_sample("1.1");
    if (f != NULL) {
        check_common(f, 1);
        ok(f->nrows > 0 && !strcmp(f->rows[0].memory, "host"), "1.1: memory is host");
        ok(f->backends[0].options[0] == '\0' && f->backends[0].study[0] == '\0',
           "1.1: /backends options and study (added in 1.2) are empty");
        ok(f->rows[0].timer[0] == '\0' && f->rows[0].allocation[0] == '\0' &&
               f->rows[0].device[0] == '\0' && f->ranks[1].transport[0] == '\0',
           "1.1: /results timer, allocation, device and /ranks transport (added in 1.2) are "
           "empty");
        cp_report_close(f);
    }
    f = open_sample("1.2");
    if (f != NULL) {
        check_common(f, 2);
        int ofi = -1;
        for (size_t i = 0; i < f->nbackends; i++) {
            ofi = strstr(f->backends[i].options, "ofi-channels=") ? (int)i : ofi;
        }
        ok(ofi >= 0 && !strcmp(f->backends[ofi].study, "alltoall") &&
               strstr(f->backends[ofi].options, "(default)") != NULL,
           "1.2: a backend's effective options and its study");
        check_provenance_1_2(f);
        cp_report_close(f);
    }
    f = open_sample("1.3"); /* 2 nodes x 2 ranks, mpi allreduce with --split node,cross */
    if (f != NULL) {
        int good = f->nrows == 3 && f->rows[0].split[0] == '\0' && f->rows[0].group_ranks == 0;
        for (size_t i = 1; i < f->nrows && good; i++) {
            good = !strcmp(f->rows[i].split, i == 1 ? "node" : "cross") &&
                   f->rows[i].group_ranks == 2 && !strcmp(f->rows[i].status, "ok");
        }
        ok(good, "1.3: a cell on every rank, then on node and cross groups of 2 ranks");
        ok(f->rows[0].copy_gbs > 0 && f->rows[0].copy1_gbs > 0 && f->nranks == 4 &&
               strstr(f->ranks[3].log, "_r3.log") != NULL,
           "1.3: the memory-copy limit of each cell, and each rank's log (%s)", f->ranks[3].log);
        cp_report_close(f);
    }
    f = open_sample("1.3");
    if (f != NULL) {
        ok(f->rows[0].repeats == 0 && f->rows[0].ci_level == 0 && f->cells[0].rep_p50 == NULL,
           "1.3: no repeats columns: read as 0, no per-repeat data");
        cp_report_close(f);
    }
    check_repeats_1_4();
    check_check_1_8();
    check_nonblocking_1_5();
    check_policy_1_5();
    check_device_limit_1_6();
    check_screen_1_7();
    check_verify_1_9();
    check_counters_1_11();
    check_replay_1_12();
    check_nic_1_12();
    check_paths_1_10();
    f = open_sample("1.2");
    if (f != NULL) {
        ok(f->nrows > 0 && f->rows[0].split[0] == '\0' && f->rows[0].group_ranks == 0,
           "1.2: no split column: every cell on every rank");
        cp_report_close(f);
    }
    /* the sample of the current version is the newest there is */
    char current[32];
    snprintf(current, sizeof(current), "%d.%d", COLLPROF_SCHEMA_VERSION_MAJOR,
             COLLPROF_SCHEMA_VERSION_MINOR);
    f = open_sample(current);
    ok(f != NULL, "a sample file of the current schema %s exists", current);
    cp_report_close(f);
    hostile_files();
    return tap_done();
}
