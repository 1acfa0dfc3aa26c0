#!/bin/sh
# Failures are caught and reported: a corrupted result fails the run; a
# backend that fails to load or initialise is reported and skipped while
# the others run; a dead rank does not hang the job; a hung rank is named
# by the watchdog; SIGTERM and a full disk keep every completed cell.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
need_mpirun
COLLPROF_REPORT=${COLLPROF_REPORT:-$(dirname "$COLLPROF_BIN")/collprof-report}

# a corrupted element on rank 1 must be counted and fail the run
d="$WORK/corrupt"
mkdir -p "$d"
COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends mpi --ops allreduce,alltoall --counts 4K -n 2 -w 0 \
    --variants default --output-dir "$d"
s=$(summary_of "$d")
[ "$rc" -eq 1 ]
ok $? "corrupted result: exit status 1 (got $rc)"
grep -q 'AllReduce: .*#wrong: 1 .*WRONG' "$s" && grep -q '^result: *FAILED' "$s" &&
    grep -q '^#wrong: *2$' "$s"
ok $? "corrupted result: summary shows #wrong 1 per cell and FAILED"
awk '$3 == "allreduce" && $12 == 1 { found = 1 } END { exit !found }' "$WORK/out"
ok $? "corrupted result: the table shows #wrong 1"
COLLPROF_FAULT=wrong:1 cp_run --np 2 --backends mpi --ops allreduce --counts 4K -n 2 -w 0 -c 0 \
    --variants default --output-dir "$d"
[ "$rc" -eq 0 ]
ok $? "with -c 0 nothing is checked (exit $rc)"

# the control channel: before rank 2 joins, two connections to its parent (rank 0) that do not
# prove the run's secret, one silent and one with a wrong proof for rank 2's slot; rank 2 still
# joins (the channel is TCP), the results are exact, the start is not held up by the silent one
# (5 s before, per connection), and rank 0 warns once, with the address
d="$WORK/rogue"
mkdir -p "$d"
t0=$(date +%s.%N)
COLLPROF_FAULT=rogue:2 cp_run --np 4 --backends self --ops allreduce,allgather --counts 4K -n 2 \
    -w 0 --output-dir "$d"
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ "$rc" -eq 0 ] && grep -q "control channel tcp" "$WORK/out" && grep -q "#wrong 0: PASSED" "$WORK/out"
ok $? "rogue connections at the control channel: the run is exact over TCP (exit $rc, $took s)"
[ "$(grep -c 'dropped a connection from' "$WORK/err")" -eq 1 ] &&
    grep -q 'control channel: dropped a connection from unix pid [0-9]*: wrong proof$' "$WORK/err"
ok $? "rogue connections at the control channel: one warning, with the peer (a process over AF_UNIX) and the reason"
awk -v t="$took" 'BEGIN { exit !(t < 4.5) }'
ok $? "rogue connections at the control channel: a silent one does not hold up the start ($took s < 4.5 s)"

# a rank without memory for a cell's results fails the cell's set-up with the others (it
# used to leave the gathers they then waited in); the other cells still run
d="$WORK/nomem"
mkdir -p "$d"
for f in 1:0 0:1; do
    COLLPROF_FAULT=nomem:$f cp_run --np 3 --backends self --ops allreduce,allgather,alltoall \
        --counts 1K -n 3 -w 1 --output-dir "$d"
    r=${f%:*} cell=$((${f#*:} + 1))
    [ "$rc" -eq 1 ] && [ "$(grep -c ' error: rank '"$r"': out of memory for the results (3 ranks x 3 iterations)$' "$WORK/out")" -eq 1 ] &&
        awk -v cell="$cell" '$1 == "self" { k++; if (k != cell && $12 == 0) good++ } END { exit good != 2 }' "$WORK/out" &&
        grep -q '^# cells: 2 ok, 1 error; #wrong 0: FAILED$' "$WORK/out"
    ok $? "COLLPROF_FAULT=nomem:$f: cell $cell fails on every rank for rank $r's memory, the others run (exit $rc)"
done

# --check: COLLPROF_FAULT=wrongiter:7:1 corrupts rank 1's output of timed iteration 7 of 20
# alone.  every and sample:7 check that output (cell wrong, exit 1); last checks one extra run
# after the loop and cannot see it (as the docs say).  Each cell records its policy.
for m in every sample:7 last; do
    d="$WORK/check-${m%%:*}"
    mkdir -p "$d"
    COLLPROF_FAULT=wrongiter:7:1 cp_run --np 2 --backends self --ops allreduce --counts 1K \
        -n 20 -w 2 --check "$m" --output-dir "$d"
    s=$(summary_of "$d")
    want=1 status=wrong
    [ "$m" = last ] && want=0 status=ok
    [ "$rc" -eq "$want" ] && grep -q "measured: .*; check $m\$" "$s" &&
        awk -v w="$want" '$1 == "self" && $3 == "allreduce" { n++; bad += ($12 == w) }
            END { exit !(n == 1 && bad == 1) }' "$WORK/out"
    ok $? "wrongiter:7:1, -n 20 --check $m: exit $rc (want $want), #wrong $want, recorded"
    if [ -x "${COLLPROF_REPORT:-}" ]; then
        "$COLLPROF_REPORT" export --csv "${s%.txt}.h5" >"$WORK/csv" 2>&1 &&
            grep -q ",$status,.*,$m\(,\|\$\)" "$WORK/csv"
        ok $? "wrongiter:7:1 --check $m: the HDF5 row says $status and check $m"
    fi
done

# plugins that fail: one exports no entry symbol, one fails init
if [ -e "$CP_TEST_PLUGINS/collprof_failinit.so" ]; then
    d="$WORK/plugins"
    mkdir -p "$d"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --list
    grep -q '^nosym: NOT AVAILABLE: .*does not export collprof_backend_v1' "$WORK/out" &&
        grep -q '^failinit 0: ' "$WORK/out" && grep -q '^mpi ' "$WORK/out"
    ok $? "--list shows the broken plugin's reason and the others"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --ops allreduce \
        --counts 4K -n 2 -w 0 --variants default --output-dir "$d"
    s=$(summary_of "$d")
    [ "$rc" -eq 0 ] && grep -q 'backend nosym skipped' "$WORK/err" &&
        grep -q 'backend failinit skipped: initialisation failed on rank 0' "$WORK/err" &&
        grep -q 'simulated initialisation failure' "$WORK/err" &&
        grep -q 'failinit / default' "$s" && grep -q 'skipped: backend failinit is not initialised' "$s" &&
        grep -q 'mpi / default' "$s" && grep -q '^result: *PASSED' "$s"
    ok $? "failing plugins are reported and skipped, mpi still runs (exit $rc)"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --list
    grep -q '^needlib: NOT AVAILABLE: .*libcpgone-missing.so.0: cannot open shared object file' "$WORK/out"
    ok $? "--list: a plugin whose library is missing shows the dynamic linker's reason"
    COLLPROF_PLUGIN_PATH="$CP_TEST_PLUGINS:$COLLPROF_PLUGIN_PATH" cp_run --np 2 --backends needlib \
        --ops allreduce --counts 4K -n 2 -w 0 --output-dir "$d"
    [ "$rc" -ne 0 ] && [ "$(wc -l <"$WORK/err")" -le 2 ] &&
        grep -q 'libcpgone.*cannot open shared object file' "$WORK/err"
    ok $? "--backends needlib alone: the missing library is named, non-zero exit ($rc)"
    COLLPROF_PLUGIN_PATH="relative/dir:$COLLPROF_PLUGIN_PATH" cp_run --list
    grep -q "ignoring relative plugin directory 'relative/dir'" "$WORK/err"
    ok $? "relative plugin directories are refused"
fi

# plugins others could have written are never loaded, not even for --list
pl="$WORK/plugins"
mkdir -p "$pl"
chmod 755 "$pl"
cp "${COLLPROF_PLUGIN_PATH%%:*}/collprof_self.so" "$pl/"
chmod 777 "$pl"
COLLPROF_PLUGIN_PATH="$pl" cp_run --list
grep -q "^self: NOT AVAILABLE: refusing to load .*: $pl is writable by others (mode 0777)" "$WORK/out"
ok $? "a plugin in a world-writable directory is refused, with the reason"
chmod 755 "$pl"
chmod 666 "$pl/collprof_self.so"
COLLPROF_PLUGIN_PATH="$pl" cp_run --np 2 --backends self --ops barrier --output-dir "$pl"
[ "$rc" -eq 2 ] && [ "$(wc -l <"$WORK/err")" -eq 1 ] &&
    grep -q "collprof_self.so is writable by others (mode 0666)" "$WORK/err"
ok $? "a world-writable plugin is refused before launch: one line, exit 2"
chmod 644 "$pl/collprof_self.so"
if [ "$(id -u)" = 0 ]; then
    chown 65534 "$pl/collprof_self.so"
    COLLPROF_PLUGIN_PATH="$pl" cp_run --list
    grep -q "collprof_self.so is owned by uid 65534, neither root nor you" "$WORK/out"
    ok $? "a plugin owned by another user is refused"
    chown 0 "$pl/collprof_self.so"
fi
COLLPROF_PLUGIN_PATH="$pl" cp_run --list
grep -q "^self [0-9]" "$WORK/out"
ok $? "the same plugin loads once its file and directory are safe"

# a rank that dies mid-run must not leave the others waiting
d="$WORK/dead"
mkdir -p "$d"
COLLPROF_FAULT=exit:1 cp_run --np 3 --ops allreduce --counts 4K -n 200 -w 0 --variants default \
    --output-dir "$d"
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ]
ok $? "a rank that exits mid-run ends the job with an error, no hang (exit $rc)"
sleep 1
! pgrep -f "collprof --np 3 --ops allreduce --counts 4K -n 200" >/dev/null
ok $? "no orphan ranks left"
# BG_ARGS in the background in directory $1 ($pid), until $2 cells are written
BG_ARGS="--np 3 --backends mpi --ops allreduce,allgather --counts 1K,2K,4K,8K,16K,32K -n 3000 -w 2"
BG_ARGS="$BG_ARGS --variants default"
run_bg() {
    # shellcheck disable=SC2086 # BG_ARGS is a list of options
    timeout -k 10 "$CP_TIMEOUT" "$COLLPROF_BIN" $BG_ARGS --output-dir "$1" </dev/null \
        >"$WORK/out" 2>"$WORK/err" &
    pid=$!
    i=0
    while [ $i -lt 300 ]; do
        c=$(grep -c 'ms | AlgBW' "$(summary_of "$1")" 2>/dev/null)
        [ "${c:-0}" -ge "$2" ] && break
        sleep 0.1
        i=$((i + 1))
    done
}

# a rank SIGKILLed after some cells: the job ends, the files hold those cells
d="$WORK/killed"
mkdir -p "$d"
run_bg "$d" 2
victim=
for p in $(pgrep -f "^$COLLPROF_BIN $BG_ARGS"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'PMIX_RANK=1' && victim=$p
done
[ -n "$victim" ] && kill -KILL "$victim"
rc=0
wait $pid || rc=$?
s=$(summary_of "$d")
[ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q 'rank 1 .*killed by signal 9' "$WORK/err"
ok $? "a SIGKILLed rank ends the job, reported (exit $rc)"
if [ -x "${COLLPROF_REPORT:-}" ] && [ -n "$s" ]; then
    n=$(grep -c ' ms | AlgBW' "$s")
    rrc=0
    "$COLLPROF_REPORT" summary "${s%.txt}.h5" >"$WORK/rsum" 2>&1 || rrc=$?
    [ "$rrc" -eq 0 ] && [ "$n" -ge 2 ] && [ "$(grep -c ' ms | AlgBW' "$WORK/rsum")" -eq "$n" ] &&
        grep -q 'status: *incomplete' "$WORK/rsum"
    ok $? "a SIGKILLed rank: the HDF5 file holds the $n completed cells, status incomplete"
fi
sleep 1
! pgrep -f "collprof --np 3 --backends mpi --ops allreduce,allgather" >/dev/null
ok $? "a SIGKILLed rank: no orphan processes"

# ---- the watchdog: rank 1 hangs outside the collective in cell 1 -----------
d="$WORK/hang"
mkdir -p "$d"
t0=$(date +%s)
COLLPROF_FAULT=hang:1:1 cp_run --np 3 --backends mpi --ops allreduce --counts 1K,2K,4K -n 10 -w 2 \
    --variants default --timeout 3 --output-dir "$d"
t1=$(date +%s)
s=$(summary_of "$d")
[ "$rc" -eq 124 ] && [ $((t1 - t0)) -lt 60 ]
ok $? "hang: exit status 124 within a minute (got $rc after $((t1 - t0)) s)"
host=$(hostname)
grep -q "timeout: cell 1 (mpi/default allreduce float32 count 2048) timed out: no progress for" \
    "$WORK/err" &&
    grep -q "Did not arrive: rank 1 ($host) last seen in the barrier before iteration 6" "$WORK/err" &&
    grep -q "Waiting (in the operation, iteration 6): ranks 0,2\." "$WORK/err"
ok $? "hang: the report names the cell, rank 1 and its host, and the waiting ranks"
[ -n "$s" ] && grep -q 'AllReduce: .*#wrong: 0' "$s" && grep -q 'timeout: cell 1 ' "$s" &&
    grep -q '^timeouts: *1$' "$s" && grep -q '^result: *INCOMPLETE: an operation timed out' "$s"
ok $? "hang: the summary keeps cell 0, records cell 1 as timeout and says INCOMPLETE"
if [ -x "${COLLPROF_REPORT:-}" ]; then
    h5=${s%.txt}.h5
    rrc=0
    "$COLLPROF_REPORT" export --csv "$h5" >"$WORK/csv" 2>&1 || rrc=$?
    [ "$rrc" -eq 0 ] && [ "$(grep -c ',ok,' "$WORK/csv")" -eq 1 ] &&
        [ "$(grep -c ',timeout,' "$WORK/csv")" -eq 1 ]
    ok $? "hang: the HDF5 file holds the ok cell and the timeout cell (export exit $rrc)"
    "$COLLPROF_REPORT" summary "$h5" >"$WORK/rsum" 2>&1
    grep -q "status: *incomplete" "$WORK/rsum"
    ok $? "hang: the HDF5 file's status is incomplete"
fi
sleep 1
! pgrep -f "collprof --np 3 --backends mpi --ops allreduce --counts 1K,2K,4K" >/dev/null
ok $? "hang: no orphan processes"

# ---- the watchdog's report prints a hostile host name as text ---------------
# (a UTS namespace gives the job a host name with an escape sequence)
if unshare -u true 2>/dev/null; then
    d="$WORK/hanghost"
    mkdir -p "$d"
    rc=0
    COLLPROF_FAULT=hang:1:0 timeout -k 10 "$CP_TIMEOUT" unshare -u sh -c \
        'printf "h\033[2Jx" >/proc/sys/kernel/hostname && exec "$@"' sh "$COLLPROF_BIN" --np 2 \
        --backends self --ops allreduce --counts 1K -n 10 -w 0 --timeout 2 --output-dir "$d" \
        </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
    [ "$rc" -eq 124 ] && grep -q 'rank 1 (h[^ ]*2Jx)' "$WORK/err" &&
        ! LC_ALL=C grep -q "$(printf '\033')" "$WORK/err" "$d"/collprof_*.txt
    ok $? "hang on a host named h<ESC>[2Jx: the report names it without a raw escape (exit $rc)"
else
    echo "ok $((tap_n += 1)) - hang on a hostile host name # SKIP no UTS namespace (unshare -u)"
fi

# ---- SIGTERM (scancel, a time limit, Ctrl-C) mid-run ------------------------
d="$WORK/term"
mkdir -p "$d"
run_bg "$d" 1
kill -TERM $pid 2>/dev/null
# the launcher is timeout's child: signal it, as scancel would
pkill -TERM -f "^$COLLPROF_BIN $BG_ARGS" 2>/dev/null
rc=0
wait $pid || rc=$?
s=$(summary_of "$d")
[ "$rc" -eq 143 ] || [ "$rc" -eq 124 ]
ok $? "SIGTERM: exit status 128+15 (got $rc)"
n=$(grep -c ' ms | AlgBW' "$s" 2>/dev/null)
[ "${n:-0}" -ge 1 ] && grep -q '^result: *INCOMPLETE: stopped by signal 15' "$s" &&
    grep -q 'stopped by signal 15 (Terminated) after' "$WORK/err"
ok $? "SIGTERM: the summary keeps $n completed cells and says INCOMPLETE"
if [ -x "${COLLPROF_REPORT:-}" ]; then
    rrc=0
    "$COLLPROF_REPORT" summary "${s%.txt}.h5" >"$WORK/rsum" 2>&1 || rrc=$?
    [ "$rrc" -eq 0 ] && grep -q 'status: *incomplete' "$WORK/rsum" &&
        [ "$(grep -c ' ms | AlgBW' "$WORK/rsum")" -eq "$n" ]
    ok $? "SIGTERM: the HDF5 file holds the same $n cells, status incomplete"
    grep -q 'incomplete: stopped by signal 15' "$WORK/rsum"
    ok $? "SIGTERM: the cell that was running is in the HDF5 file as incomplete"
fi
sleep 1
! pgrep -f "collprof --np 3 --backends mpi --ops allreduce,allgather" >/dev/null
ok $? "SIGTERM: no orphan processes"

# ---- a full disk: a 1 MiB tmpfs (needs root and mount; skipped otherwise) ----
full="$WORK/full"
mkdir -p "$full"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=1m collprof-test "$full" 2>/dev/null; then
    cp_run --np 2 --backends mpi --ops allreduce --counts 1K,2K,4K,8K,16K,32K -n 3000 -w 1 \
        --variants default,ring,recursive_doubling --output-dir "$full"
    s=$(summary_of "$full")
    [ "$rc" -eq 1 ] && grep -q 'collprof: error: stopped after [0-9]* of 18 cells: .*full' "$WORK/err" &&
        [ "$(grep -c 'error' "$WORK/err")" -le 3 ]
    ok $? "full disk: exit 1 and one clear message (exit $rc)"
    grep -q '^result: *INCOMPLETE: the results could not be written' "$s"
    ok $? "full disk: the text summary is closed as INCOMPLETE"
    if [ -x "${COLLPROF_REPORT:-}" ]; then
        rrc=0
        "$COLLPROF_REPORT" summary "${s%.txt}.h5" >"$WORK/rsum" 2>&1 || rrc=$?
        n=$(grep -c ' ms | AlgBW' "$WORK/rsum")
        [ "$rrc" -eq 0 ] && [ "$n" -ge 1 ] && grep -q 'status: *incomplete' "$WORK/rsum"
        ok $? "full disk: the HDF5 file is readable with its $n completed cells (exit $rrc)"
        grep -q 'incomplete: not stored: the file system is full' "$WORK/rsum" &&
            [ "$((n + 1))" -eq "$(grep -c ' ms | AlgBW' "$s")" ]
        ok $? "full disk: the cell the run stopped in is in the HDF5 file as incomplete"
    fi
    umount "$full"
else
    echo "# full disk: not root or tmpfs mount refused; skipped"
fi

# ---- security: the user's umask, secrets redacted --------------------------
d="$WORK/secure"
mkdir -p "$d"
(umask 077 && COLLPROF_API_TOKEN=hunter2-secret FI_PASSWORD=hunter2-secret \
    NCCL_VERSION=2.28.3-1 cp_run --np 2 \
    --backends mpi --ops allreduce --counts 1K -n 2 -w 0 --variants default --output-dir "$d" &&
    exit $rc)
s=$(summary_of "$d")
[ -n "$s" ] && [ "$(stat -c %a "$s")" = 600 ] && [ "$(stat -c %a "${s%.txt}.h5")" = 600 ]
ok $? "result files are created with the user's umask (077 gives 600)"
grep -q 'COLLPROF_API_TOKEN=<redacted>' "$s" && ! grep -q -r hunter2 "$d"
ok $? "secrets in captured variables are redacted in the summary and the HDF5 file"
# a container image's NCCL_VERSION is the image's label, not the NCCL that was loaded
grep -q "^env: *NCCL_VERSION=2.28.3-1  (the environment's; what was loaded: the 'backend:' lines)\$" "$s"
ok $? "NCCL_VERSION in the environment: the summary says it is not what was loaded"

# output files follow no link planted under their names (issue 15, D1)
d="$WORK/planted"
mkdir -p "$d"
echo precious >"$WORK/victim"
now=$(date -u +%s)
for t in 0 1 2 3 4 5 6 7 8 9; do
    stamp=$(date -u -d "@$((now + t))" +%Y%m%dT%H%M%SZ)
    ln -s "$WORK/victim" "$d/collprof_${stamp}_w2.txt"
    ln -s "$WORK/victim" "$d/collprof_${stamp}_w2.h5"
done
cp_run --np 2 --backends self --ops barrier -n 1 -w 0 --output-dir "$d"
[ "$rc" -eq 0 ] && [ "$(cat "$WORK/victim")" = precious ] &&
    [ -n "$(find "$d" -name 'collprof_*_w2_2.h5' -type f)" ]
ok $? "names taken by links are skipped; the linked file is untouched (exit $rc)"

# a launcher killed with SIGKILL leaves its private directories; the next run removes them
# when their launcher is provably gone from this node, and keeps those of a live one and those
# of another node (another host tag: on a TMPDIR shared by nodes its pids mean nothing here)
cp_run --np 2 --backends self --ops barrier -n 1 -w 0 -v --output-dir "$d"
tag=$(sed -n 's|.*launcher: private directory .*/collprof\.\([0-9a-f]\{8\}\)\.[0-9]*\..*|\1|p' "$WORK/err" |
    head -n 1)
other=00000000
[ "$tag" = "$other" ] && other=ffffffff
[ -n "$tag" ]
ok $? "-v names the launcher's private directories, tagged with this node ($tag)"
tmp=$(mktemp -d /tmp/cpst.XXXXXX)
sh -c 'exit 0' &
dead=$!
wait "$dead"
mkdir "$tmp/collprof.$tag.$dead.abc123" "$tmp/collprof.$tag.$$.def456" \
    "$tmp/collprof.$other.$dead.ghi789"
touch "$tmp/collprof.$tag.$dead.abc123/pmix.sock"
# the same in /dev/shm: the launcher's private directory (Open MPI's segments), and the
# self backend's segment of a rank 0 killed between creating and unlinking it
shm=
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    shm=/dev/shm
    mkdir "$shm/collprof.$tag.$dead.Xyz789"
    touch "$shm/collprof.$tag.$dead.Xyz789/vader_segment.0" "$shm/collprof-self-$dead-123-0" \
        "$shm/collprof-self-$$-456-0"
fi
TMPDIR=$tmp cp_run --np 2 --backends self --ops barrier -n 1 -w 0 --output-dir "$d"
[ "$rc" -eq 0 ] && [ ! -e "$tmp/collprof.$tag.$dead.abc123" ] &&
    [ "$(ls "$tmp" | tr '\n' ' ')" = "collprof.$other.$dead.ghi789 collprof.$tag.$$.def456 " ]
ok $? "a dead launcher's directory is removed, a live one's and another node's kept, the run's own cleaned ($(ls "$tmp" | tr '\n' ' '))"
if [ -n "$shm" ]; then
    [ ! -e "$shm/collprof.$tag.$dead.Xyz789" ] && [ ! -e "$shm/collprof-self-$dead-123-0" ] &&
        [ -e "$shm/collprof-self-$$-456-0" ]
    ok $? "/dev/shm: a dead launcher's directory and a dead rank's segment are removed, a live one's kept"
    rm -f "$shm/collprof-self-$$-456-0" "$shm/collprof-self-$dead-123-0"
    rm -rf "$shm/collprof.$tag.$dead.Xyz789"
fi
rm -rf "$tmp"

# ---- bad --timeout values ----------------------------------------------------
for v in abc -1 1e9 ""; do
    cp_run --timeout "$v" --dry-run
    [ "$rc" -eq 2 ] && grep -q -- "--timeout" "$WORK/err" && [ "$(wc -l <"$WORK/err")" -eq 1 ]
    ok $? "--timeout '$v': one-line error, exit 2"
done
done_testing
