#!/bin/bash
# Each rank's peak resident memory (VmHWM) in collprof --replay of a large trace: for each
# --np N, a PARAM trace of N ranks with -n OPS ops each (default 100,000: allreduces of 1 KiB
# on the world, every 4th on the rank's pair instead), imported, then replayed once
# (--replay-iters 1, back to back) on the self backend by this build and, with --base, by
# another side by side.  Prints rank 0's peak, the largest of the other ranks' peaks, the
# run's wall time and the load average beside it.  Rank 0 once gathered every rank's op rows
# (about 1.4 kB per op of the trace, held several times over) and every rank kept the whole
# trace (0.2 kB per op); see docs/replay.md, "Memory".  The ranks are the launcher's children, told apart by
# their PMIX_RANK in /proc while the run lasts (polled every 50 ms: VmHWM only grows).  Run
# from the build tree (or pass --collprof).  Linux only.
# Exit status: 0 ran, 1 failed, 2 bad usage.  See bench/README.md.
set -u
NAME=replay_memory.sh
COLLPROF_BIN=${COLLPROF:-}
BASE=
NPS="4 16"
ITERS=100000
BENCH_OPTS="NPS ITERS BASE" # the shared options it takes (bench_opt)

usage() {
    cat <<'USAGE'
Usage: bench/replay_memory.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 4,16)
  -n, --iters N      ops per rank of the trace (default: 100000)
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    bench_opt "$@" || bad_usage "unknown option $1"
    shift
    shift
done
at_least "$ITERS" 2 || bad_usage "--iters needs a whole number >= 2"
check_nps 2
[ -r /proc/self/status ] || die "needs Linux's /proc"
find_collprof
find_base
make_tmp
REPORT=$BUILD_DIR/collprof-report
[ -x "$REPORT" ] || die "no collprof-report beside $COLLPROF_BIN (a build with HDF5)"

# "RANK KB" for every rank of the run (the launcher's children), each poll
poll() { # pid of the run
    while kill -0 "$1" 2>/dev/null; do
        for d in /proc/[0-9]*; do
            [ "$(readlink "$d/exe" 2>/dev/null)" = "$bin" ] || continue
            [ "$({ cut -d' ' -f4 "$d/stat"; } 2>/dev/null)" = "$1" ] || continue
            r=$({ tr '\0' '\n' <"$d/environ"; } 2>/dev/null | sed -n 's/^PMIX_RANK=//p')
            kb=$({ awk '$1 == "VmHWM:" { print $2 }' "$d/status"; } 2>/dev/null)
            [ -n "$kb" ] && echo "${r:-launcher} $kb"
        done
        sleep 0.05
    done
}

# the trace: rank r's file r.json; op i is an allreduce of 256 floats on the world, or on the
# pair [r & ~1, r | 1] when i % 4 == 3 (pg_id 1 + r / 2), issued 10 us apart
trace() { # NP
    r=0
    while [ "$r" -lt "$1" ]; do
        awk -v n="$ITERS" -v np="$1" -v r="$r" 'BEGIN {
            w = "0"; for (i = 1; i < np; i++) w = w ", " i
            lo = r - r % 2; p = lo ", " lo + 1
            printf "[\n"
            for (i = 0; i < n; i++) {
                pair = i % 4 == 3
                printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"startTime_ns\": %.0f, \"pg_id\": %d, \"global_ranks\": [%s], \"in_msg_size\": 256, \"out_msg_size\": 256, \"dtype\": \"Float\"}", i ? ",\n" : "", i, 1000000000000 + i * 10000, pair ? 1 + lo / 2 : 0, pair ? p : w
            }
            printf "\n]\n" }' >"$tmp/$r.json"
        r=$((r + 1))
    done
    rm -f "$tmp/t.h5"
    "$REPORT" import --trace param "$tmp"/[0-9]*.json -o "$tmp/t.h5" >"$tmp/import" 2>&1 ||
        die "import failed: $(cat "$tmp/import")"
    rm -f "$tmp"/[0-9]*.json
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
printf '%5s %-6s %10s %14s %20s %8s  %s\n' ranks build ops/rank rank0_peak_MB \
    other_ranks_peak_MB wall_s "load average before, after"
for np in $NPS; do
    trace "$np"
    for build in this ${BASE:+base}; do
        bin=$(build_bin "$build")
        bin=$(readlink -f "$bin") # as /proc/PID/exe names it
        before=$(load)
        start=$(date +%s.%N)
        COLLPROF_PLUGIN_PATH=$(dirname "$bin")/.libs "$bin" --np "$np" --backends self \
            --replay "$tmp/t.h5" --replay-iters 1 --timeout 3600 --output-dir "$tmp" \
            >"$tmp/out" 2>"$tmp/err" &
        pid=$!
        poll "$pid" >"$tmp/rss"
        wait "$pid" || die_run "the $np-rank run of $bin failed"
        end=$(date +%s.%N)
        awk -v np="$np" -v b="$build" -v n="$ITERS" -v w="$(echo "$end - $start" | bc)" \
            -v l="$before; $(load)" '
            $1 == "0" { r0 = $2 > r0 ? $2 : r0 }
            $1 ~ /^[1-9][0-9]*$/ { o = $2 > o ? $2 : o; seen[$1] = 1 }
            END {
                k = 0; for (s in seen) k++
                if (!r0 || k != np - 1) { printf "saw %d of %d ranks\n", k + (r0 > 0), np > "/dev/stderr"; exit 1 }
                printf "%5d %-6s %10d %14.1f %20.1f %8.1f  %s\n", np, b, n, r0 / 1024, o / 1024, w, l
            }' "$tmp/rss" || die "the $np-rank run of $bin: not every rank was seen in /proc"
        rm -rf "$tmp"/collprof_* "$tmp"/*.h5.* 2>/dev/null
    done
done
