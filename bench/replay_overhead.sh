#!/bin/sh
# Replay overhead (issue 40's goal: back to back, within 3 % of a plain loop of the same
# calls): a trace of N identical allreduces replayed with collprof --replay (--gaps none,
# --replay-iters 1) against the matrix cell of the same op, size and iterations run as the
# replay runs its ops (--sync none: back to back; --check every: each call's input written
# and its output poisoned before it and checked after it, outside the timed call, as the
# replay does every op; -w 0; the backend's default variant), alternated over R rounds in one
# run, on each backend of --backends.  The same statistic on both sides, from each rank's own
# time of each op (the replay's op rows, the cell's samples): per op (iteration) the largest
# time over the ranks, then the median over the ops; per backend the median over the rounds
# and ratio = cell / replay (>= 0.97: PASS, else WARN).  Beside it the same with the smallest
# time over the ranks (*_last: the rank that came last to the call, which waits for no other:
# the call's own cost without the ranks' skew) and the range of the rounds' figures.  Prints
# the load average before and after.  A benchmark, not a test: exit 0 whatever the ratio, 1
# when something failed to run, 2 on bad usage.  See bench/README.md.
# Usage: bench/replay_overhead.sh [-r R] [-n N] [-c COUNT] [--np N] [--backends LIST]
#        [--collprof PATH]   (run from the build tree, or pass --collprof)
set -u
NAME=replay_overhead.sh
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=5 OPS=200 COUNT=262144 NP=2 BACKENDS=gloo,mpi COLLPROF_BIN=${COLLPROF:-}
while [ $# -gt 0 ]; do
    case $1 in
    -r | --rounds) need_arg "$1" $# && ROUNDS=$2 && shift ;;
    -n | --ops) need_arg "$1" $# && OPS=$2 && shift ;;
    -c | --count) need_arg "$1" $# && COUNT=$2 && shift ;;
    --np) need_arg "$1" $# && NP=$2 && shift ;;
    --backends) need_arg "$1" $# && BACKENDS=$2 && shift ;;
    --collprof) need_arg "$1" $# && COLLPROF_BIN=$2 && shift ;;
    -h | --help)
        sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) bad_usage "unknown option $1" ;;
    esac
    shift
done
at_least "$ROUNDS" 1 && at_least "$OPS" 2 && at_least "$COUNT" 1 && at_least "$NP" 2 ||
    bad_usage "-r, -n, -c, --np: whole numbers (r >= 1, n >= 2, np >= 2)"
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

# table FILE TABLE: its column names on one line, then its rows, fields joined by '|'
table() {
    h5dump -d "/$2" -y -w 0 "$1" | awk '/DATA \{/ { exit } /"[a-z0-9_]*";$/ {
        sub(/";$/, ""); sub(/.*"/, ""); printf "%s%s", n++ ? "|" : "", $0 } END { print "" }'
    h5dump -d "/$2" -y -w 0 "$1" | awk '/DATA \{/ { d = 1; next } d' | tr -d '\n' |
        sed 's/}, *{/}\n{/g' | sed 's/ \+/ /g; s/^ *{ *//; s/ *}.*$//; s/"//g; s/, /|/g'
    echo
}

# the trace: OPS allreduces of COUNT floats on NP ranks, no issue times
r=0
while [ "$r" -lt "$NP" ]; do
    awk -v n="$OPS" -v c="$COUNT" -v np="$NP" 'BEGIN {
        g = "0"; for (i = 1; i < np; i++) g = g ", " i
        printf "[\n"
        for (i = 0; i < n; i++)
            printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"pg_id\": 0, \"global_ranks\": [%s], \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\"}", i ? ",\n" : "", i, g, c, c
        printf "\n]\n" }' >"$D/t-rank$r.json"
    r=$((r + 1))
done
"$REPORT" import --trace param "$D"/t-rank*.json -o "$D/t.h5" >"$D/import.out" 2>&1 ||
    die "import failed: $(cat "$D/import.out")"

# the median of the numbers on stdin, one a line
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# the per-op figures of a run in $1, "SLOWEST FASTEST": per op (iteration) the slowest rank's
# time and the fastest's, each the median over the ops; replay: its op rows (per rank and seq),
# cell: its samples (/cells/000000/samples_us, iterations x ranks)
figure() {
    h5=$(ls "$1"/collprof_*.h5 2>/dev/null | head -n 1)
    [ -n "$h5" ] || return 1
    if [ "$2" = replay ]; then
        table "$h5" replay | awk -F'|' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            $c["what"] == "op" { s = $c["seq"]; t = $c["time_p50_us"]
                if (!(s in hi) || t > hi[s]) hi[s] = t
                if (!(s in lo) || t < lo[s]) lo[s] = t }
            END { for (s in hi) print hi[s], lo[s] }' >"$1/per_op"
    else
        h5dump -d /cells/000000/samples_us -y -w 0 "$h5" | awk '/DATA \{/ { d = 1; next }
            d && /[0-9]/ { gsub(/,/, " "); hi = $1; lo = $1
                for (i = 2; i <= NF; i++) { hi = $i > hi ? $i : hi; lo = $i < lo ? $i : lo }
                print hi, lo }' >"$1/per_op"
    fi
    [ -s "$1/per_op" ] || return 1
    echo "$(cut -d' ' -f1 "$1/per_op" | median) $(cut -d' ' -f2 "$1/per_op" | median)"
}

# "LOW-HIGH" of the numbers on stdin
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'; }

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "replay overhead: $OPS allreduces of $COUNT floats, --np $NP, $ROUNDS rounds; load average before: $(load)"
printf '%-8s %12s %12s %7s %-7s %11s %11s %7s  %s\n' backend cell_p50_us replay_p50_us ratio \
    verdict cell_last replay_last ratio rounds_cell/replay_p50
for b in $(echo "$BACKENDS" | tr ',' ' '); do
    if [ ! -e "$COLLPROF_PLUGIN_PATH/collprof_$b.so" ]; then
        echo "$b: not built, skipped"
        continue
    fi
    k=0
    : >"$D/cell.$b"
    : >"$D/replay.$b"
    while [ "$k" -lt "$ROUNDS" ]; do
        for what in replay cell; do
            o="$D/$b.$what.$k"
            mkdir -p "$o"
            if [ "$what" = replay ]; then
                set -- --replay "$D/t.h5" --replay-iters 1
            else
                set -- --ops allreduce -d float32 --counts "$COUNT" -n "$OPS" -w 0 --sync none \
                    --check every --variants default
            fi
            "$COLLPROF_BIN" --np "$NP" --backends "$b" --output-dir "$o" "$@" >"$o.out" 2>&1 ||
                die "$b $what failed: $(tail -n 3 "$o.out")"
            figure "$o" "$what" >>"$D/$what.$b" || die "$b $what: no result file"
        done
        k=$((k + 1))
    done
    c=$(cut -d' ' -f1 "$D/cell.$b" | median) p=$(cut -d' ' -f1 "$D/replay.$b" | median)
    cl=$(cut -d' ' -f2 "$D/cell.$b" | median) pl=$(cut -d' ' -f2 "$D/replay.$b" | median)
    rc=$(cut -d' ' -f1 "$D/cell.$b" | range) rp=$(cut -d' ' -f1 "$D/replay.$b" | range)
    awk -v b="$b" -v c="$c" -v p="$p" -v cl="$cl" -v pl="$pl" -v rc="$rc" -v rp="$rp" 'BEGIN {
        r = c / p
        printf "%-8s %12.2f %12.2f %7.3f %-7s %11.2f %11.2f %7.3f  %s / %s\n", b, c, p, r,
            (r >= 0.97 ? "PASS" : "WARN"), cl, pl, cl / pl, rc, rp }'
done
echo "load average after: $(load)"
