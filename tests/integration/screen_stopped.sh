#!/bin/sh
# A node stopped while idle costs one pair, not a round (issue 38, item 5): on an 8-node
# Slurm cluster (contrib/slurm-local, cluster.sh), `collprof --screen` on a backend whose pairs
# run on contexts of their own (gloo, else ofi; mpi runs the rounds as cells of the job and is
# not this path), with COLLPROF_FAULT=idlestop:1:2: n2's leader (rank 1) stops itself
# (SIGSTOP) as it gets the plan of the first round from round 2 on in which it is member 0 of
# its pair (every round where it does not meet n1), before it publishes its channel.  Rank 0
# sends every other pair its GO as its member 0 publishes, so those pairs run; n2's partner
# gets no partner once rank 0's silence limit for n2 (--timeout 5 + 10 s) passes.  Checked:
#  - the fault fired (the log says in which round);
#  - that round: exactly one pair not measured (n2's, at each size), every other pair ok;
#    the whole screen: that one pair alone not measured (no other round loses a pair);
#  - the verdict: n2 unreachable, the 7 others healthy (n2's partner not blamed), no slow
#    node or link, exclude n2 alone, and the validation allreduce over the 7 passed;
#  - srun returned 1 within the clean screen's time (the same screen, no fault: 8 healthy) plus
#    rank 0's silence limit (15 s: the round with the stop waits for it once) plus 15 s of
#    margin for the shared CPUs, and no rank is left.
# Before the fix every other pair of that round failed (their member 0s stopped accepting at
# 5 s, their partners got their GO at 15 s) and counted against both ends.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
need_report
[ "${CP_TIMING_UNRELIABLE:-0}" != 1 ] || skip_all "timing-based (sanitizers: figures say little)"
screen_backend
case "$B" in gloo | ofi) ;; *) skip_all "no backend with pairs of their own (gloo, ofi)" ;; esac

T0=$(now)
cluster_start 8 collprof-stopped-test
SRUN="srun --immediate=30 --mpi=pmix"

# the same screen with no fault, for its time
screen8 "$WORK/clean" -n 200 --seed 4 --timeout 5
clean=$took
grep -q '^nodes: 8 healthy, 0 slow' "$WORK/clean/out"
ok $? "no fault: 8 healthy (rc $rc, $clean s)"

COLLPROF_FAULT=idlestop:1:2
export COLLPROF_FAULT
screen8 "$WORK/stop" -n 200 --seed 4 --timeout 5
unset COLLPROF_FAULT
err=$WORK/stop/err

round=$(sed -n 's/.*COLLPROF_FAULT: rank 1 stops (SIGSTOP) before screen round \([0-9]*\).*/\1/p' \
    "$err" | head -n 1)
[ -n "$round" ]
ok $? "idlestop: n2 (rank 1) stopped itself before screen round ${round:-?}"

# the console lines of that round ("round R/N" for a random round, else the Rth round line):
# each pair "nA-nB X GB/s Y us", a pair not measured followed by its status
lines=$(grep '^# screen .* B, ' "$WORK/stop/out" | awk -v r="${round:-0}" '
    /latency/ { k++ } k == r')
lost=$(printf '%s\n' "$lines" | grep -o ' n[0-9]*-n[0-9]* [0-9.]* GB/s [0-9.]* us [a-z][a-z]*' |
    awk '{ print $1 }' | sort | tr '\n' ' ')
pairs=$(printf '%s\n' "$lines" | grep -o ' n[0-9]*-n[0-9]* [0-9.]* GB/s' | wc -l)
all=$(grep '^# screen .* B, ' "$WORK/stop/out" |
    grep -o ' n[0-9]*-n[0-9]* [0-9.]* GB/s [0-9.]* us [a-z][a-z]*' | awk '{ print $1 }' | sort -u |
    tr '\n' ' ')
case "$lost" in
n2-n*" "n2-n*" " | n1-n2" "n1-n2" ") one=0 ;;
*) one=1 ;;
esac
[ "$one" -eq 0 ] && [ "$(echo "$lost" | wc -w)" -eq 2 ] && [ "$pairs" -eq 8 ] &&
    [ "$all" = "$(echo "$lost" | awk '{ print $1 }') " ]
ok $? "round $round: one pair lost, n2's (at both sizes: ${lost:-none}), the other 3 measured; none lost in another round (${all:-none})"
[ "$one" -eq 0 ] || grep '^# screen ' "$WORK/stop/out" | sed 's/^/# /'

grep -q '^unreachable  *n2: ' "$WORK/stop/out" &&
    grep -q '^nodes: 7 healthy, 0 slow, 1 unreachable, 0 inconclusive, 0 untested' \
        "$WORK/stop/out" && ! grep -q '^slow ' "$WORK/stop/out" &&
    grep -q '^exclude: n2$' "$WORK/stop/out" &&
    grep -q 'screen: node n2 (rank 1) is unreachable: nothing from it' "$err" &&
    grep -q '^validation: passed: allreduce over 7 nodes' "$WORK/stop/out"
r=$?
ok $r "n2 unreachable, the 7 others healthy (its partner too), nothing slow, exclude n2, the validation over the 7 passed"
[ "$r" -eq 0 ] && [ "$one" -eq 0 ] || sed -n '/^== screen/,$s/^/# /p' "$WORK/stop/out"
[ "$r" -eq 0 ] || grep -v 'ALIVE' "$err" | head -n 20 | sed 's/^/# err: /'

# the stop costs rank 0's silence limit for n2 (--timeout 5 + 10 s) once, plus 15 s of margin
# for the load of the 2 shared CPUs
awk -v t="$took" -v c="$clean" 'BEGIN { exit !(t <= c + 15 + 15) }' && [ "$rc" -eq 1 ]
ok $? "srun returned 1 (rc $rc) ${took} s after the start (at most the clean ${clean} s + 15 s + 15 s)"

left=""
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do
    left=$(pgrep -f "^$COLLPROF_BIN --screen" | tr '\n' ' ')
    [ -z "$left" ] && break
    sleep 1
done
[ -z "$left" ]
ok $? "no rank left on any node${left:+ (left: $left)}"
for p in $left; do
    kill -CONT "$p" 2>/dev/null
    kill -KILL "$p" 2>/dev/null
done

echo "# screen_stopped.sh took $(since "$T0") s"
done_testing
