#!/bin/sh
# What collprof-trace adds (issue 40's goals: at most 1 us per MPI call, median, 8-byte
# allreduce, 2 ranks; a recorded job's wall time within 2 % of the untraced one).  Run from the
# build tree after `make check` has built bench/trace_bench (or `make bench/trace_bench`):
#
#   ../bench/trace_overhead.sh [ROUNDS] [CALLS] [STEPS]
#
# 1. Per call: bench/trace_bench, CALLS (default 200000) 8-byte MPI_Allreduce calls on 2 ranks,
#    untraced and traced (libcollprof-trace.so preloaded, its buffer holding every call, so
#    that nothing is written while the loop runs), alternating, ROUNDS times (default 5).
#    Each run's median per call; printed: the median over rounds of each side, the difference.
# 2. A job: bench/trace_bench -g 20 -n STEPS (default 20000) on 2 ranks, each step 20 us of
#    compute then the allreduce (the recorder's default buffer), untraced and traced,
#    alternating ROUNDS times: the whole mpirun's wall time (start, MPI_Init and the recorder's
#    barriers, the loop, MPI_Finalize and writing the file) and the loop's own time; the median
#    of each side and the change.
# 3. Writing: bench/trace_bench on one rank, 1,000,000 calls, the buffer holding them all, so
#    that they are written at MPI_Finalize: the process's wall time traced minus untraced,
#    less the loop's own difference, is the start (the buffer touched) and the writing; per
#    record (median of ROUNDS).
# The machine's load average is printed first: the figures mean little on a loaded machine.
set -eu
ROUNDS=${1:-5}
CALLS=${2:-200000}
STEPS=${3:-20000}
for f in bench/trace_bench .libs/libcollprof-trace.so; do
    [ -e "$f" ] || { echo "trace_overhead.sh: $f not built (run from the build tree)" >&2; exit 2; }
done
MPIRUN=${MPIRUN:-mpirun}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
LIB=$(pwd)/.libs/libcollprof-trace.so
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $($MPIRUN --version | head -n 1)"

now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# run TRACED(0/1) BUFFER PROGRAM ARGS...: the program under mpirun (traced: the recorder's
# buffer BUFFER records, empty: its default); its stdout in $d/out, wall s in $d/wall
run() {
    traced=$1
    buf=$2
    shift 2
    rm -rf "$d/t"
    mkdir -p "$d/t"
    t=$(now)
    if [ "$traced" = 1 ]; then
        $MPIRUN --oversubscribe --bind-to none -x LD_PRELOAD="$LIB" -x COLLPROF_TRACE_DIR="$d/t" \
            ${buf:+-x COLLPROF_TRACE_BUFFER=$buf} "$@" >"$d/out"
    else
        $MPIRUN --oversubscribe --bind-to none "$@" >"$d/out"
    fi
    awk -v a="$t" -v b="$(now)" 'BEGIN { printf "%.4f\n", b - a }' >"$d/wall"
}

: >"$d/p50.0"
: >"$d/p50.1"
: >"$d/wall.0"
: >"$d/wall.1"
: >"$d/loop.0"
: >"$d/loop.1"
i=0
while [ $i -lt "$ROUNDS" ]; do
    for traced in 0 1; do
        run $traced $((CALLS + 65536)) -np 2 bench/trace_bench -n "$CALLS" -w 2000
        sed -n 's/.* p50_us \([0-9.]*\) .*/\1/p' "$d/out" >>"$d/p50.$traced"
        [ "$traced" = 0 ] || [ "$(ls "$d/t" | wc -l)" -eq 2 ] || { echo "no trace files" >&2; exit 1; }
    done
    for traced in 0 1; do
        run $traced "" -np 2 bench/trace_bench -n "$STEPS" -w 100 -g 20
        cat "$d/wall" >>"$d/wall.$traced"
        sed -n 's/.* loop_s \([0-9.]*\).*/\1/p' "$d/out" >>"$d/loop.$traced"
    done
    i=$((i + 1))
done
u=$(median <"$d/p50.0")
t=$(median <"$d/p50.1")
echo "per call (8-byte allreduce, 2 ranks, $CALLS calls, $ROUNDS rounds; p50 of each run, median over runs):"
awk -v u="$u" -v t="$t" 'BEGIN { printf "  untraced %.3f us, traced %.3f us: %+.3f us per call\n", u, t, t - u }'
echo "  runs untraced: $(tr '\n' ' ' <"$d/p50.0")"
echo "  runs traced:   $(tr '\n' ' ' <"$d/p50.1")"
u=$(median <"$d/wall.0")
t=$(median <"$d/wall.1")
echo "a job (trace_bench -g 20 -n $STEPS: 2 ranks, $STEPS steps of 20 us compute + allreduce; median of $ROUNDS):"
awk -v u="$u" -v t="$t" 'BEGIN { printf "  mpirun wall time: untraced %.3f s, traced %.3f s: %+.2f %%\n", u, t, 100 * (t - u) / u }'
echo "    runs untraced: $(tr '\n' ' ' <"$d/wall.0")"
echo "    runs traced:   $(tr '\n' ' ' <"$d/wall.1")"
u=$(median <"$d/loop.0")
t=$(median <"$d/loop.1")
awk -v u="$u" -v t="$t" 'BEGIN { printf "  the loop alone:   untraced %.3f s, traced %.3f s: %+.2f %%\n", u, t, 100 * (t - u) / u }'
echo "    runs untraced: $(tr '\n' ' ' <"$d/loop.0")"
echo "    runs traced:   $(tr '\n' ' ' <"$d/loop.1")"

: >"$d/write"
i=0
while [ $i -lt "$ROUNDS" ]; do
    run 0 "" -np 1 bench/trace_bench -n 1000000 -w 0
    w0=$(cat "$d/wall") l0=$(sed -n 's/.* loop_s \([0-9.]*\).*/\1/p' "$d/out")
    run 1 1100000 -np 1 bench/trace_bench -n 1000000 -w 0
    w1=$(cat "$d/wall") l1=$(sed -n 's/.* loop_s \([0-9.]*\).*/\1/p' "$d/out")
    size=$(wc -c <"$d/t/collprof-trace.0.jsonl")
    awk -v a="$w0" -v b="$w1" -v c="$l0" -v e="$l1" 'BEGIN { printf "%.4f\n", (b - a) - (e - c) }' >>"$d/write"
    i=$((i + 1))
done
w=$(median <"$d/write")
echo "writing (1 rank, 1,000,000 records at MPI_Finalize, a $((size / 1000000)) MB file; median of $ROUNDS):"
awk -v w="$w" 'BEGIN { printf "  %.3f s more outside the loop: %.3f us a record\n", w, w }'
echo "  runs: $(tr '\n' ' ' <"$d/write")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
