#!/bin/sh
# collprof --repeats, --min-time, --target-ci, --max-time, --fresh-buffers:
# every repeat of a cell in the file and the summaries (self and mpi, 2
# ranks), buffers kept across repeats or not, a bimodal
# cell made deterministic by slowing some repeats only (COLLPROF_FAULT=
# slowrep), the stopping rules, collprof-report compare from the repeats'
# intervals, and bad input.  Assertions use injected delays of tens of ms,
# never the machine's own timings.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"

# column NAME (a number or a plain string) of the first /results row of FILE, through
# export --json (one object per line)
col() { # FILE NAME
    "$REPORT" export --json "$1" | sed -n "2s/.*\"$2\": \"*\([^\",]*\)\"*[,}].*/\1/p"
}
rep() {
    rrc=0
    timeout -k 5 60 "$REPORT" "$@" </dev/null >"$WORK/rout" 2>"$WORK/rerr" || rrc=$?
}
run_self() { # DIR ARGS...: 1 allreduce cell of the self backend on 2 ranks
    d=$1
    shift
    mkdir -p "$d"
    cp_run --np 2 --backends self --ops allreduce --counts 1K -w 1 --output-dir "$d" "$@"
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
    txt=$(summary_of "$d")
}
diag() { # STATUS: what the run printed, as TAP comments
    [ "$1" -eq 0 ] || sed 's/^/# /' "$WORK/out" "$WORK/err" ${txt:+"$txt"}
}

# ---- 3 repeats: the range, but too few for a 95 % interval
run_self "$WORK/r3" -n 5 --repeats 3
[ "$rc" -eq 0 ] && [ "$(col "$h5" repeats)" = 3 ] && [ "$(col "$h5" iterations)" = 15 ] &&
    [ "$(col "$h5" ci_level)" = 0.75 ]
s=$?
diag $s
ok $s "self --repeats 3: repeats 3, 15 iterations, interval coverage 0.75"
grep -q "repeats 3: p50 .* covers 75%: too few repeats for a 95% interval" "$txt"
ok $? "summary: 3 repeats give no 95% interval"
"$CP_H5DUMP" -d /cells/000000/repeat_p50_us -d /cells/000000/repeat_iterations "$h5" \
    >"$WORK/dump" 2>&1 && grep -q "DATASPACE  SIMPLE { ( 3 ) / ( 3 ) }" "$WORK/dump" &&
    grep -q "(0): 5, 5, 5" "$WORK/dump"
ok $? "each repeat's p50 and iterations in /cells/000000"
rep summary "$h5"
[ "$rrc" -eq 0 ] && grep -q "repeats 3: p50 .* too few repeats" "$WORK/rout"
ok $? "collprof-report summary prints the repeats line"

# ---- 6 repeats on mpi: the first 95 % interval
if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ] &&
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    d="$WORK/m6"
    mkdir -p "$d"
    cp_run --np 2 --backends mpi --ops allreduce --variants default --counts 1K -n 5 -w 1 \
        --repeats 6 --output-dir "$d"
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
    txt=$(summary_of "$d")
    lo=$(col "$h5" ci_lo_us)
    hi=$(col "$h5" ci_hi_us)
    med=$(col "$h5" rep_p50_us)
    [ "$rc" -eq 0 ] && [ "$(col "$h5" repeats)" = 6 ] && [ "$(col "$h5" ci_level)" = 0.96875 ] &&
        awk -v l="$lo" -v h="$hi" -v m="$med" 'BEGIN { exit !(l > 0 && l <= m && m <= h) }'
    s=$?
    diag $s
    ok $s "mpi --repeats 6: interval [$lo, $hi] around $med at 96.875%"
    grep -q "repeats 6: p50 .* 95% interval .* (97% coverage)" "$txt"
    ok $? "summary: 6 repeats give a 95% interval"
else
    ok 0 "# SKIP mpirun or the MPI backend is missing"
    ok 0 "# SKIP mpirun or the MPI backend is missing"
fi

# ---- buffers: kept from the first repeat, or new ones with --fresh-buffers
touched() { grep -c "r0/2 .*allreduce: send and receive buffers of 4096 bytes $1 and touched" \
    "$WORK/err"; }
run_self "$WORK/s6" -n 5 --repeats 6 --fresh-buffers -v
[ "$rc" -eq 0 ] && [ "$(col "$h5" repeats)" = 6 ] && [ "$(col "$h5" ci_level)" = 0.96875 ] &&
    [ "$(touched allocated)" = 6 ] && [ "$(touched "kept from the first repeat")" = 0 ] &&
    grep -q "^repeats:    each cell 6 times;" "$txt" && grep -q "with new buffers;" "$txt"
s=$?
diag $s
ok $s "self --repeats 6 --fresh-buffers: 6 allocations, a 95% interval"
if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ] &&
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    d="$WORK/m3"
    mkdir -p "$d"
    cp_run --np 2 --backends mpi --ops allreduce --variants default --counts 1K -n 5 -w 1 \
        --repeats 3 --output-dir "$d" -v
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
    txt=$(summary_of "$d")
    [ "$rc" -eq 0 ] && [ "$(col "$h5" repeats)" = 3 ] && [ "$(col "$h5" ci_level)" = 0.75 ] &&
        [ "$(touched allocated)" = 1 ] && [ "$(touched "kept from the first repeat")" = 2 ] &&
        grep -q "repeats 3: p50 .* too few repeats for a 95% interval" "$txt"
    s=$?
    diag $s
    ok $s "mpi --repeats 3: fresh communicators on the first repeat's buffers"
else
    ok 0 "# SKIP mpirun or the MPI backend is missing"
fi

# ---- a bimodal cell: repeats 0 and 2 of 5 slowed by 300 ms per operation (the rule needs the
# gap to be 3 times the slow cluster's range: far above what a loaded machine adds)
export COLLPROF_FAULT=slowrep:0,2:300000
run_self "$WORK/bi" -n 3 -w 0 --repeats 5
unset COLLPROF_FAULT
[ "$rc" -eq 0 ] && [ "$(col "$h5" bimodal)" = 1 ] && [ "$(col "$h5" mode_lo_n)" = 3 ] &&
    [ "$(col "$h5" mode_hi_n)" = 2 ] &&
    awk -v hi="$(col "$h5" mode_hi_us)" 'BEGIN { exit !(hi >= 300000) }'
s=$?
diag $s
ok $s "slowed repeats 0 and 2: bimodal, 3 fast repeats and 2 slow ones of 300 ms or more"
grep -Eq "^    bimodal: [0-9.]+ (us|ms) \(3 repeats\) and [0-9.]+ (ms|s) \(2\)$" "$txt"
ok $? "summary: the bimodal line names both modes"
rep summary "$h5"
grep -Eq "^    bimodal: .* \(3 repeats\) and .* \(2\)$" "$WORK/rout"
ok $? "collprof-report summary: the bimodal line"

# ---- stopping rules (every operation slowed by 20 ms: a repeat of 5 takes 100 ms or more)
export COLLPROF_FAULT=slow:all:20000
run_self "$WORK/mt" -n 4 -w 0 --min-time 1
n=$(col "$h5" repeats)
[ "$rc" -eq 0 ] && [ "$n" -ge 2 ] && [ "$n" -le 13 ]
s=$?
diag $s
ok $s "--min-time 1: repeats until 1 s is spent ($n repeats of 80 ms or more)"
run_self "$WORK/tc" -n 4 -w 0 --target-ci 0.000001 --max-time 0.5
n=$(col "$h5" repeats)
[ "$rc" -eq 0 ] && [ "$n" -ge 1 ] && [ "$n" -le 7 ] &&
    grep -q -- "--target-ci 1e-06% not reached within --max-time 0.5 s ($n repeats)" "$txt"
s=$?
diag $s
ok $s "--target-ci out of reach: --max-time 0.5 stops it ($n repeats), the summary says so"
unset COLLPROF_FAULT
run_self "$WORK/tr" -n 5 --target-ci 90 --max-time 60
n=$(col "$h5" repeats)
[ "$rc" -eq 0 ] && [ "$n" -ge 6 ] && ! grep -q "not reached" "$txt" &&
    awk -v l="$(col "$h5" ci_lo_us)" -v h="$(col "$h5" ci_hi_us)" -v m="$(col "$h5" rep_p50_us)" \
        'BEGIN { exit !((h - l) / m <= 0.9) }'
s=$?
diag $s
ok $s "--target-ci 90: stops at an interval 90% wide or less, from 6 repeats ($n)"

# ---- compare from the intervals
run_self "$WORK/base" -n 5 --repeats 6
base=$h5
export COLLPROF_FAULT=slow:all:20000
run_self "$WORK/slow" -n 5 --repeats 6
unset COLLPROF_FAULT
rep compare "$base" "$h5"
[ "$rrc" -eq 1 ] && grep -q "ci97%  regression" "$WORK/rout" &&
    grep -q "1 regression, .*(1 from the repeats' intervals)" "$WORK/rout"
s=$?
[ $s -eq 0 ] || sed 's/^/# /' "$WORK/rout" "$WORK/rerr"
ok $s "compare: NEW's interval wholly above BASE's: regression (exit 1)"
rep compare "$base" "$base"
[ "$rrc" -eq 0 ] && grep -q "ci97%  within noise" "$WORK/rout"
ok $? "compare: the same intervals: within noise"
rep compare "$WORK/r3" "$base"
# (the verdict between two unslowed runs is up to the machine: only the coverage is asserted)
[ "$rrc" -le 1 ] && grep -Eq "ci75%  (within noise|regression|improvement)" "$WORK/rout"
ok $? "compare: 3 repeats against 6: the lower coverage of the two shown"

# ---- bad input: one line, exit 2, no file
for args in "--fresh-buffers" "--repeats 0" "--repeats 1001" "--target-ci 0" "--target-ci 101" "--min-time -1" \
    "--min-time 10 --max-time 5" "--max-time x"; do
    d="$WORK/bad"
    rm -rf "$d"
    mkdir -p "$d"
    # shellcheck disable=SC2086
    cp_run --np 2 --backends self --ops allreduce --counts 1K --output-dir "$d" $args
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && [ -z "$(ls "$d")" ]
    ok $? "$args: exit 2, one line ($(head -c 100 "$WORK/err")), no file"
done

done_testing
