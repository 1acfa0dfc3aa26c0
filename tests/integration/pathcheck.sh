#!/bin/sh
# The path check (--counters, docs/metrics.md "Path check") on virtual nodes: a gloo (else mpi;
# PATHCHECK_BACKEND picks) allreduce of 1 MiB between n1 and n2, one rank each, whose data
# interface is cpnet0 (slurm-local's GLOO_SOCKET_IFNAME, OMPI_MCA_btl_tcp_if_include):
#  - routed as meant: each node's verdict ok, carried by cpnet0, its NIC bytes per operation
#    within 10 % above the bound plus the protocol overhead allowed (6 % of the bound + 2 KiB);
#  - steered to a second interface (slurm-local shape-pair n1 n2: a veth pair of their own,
#    cps-n2 in n1 and cps-n1 in n2, with a host route to the other's address over it): other-nic,
#    carried by cps-*, in the summary, collprof-report counters and the /counters rows;
#  - once on 4 nodes (ok, within the same margin) and on 2 nodes of 2 ranks (ok), and so again
#    without side messages (COLLPROF_OOB=pmix: rank 0 gathers the counters from every rank, the
#    same rows as the node leaders' side messages bring);
#  - gloo: a broadcast whose root sends the buffer to every other rank (one_to_all, 4 nodes of
#    2 ranks: 6 x the bound on the root's node): excess there.
# Twice each (PATHCHECK_RUNS); docs/metrics.md has the rates of 10 runs.  ofi runs over
# tcp;ofi_rxm (PATHCHECK_BACKEND=ofi).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
need_report
B=""
for b in ${PATHCHECK_BACKEND:-} gloo mpi; do
    case " $BACKENDS " in *" $b "*) B=${B:-$b} ;; esac
done
PROV=""
[ "$B" != ofi ] || PROV="--ofi-provider tcp;ofi_rxm"
[ -n "$B" ] || skip_all "neither gloo nor mpi was built"
RUNS=${PATHCHECK_RUNS:-2}

cluster_start 4 collprof-pathcheck-test
SRUN="srun --immediate=30 --mpi=pmix"

run2() { # DIR [NODES [RANKS-PER-NODE [OP VARIANT]]]
    mkdir -p "$1"
    rc=0
    nl=n1,n2
    [ "${2:-2}" -eq 4 ] && nl=n1,n2,n3,n4
    timeout -k 10 120 $SRUN -N "${2:-2}" -w "$nl" --ntasks-per-node="${3:-1}" -O \
        "$COLLPROF_BIN" --backends "$B" $PROV \
        --ops "${4:-allreduce}" --variants "${5:-default}" --counts 256K -d float32 -n 20 -w 2 \
        --output-dir "$1" ${RUN2_ARGS:-} \
        </dev/null >"$1/out" 2>"$1/err" || rc=$?
    h5=$(ls "$1"/collprof_*.h5 2>/dev/null | head -n 1)
    sum=$(ls "$1"/collprof_*.txt 2>/dev/null | head -n 1)
    "$REPORT" counters "$h5" --source path >"$1/path.txt" 2>&1
}

# "NODE VERDICT NIC-PER-OP BOUND-PER-OP VIA" of each node, from the report's path rows
verdicts() {
    awk '$4 == "path" { k = $2; if ($5 == "verdict") v[k] = $6; if ($5 == "nic") nic[k] = $9
            if ($5 == "bound") b[k] = $9; if ($5 ~ /^via\//) via[k] = via[k] substr($5, 5) "," }
        END { for (k in v) print k, v[k], nic[k], b[k], via[k] }' "$1"
}

for i in $(seq 1 "$RUNS"); do
    d="$WORK/ok$i"
    run2 "$d"
    verdicts "$d/path.txt" >"$d/v"
    sed "s/^/# run $i, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
    [ "$rc" -eq 0 ] && [ "$(wc -l <"$d/v")" -eq 2 ] &&
        awk '$2 != "ok" || $5 != "cpnet0," { bad = 1 }
            $3 > 1.10 * ($4 * 1.06 + 2048) || $3 < $4 { bad = 1 } END { exit bad }' "$d/v"
    ok $? "routed as meant, run $i: both nodes ok, via cpnet0, NIC bytes in [bound, 1.1 x (1.06 bound + 2 KiB)]"
    [ -n "$sum" ] && ! grep -q '    path: ' "$sum"
    ok $? "routed as meant, run $i: the summary flags no path"
done

# 4 nodes (bound 1.5 x the buffer), and 2 nodes of 2 ranks (the same bound as one rank each:
# a flat ring of 4 ranks sends 1.5 x the buffer per node, under the factor 2 of excess)
d="$WORK/four"
run2 "$d" 4
verdicts "$d/path.txt" >"$d/v"
sed "s/^/# 4 nodes, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
[ "$rc" -eq 0 ] && [ "$(wc -l <"$d/v")" -eq 4 ] &&
    awk '$2 != "ok" || $5 != "cpnet0," { bad = 1 }
        $3 > 1.10 * ($4 * 1.06 + 2048) || $3 < $4 { bad = 1 } END { exit bad }' "$d/v"
ok $? "4 nodes: every node ok, via cpnet0, NIC bytes in [bound, 1.1 x (1.06 bound + 2 KiB)]"
d="$WORK/twobytwo"
run2 "$d" 2 2
verdicts "$d/path.txt" >"$d/v"
sed "s/^/# 2 nodes x 2 ranks, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
[ "$rc" -eq 0 ] && [ "$(wc -l <"$d/v")" -eq 2 ] &&
    awk '$2 != "ok" || $5 != "cpnet0," || $3 < $4 { bad = 1 } END { exit bad }' "$d/v"
ok $? "2 nodes x 2 ranks: both nodes ok, via cpnet0, not under the bound"

# without side messages (COLLPROF_OOB=pmix: the PMIx channel, none there) rank 0 gathers the
# counters the other way: the largest count broadcast, that many records from every rank (the
# node leaders' deltas, the others' empty); the same rows as the side messages brought in the
# run above, both nodes' in each cell, both ok via cpnet0
d="$WORK/pmix"
export COLLPROF_OOB=pmix
RUN2_ARGS=-vv run2 "$d" 2 2 allreduce,alltoall
unset COLLPROF_OOB
awk 'NR == 1 || $1 == 0' "$d/path.txt" >"$d/path0.txt" # the allreduce's
verdicts "$d/path0.txt" >"$d/v"
sed "s/^/# COLLPROF_OOB=pmix, 2 nodes x 2 ranks, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
grep ' r0/4 .*counters: .* bytes to rank 0 (' "$d/err" | sed 's/.*\] /# COLLPROF_OOB=pmix: /'
[ "$rc" -eq 0 ] && grep -q ' r0/4 .*oob (run): .*channel pmix' "$d/err" &&
    [ "$(grep -c ' r0/4 .*counters: .* bytes to rank 0 (every rank)$' "$d/err")" -eq 2 ] &&
    ! grep -q 'counters: no records' "$d/err"
ok $? "COLLPROF_OOB=pmix, 2 nodes x 2 ranks: rank 0 gathers each cell's counters from every rank"
# every counter of the side messages' run (its one cell) in the first cell here, from both nodes
rows_of() { # REPORT CELL: "NODE HOST SOURCE COUNTER UNIT KIND", sorted
    awk -v c="$2" 'NR > 1 && $1 == c && $4 != "path" { print $2, $3, $4, $5, $6, $7 }' "$1" | sort
}
"$REPORT" counters "$h5" >"$d/all.txt" 2>&1
"$REPORT" counters "$(ls "$WORK"/twobytwo/collprof_*.h5 | head -n 1)" >"$d/side.txt" 2>&1
rows_of "$d/all.txt" 0 >"$d/rows0"
rows_of "$d/all.txt" 1 >"$d/rows1"
rows_of "$d/side.txt" 0 >"$d/side0"
[ -s "$d/side0" ] && cmp -s "$d/rows0" "$d/side0" && [ -s "$d/rows1" ] &&
    [ "$(awk '{ print $1 }' "$d/rows0" | sort -u | tr '\n' ' ')" = "0 1 " ] &&
    [ "$(awk '{ print $1 }' "$d/rows1" | sort -u | tr '\n' ' ')" = "0 1 " ]
ok $? "COLLPROF_OOB=pmix: both nodes' counters in both cells, the same as through side messages ($(wc -l <"$d/rows0") rows)"
[ "$(wc -l <"$d/v")" -eq 2 ] &&
    awk '$2 != "ok" || $5 != "cpnet0," || $3 < $4 { bad = 1 } END { exit bad }' "$d/v"
ok $? "COLLPROF_OOB=pmix: the allreduce's path check on both nodes, ok via cpnet0"

# excess: gloo's broadcast one_to_all on 4 nodes of 2 ranks: the root sends the whole buffer
# to each of the 6 ranks of the other nodes, 6 x the bound (B) on its node; the others
# receive 2 x B (ok, 6 % under the threshold: not asserted)
if [ "$B" = gloo ]; then
    d="$WORK/excess"
    run2 "$d" 4 2 broadcast one_to_all
    verdicts "$d/path.txt" >"$d/v"
    sed "s/^/# broadcast one_to_all, 4 nodes x 2 ranks, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
    [ "$rc" -eq 0 ] && [ "$(wc -l <"$d/v")" -eq 4 ] &&
        awk '$1 == 0 && $2 != "excess" { bad = 1 }
            $1 != 0 && $2 != "ok" && $2 != "excess" { bad = 1 } END { exit bad }' "$d/v" &&
        grep -q '^    path: node 0 ([^)]*): excess: [0-9.]*x the bound' "$sum" &&
        grep -q '^counters: .*path: excess bytes in 1 cell' "$sum"
    ok $? "gloo broadcast one_to_all, 4 nodes x 2 ranks: the root's node excess, in the summary"
fi

bash "$SL" shape-pair n1 n2 10gbit >"$WORK/shape.out" 2>&1
ok $? "shape-pair n1 n2: a second veth pair between them, routed"

for i in $(seq 1 "$RUNS"); do
    d="$WORK/steered$i"
    run2 "$d"
    verdicts "$d/path.txt" >"$d/v"
    sed "s/^/# steered run $i, node VERDICT NIC B\/op, bound B\/op, via: /" "$d/v"
    [ "$rc" -eq 0 ] && [ "$(wc -l <"$d/v")" -eq 2 ] &&
        awk '$2 != "other-nic" || $5 !~ /^cps-n[12],$/ { bad = 1 } END { exit bad }' "$d/v"
    ok $? "steered, run $i: both nodes other-nic, via cps-n1/cps-n2"
    grep -q '^    path: node [01] ([^)]*): other-nic: [0-9.]*x the bound .* via cps-n[12] (expected cpnet0)$' \
        "$sum" && grep -q '^counters: .*path: other NIC in 1 cell' "$sum"
    ok $? "steered, run $i: the summary names the interface, the ratio and the expected one"
    grep -q '^flagged: .*path: other NIC in 1 cell' "$d/path.txt"
    ok $? "steered, run $i: collprof-report counters flags it"
done
bash "$SL" shape-pair n1 n2 off >/dev/null 2>&1

[ -z "${PATHCHECK_KEEP:-}" ] || cp -r "$WORK" "$PATHCHECK_KEEP"
done_testing
