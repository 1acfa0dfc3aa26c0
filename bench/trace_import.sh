#!/bin/sh
# Import throughput and memory of collprof-report import --trace: a generated PARAM basic trace
# of about MB megabytes (default 100) for one rank, imported once; prints the size, the wall
# time, MB/s, ops/s and the peak RSS (/usr/bin/time -v).  Memory must stay flat as MB grows
# (the ops stream to the file in blocks): run it with 10 and 100 to see.
# Usage: bench/trace_import.sh [MB] [collprof-report]
set -eu
MB=${1:-100}
REPORT=${2:-./collprof-report}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian: time)" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
awk -v mb="$MB" 'BEGIN {
    printf "[\n"
    n = int(mb * 1e6 / 190)
    for (i = 0; i < n; i++) {
        printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"req\": %d, \"startTime_ns\": %d, ", i ? ",\n" : "", i, i, 1700000000000000000 + i * 1000
        printf "\"pg_id\": %d, \"global_ranks\": [0, 1, 2, 3], \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\"}", i % 2, 1024 * (i % 64 + 1), 1024 * (i % 64 + 1)
    }
    printf "\n]\n" }' >"$d/0.json"
bytes=$(wc -c <"$d/0.json")
/usr/bin/time -v "$REPORT" import --trace param "$d/0.json" -o "$d/t.h5" >"$d/out" 2>"$d/time"
ops=$(sed -n 's/^1 file: \([0-9]*\) operations.*/\1/p' "$d/out")
wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$d/time" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$d/time")
user=$(sed -n 's/.*User time (seconds): //p' "$d/time")
awk -v b="$bytes" -v w="$wall" -v u="$user" -v o="$ops" -v r="$rss" -v h5="$(wc -c <"$d/t.h5")" 'BEGIN {
    printf "trace %.1f MB, %d ops: %.2f s wall (%.1f MB/s, %.0f ops/s), %.2f s user CPU (%.1f MB/s), peak RSS %.1f MiB, output %.1f MB\n",
        b / 1e6, o, w, b / 1e6 / w, o / w, u, b / 1e6 / u, r / 1024, h5 / 1e6 }'
