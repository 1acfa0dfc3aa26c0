#!/bin/sh
# bench/scale.sh: how collprof's start-up, its control channel (and, when this collprof has it, a
# link sweep) grow with the node count, on a virtual Slurm cluster of this machine
# (contrib/slurm-local --nodes N: real slurmctld and slurmd, one network namespace per node).
# For each node count it starts a cluster, runs CELLS allreduce cells of 1 to CELLS floats under
# `srun --mpi=pmix -N K --ntasks-per-node R`, and prints
#
#   nodes ranks oob | cluster start s | launch to first op s | run s | fences fence s put B read B
#     | links tcp colls tcp s sent B read B | per cell: sent B read B | sweep s
#
# "launch to first op" is from srun's start to rank 0's first cell (its -v log line); fences and
# bytes are rank 0's out-of-band exchanges up to then (boot, plan, backend start-up): PMIx
# fences and puts, then the connections rank 0 holds and the collectives of collprof's TCP
# channel; "per cell" is rank 0's TCP bytes per cell after that.  --oob "tree star pmix" runs
# each node count with each channel on the same cluster: the tree by node (the default; "tcp"
# says the same), tree:K (the tree with COLLPROF_TREE_FANOUT=K: leaders below leaders past K + 1
# nodes), COLLPROF_OOB=star (every rank connected to rank 0) and COLLPROF_OOB=pmix (every
# out-of-band collective a PMIx fence).  It is a benchmark: exit 0 whatever the figures, 1 when
# something failed to run, 2 on bad usage.  Needs root.
#
# Usage: bench/scale.sh [--nodes "4 8 16"] [--ranks-per-node 4] [--backend ofi]
#                       [--oob "tree tree:4 star pmix"] [--cells 10] [--no-sweep] [--collprof PATH]
#                       [--args "MORE COLLPROF OPTIONS"]
# shellcheck disable=SC2034 # read by lib.sh
NAME=scale.sh
. "$(dirname "$0")/lib.sh"

NODES="4 8 16"
RPN=4
BACKEND=ofi
OOBS=tree
CELLS=10
SWEEP=1
ARGS=
usage() {
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
}
while [ $# -gt 0 ]; do
    case $1 in
    --nodes)
        NODES=$2
        shift
        ;;
    --ranks-per-node)
        at_least "$2" 1 || bad_usage "--ranks-per-node: '$2' is not a whole number >= 1"
        RPN=$2
        shift
        ;;
    --backend)
        BACKEND=$2
        shift
        ;;
    --oob)
        OOBS=$2
        shift
        ;;
    --cells)
        at_least "$2" 1 || bad_usage "--cells: '$2' is not a whole number >= 1"
        CELLS=$2
        shift
        ;;
    --args)
        ARGS=$2
        shift
        ;;
    --no-sweep) SWEEP=0 ;;
    *) bench_opt "$@" || bad_usage "unknown option '$1'"; shift ;;
    esac
    shift
done
for n in $NODES; do
    at_least "$n" 2 || bad_usage "--nodes: '$n' is not a whole number >= 2"
done
for o in $OOBS; do
    case $o in
    tree | tcp | star | pmix) ;;
    tree:*) at_least "${o#tree:}" 2 || bad_usage "--oob: '$o': the fanout is not a whole number >= 2" ;;
    *) bad_usage "--oob: '$o' is not tree, tree:K, star nor pmix" ;;
    esac
done
[ "$(id -u)" = 0 ] || die "virtual nodes need root (network namespaces, slurmd)"
find_collprof
cluster_setup collprof-scale
export COLLPROF_SLURM_CPUS="$RPN"

now() { date +%s.%N; }
# seconds from $1 to $2
diff_s() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
# the epoch seconds of a -v log line's "[2026-11-23T13:15:02.715Z ..." stamp
stamp_s() {
    t=$(sed -n 's/^\[\([0-9T:.-]*\)Z .*/\1/p' | head -n 1)
    [ -n "$t" ] && date -u -d "$(echo "$t" | tr T ' ')" +%s.%N
}
sweep_supported() { "$COLLPROF_BIN" --help 2>/dev/null | grep -q -- '--link-sweep'; }
# srun of collprof on the whole cluster with the out-of-band channel $oob; $1: stdout, $2: stderr
run_collprof() {
    out=$1 err=$2
    shift 2
    wait_idle
    (
        unset COLLPROF_TREE_FANOUT
        case $oob in
        pmix | star) export COLLPROF_OOB=$oob ;;
        tree:*) unset COLLPROF_OOB && export COLLPROF_TREE_FANOUT="${oob#tree:}" ;;
        *) unset COLLPROF_OOB ;;
        esac
        # shellcheck disable=SC2086 # ARGS: a list of options
        timeout -k 5 600 srun --immediate=60 --mpi=pmix -N "$n" --ntasks-per-node="$RPN" \
            "$COLLPROF_BIN" --backends "$BACKEND" $ARGS "$@" >"$out" 2>"$err"
    )
}
# rank 0's "LINKS COLLECTIVES SECONDS SENT READ" of its oob line $1 (start-up or run), from
# stdin; links "-" where the line has none (a collprof before the tree)
tcp_of() {
    grep " r0/[0-9]* [^]]*\] oob ($1): " | head -n 1 | sed -e 's/.*(tree by node to rank 0)//' \
        -e 's/.*(star to rank 0)//' -e 's/.*; channel [^:]*:[0-9]*//' |
        sed -n 's/^: \(\([0-9]*\) links, \)\{0,1\}\([0-9]*\) collectives (\([0-9.]*\) s in them), \([0-9]*\) bytes sent, \([0-9]*\) bytes read.*/\2 \3 \4 \5 \6/p' |
        awk '{ if (NF == 4) print "-", $0; else print }'
}
# one node count, one channel: the line of figures
measure() {
    d=$WORK/run$n-$oob
    mkdir -p "$d"
    t=$(now)
    run_collprof "$d/out" "$d/err" --ops allreduce --counts "$(seq -s, 1 "$CELLS")" -n 1 -w 0 \
        -v --output-dir "$d" || status=1
    end=$(now)
    first=$(grep ' r0/[0-9]* [^]]*\] cell 1/' "$d/err" | stamp_s)
    line=$(grep ' r0/[0-9]* [^]]*\] oob (start-up): ' "$d/err" | head -n 1)
    fences=$(echo "$line" | sed -n 's/.*oob ([a-z-]*): \([0-9]*\) fences (\([0-9.]*\) s.*/\1 \2/p')
    bytes=$(echo "$line" | sed -n 's/.* puts of \([0-9]*\) bytes, \([0-9]*\) bytes read.*/\1 \2/p')
    tcp=$(tcp_of start-up <"$d/err")
    # per cell: the run's TCP bytes less the start-up's, over the cells
    cells=$(sed -n 's/^# cells: \([0-9]*\) ok[,;].*/\1/p' "$d/out")
    percell=$(printf '%s\n%s\n' "$tcp" "$(tcp_of run <"$d/err")" | awk -v c="${cells:-0}" '
        NR == 1 { s = $4; r = $5 }
        NR == 2 && c > 0 && $4 != "" { printf "%d %d", ($4 - s) / c, ($5 - r) / c }')
    sweep=-
    if [ "$SWEEP" = 1 ] && sweep_supported; then
        ts=$(now)
        run_collprof "$d/sweep.out" "$d/sweep.err" --link-sweep -v --output-dir "$d" &&
            sweep=$(diff_s "$ts" "$(now)")
    fi
    # shellcheck disable=SC2059,SC2086 # FMT is the format; fences, bytes, tcp: several fields
    printf "$FMT" "$n" $((n * RPN)) "$oob" "$start_s" "${first:+$(diff_s "$t" "$first")}" \
        "$(diff_s "$t" "$end")" ${fences:-- -} ${bytes:-- -} ${tcp:-- - - - -} ${percell:-- -} \
        "$sweep"
    [ -n "$first" ] || {
        tail -n 3 "$d/err" | sed 's/^/# /'
        status=1
    }
}

echo "# collprof scale benchmark: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(nproc) CPUs"
echo "# policy: every node is a namespace of this one machine (shared CPUs and memory);"
echo "# $RPN ranks per node, backend $BACKEND, $CELLS allreduce cells of 1 to $CELLS floats"
echo "# (-n 1 -w 0); loadavg at start"
echo "# $(cut -d' ' -f1-3 /proc/loadavg)"
FMT='%-5s %-5s %-7s | %-7s | %-10s | %-6s | %-6s %-7s %-6s %-7s | %-5s %-5s %-6s %-8s %-8s | %-9s %-9s | %s\n'
# shellcheck disable=SC2059 # FMT is the table's format
printf "$FMT" nodes ranks oob start_s first_op_s run_s fences fence_s put_B read_B \
    links tcp tcp_s sent_B read_B cell_sent cell_read sweep_s
status=0
for n in $NODES; do
    t=$(now)
    if ! timeout -k 5 300 bash "$SL" --nodes "$n" start >"$WORK/start.out" 2>"$WORK/start.err"; then
        sed 's/^/# /' "$WORK/start.err" >&2
        die "the $n-node cluster did not start"
    fi
    start_s=$(diff_s "$t" "$(now)")
    eval "$(grep '^export ' "$WORK/start.out")"
    for oob in $OOBS; do
        measure
    done
    bash "$SL" stop >/dev/null 2>&1
done
[ "$status" = 0 ] || die "some run failed (see the lines marked #)"
