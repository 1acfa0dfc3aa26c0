#!/bin/bash
# Out-of-band channel benchmark: wall time of a many-cell gloo run on 3 (--np)
# local ranks with the full-world OOB collectives over the TCP channel and
# over PMIx fences (COLLPROF_OOB=pmix, the path of collprof before the TCP
# channel), side by side in one run; and rank 0's "oob (run)" -v line.
# Two sizes: 160 cells (one dtype family) and 1440 cells (nine dtypes); the
# PMIx path's cost per cell grows with the cells before it, the TCP one's
# does not.  Run from the build tree (or pass --collprof).  Exit status: 0
# ran, 1 failed, 2 bad usage.  See bench/README.md.
set -u
NAME=oob_cells.sh
COLLPROF_BIN=${COLLPROF:-}
ROUNDS=1
SIZES="160 1440"
CHANNELS="pmix tcp"
NP=3
BENCH_OPTS="ROUNDS NP" # the shared options it takes (bench_opt)

usage() {
    cat <<'USAGE'
Usage: bench/oob_cells.sh [OPTIONS]
  -r, --rounds R        runs of each (size, channel) (default: 1)
      --sizes LIST      160, 1440 or both (default: "160 1440")
      --channels LIST   pmix, tcp or both (default: "pmix tcp"); with --np 1, tcp
                        means collprof's default, which keeps the exchanges in
                        the process (printed as "none")
      --np N            ranks (default: 3)
      --collprof PATH   collprof binary (default: $COLLPROF, ./collprof, PATH)
  -h, --help            this help
USAGE
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) need_arg "$1" $# && SIZES=$(echo "$2" | tr , ' ') && shift ;;
    --channels) need_arg "$1" $# && CHANNELS=$(echo "$2" | tr , ' ') && shift ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
at_least "$ROUNDS" 1 || bad_usage "--rounds needs a whole number >= 1"
at_least "$NP" 1 || bad_usage "--np needs a whole number >= 1"
for s in $SIZES; do
    case $s in 160 | 1440) ;; *) bad_usage "--sizes: 160 or 1440, not $s" ;; esac
done
for c in $CHANNELS; do
    case $c in pmix | tcp) ;; *) bad_usage "--channels: pmix or tcp, not $c" ;; esac
done
find_collprof
export COLLPROF_PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-$BUILD_DIR/.libs}
export GLOO_SOCKET_IFNAME=lo
make_tmp

# cells: 5 ops x dtypes x 4 redops x 2 in-place x 4 variants (unsupported ones counted too)
dtypes() {
    if [ "$1" = 160 ]; then
        echo int32
    else
        echo int8,uint8,int32,uint32,int64,uint64,float16,float32,float64
    fi
}

printf '%-6s %-5s %5s %8s  %s\n' cells oob round wall_s "rank 0's oob (run) line"
for size in $SIZES; do
    for round in $(seq 1 "$ROUNDS"); do
        for ch in $CHANNELS; do
            mode=
            [ "$ch" = pmix ] && mode=pmix
            t0=$(date +%s.%N)
            COLLPROF_OOB=$mode "$COLLPROF_BIN" --np "$NP" --backends gloo \
                --ops allreduce,reducescatter,reduce,allgather,broadcast --counts 3K \
                -d "$(dtypes "$size")" -o sum,prod,min,max --inplace both -n 2 -w 1 \
                --variants default,ring,ring_chunked,halving_doubling -v \
                --output-dir "$tmp" >"$tmp/out" 2>"$tmp/err" || die_run "the $size-cell run over $ch failed"
            t1=$(date +%s.%N)
            line=$(grep " r0/$NP [^]]*\\] oob (run): " "$tmp/err" | sed 's/.*\] oob (run): //')
            [ "$NP" = 1 ] && [ "$ch" = tcp ] && ch=none
            printf '%-6s %-5s %5s %8.2f  %s\n' "$size" "$ch" "$round" \
                "$(echo "$t1 - $t0" | bc)" "$line"
        done
    done
done
