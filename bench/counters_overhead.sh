#!/bin/bash
# What --counters costs a run (issue 41 item 5): collprof's default matrix (allreduce,
# allgather, reducescatter, alltoall at 1M, 4M, 16M elements; --np 2 --backends self) with
# --counters auto and with --counters none, the two in alternating order over R rounds in this
# one invocation, and per mode the median over the rounds of the sum of the cells' wall times
# (from each cell's start to the next one's, /results start_time; the last cell has no next and
# is left out), then per cell the median over rounds of auto's wall against none's, and the
# direct cost: from one more run at -vv, rank 0's two readings and the gather per cell (its
# "counters: ..." line) against that cell's wall.  The readings are outside the timed samples
# (src/runner/runner.c cp_run_cell: cp_runner_counters_before/after around run_timed).  The
# 1-minute load is printed before and after every round.  See docs/metrics.md "Cost".
# Exit status: 0 ran, 1 a run failed, 2 bad usage.
set -u

np=2
rounds=5
backend=self
counts=1M,4M,16M
ops=allreduce,allgather,reducescatter,alltoall
collprof=${COLLPROF:-./collprof}
while [ $# -gt 0 ]; do
    case "$1" in
    --np) np=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --backends) backend=$2; shift 2 ;;
    --counts) counts=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --collprof) collprof=$2; shift 2 ;;
    -h | --help)
        echo "Usage: bench/counters_overhead.sh [--np 2] [--rounds 5] [--backends self] [--counts 1M,4M,16M]"
        echo "                                  [--ops allreduce,allgather,reducescatter,alltoall] [--collprof PATH]"
        exit 0 ;;
    *) echo "bench/counters_overhead.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
report="$(dirname "$collprof")/collprof-report"
[ -x "$collprof" ] && [ -x "$report" ] || { echo "no collprof/collprof-report at $collprof" >&2; exit 2; }
export COLLPROF_PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-$(cd "$(dirname "$collprof")" && pwd)/.libs}
work=$(mktemp -d "${TMPDIR:-/tmp}/cp-counters-bench.XXXXXX")
load() { cut -d' ' -f1 /proc/loadavg; }
trap 'rm -rf "$work"' EXIT

# the cells' walls of one run, "cell wall_s" per line
walls() { # H5
    "$report" export --csv "$1" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "start_time") c = i; next }
        { s[$1] = $c } END { for (k = 0; (k + 1) in s; k++) printf "%d %.6f\n", k, s[k + 1] - s[k] }'
}

echo "matrix: --np $np --backends $backend --ops $ops --counts $counts, $rounds rounds"
for r in $(seq 1 "$rounds"); do
    l0=$(load)
    if [ $((r % 2)) -eq 1 ]; then order="auto none"; else order="none auto"; fi
    for mode in $order; do
        d="$work/$mode-$r"
        mkdir -p "$d"
        "$collprof" --np "$np" --backends "$backend" --ops "$ops" --counts "$counts" \
            --counters "$mode" --output-dir "$d" >/dev/null 2>"$d/err" || {
            echo "run $mode $r failed:" >&2; cat "$d/err" >&2; exit 1; }
        walls "$d"/collprof_*.h5 >"$work/$mode.$r.walls"
    done
    echo "round $r ($order): load $l0 before, $(load) after"
done
echo "load after the rounds: $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in auto none; do
    for r in $(seq 1 "$rounds"); do awk '{ s += $2 } END { printf "%.6f\n", s }' "$work/$mode.$r.walls"; done |
        sort -g | awk -v m="$mode" '{ v[NR] = $1 } END { printf "%s: median over %d rounds of the cells'"'"' wall sum: %.3f s\n", m, NR, v[int((NR + 1) / 2)] }'
done
# per cell: median over rounds of (auto - none) / none
for r in $(seq 1 "$rounds"); do
    paste -d' ' "$work/auto.$r.walls" "$work/none.$r.walls" | awk '{ printf "%d %.6f\n", $1, ($2 - $4) / $4 * 100 }'
done | sort -k1,1n -k2,2g | awk '{ v[$1] = v[$1] " " $2; n[$1]++ }
    END { for (c in v) { split(substr(v[c], 2), a, " "); m = a[int((n[c] + 1) / 2)]; printf "%d %.2f\n", c, m } }' |
    sort -k1,1n | awk '{ print "cell " $1 ": auto vs none, median over rounds " $2 " %" }' | tee "$work/cells"
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%s", v[int((NR + 1) / 2)] }'; }
awk '{ print $(NF - 1) }' "$work/cells" | median | awk '{ printf "median over cells: %s %%\n", $1 }'
# the readings' and the gather's own cost, from rank 0's -vv line of every cell (one more run)
mkdir -p "$work/vv"
"$collprof" -vv --np "$np" --backends "$backend" --ops "$ops" --counts "$counts" --counters auto \
    --output-dir "$work/vv" 2>&1 >/dev/null |
    sed -n 's/.*counters: \([0-9]*\) on this node, its two readings \([0-9]*\) us, the gather \([0-9]*\) us, \([0-9]*\) bytes.*/\1 \2 \3 \4/p' \
        >"$work/costs"
echo "per cell ($(wc -l <"$work/costs") cells, $(awk 'NR == 1 { print $1 }' "$work/costs") counters):" \
    "two readings median $(awk '{ print $2 }' "$work/costs" | median) us," \
    "gather median $(awk '{ print $3 }' "$work/costs" | median) us," \
    "bytes to rank 0 median $(awk '{ print $4 }' "$work/costs" | median)"
# the direct cost against the same run's cell walls (the last cell has no wall: left out)
walls "$work"/vv/collprof_*.h5 >"$work/vv.walls"
paste -d' ' "$work/vv.walls" <(head -n "$(wc -l <"$work/vv.walls")" "$work/costs") |
    awk '{ printf "%.4f\n", ($4 + $5) * 1e-6 / $2 * 100 }' >"$work/direct"
echo "readings + gather against the cell's wall (-vv run): median $(median <"$work/direct") %," \
    "max $(sort -g "$work/direct" | tail -n 1) %"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
