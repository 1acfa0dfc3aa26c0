#!/bin/sh
# bench/replay_backends.sh: one recorded trace replayed on each backend side by side in one
# run (docs/replay.md, "Backends side by side").  tests/programs/trace_loop (-i 3 -g 300: 176 ops
# of 4 ranks in 5 groups, sends and recvs among them, as tests/integration/record_nodes.sh
# records it) is recorded once on this node under collprof-trace and mpirun -np 4, then
# replayed with collprof --replay (--replay-iters N, default 2 as the test) on each rank count
# of --np (--np 2: --shrink folds the 4 ranks onto 2), R rounds, each round every backend of
# --backends in turn: gloo, mpi, ofi (its default provider: shm on one node) and ofi-tcp (ofi
# with --ofi-provider 'tcp;ofi_rxm'); --ofi-yield MODE passes -B ofi-yield=MODE to both.  With --nodes (root, Slurm and munge: a virtual cluster
# of 2 network namespaces, contrib/slurm-local) the trace is also replayed across the two
# nodes (srun -N 2, 2 ranks a node; ofi's default there is tcp;ofi_rxm).  Per replay one line:
# where, backend, round, the load average at its start, the summary's whole-trace figure (the
# slowest rank's sum of its ops' p50 over the replays: with N = 2 the first pass weighs in),
# its ratio to gloo's of the same round, and the run's wall seconds (start-up and context
# set-up included); then the medians per backend.  A benchmark: exit 0 whatever the figures,
# 1 when a run failed, 2 on bad usage.
#
# Usage: bench/replay_backends.sh [--np 2,4] [-r 3] [-n 2] [--backends gloo,mpi,ofi,ofi-tcp]
#                                 [--ofi-yield MODE] [--nodes] [--collprof PATH]   (build tree)
# shellcheck disable=SC2034 # read by lib.sh
NAME=replay_backends.sh
# shellcheck source=bench/lib.sh
BENCH_OPTS="NPS ROUNDS ITERS"
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

NPS="2 4" ROUNDS=3 ITERS=2 BACKENDS="gloo mpi ofi ofi-tcp" NODES=0 YIELD='' COLLPROF_BIN=${COLLPROF:-}
usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case $1 in
    --backends) need_arg "$1" $# && BACKENDS=$(echo "$2" | tr , ' ') && shift ;;
    --nodes) NODES=1 ;;
    --ofi-yield) need_arg "$1" $# && YIELD=$2 && shift ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
check_nps 2
for np in $NPS; do
    [ "$np" -le 4 ] || bad_usage "--np: at most 4 (the trace's ranks), not $np"
done
at_least "$ROUNDS" 1 && at_least "$ITERS" 1 || bad_usage "-r, -n: whole numbers >= 1"
for b in $BACKENDS; do
    case $b in gloo | mpi | ofi | ofi-tcp) ;; *) bad_usage "--backends: unknown '$b'" ;; esac
done
find_collprof
TRACE=$BUILD_DIR/collprof-trace
LOOP=$BUILD_DIR/tests/programs/trace_loop
MPIRUN=$(command -v mpirun) || die "needs mpirun (the trace is recorded under it)"
[ -x "$TRACE" ] && [ -x "$LOOP" ] ||
    die "needs collprof-trace and tests/programs/trace_loop (make tests/programs/trace_loop)"
export OMPI_MCA_oob_tcp_if_include=${OMPI_MCA_oob_tcp_if_include:-lo}
export OMPI_MCA_btl_tcp_if_include=${OMPI_MCA_btl_tcp_if_include:-lo}
if [ "$NODES" = 1 ]; then
    [ "$(id -u)" = 0 ] || die "--nodes: virtual nodes need root (network namespaces, slurmd)"
    cluster_setup collprof-replay-backends
    D=$WORK
else
    export COLLPROF_PLUGIN_PATH="${COLLPROF_PLUGIN_PATH:-$BUILD_DIR/.libs}"
    D=$(mktemp -d) || die "no temporary directory"
    trap 'rm -rf "$D"' EXIT
fi

now() { date +%s.%N; }
load() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# the trace of trace_loop on 4 ranks of this node: $D/rec.h5
record() {
    timeout -k 10 300 "$TRACE" -o "$D/rec" --import "$D/rec.h5" -- "$MPIRUN" \
        --allow-run-as-root --oversubscribe --bind-to none -np 4 "$LOOP" -i 3 -g 300 \
        </dev/null >"$D/rec.out" 2>&1 || die "recording failed: $(tail -n 3 "$D/rec.out")"
}

# one replay of $3: $1 where (npN, nodes), $2 backend (round $r); its line of figures
replay() {
    where=$1 b=$2
    set -- --backends "${b%-tcp}" --replay "$3" --replay-iters "$ITERS"
    [ "$b" = ofi-tcp ] && set -- "$@" --ofi-provider "tcp;ofi_rxm"
    [ "${b%-tcp}" = ofi ] && [ -n "$YIELD" ] && set -- "$@" -B "ofi-yield=$YIELD"
    case $where in
    nodes) set -- srun --immediate=60 --mpi=pmix -N 2 -w n1,n2 --ntasks-per-node=2 \
        "$COLLPROF_BIN" "$@" ;;
    np4) set -- "$COLLPROF_BIN" --np 4 "$@" ;;
    *) set -- "$COLLPROF_BIN" --np "${where#np}" --shrink "$@" ;;
    esac
    o=$D/out.$where.$b.$r
    rm -rf "$o.d" && mkdir -p "$o.d"
    [ "$where" = nodes ] && wait_idle
    l=$(load) t=$(now)
    timeout -k 10 600 "$@" --output-dir "$o.d" </dev/null >"$o" 2>&1 || status=1
    wall=$(awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
    us=$(sed -n 's/^whole trace: [0-9]* ops, replay \([0-9.]*\) us.*/\1/p' "$o" | head -n 1)
    grep -q '^# ops: [0-9]* ok; #wrong 0: PASSED' "$o" || {
        status=1
        us=
        tail -n 3 "$o" | sed 's/^/# /'
    }
    [ "$b" = gloo ] && gloo_us=$us
    ratio=$(awk -v u="${us:-0}" -v g="${gloo_us:-0}" 'BEGIN {
        if (u > 0 && g > 0) printf "%.2f", u / g; else print "-" }')
    printf "%-6s %-8s %5s %6s %12s %9s %8s\n" "$where" "$b" "$r" "$l" "${us:--}" "$ratio" "$wall" |
        tee -a "$D/lines"
}

echo "# collprof replay of one trace on each backend: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(nproc) CPUs"
echo "# trace_loop -i 3 -g 300 recorded under collprof-trace; --replay-iters $ITERS, $ROUNDS round(s)${YIELD:+, ofi with -B ofi-yield=$YIELD}"
echo "# loadavg at start: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
record
WHERES=
for np in $NPS; do
    WHERES="$WHERES np$np"
done
[ "$NODES" = 1 ] && WHERES="$WHERES nodes"
printf "%-6s %-8s %5s %6s %12s %9s %8s\n" where backend round load whole_us x_gloo wall_s
for where in $WHERES; do
    tr=$D/rec.h5
    if [ "$where" = nodes ]; then # last: its exports (interfaces of the nodes) stay
        timeout -k 5 300 bash "$SL" --nodes 2 start >"$WORK/start.out" 2>"$WORK/start.err" ||
            die "the 2-node cluster did not start: $(tail -n 1 "$WORK/start.err")"
        eval "$(grep '^export ' "$WORK/start.out")"
    fi
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        gloo_us=
        for b in $BACKENDS; do
            replay "$where" "$b" "$tr"
        done
        r=$((r + 1))
    done
done
echo "# median over the rounds (whole_us, x_gloo, wall_s):"
for where in $WHERES; do
    for b in $BACKENDS; do
        awk -v w="$where" -v b="$b" '$1 == w && $2 == b' "$D/lines" >"$D/sel"
        [ -s "$D/sel" ] || continue
        printf "# %-6s %-8s %12s %9s %8s\n" "$where" "$b" \
            "$(awk '$5 != "-" { print $5 }' "$D/sel" | median)" \
            "$(awk '$6 != "-" { print $6 }' "$D/sel" | median)" "$(awk '{ print $7 }' "$D/sel" | median)"
    done
done
echo "# loadavg at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$status" = 0 ] || die "some replay failed (the lines marked #)"
