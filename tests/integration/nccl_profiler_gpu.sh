#!/bin/sh
# collprof's NCCL profiler plugin under a real NCCL (the GPU kit's `profiler` step,
# contrib/gpu/run.sh; docs/replay.md, "Recording from NCCL programs"): collprof's own
# NCCL backend, one rank per GPU (up to 8), runs with NCCL_PROFILER_PLUGIN naming the
# plugin and COLLPROF_TRACE_DIR a folder; NCCL must load the plugin (its INFO line
# names the API version it took), every rank must write its file, and the files must
# import with `collprof-report import --trace nccl-collprof`.  With one GPU the run
# has one rank, which NCCL runs without kernel plans: no op reaches a profiler, so an
# empty trace is reported, not failed.  Exits 77 (skip) without the NCCL backend, the
# plugin or a GPU.
: "${COLLPROF_BIN:?set COLLPROF_BIN (contrib/gpu/run.sh does)}"
CP_TIMEOUT=${CP_TIMEOUT:-120}
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
[ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_nccl.so" ] || skip_all "the NCCL backend was not built"
PROF=${COLLPROF_NCCLPROF:-${COLLPROF_PLUGIN_PATH%%:*}/libnccl-profiler-collprof.so}
[ -e "$PROF" ] || skip_all "no $PROF"
gpu_ranks
need_report
export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
T=$WORK/trace
mkdir -p "$T"

# NCCL's INFO lines into files of their own (%p: the rank's pid), whatever collprof does
# with its ranks' output
NCCL_PROFILER_PLUGIN=$PROF COLLPROF_TRACE_DIR=$T NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT \
    NCCL_DEBUG_FILE=$WORK/nccl-debug.%p \
    timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" --np "$np" --backends nccl --variants default \
    --ops allreduce,allgather,reducescatter,broadcast,sendrecv --dtype float32 \
    --counts 4K,1M -n 3 -w 1 --output-dir "$WORK/run" </dev/null >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" -eq 0 ] || tail -n 20 "$WORK/err" | sed 's/^/# /'
ok "$rc" "collprof --np $np --backends nccl under NCCL_PROFILER_PLUGIN=collprof's plugin"
loaded=$(cat "$WORK"/nccl-debug.* "$WORK/out" "$WORK/err" 2>/dev/null |
    grep -h -o 'PROFILER/Plugin: Loaded [^ ]* (v[0-9]*)' | sort -u | head -n 1)
echo "# NCCL: ${loaded:-no 'Loaded' line}"
grep -h 'collprof NCCL profiler: note' "$WORK/err" | sort -u | sed 's/^/# /'
case $loaded in *"Loaded collprof (v"*) true ;; *) false ;; esac
ok $? "NCCL loaded collprof's profiler plugin ($loaded)"
files=$(ls "$T"/collprof-nccl-*.jsonl 2>/dev/null | wc -l)
# collprof --np starts one process per rank, each with its NCCL
[ "$files" -eq "$np" ]
ok $? "one trace file per rank ($files of $np)"
lines=$(cat "$T"/collprof-nccl-*.jsonl 2>/dev/null | wc -l)
echo "# $lines ops recorded; first: $(head -c 600 "$(ls "$T"/collprof-nccl-*.jsonl | head -n 1)" 2>/dev/null)"
if [ "$np" -eq 1 ] && [ "$lines" -eq 0 ]; then
    echo "# one rank: NCCL runs a one-rank communicator without kernel plans, so no op was seen"
    ok 0 "one rank: an empty trace (expected)"
else
    "$REPORT" import --trace nccl-collprof "$T"/collprof-nccl-*.jsonl -o "$WORK/t.h5" >"$WORK/imp" 2>&1
    irc=$?
    sed 's/^/# /' "$WORK/imp"
    ok "$irc" "the files import ($lines ops)"
    grep -q "operations of $np ranks" "$WORK/imp"
    ok $? "the trace has $np ranks"
    n=$(grep -c '"coll":"AllReduce"' "$T"/collprof-nccl-*.jsonl | awk -F: '{ s += $2 } END { print s + 0 }')
    [ "$n" -gt 0 ] && grep -q '"coll_timing_source":"kernel_gpu"' "$T"/collprof-nccl-*.jsonl
    ok $? "allreduces recorded ($n), GPU-timed"
    cp "$T"/collprof-nccl-*.jsonl "$WORK/t.h5" "${CP_KEEP_DIR:-$WORK}/" 2>/dev/null
fi
done_testing
