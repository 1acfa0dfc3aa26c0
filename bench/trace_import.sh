#!/bin/sh
# Import throughput and memory of collprof-report import --trace: a generated trace of about MB
# megabytes (default 100) for one rank, in FORMAT (default param), imported once by each
# collprof-report given (default ./collprof-report: give an older build beside it to compare
# them on the same file and the same load); prints the size, the wall time, MB/s, ops/s, the
# CPU time (user + system) and the peak RSS (/usr/bin/time -v).  Memory must stay flat as MB
# grows (the ops stream to the file in blocks): run it with 10 and 100 to see.
#   param             PARAM basic trace: all_reduce of 1-64 KiB on two 4-rank groups, startTime_ns
#   nccl-inspector    NCCL Inspector v4 JSON lines: AllReduce of one process, timings
#   flight-recorder   Flight Recorder JSON 2.x: all_reduce on two groups, pg_config at the end
#   collprof-trace    collprof-trace JSON lines: allreduce on two communicators of one rank, t and dur
#   pytorch-et        PyTorch execution trace: record_param_comms nodes (held until the file
#                     ends, to be put in node-id order: memory grows with the ops, by design)
#   chakra-et         Chakra .et protobuf (COMM_COLL_NODEs of one group) and its comm_group.json
# Usage: bench/trace_import.sh [-f FORMAT] [MB] [collprof-report...]
set -eu
FORMAT=param
if [ "${1:-}" = -f ]; then
    FORMAT=${2:?"-f needs a format"}
    shift 2
fi
MB=${1:-100}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- ./collprof-report
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 2; }
extra=
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# awk's %d stops at 2^31 in mawk: the 19-digit times are written as text (%.0f is exact below
# 2^53, so the varying part is a %012.0f after a fixed prefix)
case $FORMAT in
param)
    awk -v mb="$MB" 'BEGIN {
        printf "[\n"
        n = int(mb * 1e6 / 190)
        for (i = 0; i < n; i++) {
            printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"req\": %d, \"startTime_ns\": 1700000%012.0f, ", i ? ",\n" : "", i, i, i * 1000
            printf "\"pg_id\": %d, \"global_ranks\": [0, 1, 2, 3], \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\"}", i % 2, 1024 * (i % 64 + 1), 1024 * (i % 64 + 1)
        }
        printf "\n]\n" }' >"$d/0.json"
    in=$d/0.json ;;
nccl-inspector)
    awk -v mb="$MB" 'BEGIN {
        n = int(mb * 1e6 / 480)
        for (i = 0; i < n; i++) {
            s = 1024 * (i % 64 + 1)
            printf "{\"header\":{\"id\":\"0x7f00aa\",\"comm_name\":\"world\",\"rank\":0,\"n_ranks\":1,\"nnodes\":1},\"metadata\":{\"inspector_output_format_version\":\"v4.0\",\"git_rev\":\"\",\"rec_mechanism\":\"nccl_profiler_interface\",\"dump_timestamp_us\":1748%012.0f,\"hostname\":\"gpu-a\",\"pid\":100},", i * 10
            printf "\"coll_perf\":{\"coll\":\"AllReduce\",\"coll_sn\":%d,\"coll_msg_size_bytes\":%d,\"coll_exec_time_us\":%d,\"coll_timing_source\":\"kernel_gpu\",\"coll_algobw_gbs\":%.6f,\"coll_busbw_gbs\":%.6f,", i + 1, s, 10 + i % 50, s / (10 + i % 50) / 1e3, 1.5 * s / (10 + i % 50) / 1e3
            printf "\"event_trace_ts\":{\"coll_start_ts\":1748%012.0f,\"coll_stop_ts\":1748%012.0f}}}\n", i * 10, i * 10 + 5
        } }' >"$d/gpu-a-pid100.log"
    in=$d/gpu-a-pid100.log ;;
flight-recorder)
    awk -v mb="$MB" 'BEGIN {
        printf "{\"version\": \"2.4\", \"entries\": [\n"
        n = int(mb * 1e6 / 480)
        for (i = 0; i < n; i++) {
            c = 256 * (i % 64 + 1)
            printf "%s{\"collective_seq_id\": %d, \"duration_ms\": 0.25, \"input_dtypes\": [\"Float\"], \"input_sizes\": [[%d, 4]], \"is_p2p\": false, \"op_id\": %d, \"output_dtypes\": [\"Float\"], \"output_sizes\": [[%d, 4]], ", i ? ",\n" : "", i + 1, c, i + 1, c
            printf "\"p2p_seq_id\": 0, \"pg_id\": %d, \"process_group\": [\"%d\", \"%s\"], \"profiling_name\": \"nccl:all_reduce\", \"record_id\": %d, \"retired\": true, \"state\": \"completed\", ", i % 2, i % 2, i % 2 ? "tp" : "default_pg", i
            printf "\"time_created_ns\": 1700000%012.0f, \"time_discovered_completed_ns\": 0, \"time_discovered_started_ns\": 0, \"timeout_ms\": 600000}", i * 1000
        }
        printf "\n], \"nccl_version\": \"2.27.5\", \"pg_config\": {\"0\": {\"desc\": \"default_pg\", \"name\": \"0\", \"ranks\": \"[0, 1, 2, 3]\"}, \"1\": {\"desc\": \"tp\", \"name\": \"1\", \"ranks\": \"[0, 1]\"}}}\n" }' >"$d/fr-rank0.json"
    in=$d/fr-rank0.json ;;
collprof-trace)
    awk -v mb="$MB" 'BEGIN {
        printf "{\"collprof_trace\": 1, \"rank\": 0, \"size\": 1, \"host\": \"a\", \"pid\": 11, \"clock\": \"CLOCK_MONOTONIC\", \"reference\": \"MPI_Init: after two barriers on MPI_COMM_WORLD\", \"thread_level\": 0, \"buffer\": 65536, \"library\": \"Open MPI v4.1.4\"}\n"
        printf "{\"comm\": 0, \"key\": \"0e8a69ddf947c4f1-0\", \"size\": 1, \"members\": [0], \"from\": \"MPI_COMM_WORLD\"}\n"
        printf "{\"comm\": 1, \"key\": \"5d1ce0a2b4b11e07-0\", \"size\": 1, \"members\": [0], \"from\": \"MPI_Comm_split\"}\n"
        n = int(mb * 1e6 / 150)
        for (i = 0; i < n; i++) {
            c = 256 * (i % 64 + 1)
            printf "{\"op\": \"allreduce\", \"mpi\": \"MPI_Allreduce\", \"comm\": %d, \"dtype\": \"float32\", \"in\": %d, \"out\": %d, \"bytes\": %d, \"esize\": 4, \"t\": %.0f, \"dur\": %d}\n", i % 2, c, c, 4 * c, i * 1000, 100 + i % 300
        } }' >"$d/trace.0.jsonl"
    in=$d/trace.0.jsonl ;;
pytorch-et)
    awk -v mb="$MB" 'BEGIN {
        n = int(mb * 1e6 / 260)
        printf "{\"schema\": \"1.1.1-chakra.0.0.4\", \"nodes\": [\n{\"id\": 2, \"name\": \"## process_group:init ##\", \"inputs\": {\"values\": [\"[{\\\"pg_name\\\": \\\"0\\\", \\\"ranks\\\": [], \\\"group_size\\\": 4}]\"]}}"
        for (i = 0; i < n; i++)
            printf ",\n{\"id\": %d, \"name\": \"record_param_comms\", \"inputs\": {\"values\": [[%d, false], [\"0\", \"\"], 0, \"allreduce\"]}, \"attrs\": [{\"name\": \"dtype\", \"value\": \"Float\"}, {\"name\": \"in_msg_nelems\", \"value\": %d}, {\"name\": \"out_msg_nelems\", \"value\": %d}]}", i + 10, i, 256 * (i % 64 + 1), 256 * (i % 64 + 1)
        printf "\n]}\n" }' >"$d/et-rank0.json"
    in=$d/et-rank0.json ;;
chakra-et)
    # protobuf written by tests/data/trace/make_et.py's encoder (python3, no protobuf package)
    python3 - "$MB" "$d/trace.0.et" "$(cd "$(dirname "$0")/.." && pwd)/tests/data/trace" <<'EOF'
import sys
sys.path.insert(0, sys.argv[3])
from make_et import attr_pb, field, node_pb, varint
with open(sys.argv[2], "wb") as f:
    m = field(1, 2, b"0.0.4") + field(2, 2, attr_pb("schema", "string", "1.1.1-chakra.0.0.4"))
    f.write(varint(len(m)) + m)
    i = total = 0
    while total < float(sys.argv[1]) * 1e6:
        a = [("comm_type", "int64", 0), ("comm_size", "int64", 1024 * (i % 64 + 1)),
             ("pg_name", "string", "0")]
        m = node_pb(1000 + i, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 7, 1700000000 + 10 * i,
                    40, a, parent=10 + i)
        f.write(varint(len(m)) + m)
        total += len(varint(len(m)) + m)
        i += 1
EOF
    echo '{"0": [0]}' >"$d/comm_group.json"
    in=$d/trace.0.et
    extra=$d/comm_group.json ;;
*)
    echo "trace_import: no generator for format '$FORMAT' (param, nccl-inspector, flight-recorder, collprof-trace, pytorch-et, chakra-et)" >&2
    exit 2 ;;
esac
bytes=$(wc -c <"$in")
echo "$FORMAT: $(awk -v b="$bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') trace; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for report in "$@"; do
    rm -f "$d/t.h5"
    /usr/bin/time -v "$report" import --trace "$FORMAT" "$in" ${extra:+"$extra"} -o "$d/t.h5" >"$d/out" 2>"$d/time" ||
        { echo "$report: import failed:" >&2; cat "$d/out" "$d/time" >&2; exit 1; }
    ops=$(sed -n 's/^[0-9]* files*: \([0-9]*\) operations.*/\1/p' "$d/out")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$d/time" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$d/time")
    user=$(sed -n 's/.*User time (seconds): //p' "$d/time")
    sys=$(sed -n 's/.*System time (seconds): //p' "$d/time")
    awk -v b="$bytes" -v w="$wall" -v u="$user" -v s="$sys" -v o="$ops" -v r="$rss" -v h5="$(wc -c <"$d/t.h5")" -v who="$report" 'BEGIN {
        c = u + s
        printf "  %s: %d ops: %.2f s wall (%.1f MB/s, %.0f ops/s), %.2f s CPU (%.2f user + %.2f sys: %.1f MB/s), peak RSS %.1f MiB, output %.1f MB\n",
            who, o, w, b / 1e6 / w, o / w, c, u, s, b / 1e6 / c, r / 1024, h5 / 1e6 }'
done
