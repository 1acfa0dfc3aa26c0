#!/bin/sh
# collprof-trace across two virtual nodes (issue 40 item 5): a 2-node virtual cluster
# (contrib/slurm-local, as nodes.sh), tests/programs/trace_loop recorded under Open MPI's mpirun
# with the harness's rsh agent, 2 ranks on each of n1 and n2, the recorder preloaded through
# collprof-trace (-x to the ranks); the 4 files come from both nodes and import; then the trace
# is replayed across the same two nodes (srun --mpi=pmix -N 2, 2 ranks a node) on mpi, gloo and
# ofi (tcp;ofi_rxm), those built: the replayed sequence is the recorded one, every collective,
# send and recv exact.  The command in front of srun records the same sequence.  Skips (77) without root, the Slurm and munge daemons, or network namespaces.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"
need_report
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"
[ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ] || skip_all "mpirun not found at configure time"
B=$(dirname "$COLLPROF_BIN")
TRACE=$B/collprof-trace
LOOP=$B/tests/programs/trace_loop
[ -x "$TRACE" ] && [ -x "$LOOP" ] || skip_all "collprof-trace or tests/programs/trace_loop not built"
need_virtual_nodes

cluster_start 2 collprof-record-test
cd "$WORK" || exit 1

rc=0
t=$(now)
timeout -k 10 120 "$TRACE" -o rec --import rec.h5 -- "$CP_MPIRUN" --allow-run-as-root \
    --bind-to none --mca plm_rsh_agent "bash $SL rsh" --host n1:2,n2:2 -np 4 \
    -x OMPI_MCA_btl_tcp_if_include -x OMPI_MCA_oob_tcp_if_include "$LOOP" -i 3 -g 300 \
    </dev/null >rec.out 2>rec.err || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' rec.err | tail -n 10
ok $rc "trace_loop recorded by mpirun --host n1:2,n2:2 under collprof-trace ($(since "$t") s)"
hosts=$(for r in 0 1 2 3; do sed -n '1s/.*"host": "\([^"]*\)".*/\1/p' "rec/collprof-trace.$r.jsonl" 2>/dev/null; done | tr '\n' ' ')
[ "$hosts" = "n1 n1 n2 n2 " ]
ok $? "ranks 0-1 recorded on n1, 2-3 on n2 (got $hosts)"
grep -q '^4 files: 176 operations of 4 ranks in 5 groups' rec.out
ok $? "import: 176 ops of 4 ranks in 5 groups"
rows rec.h5 trace_ops | cut -d'|' -f1,2,3,7,8 | awk 'NF' >want

# the command in front of srun (--export=ALL,LD_PRELOAD=...,COLLPROF_TRACE_DIR=...): Open MPI
# started directly by Slurm through PMIx, 2 ranks on each node
rc=0
timeout -k 10 120 "$TRACE" -o rec-srun --import rec-srun.h5 -- srun --immediate=30 --mpi=pmix -N 2 \
    -w n1,n2 --ntasks-per-node=2 "$LOOP" -i 3 -g 300 </dev/null >srun.out 2>srun.err || rc=$?
hosts=$(for r in 0 1 2 3; do sed -n '1s/.*"host": "\([^"]*\)".*/\1/p' "rec-srun/collprof-trace.$r.jsonl" 2>/dev/null; done | tr '\n' ' ')
[ "$rc" -eq 0 ] && [ "$hosts" = "n1 n1 n2 n2 " ] && grep -q '^4 files: 176 operations of 4 ranks in 5 groups' srun.out &&
    [ "$(rows rec-srun.h5 trace_ops | cut -d'|' -f1,2,3,7,8 | awk 'NF')" = "$(cat want)" ]
ok $? "collprof-trace -- srun -N 2: the same sequence recorded on n1, n1, n2, n2 (exit $rc, hosts $hosts)"

SRUN="srun --immediate=30 --mpi=pmix -N 2 -w n1,n2 --ntasks-per-node=2"
for b in $BACKENDS; do
    opt=
    [ "$b" = ofi ] && opt="--ofi-provider tcp;ofi_rxm"
    mkdir -p "r.$b"
    rc=0
    # shellcheck disable=SC2086 # SRUN and opt are lists of options
    timeout -k 10 150 $SRUN "$COLLPROF_BIN" --backends "$b" $opt --replay rec.h5 --replay-iters 2 \
        --output-dir "$WORK/r.$b" </dev/null >"r.$b.out" 2>"r.$b.err" || rc=$?
    h5=$(ls "r.$b"/collprof_*.h5 2>/dev/null | head -n 1)
    [ -n "$h5" ] && rows "$h5" replay >"all.$b"
    awk -F'|' '$1 == "op" { print $3 "|" $4 "|" $5 "|" $7 "|" $8 }' "all.$b" 2>/dev/null >"got.$b"
    # every collective and every send and recv ok and exact (all three post them; a wait ok or
    # skipped)
    bad=$(awk -F'|' '$1 == "op" && (($5 != "wait" && $16 != "ok") || $15 != 0 ||
                      ($5 == "wait" && $16 != "ok" && $16 != "skipped"))' \
        "all.$b" 2>/dev/null | wc -l)
    [ "$rc" -eq 0 ] && diff -q want "got.$b" >/dev/null && [ "$bad" -eq 0 ]
    ok $? "$b: replayed on n1 and n2 (srun -N 2): the recorded sequence, every collective, send and recv exact (exit $rc, $bad not)"
    awk -F'|' '$1 == "trace" { printf "# %s: whole trace: replay %.1f us, recorded window %.1f us\n", b, $12, $13 }' \
        b="$b" "all.$b" 2>/dev/null
done
done_testing
