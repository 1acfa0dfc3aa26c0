#!/bin/sh
# collprof --replay of a fixture of every import format (tests/data/trace), on self with --np:
# PARAM, collprof-trace, PyTorch ET, Chakra JSON and Chakra .et replay; the NCCL Inspector
# fixture, whose order across its two communicators would deadlock a blocking replay (rank 0's
# allgather on one waits for rank 1, whose recv on the other waits for rank 0's send after
# it), replays in NCCL order (the default for a trace from NCCL: each op posted on its
# group's queue) on self and gloo, exactly, and is refused at once, in one line, by the check
# before the replay (docs/replay.md) under --replay-order program; the Flight Recorder fixture
# (one rank's file of a 2-rank group) is refused; the Inspector fixture without its send and
# recv replays.  Then hostile traces of the check (mismatched sequences, an unmatched send, a
# send larger than its recv, a cycle, in program and in NCCL order; a cycle through an
# all-to-all-v and through reduce-scatters, a reduce-scatter a member lacks, a gather-v of two
# roots; a 4-rank trace that --shrink folds onto 2 into a cycle): refused in one line,
# non-zero, nothing written, within a short bound.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
D=$COLLPROF_SRCDIR/tests/data/trace
cd "$WORK" || exit 1
CP_TIMEOUT=60 # (a hang is the failure this test looks for)

# replays NAME NP H5 [BACKEND]: a replay of H5 on NP ranks (on self) runs, its trace's ops
# every one ok or skipped ($ORDER: a --replay-order)
replays() {
    mkdir -p "o.$1"
    cp_run --np "$2" --backends "${4:-self}" --replay "$3" --replay-iters 1 ${ORDER:+--replay-order "$ORDER"} ${EXTRA:+"$EXTRA"} --output-dir "o.$1"
    s=$(ls o."$1"/*.txt 2>/dev/null | head -n 1)
    [ "$rc" -eq 0 ] && [ -n "$s" ] && grep -q '^whole trace: .* 0 wrong elements' "$s"
    ok $? "$1: --np $2 --replay on ${4:-self} runs (exit $rc$(tail -n 2 "$WORK/err" | tr '\n' ' '))"
}

# refused NAME NP H5 PATTERN: refused in one line matching PATTERN, exit 2, in under 20 s,
# nothing written
refused() {
    mkdir -p "o.$1"
    t0=$(date +%s)
    cp_run --np "$2" --backends self --replay "$3" --replay-iters 1 ${ORDER:+--replay-order "$ORDER"} ${EXTRA:+"$EXTRA"} --output-dir "o.$1"
    t1=$(date +%s)
    n=$(grep -c '^collprof: error: --replay' "$WORK/err")
    [ "$rc" -eq 2 ] && [ "$n" -eq 1 ] && grep -q "$4" "$WORK/err" && [ $((t1 - t0)) -lt 20 ] &&
        [ -z "$(ls "o.$1")" ]
    ok $? "$1: refused before the replay, one line, exit $rc, $((t1 - t0)) s: $(grep '^collprof: error: --replay' "$WORK/err" | cut -c1-400)"
}

imp() { # FORMAT OUT FILES...
    f=$1 o=$2
    shift 2
    "$REPORT" import --trace "$f" "$@" -o "$o" >"$o.out" 2>&1
    ok $? "import --trace $f ($(tail -n 1 "$o.out" | cut -c1-120))"
}

# ---- a fixture of every format
imp param p.h5 "$D/param-rank0.json" "$D/param-rank1.json" && replays param 2 p.h5
imp collprof-trace ct.h5 "$D/collprof-trace.0.jsonl" "$D/collprof-trace.1.jsonl" &&
    replays collprof-trace 2 ct.h5
imp pytorch-et e.h5 "$D/et-rank0.json" "$D/et-rank1.json" "$D/et-rank2.json" &&
    replays pytorch-et 3 e.h5
imp chakra-json c.h5 "$D/chakra-rank0.json" "$D/chakra-rank1.json" "$D/chakra-rank2.json" &&
    replays chakra-json 3 c.h5
if "$REPORT" import --trace chakra-et "$D/chakra.0.et" -o x.h5 2>&1 | grep -q 'without protobuf-c'; then
    ok 0 "# SKIP collprof-report was built without protobuf-c: no Chakra .et"
else
    imp chakra-et k.h5 "$D/chakra.0.et" "$D/chakra.1.et" "$D/chakra.2.et" \
        "$D/chakra-comm_group.json" && replays chakra-et 3 k.h5
fi
# the Inspector fixture: in NCCL order (its default) on self and gloo, every op ok and exact
# (posted, completed at the end: the note of none says "at once"); in program order, refused
imp nccl-inspector i.h5 "$D/gpu-a-pid100.log" "$D/gpu-b-pid200.log" && {
    replays nccl-inspector 2 i.h5
    grep -q -- '--check last, --replay-order nccl;' "$s"
    ok $? "nccl-inspector: replayed in NCCL order by default: $(grep -- '--replay-iters' "$s")"
    n=$(grep -c '^allgather\|^send\|^recv\|^allreduce' "$s")
    bad=$(grep '^allgather\|^send\|^recv\|^allreduce' "$s" | grep -cv ' ok ')
    [ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
    ok $? "nccl-inspector: its $n op type rows ok on self ($bad not)"
    if have gloo; then
        replays nccl-inspector-gloo 2 i.h5 gloo
    else
        ok 0 "# SKIP the gloo backend was not built"
    fi
    ORDER=program
    refused nccl-inspector-program 2 i.h5 'would deadlock (2 ranks blocked; ops issued in the trace.s order, collectives blocking): rank 0 at seq 1 (allgather on group 1) waits for rank 1; rank 1 at seq 1 (recv from 0 on group 0) waits for rank 0'
    ORDER=
}
sed 3d "$D/gpu-a-pid100.log" >a.log
grep -v p2p_perf "$D/gpu-b-pid200.log" >b.log
imp nccl-inspector i2.h5 a.log b.log && replays nccl-inspector-no-p2p 2 i2.h5
imp flight-recorder f.h5 "$D/fr-rank0.json" &&
    refused flight-recorder 2 f.h5 "rank 1, a member, has no collective #1 on it (a trace of some of the group's ranks only?)"

# ---- over its budget of rows (COLLPROF_REPLAY_CHECK_MAX), the check is skipped with a warning
COLLPROF_REPLAY_CHECK_MAX=2 && export COLLPROF_REPLAY_CHECK_MAX
replays param-over-budget 2 p.h5
grep -q 'warning.*the check before the replay was skipped: the trace has over 2 ops' "$WORK/err"
ok $? "over COLLPROF_REPLAY_CHECK_MAX=2 rows: the check skipped with a warning ($(grep -c skipped "$WORK/err") lines)"
unset COLLPROF_REPLAY_CHECK_MAX

# ---- hostile traces: PARAM files of two ranks, OP lines of rank 0, then of rank 1
op() { # COMMS PG [EXTRA]: one PARAM op on group PG of ranks 0, 1
    printf '{"comms": "%s", "pg_id": %s, "global_ranks": [0, 1], "in_msg_size": 256, "out_msg_size": 256, "dtype": "Float"%s}' \
        "$1" "$2" "${3:+, $3}"
}
hostile() { # NAME PATTERN (ops of rank 0 in h0, of rank 1 in h1, one a line)
    for r in 0 1; do
        { echo '['; paste -sd, "h$r"; echo ']'; } >"$1-rank$r.json"
    done
    "$REPORT" import --trace param "$1-rank0.json" "$1-rank1.json" -o "$1.h5" >"$1.out" 2>&1 &&
        refused "$1" 2 "$1.h5" "$2"
    [ -f "$1.h5" ] || ok 1 "$1: the hostile trace imports ($(head -c 200 "$1.out"))"
}
{ op all_reduce 0; echo; op all_gather 0; echo; } >h0
{ op all_reduce 0; echo; op broadcast 0 '"root": 1'; echo; } >h1
hostile mismatch 'group 0 (0): collective #2 differs between its members: rank 0 has allgather'
{ op all_reduce 0; echo; op all_reduce 0; echo; } >h0
{ op all_reduce 0; echo; } >h1
hostile fewer "rank 0's collective #2 is allreduce (seq 1), rank 1, a member, has no collective #2"
{ op send 0 '"src_rank": 0, "dst_rank": 1'; echo; op all_reduce 0; echo; } >h0
{ op all_reduce 0; echo; } >h1
hostile unmatched 'group 0 (0): rank 0 sends 1 message to rank 1, which receives 0 from it'
printf '{"comms": "send", "pg_id": 0, "global_ranks": [0, 1], "src_rank": 0, "dst_rank": 1, "in_msg_size": 512, "out_msg_size": 512, "dtype": "Float"}\n' >h0
{ op recv 0 '"src_rank": 0, "dst_rank": 1'; echo; } >h1
hostile sizes "rank 0's send to rank 1 (seq 0) is 2048 B, larger than its recv there (seq 0), 1024 B"
{ op all_reduce 0; echo; op all_reduce 1; echo; } >h0
{ op all_reduce 1; echo; op all_reduce 0; echo; } >h1
hostile cycle 'would deadlock (2 ranks blocked.*rank 0 at seq 0 (allreduce on group 0) waits for rank 1; rank 1 at seq 0 (allreduce on group 1) waits for rank 0'
# the same cycle in NCCL order: two groups of every rank share the job's context, one queue
ORDER=nccl
hostile cycle-nccl 'would deadlock (2 ranks blocked; NCCL order.*rank 0 at seq 0 (allreduce on group 0) waits for rank 1; rank 1 at seq 0 (allreduce on group 1) waits for rank 0'
ORDER=

# ---- the variable ops and reduce-scatters: matched per name, as the replay matches them
# an all-to-all-v (its splits agreeing) crossed with an allreduce on another group: the cycle
split='"in_split": [128, 128], "out_split": [128, 128]'
{ op all_to_allv 0 "$split"; echo; op all_reduce 1; echo; } >h0
{ op all_reduce 1; echo; op all_to_allv 0 "$split"; echo; } >h1
hostile vcycle 'would deadlock (2 ranks blocked.*rank 0 at seq 0 (alltoallv on group 0) waits for rank 1; rank 1 at seq 0 (allreduce on group 1) waits for rank 0'
# a reduce-scatter one member lacks (the other would replay it and wait for ever)
{ op reduce_scatter 0; echo; op all_reduce 0; echo; } >h0
{ op all_reduce 0; echo; } >h1
hostile rs-missing "group 0 (0): rank 0's reducescatter (seq 0) has no match on rank 1, a member"
# reduce-scatters of unequal blocks crossed on two groups of every rank, in NCCL order
rs() { # PG BLOCK: a reduce-scatter of 256 elements in all, BLOCK of them this rank's
    printf '{"comms": "reduce_scatter", "pg_id": %s, "global_ranks": [0, 1], "in_msg_size": 256, "out_msg_size": %s, "dtype": "Float"}' "$1" "$2"
}
{ rs 0 96; echo; op all_reduce 1; echo; } >h0
{ op all_reduce 1; echo; rs 0 160; echo; } >h1
ORDER=nccl
hostile rs-cycle-nccl 'would deadlock (2 ranks blocked; NCCL order.*rank 0 at seq 0 (reducescatter on group 0) waits for rank 1; rank 1 at seq 0 (allreduce on group 1) waits for rank 0'
ORDER=
# a gather-v whose members name different roots
{ op gatherv 0 '"root": 0'; echo; } >h0
{ op gatherv 0 '"root": 1'; echo; } >h1
hostile gatherv-roots "group 0 (0): rank 0's gatherv (seq 0) has root 0, rank 1's (seq 0) root 1"

# ---- --shrink: the check sees the folded trace.  Four ranks, groups [0, 1], [2, 3] and [1]:
# rank 0 an allreduce on [0, 1]; rank 1 one on [1], then on [0, 1]; ranks 2 and 3 one on
# [2, 3].  On 4 ranks it replays; folded onto 2 (rank r on r mod 2, each rank's ops by seq
# then trace rank), run rank 0 has [0, 1]'s then [2, 3]'s, run rank 1 [1]'s, [2, 3]'s, then
# [0, 1]'s: crossed, a cycle, refused.
g4() { # RANKS PG COMMS
    printf '{"comms": "all_reduce", "pg_id": %s, "global_ranks": [%s], "in_msg_size": 256, "out_msg_size": 256, "dtype": "Float"}' "$2" "$1"
}
{ echo '['; g4 '0, 1' 0; echo ']'; } >s-rank0.json
{ echo '['; g4 1 2; echo ,; g4 '0, 1' 0; echo ']'; } >s-rank1.json
{ echo '['; g4 '2, 3' 1; echo ']'; } >s-rank2.json
{ echo '['; g4 '2, 3' 1; echo ']'; } >s-rank3.json
imp param s.h5 s-rank0.json s-rank1.json s-rank2.json s-rank3.json && {
    replays shrink-unfolded 4 s.h5
    EXTRA=--shrink
    refused shrink-fold 2 s.h5 'would deadlock (2 ranks blocked.*rank 0 at seq 0 (allreduce on group [0-9]) waits for rank 1; rank 1 at seq 1 (allreduce on group [0-9]) waits for rank 0'
    EXTRA=
}
done_testing
