#!/bin/sh
# collprof --replay under Slurm (issue 40 item 2: "under srun, salloc, sbatch"): a 4-rank
# PARAM trace of the world and two halves, imported, then replayed on 2 virtual nodes x 2
# ranks (cluster.sh) by srun --mpi=pmix, by srun inside salloc, and by an sbatch job: each
# run exits 0, its /replay op rows are the trace's ops in the same order (rank, seq, op,
# bytes, group), every op replayed ok with nothing wrong, and the halves' groups span the
# nodes as the trace says (ranks 0-1 on n1, 2-3 on n2: each half on one node, the world
# across both).  The trace file sits in the test's directory, which every virtual node sees.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
need_report
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"
B=""
for b in gloo mpi ofi; do
    case " $BACKENDS " in *" $b "*) B=${B:-$b} ;; esac
done

T0=$(now)
cluster_start 2 collprof-replay-slurm-test
cd "$WORK" || exit 1

for r in 0 1 2 3; do
    h=$((r / 2))
    cat >"q-rank$r.json" <<EOF
[
  {"comms": "all_reduce", "seqnum": 1, "pg_id": 0, "global_ranks": [0, 1, 2, 3], "in_msg_size": 65536, "out_msg_size": 65536, "dtype": "Float"},
  {"comms": "all_reduce", "seqnum": 2, "pg_id": $((h + 1)), "global_ranks": [$((2 * h)), $((2 * h + 1))], "in_msg_size": 1000, "out_msg_size": 1000, "dtype": "Int"},
  {"comms": "broadcast", "seqnum": 3, "pg_id": $((h + 1)), "global_ranks": [$((2 * h)), $((2 * h + 1))], "root": $((2 * h + 1)), "in_msg_size": 64, "out_msg_size": 64, "dtype": "Double"},
  {"comms": "all_gather", "seqnum": 4, "pg_id": 0, "global_ranks": [0, 1, 2, 3], "in_msg_size": 16, "out_msg_size": 64, "dtype": "Float"},
  {"comms": "barrier", "seqnum": 5, "pg_id": 0, "global_ranks": [0, 1, 2, 3]}
]
EOF
done
"$REPORT" import --trace param q-rank0.json q-rank1.json q-rank2.json q-rank3.json -o q.h5 \
    >q.out 2>&1
ok $? "a 4-rank trace of the world and two halves imports"
rows q.h5 trace_ops | awk -F'|' 'NF > 1 { print $1 "|" $2 "|" $3 "|" $7 "|" $8 }' >want

# the replay of directory $1 (launched by $2): exit $rc 0, the sequence, all 20 ops ok
check_replay() {
    h5=$(ls "$1"/collprof_*.h5 2>/dev/null | head -n 1)
    [ -n "$h5" ] && rows "$h5" replay | awk -F'|' '$1 == "op"' >"$1/ops"
    awk -F'|' '{ print $3 "|" $4 "|" $5 "|" $7 "|" $8 }' "$1/ops" >"$1/got" 2>/dev/null
    n=$(awk -F'|' '$16 == "ok" && $15 == 0' "$1/ops" 2>/dev/null | wc -l)
    [ "$rc" -eq 0 ] && diff -q want "$1/got" >/dev/null && [ "$n" -eq 20 ]
    ok $? "$2: the replay's sequence is the trace's, all 20 ops ok on $B ($n, exit $rc)"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$1/err" 2>/dev/null | head -n 5
    s=$(summary_of "$1")
    grep -q '^world: *4 ranks on 2 nodes' "$s" 2>/dev/null
    ok $? "$2: 4 ranks on 2 nodes"
}

REPLAY="$COLLPROF_BIN --backends $B --replay $WORK/q.h5 --replay-iters 2"
OFI="tcp;ofi_rxm"

# ---- 1. srun --mpi=pmix
mkdir -p srun
rc=0
# shellcheck disable=SC2086 # REPLAY is a command line
timeout -k 10 120 srun --immediate=30 --mpi=pmix -N 2 --ntasks-per-node=2 $REPLAY \
    --ofi-provider "$OFI" --output-dir "$WORK/srun" </dev/null >srun/out 2>srun/err || rc=$?
check_replay srun "srun -N 2"

# ---- 2. salloc, then srun inside it
mkdir -p salloc
rc=0
# shellcheck disable=SC2086 # REPLAY is a command line
timeout -k 10 150 salloc --immediate=30 -N 2 --ntasks-per-node=2 \
    srun --mpi=pmix $REPLAY --ofi-provider "$OFI" --output-dir "$WORK/salloc" </dev/null >salloc/out 2>salloc/err || rc=$?
check_replay salloc "salloc -N 2, srun inside"

# ---- 3. an sbatch job
mkdir -p sbatch
cat >sbatch/job.sh <<EOF
#!/bin/sh
srun --mpi=pmix $REPLAY --ofi-provider '$OFI' --output-dir "$WORK/sbatch"
EOF
rc=0
id=$(cd sbatch && timeout 30 sbatch --parsable -N 2 --ntasks-per-node=2 -o "$WORK/sbatch/out" \
    -e "$WORK/sbatch/err" job.sh) || rc=$?
ok $rc "sbatch: submitted (job ${id:-none})"
check_job_done "$id" sbatch 120
rc=0
timeout 10 scontrol show job -o "$id" 2>/dev/null | grep -q 'JobState=COMPLETED .*ExitCode=0:0' ||
    rc=1
check_replay sbatch "sbatch -N 2"

echo "# replay_slurm.sh took $(since "$T0") s"
done_testing
