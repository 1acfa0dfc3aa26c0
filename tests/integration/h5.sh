#!/bin/sh
# HDF5 result files: every file h5dump can read; the schema as documented;
# and a run killed with SIGKILL leaves a readable file holding every
# completed cell, marked incomplete.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"

d="$WORK/run"
mkdir -p "$d"
cp_run --np 2 --backends mpi --ops allreduce,alltoallv,barrier --counts 4K --imbalance uniform,linear -n 3 -w 1 \
    --variants default,ring --output-dir "$d"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
txt=$(summary_of "$d")
[ "$rc" -eq 0 ] && [ -n "$h5" ] && [ "${h5%.h5}" = "${txt%.txt}" ]
ok $? "one .h5 next to the .txt, same base name"
"$CP_H5DUMP" "$h5" >"$WORK/dump" 2>&1
ok $? "h5dump reads the file"
grep -q '"schema"' "$WORK/dump" && grep -q 'collprof-results' "$WORK/dump" &&
    grep -q 'DATASET "results"' "$WORK/dump" && grep -q 'GROUP "cells"' "$WORK/dump" &&
    grep -q 'DATASET "ranks"' "$WORK/dump" && grep -q 'DATASET "environment"' "$WORK/dump"
ok $? "root attributes, results, cells, ranks, environment present"
grep -q '"complete"' "$WORK/dump"
ok $? "a finished run is marked complete"

# every column and root attribute of the schema header is documented and written (the /links
# and /screen columns only by a link sweep or a screen: links.sh and test_reader check those;
# the trace tables only by import --trace: trace.sh; /replay only by --replay: replay.sh;
# /baseline is a baseline file's, which screen.sh makes)
cols=$(sed '/^#define COLLPROF_TABLES/,/^$/d' "$COLLPROF_SRCDIR/include/collprof/schema.h" |
    sed -n 's/^ *X(\([a-z0-9_]*\), .*/\1/p')
sweep_only=$(sed -n -e '/^#define COLLPROF_LINK_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    -e '/^#define COLLPROF_SCREEN_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    -e '/^#define COLLPROF_BASELINE_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    -e '/^#define COLLPROF_TRACE_/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    -e '/^#define COLLPROF_REPLAY_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    "$COLLPROF_SRCDIR/include/collprof/schema.h" | tr '\n' ' ')
missing=
for c in $cols; do
    grep -q "\`$c\`" "$COLLPROF_SRCDIR/docs/hdf5-schema.md" || missing="$missing doc:$c"
    case " $sweep_only " in *" $c "*) continue ;; esac
    grep -q "\"$c\"" "$WORK/dump" || missing="$missing file:$c"
done
[ -n "$cols" ] && [ -z "$missing" ]
ok $? "every schema column is documented and in the file${missing:+ (missing:$missing)}"

# kill -9 in the middle of a long cell: the completed cells survive
d="$WORK/killed"
mkdir -p "$d"
cat >"$WORK/kill.matrix" <<'M'
backends=mpi ops=allreduce counts=1K iters=2 warmup=0 variants=default
backends=mpi ops=allgather counts=1K iters=2 warmup=0 variants=default
backends=mpi ops=allreduce counts=256K iters=1000000 warmup=0 variants=default
M
"$COLLPROF_BIN" --np 2 --matrix "$WORK/kill.matrix" --output-dir "$d" \
    </dev/null >"$WORK/kill.out" 2>&1 &
launcher=$!
n=0
for _ in $(seq 1 300); do
    n=$(cat "$d"/collprof_*.txt 2>/dev/null | grep -c ' ms | AlgBW')
    [ "$n" -ge 2 ] && break
    sleep 0.2
done
sleep 0.5
# SIGKILL the launcher and every rank, as an out-of-memory killer or scancel -s KILL would
ranks=$(pgrep -P "$launcher" | tr '\n' ' ')
kill -9 "$launcher" $ranks 2>/dev/null
wait "$launcher" 2>/dev/null
# wait until the killed processes are gone, not only out of pgrep's sight: a
# dying process (slow to unmap under AddressSanitizer) still holds its file
# lock, and h5dump refuses a file locked by a writer
for _ in $(seq 1 100); do
    alive=0
    for p in $launcher $ranks; do
        kill -0 "$p" 2>/dev/null && alive=1
    done
    [ "$alive" -eq 0 ] && ! pgrep -f "$WORK/kill.matrix" >/dev/null && break
    sleep 0.2
done
[ "$n" -ge 2 ]
ok $? "two cells completed before the kill ($n)"
! pgrep -f "$WORK/kill.matrix" >/dev/null 2>&1
ok $? "the killed job left no process behind"
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
krc=0
"$CP_H5DUMP" "$h5" >"$WORK/kdump" 2>&1 || krc=$?
ok $krc "h5dump reads the killed run's file"
[ "$krc" -eq 0 ] || grep -i -m 5 'error\|fail\|unable' "$WORK/kdump" | sed "s/^/# h5dump: /"
grep -q '"incomplete"' "$WORK/kdump"
ok $? "the killed run's file is marked incomplete"
rows=$(sed -n '/DATASET "results"/,/DATASPACE/p' "$WORK/kdump" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p')
[ "$rows" = 2 ]
ok $? "it holds the 2 completed cells (rows: $rows)"
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
    /usr/bin/python3 - "$h5" <<'P'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
r = f["results"][:]
assert f.attrs["status"] == "incomplete", f.attrs["status"]
assert len(r) == 2 and list(r["status"]) == [b"ok", b"ok"], r["status"]
assert [bytes(x) for x in r["op"]] == [b"allreduce", b"allgather"]
assert f["cells/000000/samples_us"].shape == (2, 2)
P
    ok $? "h5py opens it: 2 ok rows with their samples"
fi
done_testing
