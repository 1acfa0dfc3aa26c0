#!/bin/sh
# collprof --replay's variable ops with per-rank counts (docs/replay.md): the vops fixture of
# tests/data/trace, a collprof-trace recording of 3 ranks: an MPI_Allgatherv of float32 blocks
# 100, 300, 50 on the world, an MPI_Gatherv of int32 blocks 7, 0, 33 to rank 1, an
# MPI_Scatterv of float64 blocks 10, 20, 5 from rank 2, an MPI_Reduce_scatter of float32
# blocks 4, 8, 4 (per-rank blocks) and one of 6, 6, 6 (equal), an MPI_Iallgatherv of bytes
# 1000, 2000, 3000 waited at its MPI_Wait (posted on every backend that posts), an
# MPI_Ireduce_scatter of int32 blocks 2, 0, 5 waited at its MPI_Wait, an MPI_Allgatherv of
# int64 blocks 5, 9 on the half [0, 2], a barrier.  Every rank records only its own block (a
# gatherv's total only at the root): the replay takes each member's block from its own record.
# On self, gloo, mpi, ofi and nccl (the CUDA/NCCL stand-in) every op ok and exact with its
# per-rank counts (the replayed bytes are the totals), but for gloo's gatherv and scatterv
# (unsupported, Gloo has neither); the reduce-scatters of unequal blocks on mpi and nccl the
# backend's own (MPI_Reduce_scatter, posted as MPI_Ireduce_scatter; a group of ncclReduce),
# on self, gloo and ofi a reduce of each block to its owner (the async one then issued and
# completed at once), never replayed as equal blocks.  With COLLPROF_FAULT=wrong:1 (rank 1's
# input of the per-rank ops one element off: it lands in block 0, rank 0's) rank 0's two
# unequal reduce-scatters are wrong, no other rank's, the run fails; shrunk onto 2 ranks (self)
# every variable op ok.  A rank whose record of a gatherv is missing from the trace makes
# every member skip it, with why.  A Flight Recorder dump of reduce_scatters (equal blocks, blocks
# 8, 16, 24 and 5, 7 on a group of ranks [2, 0]) imports with its counts and groups and replays
# exact on self.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
replay_prelude

"$REPORT" import --trace collprof-trace "$D"/vops.0.jsonl "$D"/vops.1.jsonl "$D"/vops.2.jsonl \
    -o v.h5 >v.out 2>&1
ok $? "the vops fixture imports ($(head -c 200 v.out | tr '\n' ' '))"

# replay $2.h5 on backend $1 with 3 ranks: /replay's op rows in ops.$1.$2
replay() {
    rm -rf "r.$1.$2"
    mkdir -p "r.$1.$2"
    saved_path=$COLLPROF_PLUGIN_PATH
    [ "$1" = nccl ] && COLLPROF_PLUGIN_PATH="$MOCK:$COLLPROF_PLUGIN_PATH"
    cp_run --np 3 --backends "$1" --replay "$2.h5" --replay-iters 3 --timeout 120 \
        --output-dir "r.$1.$2"
    COLLPROF_PLUGIN_PATH=$saved_path
    h5=$(ls "r.$1.$2"/collprof_*.h5 2>/dev/null | head -n 1)
    rows "$h5" replay | awk -F'|' '$1 == "op"' >"ops.$1.$2"
}

# rows of op $2 with status $3 and wrong 0 in ops file $1
count() {
    awk -F'|' -v o="$2" -v s="$3" '$5 == o && $16 == s && $15 == 0' "$1" | wc -l
}

for b in self gloo mpi ofi nccl; do
    if ! have "$b"; then
        ok 0 "# SKIP the $b backend was not built"
        continue
    fi
    replay "$b" v
    f=ops.$b.v
    [ "$rc" -eq 0 ] && [ "$(wc -l <"$f")" -eq 32 ]
    ok $? "$b: the vops trace replays, 32 op rows (exit $rc$(head -c 300 err | tr '\n' ' '))"
    # the world's allgatherv: 450 floats gathered on every rank; the async one: 6000 bytes
    a=$(awk -F'|' '$5 == "allgatherv" && $9 == 3 && $16 == "ok" && $15 == 0 &&
        $17 ~ /per-rank counts/' "$f" | wc -l)
    h=$(awk -F'|' '$5 == "allgatherv" && $9 == 2 && $16 == "ok" && $15 == 0' "$f" | wc -l)
    # the async one: posted (self, gloo, ofi: their worker threads; mpi: MPI_Iallgatherv;
    # nccl: on the stream) and completed at its wait
    i=$(awk -F'|' '$5 == "allgatherv" && $6 == "uint8" && $16 == "ok" && $15 == 0 &&
        $17 ~ /async: posted$/ && $18 ~ /^completed at its wait/' "$f" | wc -l)
    [ "$a" -eq 6 ] && [ "$h" -eq 2 ] && [ "$i" -eq 3 ]
    ok $? "$b: the allgathervs ok and exact with per-rank counts, the async one posted ($a, $h, $i)"
    case $b in
    mpi | nccl) how="the backend's own" ;;
    *) how="a reduce of each to its owner" ;;
    esac
    u=$(awk -F'|' -v how="$how" '$5 == "reducescatter" && $6 == "float32" && $16 == "ok" &&
        $15 == 0 && $17 == "reduced by sum; per-rank blocks of 4 to 8: " how' \
        "$f" | wc -l)
    e=$(count "$f" reducescatter ok)
    [ "$u" -eq 3 ] && [ "$e" -eq 9 ]
    ok $? "$b: the reduce_scatters of blocks 4, 8, 4 (as $how), 6, 6, 6 and 2, 0, 5 ok and exact ($u, $e)"
    # the async one of blocks 2, 0, 5: posted where the backend has its own, else at once
    case $b in
    mpi | nccl) post='async: posted$' ;;
    *) post='async: issued and completed at once \\(composed\\)$' ;;
    esac
    p=$(awk -F'|' -v p="$post" '$5 == "reducescatter" && $6 == "int32" && $16 == "ok" &&
        $15 == 0 && $17 ~ p' "$f" | wc -l)
    [ "$p" -eq 3 ]
    ok $? "$b: the async reduce_scatter of blocks 2, 0, 5: $post ($p)"
    g=$(count "$f" gatherv ok)
    s=$(count "$f" scatterv ok)
    if [ "$b" = gloo ]; then
        n=$(awk -F'|' '($5 == "gatherv" || $5 == "scatterv") && $16 == "unsupported" &&
            $17 ~ /^backend gloo does not offer (gatherv|scatterv)/' "$f" | wc -l)
        [ "$g" -eq 0 ] && [ "$s" -eq 0 ] && [ "$n" -eq 6 ]
        ok $? "gloo: gatherv and scatterv unsupported, said in one line ($n)"
    else
        [ "$g" -eq 3 ] && [ "$s" -eq 3 ]
        ok $? "$b: gatherv and scatterv ok and exact with per-rank counts ($g, $s)"
    fi
    # the replayed bytes: the totals (450 x 4, 40 x 4, 35 x 8, 16 x 4) on rank 0, from the blocks
    # (replayed_bytes, column 18, after as many more as the note's commas split off)
    t=$(awk -F'|' 'NR == FNR { k = k == "" || NF < k ? NF : k; next }
        $1 == "op" && $3 == 0 && ($5 ~ /^(allgatherv|gatherv|scatterv)$/ ||
        ($5 == "reducescatter" && $6 == "float32")) &&
        $16 == "ok" { printf "%s:%s ", $5, $(18 + NF - k) }' "$f" "$f")
    case "$b:$t" in
    gloo:"allgatherv:1800 reducescatter:64 reducescatter:72 allgatherv:6000 allgatherv:112 ") r=0 ;;
    gloo:*) r=1 ;;
    *:"allgatherv:1800 gatherv:160 scatterv:280 reducescatter:64 reducescatter:72 allgatherv:6000 allgatherv:112 ") r=0 ;;
    *) r=1 ;;
    esac
    ok $r "$b: rank 0's replayed bytes are the totals of the blocks ($t)"
done

# a wrong element caught: rank 1's input of the per-rank ops one off at its first element,
# which is block 0's (rank 0's) in a reduce-scatter: rank 0's two unequal ones wrong, exit 1
for b in self mpi nccl; do
    have "$b" || continue
    COLLPROF_FAULT=wrong:1
    export COLLPROF_FAULT
    replay "$b" v
    unset COLLPROF_FAULT
    f=ops.$b.v
    w=$(awk -F'|' '$5 == "reducescatter" && $3 == 0 && $16 == "wrong" && $15 > 0' "$f" | wc -l)
    o=$(awk -F'|' '$5 == "reducescatter" && ($3 != 0 || $6 == "float32" && $15 == 0) &&
        $16 != "ok"' "$f" | wc -l)
    [ "$rc" -eq 1 ] && [ "$w" -eq 2 ] && [ "$o" -eq 0 ]
    ok $? "$b: rank 1's input one off: rank 0's two reduce_scatters of unequal blocks wrong, no other ($w, $o, exit $rc)"
done

# --shrink onto 2 ranks: each folded member's block from its representative's record, exact
rm -rf r.self.s && mkdir r.self.s
cp_run --np 2 --backends self --replay v.h5 --shrink --replay-iters 2 --timeout 120 \
    --output-dir r.self.s
h5=$(ls r.self.s/collprof_*.h5 2>/dev/null | head -n 1)
rows "$h5" replay | awk -F'|' '$1 == "op"' >ops.self.s
n=$(awk -F'|' '$5 ~ /^(allgatherv|gatherv|scatterv|reducescatter)$/ && $16 == "ok" &&
    $15 == 0' ops.self.s | wc -l)
w=$(awk -F'|' '$16 == "wrong" || $16 == "error"' ops.self.s | wc -l)
[ "$rc" -eq 0 ] && [ "$n" -eq 15 ] && [ "$w" -eq 0 ]
ok $? "self: --shrink 3 onto 2: the variable ops ok and exact ($n, none wrong: $w, exit $rc)"

# a PARAM reduce_scatter of unequal blocks (each rank's out_msg_size its own: 3, 6, 9 of 18):
# kept by the importer, replayed as per-rank blocks, exact
for r in 0 1 2; do
    cat >prs-rank$r.json <<EOF
[{"comms": "reduce_scatter", "seqnum": 1, "pg_id": 0, "global_ranks": [0, 1, 2],
  "in_msg_size": 18, "out_msg_size": $((3 * r + 3)), "dtype": "Float", "startTime_ns": 1000},
 {"comms": "barrier", "seqnum": 2, "pg_id": 0, "global_ranks": [0, 1, 2]}]
EOF
done
"$REPORT" import --trace param prs-rank0.json prs-rank1.json prs-rank2.json -o prs.h5 >prs.out 2>&1
ok $? "a PARAM trace of a reduce_scatter of blocks 3, 6, 9 imports"
for b in self mpi; do
    have "$b" || continue
    replay "$b" prs
    n=$(awk -F'|' '$5 == "reducescatter" && $16 == "ok" && $15 == 0 &&
        $17 ~ /^reduced by sum; per-rank blocks of 3 to 9: /' "ops.$b.prs" | wc -l)
    [ "$rc" -eq 0 ] && [ "$n" -eq 3 ]
    ok $? "$b: PARAM's reduce_scatter of blocks 3, 6, 9 replayed as per-rank blocks, exact ($n, exit $rc)"
done

# Flight Recorder reduce_scatters (tests/data/trace/fr-rs-rank*.json, 3 ranks): torch's
# reduce_scatter of a list (the list flattened: input [3, 256] floats, output [256]),
# reduce_scatter_tensor (_reduce_scatter_base: 300 bfloat16 to 100), one of unequal blocks
# (each rank's output_sizes its own: 8, 16, 24 of 48), and one of int32 blocks 5, 7 on the
# group "pair" of ranks [2, 0] (rank 1 not in it), and one of unequal blocks 4, 8, 4 as torch
# records it (a coalesced call of a "_reduce_oop" to each group rank, then the marker
# "REDUCE_SCATTER_coalesced"): counts are the shapes' products, the group and members from
# pg_config, the _reduce_oops reduces rooted at their place in the call, the marker dropped;
# replayed on self, every op ok and exact
"$REPORT" import --trace flight-recorder "$D"/fr-rs-rank0.json "$D"/fr-rs-rank1.json \
    "$D"/fr-rs-rank2.json -o frs.h5 >frs.out 2>&1
ok $? "a Flight Recorder dump of reduce_scatters imports ($(head -c 200 frs.out | tr '\n' ' '))"
rows frs.h5 trace_ops | cut -d'|' -f1-9,12,18 >got
cat >want <<'W'
0|0|reducescatter|float32|768|256|3072|0|-1|-1|nccl:reduce_scatter
0|1|reducescatter|bfloat16|300|100|600|0|-1|-1|nccl:_reduce_scatter_base
0|2|reducescatter|float32|48|8|192|0|-1|-1|nccl:reduce_scatter
0|3|reducescatter|int32|12|7|48|1|-1|-1|nccl:reduce_scatter
0|4|reduce|float32|4|4|16|0|0|0|nccl:_reduce_oop
0|5|reduce|float32|8|8|32|0|1|0|nccl:_reduce_oop
0|6|reduce|float32|4|4|16|0|2|0|nccl:_reduce_oop
1|0|reducescatter|float32|768|256|3072|0|-1|-1|nccl:reduce_scatter
1|1|reducescatter|bfloat16|300|100|600|0|-1|-1|nccl:_reduce_scatter_base
1|2|reducescatter|float32|48|16|192|0|-1|-1|nccl:reduce_scatter
1|3|reduce|float32|4|4|16|0|0|1|nccl:_reduce_oop
1|4|reduce|float32|8|8|32|0|1|1|nccl:_reduce_oop
1|5|reduce|float32|4|4|16|0|2|1|nccl:_reduce_oop
2|0|reducescatter|float32|768|256|3072|0|-1|-1|nccl:reduce_scatter
2|1|reducescatter|bfloat16|300|100|600|0|-1|-1|nccl:_reduce_scatter_base
2|2|reducescatter|float32|48|24|192|0|-1|-1|nccl:reduce_scatter
2|3|reducescatter|int32|12|5|48|1|-1|-1|nccl:reduce_scatter
2|4|reduce|float32|4|4|16|0|0|2|nccl:_reduce_oop
2|5|reduce|float32|8|8|32|0|1|2|nccl:_reduce_oop
2|6|reduce|float32|4|4|16|0|2|2|nccl:_reduce_oop
W
diff want got >d.out
ok $? "Flight Recorder: the reduce_scatters' op, dtype, in and out counts, bytes, group; the _reduce_oops' roots, one coalesced call, its marker dropped$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows frs.h5 trace_groups | cut -d'|' -f1-5 | tr '\n' ';')" = "0|0|default_pg|0|3;1|1|pair|1|2;" ] &&
    [ "$(rows frs.h5 trace_members | tr '\n' ' ')" = "0 1 2 2 0 " ]
ok $? "Flight Recorder: the world of 3 and the pair [2, 0] from pg_config"
replay self frs
f=ops.self.frs
e=$(awk -F'|' '$5 == "reducescatter" && $16 == "ok" && $15 == 0 && $17 == "reduced by sum"' "$f" |
    wc -l)
u=$(awk -F'|' '$5 == "reducescatter" && $6 == "float32" && $16 == "ok" && $15 == 0 &&
    $17 == "reduced by sum; per-rank blocks of 8 to 24: a reduce of each to its owner"' "$f" | wc -l)
p=$(awk -F'|' '$5 == "reducescatter" && $6 == "int32" && $3 != 1 && $16 == "ok" && $15 == 0 &&
    $17 == "reduced by sum; per-rank blocks of 5 to 7: a reduce of each to its owner"' "$f" | wc -l)
t=$(awk -F'|' '$3 == 0 && $5 == "reducescatter" { printf "%s ", $18 }' "$f")
o=$(awk -F'|' '$5 == "reduce" && $16 == "ok" && $15 == 0 && $17 ~ /^reduced by sum; coalesced/' \
    "$f" | wc -l)
[ "$rc" -eq 0 ] && [ "$(wc -l <"$f")" -eq 20 ] && [ "$e" -eq 6 ] && [ "$u" -eq 3 ] &&
    [ "$p" -eq 2 ] && [ "$t" = "3072 600 192 48 " ] && [ "$o" -eq 9 ]
ok $? "self: the Flight Recorder reduce_scatters ok and exact: equal blocks as one, 8, 16, 24 and 5, 7 per rank, the _reduce_oops coalesced ($e, $u, $p, $o; rank 0's bytes $t; exit $rc)"

# the gatherv of rank 2 left out of the trace: every member skips it, saying why
grep -v '"MPI_Gatherv"' "$D"/vops.2.jsonl | sed 's/"ops": 11/"ops": 10/' >vops.2.jsonl
cp "$D"/vops.0.jsonl "$D"/vops.1.jsonl .
"$REPORT" import --trace collprof-trace vops.0.jsonl vops.1.jsonl vops.2.jsonl -o m.h5 >m.out 2>&1
ok $? "the fixture without rank 2's gatherv imports"
replay self m
n=$(awk -F'|' '$5 == "gatherv" && $16 == "skipped" && $17 ~ /rank 2 has no matching gatherv/' \
    ops.self.m | wc -l)
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ]
ok $? "self: a gatherv one member did not record is skipped by the others, with why ($n, exit $rc)"

done_testing
