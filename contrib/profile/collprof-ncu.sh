#!/bin/sh
# Run a collprof job under Nsight Compute (ncu): NCCL's kernels, a bounded
# number of launches, the report written next to collprof's results.
set -eu
prog=$(basename "$0")

usage() {
    cat <<USAGE
Usage: $prog [OPTIONS] [--] COLLPROF-ARGS...

Runs collprof COLLPROF-ARGS under ncu and writes the report (.ncu-rep) into
collprof's output directory: collprof_ncu_<UTC time>[_r<rank>].ncu-rep

NCCL kernels wait for their peers, so ncu's default kernel replay (one kernel
rerun many times on one rank) would deadlock a collective.  This wrapper uses
application replay (every metric pass reruns the whole job) with the "basic"
section set, and profiles only kernels whose name matches the filter: by
default what NCCL launches, its collective kernels (ncclDevKernel_*) and the
reductions of single-rank communicators (oneRank*).  A single-rank collective
that needs no arithmetic (sum, min, max on one rank, a broadcast) is a device
copy, not a kernel: ncu shows nothing for it (collprof-nsys.sh does).
Keep the job small: few cells, few iterations (-n 3 -w 1).

Options:
  --output-dir DIR   where the report and collprof's results go (default:
                     collprof's --output-dir if given, else the current directory)
  --kernels REGEX    kernel name filter (default: nccl|oneRank)
  --count N          profile at most N kernel launches per process (default: 20)
  --ncu-opt OPT      extra option for ncu (repeatable), e.g. "--set full"
  --dry-run          print the command instead of running it
  -h, --help         this help

Environment: NCU (ncu binary, default: ncu in PATH), COLLPROF_BIN (collprof
binary, default: collprof in PATH).  Default ncu options:
  --target-processes all --replay-mode application --set basic --nvtx
  --kernel-name regex:<REGEX> --launch-count <N>

Example:
  $prog --count 10 -- --np 2 --backends nccl --variants default --ops allreduce \\
      --counts 4M -n 3 -w 1
USAGE
}

. "$(dirname "$0")/common.sh"
kernels='nccl|oneRank'
count=20
while [ $# -gt 0 ]; do
    prof_opt ncu "$@"
    if [ "$shifted" -gt 0 ]; then shift "$shifted"; continue; fi
    case $1 in
    --kernels) prof_arg "$@"; kernels=$2; shift 2 ;;
    --count) prof_arg "$@"
        case $2 in '' | *[!0-9]*) echo "$prog: --count: not a number: $2" >&2; exit 2 ;; esac
        count=$2; shift 2 ;;
    --) shift; break ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }

prof_outdir "$@"
ncu=${NCU:-ncu}
collprof=${COLLPROF_BIN:-collprof}
prof_need "$ncu" "install Nsight Compute or set NCU=/path/to/ncu"
prof_name ncu

# shellcheck disable=SC2086 # $extra: options split on purpose
prof_run ncu-rep "$ncu" --target-processes all --replay-mode application --set basic --nvtx \
    --kernel-name "regex:$kernels" --launch-count "$count" $extra -o "$outdir/$name" \
    "$collprof" "$@"
