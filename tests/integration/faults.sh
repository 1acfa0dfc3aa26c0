#!/bin/sh
# Failures are caught and reported: a corrupted result fails the run; a
# backend that fails to load or initialise is reported and skipped while
# the others run; a dead rank does not hang the job.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun

# a corrupted element on rank 1 must be counted and fail the run
d="$WORK/corrupt"
mkdir -p "$d"
COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends mpi --ops allreduce,alltoall --counts 4K -n 2 -w 0 \
    --variants default --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 1 ]
ok $? "corrupted result: exit status 1 (got $rc)"
grep -q 'AllReduce: .*#wrong: 1 .*WRONG' "$s" && grep -q '^result: *FAILED' "$s" &&
    grep -q '^#wrong: *2$' "$s"
ok $? "corrupted result: summary shows #wrong 1 per cell and FAILED"
awk '$3 == "allreduce" && $12 == 1 { found = 1 } END { exit !found }' "$WORK/out"
ok $? "corrupted result: the table shows #wrong 1"
COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends mpi --ops allreduce --counts 4K -n 2 -w 0 -c 0 \
    --variants default --output-dir "$d"
[ "$rc" -eq 0 ]
ok $? "with -c 0 nothing is checked (exit $rc)"

# plugins that fail: one exports no entry symbol, one fails init
if [ -e "$CP_TEST_PLUGINS/collprof_failinit.so" ]; then
    d="$WORK/plugins"
    mkdir -p "$d"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --list
    grep -q '^nosym: NOT AVAILABLE: .*does not export collprof_backend_v1' "$WORK/out" &&
        grep -q '^failinit 0: ' "$WORK/out" && grep -q '^mpi ' "$WORK/out"
    ok $? "--list shows the broken plugin's reason and the others"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --ops allreduce \
        --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
    s=$(summary_of "$d")
    [ "$rc" -eq 0 ] && grep -q 'backend nosym skipped' "$WORK/err" &&
        grep -q 'backend failinit skipped: initialisation failed on rank 0' "$WORK/err" &&
        grep -q 'simulated initialisation failure' "$WORK/err" &&
        grep -q 'failinit / default' "$s" && grep -q 'skipped: backend failinit is not initialised' "$s" &&
        grep -q 'mpi / default' "$s" && grep -q '^result: *PASSED' "$s"
    ok $? "failing plugins are reported and skipped, mpi still runs (exit $rc)"
    COLLPROF_PLUGIN_PATH="relative/dir:$COLLPROF_PLUGIN_PATH" cp_run --list
    grep -q "ignoring relative plugin directory 'relative/dir'" "$WORK/err"
    ok $? "relative plugin directories are refused"
fi

# a rank that dies mid-run must not leave the others waiting
d="$WORK/dead"
mkdir -p "$d"
COLLPROF_FAULT=exit:1 cp_run --np 3 --ops allreduce --counts 4K -n 200 -w 0 --variants default \
    --output-dir "$d"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]
ok $? "a rank that exits mid-run ends the job with an error, no hang (exit $rc)"
sleep 1
! pgrep -f "collprof --np 3 --ops allreduce --counts 4K -n 200" >/dev/null
ok $? "no orphan ranks left"
done_testing
