#!/bin/sh
# The link sweep across virtual nodes: on a 4-node Slurm cluster (contrib/slurm-local, see
# cluster.sh), `collprof --link-sweep` measures the 6 links in 3 rounds exact on every CPU
# backend, with 1 and 2 ranks per node; `collprof-report links` flags nothing when no link is
# shaped and names n3, and only n3, when n3's link is throttled (tc tbf), and plot draws it;
# `collprof-report stragglers` names n3 from the per-rank times of sendrecv, alltoall and
# scatter.  One node: the sweep says there is nothing
# to sweep (exit 2).  Under sanitizers a subset: one backend, the throttled checks only.
#
# Judging needs steady figures, which 2 cores shared with other work do not always give: with
# no link shaped, busy-polling MPI ranks lose their core to each other and MPI's figures vary
# tenfold from run to run, and ofi over tcp;ofi_rxm gave some pairs 0.1-0.2x the others'
# bandwidth in one run of three; gloo stayed within 0.2-1x.  So the clean check judges gloo
# (else the first backend built), at --threshold 0.15, and the throttled checks gloo and ofi,
# where a link throttled to 100 Mbit/s is at 0.01-0.05x; every backend is checked for exact
# results and complete matrices.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
. "${COLLPROF_SRCDIR}/tests/integration/cluster.sh"

need_virtual_nodes
need_report

T0=$(now)
cluster_start 4 collprof-links-test

SRUN="srun --immediate=30 --mpi=pmix"
PER=1 # ranks per node
judged=""
for b in gloo ofi; do
    case " $BACKENDS " in *" $b "*) judged="$judged,$b" ;; esac
done
judged=${judged#,}
[ -n "$judged" ] || judged=mpi
calm=${judged%%,*}
sanitized=${CP_TIMING_UNRELIABLE:-0}
[ "$sanitized" = 1 ] && judged=$calm
THR="--threshold 0.15"

# collprof on 4 nodes x $PER ranks into directory $1 (rest: options); rc, and h5 = its file
run4() {
    d=$1
    shift
    mkdir -p "$d"
    rc=0
    # shellcheck disable=SC2086 # SRUN is a list of options
    timeout -k 10 150 $SRUN -N 4 --ntasks-per-node=$PER "$COLLPROF_BIN" \
        --ofi-provider 'tcp;ofi_rxm' --output-dir "$d" "$@" </dev/null >"$WORK/out" \
        2>"$WORK/err" || rc=$?
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/err" | head -n 20
    # shellcheck disable=SC2012 # our own file names
    h5=$(ls "$d"/collprof_*.h5 2>/dev/null | head -n 1)
}

# a sweep of backends $2 into $1: exit 0, PASSED, every matrix of each backend in the summary
sweep() { # DIR BACKENDS WHAT
    t=$(now)
    run4 "$1" --link-sweep --backends "$2" --sweep-sizes 8,1M -n 20 -w 2
    ok $rc "$3: --link-sweep on $2 exit 0 ($(since "$t") s)"
    s=$(summary_of "$1")
    grep -q '^result: *PASSED' "$s" 2>/dev/null &&
        grep -q '^links: *[0-9]* measured.*, 0 not ok' "$s"
    ok $? "$3: PASSED, every link ok and exact"
    want=$(($(echo "$2" | tr ',' '\n' | wc -l) * 2))
    n=$(grep -c -E '^[a-z]+ (bandwidth|latency), (1048576|8) B each way' "$s" 2>/dev/null)
    [ "$n" -eq "$want" ] && [ "$(grep -c -E '^n[1-4] .*[0-9]' "$s")" -eq $((want * 4)) ]
    ok $? "$3: $want node x node matrices of 4 nodes in the summary (got $n)"
}

# ---- 1. one node: nothing to sweep
rc=0
# shellcheck disable=SC2086 # SRUN is a list of options
timeout -k 10 60 $SRUN -N 1 -n 2 -w n1 "$COLLPROF_BIN" --link-sweep --backends "${judged%%,*}" \
    --output-dir "$WORK" </dev/null >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q 'no link between nodes to measure' "$WORK/err"
ok $? "one node: --link-sweep exits 2, 'no link between nodes to measure' (rc $rc)"

# ---- 2. no link shaped: exact, and nothing flagged
if [ "$sanitized" != 1 ]; then
    sweep "$WORK/clean" "$calm" "clean"
    rc=0
    # shellcheck disable=SC2086 # THR is a list of options
    "$REPORT" links $THR "$h5" >"$WORK/links" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] && ! grep -q ': slow link$\|: suspect node' "$WORK/links"
    ok $? "clean: links flags nothing, exit 0 (rc $rc)"
    [ "$rc" -eq 0 ] || sed 's/^/# /' "$WORK/links"
    # every backend with 2 ranks per node: the ranks other than local rank 0 exchange with
    # themselves in every round
    all=$(echo "${BACKENDS# }" | tr ' ' ',')
    PER=2
    sweep "$WORK/all" "$all" "2 ranks per node"
    PER=1
fi

# ---- 3. n3's link throttled: n3 named, and only n3
bash "$SL" shape n3 100mbit >/dev/null 2>&1
ok $? "shape n3 100mbit"
sweep "$WORK/slow" "$judged" "n3 throttled"
rc=0
# shellcheck disable=SC2086 # THR is a list of options
"$REPORT" links $THR "$h5" >"$WORK/links" 2>&1 || rc=$?
nb=$(echo "$judged" | tr ',' '\n' | wc -l)
n=$(grep -c ': n3: 3 of 3 links at .* suspect node n3$' "$WORK/links")
[ "$rc" -eq 1 ] && [ "$n" -eq "$nb" ]
ok $? "n3 throttled: links exits 1 and names n3 on each of $judged (rc $rc)"
! grep -q 'suspect node n[124]' "$WORK/links" && ! grep 'slow link$' "$WORK/links" | grep -v -q n3
ok $? "n3 throttled: no other node, and no link without n3, is flagged"
[ "$rc" -eq 1 ] || sed 's/^/# /' "$WORK/links"
"$REPORT" plot "$h5" -o "$WORK/links.svg" >/dev/null 2>&1 &&
    [ "$(grep -c 'link bandwidth between nodes' "$WORK/links.svg")" -eq "$nb" ] &&
    grep -q 'stroke="#d62728"' "$WORK/links.svg"
ok $? "plot: one heatmap per backend, the slow links framed in red"
if [ -n "${CP_H5DUMP:-}" ] && [ -x "$CP_H5DUMP" ]; then
    "$CP_H5DUMP" -d /links "$h5" >"$WORK/dump" 2>&1
    missing=
    # shellcheck disable=SC2013 # column names are single words
    for c in $(sed -n '/^#define COLLPROF_LINK_COLUMNS/,/^$/s/^ *X(\([a-z0-9_]*\), .*/\1/p' \
        "$COLLPROF_SRCDIR/include/collprof/schema.h"); do
        grep -q "\"$c\"" "$WORK/dump" || missing="$missing $c"
    done
    [ -z "$missing" ] && [ "$(grep -c '"bandwidth"' "$WORK/dump")" -eq $((6 * nb)) ]
    ok $? "/links: every column, 6 bandwidth rows per backend${missing:+ (missing:$missing)}"
fi

# ---- 3b. a 4-node --screen of the same cluster: 4 nodes meet every pair in 3 rounds, so the
# screen runs the circle twice (6 random rounds, each pair's two figures folded into one;
# docs/screen.md) and names n3 alone
t=$(now)
run4 "$WORK/screen4" --screen --backends "$calm" --sweep-sizes 8,256K -n 20 -w 2 \
    --screen-threshold 0.1
out=$WORK/screen4/out
cp "$WORK/out" "$out" 2>/dev/null
if [ "$sanitized" != 1 ]; then
    [ "$rc" -eq 1 ] && [ "$(grep -c '^slow ' "$out")" -eq 1 ] && grep -q '^slow  *n3: ' "$out"
    ok $? "4-node screen, n3 throttled: exit 1, n3 slow, nothing else (rc $rc, $(since "$t") s)"
else
    { [ "$rc" -eq 0 ] || [ "$rc" -eq 1 ]; } && grep -q '^nodes: ' "$out"
    ok $? "4-node screen, n3 throttled (sanitizers): a verdict, exit $rc"
fi
grep -q '^# screen .*round 6/6 (random)' "$out" && ! grep -q '^# screen .*round 7/' "$out"
ok $? "4-node screen: 6 random rounds, the circle twice"
[ "$rc" -le 1 ] || sed -n '/^== screen/,$s/^/# /p' "$out"

# ---- 4. stragglers names n3 from sendrecv, alltoall and scatter
if [ "$sanitized" != 1 ]; then
    t=$(now)
    # -n 10: with 5 iterations the slow end of a cell was noise once in a distcheck beside other
    # tests (n3 the slow end of 3 of 6 cells, not more than half)
    run4 "$WORK/ops" --backends "$judged" --ops sendrecv,alltoall,scatter --counts 1M -n 10 -w 2 \
        --variants default
    ok $rc "n3 throttled: sendrecv, alltoall, scatter on $judged exit 0 ($(since "$t") s)"
    "$REPORT" stragglers "$h5" >"$WORK/str" 2>&1
    grep -q '^n3: the slow end of .* suspect node n3$' "$WORK/str" &&
        ! grep -q 'suspect node n[124]' "$WORK/str"
    ok $? "stragglers names n3, and only n3, as the suspect node"
    grep -q '^n3: the slow end' "$WORK/str" || sed -n '/suspect nodes/,$s/^/# /p' "$WORK/str"
    grep -c 'slow end n3$' "$WORK/str" | sed 's/^/# cells with slow end n3: /'
    rc=0
    "$REPORT" links "$h5" >/dev/null 2>"$WORK/err" || rc=$?
    [ "$rc" -eq 2 ] && grep -q 'has no link sweep data' "$WORK/err"
    ok $? "links on a file without sweep data: one line, exit 2 (rc $rc)"
fi
bash "$SL" shape n3 off >/dev/null 2>&1

echo "# links.sh took $(since "$T0") s"
done_testing
