#!/bin/sh
# Gap fidelity of collprof --replay --gaps trace (issue 40's goal: each op's issue within 20 us
# of its recorded offset at p99, on the host, on 4 ranks): a PARAM trace (startTime_ns) of N
# allreduces of 4 KiB per rank, GAP us apart (a gap well above an op's time, so that no op is
# late but by the machine), imported and replayed with --np NP --gaps trace on each backend of
# --backends (default self,gloo); prints per backend the worst rank's p50, p99 and largest
# |issue - target| and its late issues (the /replay rank rows), with the load average before
# and after.  A benchmark, not a test: exit 0 whatever the figures, 1 when something failed
# to run, 2 on bad usage.  See bench/README.md.
# Usage: bench/replay_gaps.sh [-n N] [--gap US] [--np NP] [--iters K] [--backends LIST]
#        [--collprof PATH]   (run from the build tree, or pass --collprof)
set -u
NAME=replay_gaps.sh
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

OPS=200 GAP=2000 NP=4 ITERS=3 BACKENDS=self,gloo COLLPROF_BIN=${COLLPROF:-}
while [ $# -gt 0 ]; do
    case $1 in
    -n | --ops) need_arg "$1" $# && OPS=$2 && shift ;;
    --gap) need_arg "$1" $# && GAP=$2 && shift ;;
    --np) need_arg "$1" $# && NP=$2 && shift ;;
    --iters) need_arg "$1" $# && ITERS=$2 && shift ;;
    --backends) need_arg "$1" $# && BACKENDS=$2 && shift ;;
    --collprof) need_arg "$1" $# && COLLPROF_BIN=$2 && shift ;;
    -h | --help)
        sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) bad_usage "unknown option $1" ;;
    esac
    shift
done
at_least "$OPS" 2 && at_least "$GAP" 1 && at_least "$NP" 1 && at_least "$ITERS" 1 ||
    bad_usage "-n, --gap, --np, --iters: whole numbers (n >= 2)"
find_collprof
REPORT=$BUILD_DIR/collprof-report
[ -x "$REPORT" ] || die "no collprof-report beside $COLLPROF_BIN (a build with HDF5)"
command -v h5dump >/dev/null || die "needs h5dump (Debian: hdf5-tools)"
: "${COLLPROF_PLUGIN_PATH:=$BUILD_DIR/.libs}"
export COLLPROF_PLUGIN_PATH
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT

# the trace: every rank's ops at the same offsets, GAP us apart (%.0f: mawk's %d stops at
# 2^31; a base of 1e12 ns keeps the offsets exact in awk's doubles)
r=0
while [ "$r" -lt "$NP" ]; do
    awk -v n="$OPS" -v gap="$GAP" -v np="$NP" 'BEGIN {
        g = "0"; for (i = 1; i < np; i++) g = g ", " i
        printf "[\n"
        for (i = 0; i < n; i++)
            printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"startTime_ns\": %.0f, \"pg_id\": 0, \"global_ranks\": [%s], \"in_msg_size\": 1024, \"out_msg_size\": 1024, \"dtype\": \"Float\"}", i ? ",\n" : "", i, 1000000000000 + i * gap * 1000, g
        printf "\n]\n" }' >"$D/t-rank$r.json"
    r=$((r + 1))
done
"$REPORT" import --trace param "$D"/t-rank*.json -o "$D/t.h5" >"$D/import.out" 2>&1 ||
    die "import failed: $(cat "$D/import.out")"

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "gap fidelity: $OPS allreduces of 4 KiB per rank, $GAP us apart, --np $NP, --replay-iters $ITERS; load average before: $(load)"
printf '%-8s %11s %11s %11s %6s %12s  %s\n' backend err_p50_us err_p99_us err_max_us late span/window "p99 <= 20 us"
for b in $(echo "$BACKENDS" | tr ',' ' '); do
    if [ ! -e "$COLLPROF_PLUGIN_PATH/collprof_$b.so" ]; then
        echo "$b: not built, skipped"
        continue
    fi
    mkdir -p "$D/$b"
    "$COLLPROF_BIN" --np "$NP" --backends "$b" --replay "$D/t.h5" --replay-iters "$ITERS" \
        --gaps trace --output-dir "$D/$b" >"$D/$b.out" 2>&1 || die "$b failed: $(tail -n 3 "$D/$b.out")"
    # the rank rows of the summary: rank ops p50 p99 max late span recorded ratio
    awk -v b="$b" '/^gaps trace:/ { d = 1; next } d && $1 == "rank" { next }
        d && NF == 9 && $1 ~ /^[0-9]+$/ { n++; if ($3 > p50) p50 = $3; if ($4 > p99) p99 = $4
            if ($5 > mx) mx = $5; late += $6; if ($9 > ratio) ratio = $9; next } d { d = 0 }
        END { if (!n) exit 1
            printf "%-8s %11.1f %11.1f %11.1f %6d %12.4f  %s\n", b, p50, p99, mx, late, ratio,
                (p99 <= 20 ? "yes" : "no") }' "$D/$b"/collprof_*.txt || die "$b: no rank rows in its summary"
done
echo "load average after: $(load) (the worst rank's figures; late: issues past their target, summed)"
