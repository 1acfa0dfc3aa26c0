#!/bin/bash
# Rank 0's out-of-band bytes per cell against the number of ranks: for each
# --np N, one run of the self backend (measured cells only, 20 timed
# iterations each by default) of this collprof and, with --base, of another
# build side by side, and rank 0's TCP-channel figures from its -v lines
# "oob (start-up)" and "oob (run)": the run's collectives and bytes minus
# the start-up's, divided by the cells.  Through the star, an allgather
# makes rank 0 send ranks^2 x its part, a gather nothing: how rank 0's bytes
# grow with N says which the per-cell exchanges are.  Run from the build tree
# (or pass --collprof).  Exit status: 0 ran, 1 failed, 2 bad usage.  See
# bench/README.md.
set -u
NAME=oob_bytes.sh
COLLPROF_BIN=${COLLPROF:-}
BASE=
NPS="4 8 16"
ITERS=20
BENCH_OPTS="NPS ITERS BASE" # the shared options it takes (bench_opt)

usage() {
    cat <<'USAGE'
Usage: bench/oob_bytes.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 4,8,16)
  -n, --iters N      timed iterations per cell (default: 20)
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    bench_opt "$@" || bad_usage "unknown option $1"
    shift 2
done
at_least "$ITERS" 1 || bad_usage "--iters needs a whole number >= 1"
check_nps 2 "one rank opens no channel"
find_collprof
find_base
make_tmp

# "COLLECTIVES SENT READ" of rank 0's line LABEL ("start-up" or "run") in a -v log
figures() { # log np label
    grep " r0/$2 [^]]*\\] oob ($3): " "$1" |
        sed -n 's/.*[:,] \([0-9]*\) collectives ([^)]*), \([0-9]*\) bytes sent, \([0-9]*\) bytes read$/\1 \2 \3/p'
}

printf '%5s %-8s %6s %12s %14s %14s %14s\n' ranks build cells collectives sent_B read_B \
    sent_B/cell
for np in $NPS; do
    for build in this ${BASE:+base}; do
        bin=$(build_bin "$build")
        # 3 ops x 3 sizes: 9 measured cells, whatever the build
        COLLPROF_PLUGIN_PATH=$(dirname "$bin")/.libs "$bin" --np "$np" --backends self \
            --ops allreduce,allgather,broadcast --counts 1K,4K,16K -n "$ITERS" -w 1 -v \
            --output-dir "$tmp" >"$tmp/out" 2>"$tmp/err" || die_run "the $np-rank run of $bin failed"
        cells=$(sed -n 's/^# cells: \([0-9]*\) ok[,;].*/\1/p' "$tmp/out")
        read -r c0 s0 r0 <<<"$(figures "$tmp/err" "$np" start-up)"
        read -r c1 s1 r1 <<<"$(figures "$tmp/err" "$np" run)"
        [ -n "${c1:-}" ] && [ -n "${c0:-}" ] && [ "${cells:-0}" -gt 0 ] ||
            die "no oob lines of rank 0 in the $np-rank run of $bin (a build without a TCP channel?)"
        printf '%5s %-8s %6s %12s %14s %14s %14s\n' "$np" "$build" "$cells" $((c1 - c0)) \
            $((s1 - s0)) $((r1 - r0)) $(((s1 - s0) / cells))
    done
done
