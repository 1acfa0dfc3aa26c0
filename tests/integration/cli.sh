#!/bin/sh
# Command line: help, version, list, dry run, and bad input.  Bad input must
# give one line on stderr naming the problem, exit status 2, and leave no
# file behind -- as a single rank, from the --np launcher, and under mpirun
# (every rank decides the same, none hangs).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"

cp_run --help
[ $rc -eq 0 ] && grep -q -- '--np N' "$WORK/out" && grep -q -- '--matrix FILE' "$WORK/out"
ok $? "--help describes the options"
# the matrix keys' defaults: --help takes them from the key table (src/cli/spec.c), and the
# man page's entry of each option says the same value
man="$COLLPROF_SRCDIR/docs/collprof.1"
bad=""
for o in iters warmup root counts inplace imbalance dtype redop; do
    d=$(awk -v o="--$o" '
        index($0, o " ") || index($0, o ",") { on = 1 }
        on && /^  -/ && !index($0, o) { exit }
        on && /\(default: / { sub(/.*\(default: /, ""); sub(/\).*/, ""); print; exit }' "$WORK/out")
    m=$(sed 's/\\-/-/g' "$man" | awk -v o="--$o" '
        /^\.B/ && index($0, o) { on = 1; next }
        on && /^\.(TP|SH|PP)/ { exit }
        on { print }')
    case $m in *"$d"*default* | *default*"$d"*) ;; *) bad="$bad $o(${d:-none})" ;; esac
    [ -n "$d" ] || bad="$bad $o(no default in --help)"
done
[ -z "$bad" ]
ok $? "the defaults --help gives for the matrix keys are the man page's${bad:+ (differ:$bad)}"
cp_run --version
[ $rc -eq 0 ] && grep -q '^collprof [0-9]' "$WORK/out"
ok $? "--version"
cp_run --list
[ $rc -eq 0 ] && grep -q 'operations:' "$WORK/out" && grep -q 'variants:' "$WORK/out"
ok $? "--list prints operations and variants"

mkdir -p "$WORK/dry"
cp_run --np 4 --dry-run --ops all --counts 1K --output-dir "$WORK/dry"
[ $rc -eq 0 ] && grep -q 'collprof plan: .* cells on 4 ranks' "$WORK/out" &&
    [ -z "$(ls -A "$WORK/dry")" ]
ok $? "--dry-run prints the plan and writes nothing"

# bad input: ARGS | text expected on stderr
bad_cases='*--ops allreduce,nope|unknown operation
-d float128|unknown dtype
--counts 4Q|unknown suffix
--counts -1|not a positive number
--counts 0|zero
*--counts 99999999999999999999999|too large
--counts 2T|too large
--np 0|--np
-n 0|iters
--backends nope|unknown backend
--variants nope|unknown variant
--root 9|root 9 does not exist
*--matrix /nonexistent/matrix|cannot read matrix file
--imbalance file:/nonexistent/tm --ops alltoallv|cannot read traffic matrix
--output-dir /nonexistent/dir|does not exist
*--output-dir /proc|not writable
--counts 64G|of host memory per node
*--frobnicate|unknown option'

printf '1 2\n3 4\n5 6\n' >"$WORK/notsquare.tm"
printf 'ops=allreduce\nops=allreduce counts=1K,,2K\n' >"$WORK/bad.matrix"
mkfifo "$WORK/fifo.matrix"
yes ops=allreduce | head -n 5000 >"$WORK/big.matrix"
bad_cases="$bad_cases
--imbalance file:$WORK/notsquare.tm --ops alltoallv|must be square
--matrix $WORK/bad.matrix|bad.matrix:2: counts
*-B nosuch=1|no backend takes this option
-B self-slot-kib=0|self-slot-kib=0: expected a whole number
--nosuch 3|unknown option '--nosuch'
--tag $(printf 'a\033[31mb')|--tag: control characters
*--tag $(printf 'a\377b')|--tag: control characters or invalid UTF-8
--matrix $WORK/fifo.matrix|not a regular file
--imbalance file:$WORK/fifo.matrix --ops alltoallv|not a regular file
*--matrix $WORK/big.matrix|big.matrix:4097: more than 4096 blocks"

echo "$bad_cases" >"$WORK/cases"

check_bad() { # MODE ARGS EXPECT
    mode=$1 args=$2 expect=$3
    out="$WORK/bad.out"
    rm -rf "$out"
    mkdir -p "$out"
    # cases that name their own output directory put it last, so it wins
    case $mode in
    single) cp_run --counts 1K --output-dir "$out" $args ;;
    np) cp_run --np 2 --counts 1K --output-dir "$out" $args ;;
    mpirun) cp_mpirun 2 --counts 1K --output-dir "$out" $args ;;
    esac
    lines=$(grep -c '^collprof: error:' "$WORK/err")
    [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -q -- "$expect" "$WORK/err" &&
        [ -z "$(ls -A "$out")" ]
    ok $? "$mode: '$args' -> exit 2, one error line with '$expect' (got $rc: $(head -c 300 "$WORK/err" | tr '\n' ' '))"
}

modes="single np"
if [ -n "${CP_MPIRUN:-}" ] && [ -x "${CP_MPIRUN:-/nonexistent}" ] &&
    [ -e "${COLLPROF_PLUGIN_PATH%%:*}/collprof_mpi.so" ]; then
    modes="$modes mpirun"
fi
# Every case as a single rank and from --np; under mpirun (each case a
# launch of 2 ranks, seconds under the sanitizers) the cases marked '*',
# one of each kind: the ranks share the same parser, what mpirun adds is
# that every rank refuses alike and the launch ends with one line
for mode in $modes; do
    while IFS='|' read -r args expect; do
        case $args in
        \**) args=${args#\*} ;;
        *) [ "$mode" = mpirun ] && continue ;;
        esac
        check_bad "$mode" "$args" "$expect"
    done <"$WORK/cases"
done

# --np under an external launcher is refused on every rank
if echo "$modes" | grep -q mpirun; then
    cp_mpirun 2 --np 2 --counts 1K --output-dir "$WORK"
    [ $rc -eq 2 ] && grep -q -- '--np starts its own ranks' "$WORK/err"
    ok $? "mpirun + --np: exit 2 with a clear message"
fi
done_testing
