#!/bin/sh
# The screen's path check (docs/screen.md "Which NIC a pair's bytes took") on 4 virtual nodes
# whose data interface is the veth cpnet0 (slurm-local's GLOO_SOCKET_IFNAME, FI_TCP_IFACE):
# with 4 nodes the screen's 3 random rounds meet every pair once.  Each pair's leaders read
# their NIC counters around its bandwidth test and its /links bandwidth row carries the verdict:
#  - routed as meant: every checked pair ok, the text output and collprof-report screen name
#    no pair ("nic paths: 0 of N checked pairs");
#  - steered (slurm-local shape-pair n1 n2: a veth pair of their own with a host route to the
#    other over it, the expected interface still cpnet0): the n1-n2 pair other-nic, via
#    cps-n1/cps-n2, named in the console's verdict, the summary and collprof-report screen (and
#    its --format json's nic_paths);
#    no other pair named; the nodes' verdicts as routed (the path judges nothing);
#  - the link sweep (--link-sweep), steered: the same "nic path" lines under its bandwidth matrix,
#    on the console, in the summary and from collprof-report links: n1-n2 alone of the 6 pairs;
#  - --counters none: no pair checked, no "nic path" line;
#  - mpi (when built), steered: its rounds run as cells of the whole job, whose counter rows
#    rank 0 gathers: the same pair named, no other.
# gloo, else ofi (tcp;ofi_rxm): a backend whose pairs run on their own context.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
need_report
B=""
for b in gloo ofi; do
    case " $BACKENDS " in *" $b "*) B=${B:-$b} ;; esac
done
[ -n "$B" ] || skip_all "neither gloo nor ofi was built (the pairs on their own context)"

cluster_start 4 collprof-screennic-test
SRUN="srun --immediate=30 --mpi=pmix"

screen4() { # DIR [OPTIONS]
    d=$1
    shift
    mkdir -p "$d"
    rc=0
    timeout -k 10 150 $SRUN -N 4 --ntasks-per-node=1 "$COLLPROF_BIN" --screen --backends "${NIC_B:-$B}" \
        --ofi-provider 'tcp;ofi_rxm' --sweep-sizes 8,1M -n 10 -w 2 --screen-threshold 0.1 \
        --seed 3 --output-dir "$d" "$@" </dev/null >"$d/out" 2>"$d/err" || rc=$?
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
    sum=$(ls "$d"/collprof_*.txt 2>/dev/null | head -n 1)
    "$REPORT" screen "$h5" >"$d/report" 2>&1
    sed -n '/^== screen/,$s/^/# /p' "$d/out"
}

# the nodes' verdicts, "HOST VERDICT" sorted, from collprof-report screen --format json
nodes_of() {
    "$REPORT" screen "$1" --format json 2>/dev/null | python3 -c '
import json, sys
for s in json.load(sys.stdin)["screens"]:
    for n in s["nodes"]:
        print(n["host"], n["verdict"])' | sort
}

d="$WORK/routed"
screen4 "$d"
[ "$rc" -eq 0 ] && grep -q '^nic paths: 0 of [1-9][0-9]* checked pairs' "$d/out" &&
    ! grep -q '^nic path: ' "$d/out"
ok $? "routed as meant: exit 0, every checked pair ok, no pair named ($(grep '^nic paths:' "$d/out"))"
grep -q '^nic paths: 0 of [1-9][0-9]* checked pairs' "$d/report" && ! grep -q '^nic path: ' "$d/report" &&
    grep -q '^nic paths: 0 of' "$sum"
ok $? "routed as meant: collprof-report screen and the summary name no pair"
nodes_of "$h5" >"$WORK/routed.nodes"

bash "$SL" shape-pair n1 n2 10gbit >"$WORK/shape.out" 2>&1
ok $? "shape-pair n1 n2: a second veth pair between them, routed"

d="$WORK/steered"
screen4 "$d"
grep '^nic path: ' "$d/out" | sed 's/^/# /'
want='^nic path: n[12]-n[12] (round [0-9]*): other-nic: [0-9.]*x the message per operation, via cps-n[12],cps-n[12] (expected cpnet0)$'
[ "$rc" -eq 0 ] && [ "$(grep -c '^nic path: ' "$d/out")" -eq "$(grep -c "$want" "$d/out")" ] &&
    grep -q "$want" "$d/out" && grep -q '^nic paths: [1-9][0-9]* of [1-9][0-9]* checked pairs' "$d/out"
ok $? "steered: the n1-n2 pair other-nic, via cps-n1/cps-n2, the only pair named"
grep -q "$want" "$d/report" && grep -q "$want" "$sum" &&
    [ "$(grep -c '^nic path: ' "$d/report")" -eq "$(grep -c '^nic path: ' "$d/out")" ]
ok $? "steered: collprof-report screen and the summary name the same pair"
"$REPORT" screen "$h5" --format json 2>/dev/null | python3 -c '
import json, sys
(s,) = json.load(sys.stdin)["screens"]
p = s["nic_paths"]
for q in p["pairs"]:
    if q["flagged"]:
        print("%s-%s %s %s" % (q["host"], q["peer"], q["verdict"], ",".join(q["via"])))
print("checked", p["checked"], "flagged", p["flagged"])' >"$d/json.nic" 2>&1
sed 's/^/# json: /' "$d/json.nic"
grep -q "^checked $(sed -n 's/^nic paths: \([0-9]*\) of \([0-9]*\) checked.*/\2 flagged \1/p' "$d/out")$" "$d/json.nic" &&
    [ "$(grep -c '^n[12]-n[12] other-nic cps-n[12],cps-n[12]$' "$d/json.nic")" -eq "$(grep -c '^nic path: ' "$d/out")" ]
ok $? "steered: collprof-report screen --format json: the same pairs flagged, the same counts"
nodes_of "$h5" >"$WORK/steered.nodes"
sed 's/^/# node verdicts, steered: /' "$WORK/steered.nodes"
[ -s "$WORK/steered.nodes" ] && cmp -s "$WORK/routed.nodes" "$WORK/steered.nodes"
ok $? "steered: the nodes' verdicts are the routed run's (the path judges nothing)"

# the link sweep (collprof --link-sweep: every pair once, 3 rounds on 4 nodes), steered: under
# its bandwidth matrix the same lines, in the summary, on the console and from collprof-report
# links; the n1-n2 pair the only one named, of the 6 checked
d="$WORK/sweep"
mkdir -p "$d"
rc=0
timeout -k 10 150 $SRUN -N 4 --ntasks-per-node=1 "$COLLPROF_BIN" --link-sweep --backends "$B" \
    --ofi-provider 'tcp;ofi_rxm' --sweep-sizes 8,1M -n 10 -w 2 --output-dir "$d" \
    </dev/null >"$d/out" 2>"$d/err" || rc=$?
h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
sum=$(ls "$d"/collprof_*.txt 2>/dev/null | head -n 1)
"$REPORT" links "$h5" >"$d/report" 2>&1
sed -n '/ bandwidth, /,/^nic paths: /s/^/# sweep: /p' "$d/out"
nic_lines() { sed -n '/ bandwidth, /,/^$/p' "$1" | grep '^nic paths\{0,1\}: '; }
nic_lines "$d/out" >"$d/out.nic"
[ "$rc" -eq 0 ] && [ "$(grep -c '^nic path: ' "$d/out.nic")" -eq 1 ] && grep -q "$want" "$d/out.nic" &&
    grep -q '^nic paths: 1 of 6 checked pairs' "$d/out.nic"
ok $? "--link-sweep, steered: under the bandwidth matrix the n1-n2 pair other-nic, the only one of 6 named"
nic_lines "$sum" >"$d/sum.nic"
nic_lines "$d/report" >"$d/report.nic"
[ -n "$sum" ] && cmp -s "$d/out.nic" "$d/sum.nic" && cmp -s "$d/out.nic" "$d/report.nic"
ok $? "--link-sweep, steered: the summary and collprof-report links print the same lines"

d="$WORK/none"
screen4 "$d" --counters none
[ "$rc" -eq 0 ] && ! grep -q '^nic paths\{0,1\}: ' "$d/out"
ok $? "--counters none: no pair checked, no path line"
if case " $BACKENDS " in *" mpi "*) true ;; *) false ;; esac; then
    d="$WORK/mpi"
    NIC_B=mpi screen4 "$d"
    grep '^nic path: ' "$d/out" | sed 's/^/# mpi: /'
    # not its exit status: mpi's rounds (every rank, a barrier per iteration) are judged by
    # times that the load here moves by more than the threshold; the path does not depend on it
    [ "$rc" -le 1 ] && [ "$(grep -c '^nic path: ' "$d/out")" -eq "$(grep -c "$want" "$d/out")" ] &&
        grep -q "$want" "$d/out" && grep -q "$want" "$d/report"
    ok $? "mpi (rounds as cells of the job), steered: the n1-n2 pair other-nic, the only pair named"
fi
bash "$SL" shape-pair n1 n2 off >/dev/null 2>&1

[ -z "${SCREENNIC_KEEP:-}" ] || cp -r "$WORK" "$SCREENNIC_KEEP"
done_testing
