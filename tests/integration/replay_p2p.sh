#!/bin/sh
# collprof --replay's point-to-point, async and coalesced ops and --shrink (issue 40 item 2,
# docs/replay.md), on self, gloo, mpi and ofi (those built).  The p2p fixture of tests/data/trace
# (2 ranks): a blocking send/recv pair of 1 MiB that both ranks record send first (it would
# deadlock on a rendezvous protocol, issued blocking), an isend/irecv completed at its wait
# past an allreduce, a use_batch pair (coalesced) issued in opposite orders, two async
# collectives waited in opposite orders, an async reduce.  Every op row ok with wrong 0 (a wait: ok, or skipped
# where its op ran at once), the send and recv rows counted (10), the async collectives posted
# and completed at their waits on every backend (self, gloo and ofi: a worker thread per context).
# Async collectives that must overlap: an iallreduce crossed with a blocking allreduce of
# another group (hangs unless posted for real), and one overlapped by a recorded gap (--gaps
# trace: its post and wait take less than half the same allreduce run blocking; a timing miss
# under load tried once more with 4 x the gaps).  With COLLPROF_FAULT=wrong:1 rank 1
# sends one wrong element per send: the receiver's rows say wrong, exit 1.  The 8-rank
# fixture is refused on 4 ranks, and with --shrink replayed on 4: 36 op rows, all ok (the
# halves [0..3] and [4..7] both on the 4 ranks, the pairs [q, q+4] folded onto groups of one),
# the summary says it was shrunk from 8 ranks to 4.  nccl runs on the CUDA/NCCL stand-in (device
# buffers through host copies, sends and recvs held and launched as one group, the async
# collectives posted as on mpi).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
replay_prelude

"$REPORT" import --trace param "$D/p2p-rank0.json" "$D/p2p-rank1.json" -o p.h5 >p.out 2>&1
ok $? "the p2p fixture imports"
n=$(rows p.h5 trace_ops | awk -F'|' '$3 == "send" || $3 == "recv"' | wc -l)
c=$(rows p.h5 trace_ops | awk -F'|' '$12 >= 0 && NF > 1' | wc -l)
[ "$n" -eq 10 ] && [ "$c" -eq 4 ]
ok $? "it has 10 sends and recvs, 4 of them coalesced ($n, $c)"

# replay $3.h5 on backend $1 with $2 ranks (more options after): /replay's op rows in ops.$t
replay() {
    t="$1.$2.$3"
    b=$1 np=$2 tr=$3
    shift 3
    rm -rf "r.$t"
    mkdir -p "r.$t"
    saved_path=$COLLPROF_PLUGIN_PATH
    [ "$b" = nccl ] && COLLPROF_PLUGIN_PATH="$MOCK:$COLLPROF_PLUGIN_PATH"
    cp_run --np "$np" --backends "$b" --replay "$tr.h5" --replay-iters 3 --timeout 120 \
        --output-dir "r.$t" "$@"
    COLLPROF_PLUGIN_PATH=$saved_path
    h5=$(ls "r.$t"/collprof_*.h5 2>/dev/null | head -n 1)
    rows "$h5" replay >"all.$t"
    awk -F'|' '$1 == "op"' "all.$t" >"ops.$t"
}

for b in self gloo mpi ofi nccl; do
    if ! have "$b"; then
        ok 0 "# SKIP the $b backend was not built"
        continue
    fi
    replay "$b" 2 p
    [ "$rc" -eq 0 ] && [ "$(wc -l <"ops.$b.2.p")" -eq 28 ]
    ok $? "$b: the p2p trace replays, 28 op rows (exit $rc$(head -c 300 err | tr '\n' ' '))"
    awk -F'|' '!($16 == "ok" && $15 == 0) && !($5 == "wait" && $16 == "skipped")' \
        "ops.$b.2.p" >bad
    [ ! -s bad ]
    ok $? "$b: every op ok with no wrong element$(head -c 400 bad | tr '\n' ';')"
    n=$(awk -F'|' '($5 == "send" || $5 == "recv") && $16 == "ok" && $15 == 0 && $12 > 0' \
        "ops.$b.2.p" | wc -l)
    [ "$n" -eq 10 ]
    ok $? "$b: all 10 sends and recvs replayed, timed and checked ($n), none skipped"
    n=$(awk -F'|' '$17 ~ /^coalesced [0-9]+: posted/' "ops.$b.2.p" | wc -l)
    g=$(awk -F'|' '$17 ~ /^coalesced [0-9]+: posted as one group call/' "ops.$b.2.p" | wc -l)
    # (nccl has the group slot: the pair is one ncclGroupStart/ncclGroupEnd)
    want=0
    [ "$b" = nccl ] && want=4
    [ "$n" -eq 4 ] && [ "$g" -eq "$want" ]
    ok $? "$b: the coalesced pair posted together on both ranks ($n; as one group call: $g)"
    n=$(awk -F'|' '$5 == "wait" && $16 == "ok" && $17 ~ /^completes seq/' "ops.$b.2.p" | wc -l)
    m=$(awk -F'|' '$5 ~ /^(allreduce|allgather|reduce)$/ && $17 ~ /async: posted/' \
        "ops.$b.2.p" | wc -l)
    [ "$n" -eq 8 ] && [ "$m" -eq 6 ]
    ok $? "$b: the async collectives posted and completed at their waits ($m; waits $n)"
done

# self's lane for posted collectives is a segment of its own, made at the first collective
# posted (a matrix run has none: self.sh): once here (the world context), header + 4 slots of
# 1 MiB.  Under a /dev/shm of 24 MiB with 4 MiB slots, run()'s segment (17 MB) fits and the
# lane (16.8 MB) does not: the async collectives fail with the reason, exit 1, no SIGBUS
replay self 2 p -v
n=$(grep -c "self: a 4198400-byte shared memory segment for posted collectives$" err)
[ "$rc" -eq 0 ] && [ "$n" -eq 1 ]
ok $? "self: the lane for posted collectives made once, 4198400 bytes ($n, exit $rc)"
if unshare -m true 2>/dev/null; then
    mkdir -p r.small
    rc=0
    unshare -m sh -c 'mount -t tmpfs -o size=24m tmpfs /dev/shm && exec "$@"' sh \
        timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" --np 2 --backends self --replay p.h5 \
        --replay-iters 1 -B self-slot-kib=4096 --output-dir r.small </dev/null >small.out \
        2>small.err || rc=$?
    why="post: the 16781312-byte segment of posted collectives: No space left on device"
    n=$(grep -E "^(allgather|allreduce|reduce) .* error .*$why" small.out | wc -l)
    m=$(grep -E "^(allreduce|barrier) .* ok " small.out | wc -l)
    [ "$rc" -eq 1 ] && [ "$n" -eq 3 ] && [ "$m" -eq 2 ]
    ok $? "self: no room in /dev/shm for the lane: the posted collectives fail saying so, the others ok (exit $rc; $n, $m)"
else
    ok 0 "# SKIP no mount namespace (unshare -m) for a small /dev/shm"
fi

# Async collectives that only complete when posted: on 3 ranks, two groups of ranks 0 and 1
# (two group contexts side by side); rank 0 posts an iallreduce of 1 MiB on group A, then runs
# an allreduce of 512 KiB on group B, then waits; rank 1 runs B's first, then posts A's and
# waits (valid MPI: a non-blocking collective never blocks its issuer); rank 2 joins the final
# barrier.  Run at once, rank 0 would wait in A for rank 1, which waits in B for rank 0: the
# replay hangs (the watchdog's --timeout ends it, exit not 0).
A='"pg_id": 1, "global_ranks": [0, 1]'
B='"pg_id": 2, "global_ranks": [0, 1]'
W='"pg_id": 0, "global_ranks": [0, 1, 2]'
M='"in_msg_size": 262144, "out_msg_size": 262144, "dtype": "Float"'
H='"in_msg_size": 131072, "out_msg_size": 131072, "dtype": "Float"'
cat >c-rank0.json <<EOF
[{"comms": "all_reduce", "seqnum": 1, "req": 1, $A, $M},
 {"comms": "all_reduce", "seqnum": 2, $B, $H},
 {"comms": "wait", "req": 1, $A}, {"comms": "barrier", "seqnum": 3, $W}]
EOF
cat >c-rank1.json <<EOF
[{"comms": "all_reduce", "seqnum": 2, $B, $H},
 {"comms": "all_reduce", "seqnum": 1, "req": 2, $A, $M},
 {"comms": "wait", "req": 2, $A}, {"comms": "barrier", "seqnum": 3, $W}]
EOF
echo '[{"comms": "barrier", "seqnum": 3, '"$W"'}]' >c-rank2.json
"$REPORT" import --trace param c-rank0.json c-rank1.json c-rank2.json -o c.h5 >c.out 2>&1
ok $? "a trace of an iallreduce crossed with a blocking allreduce of another group imports"
# Overlap, timed: a barrier, an iallreduce of 16 MiB posted 500 ms later (its buffers are
# filled in that time, before its post: filled at the start of the replay, a rank under load
# posted up to 300 ms late and the other's wait absorbed it), a barrier of its group 500 ms
# after the post (the gap slept to it), its wait, then the same allreduce blocking 100 ms
# later.  Posted for real (a worker thread on self, gloo and ofi), the allreduce moves during
# the gap: its post and its wait together take far less than the blocking one (< 1/2 checked); run
# at once, the post alone would take as long.  (Group A is every rank of this 2-rank run: the
# world context, so the posted op and the blocking ones share one context.)  On mpi only
# printed: Open MPI moves a posted collective only inside its calls (the barrier, the wait),
# not while the rank sleeps.  Under a heavy load the fill can still outlast its 500 ms (a post
# 700 ms late at load 17) and the allreduce outlast what is left of the gap: a miss prints
# each rank's figures and when it posted, and is tried once more on the trace with every
# interval 4 x as long (o4), with the same check: an allreduce not posted, or not moving
# while its rank sleeps, misses it at any gap.
M8='"in_msg_size": 4194304, "out_msg_size": 4194304, "dtype": "Float"'
imp=0
for k in 1 4; do
    for r in 0 1; do
        cat >o$k-rank$r.json <<EOF
[{"comms": "barrier", "seqnum": 1, "startTime_ns": 1000000, $A},
 {"comms": "all_reduce", "seqnum": 2, "req": 1, "startTime_ns": $((k * 500 + 1))000000, $A, $M8},
 {"comms": "barrier", "seqnum": 3, "startTime_ns": $((k * 1000 + 1))000000, $A},
 {"comms": "wait", "req": 1, "startTime_ns": $((k * 1000 + 1))100000, $A},
 {"comms": "all_reduce", "seqnum": 4, "startTime_ns": $((k * 1100 + 1))000000, $A, $M8}]
EOF
    done
    "$REPORT" import --trace param o$k-rank0.json o$k-rank1.json -o o$k.h5 >o.out 2>&1 || imp=1
done
ok $imp "a trace of an iallreduce overlapped by a gap and a barrier imports (and its 4 x longer twin)"
# per rank of replay all.$1: the post's time + the wait's against the blocking allreduce's
# (p50s), and when it posted (issue_us, the 10th field from the end: the post's note has a
# comma); exit 1 on a miss
overlap() {
    awk -F'|' '$1 == "op" { t[$3 " " $4] = $12; s[$3 " " $4] = $16; at[$3 " " $4] = $(NF - 9) }
        END { for (r = 0; r < 2; r++) {
                  post = t[r " 1"]; w = t[r " 3"]; blk = t[r " 4"]
                  bad += !(s[r " 1"] == "ok" && s[r " 4"] == "ok" && s[r " 3"] == "ok" &&
                           blk > 0 && post + w < blk / 2)
                  printf "rank %d: post %.1f + wait %.1f us, blocking %.1f us, posted at %.0f ms; ",
                      r, post, w, blk, at[r " 1"] / 1000 }
              exit bad }' "$1"
}
for b in self gloo mpi ofi; do
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_$b.so" ] || continue
    replay "$b" 3 c --timeout 30
    n=$(awk -F'|' '$5 == "allreduce" && $16 == "ok" && $15 == 0' "ops.$b.3.c" | wc -l)
    p=$(awk -F'|' '$5 == "allreduce" && $17 ~ /async: posted$/ && $18 ~ /^completed at its wait/' \
        "ops.$b.3.c" | wc -l)
    [ "$rc" -eq 0 ] && [ "$n" -eq 4 ] && [ "$p" -eq 2 ]
    ok $? "$b: an iallreduce crossed with another group's blocking allreduce completes: posted, 4 allreduces ok and exact ($n, $p, exit $rc)"
    replay "$b" 2 o1 --gaps trace
    overlap "all.$b.2.o1" >ovl
    r=$?
    if [ "$b" = mpi ]; then
        echo "# mpi (not checked): $(cat ovl)(exit $rc)"
        continue
    fi
    again=
    if [ "$rc" -eq 0 ] && [ "$r" -ne 0 ]; then
        echo "# $b: timing miss at load $(cut -d' ' -f1 /proc/loadavg): $(cat ovl)tried again with 4 x the gaps"
        replay "$b" 2 o4 --gaps trace
        overlap "all.$b.2.o4" >ovl
        r=$?
        again=", 4 x the gaps"
    fi
    [ "$rc" -eq 0 ] && [ "$r" -eq 0 ]
    ok $? "$b: the posted iallreduce overlaps the gap: $(cat ovl)(exit $rc; load $(cut -d' ' -f1 /proc/loadavg)$again)"
done

# nccl's variants: +graph (a posted collective launched, not captured; a run one captured),
# p2p, +reg (its buffers from ncclMemAlloc where NCCL has it): one replay each, all exact
if have nccl; then
    replay nccl 2 p --variants default,graph,p2p,reg --replay-iters 2
    n=$(grep -c '^whole trace: 28 ops, .* 0 wrong elements: ok' "r.nccl.2.p"/collprof_*.txt)
    [ "$rc" -eq 0 ] && [ "$n" -eq 4 ]
    ok $? "nccl: --variants default,graph,p2p,reg: the p2p trace replayed on each, all ok ($n, exit $rc)"
fi

for b in self mpi ofi nccl; do
    have "$b" || continue
    COLLPROF_FAULT=wrong:1
    export COLLPROF_FAULT
    replay "$b" 2 p --replay-iters 2
    unset COLLPROF_FAULT
    w=$(awk -F'|' '$5 == "recv" && $3 == 0 && $16 == "wrong" && $15 > 0' "ops.$b.2.p" | wc -l)
    o=$(awk -F'|' '$16 == "wrong" && !($5 == "recv" && $3 == 0)' "ops.$b.2.p" | wc -l)
    [ "$rc" -eq 1 ] && [ "$w" -eq 2 ] && [ "$o" -eq 0 ]
    ok $? "$b: a wrong element in rank 1's sends: rank 0's two recvs from it wrong, exit 1 ($w, $o, exit $rc)"
done

# two groups of the same two ranks (two contexts side by side on 3 ranks), 4 MiB each way, each
# rank waiting first on its recv of the group the other sends on last: only a wait that moves
# every context's posted ops (self: every ring of the process) gets through
A='"pg_id": 1, "global_ranks": [0, 1]'
B='"pg_id": 2, "global_ranks": [0, 1]'
W='"pg_id": 0, "global_ranks": [0, 1, 2]'
M='"in_msg_size": 1048576, "out_msg_size": 1048576, "dtype": "Float"'
cat >x-rank0.json <<EOF
[{"comms": "isend", "seqnum": 1, "req": 1, $A, "src_rank": 0, "dst_rank": 1, $M},
 {"comms": "irecv", "seqnum": 2, "req": 2, $B, "src_rank": 1, "dst_rank": 0, $M},
 {"comms": "wait", "req": 2, $B}, {"comms": "wait", "req": 1, $A},
 {"comms": "barrier", "seqnum": 3, $W}]
EOF
cat >x-rank1.json <<EOF
[{"comms": "isend", "seqnum": 1, "req": 3, $B, "src_rank": 1, "dst_rank": 0, $M},
 {"comms": "irecv", "seqnum": 2, "req": 4, $A, "src_rank": 0, "dst_rank": 1, $M},
 {"comms": "wait", "req": 4, $A}, {"comms": "wait", "req": 3, $B},
 {"comms": "barrier", "seqnum": 3, $W}]
EOF
echo '[{"comms": "barrier", "seqnum": 3, '"$W"'}]' >x-rank2.json
"$REPORT" import --trace param x-rank0.json x-rank1.json x-rank2.json -o x.h5 >x.out 2>&1
ok $? "a trace of two groups of the same two ranks imports"
# (nccl: the same at 256 KiB, what the stand-in's mailbox holds; on NCCL the four ops are one
# group call across the two communicators, launched at the first wait)
sed 's/1048576/65536/g' x-rank0.json >y-rank0.json
sed 's/1048576/65536/g' x-rank1.json >y-rank1.json
"$REPORT" import --trace param y-rank0.json y-rank1.json x-rank2.json -o y.h5 >y.out 2>&1
for b in self gloo mpi ofi nccl; do
    have "$b" || continue
    x=x
    [ "$b" = nccl ] && x=y
    replay "$b" 3 $x
    n=$(awk -F'|' '($5 == "send" || $5 == "recv") && $16 == "ok" && $15 == 0' "ops.$b.3.$x" | wc -l)
    [ "$rc" -eq 0 ] && [ "$n" -eq 4 ]
    ok $? "$b: crossed waits on two group contexts complete, 4 sends and recvs ok ($n, exit $rc)"
done

"$REPORT" import --trace param "$D"/shrink-rank[0-7].json -o s.h5 >s.out 2>&1
ok $? "the 8-rank fixture imports"
cp_run --np 4 --backends self --replay s.h5 --output-dir .
[ "$rc" -eq 2 ] && grep -q 'recorded on 8 ranks and this run has 4.*--shrink' err
ok $? "8 ranks on 4 without --shrink: refused, --shrink named (exit $rc: $(head -c 200 err))"
for b in self gloo mpi ofi nccl; do
    have "$b" || continue
    replay "$b" 4 s --shrink
    n=$(awk -F'|' '$16 == "ok" && $15 == 0' "ops.$b.4.s" | wc -l)
    p=$(awk -F'|' '($5 == "send" || $5 == "recv") && $16 == "ok"' "ops.$b.4.s" | wc -l)
    # the halves' allreduce of 400 B on groups of 4; the pairs' of 256 B on groups of 1
    g=$(awk -F'|' '$5 == "allreduce" && $7 == 400 && $9 == 4 && $16 == "ok"' "ops.$b.4.s" | wc -l)
    o=$(awk -F'|' '$5 == "allreduce" && $7 == 256 && $9 == 1 && $16 == "ok"' "ops.$b.4.s" | wc -l)
    [ "$rc" -eq 0 ] && [ "$(wc -l <"ops.$b.4.s")" -eq 36 ] && [ "$n" -eq 36 ] &&
        [ "$p" -eq 8 ] && [ "$g" -eq 8 ] && [ "$o" -eq 4 ]
    ok $? "$b: --shrink 8 onto 4: 36 ops all ok, 8 sends and recvs, both halves on 4, the pairs [q, q+4] on 1 ($n, $p, $g, $o, exit $rc)"
    grep -q '^whole trace: 36 ops.*shrunk from 8 ranks to 4' "r.$b.4.s"/collprof_*.txt
    ok $? "$b: the summary says the trace was shrunk from 8 ranks to 4"
done

done_testing
