#!/bin/sh
# collprof-report import --trace: the fixtures of tests/data/trace (PARAM basic
# JSON, NCCL Inspector JSON lines in the v4.0 and v4.3 forms, Flight Recorder
# JSON 2.x, PyTorch execution traces, Chakra's linked JSON and .et protobuf
# with its comm_group.json (make_et.py writes these three), written from the
# documented formats) become the trace model, op for
# op: the sequence (rank, seq, op, dtype, counts, bytes, group, root, peer,
# req, coalesced) and the groups are exactly the fixtures', the Inspector's
# groups rebuilt by joining the files on the communicator hash.  The hostile
# versions are rows of tests/data/badinput.tsv.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}
[ -x "$REPORT" ] || skip_all "collprof-report was not built (it needs HDF5)"
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"
D=$COLLPROF_SRCDIR/tests/data/trace
cd "$WORK" || exit 1

# ---- PARAM: two ranks, two groups, async ops and their waits, a batch, all_to_allv splits
"$REPORT" import --trace param "$D/param-rank0.json" "$D/param-rank1.json" -o p.h5 >p.out 2>&1
ok $? "PARAM basic trace of two ranks imports"
rows p.h5 trace_ops | cut -d'|' -f1-14 >got
cat >want <<'W'
0|0|allreduce|float32|1024|1024|4096|0|-1|-1|0|-1|-1|0
0|1|wait||0|0|0|0|-1|-1|0|-1|-1|0
0|2|alltoallv|float16|30|50|100|0|-1|-1|-1|-1|0|2
0|3|broadcast|bfloat16|256|256|512|1|1|-1|-1|-1|-1|0
0|4|send|int64|8|8|64|0|-1|1|5|0|-1|0
0|5|recv|int64|8|8|64|0|-1|1|6|0|-1|0
0|6|wait||0|0|0|0|-1|-1|5|-1|-1|0
0|7|wait||0|0|0|0|-1|-1|6|-1|-1|0
0|8|barrier||0|0|0|0|-1|-1|-1|-1|-1|0
1|0|allreduce|float32|1024|1024|4096|0|-1|-1|0|-1|-1|0
1|1|wait||0|0|0|0|-1|-1|0|-1|-1|0
1|2|alltoallv|float16|60|40|120|0|-1|-1|-1|-1|4|2
1|3|broadcast|bfloat16|256|256|512|1|1|-1|-1|-1|-1|0
1|4|recv|int64|8|8|64|0|-1|0|5|1|-1|0
1|5|send|int64|8|8|64|0|-1|0|6|1|-1|0
1|6|wait||0|0|0|0|-1|-1|5|-1|-1|0
1|7|wait||0|0|0|0|-1|-1|6|-1|-1|0
1|8|barrier||0|0|0|0|-1|-1|-1|-1|-1|0
W
diff want got >d.out
ok $? "PARAM: every op in order, sizes, groups, root, peers, req and batch as recorded$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows p.h5 trace_splits | tr '\n' ' ')" = "10 20 10 40 20 40 20 20 " ]
ok $? "PARAM: all_to_allv split sizes in /trace_splits, in then out"
[ "$(rows p.h5 trace_groups | cut -d'|' -f1,4,5,6 | tr '\n' ' ')" = "0|0|2|0 1|1|2|2 " ] &&
    [ "$(rows p.h5 trace_members | tr '\n' ' ')" = "0 1 1 0 " ]
ok $? "PARAM: groups by pg_id with their global_ranks ([0,1] and [1,0])"
rows p.h5 trace_ops | awk -F'|' '$1 == 0 && $3 == "allreduce" { print $15 }' | grep -qx 1000000
ok $? "PARAM: startTime_ns as the issue time"

# ---- NCCL Inspector: two processes, two communicators, one with its ranks the other way round
"$REPORT" import --trace nccl-inspector "$D/gpu-a-pid100.log" "$D/gpu-b-pid200.log" -o i.h5 >i.out 2>&1
ok $? "NCCL Inspector JSON lines of two processes import"
rows i.h5 trace_ops | cut -d'|' -f1-3,7-10,15-17 >got
cat >want <<'W'
0|0|allreduce|1048576|0|-1|-1|1748030377700000000|120000|1
0|1|allgather|65536|1|-1|-1|-1|40000|1
0|2|send|524288|0|-1|1|-1|50000|2
1|0|allreduce|1048576|0|-1|-1|-1|118000|1
1|1|recv|524288|0|-1|0|-1|52000|2
1|2|allgather|65536|1|-1|-1|-1|41000|1
W
diff want got >d.out
ok $? "Inspector: ops per process in order, bytes, groups, peers as global ranks, times$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows i.h5 trace_groups | cut -d'|' -f1,2,4,5 | tr '\n' ';')" = "0|world|0x7f00aa|2;1|pair reversed|0x7f00bb|2;" ] &&
    [ "$(rows i.h5 trace_members | tr '\n' ' ')" = "0 1 1 0 " ]
ok $? "Inspector: groups rebuilt by joining the files on the communicator hash"
grep -q 'drops ops under 8 KiB' i.out && grep -q '5 of 6 ops without one' i.out &&
    grep -q '3 records overwritten' i.out && "$CP_H5DUMP" -a /timing i.h5 | grep -q '8 KiB'
ok $? "Inspector: the note says what the defaults dropped, printed and in the file"

# ---- collprof's NCCL profiler plugin's files (nccl-collprof): the Inspector's layout; under
# NCCL's profiler API v3 the headers have no n_ranks, rebuilt from the ranks the files give
# (the plugin itself: tests/unit/test_nccl_profiler)
sed 's/,"n_ranks":[0-9]*//' "$D/gpu-a-pid100.log" >v3a.jsonl
sed 's/,"n_ranks":[0-9]*//' "$D/gpu-b-pid200.log" >v3b.jsonl
"$REPORT" import --trace nccl-collprof v3a.jsonl v3b.jsonl -o nc.h5 >nc.out 2>&1
ok $? "nccl-collprof: files without n_ranks (profiler API v3) import"
[ "$(rows nc.h5 trace_ops | cut -d'|' -f1-3,7-10 | tr '\n' ';')" = "$(rows i.h5 trace_ops | cut -d'|' -f1-3,7-10 | tr '\n' ';')" ] &&
    [ "$(rows nc.h5 trace_members | tr '\n' ' ')" = "0 1 1 0 " ] && grep -q "collprof's NCCL profiler" nc.out
ok $? "nccl-collprof: the same ops and groups as with n_ranks, sizes rebuilt; its own note"

# ---- Flight Recorder: groups from pg_config, a coalesced pair, a send in group ranks
"$REPORT" import --trace flight-recorder "$D/fr-rank0.json" -o f.h5 >f.out 2>&1
ok $? "Flight Recorder JSON imports"
rows f.h5 trace_ops | cut -d'|' -f1-10,12,15-17 >got
cat >want <<'W'
0|0|allreduce|float32|1024|1024|4096|0|-1|-1|-1|1700000000000000000|250000|1
0|1|allgather|bfloat16|1024|2048|4096|1|-1|-1|-1|1700000000000500000|-1|2
0|2|allreduce|float32|64|64|256|0|-1|-1|0|1700000000001000000|-1|3
0|3|allreduce|float32|32|32|128|0|-1|-1|0|1700000000001000100|-1|3
0|4|send|int64|16|16|128|1|-1|1|-1|1700000000002000000|-1|1
W
diff want got >d.out
ok $? "Flight Recorder: ops in order, shapes as counts, the coalesced pair, the send's peer global, exact ns$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows f.h5 trace_groups | cut -d'|' -f1-5 | tr '\n' ';')" = "0|0|default_pg|0|2;1|1|tp|1|2;" ] &&
    [ "$(rows f.h5 trace_members | tr '\n' ' ')" = "0 1 1 0 " ]
ok $? "Flight Recorder: groups and members from pg_config"
grep -q '4 entries without one' f.out && grep -q '1 entries not completed' f.out
ok $? "Flight Recorder: the note counts the entries without a duration and those not completed"

# ---- PyTorch execution trace: three ranks, two groups (one irregular: only process_group:init
# says its members), an async allreduce and its wait, a rooted op, all_to_allv splits in rows,
# a send and recv in group ranks; rank 0's broadcast ends after its all-to-all-v (two threads)
E="$D/et-rank0.json $D/et-rank1.json $D/et-rank2.json"
# shellcheck disable=SC2086 # the three files
"$REPORT" import --trace pytorch-et $E -o e.h5 >e.out 2>&1
ok $? "PyTorch execution traces of three ranks import"
rows e.h5 trace_ops >got
cat >want <<'W'
0|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|-1|-1|1|allreduce
0|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|-1|-1|1|wait
0|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|-1|-1|2|broadcast
0|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|0|3|-1|-1|3|all_to_allv
0|4|recv|int64|8|8|64|1|-1|2|-1|-1|-1|0|-1|-1|1|recv
0|5|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|-1|-1|4|barrier
1|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|-1|-1|1|allreduce
1|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|-1|-1|1|wait
1|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|-1|-1|2|broadcast
1|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|6|3|-1|-1|3|all_to_allv
1|4|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|-1|-1|4|barrier
2|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|-1|-1|1|allreduce
2|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|-1|-1|1|wait
2|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|-1|-1|2|broadcast
2|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|12|3|-1|-1|3|all_to_allv
2|4|send|int64|8|8|64|1|-1|0|-1|-1|-1|0|-1|-1|1|send
2|5|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|-1|-1|4|barrier
W
diff want got >d.out
ok $? "ET: ops in node-id order, waits matched to their op (req), root and peers global, no times$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows e.h5 trace_splits | tr '\n' ' ')" = "10 20 10 10 10 20 10 10 20 20 10 10 20 10 10 10 20 10 " ]
ok $? "ET: all_to_allv split sizes, c10d's rows of dim 0, as elements in /trace_splits"
[ "$(rows e.h5 trace_groups | tr '\n' ';')" = "0|0|default_pg|0|3|0;1|1|pair|1|2|3;" ] &&
    [ "$(rows e.h5 trace_members | tr '\n' ' ')" = "0 1 2 2 0 " ]
ok $? "ET: groups by pg_name, members from process_group:init ([] is every rank; [2, 0])"
grep -q '1 waits without their op in the trace dropped' e.out && grep -q 'no times' e.out
ok $? "ET: the note says the ET has no times and counts the waits whose op it lacks"

# ---- Chakra's linked host+device JSON: the same ops, with Kineto's times and the kernels
C="$D/chakra-rank0.json $D/chakra-rank1.json $D/chakra-rank2.json"
# shellcheck disable=SC2086 # the three files
"$REPORT" import --trace chakra-json $C -o c.h5 >c.out 2>&1
ok $? "Chakra linked JSON of three ranks imports"
rows c.h5 trace_ops >got
# the ET's ops, with issue times (the host op's ts: us to ns) and durations (its kernels' span)
cat >want.c <<'W'
0|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|1700000000100500|40000|1|allreduce
0|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|1700000000140500|-1|1|wait
0|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|1700000000200500|40000|2|broadcast
0|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|0|3|1700000000250500|22250|3|all_to_allv
0|4|recv|int64|8|8|64|1|-1|2|-1|-1|-1|0|1700000000300500|40000|1|recv
0|5|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|1700000000400500|-1|4|barrier
1|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|1700000001100500|40000|1|allreduce
1|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|1700000001140500|-1|1|wait
1|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|1700000001200500|40000|2|broadcast
1|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|6|3|1700000001250500|22250|3|all_to_allv
1|4|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|1700000001400500|-1|4|barrier
2|0|allreduce|float32|1024|1024|4096|0|-1|-1|10|-1|-1|0|1700000002100500|40000|1|allreduce
2|1|wait||0|0|0|0|-1|-1|10|-1|-1|0|1700000002140500|-1|1|wait
2|2|broadcast|bfloat16|256|256|512|0|1|-1|-1|-1|-1|0|1700000002200500|40000|2|broadcast
2|3|alltoallv|float16|40|40|80|0|-1|-1|-1|-1|12|3|1700000002250500|22250|3|all_to_allv
2|4|send|int64|8|8|64|1|-1|0|-1|-1|-1|0|1700000002300500|40000|1|send
2|5|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|1700000002400500|-1|4|barrier
W
diff want.c got >d.out
ok $? "Chakra JSON: the ET's ops, issue time the host op's ts, duration its NCCL kernels' span$(sed 's/^/ /' d.out | tr '\n' ';')"
[ "$(rows c.h5 trace_groups | tr '\n' ';')" = "0|0|default_pg|0|3|0;1|1|pair|1|2|3;" ] &&
    [ "$(rows c.h5 trace_members | tr '\n' ' ')" = "0 1 2 2 0 " ] &&
    grep -q '3 ops without a kernel' c.out
ok $? "Chakra JSON: the same groups; the note counts the ops without a kernel (the barriers)"

# ---- Chakra .et (protobuf) and its comm_group.json: the converter's COMM_* nodes
if "$REPORT" import --trace chakra-et "$D/chakra.0.et" -o x.h5 2>&1 | grep -q 'without protobuf-c'; then
    for i in 1 2 3; do
        ok 0 "# SKIP collprof-report was built without protobuf-c (libprotobuf-c-dev, protobuf-c-compiler) $i"
    done
else
    "$REPORT" import --trace chakra-et "$D/chakra.0.et" "$D/chakra.1.et" "$D/chakra.2.et" \
        "$D/chakra-comm_group.json" -o k.h5 >k.out 2>&1
    ok $? "Chakra .et files of three ranks, with comm_group.json, import"
    rows k.h5 trace_ops >got
    cat >want <<'W'
0|0|allreduce||0|0|4096|0|-1|-1|-1|-1|-1|0|1700000010000|50000|1000|ncclDevKernel_AllReduce_Sum_f32
0|1|broadcast||0|0|512|0|-1|-1|-1|-1|-1|0|1700000020000|60000|1001|ncclDevKernel_Broadcast_RING_LL
0|2|alltoall||0|0|80|0|-1|-1|-1|-1|-1|0|1700000025000|65000|1002|ncclDevKernel_SendRecv(ncclDevK
0|3|recv||0|0|64|1|-1|2|-1|-1|-1|0|1700000030000|70000|1003|ncclDevKernel_SendRecv(ncclDevK
0|4|barrier||0|0|0|2|-1|-1|-1|-1|-1|0|1700000040000|80000|1004|ncclDevKernel_AllReduce_barrier
1|0|allreduce||0|0|4096|0|-1|-1|-1|-1|-1|0|1700001010000|50000|1000|ncclDevKernel_AllReduce_Sum_f32
1|1|broadcast||0|0|512|0|-1|-1|-1|-1|-1|0|1700001020000|60000|1001|ncclDevKernel_Broadcast_RING_LL
1|2|alltoall||0|0|80|0|-1|-1|-1|-1|-1|0|1700001025000|65000|1002|ncclDevKernel_SendRecv(ncclDevK
1|3|barrier||0|0|0|2|-1|-1|-1|-1|-1|0|1700001040000|80000|1003|ncclDevKernel_AllReduce_barrier
2|0|allreduce||0|0|4096|0|-1|-1|-1|-1|-1|0|1700002010000|50000|1000|ncclDevKernel_AllReduce_Sum_f32
2|1|broadcast||0|0|512|0|-1|-1|-1|-1|-1|0|1700002020000|60000|1001|ncclDevKernel_Broadcast_RING_LL
2|2|alltoall||0|0|80|0|-1|-1|-1|-1|-1|0|1700002025000|65000|1002|ncclDevKernel_SendRecv(ncclDevK
2|3|send||0|0|64|1|-1|0|-1|-1|-1|0|1700002030000|70000|1003|ncclDevKernel_SendRecv(ncclDevK
2|4|barrier||0|0|0|2|-1|-1|-1|-1|-1|0|1700002040000|80000|1004|ncclDevKernel_AllReduce_barrier
W
    diff want got >d.out
    ok $? "Chakra .et: COMM_* nodes in order, comm_type, comm_size as bytes, peers, times$(sed 's/^/ /' d.out | tr '\n' ';')"
    [ "$(rows k.h5 trace_groups | tr '\n' ';')" = "0|0||0|3|0;1|1||1|2|3;2|world|every rank (no pg_name)|(world)|3|5;" ] &&
        [ "$(rows k.h5 trace_members | tr '\n' ' ')" = "0 1 2 2 0 0 1 2 " ]
    ok $? "Chakra .et: groups and members from comm_group.json; no pg_name: every rank"
fi

# every command still reads a trace file (empty /results), and old files are untouched by it
bad=
for c in summary "export --csv" best; do
    # shellcheck disable=SC2086 # the command's words
    "$REPORT" $c p.h5 >/dev/null 2>c.err || bad="$bad $c"
done
"$REPORT" summary "$COLLPROF_SRCDIR/tests/data/collprof-1.10.h5" >/dev/null 2>&1 || bad="$bad old"
[ -z "$bad" ]
ok $? "summary, export and best open a trace file; an older file still reads${bad:+ (failed:$bad)}"

"$REPORT" summary p.h5 >s.out 2>&1 && grep -q '^world:      2 ranks (a trace)$' s.out &&
    grep -q '^trace:      18 operations in 2 process groups' s.out &&
    grep -q '^timing:     PARAM basic trace' s.out
ok $? "summary of a trace file: its ranks, operations, groups and the import's note"

# refused: an output that exists, nothing written on an error
"$REPORT" import --trace param "$D/param-rank0.json" -o p.h5 >/dev/null 2>e.out
[ $? -eq 2 ] && grep -q 'exists' e.out
ok $? "import --trace refuses an output that exists"
printf '[{"comms": "all_reduce"' >bad-rank0.json
"$REPORT" import --trace param bad-rank0.json -o bad.h5 >/dev/null 2>e.out
[ $? -eq 2 ] && [ "$(wc -l <e.out)" -eq 1 ] && [ ! -e bad.h5 ] && ! ls bad.h5.* >/dev/null 2>&1
ok $? "a bad trace: one error line, exit 2, nothing written"
# streaming: 100,000 ops (about 19 MB) import in bounded memory, every op in the file
if [ -x /usr/bin/time ]; then
    awk 'BEGIN { printf "["; for (i = 0; i < 100000; i++) printf "%s{\"comms\": \"all_reduce\", \"seqnum\": %d, \"pg_id\": 0, \"global_ranks\": [0, 1, 2, 3], \"in_msg_size\": %d, \"out_msg_size\": %d, \"dtype\": \"Float\", \"startTime_ns\": %d}\n", i ? "," : "", i, i % 64 + 1, i % 64 + 1, 1000 * i; printf "]\n" }' >big-rank0.json
    /usr/bin/time -f '%M' -o rss.out "$REPORT" import --trace param big-rank0.json -o big.h5 >big.out 2>&1
    rc=$?
    rss=$(tail -n 1 rss.out)
    last=$(rows big.h5 trace_ops | tail -n 1 | cut -d'|' -f2,3,5)
    # the bound is a measurement of memory: not under the sanitizers, whose allocator and
    # shadow change it (np.sh's peak memory likewise)
    [ "$rc" -eq 0 ] && grep -q '100000 operations' big.out && [ "$last" = "99999|allreduce|32" ] &&
        { [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ] || [ "$rss" -lt 49152 ]; }
    ok $? "100,000 ops stream into the file in bounded memory (peak RSS ${rss} kB < 48 MiB; last op $last)"
    # an execution trace holds a rank's ops until its end (their order is the node ids'): memory
    # the op table, bounded; the ids run backwards here, so the order is the ids', not the file's
    awk 'BEGIN { printf "{\"schema\": \"1.1.1-chakra.0.0.4\", \"nodes\": [\n{\"id\": 2, \"name\": \"## process_group:init ##\", \"inputs\": {\"values\": [\"[{\\\"pg_name\\\": \\\"0\\\", \\\"ranks\\\": [], \\\"group_size\\\": 4}]\"]}}"
        for (i = 0; i < 100000; i++) printf ",\n{\"id\": %d, \"name\": \"record_param_comms\", \"inputs\": {\"values\": [[%d, false], [\"0\", \"\"], 0, \"allreduce\"]}, \"attrs\": [{\"name\": \"dtype\", \"value\": \"Float\"}, {\"name\": \"in_msg_nelems\", \"value\": %d}, {\"name\": \"out_msg_nelems\", \"value\": %d}]}", 100010 - i, i, i % 64 + 1, i % 64 + 1
        printf "\n]}\n" }' >bigET-rank0.json
    /usr/bin/time -f '%M' -o rss.out "$REPORT" import --trace pytorch-et bigET-rank0.json -o bigET.h5 >big.out 2>&1
    rc=$?
    rss=$(tail -n 1 rss.out)
    last=$(rows bigET.h5 trace_ops | tail -n 1 | cut -d'|' -f2,3,5,17)
    [ "$rc" -eq 0 ] && grep -q '100000 operations' big.out && [ "$last" = "99999|allreduce|1|0" ] &&
        { [ "${CP_TIMING_UNRELIABLE:-0}" = 1 ] || [ "$rss" -lt 65536 ]; }
    ok $? "an ET of 100,000 ops in backward file order imports in id order (peak RSS ${rss} kB < 64 MiB; last op $last)"
else
    ok 0 "# SKIP /usr/bin/time not installed"
fi
done_testing
