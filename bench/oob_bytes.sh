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

usage() {
    cat <<'USAGE'
Usage: bench/oob_bytes.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 4,8,16)
  -n, --iters N      timed iterations per cell (default: 20)
  --base PATH        another collprof build to run beside this one (its
                     plugins: .libs next to it)
  --collprof PATH    collprof binary (default: $COLLPROF, ./collprof, PATH)
  -h, --help         this help
USAGE
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    --np) need_arg "$1" $# && NPS=$(echo "$2" | tr , ' ') && shift ;;
    -n | --iters) need_arg "$1" $# && ITERS=$2 && shift ;;
    --base) need_arg "$1" $# && BASE=$2 && shift ;;
    --collprof) need_arg "$1" $# && COLLPROF_BIN=$2 && shift ;;
    -h | --help) usage && exit 0 ;;
    *) bad_usage "unknown option $1" ;;
    esac
    shift
done
at_least "$ITERS" 1 || bad_usage "--iters needs a whole number >= 1"
for np in $NPS; do
    at_least "$np" 2 || bad_usage "--np: whole numbers >= 2 (one rank opens no channel), not '$np'"
done
find_collprof
find_base
tmp=$(mktemp -d) || die "no temporary directory"
trap 'rm -rf "$tmp"' EXIT

# "COLLECTIVES SENT READ" of rank 0's line LABEL ("start-up" or "run") in a -v log
figures() { # log np label
    grep " r0/$2 [^]]*\\] oob ($3): " "$1" |
        sed -n 's/.*[:,] \([0-9]*\) collectives ([^)]*), \([0-9]*\) bytes sent, \([0-9]*\) bytes read$/\1 \2 \3/p'
}

printf '%5s %-8s %6s %12s %14s %14s %14s\n' ranks build cells collectives sent_B read_B \
    sent_B/cell
for np in $NPS; do
    for build in this base; do
        bin=$COLLPROF_BIN
        if [ "$build" = base ]; then
            [ -n "$BASE" ] || continue
            bin=$BASE
        fi
        # 3 ops x 3 sizes: 9 measured cells, whatever the build
        COLLPROF_PLUGIN_PATH=$(dirname "$bin")/.libs "$bin" --np "$np" --backends self \
            --ops allreduce,allgather,broadcast --counts 1K,4K,16K -n "$ITERS" -w 1 -v \
            --output-dir "$tmp" >"$tmp/out" 2>"$tmp/err" || {
            tail -n 5 "$tmp/err" >&2
            die "the $np-rank run of $bin failed"
        }
        cells=$(sed -n 's/^# cells: \([0-9]*\) ok, .*/\1/p' "$tmp/out")
        read -r c0 s0 r0 <<<"$(figures "$tmp/err" "$np" start-up)"
        read -r c1 s1 r1 <<<"$(figures "$tmp/err" "$np" run)"
        [ -n "${c1:-}" ] && [ -n "${c0:-}" ] && [ "${cells:-0}" -gt 0 ] ||
            die "no oob lines of rank 0 in the $np-rank run of $bin (a build without a TCP channel?)"
        printf '%5s %-8s %6s %12s %14s %14s %14s\n' "$np" "$build" "$cells" $((c1 - c0)) \
            $((s1 - s0)) $((r1 - r0)) $(((s1 - s0) / cells))
    done
done
