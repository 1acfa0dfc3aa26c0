#!/bin/sh
# NCCL backend without a GPU (the machines this project builds on): the
# plugin loads and lists its variants, its initialisation fails on every rank
# and one note (not an error) says what is missing (no GPU, no GPU driver, a
# driver too old for the runtime), its cells are skipped while the other
# backends run with exit status 0, and asking for NCCL alone fails clearly.
# collprof --replay behaves alike.  On the CUDA/NCCL stand-in: each missing
# piece gives its own note, and a GPU that is there and fails (cudaSetDevice)
# stays an error.  With a GPU, use make check-gpu (tests/integration/nccl_gpu.sh).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_nccl.so" ] || skip_all "the NCCL backend was not built"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    skip_all "a GPU is present: make check-gpu tests the NCCL backend on it"
fi
export NCCL_SOCKET_IFNAME=lo

# --list: the backend, its library, device memory and its variants
cp_run --list
ok $rc "--list: exit status 0"
sed -n '/^nccl /,/^$/p' "$WORK/out" >"$WORK/list"
grep -q '^  library: *NCCL [0-9]' "$WORK/list"
ok $? "--list: nccl with its NCCL version"
grep -q '^  memory: *device$' "$WORK/list"
ok $? "--list: nccl works on device memory"
grep -q '^  dtypes:.* float16 bfloat16 ' "$WORK/list"
ok $? "--list: float16 and bfloat16 offered"
for v in ring-ll tree-simple ring-simple+reg ring-ll128+graph nvls-simple pat-simple p2p reg+graph; do
    grep -q "^    $v  " "$WORK/list"
    ok $? "--list: variant $v"
done
grep -q '^    tree-ll .*\[allreduce\]' "$WORK/list"
ok $? "--list: tree applies to allreduce only"
! grep -q -E '^    (pat|nvls|collnetdirect|collnetchain|nvlstree)-ll' "$WORK/list"
ok $? "--list: CollNet, NVLS and PAT only with the Simple protocol"
! grep -q '^    ctran-' "$WORK/list"
ok $? "--list: no CTran variants with plain NCCL"

# the one note that says why nccl is skipped, whatever is missing here
NOTE='^collprof: note: backend nccl skipped: (no GPU|no GPU driver|GPU driver too old) on rank 0: '

# no 'error' in $WORK/out or $WORK/err, the cell counts included (they name only the
# statuses that occurred)
no_error() {
    ! grep -q -i error "$WORK/out" "$WORK/err"
}

# NCCL next to self: one note on stderr, NCCL cells skipped, self's measured, exit 0
d="$WORK/self"
mkdir -p "$d"
cp_run --np 2 --backends nccl,self --ops allreduce --counts 1K -n 2 --output-dir "$d"
ok $rc "nccl,self without a GPU: exit status 0"
no_error
ok $? "nccl,self: no 'error' on stdout or stderr ($(grep -h -i -m 1 error "$WORK/out" \
    "$WORK/err"))"
n=$(grep -c -i nccl "$WORK/err")
[ "$n" -eq 1 ]
ok $? "nccl,self: one line about nccl on stderr (got $n)"
grep -q -E "$NOTE"'[a-z]' "$WORK/err"
ok $? "nccl,self: it is a note that says what is missing ($(head -n 1 "$WORK/err"))"
grep -q -E '^  nccl  .*not initialised: (no GPU|no GPU driver|GPU driver too old) on rank 0' \
    "$WORK/out" && grep -q -E '^# cells: 1 ok(, [0-9]+ skipped)?; #wrong 0: PASSED$' "$WORK/out"
ok $? "nccl,self: the console table folds nccl's cells into one line, self's cell ok"
s=$(summary_of "$d")
grep -q -E '^backend: *nccl .*NOT INITIALISED: (no GPU|no GPU driver|GPU driver too old) on rank 0' \
    "$s" && grep -q '^result: *PASSED' "$s" && ! grep -i -q 'error:' "$s"
ok $? "nccl,self: summary header records why nccl did not run, PASSED, no error"

# NCCL next to MPI: the same, over two libraries that both run collectives
if [ -n "${CP_MPIRUN:-}" ] && [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    d="$WORK/both"
    mkdir -p "$d"
    cp_run --np 2 --backends nccl,mpi --ops allreduce --counts 1K -n 3 -w 1 --output-dir "$d"
    ok $rc "nccl,mpi without a GPU: exit status 0"
    n=$(grep -c -i nccl "$WORK/err")
    [ "$n" -eq 1 ] && grep -q -E "$NOTE" "$WORK/err" && no_error
    ok $? "nccl,mpi: one note about nccl on stderr (got $n), no 'error'"
    s=$(summary_of "$d")
    awk '/^== nccl \// { n = 1; next } /^== / { n = 0 } n && /AllReduce/ && !/skipped: / { bad++ }
         END { exit bad ? 1 : 0 }' "$s"
    ok $? "nccl,mpi: every nccl cell is skipped"
    awk '/^== mpi \// { m = 1; next } /^== / { m = 0 }
         m && /AllReduce:/ { n++; if ($0 !~ /#wrong: 0 /) bad++ } END { exit (n > 0 && !bad) ? 0 : 1 }' "$s"
    ok $? "nccl,mpi: every mpi cell measured with #wrong 0"
    grep -q '^result: *PASSED' "$s"
    ok $? "nccl,mpi: summary says PASSED"
fi

# NCCL alone: nothing can run, so the note, then a clear error and a non-zero exit
d="$WORK/alone"
mkdir -p "$d"
cp_run --np 2 --backends nccl --ops allreduce --counts 1K -n 1 -w 0 --variants default \
    --output-dir "$d"
[ "$rc" -ne 0 ]
ok $? "--backends nccl alone without a GPU: non-zero exit ($rc)"
grep -q -E "$NOTE" "$WORK/err"
ok $? "--backends nccl alone: the note says what is missing"
grep -q 'no backend could run' "$WORK/err"
ok $? "--backends nccl alone: says no backend could run"

# a single rank too (no launcher, no PMIx server): same clean failure
cp_run --backends nccl --ops barrier -n 1 -w 0 --variants default --output-dir "$d"
[ "$rc" -ne 0 ] && grep -q -E "$NOTE" "$WORK/err"
ok $? "one rank, no GPU: clean failure"

# --replay without a GPU, as the matrix (docs/replay.md): beside self, one note and self's
# replay, exit 0; nccl alone: the note, then no backend could run the replay, exit 1
report="$(dirname "$COLLPROF_BIN")/collprof-report"
if [ -x "$report" ]; then
    T=$COLLPROF_SRCDIR/tests/data/trace
    "$report" import --trace param "$T/p2p-rank0.json" "$T/p2p-rank1.json" -o "$WORK/p2p.h5" \
        >"$WORK/out" 2>&1
    d="$WORK/replay"
    mkdir -p "$d"
    cp_run --np 2 --backends nccl,self --replay "$WORK/p2p.h5" --replay-iters 1 --output-dir "$d"
    [ "$rc" -eq 0 ] && [ "$(grep -c -i nccl "$WORK/err")" -eq 1 ] && grep -q -E "$NOTE" "$WORK/err" &&
        no_error && grep -q '^== replay on self' "$WORK/out" && ! grep -q '^== replay on nccl' "$WORK/out"
    ok $? "--replay, nccl,self without a GPU: one note, self's replay, exit 0 ($rc: $(head -c 300 "$WORK/err"))"
    cp_run --np 2 --backends nccl --replay "$WORK/p2p.h5" --replay-iters 1 --output-dir "$d"
    [ "$rc" -eq 1 ] && grep -q -E "$NOTE" "$WORK/err" && grep -q 'no backend could run the replay' "$WORK/err"
    ok $? "--replay, nccl alone without a GPU: the note, no backend could run the replay, exit 1 ($rc)"
fi

# the whole device path through the core (device buffers, host copies, run_batch
# timing, the check after a download) with the plugin built against the test
# stand-in for CUDA and NCCL (tests/nccl_mock: "device" memory is host memory)
mock="$(dirname "$COLLPROF_BIN")/tests/nccl_mock/.libs"
if [ -e "$mock/collprof_nccl.so" ]; then
    # what is missing, told apart (CPMOCK_NO_GPU on every rank): a note each, exit 0; a GPU
    # that is there and fails (CPMOCK_SETDEVICE_FAIL): an error, as before
    for lack in "1:GPU driver too old on rank 0: driver supports CUDA [0-9]+\.[0-9]+, runtime is [0-9]+\.[0-9]+$" \
        "nodev:no GPU on rank 0: no CUDA device found$" "stub:no GPU driver on rank 0: libcuda.so.1 is CUDA's stub"; do
        CPMOCK_NO_GPU=${lack%%:*} COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 2 \
            --backends nccl,self --ops allreduce --counts 1K -n 1 -w 0 --output-dir "$WORK"
        [ "$rc" -eq 0 ] && [ "$(grep -c -i nccl "$WORK/err")" -eq 1 ] && no_error &&
            grep -q -E "^collprof: note: backend nccl skipped: ${lack#*:}" "$WORK/err"
        ok $? "stand-in, CPMOCK_NO_GPU=${lack%%:*}: exit 0, one note: $(cat "$WORK/err")"
    done
    CPMOCK_SETDEVICE_FAIL=1 COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 2 \
        --backends nccl,self --ops allreduce --counts 1K -n 1 -w 0 --output-dir "$WORK"
    grep -q '^collprof: error: backend nccl skipped: initialisation failed on rank 0: .*cudaSetDevice failed: ' \
        "$WORK/err" && ! grep -q 'note:' "$WORK/err"
    ok $? "stand-in, cudaSetDevice fails on a GPU that is there: an error ($(cat "$WORK/err"))"
    d="$WORK/mock"
    mkdir -p "$d"
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 3 --backends nccl --ops all \
        --counts 3K --inplace both -d int32,float32 -o sum,max -n 3 -w 1 \
        --variants default,ring-simple,p2p,ring-simple+graph --output-dir "$d"
    check_clean_run "$d" "core + nccl plugin on the CUDA/NCCL stand-in, every op, device memory"
    s=$(summary_of "$d")
    [ "$(grep -c '^  [A-Za-z]* (.*device): ' "$s")" -ge 100 ] && ! grep -q 'unsupported:' "$s"
    ok $? "stand-in: the cells ran on device memory, none unsupported"
    COLLPROF_FAULT=wrong:1 COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 3 \
        --backends nccl --ops allgather --counts 3K -n 2 -w 5 --variants default --output-dir "$d"
    [ "$rc" -eq 1 ]
    ok $? "stand-in: a corrupted element in the downloaded result is caught (exit $rc)"
    # more warm-up than timed iterations (-w 5 -n 2 above, -w 8 -n 1 here): the warm-up
    # batch has room for its samples (it overflowed the array of -n samples, issue 14 B3:
    # caught under the sanitizers)
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --backends nccl \
        --ops allreduce --counts 1K -n 1 -w 8 --variants default --output-dir "$d"
    ok "$rc" "stand-in: -w 8 -n 1 runs clean (exit $rc)"
    # allgatherv, gatherv, scatterv as grouped send/recv, every block size spec (one with an
    # empty block)
    saved_path=$COLLPROF_PLUGIN_PATH
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH"
    check_allgatherv_specs 3 "stand-in --np 3" --backends nccl --variants default
    check_allgatherv_specs 2 "stand-in --np 2, graph" --backends nccl --variants graph
    check_rooted_v_specs 3 "stand-in --np 3" --backends nccl --variants default
    COLLPROF_PLUGIN_PATH=$saved_path
    # the limit beside busBW: device cells (nccl) against the device's own copy rate,
    # host cells (self) against memcpy, each recorded in its own column
    mkdir -p "$d/limit"
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --backends nccl,self \
        --ops allreduce,alltoall --counts 1K,64K -n 2 -w 1 --variants default --output-dir "$d/limit"
    s=$(summary_of "$d/limit")
    [ "$rc" -eq 0 ] &&
        [ "$(grep -c -E '^  [A-Za-z]* \(device\): .*#wrong: 0 .* \| BusBW [0-9.]+% of device copy [0-9]+\.[0-9]+ GB/s$' "$s")" -eq 4 ] &&
        [ "$(grep -c -E '^  [A-Za-z]*: .*#wrong: 0 .* \| BusBW [0-9.]+% of memcpy [0-9]+\.[0-9]+ GB/s$' "$s")" -eq 4 ] &&
        ! grep -q '(device): .*of memcpy' "$s" && ! grep -E '^  [A-Za-z]*: ' "$s" | grep -q 'device copy' &&
        grep -q "^            'BusBW N% of device copy R' (device memory)" "$s"
    ok $? "stand-in + self: device cells' busBW as % of device copy, host cells' as % of memcpy"
    "${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}" export --csv "${s%.txt}.h5" \
        >"$d/limit/csv" 2>&1
    # columns counted from the end (the header has no quotes; a row's quoted text comes earlier)
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) back[$i] = NF - i; next }
        { dc = $(NF - back["dcopy_gbs"]) + 0; hc = $(NF - back["copy_gbs"]) + 0 }
        /,device,/ { dev++; if (dc > 0 && dc < 1e300 && hc == 0) good++ }
        /,host,/ { host++; if (dc == 0 && hc > 0) good++ }
        END { exit (dev == 4 && host == 4 && good == 8) ? 0 : 1 }' "$d/limit/csv"
    ok $? "stand-in + self: /results dcopy_gbs > 0 on device cells only, copy_gbs on host cells only"
    # one rank: NCCL runs a device copy and selects no algorithm, so a forced
    # algorithm is not applicable there (it is not measured under its name)
    mkdir -p "$d/one"
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --backends nccl --ops allreduce \
        --counts 1K -n 2 -w 1 --variants default,ring-ll,nvls-simple --output-dir "$d/one"
    s=$(summary_of "$d/one")
    [ "$rc" -eq 0 ] && grep -q 'AllReduce (device): .*#wrong: 0' "$s" &&
        [ "$(grep -c 'unsupported: .*not applicable on a single rank: NCCL runs a one-rank' "$s")" -eq 2 ]
    ok $? "stand-in, one rank: forced algorithms unsupported as not applicable, default measured"
    # refusals on non-blocking communicators arrive late and stick: the probe must not
    # poison the variant's other operations (collnetdirect has allreduce only here)
    mkdir -p "$d/nb"
    COLLPROF_PLUGIN_PATH="$mock:$COLLPROF_PLUGIN_PATH" cp_run --np 3 --backends nccl \
        --ops allreduce,reducescatter --counts 3K -n 2 -w 1 -B nccl-blocking=0 \
        --variants collnetdirect-simple,nvls-simple,ring-simple --output-dir "$d/nb"
    [ "$rc" -eq 0 ] && grep -q '^# cells: 3 ok, 3 unsupported; #wrong 0: PASSED$' "$WORK/out"
    ok $? "stand-in, non-blocking: 3 refusals unsupported, the other cells exact, no error"
    # bench/nccl_loop.c built against the stand-in, and bench/nccl_compare.sh
    # reading both programs' output (the comparison itself needs a GPU)
    loop="$(dirname "$COLLPROF_BIN")/bench/nccl_loop_mock"
    if [ -x "$loop" ]; then
        "$loop" -g 2 -o allreduce,allgather,sendrecv -b 8 -e 1K -f 128 -n 2 -w 1 >"$WORK/loop" 2>&1
        [ $? -eq 0 ] &&
            [ "$(grep -c -E '^op (all|send).* ranks 2 iters 2 .*mean_us [0-9.]* .* issue_us [0-9.]+$' "$WORK/loop")" -eq 6 ]
        ok $? "bench/nccl_loop on the stand-in: one line per op and size, with the host's issue time"
        "$loop" -g 1 -b 8 -e 1K -f 128 -n 2 -w 1 -a each >"$WORK/loop" 2>&1
        [ $? -eq 0 ] && [ "$(grep -c '^op allreduce .* alloc each mean_us' "$WORK/loop")" -eq 2 ]
        ok $? "bench/nccl_loop -a each: buffers per op and size"
        bash "$COLLPROF_SRCDIR/bench/nccl_compare.sh" --np 2 --nccl-loop "$loop" \
            --plugin-path "$mock" --collprof "$COLLPROF_BIN" -b 8 -e 1K -f 128 -n 2 -w 1 -r 2 \
            --ops allreduce,sendrecv --control >"$WORK/cmp" 2>&1
        rc=$? num='  *[0-9.]+'
        [ $rc -eq 0 ] &&
            [ "$(grep -c -E "^(allreduce|sendrecv)  *[0-9]+($num){3} (ok|undecided) ($num){2}($num){2}($num){2} (ok|undecided)\$" "$WORK/cmp")" -eq 4 ] &&
            grep -q '^worst deviation [0-9.]* % over 4 cells, medians of 2 round' "$WORK/cmp" &&
            grep -q '^verdicts, collprof against plain-each: ok [0-9]*, ok\* 0, .* p = 0.333 per cell' "$WORK/cmp"
        ok $? "bench/nccl_compare.sh --control: three programs side by side per size ($(grep -c '' "$WORK/cmp") lines)"
    fi
fi

# bench/nccl_compare.sh --analyse: the verdicts of a kept "times" file (ROUND PROGRAM OP INDEX
# BYTES MEAN ISSUE): 5 rounds of plain, collprof and plain-each per size, then 3 rounds
mkdir -p "$WORK/an"
awk 'BEGIN {
    split("10.0 10.1 10.2 10.3 10.4", p, " ")
    for (r = 1; r <= 5; r++) {
        print r, "plain", "allreduce", 1, 8, p[r], 5
        print r, "collprof", "allreduce", 1, 8, p[6 - r], 5        # the same rounds: ok
        print r, "plain", "allreduce", 2, 16, p[r], 5
        print r, "collprof", "allreduce", 2, 16, p[r] + 0.5, "-"   # 4 % and apart: ok*
        print r, "plain", "allreduce", 3, 32, p[r], 5
        print r, "collprof", "allreduce", 3, 32, p[r] + 2, "-"     # 20 % and apart: SLOWER
        print r, "plain-each", "allreduce", 3, 32, p[r] + 2.1, 5   # ... as the control: ok
        print r, "plain", "allreduce", 4, 64, p[r], 5
        print r, "collprof", "allreduce", 4, 64, p[r] - 2, "-"     # apart, faster
        print r, "plain", "allreduce", 5, 128, (r % 2 ? 10 + r / 10 : 14), 5
        print r, "collprof", "allreduce", 5, 128, 11 + r / 2, "-"  # 12 % with overlap: undecided
        print r, "collprof", "sendrecv", 1, 8, 7, "-"               # no plain: n/a
        # pooled: two launch-bound sizes 20 % slower every round, one GPU-bound size equal
        print r, "plain", "allgather", 1, 8, p[r], 5
        print r, "collprof", "allgather", 1, 8, 1.2 * p[r], "-"
        print r, "plain", "allgather", 2, 16, p[r] + 0.2, 5
        print r, "collprof", "allgather", 2, 16, 1.2 * (p[r] + 0.2), "-"
        print r, "plain", "allgather", 3, 1048576, 100 + r, 5
        print r, "collprof", "allgather", 3, 1048576, 106 - r, "-"
    }
}' >"$WORK/an/times"
bash "$COLLPROF_SRCDIR/bench/nccl_compare.sh" --analyse "$WORK/an" >"$WORK/cmp" 2>&1
rc=$?
v() { awk -v op="$1" -v b="$2" '$1 == op && $2 == b { print $6 }' "$WORK/cmp"; }
[ $rc -eq 0 ] && [ "$(v allreduce 8)" = ok ] && [ "$(v allreduce 16)" = "ok*" ] &&
    [ "$(v allreduce 32)" = SLOWER ] && [ "$(v allreduce 64)" = faster ] &&
    [ "$(v allreduce 128)" = undecided ] && grep -q '^sendrecv  *8  *- .* n/a$' "$WORK/cmp" &&
    grep -q '^allreduce  *32 .* SLOWER  *1.04  *1.03  *5.00  *-  *12.30  *0.992 ok$' "$WORK/cmp" &&
    grep -q '^verdicts, collprof against plain: ok 2, ok\* 1, undecided 1, SLOWER 3, faster 1 (.* p = 0.00794 ' "$WORK/cmp" &&
    grep -q '^SLOWER against plain: allreduce 32 allgather 8 allgather 16$' "$WORK/cmp" &&
    grep -q '^faster against plain: allreduce 64$' "$WORK/cmp" &&
    grep -q '^pooled allreduce, 5 launch-bound size(s) 8-128 B: .* medians of 5 rounds): ratio ' "$WORK/cmp" &&
    grep -q '^pooled allgather, 2 launch-bound size(s) 8-16 B: plain 10.30, collprof 12.36 us .* ratio 1.200 SLOWER, best rounds 1.200$' "$WORK/cmp" &&
    [ "$(v allgather 1048576)" = ok ]
ok $? "bench/nccl_compare.sh --analyse: ok, ok*, SLOWER, faster, undecided and n/a from 5 rounds; pooled launch-bound sizes"
awk '$1 <= 3' "$WORK/an/times" >"$WORK/an/t3" && mv "$WORK/an/t3" "$WORK/an/times"
bash "$COLLPROF_SRCDIR/bench/nccl_compare.sh" --analyse "$WORK/an" >"$WORK/cmp" 2>&1
[ $? -eq 0 ] && [ "$(v allreduce 32)" = undecided ] && [ "$(v allreduce 16)" = ok ] &&
    grep -q 'SLOWER 0, faster 0 (.* p = 0.1 per cell)' "$WORK/cmp" &&
    grep -q '^pooled allgather, 2 .* medians of 3 rounds): ratio 1.200 undecided,' "$WORK/cmp"
ok $? "bench/nccl_compare.sh --analyse: 3 rounds decide nothing (p = 0.1)"
bash "$COLLPROF_SRCDIR/bench/nccl_compare.sh" --analyse "$WORK/none" >"$WORK/cmp" 2>&1
[ $? -eq 1 ] && grep -q 'no file .*none/times' "$WORK/cmp"
ok $? "bench/nccl_compare.sh --analyse without a times file: one-line error, exit 1"

# the profiler wrappers: usage, and a clear error when the tool is missing
for t in nsys ncu; do
    w="$COLLPROF_SRCDIR/contrib/profile/collprof-$t.sh"
    sh "$w" --help >"$WORK/out" 2>&1
    ok $? "collprof-$t.sh --help: exit status 0"
    grep -q "^Usage: collprof-$t.sh" "$WORK/out"
    ok $? "collprof-$t.sh --help: usage"
    rc=0
    PATH=/usr/bin:/bin NSYS=no-such-nsys NCU=no-such-ncu sh "$w" -- --np 2 >"$WORK/out" 2>&1 || rc=$?
    [ "$rc" -ne 0 ] && grep -q "no-such-$t not found" "$WORK/out"
    ok $? "collprof-$t.sh without $t: error naming the tool ($rc)"
    NSYS=true NCU=true COLLPROF_BIN="$COLLPROF_BIN" sh "$w" --dry-run -- --np 2 --output-dir "$WORK/p" \
        >"$WORK/out" 2>&1
    grep -q -- "-o $WORK/p/collprof_${t}_[0-9TZ]* .*collprof --np 2 --output-dir $WORK/p\$" "$WORK/out"
    ok $? "collprof-$t.sh --dry-run: report named next to collprof's results"
done
done_testing
