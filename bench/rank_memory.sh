#!/bin/bash
# Each rank's peak resident memory (VmHWM) in one run of a long cell: for
# each --np N, collprof --np N of the self backend, one allreduce of one
# element with many timed iterations (-n, default 100,000), repeated
# (--repeats, default 3: the repeats keep every repeat's samples), of this
# build and, with --base, of another side by side.  Rank 0 holds every
# rank's samples (8 x N x iterations x repeats bytes); what the other ranks
# hold says whether they keep every rank's too.  The ranks are the
# launcher's children, told apart by their PMIX_RANK in /proc while the run
# lasts (polled every 20 ms: VmHWM only grows).  Run from the build tree (or
# pass --collprof).  Linux only.
# Exit status: 0 ran, 1 failed, 2 bad usage.  See bench/README.md.
set -u
NAME=rank_memory.sh
COLLPROF_BIN=${COLLPROF:-}
BASE=
NPS="4 8 16"
ITERS=100000
BENCH_OPTS="NPS ITERS BASE" # the shared options it takes (bench_opt)
REPEATS=3

usage() {
    cat <<'USAGE'
Usage: bench/rank_memory.sh [OPTIONS]
  --np LIST          rank counts, comma-separated (default: 4,8,16)
  -n, --iters N      timed iterations of the cell (default: 100000)
  -r, --repeats R    runs of the cell (default: 3)
USAGE
    bench_usage
}

# shellcheck source=bench/lib.sh
. "$(dirname "$0")/lib.sh"
while [ $# -gt 0 ]; do
    case $1 in
    -r | --repeats) need_arg "$1" $# && REPEATS=$2 && shift ;;
    *) bench_opt "$@" || bad_usage "unknown option $1"; shift ;;
    esac
    shift
done
at_least "$ITERS" 1 || bad_usage "--iters needs a whole number >= 1"
at_least "$REPEATS" 1 || bad_usage "--repeats needs a whole number >= 1"
check_nps 2
[ -r /proc/self/status ] || die "needs Linux's /proc"
find_collprof
find_base
make_tmp

# "RANK KB" for every rank of the run (the launcher's children: not another run's ranks,
# such as those of tests running beside it), each poll; the largest per rank is kept later.
# Cheap, so that it takes little CPU from the ranks it measures: the children from
# /proc/PID/task/PID/children (pgrep -P without it), VmHWM read by the shell, each child's
# PMIX_RANK read once (until it has one: a child not yet exec'd, or the PMIx server, is read
# again).  Scanning every /proc entry with a few programs each, every 20 ms, held a CPU on a
# busy machine (np.sh's check: 287 s at load 24)
poll() { # pid of the run
    local -A rank=()
    local kids p r kb k v
    while kill -0 "$1" 2>/dev/null; do
        kids=() # (the list ends without a newline: read fails, having read it)
        if [ -r "/proc/$1/task/$1/children" ]; then
            read -r -a kids 2>/dev/null <"/proc/$1/task/$1/children" || true
        else
            read -r -d '' -a kids < <(pgrep -P "$1") || true
        fi
        for p in "${kids[@]}"; do
            if [ -z "${rank[$p]:-}" ]; then
                [ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$bin" ] || continue
                # a process may end between the lines
                r=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null | sed -n 's/^PMIX_RANK=//p')
                [ -z "$r" ] || rank[$p]=$r
            fi
            kb=
            while read -r k v _; do
                [ "$k" = VmHWM: ] && kb=$v && break
            done 2>/dev/null <"/proc/$p/status"
            [ -n "$kb" ] && echo "${rank[$p]:-launcher} $kb"
        done
        sleep 0.02
    done
}

printf '%5s %-6s %10s %14s %22s %18s\n' ranks build iterations samples_MB rank0_peak_MB \
    other_ranks_peak_MB # iterations of each repeat; samples: every rank's, every repeat's
for np in $NPS; do
    for build in this ${BASE:+base}; do
        bin=$(build_bin "$build")
        bin=$(readlink -f "$bin") # as /proc/PID/exe names it
        COLLPROF_PLUGIN_PATH=$(dirname "$bin")/.libs "$bin" --np "$np" --backends self \
            --ops allreduce --counts 1 -n "$ITERS" -w 0 --repeats "$REPEATS" --output-dir "$tmp" \
            >"$tmp/out" 2>"$tmp/err" &
        pid=$!
        poll "$pid" >"$tmp/rss"
        wait "$pid" || die_run "the $np-rank run of $bin failed"
        awk -v np="$np" -v b="$build" -v it="$ITERS" -v rep="$REPEATS" '
            $1 == "0" { r0 = $2 > r0 ? $2 : r0 }
            $1 ~ /^[1-9][0-9]*$/ { o = $2 > o ? $2 : o; seen[$1] = 1 }
            END {
                n = 0; for (k in seen) n++
                if (!r0 || n != np - 1) { printf "saw %d of %d ranks\n", n + (r0 > 0), np > "/dev/stderr"; exit 1 }
                printf "%5d %-6s %10d %14.1f %22.1f %18.1f\n", np, b, it, 8 * np * it * rep / 1e6, r0 / 1024, o / 1024
            }' "$tmp/rss" || die "the $np-rank run of $bin: not every rank was seen in /proc"
    done
done
