#!/bin/sh
# collprof-trace (issue 40 items 4 and 5): tests/programs/trace_loop (three communicators: the
# world, two halves, pairs; allreduce, broadcast, allgather, alltoall, reduce, an overlapped
# iallreduce, reduce_scatter_block, a reduce_scatter of unequal blocks, isend/irecv/waitall,
# barriers; busy compute gaps) recorded
# under `mpirun -np 4` with the recorder preloaded, on one node (record_nodes.sh: on two
# virtual nodes), imported with `collprof-report import --trace
# collprof-trace` (the groups joined on the recorder's communicator keys), then replayed with
# `collprof --np 4` on mpi, gloo, ofi and self (those built).  Checked: every rank's recorded
# sequence is the program's (op, bytes, group members, root, peer, order), the recorded times
# show the program's gaps, and each backend's replayed sequence is the trace's with every
# collective ok (exact); the whole-trace replay time against the recorded window is printed,
# bounded only loosely (the 10 % goal is a bench figure, docs/replay.md).  Then the recorder's
# refusals: a directory not empty, an MPI program with COLLPROF_TRACE_DIR unset.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_report
[ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ] || skip_all "h5dump not found (hdf5-tools)"
B=$(dirname "$COLLPROF_BIN")
TRACE=$B/collprof-trace
LOOP=$B/tests/programs/trace_loop
cd "$WORK" || exit 1
MPIRUN="$CP_MPIRUN --allow-run-as-root --oversubscribe --bind-to none"
ITERS=3 GAP=300
# the library as collprof-trace preloads it (after the ASan runtime in a sanitizer build)
PRE=$B/.libs/libcollprof-trace.so
asan=$(ldd "$PRE" 2>/dev/null | sed -n 's/^[[:space:]]*libasan[^ ]* => \(\/[^ ]*\) .*/\1/p' | head -n 1)
PRE=${asan:+$asan:}$PRE

# the importer on the fixture (tests/data/trace/collprof-trace.RANK.jsonl, written from the
# format in docs/replay.md; no MPI needed): rank 1's file numbers the communicators its own way
# and has no end line; every field of every op, the joined groups, the splits
"$REPORT" import --trace collprof-trace "$COLLPROF_SRCDIR"/tests/data/trace/collprof-trace.0.jsonl \
    "$COLLPROF_SRCDIR"/tests/data/trace/collprof-trace.1.jsonl -o fx.h5 >fx.out 2>&1
ok $? "the collprof-trace fixture imports"
grep -q '^2 files: 16 operations of 2 ranks in 2 groups (collprof-trace-jsonl)' fx.out &&
    grep -q '1 rank(s) did not reach MPI_Finalize' fx.out
ok $? "16 ops of 2 ranks in 2 groups; the note counts the rank without an end line"
cat >fx.want <<'EOF'
0|0|allreduce|float32|4|4|16|0|-1|-1|-1|-1|-1|0|1000|500|-1|MPI_Allreduce
0|1|broadcast|float64|8|8|64|1|1|-1|-1|-1|-1|0|2000|300|-1|MPI_Bcast
0|2|allreduce|int32|16|16|64|1|-1|-1|0|-1|-1|0|3000|100|-1|MPI_Iallreduce
0|3|wait||0|0|0|1|-1|-1|0|-1|-1|0|3500|200|-1|MPI_Wait
0|4|alltoallv|uint8|30|40|40|0|-1|-1|-1|-1|0|2|4000|700|-1|MPI_Alltoallv
0|5|send|int64|5|0|40|0|-1|1|-1|0|-1|0|5000|400|-1|MPI_Sendrecv
0|6|recv|int64|0|5|40|0|-1|1|-1|0|-1|0|5000|400|-1|MPI_Sendrecv
0|7|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|6000|50|-1|MPI_Barrier
1|0|allreduce|float32|4|4|16|0|-1|-1|-1|-1|-1|0|1010|490|-1|MPI_Allreduce
1|1|broadcast|float64|8|8|64|1|1|-1|-1|-1|-1|0|2010|290|-1|MPI_Bcast
1|2|allreduce|int32|16|16|64|1|-1|-1|0|-1|-1|0|3010|90|-1|MPI_Iallreduce
1|3|wait||0|0|0|1|-1|-1|0|-1|-1|0|3510|190|-1|MPI_Wait
1|4|alltoallv|uint8|35|25|35|0|-1|-1|-1|-1|4|2|4010|690|-1|MPI_Alltoallv
1|5|recv|int64|0|5|40|0|-1|0|-1|1|-1|0|5010|390|-1|MPI_Sendrecv
1|6|send|int64|5|0|40|0|-1|0|-1|1|-1|0|5010|390|-1|MPI_Sendrecv
1|7|barrier||0|0|0|0|-1|-1|-1|-1|-1|0|6010|40|-1|MPI_Barrier
EOF
rows fx.h5 trace_ops | awk 'NF' | diff fx.want - >fx.diff
ok $? "every op's fields are the fixture's (groups joined on the keys)$(head -n 3 fx.diff | tr '\n' ';')"
[ "$(rows fx.h5 trace_groups | awk -F'|' 'NF > 1 { print $1 "|" $3 "|" $4 "|" $5 }' | tr '\n' ' ')" = \
    "0|MPI_COMM_WORLD|0e8a69ddf947c4f1-0|2 1|MPI_Comm_split|5d1ce0a2b4b11e07-0|2 " ] &&
    [ "$(rows fx.h5 trace_members | awk 'NF' | tr '\n' ' ')" = "0 1 1 0 " ] &&
    [ "$(rows fx.h5 trace_splits | awk 'NF' | tr '\n' ' ')" = "10 20 10 30 30 5 20 5 " ]
ok $? "the groups (desc, key, size), their members in group-rank order, the all-to-all-v splits"

if [ -z "${CP_MPIRUN:-}" ] || [ ! -x "$CP_MPIRUN" ] || [ ! -x "$TRACE" ] || [ ! -x "$LOOP" ] ||
    [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    ok 0 "# SKIP recording: mpirun, collprof-trace or tests/programs/trace_loop not built"
    done_testing
fi

rc=0
# shellcheck disable=SC2086 # MPIRUN: a list of options
timeout -k 10 "$CP_TIMEOUT" "$TRACE" -o rec --import rec.h5 -- $MPIRUN -np 4 "$LOOP" -i $ITERS \
    -g $GAP </dev/null >rec.out 2>rec.err || rc=$?
[ "$rc" -eq 0 ] || sed 's/^/# /' rec.err | tail -n 10
ok $rc "trace_loop recorded under mpirun -np 4 and imported (exit $rc)"
sed -n 's/^trace_loop /# the program, traced, says: /p' rec.out
n=$(ls rec | grep -c '^collprof-trace\.[0-3]\.jsonl$')
fin=$(grep -l '^{"end": true, "ops": 44, .*"finalized": true}$' rec/*.jsonl 2>/dev/null | wc -l)
[ "$n" -eq 4 ] && [ "$fin" -eq 4 ]
ok $? "one file per rank ($n), each ending with its end line: 44 ops, finalized ($fin)"
grep -q '^4 files: 176 operations of 4 ranks in 5 groups (collprof-trace-jsonl)' rec.out
ok $? "import: 176 ops of 4 ranks, 5 groups (world; halves and pairs: same members, two keys each)"

# the groups' members: group|m0,m1,...
rows rec.h5 trace_members | awk -F'|' 'NF { print $1 }' >members
rows rec.h5 trace_groups | awk -F'|' 'NF > 1 { print $1 "|" $5 "|" $6 }' |
    while IFS='|' read -r g size off; do
        printf '%s|%s\n' "$g" "$(sed -n "$((off + 1)),$((off + size))p" members | paste -sd, -)"
    done >groups
rows rec.h5 trace_ops >ops
# rank|seq|op|bytes|members|root|peer, the recorded rows
awk -F'|' 'NR == FNR { m[$1] = $2; next } NF > 1 { print $1 "|" $2 "|" $3 "|" $7 "|" m[$8] "|" $9 "|" $10 }' \
    groups ops >got
# what the program issues, per rank (tests/programs/trace_loop.c, iteration())
for r in 0 1 2 3; do
    h0=$((r / 2 * 2))
    half="$h0,$((h0 + 1))" partner=$((r ^ 1)) s=0
    {
        echo "barrier|0|0,1,2,3|-1|-1"
        i=0
        while [ $i -lt $ITERS ]; do
            echo "allreduce|4096|0,1,2,3|-1|-1"
            echo "broadcast|4096|$half|$((h0 + 1))|-1"
            echo "allgather|2048|$half|-1|-1"
            echo "alltoall|2048|0,1,2,3|-1|-1"
            echo "reduce|4096|$half|$h0|-1"
            echo "allreduce|8192|$half|-1|-1"
            echo "wait|0|$half|-1|-1"
            echo "reducescatter|2048|0,1,2,3|-1|-1"
            echo "reducescatter|320|0,1,2,3|-1|-1"
            echo "recv|400|0,1,2,3|-1|$partner"
            echo "send|400|0,1,2,3|-1|$partner"
            echo "wait|0|0,1,2,3|-1|-1"
            echo "wait|0|0,1,2,3|-1|-1"
            echo "barrier|0|0,1,2,3|-1|-1"
            i=$((i + 1))
        done
        echo "allreduce|4|0,1,2,3|-1|-1"
    } | while IFS= read -r l; do
        echo "$r|$s|$l"
        s=$((s + 1))
    done
done >want
diff want got >d.out
ok $? "the recorded sequence is the program's: op, bytes, group members, root, peer, order$(head -n 4 d.out | tr '\n' ';')"
# the halves and the pairs have the same members (4 ranks) but are told apart
awk -F'|' '$1 ~ /^[0-3]$/ && $3 == "broadcast" { b[$8]++ } $1 ~ /^[0-3]$/ && $3 == "allgather" { a[$8]++ }
           END { for (g in b) if (g in a) bad++; exit bad }' ops
ok $? "the halves' ops and the pairs' ops are in different groups (keys of member hash and order)"

# the times: per rank issue times rise, durations are set, the program's gap after the world
# allreduce is there (busy GAP us), the ranks leave each iteration's last barrier together
awk -F'|' -v gap=$GAP 'NF > 1 { if ($15 < 0 || $16 < 0) bad++
        if ($1 == r && $15 < t) bad++
        if (prev == "allreduce|4096" && $3 == "broadcast" && $15 - end < gap * 1000) short++
        r = $1; t = $15; end = $15 + $16; prev = $3 "|" $7 }
     END { exit bad + short }' ops
ok $? "issue times rise per rank, every op has a duration, each ${GAP} us gap is in the trace"
awk -F'|' 'NF > 1 && $3 == "barrier" { n[$1]++; e = $15 + $16
                if (!(n[$1] in lo) || e < lo[n[$1]]) lo[n[$1]] = e
                if (!(n[$1] in hi) || e > hi[n[$1]]) hi[n[$1]] = e }
     END { for (i in lo) if (hi[i] - lo[i] > w) w = hi[i] - lo[i]
           printf "%.0f\n", w / 1000 }' ops >skew
[ "$(cat skew)" -lt 50000 ]
ok $? "the ranks' clocks share the reference: barriers end within $(cat skew) us of each other"

# many requests alive at once (3000 a rank, half of them any-source receives), completed in a
# shuffled order by every completion call; Open MPI gives the sends it finishes at once one
# shared handle: every request issued is waited exactly once, every any-source receive has its
# peer (patched from the status while the record is in the buffer); again with a buffer of 500
# records, written out 20 times during the run (the waits still pair up)
for buf in 65536 500; do
    rc=0
    # shellcheck disable=SC2086 # MPIRUN: a list of options
    timeout -k 10 "$CP_TIMEOUT" "$TRACE" -o "req$buf" --buffer $buf --import "req$buf.h5" -- \
        $MPIRUN -np 4 "$LOOP" -i 1 -g 10 -r 3000 </dev/null >r.out 2>r.err || rc=$?
    res=$(cat "req$buf"/collprof-trace.*.jsonl | awk -F'"req": ' '
        /"collprof_trace"/ { for (k in i) if (w[k] != 1) bad++; for (k in w) if (!(k in i)) bad++
                             n += length(i); delete i; delete w; next }
        /"op": "wait"/ { split($2, a, /[,}]/); w[a[1]]++; next }
        /"req": / { split($2, a, /[,}]/); i[a[1]]++; if ($0 ~ /"op": "recv"/ && $0 !~ /"peer": /) nopeer++ }
        END { for (k in i) if (w[k] != 1) bad++; for (k in w) if (!(k in i)) bad++
              printf "%d %d %d\n", n + length(i), bad, nopeer }')
    set -- $res
    [ "$rc" -eq 0 ] && [ "$1" -eq $((4 * 3003)) ] && [ "$2" -eq 0 ] &&
        { [ "$buf" = 500 ] || [ "$3" -eq 0 ]; } && grep -q ' 0 request(s) never completed' r.out
    ok $? "buffer $buf: $1 requests of 4 ranks each waited once ($2 not), any-source peers missing: $3 (exit $rc)"
done

# replay on each backend: the sequence is the trace's, every collective exact
cut -d'|' -f1,2,3,7,8 ops | awk 'NF' >want_ops
# what a back-to-back replay compares with: each rank's recorded collectives' durations summed
busy=$(awk -F'|' 'NF > 1 && $3 !~ /^(send|recv|wait)$/ { s[$1] += $16 }
                 END { for (r in s) if (s[r] > m) m = s[r]; printf "%.1f", m / 1000 }' ops)
for b in mpi gloo ofi self; do
    if [ ! -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_$b.so" ]; then
        ok 0 "# SKIP the $b backend was not built"
        continue
    fi
    opt=
    [ "$b" = ofi ] && opt="--ofi-provider shm"
    mkdir -p "r.$b"
    # shellcheck disable=SC2086 # opt: options
    cp_run --np 4 --backends "$b" $opt --replay rec.h5 --replay-iters 3 --output-dir "r.$b"
    h5=$(ls "r.$b"/collprof_*.h5 2>/dev/null | head -n 1)
    [ -n "$h5" ] && rows "$h5" replay >"all.$b"
    awk -F'|' '$1 == "op" { print $3 "|" $4 "|" $5 "|" $7 "|" $8 }' "all.$b" 2>/dev/null >"got.$b"
    [ "$rc" -eq 0 ] && diff -q want_ops "got.$b" >/dev/null
    ok $? "$b: --np 4 --replay: the replayed sequence is the recorded one (exit $rc$(head -c 200 "$WORK/err" | tr '\n' ' '))"
    # send, recv, wait: replayed (ok) on backends with the plugin ABI's post/wait (every one
    # here: self, gloo, mpi, ofi); unsupported (send, recv) or skipped (their waits) elsewhere
    bad=$(awk -F'|' '$1 == "op" && (($5 ~ /^(send|recv|wait)$/ && $16 != "skipped" && $16 != "ok" &&
                      $16 != "unsupported") || ($5 !~ /^(send|recv|wait)$/ && $16 != "ok") ||
                      $15 != 0)' "all.$b" | wc -l)
    p2p=$(awk -F'|' '$1 == "op" && $5 ~ /^(send|recv|wait)$/ && $16 == "ok"' "all.$b" | wc -l)
    case $b in mpi | gloo | self | ofi) [ "$bad" -eq 0 ] && [ "$p2p" -gt 0 ] ;; *) [ "$bad" -eq 0 ] ;; esac
    ok $? "$b: every collective replayed and exact ($bad not); send, recv, wait ok ($p2p) or, without point-to-point, unsupported or skipped"
    awk -F'|' '$1 == "trace" { printf "# %s: whole trace: replay %.1f us, recorded window %.1f us, ratio %.3f; the recorded collectives own time (slowest rank): %.1f us\n", b, $12, $13, $14, busy }' \
        b="$b" busy="$busy" "all.$b"
    # the recorded window holds the program's compute (4.5 gaps an iteration); the replay
    # took some time and not a minute
    awk -F'|' -v min=$((ITERS * GAP * 9 / 2)) '$1 == "trace" { n++; if ($12 <= 0 || $12 > 6e7 || $13 < min) bad++ }
         END { exit !(n == 1 && !bad) }' "all.$b"
    ok $? "$b: whole-trace replay time and recorded window are sane"
done

# the loop closed in time: the recording replayed on mpi with its gaps (--gaps trace), each
# rank's span against its recorded window (the issue's goal, within 10 %, is a figure for a
# quiet machine: printed here; checked only that the replay neither collapses below half its
# window nor stretches tenfold).  The window is mostly the collectives' own time, recorded at
# another moment's load (44 of 49 ms in one run), so a recording slower than its replay reads
# under 1x: 0.867x on two ranks in a clean-clone run, where 0.9x was the bound)
if [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    mkdir -p r.gaps
    cp_run --np 4 --backends mpi --replay rec.h5 --replay-iters 3 --gaps trace --output-dir r.gaps
    h5=$(ls r.gaps/collprof_*.h5 2>/dev/null | head -n 1)
    [ -n "$h5" ] && rows "$h5" replay | awk -F'|' '$1 == "rank"' >rk.gaps
    awk -F'|' '{ printf "# mpi --gaps trace: rank %s: span %.1f us, recorded window %.1f us, ratio %.3f, p99 issue error %.1f us, %s late\n", $3, $12, $13, $14, $(NF - 3), $(NF - 1) }' rk.gaps
    n=$(awk -F'|' '$14 >= 0.5 && $14 < 10' rk.gaps | wc -l)
    [ "$rc" -eq 0 ] && [ "$n" -eq 4 ]
    ok $? "mpi --gaps trace: each rank's replay spans 0.5x to 10x its recorded window ($n of 4, exit $rc)"
fi

# the command with the MPI program itself (a singleton: the variables in its environment)
rc=0
timeout -k 10 "$CP_TIMEOUT" "$TRACE" -o single -- "$B/bench/trace_bench" -n 10 -w 0 </dev/null \
    >s.out 2>s.err || rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c '"op": "allreduce"' single/collprof-trace.0.jsonl)" -eq 10 ] &&
    grep -q '"size": 1,' single/collprof-trace.0.jsonl
ok $? "collprof-trace -- PROGRAM (one rank, no launcher): its 10 allreduces recorded (exit $rc)"

# refusals: a directory that is not empty; without COLLPROF_TRACE_DIR the library records nothing
rc=0
"$TRACE" -o rec -- /bin/true >x.out 2>x.err || rc=$?
[ "$rc" -eq 2 ] && grep -q 'rec is not empty' x.err
ok $? "collprof-trace refuses a directory that is not empty (exit $rc)"
mkdir -p plain
rc=0
(cd plain && timeout -k 10 "$CP_TIMEOUT" $MPIRUN -np 4 -x LD_PRELOAD="$PRE" \
    "$LOOP" -i 1 -g 10 </dev/null >../p.out 2>../p.err) || rc=$?
[ "$rc" -eq 0 ] && [ -z "$(ls -A plain)" ] && grep -q '^trace_loop ranks 4' p.out
ok $? "preloaded without COLLPROF_TRACE_DIR: the program runs, nothing is written (exit $rc)"
# a rank whose file exists already records nothing and says so; the program still runs
mkdir -p again
echo x >again/collprof-trace.1.jsonl
rc=0
timeout -k 10 "$CP_TIMEOUT" $MPIRUN -np 4 -x COLLPROF_TRACE_DIR="$WORK/again" \
    -x LD_PRELOAD="$PRE" "$LOOP" -i 1 -g 10 </dev/null >a.out 2>a.err || rc=$?
[ "$rc" -eq 0 ] && grep -q 'collprof-trace: rank 1: .*collprof-trace.1.jsonl: File exists: not recording' a.err &&
    [ "$(cat again/collprof-trace.1.jsonl)" = x ] && [ -s again/collprof-trace.0.jsonl ]
ok $? "an existing file is never overwritten: that rank says so and records nothing (exit $rc)"
"$REPORT" import --trace collprof-trace again/collprof-trace.0.jsonl -o one.h5 >i.out 2>i.err
[ $? -eq 2 ] && grep -q 'no file of rank 1 of the job.s 4' i.err
ok $? "import refuses a job with a rank's file missing: $(head -c 150 i.err)"
done_testing
