#!/bin/sh
# bench/screen.sh: collprof --screen against --link-sweep on one virtual Slurm cluster of this
# machine (contrib/slurm-local --nodes N: real slurmctld and slurmd, one network namespace per
# node), side by side in one run, and the screen's verdicts over repeated runs:
#
#   1. a healthy cluster: the link sweep's time and rounds, then RUNS screens (seeds 1..RUNS):
#      time, rounds and what each flagged (false positives);
#   2. SLOW (a node) throttled to RATE: RUNS screens, how many named it, alone, as a node;
#   3. the link between the first two nodes of a random round throttled to RATE: how many
#      screens named it as a link (it shows only in screens whose random rounds pair them).
#
# Prints one line per run and a total per case, with the load average.  It is a benchmark:
# exit 0 whatever the figures, 1 when something failed to run, 2 on bad usage.  Needs root.
#
# Usage: bench/screen.sh [--nodes 16] [--runs 5] [--backend gloo] [--slow n3] [--rate 100mbit]
#                        [--threshold 0.3] [--sizes 8,256K] [--iters 10] [--collprof PATH]
# shellcheck disable=SC2034 # read by lib.sh
NAME=screen.sh
. "$(dirname "$0")/lib.sh"

N=16
RUNS=5
BACKEND=gloo
SLOW=n3
RATE=100mbit
THR=0.3
SIZES=8,256K
ITERS=10
usage() {
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
}
while [ $# -gt 0 ]; do
    case $1 in
    --nodes | --runs | --backend | --slow | --rate | --threshold | --sizes | --iters)
        need_arg "$1" $#
        case $1 in
        --nodes) N=$2 ;;
        --runs) RUNS=$2 ;;
        --backend) BACKEND=$2 ;;
        --slow) SLOW=$2 ;;
        --rate) RATE=$2 ;;
        --threshold) THR=$2 ;;
        --sizes) SIZES=$2 ;;
        --iters) ITERS=$2 ;;
        esac
        shift
        ;;
    *) bench_opt "$@" || bad_usage "unknown option '$1'"; shift ;;
    esac
    shift
done
at_least "$N" 4 || bad_usage "--nodes: '$N' is not a whole number >= 4"
at_least "$RUNS" 1 || bad_usage "--runs: '$RUNS' is not a whole number >= 1"
at_least "$ITERS" 1 || bad_usage "--iters: '$ITERS' is not a whole number >= 1"
case $SLOW in n[0-9]*) ;; *) bad_usage "--slow: '$SLOW' is not a node name n1..n$N" ;; esac
at_least "${SLOW#n}" 1 && [ "${SLOW#n}" -le "$N" ] || bad_usage "--slow: no node $SLOW of $N"
[ "$(id -u)" = 0 ] || die "virtual nodes need root (network namespaces, slurmd)"
find_collprof
"$COLLPROF_BIN" --help 2>/dev/null | grep -q -- '--screen' || die "$COLLPROF_BIN has no --screen"
cluster_setup collprof-screen

now() { date +%s.%N; }
diff_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
load() { cut -d' ' -f1 /proc/loadavg; }
# collprof on every node, one rank each, into $WORK/$1 (rest: options); rc, secs, out
run() {
    d=$WORK/$1
    shift
    mkdir -p "$d"
    wait_idle
    t=$(now)
    rc=0
    timeout -k 5 900 srun --immediate=60 --mpi=pmix -N "$N" --ntasks-per-node=1 \
        "$COLLPROF_BIN" --backends "$BACKEND" --sweep-sizes "$SIZES" -n "$ITERS" -w 2 \
        --output-dir "$d" "$@" >"$d/out" 2>"$d/err" || rc=$?
    secs=$(diff_s "$t" "$(now)")
    out=$d/out
}
# the screen's verdict in one line: rounds, flagged nodes and links
verdict() {
    rounds=$(sed -n 's/^== screen: [^,]*, \([0-9]*\) rounds.*/\1/p' "$out" | head -n 1)
    nodes=$(grep '^slow  *n[0-9]*:\|^unreachable ' "$out" | awk '{print $2}' | tr -d : |
        tr '\n' ' ')
    links=$(grep '^slow  *n[0-9]*-n[0-9]*:' "$out" | awk '{print $2}' | tr -d : | tr '\n' ' ')
    echo "rounds ${rounds:--} nodes [${nodes% }] links [${links% }]"
}

echo "# collprof screen benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(nproc) CPUs"
echo "# policy: $N virtual nodes, namespaces of this one machine (shared CPUs and memory); one"
echo "# rank per node, backend $BACKEND, --sweep-sizes $SIZES -n $ITERS -w 2; screens at"
echo "# --screen-threshold $THR; a fault is tc tbf at $RATE; times are srun's wall clock"
t=$(now)
timeout -k 5 300 bash "$SL" --nodes "$N" start >"$WORK/start.out" 2>"$WORK/start.err" ||
    die "the $N-node cluster did not start: $(tail -n 1 "$WORK/start.err")"
eval "$(grep '^export ' "$WORK/start.out")"
echo "# cluster of $N nodes started in $(diff_s "$t" "$(now)") s"
status=0

echo "== 1. healthy: link sweep, then $RUNS screens"
run sweep --link-sweep
[ "$rc" = 0 ] || status=1
echo "link-sweep: $secs s, $(grep -c '^# link sweep .* bandwidth' "$out") rounds, rc $rc, load $(load)"
fp=0
for s in $(seq 1 "$RUNS"); do
    run "clean$s" --screen --screen-threshold "$THR" --seed "$s"
    [ "$rc" -le 2 ] || status=1
    [ "$rc" = 0 ] || fp=$((fp + 1))
    echo "screen seed $s: $secs s, rc $rc, $(verdict), load $(load)"
done
echo "healthy: $fp of $RUNS screens flagged something"

echo "== 2. $SLOW throttled to $RATE"
bash "$SL" shape "$SLOW" "$RATE" >/dev/null 2>&1 || die "could not shape $SLOW"
hit=0
for s in $(seq 1 "$RUNS"); do
    run "node$s" --screen --screen-threshold "$THR" --seed "$s"
    v=$(verdict)
    case $v in *"nodes [$SLOW] links []"*) hit=$((hit + 1)) ;; esac
    echo "screen seed $s: $secs s, rc $rc, $v, load $(load)"
done
echo "slow node: $SLOW named alone in $hit of $RUNS screens"
bash "$SL" shape "$SLOW" off >/dev/null 2>&1

echo "== 3. one link throttled to $RATE (the pair each seed's first random round makes with n1)"
hit=0 seen=0
for s in $(seq 1 "$RUNS"); do
    # the partner of n1 in seed s's first random round, from the healthy screen's pairs
    peer=$(grep '^# screen .* bandwidth .* round 1/' "$WORK/clean$s/out" |
        grep -o ' n1-n[0-9]* \| n[0-9]*-n1 ' | tr -d ' ' | sed 's/n1-//; s/-n1//' | head -n 1)
    [ -n "$peer" ] || continue
    seen=$((seen + 1))
    bash "$SL" shape-pair n1 "$peer" "$RATE" >/dev/null 2>&1 || die "could not shape n1-$peer"
    run "link$s" --screen --screen-threshold "$THR" --seed "$s"
    v=$(verdict)
    case $v in *"nodes [] links [n1-$peer]"* | *"nodes [] links [$peer-n1]"*) hit=$((hit + 1)) ;; esac
    echo "screen seed $s, n1-$peer throttled: $secs s, rc $rc, $v, load $(load)"
    bash "$SL" shape-pair n1 "$peer" off >/dev/null 2>&1
done
echo "slow link: named as a link (and no node) in $hit of $seen screens"
[ "$status" = 0 ] || die "some run failed (see rc above)"
