#!/bin/sh
# collprof --replay (issue 40 item 2): the PARAM fixture of tests/data/trace (2 ranks, two
# groups, async ops, a batch of send/recv, all_to_allv) imported and replayed with --np 2 on
# self, gloo, mpi, ofi (those built) and nccl on the CUDA/NCCL stand-in (its device buffers through
# host copies): the replay's op rows (/replay, what = op) are the trace's
# ops in the same order (rank, seq, op, bytes, group), every collective the backend offers
# replayed and checked ok (wrong 0), the others said (a type the backend lacks: unsupported),
# the batch of isend/irecv replayed and checked ok (replay_p2p.sh tests point-to-point, async
# and coalesced ops, and --shrink, in depth); the fixture's all_to_allv, whose splits do not match between
# its ranks, is skipped with the reason.  With --np 3 the groups are groups of 2 of 3 ranks
# (the split contexts); a 4-rank trace of the world and two halves replays every op ok.
# A trace recorded on more ranks than the run has is refused.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
replay_prelude

"$REPORT" import --trace param "$D/param-rank0.json" "$D/param-rank1.json" -o p.h5 >p.out 2>&1
ok $? "the PARAM fixture imports"
# the same trace with each all_to_allv receiving what the other side sends (the fixture's
# rank 0 expects 40 elements from rank 1, which sends it 20, and rank 1 sends itself 40 but
# expects 20)
sed 's/"out_msg_size": 50, "dtype": "Half", "in_split": \[10, 20\], "out_split": \[10, 40\]/"out_msg_size": 30, "dtype": "Half", "in_split": [10, 20], "out_split": [10, 20]/' \
    "$D/param-rank0.json" >c-rank0.json
sed 's/"out_msg_size": 40, "dtype": "Half", "in_split": \[20, 40\], "out_split": \[20, 20\]/"out_msg_size": 60, "dtype": "Half", "in_split": [20, 40], "out_split": [20, 40]/' \
    "$D/param-rank1.json" >c-rank1.json
! cmp -s c-rank0.json "$D/param-rank0.json" && ! cmp -s c-rank1.json "$D/param-rank1.json"
ok $? "a copy with matching all_to_allv splits"
"$REPORT" import --trace param c-rank0.json c-rank1.json -o c.h5 >c.out 2>&1
ok $? "it imports"
rows c.h5 trace_ops | awk -F'|' 'NF > 1 { print $1 "|" $2 "|" $3 "|" $7 "|" $8 }' >want

# replay trace $3.h5 on backend $1 with $2 ranks: /replay in all.$1.$2.$3, its op rows in
# ops.$1.$2.$3, their rank|seq|op|bytes|group in got.$1.$2.$3
replay() {
    t="$1.$2.$3"
    rm -rf "r.$t"
    mkdir -p "r.$t"
    saved_path=$COLLPROF_PLUGIN_PATH
    [ "$1" = nccl ] && COLLPROF_PLUGIN_PATH="$MOCK:$COLLPROF_PLUGIN_PATH"
    cp_run --np "$2" --backends "$1" --replay "$3.h5" --replay-iters 3 --output-dir "r.$t"
    COLLPROF_PLUGIN_PATH=$saved_path
    h5=$(ls "r.$t"/collprof_*.h5 2>/dev/null | head -n 1)
    rows "$h5" replay >"all.$t"
    awk -F'|' '$1 == "op"' "all.$t" >"ops.$t"
    awk -F'|' '{ print $3 "|" $4 "|" $5 "|" $7 "|" $8 }' "ops.$t" >"got.$t"
}

for b in self gloo mpi ofi nccl; do
    if ! have "$b"; then
        ok 0 "# SKIP the $b backend was not built"
        continue
    fi
    replay "$b" 2 c
    [ "$rc" -eq 0 ]
    ok $? "$b: --np 2 --replay runs (exit $rc$(head -c 300 err | tr '\n' ' '))"
    diff want "got.$b.2.c" >d.out
    ok $? "$b: the replayed sequence is the trace's: rank, seq, op, bytes, group$(tr '\n' ';' <d.out)"
    # collectives: ok with wrong 0, or unsupported by the backend; send, recv: ok with wrong 0;
    # a wait: ok (it completed its op) or skipped (its op was completed at once)
    awk -F'|' '($5 ~ /^(send|recv)$/ && !($16 == "ok" && $15 == 0)) ||
               ($5 == "wait" && $16 != "ok" && $16 != "skipped") ||
               ($5 !~ /^(send|recv|wait)$/ && !(($16 == "ok" && $15 == 0) || $16 == "unsupported"))' \
        "ops.$b.2.c" >bad
    [ ! -s bad ]
    ok $? "$b: every op it offers replayed and checked ok (send and recv too), the rest said$(tr '\n' ';' <bad)"
    n=$(awk -F'|' '$16 == "ok" && $5 == "allreduce" && $12 > 0' "ops.$b.2.c" | wc -l)
    [ "$n" -eq 2 ]
    ok $? "$b: both ranks' allreduce (async in the trace) timed and ok ($n)"
    grep -q '^whole trace: 18 ops' "r.$b.2.c"/collprof_*.txt &&
        [ "$(awk -F'|' '$1 == "trace"' "all.$b.2.c" | wc -l)" -eq 1 ] &&
        [ "$(awk -F'|' '$1 == "type"' "all.$b.2.c" | wc -l)" -eq 8 ]
    ok $? "$b: the summary and /replay have the 8 op x size x group rows and the whole trace"
done

cols=$(sed -n '/^#define COLLPROF_REPLAY_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
    "$COLLPROF_SRCDIR/include/collprof/schema.h")
"$CP_H5DUMP" -H "$(ls r.self.2.c/collprof_*.h5 | head -n 1)" >hdr 2>&1
missing=
for c in $cols; do
    grep -q "\"$c\"" hdr || missing="$missing $c"
done
[ -n "$cols" ] && [ -z "$missing" ]
ok $? "every /replay column of schema.h is in the file${missing:+ (missing:$missing)}"

n=$(awk -F'|' '$5 != "send" && $5 != "recv" && $5 != "wait" && $16 == "ok"' ops.self.2.c | wc -l)
[ "$n" -eq 8 ]
ok $? "self: all 8 collectives (allreduce, all_to_allv, broadcast on group 1, barrier) ok ($n)"

# the staged path (COLLPROF_TEST_STAGED: host buffers filled and checked through host copies,
# as device buffers are), on self, and a wrong element in rank 1's sends caught after the copy
COLLPROF_TEST_STAGED=1
export COLLPROF_TEST_STAGED
replay self 2 c
# (a wait whose op self ran at once is skipped)
n=$(awk -F'|' '($16 == "ok" && $15 == 0) || ($5 == "wait" && $16 == "skipped")' ops.self.2.c |
    wc -l)
[ "$rc" -eq 0 ] && diff -q want got.self.2.c >/dev/null && [ "$n" -eq 18 ]
ok $? "self, staged through host copies: the sequence is the trace's, all 18 ops ok ($n, exit $rc)"
COLLPROF_FAULT=wrong:1
export COLLPROF_FAULT
replay self 2 c
unset COLLPROF_FAULT COLLPROF_TEST_STAGED
n=$(awk -F'|' '$16 == "wrong"' ops.self.2.c | wc -l)
[ "$rc" -eq 1 ] && [ "$n" -gt 0 ]
ok $? "self, staged: a wrong element in rank 1's sends caught after the copy back ($n rows, exit $rc)"

replay self 2 p
n=$(awk -F'|' '$5 == "alltoallv" && $16 == "skipped" && $17 ~ /splits disagree/' ops.self.2.p | wc -l)
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ]
ok $? "the fixture's all_to_allv, its splits not matching between ranks, skipped on both ($n)"

for b in self gloo ofi nccl; do
    have "$b" || continue
    replay "$b" 3 c
    bad=$(awk -F'|' '$5 !~ /^(send|recv|wait)$/ && $16 != "ok" && $16 != "unsupported"' "ops.$b.3.c")
    [ "$rc" -eq 0 ] && diff -q want "got.$b.3.c" >/dev/null && [ -z "$bad" ]
    ok $? "$b: --np 3: the 2-rank groups as group contexts of 2 of 3 ranks, ok"
done

# four ranks, the world and two halves (disjoint group contexts started side by side), a
# broadcast rooted at each half's second rank: every op ok, in order, on each backend
for r in 0 1 2 3; do
    h=$((r / 2))
    cat >"q-rank$r.json" <<EOF
[
  {"comms": "all_reduce", "seqnum": 1, "pg_id": 0, "global_ranks": [0, 1, 2, 3], "in_msg_size": 4096, "out_msg_size": 4096, "dtype": "Float"},
  {"comms": "all_reduce", "seqnum": 2, "pg_id": $((h + 1)), "global_ranks": [$((2 * h)), $((2 * h + 1))], "in_msg_size": 1000, "out_msg_size": 1000, "dtype": "Int"},
  {"comms": "broadcast", "seqnum": 3, "pg_id": $((h + 1)), "global_ranks": [$((2 * h)), $((2 * h + 1))], "root": $((2 * h + 1)), "in_msg_size": 64, "out_msg_size": 64, "dtype": "Double"},
  {"comms": "all_gather", "seqnum": 4, "pg_id": 0, "global_ranks": [0, 1, 2, 3], "in_msg_size": 16, "out_msg_size": 64, "dtype": "Float"},
  {"comms": "barrier", "seqnum": 5, "pg_id": 0, "global_ranks": [0, 1, 2, 3]}
]
EOF
done
"$REPORT" import --trace param q-rank0.json q-rank1.json q-rank2.json q-rank3.json -o q.h5 >q.out 2>&1
ok $? "a 4-rank trace with two halves imports"
rows q.h5 trace_ops | awk -F'|' 'NF > 1 { print $1 "|" $2 "|" $3 "|" $7 "|" $8 }' >want4
for b in self gloo mpi ofi nccl; do
    have "$b" || continue
    replay "$b" 4 q
    n=$(awk -F'|' '$16 == "ok" && $15 == 0' "ops.$b.4.q" | wc -l)
    [ "$rc" -eq 0 ] && diff -q want4 "got.$b.4.q" >/dev/null && [ "$n" -eq 20 ]
    ok $? "$b: --np 4, world and halves: the sequence is the trace's, all 20 ops ok ($n, exit $rc)"
done

# nccl's group contexts come from the split slot (ncclCommSplit of the job's communicator,
# every rank taking part) where the NCCL it was built with has ncclCommSplit
if have nccl && grep -q '^#define HAVE_NCCLCOMMSPLIT 1' "$(dirname "$COLLPROF_BIN")/config.h" 2>/dev/null; then
    saved_path=$COLLPROF_PLUGIN_PATH
    COLLPROF_PLUGIN_PATH="$MOCK:$COLLPROF_PLUGIN_PATH"
    mkdir -p split
    cp_run --np 4 --backends nccl --replay q.h5 --replay-iters 1 -v --output-dir split
    COLLPROF_PLUGIN_PATH=$saved_path
    n=$(grep -c 'nccl: a group of 2 ranks: its communicator split from the job.s (ncclCommSplit)' err)
    [ "$rc" -eq 0 ] && [ "$n" -eq 2 ] && grep -q '^whole trace: 20 ops, .* 0 wrong elements: ok' out
    ok $? "nccl: both halves' communicators split from the job's, the replay exact ($n, exit $rc)"
fi

if [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_gloo.so" ]; then
    mkdir -p two
    cp_run --np 2 --backends self,gloo --replay c.h5 --replay-iters 2 --output-dir two
    h5=$(ls two/collprof_*.h5 2>/dev/null | head -n 1)
    [ "$rc" -eq 0 ] && [ "$(rows "$h5" replay | awk -F'|' '$1 == "trace" { print $2 }' | sort |
        tr '\n' ' ')" = "gloo self " ]
    ok $? "two backends in one run: one /replay table, a whole-trace row each (exit $rc)"
    # --variants: the trace once per variant, labelled backend/variant; best picks across them
    mkdir -p var
    cp_run --np 4 --backends gloo --variants default,ring --replay q.h5 --replay-iters 2 \
        --output-dir var
    h5=$(ls var/collprof_*.h5 2>/dev/null | head -n 1)
    labels=$(rows "$h5" replay | awk -F'|' '$1 == "trace" { print $2 }' | sort | tr '\n' ' ')
    n=$(rows "$h5" replay | awk -F'|' '$1 == "op" && $2 == "gloo/ring" && $16 == "ok"' | wc -l)
    "$REPORT" best "$h5" >best.out 2>&1
    [ "$rc" -eq 0 ] && [ "$labels" = "gloo gloo/ring " ] && [ "$n" -eq 20 ] &&
        grep -q '^whole trace  *gloo' best.out
    ok $? "--variants default,ring: the trace replayed on each, gloo and gloo/ring ($labels; $n ops ok), best compares them (exit $rc)"
fi

if [ -n "${CP_MPIRUN:-}" ] && [ -x "$CP_MPIRUN" ] &&
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    mkdir -p mr
    cp_mpirun 2 --backends mpi --replay c.h5 --replay-iters 2 --output-dir mr
    h5=$(ls mr/collprof_*.h5 2>/dev/null | head -n 1)
    [ "$rc" -eq 0 ] && [ -n "$h5" ] &&
        rows "$h5" replay | awk -F'|' '$1 == "op" { print $3 "|" $4 "|" $5 "|" $7 "|" $8 }' |
        diff -q want - >/dev/null
    ok $? "mpirun -np 2: the mpi replay's sequence is the trace's (exit $rc)"
fi

cp_run --np 1 --backends self --replay c.h5 --output-dir .
[ "$rc" -eq 2 ] && grep -q 'recorded on 2 ranks and this run has 1' err
ok $? "a trace of 2 ranks is refused on 1 with the numbers (exit $rc: $(head -c 200 err))"

# the memory guard counts a replay's buffers: an allreduce of 1.2 TB a rank is refused before
# any communication
for r in 0 1; do
    cat >"big-rank$r.json" <<'EOF'
[
  {"comms": "all_reduce", "seqnum": 1, "pg_id": 0, "global_ranks": [0, 1], "in_msg_size": 300000000000, "out_msg_size": 300000000000, "dtype": "Float"}
]
EOF
done
"$REPORT" import --trace param big-rank0.json big-rank1.json -o big.h5 >big.out 2>&1
cp_run --np 2 --backends self --replay big.h5 --output-dir .
[ "$rc" -eq 2 ] && grep -q 'replay big.h5: needs about .* MiB of host memory on this node (2 ranks x' err
ok $? "the memory guard refuses a replay whose buffers do not fit (exit $rc: $(head -c 300 err))"

done_testing
