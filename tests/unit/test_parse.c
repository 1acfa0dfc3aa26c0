/* Size parsing, option parsing and matrix files. */
#include "config.h"

#include "cli/cli.h"
#include "base/util.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int parse_ok(const char *s, uint64_t want)
{
    uint64_t v = 0;
    char err[256];
    return cp_parse_size(s, &v, err, sizeof(err)) == 0 && v == want;
}

static int parse_bad(const char *s)
{
    uint64_t v = 12345;
    char err[256] = "";
    return cp_parse_size(s, &v, err, sizeof(err)) == -1 && v == 12345 && err[0] != '\0';
}

static int cli(const char *line, cp_options_t *opt, char *err, size_t len)
{
    char buf[2048], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof(buf), "collprof %s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " ")) {
        argv[argc++] = t;
    }
    argv[argc] = NULL;
    return cp_cli_parse(argc, argv, opt, err, len);
}

static const char *write_tmp(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/cp_test_matrix_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        return NULL;
    }
    close(fd);
    return path;
}

/* --link-sweep: its own spec (sendrecv float32 at the two sizes), and what it refuses. */
static void test_link_sweep(void)
{
    cp_options_t opt;
    char err[1024];
    ok(cli("--link-sweep --backends gloo -n 7", &opt, err, sizeof(err)) == 0 && opt.link_sweep &&
           opt.specs[0].nops == 1 && opt.specs[0].ops[0] == COLLPROF_OP_SENDRECV &&
           opt.specs[0].sizes_are_bytes && opt.specs[0].nsizes == 2 && opt.specs[0].sizes[0] == 8 &&
           opt.specs[0].sizes[1] == (4u << 20) && opt.specs[0].iters == 7 &&
           opt.specs[0].nbackends == 1,
       "--link-sweep: sendrecv at 8 B and 4 MiB, -n and --backends kept");
    cp_cli_free(&opt);
    ok(cli("--link-sweep --sweep-sizes 64,1M", &opt, err, sizeof(err)) == 0 &&
           opt.specs[0].sizes[0] == 64 && opt.specs[0].sizes[1] == (1u << 20),
       "--sweep-sizes 64,1M");
    cp_cli_free(&opt);
    ok(cli("--link-sweep --counts 1M", &opt, err, sizeof(err)) == -1 &&
           strstr(err, "--link-sweep sets its own sizes") != NULL,
       "--link-sweep with --counts refused: %s", err);
    ok(cli("--sweep-sizes 4M,8", &opt, err, sizeof(err)) == -1 &&
           cli("--sweep-sizes 6,4M", &opt, err, sizeof(err)) == -1 &&
           cli("--sweep-sizes 8", &opt, err, sizeof(err)) == -1,
       "--sweep-sizes: S below L, multiples of 4, two of them");
}

/* cp_nofile_fit: the soft open-file limit raised as far as the hard one allows (last: it
 * lowers this process's limits for good) */
static void test_nofile(void)
{
    struct rlimit rl = {.rlim_cur = 40, .rlim_max = 100};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        ok(1, "# SKIP cannot set RLIMIT_NOFILE here");
        return;
    }
    long soft = 0, hard = 0;
    int rc = cp_nofile_fit(30, &soft, &hard);
    ok(rc == 0 && soft == 40 && hard == 100, "nofile 30 of 40: left as it is (%ld, %ld)", soft,
       hard);
    rc = cp_nofile_fit(80, &soft, &hard);
    ok(rc == 0 && soft == 80 && hard == 100, "nofile 80: soft raised to 80 (%ld, %ld)", soft, hard);
    rc = cp_nofile_fit(150, &soft, &hard);
    ok(rc == -1 && soft == 100 && hard == 100,
       "nofile 150 over the hard 100: refused, soft at the hard limit (%ld, %ld)", soft, hard);
}

int main(void)
{
    cp_options_t opt;
    char err[1024];

    ok(parse_ok("1", 1), "1");
    ok(parse_ok("1K", 1024), "1K");
    ok(parse_ok("4M", 4u << 20), "4M");
    ok(parse_ok("16m", 16u << 20), "16m");
    ok(parse_ok("1G", 1u << 30), "1G");
    ok(parse_ok("4MB", 4u << 20), "4MB");
    ok(parse_ok("1048576", 1048576), "plain digits");
    ok(parse_bad("4Q"), "4Q rejected");
    ok(parse_bad("-1"), "-1 rejected");
    ok(parse_bad("0"), "0 rejected");
    ok(parse_bad("0K"), "0K rejected");
    ok(parse_bad(""), "empty rejected");
    ok(parse_bad("M"), "suffix alone rejected");
    ok(parse_bad("99999999999999999999999"), "overflow rejected");
    ok(parse_bad("2T"), "above 1T rejected");
    ok(parse_bad("4M "), "trailing space rejected");
    ok(parse_bad("+4"), "sign rejected");

    test_link_sweep();
    ok(cli("", &opt, err, sizeof(err)) == 0, "no options");
    ok(opt.nspecs == 1 && opt.specs[0].nops == 4 && opt.specs[0].nsizes == 3 &&
           opt.specs[0].sizes[0] == (1u << 20) && opt.specs[0].sizes[2] == (16u << 20) &&
           opt.specs[0].ndtypes == 1 && opt.specs[0].iters == 20 && opt.specs[0].warmup == 5 &&
           opt.check == 1 && opt.specs[0].nvariants == 0 && opt.specs[0].nbackends == 0,
       "default matrix: 4 ops x 1M,4M,16M float32, all backends and variants");
    cp_cli_free(&opt);
    ok(opt.check_mode == CP_CHECK_LAST && opt.check_k == 0, "default check: last");
    const struct {
        const char *args;
        int check;
        cp_check_t mode;
        int k;
    } checks[] = {{"--check every", 1, CP_CHECK_EVERY, 0},
                  {"--check=sample:10", 1, CP_CHECK_SAMPLE, 10},
                  {"-c 0", 0, CP_CHECK_NONE, 0},
                  {"--check every -c 1", 1, CP_CHECK_LAST, 0},
                  {"--check sample:4 --sync batch:1", 1, CP_CHECK_SAMPLE, 4}};
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
        int rc = cli(checks[i].args, &opt, err, sizeof(err));
        ok(rc == 0 && opt.check == checks[i].check && opt.check_mode == checks[i].mode &&
               opt.check_k == checks[i].k,
           "%s: check %d, mode %d, K %d", checks[i].args, opt.check, (int)opt.check_mode,
           opt.check_k);
        if (rc == 0) {
            cp_cli_free(&opt);
        }
    }

    ok(cli("--ops all -d all -o all", &opt, err, sizeof(err)) == 0 && opt.specs[0].nops == 14 &&
           opt.specs[0].ops[11] == COLLPROF_OP_ALLGATHERV &&
           opt.specs[0].ops[12] == COLLPROF_OP_GATHERV &&
           opt.specs[0].ops[13] == COLLPROF_OP_SCATTERV && opt.specs[0].ndtypes == 10 &&
           opt.specs[0].nredops == 4,
       "all ops (allgatherv, gatherv, scatterv among them; no non-blocking one), dtypes, redops");
    cp_cli_free(&opt);

    ok(cli("--ops Gatherv,scatter_v", &opt, err, sizeof(err)) == 0 && opt.specs[0].nops == 2 &&
           opt.specs[0].ops[0] == COLLPROF_OP_GATHERV &&
           opt.specs[0].ops[1] == COLLPROF_OP_SCATTERV,
       "gatherv and scatterv by name, any case, with '_'");
    cp_cli_free(&opt);

    ok(cli("-b 4 -e 1M -f 4", &opt, err, sizeof(err)) == 0 && opt.specs[0].sizes_are_bytes &&
           opt.specs[0].nsizes == 10 && opt.specs[0].sizes[9] == (1u << 20),
       "byte sweep 4..1M x4 has 10 sizes");
    cp_cli_free(&opt);

    ok(cli("--ops allreduce,bcast,all_to_all", &opt, err, sizeof(err)) == 0 &&
           opt.specs[0].nops == 3 && opt.specs[0].ops[1] == COLLPROF_OP_BROADCAST,
       "op aliases");
    cp_cli_free(&opt);

    struct {
        const char *line, *needle;
    } bad[] = {
        {"--ops allreduce,foo", "unknown operation 'foo'"},
        {"-d float128", "unknown dtype 'float128'"},
        {"-o avg", "unknown reduction 'avg'"},
        {"--counts 4Q", "unknown suffix"},
        {"--counts -1", "not a positive number"},
        {"--counts 0", "zero"},
        {"--counts 1M,,4M", "empty item"},
        {"--np 0", "--np"},
        {"--np 100000", "--np"},
        {"-n 0", "iters"},
        {"-n 10000000", "iters"},
        {"--counts 1M -b 1K", "either --counts or -b"},
        {"-b 4M -e 1K", "larger than"},
        {"--bogus", "unknown option '--bogus'"},
        {"--inplace sideways", "--inplace"},
        {"--imbalance spread:2", "spread"},
        {"--imbalance moe:0", "moe"},
        {"--imbalance zipf", "unknown imbalance"},
        {"--imbalance file:/nonexistent/x", "cannot read traffic matrix"},
        {"--matrix /nonexistent/m", "cannot read matrix file"},
        {"-c 2", "-c"},
        {"--sync maybe", "--sync"},
        {"--split nodes", "--split"},
        {"--split node --link-sweep", "--link-sweep"},
        {"extra", "unexpected argument"},
        {"--np", "needs a value"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        int rc = cli(bad[i].line, &opt, err, sizeof(err));
        ok(rc == -1 && strstr(err, bad[i].needle) != NULL && strchr(err, '\n') == NULL,
           "rejects '%s' with one line naming the problem (%s)", bad[i].line, err);
    }

    const char *m = write_tmp("# two blocks\nops=allreduce counts=1K,2K\n\n  ops=alltoallv "
                              "imbalance=linear,spread:0.5 iters=3 # comment\n");
    ok(m && cli("--matrix", &opt, err, sizeof(err)) == -1, "--matrix needs a value");
    char line[256];
    snprintf(line, sizeof(line), "--matrix %s -n 7", m);
    ok(cli(line, &opt, err, sizeof(err)) == 0 && opt.nspecs == 2, "matrix file with 2 blocks");
    ok(opt.nspecs == 2 && opt.specs[0].nops == 1 && opt.specs[0].nsizes == 2 &&
           opt.specs[0].iters == 7 && opt.specs[0].line == 2,
       "first block inherits -n 7 and records its line");
    ok(opt.nspecs == 2 && opt.specs[1].ops[0] == COLLPROF_OP_ALLTOALLV && opt.specs[1].nimb == 2 &&
           opt.specs[1].iters == 3 && opt.specs[1].nsizes == 3,
       "second block overrides iters, keeps default sizes");
    cp_cli_free(&opt);
    unlink(m);

    const char *bads[][2] = {
        {"ops=allreduce\nops=nope\n", ":2: unknown operation 'nope'"},
        {"ops=allreduce colour=red\n", ":1: unknown key 'colour'"},
        {"allreduce\n", ":1: 'allreduce' is not key=value"},
        {"# only comments\n\n", "has no lines"},
        {"counts=1M,4X\n", ":1: counts: '4X' has an unknown suffix"},
    };
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        m = write_tmp(bads[i][0]);
        snprintf(line, sizeof(line), "--matrix %s", m);
        err[0] = '\0';
        ok(cli(line, &opt, err, sizeof(err)) == -1 && strstr(err, bads[i][1]) != NULL,
           "bad matrix file %zu: %s", i, err);
        unlink(m);
    }

    char buf[64];
    ok(!strcmp(cp_fmt_thousands(1048576, buf, sizeof(buf)), "1,048,576"), "thousands");
    ok(!strcmp(cp_fmt_thousands(999, buf, sizeof(buf)), "999"), "thousands < 1000");
    ok(!strcmp(cp_fmt_bytes(4u << 20, buf, sizeof(buf)), "4.00 MB"), "4.00 MB");
    test_nofile();
    return tap_done();
}
