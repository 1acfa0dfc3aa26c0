#!/bin/bash
# collprof overhead benchmark: 4M-float allreduce and alltoall on 2 ranks,
# timed through collprof's MPI backend, through a plain C loop of the same
# MPI calls (bench/mpi_loop.c) and through the same loop in mpi4py
# (bench/mpi4py_loop.py, where python3-mpi4py is installed), interleaved over
# several launches in one run.  Prints median-of-rounds times and
# ratio = plain / collprof per op (and mpi4py / collprof).
# See bench/README.md.  Exit status: 0 ran (whatever the ratio), 1 failed to
# run, 2 bad usage.
set -u

usage() {
    cat <<'EOF'
Usage: bench/overhead.sh [OPTIONS]
Times 4M-float allreduce and alltoall through collprof (--backends mpi
--variants default), through bench/mpi_loop.c (plain C) and through
bench/mpi4py_loop.py (the same loop in mpi4py with numpy buffers), interleaved
over R rounds of one launch each, and prints median-of-rounds means,
ratio = plain / collprof and mpi4py / collprof.  All three run the same policy:
an untimed MPI_Barrier before each timed call, W warm-up and N timed
iterations, iteration time = max over ranks, per launch the mean.
Each round also launches the plain loop a second time (A/A): plain2 / plain
measures how far two identical programs drift apart in the same run.
Without mpi4py (Debian/Ubuntu: apt-get install python3-mpi4py) the script
says so and runs without the mpi4py column.

  -r, --rounds R         launches of each program (default: 5)
  -n, --iters N          timed iterations per op and launch (default: 50)
  -w, --warmup W         warm-up iterations per op and launch (default: 10)
  -c, --count COUNT      float elements per op, K/M suffixes (default: 4M)
      --np N             ranks (default: 2)
      --ops LIST         allreduce,alltoall or one of them (default: both)
      --collprof PATH    collprof binary (default: $COLLPROF, ./collprof,
                         or collprof on PATH)
      --plugin-path DIR  COLLPROF_PLUGIN_PATH (default: the environment's, or
                         .libs next to a build-tree collprof)
      --mpi-loop PATH    where the plain loop is built (default: $MPI_LOOP,
                         or bench/mpi_loop in collprof's build tree, else a
                         temporary directory)
      --retries N        extra rounds allowed for rounds that other work on the
                         machine disturbed (default: the number of rounds)
      --quiet-wait S     before each round, wait up to S seconds for a second
                         in which other work uses < 10% of the CPUs (default:
                         5; 0: do not wait)
      --no-aa            skip the A/A launch (a second plain loop each round,
                         whose ratio to the first shows the noise of the run)
      --no-mpi4py        skip the mpi4py launch
      --keep             keep the raw outputs (their directory is printed)
  -h, --help             this help

Environment: MPIRUN (default mpirun), MPICC (default mpicc), MPIRUN_ARGS
(extra mpirun arguments, split on blanks), PYTHON (the interpreter for the
mpi4py loop; default: python3 on PATH if it imports mpi4py and numpy, else
/usr/bin/python3, where Debian's python3-mpi4py installs).  Unless set, traffic is kept on
loopback (OMPI_MCA_oob_tcp_if_include=lo, OMPI_MCA_btl_tcp_if_include=lo).
EOF
}

NAME=overhead.sh
# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

ROUNDS=5
ITERS=50
WARMUP=10
COUNT=4M
NP=2
OPS=allreduce,alltoall
KEEP=0
AA=1
PY=1
RETRIES=
QUIET_WAIT=5
OTHER_MAX=10 # % of the CPUs used by other work above which a round is disturbed
COLLPROF_BIN=${COLLPROF:-}
PLUGIN_PATH=${COLLPROF_PLUGIN_PATH:-}
LOOP_BIN=${MPI_LOOP:-}
BENCH_OPTS="ROUNDS ITERS WARMUP NP OPS PLUGIN_PATH" # the shared options it takes (bench_opt)

while [ $# -gt 0 ]; do
    case $1 in
    -c | --count) need_arg "$1" $#; COUNT=$2; shift 2 ;;
    --mpi-loop) need_arg "$1" $#; LOOP_BIN=$2; shift 2 ;;
    --retries) need_arg "$1" $#; RETRIES=$2; shift 2 ;;
    --quiet-wait) need_arg "$1" $#; QUIET_WAIT=$2; shift 2 ;;
    --no-aa) AA=0; shift ;;
    --no-mpi4py) PY=0; shift ;;
    --keep) KEEP=1; shift ;;
    *) bench_opt "$@" || bad_usage "unknown argument '$1'"; shift 2 ;;
    esac
done

check_loop_counts
at_least "$NP" 2 || bad_usage "--np must be at least 2"
RETRIES=${RETRIES:-$ROUNDS}
at_least "$RETRIES" 0 || bad_usage "--retries must be a non-negative integer"
at_least "$QUIET_WAIT" 0 || bad_usage "--quiet-wait must be a non-negative integer"
case $COUNT in [0-9]*[KMkm] | [0-9]*) ;; *) bad_usage "bad --count '$COUNT'" ;; esac
case ${COUNT%[KMkm]} in *[!0-9]*) bad_usage "bad --count '$COUNT'" ;; esac
OP_LIST=()
IFS=, read -r -a OP_LIST <<<"$OPS"
[ ${#OP_LIST[@]} -ge 1 ] || bad_usage "--ops is empty"
for op in "${OP_LIST[@]}"; do
    case $op in allreduce | alltoall) ;; *) bad_usage "--ops: '$op' is not allreduce or alltoall" ;; esac
done

HERE=$(cd "$(dirname "$0")" && pwd) || die "cannot find the script's directory"
LOOP_SRC=$HERE/mpi_loop.c
[ -r "$LOOP_SRC" ] || die "$LOOP_SRC is missing"
PY_SRC=$HERE/mpi4py_loop.py
MPIRUN=${MPIRUN:-mpirun}
MPICC=${MPICC:-mpicc}
command -v "$MPIRUN" >/dev/null 2>&1 || die "$MPIRUN not found (set MPIRUN)"

# ---- collprof and its plugins ----------------------------------------------
find_collprof
if [ -z "$PLUGIN_PATH" ] && [ -e "$BUILD_DIR/.libs/collprof_mpi.so" ]; then
    PLUGIN_PATH=$BUILD_DIR/.libs
fi
if [ -n "$PLUGIN_PATH" ]; then
    export COLLPROF_PLUGIN_PATH="$PLUGIN_PATH"
fi

# ---- the scratch directory ---------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/collprof-overhead.XXXXXX") || die "mktemp failed"
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [ "$KEEP" -eq 1 ]; then
        printf 'raw outputs kept in %s\n' "$TMP"
    else
        rm -rf -- "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- the plain loop ---------------------------------------------------------
if [ -z "$LOOP_BIN" ]; then
    # next to a build-tree collprof (never beside an installed one)
    if [ -f "$BUILD_DIR/Makefile" ] && mkdir -p "$BUILD_DIR/bench" 2>/dev/null &&
        [ -w "$BUILD_DIR/bench" ]; then
        LOOP_BIN=$BUILD_DIR/bench/mpi_loop
    else
        LOOP_BIN=$TMP/mpi_loop
    fi
fi
if [ ! -x "$LOOP_BIN" ] || [ "$LOOP_SRC" -nt "$LOOP_BIN" ]; then
    command -v "$MPICC" >/dev/null 2>&1 || die "$MPICC not found (set MPICC)"
    mkdir -p "$(dirname "$LOOP_BIN")" || die "cannot create $(dirname "$LOOP_BIN")"
    printf 'building %s\n' "$LOOP_BIN"
    "$MPICC" -O2 -std=c11 -Wall -Wextra -o "$LOOP_BIN" "$LOOP_SRC" ||
        die "$MPICC failed to build $LOOP_BIN"
fi

# ---- the mpi4py loop ----------------------------------------------------------
# PYTHON if set, else the first of python3 on PATH and /usr/bin/python3 (where
# Debian's python3-mpi4py installs; a pyenv or venv python3 may lack it) that
# imports mpi4py and numpy.  Without one, the run goes on without that column.
PY_NOTE=
if [ "$PY" -eq 1 ]; then
    [ -r "$PY_SRC" ] || die "$PY_SRC is missing"
    PY_VERSIONS='import mpi4py, numpy; print("mpi4py %s, numpy %s" % (mpi4py.__version__, numpy.__version__))'
    PYTHON_BIN=
    for cand in ${PYTHON:-python3 /usr/bin/python3}; do
        if PY_VER=$("$cand" -c "$PY_VERSIONS" 2>/dev/null); then
            PYTHON_BIN=$(command -v "$cand")
            break
        fi
    done
    if [ -z "$PYTHON_BIN" ]; then
        PY=0
        PY_NOTE="NOTE: no mpi4py for ${PYTHON:-python3 or /usr/bin/python3}: the mpi4py column is left out; install it with 'apt-get install python3-mpi4py' (Debian/Ubuntu; it brings numpy), or set PYTHON to an interpreter that has mpi4py and numpy"
        printf '%s\n' "$PY_NOTE" >&2
    fi
fi

# ---- launching --------------------------------------------------------------
export OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}"
LAUNCH=("$MPIRUN" -np "$NP" --oversubscribe --bind-to none)
if [ "$(id -u)" -eq 0 ]; then
    LAUNCH+=(--allow-run-as-root)
fi
if [ -n "$PLUGIN_PATH" ]; then
    LAUNCH+=(-x COLLPROF_PLUGIN_PATH)
fi
if [ -n "${MPIRUN_ARGS:-}" ]; then
    read -r -a extra <<<"$MPIRUN_ARGS"
    LAUNCH+=("${extra[@]}")
fi

# median of the numbers on stdin (mean of the middle two for an even count)
median() {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "nan"; exit }
        if (NR % 2) printf "%.1f\n", v[(NR + 1) / 2]
        else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# "MEAN P50" of one op from collprof's table (columns found from its header)
parse_collprof() { # file op
    awk -v op="$2" '
        /^# backend/ { for (i = 1; i <= NF; i++) { if ($i == "time(us)") m = i - 1; if ($i == "p50(us)") q = i - 1 } }
        m && q && $1 == "mpi" && $2 == "default" && $3 == op { print $m, $q; found = 1; exit }
        END { if (!found) exit 1 }' "$1"
}

# "MEAN P50" of one op from mpi_loop's key-value line
parse_loop() { # file op
    awk -v op="$2" '
        $1 == "op" && $2 == op {
            for (i = 3; i < NF; i++) { if ($i == "mean_us") m = $(i + 1); if ($i == "p50_us") q = $(i + 1) }
            if (m != "" && q != "") { print m, q; found = 1 }
            exit
        }
        END { if (!found) exit 1 }' "$1"
}

run_collprof() { # round
    local out=$TMP/collprof.$1.out odir=$TMP/collprof.$1 op t
    mkdir -p "$odir" || die "cannot create $odir"
    if ! "${LAUNCH[@]}" "$COLLPROF_BIN" --backends mpi --variants default --ops "$OPS" \
        --counts "$COUNT" --dtype float32 --redop sum --inplace out --sync barrier \
        -n "$ITERS" -w "$WARMUP" --output-dir "$odir" >"$out" 2>&1; then
        cat "$out" >&2
        die "collprof failed in round $1 (output above)"
    fi
    for op in "${OP_LIST[@]}"; do
        t=$(parse_collprof "$out" "$op") || { cat "$out" >&2; die "no $op time in collprof's output (round $1)"; }
        printf '%s collprof %s %s\n' "$1" "$op" "$t" >>"$TMP/times"
    done
}

run_loop() { # round label program...: mpi_loop or mpi4py_loop, same options and output
    local r=$1 label=$2 out=$TMP/$2.$1.out op t
    shift 2
    if ! "${LAUNCH[@]}" "$@" -o "$OPS" -c "$COUNT" -n "$ITERS" -w "$WARMUP" \
        -s barrier >"$out" 2>&1; then
        cat "$out" >&2
        die "$label ($*) failed in round $r (output above)"
    fi
    for op in "${OP_LIST[@]}"; do
        t=$(parse_loop "$out" "$op") || { cat "$out" >&2; die "no $op time in $label's output (round $r)"; }
        printf '%s %s %s %s\n' "$r" "$label" "$op" "$t" >>"$TMP/times"
    done
}

run_tool() { # round tool
    case $2 in
    collprof) run_collprof "$1" ;;
    mpi4py) run_loop "$1" "$2" "$PYTHON_BIN" "$PY_SRC" ;;
    *) run_loop "$1" "$2" "$LOOP_BIN" ;;
    esac
}

# ---- the policy --------------------------------------------------------------
TOOLS=(collprof plain)
if [ "$PY" -eq 1 ]; then
    TOOLS+=(mpi4py)
fi
if [ "$AA" -eq 1 ]; then
    TOOLS+=(plain2)
fi
NT=${#TOOLS[@]}
TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)
NCPU=$(nproc 2>/dev/null || echo 1)
model=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)
thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)
mpiver=$("$MPIRUN" --version 2>/dev/null | head -n 1)
py_line="left out (--no-mpi4py)" py_buf='' py_clock='' py_ratio=''
if [ -n "$PY_NOTE" ]; then
    py_line="left out: no mpi4py (apt-get install python3-mpi4py)"
fi
if [ "$PY" -eq 1 ]; then
    py_line="$PYTHON_BIN $PY_SRC ($PY_VER): the same loop; numpy float32 buffers"
    py_buf='
#             (mpi4py: numpy arrays at 4096-aligned addresses, no MADV_HUGEPAGE, touched by fill(0))'
    py_clock=' (mpi4py: time.clock_gettime_ns)'
    py_ratio=';
#             mpi4py / collprof likewise (shown, no verdict)'
fi
aa_note=
if [ "$AA" -eq 1 ]; then
    aa_note='; plain2: the same program launched again (A/A)'
fi
cat <<EOF
# collprof overhead benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ)
# machine:    $(uname -n), $NCPU cores, ${model:-unknown cpu}, Linux $(uname -r), THP ${thp:-unknown}
# launcher:   ${LAUNCH[*]}   (${mpiver:-unknown MPI})
# collprof:   $COLLPROF_BIN --backends mpi --variants default (plugins: ${COLLPROF_PLUGIN_PATH:-default path})
# plain:      $LOOP_BIN (bench/mpi_loop.c)$aa_note
# mpi4py:     $py_line
# cells:      ${OPS//,/ and } of $COUNT float32 (sum, out of place; alltoall count/$NP per peer), $NP ranks
# rounds:     $ROUNDS; each launches ${TOOLS[*]} once, in an order rotated every round;
#             a round in which other work used > $OTHER_MAX% of the CPUs is left out and run again
#             (at most $RETRIES extra rounds), after waiting up to ${QUIET_WAIT}s for a quiet second
# per launch: $WARMUP warm-up then $ITERS timed iterations per op; MPI_Barrier (not timed) before each iteration
# buffers:    posix_memalign(4096), every page touched by memset before timing, same buffers every iteration$py_buf
# timing:     CLOCK_MONOTONIC around each blocking call$py_clock; iteration time =
#             max over ranks; per launch the mean of those; reported: median over rounds of the per-launch means
# comm:       coll/tuned decision rules (OMPI_MCA_coll_tuned_use_dynamic_rules=1) on an MPI_Comm_dup of MPI_COMM_WORLD
# GLIBC_TUNABLES: ${GLIBC_TUNABLES:-(not set)}
# load:       $(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null) before the first launch (other work on the machine swamps the figures)
# ratio = plain / collprof: >= 0.97 PASS (collprof within 3% of the plain loop), > 1 collprof was faster$py_ratio
EOF

# ---- the rounds ---------------------------------------------------------------
# Other work on the machine (a build, someone else's test run) changes every
# figure 2-5x here.  Per round: busy CPU ticks of the whole machine (/proc/stat)
# minus the ticks of our own launches (reaped children, in /proc/$$/stat), as a
# share of the CPUs available during the round.  A round above OTHER_MAX is
# "disturbed": it is shown but left out of the medians and run again (at most
# RETRIES times in all), after waiting up to QUIET_WAIT s for a quiet second.
busy_ticks() {
    awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat 2>/dev/null || echo 0
}
own_ticks() { # utime stime cutime cstime: fields 14-17, counted after the ")" of comm
    sed 's/.*) //' "/proc/$$/stat" 2>/dev/null | awk '{ print $12 + $13 + $14 + $15 }' || echo 0
}
now_s() {
    if [ -n "${EPOCHREALTIME:-}" ]; then
        printf '%s\n' "$EPOCHREALTIME"
    else
        date +%s.%N
    fi
}
other_pct() { # busy0 busy1 own0 own1 t0 t1: other work, % of the CPUs
    awk -v b="$(($2 - $1))" -v o="$(($4 - $3))" -v t0="$5" -v t1="$6" -v n="$NCPU" -v hz="$TCK" \
        'BEGIN { x = (t1 > t0) ? (b - o) / ((t1 - t0) * n * hz) * 100 : 0; printf "%.0f\n", (x < 0 ? 0 : x) }'
}
# wait (at most QUIET_WAIT s) for one second in which other work stays under OTHER_MAX
wait_quiet() {
    local waited=0 b0 b1 o0 o1 t0 t1 x
    while [ "$waited" -lt "$QUIET_WAIT" ]; do
        b0=$(busy_ticks) o0=$(own_ticks) t0=$(now_s)
        sleep 1
        b1=$(busy_ticks) o1=$(own_ticks) t1=$(now_s)
        x=$(other_pct "$b0" "$b1" "$o0" "$o1" "$t0" "$t1")
        [ "$x" -le "$OTHER_MAX" ] && return 0
        waited=$((waited + 1))
    done
    return 1
}

: >"$TMP/times"
: >"$TMP/other"
r=0
clean=0
while [ "$clean" -lt "$ROUNDS" ] && [ "$r" -lt $((ROUNDS + RETRIES)) ]; do
    r=$((r + 1))
    wait_quiet || true
    b0=$(busy_ticks) o0=$(own_ticks) t0=$(now_s)
    k=0
    while [ "$k" -lt "$NT" ]; do
        run_tool "$r" "${TOOLS[$(((r - 1 + k) % NT))]}"
        k=$((k + 1))
    done
    b1=$(busy_ticks) o1=$(own_ticks) t1=$(now_s)
    x=$(other_pct "$b0" "$b1" "$o0" "$o1" "$t0" "$t1")
    printf '%s %s\n' "$r" "$x" >>"$TMP/other"
    if [ "$x" -le "$OTHER_MAX" ]; then
        clean=$((clean + 1))
    fi
done
NROUNDS=$r

# ---- per round, then the tables -------------------------------------------------
# $TMP/times: one line per launch and op: ROUND TOOL OP MEAN P50
# KEEP_ROUNDS: the rounds the tables use (space-separated; empty: all)
KEEP_ROUNDS=
col() { # tool op field(4 mean, 5 p50): the values over the kept rounds
    awk -v t="$1" -v o="$2" -v f="$3" -v keep="$KEEP_ROUNDS" '
        BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 }
        $2 == t && $3 == o && (n == 0 || ($1 in ok)) { print $f }' "$TMP/times"
}
# median over the kept rounds of num/den taken round by round
paired() { # op field num-tool den-tool
    awk -v o="$1" -v f="$2" -v a="$3" -v b="$4" -v keep="$KEEP_ROUNDS" '
        BEGIN { n = split(keep, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 }
        $3 == o && (n == 0 || ($1 in ok)) { v[$1, $2] = $f; rs[$1] = 1 }
        END { for (r in rs) if (v[r, b] > 0) printf "%.4f\n", v[r, a] / v[r, b] }' \
        "$TMP/times" | sort -g | awk '{ v[NR] = $1 } END {
            if (NR == 0) print "nan"; else if (NR % 2) printf "%.3f\n", v[(NR + 1) / 2]
            else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
div() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f\n", a / b; else print "nan" }'
}

printf '\n# per round: mean/p50 time (us) of each launch; other: CPU used by other work on\n'
printf '# the machine during the round, %% of its %s CPUs (* above %s%%: disturbed, not in the medians)\n' \
    "$NCPU" "$OTHER_MAX"
printf '%-5s' round
for op in "${OP_LIST[@]}"; do
    for tool in "${TOOLS[@]}"; do
        printf ' %19s' "$op:$tool"
    done
done
printf ' %6s\n' other
r=1
while [ "$r" -le "$NROUNDS" ]; do
    printf '%-5s' "$r"
    for op in "${OP_LIST[@]}"; do
        for tool in "${TOOLS[@]}"; do
            printf ' %19s' "$(awk -v r="$r" -v t="$tool" -v o="$op" \
                '$1 == r && $2 == t && $3 == o { printf "%.1f/%.1f", $4, $5 }' "$TMP/times")"
        done
    done
    printf ' %6s\n' "$(awk -v r="$r" -v m="$OTHER_MAX" '$1 == r { printf "%d%%%s", $2, ($2 > m ? "*" : "") }' \
        "$TMP/other")"
    r=$((r + 1))
done

verdicts=()
disturbed=$(awk -v m="$OTHER_MAX" '$2 > m { printf "%s%s", s, $1; s = " " }' "$TMP/other")
KEEP_ROUNDS=$(awk -v m="$OTHER_MAX" '$2 <= m { printf "%s%s", s, $1; s = " " }' "$TMP/other")
nclean=$(printf '%s\n' "$KEEP_ROUNDS" | wc -w)
if [ -z "$disturbed" ]; then
    KEEP_ROUNDS=
    which="all $NROUNDS rounds"
elif [ "$nclean" -ge 3 ]; then
    which="the $nclean undisturbed rounds ($KEEP_ROUNDS)"
    verdicts+=("NOTE: other work on the machine disturbed rounds $disturbed (left out)")
else
    KEEP_ROUNDS=
    which="all $NROUNDS rounds, $((NROUNDS - nclean)) of them disturbed"
    verdicts+=("NOTE: other work on the machine disturbed rounds $disturbed and fewer than 3 were not: these figures measure the other work; rerun on a quiet machine")
fi

printf '\n# median of the per-launch means over %s; ratio = plain / collprof' "$which"
if [ "$PY" -eq 1 ]; then
    printf ',\n# py-ratio = mpi4py / collprof'
fi
printf '\n%-10s %14s %14s' op "collprof(us)" "plain(us)"
if [ "$PY" -eq 1 ]; then
    printf ' %14s' "mpi4py(us)"
fi
printf ' %7s' ratio
if [ "$PY" -eq 1 ]; then
    printf ' %8s' py-ratio
fi
printf '  %s\n' verdict
for op in "${OP_LIST[@]}"; do
    c=$(col collprof "$op" 4 | median)
    p=$(col plain "$op" 4 | median)
    ratio=$(div "$p" "$c")
    noise=
    notes=()
    if [ "$AA" -eq 1 ]; then
        notes+=("A/A plain2/plain in this run: $(div "$(col plain2 "$op" 4 | median)" "$p")")
    fi
    if [ "$PY" -eq 1 ]; then
        py=$(col mpi4py "$op" 4 | median)
        pyratio=$(div "$py" "$c")
        notes+=("mpi4py/collprof: $pyratio")
    fi
    if [ ${#notes[@]} -gt 0 ]; then
        noise=" (${notes[0]}${notes[1]:+; ${notes[1]}})"
    fi
    if awk -v x="$ratio" 'BEGIN { exit !(x >= 0.97) }'; then
        verdict=PASS
        verdicts+=("PASS $op: ratio $ratio >= 0.97, collprof's overhead is within noise$noise")
    else
        verdict=WARN
        slower=$(awk -v c="$c" -v p="$p" 'BEGIN { printf "%.1f", (c / p - 1) * 100 }')
        verdicts+=("WARN $op: ratio $ratio < 0.97, collprof $slower% slower than the plain loop$noise; rerun with more --rounds")
    fi
    printf '%-10s %14s %14s' "$op" "$c" "$p"
    if [ "$PY" -eq 1 ]; then
        printf ' %14s' "$py"
    fi
    printf ' %7s' "$ratio"
    if [ "$PY" -eq 1 ]; then
        printf ' %8s' "$pyratio"
    fi
    printf '  %s\n' "$verdict"
done

printf '\n# cross-checks over the same rounds: the ratio from the per-launch p50 (robust to\n'
printf '# bursts of noise inside a launch), the median of the round-by-round ratios (robust\n'
printf '# to slow drift)'
if [ "$PY" -eq 1 ]; then
    printf ', both also\n# for mpi4py / collprof (py-)'
fi
if [ "$AA" -eq 1 ]; then
    printf ', and the A/A ratio plain2 / plain of the means (the noise floor:\n# ideally 1.000)'
fi
printf '\n%-10s %13s %13s %9s %12s %12s' op "collprof-p50" "plain-p50" p50-ratio paired-mean paired-p50
if [ "$PY" -eq 1 ]; then
    printf ' %11s %12s %15s' mpi4py-p50 py-p50-ratio py-paired-mean
fi
if [ "$AA" -eq 1 ]; then
    printf ' %9s %11s' "A/A" "A/A-paired"
fi
printf '\n'
for op in "${OP_LIST[@]}"; do
    c=$(col collprof "$op" 5 | median)
    p=$(col plain "$op" 5 | median)
    printf '%-10s %13s %13s %9s %12s %12s' "$op" "$c" "$p" "$(div "$p" "$c")" \
        "$(paired "$op" 4 plain collprof)" "$(paired "$op" 5 plain collprof)"
    if [ "$PY" -eq 1 ]; then
        py=$(col mpi4py "$op" 5 | median)
        printf ' %11s %12s %15s' "$py" "$(div "$py" "$c")" "$(paired "$op" 4 mpi4py collprof)"
    fi
    if [ "$AA" -eq 1 ]; then
        printf ' %9s %11s' "$(div "$(col plain2 "$op" 4 | median)" "$(col plain "$op" 4 | median)")" \
            "$(paired "$op" 4 plain2 plain)"
    fi
    printf '\n'
done

printf '\n# load after the last launch: %s (ours alone is about %s)\n' \
    "$(cut -d ' ' -f 1-3 /proc/loadavg 2>/dev/null)" "$NP"
if [ -n "$PY_NOTE" ]; then
    verdicts+=("$PY_NOTE")
fi
printf '%s\n' "${verdicts[@]}"
exit 0
