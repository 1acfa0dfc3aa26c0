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

# pre-create the names of the next minute (runs under sanitizers on a loaded machine take many
# seconds): they must survive untouched, and each run must take another name
d="$WORK/collide"
mkdir -p "$d"
now=$(date -u +%s)
for k in $(seq 0 59); do
    ts=$(date -u -d "@$((now + k))" +%Y%m%dT%H%M%SZ)
    echo precious >"$d/collprof_${ts}_w2.txt"
done
cp_run --np 2 --ops allreduce --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
cp_run --np 2 --ops allreduce --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
[ "$(grep -l '^precious$' "$d"/*.txt | wc -l)" -eq 60 ]
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

# allgatherv from the same file: rank r's block in proportion to its row's sum (6, 3, 2 of 11)
d="$WORK/agv"
mkdir -p "$d"
cp_run --np 3 --backends mpi --ops allgatherv --counts 30K --inplace both -n 3 -w 1 \
    --variants default --imbalance "file:$WORK/tm.txt" --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ "$(grep -c 'AllGatherv.* ms | AlgBW.*#wrong: 0 ' "$s")" -eq 2 ]
ok $? "allgatherv from a traffic-matrix file: exact in and out of place (exit $rc)"
# 16757 + 8378 + 5585 = 30720 float32 (the leftover element to rank 0), each sent to 3 ranks
grep -A1 'AllGatherv (file:tm.txt):' "$s" |
    grep -q 'r0 201084/122880 r1 100536/122880 r2 67020/122880'
ok $? "allgatherv per-rank bytes: its block to every rank, the whole output received"
"${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}" export --csv "${s%.txt}.h5" \
    >"$WORK/agv.csv" 2>&1
# S = the whole gathered output, 30720 float32
[ "$(grep -c '^[0-9]*,mpi,default,allgatherv,float32,none,0,[01],file:tm.txt,30720,122880,' \
    "$WORK/agv.csv")" -eq 2 ]
ok $? "allgatherv, its pattern, count and bytes (the whole output) are in the result file"
COLLPROF_FAULT=wrong:2 cp_run --np 3 --backends mpi --ops allgatherv --counts 3K -n 2 -w 1 \
    --variants default --imbalance moe:1:4 --output-dir "$d"
[ "$rc" -eq 1 ] && grep -q '#wrong: 1 ' "$(ls -t "$d"/*.txt | head -n 1)"
ok $? "allgatherv: a corrupted element on rank 2 is caught (exit $rc)"

# gatherv and scatterv from the same file, rooted at 1: rank r's block as allgatherv's, sent to
# (received from) the root only; S the total; a corrupted element on the root is caught in both
d="$WORK/rv"
mkdir -p "$d"
cp_run --np 3 --backends mpi --ops gatherv,scatterv --root 1 --counts 30K -n 3 -w 1 \
    --variants default --imbalance "file:$WORK/tm.txt" --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ "$(grep -c 'v (file:tm.txt, root 1):.* ms | AlgBW.*#wrong: 0 ' "$s")" -eq 2 ]
ok $? "gatherv, scatterv from a traffic-matrix file, root 1: exact (exit $rc)"
grep -A1 '^  Gatherv (file:tm.txt, root 1):' "$s" | grep -q 'r0 67028/0 r1 33512/122880 r2 22340/0' &&
    grep -A1 '^  Scatterv (file:tm.txt, root 1):' "$s" |
    grep -q 'r0 0/67028 r1 122880/33512 r2 0/22340'
ok $? "gatherv, scatterv per-rank bytes: each block to or from the root only"
"${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}" export --csv "${s%.txt}.h5" \
    >"$WORK/rv.csv" 2>&1
[ "$(grep -c '^[0-9]*,mpi,default,[a-z]*v,float32,none,1,0,file:tm.txt,30720,122880,' \
    "$WORK/rv.csv")" -eq 2 ]
ok $? "gatherv, scatterv: root, pattern, count and bytes (the total) are in the result file"
rm -f "$d"/*
COLLPROF_FAULT=wrong:1 cp_run --np 3 --backends mpi --ops gatherv,scatterv --root 1 --counts 3K \
    -n 2 -w 1 --variants default --imbalance linear --output-dir "$d"
[ "$rc" -eq 1 ] && [ "$(grep -c 'v (linear, root 1):.*#wrong: 1 ' "$(summary_of "$d")")" -eq 2 ]
ok $? "gatherv, scatterv: a corrupted element on the root is caught (exit $rc)"
# in place, 2 elements over 4 ranks: ranks 2 and 3 get empty blocks, rank 3's at the buffer's
# end; the injected fault has no element of rank 3's to corrupt (it once wrote past the buffer:
# the sanitizer stage catches that)
rm -f "$d"/*
COLLPROF_FAULT=wrong:3 cp_run --np 4 --backends self --ops scatterv --inplace in --counts 2 \
    -d int32 -n 2 -w 0 --output-dir "$d"
[ "$rc" -eq 0 ] && grep -q 'Scatterv (in-place):.*#wrong: 0 ' "$(summary_of "$d")"
ok $? "scatterv in place, rank 3's block empty and last: no element to corrupt (exit $rc)"

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
# --log-dir: one log per rank, every step timestamped, whatever -v says
d="$WORK/logs"
mkdir -p "$d"
cp_run --np 2 --backends mpi --ops allreduce --counts 4K -n 2 -w 1 --variants default \
    --log-dir "$d" --output-dir "$d"
n=0
for f in "$d"/collprof_*_r0.log "$d"/collprof_*_r1.log; do
    [ -s "$f" ] &&
        ! grep -v -q -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z ' "$f" &&
        grep -q 'backend mpi: initialising' "$f" && grep -q 'allocated and touched' "$f" &&
        grep -q '1 warm-up and 2 timed iterations' "$f" && grep -q 'verification: 0 wrong' "$f" &&
        grep -q 'backend mpi: finalized' "$f" && grep -q 'finished: exit status 0' "$f" &&
        n=$((n + 1))
done
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && ! grep -q '^\[20' "$WORK/err"
ok $? "--log-dir: 2 logs, every line ISO-8601, start-up to finalize; the console stays quiet"
s=$(summary_of "$d")
l=$(grep '^logs:' "$s")
case $l in *"$d"/collprof_*_r\*.log*) true ;; *) false ;; esac
ok $? "--log-dir: the summary names the logs ($l)"
if [ -x "${COLLPROF_REPORT:-}" ] || [ -x "$(dirname "$COLLPROF_BIN")/collprof-report" ]; then
    rep=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
    [ "$("$rep" summary "${s%.txt}.h5" 2>/dev/null | grep '^logs:')" = "$l" ]
    ok $? "--log-dir: the result file records them (collprof-report summary prints the same line)"
fi
cp_run --np 2 --ops allreduce --counts 4K -n 2 --log-dir "$WORK/nowhere"
[ "$rc" -eq 2 ] && [ "$(grep -c . "$WORK/err")" -eq 1 ] && grep -q 'log directory .* --log-dir' "$WORK/err"
ok $? "--log-dir: a missing directory is one line and exit status 2"

# the memory-copy limit beside busBW
s=$(summary_of "$d")
grep -q '^limit: ' "$s" &&
    grep -q -E 'AllReduce: .* \| BusBW [0-9.]+% of memcpy [0-9]+\.[0-9]+ GB/s$' "$s"
ok $? "the summary prints busBW as a percentage of the measured memory-copy rate"

# the memory guard takes the job's cgroup limit where it is below the machine's memory (Slurm's
# ConstrainRAMSpace, a container): in a 300 MiB memory cgroup made here (v1, or v2 with the
# memory controller), where this machine lets the test make one
cg=
for parent in /sys/fs/cgroup/memory /sys/fs/cgroup; do
    [ -w "$parent" ] || continue
    [ -f "$parent/memory.limit_in_bytes" ] && lim=memory.limit_in_bytes || lim=memory.max
    [ -f "$parent/$lim" ] || [ -f "$parent/cgroup.subtree_control" ] || continue
    mkdir "$parent/collprof-test-$$" 2>/dev/null || continue
    if echo $((300 * 1024 * 1024)) >"$parent/collprof-test-$$/$lim" 2>/dev/null; then
        cg="$parent/collprof-test-$$"
        break
    fi
    rmdir "$parent/collprof-test-$$"
done
if [ -n "$cg" ]; then
    rc=0
    sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" timeout -k 10 "$CP_TIMEOUT" \
        "$COLLPROF_BIN" --np 2 --backends self --ops allreduce --counts 64M -n 1 -w 0 \
        --output-dir "$WORK" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    rmdir "$cg" 2>/dev/null
    [ "$rc" -eq 2 ] && [ "$(grep -c . "$WORK/err")" -eq 1 ] &&
        grep -q "(80 % of 300.0 MiB, the cgroup's memory limit): use smaller --counts" "$WORK/err"
    ok $? "in a 300 MiB cgroup a 1 GiB plan is refused against the cgroup's limit: $(head -c 300 "$WORK/err")"
else
    echo "ok $((tap_n += 1)) - the cgroup's memory limit # SKIP cannot make a memory cgroup here"
fi

done_testing
