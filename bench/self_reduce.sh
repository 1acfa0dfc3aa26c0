#!/bin/sh
# The self backend's reductions against its allgather as the ranks grow: for
# each --np N, collprof --np N --backends self --ops allreduce,allgather,
# reducescatter on --counts floats (default 1M), of this build and, with
# --base, of another side by side.  It prints each cell's time per iteration
# (the table's time: mean over iterations of the max over ranks; not the wall
# time, which includes the exact check) and allreduce / allgather.  An
# allreduce that costs O(count) per rank stays within a few allgathers
# whatever N; one that costs O(N x count) per rank grows with N.  The load
# (1-minute average, /proc/loadavg) before each run is printed beside it: on a
# shared machine it moves the figures more than anything else.  Run from the
# build tree (or pass --collprof).
# Exit status: 0 ran, 1 failed, 2 bad usage.  See bench/README.md.
set -u
# shellcheck disable=SC2034 # read by lib.sh
NAME=self_reduce.sh
COLLPROF_BIN=${COLLPROF:-}
BASE=
NPS="16 64 128"
COUNT=1M
ITERS=2
WARMUP=1
CHECK=1
BENCH_OPTS="NPS ITERS WARMUP BASE" # the shared options it takes (bench_opt)

usage() {
    cat <<'USAGE'
Usage: bench/self_reduce.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 16,64,128)
  -c, --count C      float32 elements per cell (default: 1M)
  -n, --iters N      timed iterations per cell (default: 2)
  -w, --warmup W     warm-up iterations per cell (default: 1)
  --no-check         collprof --check 0 (quicker runs; the timed region is the same)
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    -c | --count) need_arg "$1" $# && COUNT=$2 && shift ;;
    --no-check) CHECK=0 ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
at_least "$ITERS" 1 || bad_usage "--iters needs a whole number >= 1"
at_least "$WARMUP" 0 || bad_usage "--warmup needs a whole number >= 0"
check_nps 2
find_collprof
find_base
make_tmp

printf '%5s %-6s %8s %14s %14s %18s %10s\n' ranks build load1 allreduce_ms allgather_ms \
    reducescatter_ms ar/ag
for np in $NPS; do
    for build in this ${BASE:+base}; do
        bin=$(build_bin "$build")
        load=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
        COLLPROF_PLUGIN_PATH=$(dirname "$bin")/.libs "$bin" --np "$np" --backends self \
            --ops allreduce,allgather,reducescatter --counts "$COUNT" -d float32 -n "$ITERS" \
            -w "$WARMUP" --check "$CHECK" --timeout 600 --output-dir "$tmp" \
            >"$tmp/out" 2>"$tmp/err" || die_run "the $np-rank run of $bin failed"
        # the console table: backend variant op size count type redop root time(us) ...
        awk -v np="$np" -v b="$build" -v load="$load" '
            $1 == "self" && NF >= 9 && $0 !~ /in-place/ { t[$3] = $9 / 1000 }
            END {
                if (!("allreduce" in t) || !("allgather" in t) || !("reducescatter" in t)) {
                    print "no time for every op in the table" > "/dev/stderr"; exit 1
                }
                printf "%5d %-6s %8s %14.1f %14.1f %18.1f %10.2f\n", np, b, load, t["allreduce"],
                    t["allgather"], t["reducescatter"], t["allreduce"] / t["allgather"]
            }' "$tmp/out" || die "the $np-rank run of $bin: no table"
    done
done
