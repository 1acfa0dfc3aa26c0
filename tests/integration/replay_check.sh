#!/bin/sh
# collprof --replay and --check (docs/replay.md, "Checking a replay"): a 2-rank collprof-trace
# trace (two allreduces, a broadcast, a send/recv pair; each op's recorded duration) replayed 4
# times on self.  COLLPROF_FAULT=wrongiter:I:1 (one element of rank 1's outputs of replay I off)
# is caught where the policy checks replay I: every; last (the default) replay 4 alone;
# sample:K replays K, 2K, ... and the last; --check 0 never (no fill, no check: the whole-trace
# line says the results were not checked).  COLLPROF_FAULT=wrong:1 (rank 1's sends) is caught
# under last and not under --check 0.  The console header and the summary give the replay's
# policy, not the matrix's; the totals count the replayed ops and their wrong elements as
# /replay has them.  Each op row's recorded_us is its recorded duration, its ratio
# time_p50_us / recorded_us, and a type row's recorded_us the median of its ops'.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
replay_prelude

hdr='{"collprof_trace": 1, "rank": R, "size": 2, "host": "a", "pid": 1R, "clock": "CLOCK_MONOTONIC", "reference": "MPI_Init", "thread_level": 0, "buffer": 65536, "library": "test"}'
for r in 0 1; do
    p=$((1 - r))
    {
        echo "$hdr" | sed "s/R/$r/g"
        echo '{"comm": 0, "key": "0e8a69ddf947c4f1-0", "size": 2, "members": [0, 1], "from": "MPI_COMM_WORLD"}'
        echo "{\"op\": \"allreduce\", \"mpi\": \"MPI_Allreduce\", \"comm\": 0, \"dtype\": \"float32\", \"in\": 4096, \"out\": 4096, \"bytes\": 16384, \"esize\": 4, \"t\": 1000, \"dur\": $((2000000 + r * 1000000))}"
        echo "{\"op\": \"broadcast\", \"mpi\": \"MPI_Bcast\", \"comm\": 0, \"dtype\": \"int32\", \"in\": 100, \"out\": 100, \"bytes\": 400, \"esize\": 4, \"t\": 4000000, \"dur\": $((500000 + r * 250000)), \"root\": 1}"
        echo "{\"op\": \"send\", \"mpi\": \"MPI_Sendrecv\", \"comm\": 0, \"dtype\": \"int64\", \"in\": 8, \"out\": 0, \"bytes\": 64, \"esize\": 8, \"t\": 5000000, \"dur\": 40000, \"peer\": $p, \"co\": 0}"
        echo "{\"op\": \"recv\", \"mpi\": \"MPI_Sendrecv\", \"comm\": 0, \"dtype\": \"int64\", \"in\": 0, \"out\": 8, \"bytes\": 64, \"esize\": 8, \"t\": 5000000, \"dur\": 40000, \"peer\": $p, \"co\": 0}"
        echo "{\"op\": \"allreduce\", \"mpi\": \"MPI_Allreduce\", \"comm\": 0, \"dtype\": \"float32\", \"in\": 4096, \"out\": 4096, \"bytes\": 16384, \"esize\": 4, \"t\": 6000000, \"dur\": $((4000000 - r * 1000000))}"
        echo '{"end": true, "ops": 5, "comms": 1, "open_requests": 0, "finalized": true}'
    } >"k.$r.jsonl"
done
"$REPORT" import --trace collprof-trace k.0.jsonl k.1.jsonl -o k.h5 >k.out 2>&1
ok $? "the fixture imports ($(head -c 200 k.out))"

# replay k.h5 on self 4 times with options $2...: run $1's /replay op rows in ops.$1
replay() {
    t=$1
    shift
    rm -rf "r.$t"
    mkdir -p "r.$t"
    cp_run --np 2 --backends self --replay k.h5 --replay-iters 4 --output-dir "r.$t" "$@"
    cp out "out.$t"
    rows "$(ls "r.$t"/collprof_*.h5 2>/dev/null | head -n 1)" replay >"all.$t"
    awk -F'|' '$1 == "op"' "all.$t" >"ops.$t"
}
# wrong op rows of rank 1's collectives and rank 0's recv (rank 1's outputs: its allreduces'
# and broadcast's; rank 0 receives what rank 1 sent)
wrong_rows() {
    awk -F'|' '$16 == "wrong" && $15 > 0' "ops.$1" | wc -l
}

# policy, fault, want exit status
for c in "every wrongiter:2:1 1" "every none 0" "last wrongiter:4:1 1" "last wrongiter:3:1 0" \
    "sample:2 wrongiter:2:1 1" "sample:3 wrongiter:2:1 0" "sample:3 wrongiter:3:1 1" \
    "sample:3 wrongiter:4:1 1" "0 wrongiter:4:1 0" "last wrong:1 1" "0 wrong:1 0"; do
    set -- $c
    t="$1.$2"
    if [ "$2" = none ]; then
        unset COLLPROF_FAULT
    else
        COLLPROF_FAULT=$2
        export COLLPROF_FAULT
    fi
    if [ "$1" = last ]; then
        replay "$t" # the default
    else
        replay "$t" --check "$1"
    fi
    unset COLLPROF_FAULT
    w=$(wrong_rows "$t")
    if [ "$3" -eq 1 ]; then
        [ "$rc" -eq 1 ] && [ "$w" -gt 0 ]
    else
        [ "$rc" -eq 0 ] && [ "$w" -eq 0 ] && [ "$(awk -F'|' '$16 == "ok"' "ops.$t" | wc -l)" -eq 10 ]
    fi
    ok $? "--check $1, COLLPROF_FAULT=$2: exit $rc (want $3), $w wrong op rows"
done

# the header: the replay's policy, not the matrix's
f=$(summary_of r.last.wrong:1)
grep -q '^# replay: 4 replays (--replay-iters), --gaps none, --check last, --replay-order program$' out.last.wrong:1 &&
    ! grep -q -e '--sync' -e '--rotate-buffers' out.last.wrong:1 &&
    grep -q '^  measured: .*; check last$' "$f" && ! grep -q '^  measured: .*sync' "$f" &&
    grep -q '^check:      --check last: the ops of the last replay' "$f"
ok $? "the console header and the summary say the replay's policy (--check last), not --sync"
f=$(summary_of r.0.wrongiter:4:1)
grep -q '^# replay: 4 replays (--replay-iters), --gaps none, --check none, --replay-order program$' out.0.wrongiter:4:1 &&
    grep -q '^whole trace: 10 ops, .*, results not checked (--check 0)$' out.0.wrongiter:4:1 &&
    ! grep -q 'wrong elements' out.0.wrongiter:4:1 &&
    grep -q '^check:      disabled (--check 0)' "$f" && grep -q '^  measured: .*; check none$' "$f"
ok $? "--check 0: said in the header, the summary and the whole-trace line (not 0 wrong elements: ok)"

# the totals: the ops of /replay, their statuses and wrong elements
for t in every.wrongiter:2:1 last.wrong:1 every.none; do
    f=$(summary_of "r.$t")
    set -- $(awk -F'|' '{ n[$16]++; w += $15 } END { printf "%d %d %d %d %d %d", n["ok"], n["wrong"], n["error"], n["unsupported"], n["skipped"], w }' "ops.$t")
    want="ops:        $1 ok, $2 wrong, $3 error, $4 unsupported, $5 skipped"
    con="# ops: $1 ok"
    [ "$2" -gt 0 ] && con="$con, $2 wrong"
    [ "$rc" -ge 0 ] && grep -qx "$want" "$f" && grep -qx "#wrong:     $6" "$f" &&
        grep -q "^$con; #wrong $6: " "out.$t"
    ok $? "$t: the totals count the replayed ops ($want; #wrong $6): $(grep '^# ops' "out.$t")"
done
[ "$(wrong_rows every.wrongiter:2:1)" -gt 0 ] && grep -q '^#wrong:     [1-9]' "$(summary_of r.every.wrongiter:2:1)"
ok $? "a failed replay's totals are not zero"

# recorded durations: each op row's recorded_us and ratio; the type rows' median
bad=$(awk -F'|' '
    { want = -1 }
    $5 == "allreduce" && $4 == 0 { want = $3 == 0 ? 2000 : 3000 }
    $5 == "allreduce" && $4 == 4 { want = $3 == 0 ? 4000 : 3000 }
    $5 == "broadcast" { want = $3 == 0 ? 500 : 750 }
    $5 == "send" || $5 == "recv" { want = 40 }
    want < 0 || $13 + 0 != want || $12 <= 0 ||
        ($14 - $12 / $13 > 1e-4 * $14 || $12 / $13 - $14 > 1e-4 * $14) { print }' ops.every.none)
[ -z "$bad" ] && [ "$(wc -l <ops.every.none)" -eq 10 ]
ok $? "each op row's recorded_us is its recorded duration, ratio time_p50_us / recorded_us${bad:+ ($bad)}"
bad=$(awk -F'|' '$1 == "type" && (($5 == "allreduce" && $13 + 0 != 3000) ||
    ($5 == "broadcast" && $13 + 0 != 625) ||
    ($14 - $12 / $13 > 1e-4 * $14 || $12 / $13 - $14 > 1e-4 * $14)) { print }' all.every.none)
[ -z "$bad" ] && [ "$(awk -F'|' '$1 == "type"' all.every.none | wc -l)" -eq 4 ]
ok $? "a type row's recorded_us is the median of its ops', its ratio time / recorded${bad:+ ($bad)}"

done_testing
