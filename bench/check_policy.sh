#!/bin/bash
# What --check costs: the same matrix under each check policy (default: 0, last,
# sample:10, every), interleaved over rounds in one run, and per policy the median
# over rounds of the run's wall time, its CPU time (user + sys of the launcher and
# every rank), and the sum over cells of the timed mean (to see whether the policy
# moved the figures themselves).  See bench/README.md.  Exit status: 0 ran, 1 a run
# failed, 2 bad usage.
set -u

usage() {
    cat <<'EOF'
Usage: bench/check_policy.sh [OPTIONS]
Runs collprof --np N over one matrix under each --check policy, the policies in
a rotated order in each of R rounds, and prints per policy the median over the
rounds of: wall seconds, CPU seconds (user + sys, the launcher and its ranks),
sum of the cells' timed means (ms), and wall and CPU against --check last.

  -r, --rounds R        rounds (default: 3)
      --np N            ranks (default: 4)
      --backends LIST   (default: self,mpi)
      --ops LIST        (default: allreduce,alltoall)
      --counts LIST     elements (default: 1M,16M)
  -n, --iters N         timed iterations (default: 20, collprof's)
  -w, --warmup W        warm-up iterations (default: 5, collprof's)
      --policies LIST   --check values, comma-separated
                        (default: 0,last,sample:10,every)
      --args "ARGS"     more collprof options (split on blanks)
      --collprof PATH   collprof binary (default: ./collprof, else on PATH)
  -h, --help            this help

Every run uses --variants default, the defaults of --sync (barrier), --alloc and
--rotate-buffers, and writes to a temporary directory.  The load average is
printed before and after: figures are only comparable side by side in one run.
EOF
}

NAME=check_policy.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=3 NP=4 BACKENDS=self,mpi OPS=allreduce,alltoall COUNTS=1M,16M ITERS=20 WARMUP=5
POLICIES=0,last,sample:10,every ARGS=
COLLPROF_BIN=${COLLPROF_BIN:-}
while [ $# -gt 0 ]; do
    case $1 in
    -r | --rounds) need_arg "$1" $#; ROUNDS=$2; shift ;;
    --np) need_arg "$1" $#; NP=$2; shift ;;
    --backends) need_arg "$1" $#; BACKENDS=$2; shift ;;
    --ops) need_arg "$1" $#; OPS=$2; shift ;;
    --counts) need_arg "$1" $#; COUNTS=$2; shift ;;
    -n | --iters) need_arg "$1" $#; ITERS=$2; shift ;;
    -w | --warmup) need_arg "$1" $#; WARMUP=$2; shift ;;
    --policies) need_arg "$1" $#; POLICIES=$2; shift ;;
    --args) need_arg "$1" $#; ARGS=$2; shift ;;
    --collprof) need_arg "$1" $#; COLLPROF_BIN=$2; shift ;;
    -h | --help) usage; exit 0 ;;
    *) bad_usage "unknown option '$1'" ;;
    esac
    shift
done
at_least "$ROUNDS" 1 || bad_usage "--rounds: '$ROUNDS' is not a whole number >= 1"
at_least "$NP" 1 || bad_usage "--np: '$NP' is not a whole number >= 1"
find_collprof
[ -x /usr/bin/time ] || die "needs /usr/bin/time (GNU time) for the CPU seconds"
export COLLPROF_PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-$BUILD_DIR/.libs}
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check_policy.XXXXXX") || die "no temporary directory"
trap 'rm -rf "$tmp"' EXIT
IFS=, read -r -a pol <<<"$POLICIES"
np=${#pol[@]}

echo "# collprof: $COLLPROF_BIN"
echo "# matrix: --np $NP --backends $BACKENDS --variants default --ops $OPS --counts $COUNTS" \
    "-n $ITERS -w $WARMUP $ARGS"
echo "# policy: --sync barrier (default), each policy once per round, order rotated per round"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for ((r = 0; r < ROUNDS; r++)); do
    for ((j = 0; j < np; j++)); do
        p=${pol[$(((j + r) % np))]}
        out="$tmp/$r.$p"
        mkdir -p "$out.d"
        # shellcheck disable=SC2086 # ARGS is a list of options
        /usr/bin/time -f '%e %U %S' -o "$out.time" "$COLLPROF_BIN" --np "$NP" \
            --backends "$BACKENDS" --variants default --ops "$OPS" --counts "$COUNTS" \
            -n "$ITERS" -w "$WARMUP" --check "$p" $ARGS --output-dir "$out.d" \
            </dev/null >"$out.out" 2>"$out.err"
        rc=$?
        [ "$rc" -eq 0 ] || { cat "$out.err" >&2; die "round $((r + 1)), --check $p: exit $rc"; }
        # wall, cpu, sum of the cells' mean times (the table's time(us), 9th column)
        awk -v p="$p" 'NR == FNR { wall = $1; cpu = $2 + $3; next }
            /^ / && $9 ~ /^[0-9.]+$/ { sum += $9 }
            END { printf "%s %.2f %.2f %.3f\n", p, wall, cpu, sum / 1e3 }' \
            "$out.time" "$out.out" >>"$tmp/all"
    done
    echo "# round $((r + 1)) done, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# per policy the median of each column over the rounds, then ratios against last
printf '%-12s %9s %9s %13s %11s %10s\n' policy wall_s cpu_s cells_ms wall/last cpu/last
for p in "${pol[@]}"; do
    med() { awk -v p="$p" -v c="$1" '$1 == p { print $c }' "$tmp/all" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
    echo "$p $(med 2) $(med 3) $(med 4)"
done >"$tmp/med"
awk '$1 == "last" { w = $2; c = $3 } { row[NR] = $0 }
    END { for (i = 1; i <= NR; i++) { split(row[i], f, " ")
        printf "%-12s %9.2f %9.2f %13.3f %11s %10s\n", f[1], f[2], f[3], f[4],
            (w > 0 ? sprintf("%.2f", f[2] / w) : "-"), (c > 0 ? sprintf("%.2f", f[3] / c) : "-") } }' \
    "$tmp/med"
