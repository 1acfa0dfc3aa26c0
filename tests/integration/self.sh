#!/bin/sh
# The self backend: collprof's own shared-memory collectives, no library.
# Every operation, dtype and reduction, in and out of place, chunked through
# slots smaller than the buffers; alltoallv traffic patterns; and it stays
# out of the default matrix.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
if [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" ]; then
    skip_all "the self backend was not built"
fi

cp_run --list
[ $rc -eq 0 ] && grep -q '^ *self\b' "$WORK/out"
ok $? "--list shows the self backend"

# every dtype and redop on the reducing ops, through 4 KiB slots (several chunks each);
# under sanitizers (2-3x slower, ranks spinning on 2 cores) a representative subset
dtypes=all redops=all a2av_counts=1K,64K
if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
    dtypes=int8,uint64,bfloat16,float16,float64 redops=sum,max a2av_counts=1K
fi
# (one run per op: smaller runs, see gloo.sh)
for op in allreduce reducescatter reduce; do
    d="$WORK/red/$op"
    mkdir -p "$d"
    cp_run --np 3 --backends self --ops "$op" -d "$dtypes" -o "$redops" \
        --inplace both --counts 4099 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
    check_clean_run "$d" "--np 3, $op x every dtype and redop, in and out of place"
done

# the reductions are a reduce-scatter (rank r reduces its share of each chunk, in whole cache
# lines) then an all-gather: 1, 2, 5 (not a power of two), 8 and 24 ranks (more ranks than the
# 16 cache lines of a 1 KiB slot: some shares empty), counts not divisible by n and below n
# (reducescatter skips those it cannot split), several chunks, a root other than 0
red_dtypes=all
if [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ]; then
    red_dtypes=int8,bfloat16,float16,float64
fi
for np in 1 2 5 8 24; do
    d="$WORK/share/$np"
    mkdir -p "$d"
    dt=$red_dtypes
    [ "$np" -eq 24 ] && dt=int8,uint32,bfloat16,float16,float64
    cp_run --np "$np" --backends self --ops allreduce,reduce,reducescatter -d "$dt" -o all \
        --inplace both --counts 3,37,4099 --root $((np - 1)) -n 2 -w 1 -B self-slot-kib=1 \
        --output-dir "$d"
    check_clean_run "$d" "--np $np, reductions in shares of 1 KiB chunks, every redop"
done

d="$WORK/all"
mkdir -p "$d"
# every op on 1-, 2- and 8-byte types; 4099 elements of 2 bytes take 3 chunks of 4 KiB
cp_run --np 3 --backends self --ops all -d int8,bfloat16,float16,float64 -o sum --inplace both \
    --counts 1K,4099 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
check_clean_run "$d" "--np 3, every op, in and out of place"

d="$WORK/a2av"
mkdir -p "$d"
cp_run --np 4 --backends self --ops alltoallv,alltoall --imbalance uniform,linear,spread:1,moe:1:4 \
    --inplace both --counts "$a2av_counts" -d int32 -n 2 -w 1 -B self-slot-kib=4 --output-dir "$d"
check_clean_run "$d" "--np 4, alltoallv traffic patterns"

check_allgatherv_specs 4 "self --np 4, 4 KiB slots" --backends self -B self-slot-kib=4
check_allgatherv_specs 2 "self --np 2" --backends self
check_rooted_v_specs 3 "self --np 3, 4 KiB slots" --backends self -B self-slot-kib=4

d="$WORK/big"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce,allgather,broadcast,sendrecv --counts 1M -d float64 \
    -n 2 -w 1 --output-dir "$d"
check_clean_run "$d" "--np 2, 8 MiB buffers through 1 MiB slots"

# the node's segment: run()'s lane (n + 2 slots) and the rings; no lane for posted collectives
# in a run that posts none (a matrix, its nonblocking ops included: replay_p2p.sh posts), so a
# /dev/shm of 24 MiB holds a run of 4 MiB slots (17 MB; 33.8 MB with the lane beside)
d="$WORK/lane"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce,iallreduce --counts 1K -n 2 -w 1 -v --output-dir "$d"
n=$(sed -n 's/.* self: a \([0-9]*\)-byte shared memory segment for 2 ranks$/\1/p' "$WORK/err")
[ "$rc" -eq 0 ] && [ -n "$n" ] && [ "$n" -ge $((4 << 20)) ] && [ "$n" -lt $((5 << 20)) ] &&
    ! grep -q "for posted collectives" "$WORK/err"
ok $? "a run that posts nothing: one segment of 4 slots and the rings ($n bytes), no posted lane"
if unshare -m true 2>/dev/null; then
    mkdir -p "$d/small"
    rc=0
    unshare -m sh -c 'mount -t tmpfs -o size=24m tmpfs /dev/shm && exec "$@"' sh \
        timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" --np 2 --backends self \
        --ops allreduce,iallreduce --counts 1K -n 2 -w 1 -B self-slot-kib=4096 \
        --output-dir "$d/small" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    check_clean_run "$d/small" "--np 2, 4 MiB slots in a /dev/shm of 24 MiB"
else
    ok 0 "# SKIP no mount namespace (unshare -m) for a small /dev/shm"
fi

d="$WORK/dry"
mkdir -p "$d"
cp_run --np 2 --dry-run --ops all --counts 1K --output-dir "$d"
[ $rc -eq 0 ] && grep -q 'collprof plan:' "$WORK/out" && ! grep -q '\bself\b' "$WORK/out"
ok $? "the default matrix has no self cells"
cp_run --np 2 --dry-run --backends self --ops allreduce --counts 1K --output-dir "$d"
[ $rc -eq 0 ] && grep -q '\bself\b' "$WORK/out"
ok $? "--backends self plans self cells"

d="$WORK/slot"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce --counts 1K -B self-slot-kib=zero --output-dir "$d"
[ $rc -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && grep -q 'self-slot-kib=zero' "$WORK/err" &&
    [ -z "$(ls "$d")" ]
ok $? "a bad self-slot-kib: one line before any rank starts, exit 2, no output"

# backend options: declared by the plugin, listed, checked, recorded
cp_run --help-backend self
[ $rc -eq 0 ] && grep -q "self-slot-kib=VALUE *(1\.\.4194304; default 1024)" "$WORK/out"
ok $? "--help-backend self: the option, its range and default"
cp_run --help-backend nosuch
[ $rc -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ]
ok $? "--help-backend of an unknown backend: one line, exit 2"
for bad in "-B nosuch=1" "--nosuch 1" "--self-slot-kib 8"; do
    # shellcheck disable=SC2086 # split on purpose
    cp_run --np 2 --backends self --ops barrier $bad --output-dir "$d"
    [ $rc -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] && [ -z "$(ls "$d")" ]
    ok $? "$bad: one-line error, exit 2, no output ($(head -c 100 "$WORK/err"))"
done
cp_run --np 2 --backends self --ops barrier -B self-slot-kib=64 --output-dir "$d"
grep -q "^  options:  self-slot-kib=64$" "$d"/collprof_*.txt
ok $? "the summary records the effective option"
if command -v h5dump >/dev/null 2>&1; then
    h5dump -d /backends "$d"/collprof_*.h5 2>/dev/null | grep -q '"self-slot-kib=64"'
    ok $? "the HDF5 file records the effective option (/backends options)"
fi
rm -f "$d"/*
cp_run --np 2 --backends self --ops barrier --output-dir "$d"
grep -q "^  options:  self-slot-kib=1024 (default)$" "$d"/collprof_*.txt
ok $? "a default is marked as such"

# provenance: self cells are timed by collprof on the host, in host memory the plugin allocated
# (more warm-up than timed iterations on purpose: the sample array must not overflow, issue 14 B3)
d="$WORK/prov"
mkdir -p "$d"
cp_run --np 2 --backends self --ops allreduce --counts 1K -n 2 -w 5 --output-dir "$d"
txt=$(summary_of "$d")
measured="  measured: host memory: timer CLOCK_MONOTONIC; buffers posix_memalign, 4096-byte aligned; device host; sync barrier; rotation 1; check last"
[ "$rc" -eq 0 ] && grep -qxF "$measured" "$txt" && ! grep -q "page-aligned host memory" "$txt"
ok $? "the summary says what self cells were measured with, and nothing more"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
if [ -x "$REPORT" ]; then
    "$REPORT" summary "$d" 2>&1 | grep '^  measured:' >"$WORK/m_h5"
    grep '^  measured:' "$txt" >"$WORK/m_txt"
    [ -s "$WORK/m_txt" ] && cmp -s "$WORK/m_h5" "$WORK/m_txt"
    ok $? "collprof-report summary rebuilds the 'measured' lines from the file"
    "$REPORT" export --csv "$d" >"$WORK/csv" 2>&1
    /usr/bin/python3 - "$WORK/csv" <<'P'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert rows and all(r["timer"] == "CLOCK_MONOTONIC" and r["device"] == "host" and
                    r["allocation"].startswith("posix_memalign") for r in rows), rows
P
    ok $? "every /results row: timer CLOCK_MONOTONIC, device host, the plugin's allocation"
fi
if command -v h5dump >/dev/null 2>&1; then
    h5dump -d /ranks "$d"/collprof_*.h5 >"$WORK/ranks" 2>&1
    [ "$(grep -c '^ *"host",$' "$WORK/ranks")" -eq 2 ] &&
        [ "$(grep -c '"self: POSIX shared memory, 1024 KiB slot per rank"' "$WORK/ranks")" -eq 2 ]
    ok $? "/ranks: device host and the self transport on both ranks"
    ! h5dump -d /cells/000000/provenance "$d"/collprof_*.h5 >/dev/null 2>&1
    ok $? "no per-rank provenance where the ranks agree"
fi
# where the ranks differ (a test plugin: self with a device per rank), the row says so and
# /cells/<cell>/provenance keeps each rank's value
if [ -e "$CP_TEST_PLUGINS/collprof_perrank.so" ]; then
    d="$WORK/perrank"
    mkdir -p "$d"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --backends perrank \
        --ops allreduce --counts 1K -n 2 -w 1 --output-dir "$d"
    [ "$rc" -eq 0 ] && grep -q "^  measured: host memory: timer CLOCK_MONOTONIC; .*; device per rank; sync barrier; rotation 1; check last$" \
        "$(summary_of "$d")"
    ok $? "ranks on different devices: the summary says 'device per rank'"
    if [ -x "$REPORT" ]; then
        "$REPORT" summary "$d" >"$WORK/psum" 2>&1 && grep -q "device per rank; sync barrier; rotation 1; check last$" "$WORK/psum"
        ok $? "collprof-report reads the per-rank provenance back"
    fi
    if command -v h5dump >/dev/null 2>&1; then
        h5dump -d /cells/000000/provenance "$d"/collprof_*.h5 >"$WORK/pprov" 2>&1 &&
            grep -q '"fake:0"' "$WORK/pprov" && grep -q '"fake:1"' "$WORK/pprov"
        ok $? "/cells/000000/provenance: each rank's device"
    fi
fi
done_testing
