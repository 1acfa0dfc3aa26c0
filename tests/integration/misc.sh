#!/bin/sh
# Single rank without a launcher; file names never collide or overwrite;
# alltoallv traffic patterns including a traffic-matrix file; matrix files.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun

d="$WORK/single"
mkdir -p "$d"
cp_run --backends mpi --ops allreduce,allgather --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
[ "$rc" -eq 0 ] && grep -q 'running as a single rank' "$WORK/err" &&
    grep -q '^world: *1 rank on 1 node: ' "$(summary_of "$d")"
ok $? "no launcher: one rank, with a warning"

# pre-create the names of the next seconds: they must survive untouched
d="$WORK/collide"
mkdir -p "$d"
now=$(date -u +%s)
for k in 0 1 2 3 4 5; do
    ts=$(date -u -d "@$((now + k))" +%Y%m%dT%H%M%SZ)
    echo precious >"$d/collprof_${ts}_w2.txt"
done
cp_run --np 2 --ops allreduce --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
cp_run --np 2 --ops allreduce --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
[ "$(grep -l '^precious$' "$d"/*.txt | wc -l)" -eq 6 ]
ok $? "existing files are never overwritten"
[ "$(grep -l '^result: *PASSED' "$d"/*.txt | wc -l)" -eq 2 ] && ls "$d" | grep -q '_w2_2\.txt$'
ok $? "runs in the same second get distinct names"

d="$WORK/a2av"
mkdir -p "$d"
printf '# 3x3 skewed traffic\n0 1 5\n2 0 1\n1 1 0\n' >"$WORK/tm.txt"
cp_run --np 3 --backends mpi --ops alltoallv --counts 30K --inplace both -n 3 -w 1 --variants default \
    --imbalance "uniform,linear,spread:0.8,moe:1:4,file:$WORK/tm.txt" --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ "$(grep -c 'AllToAllv.* ms | AlgBW.*#wrong: 0 ' "$s")" -eq 7 ]
ok $? "alltoallv: every pattern exact out of place, symmetric ones in place (exit $rc)"
[ "$(grep -c 'unsupported: .*needs symmetric traffic' "$s")" -eq 3 ]
ok $? "alltoallv in place with asymmetric traffic is unsupported, not wrong"
grep -A1 'AllToAllv (file:tm.txt):' "$s" | grep -q 'r0 201072/100536 r1 100536/67024 r2 67024/201072'
ok $? "per-rank bytes follow the traffic matrix"

d="$WORK/matrix"
mkdir -p "$d"
cp_run --np 2 --matrix "$COLLPROF_SRCDIR/share/collprof/matrices/quick.matrix" -n 2 -w 0 \
    --output-dir "$d"
check_clean_run "$d" "quick.matrix"

# the device-memory path (host copies, upload, run, download, check) on host memory
d="$WORK/staged"
mkdir -p "$d"
COLLPROF_TEST_STAGED=1 cp_run --np 3 --backends mpi --ops all --counts 3K --inplace both \
    -d int32,float64 -o sum,max -n 2 -w 1 --variants default --output-dir "$d" -v
check_clean_run "$d" "staged buffers, every op in and out of place"
grep -q 'filled and checked through host copies' "$WORK/err"
ok $? "staged buffers: the staging path was taken"
COLLPROF_FAULT=wrong:2 COLLPROF_TEST_STAGED=1 cp_run --np 3 --backends mpi --ops allgather \
    --counts 3K -n 2 -w 1 --variants default --output-dir "$d"
[ "$rc" -eq 1 ]
ok $? "staged buffers: a corrupted element is still caught (exit $rc)"

# memory types: a backend without device memory gives unsupported rows, not errors
# (-w 5 -n 2: more warm-up than timed iterations, which once overflowed the samples; issue 14 B3)
d="$WORK/mem"
mkdir -p "$d"
cp_run --np 2 --backends mpi --ops allreduce --counts 1K --mem host,device -n 2 -w 5 \
    --variants default --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && grep -q 'AllReduce (device): *unsupported: mpi does not offer device memory' "$s" &&
    [ "$(grep -c 'AllReduce: .* ms | AlgBW' "$s")" -eq 1 ]
ok $? "--mem host,device on mpi: one measured host cell, one unsupported device cell (exit $rc)"
cp_run --mem gpu --dry-run
[ "$rc" -eq 2 ] && grep -q "unknown memory type 'gpu'" "$WORK/err"
ok $? "--mem gpu: one-line error, exit 2"
done_testing
