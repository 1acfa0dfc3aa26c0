#!/bin/sh
# Run a collprof job under Nsight Systems (nsys profile): CUDA, NVTX and OS
# runtime traces, the report written next to collprof's results.
set -eu
prog=$(basename "$0")

usage() {
    cat <<USAGE
Usage: $prog [OPTIONS] [--] COLLPROF-ARGS...

Runs collprof COLLPROF-ARGS under "nsys profile" and writes the report
(.nsys-rep) into collprof's output directory, named like its results:
  collprof_nsys_<UTC time>[_r<rank>].nsys-rep

Self-launched jobs (--np N) are profiled as one process tree.  Under mpirun or
srun, put this script before collprof on each rank (mpirun -np 4 $prog -- ...);
each rank then writes its own report, suffixed with its rank.

Options:
  --output-dir DIR   where the report and collprof's results go (default:
                     collprof's --output-dir if given, else the current directory)
  --nsys-opt OPT     extra option for nsys profile (repeatable)
  --dry-run          print the command instead of running it
  -h, --help         this help

Environment: NSYS (nsys binary, default: nsys in PATH), COLLPROF_BIN (collprof
binary, default: collprof in PATH).  The default nsys options are
  --trace=cuda,nvtx,osrt --cuda-memory-usage=true --sample=none
  --cpuctxsw=none --force-overwrite=false
The collprof NCCL backend puts every cell's iterations in an NVTX range
"collprof nccl/<variant> <op> <dtype> count=<n>".

Example:
  $prog -- --np 2 --backends nccl --variants default,ring-simple --ops allreduce --counts 16M
USAGE
}

. "$(dirname "$0")/common.sh"
while [ $# -gt 0 ]; do
    prof_opt nsys "$@"
    if [ "$shifted" -gt 0 ]; then shift "$shifted"; continue; fi
    case $1 in
    --) shift; break ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }

prof_outdir "$@"
nsys=${NSYS:-nsys}
collprof=${COLLPROF_BIN:-collprof}
prof_need "$nsys" "install Nsight Systems or set NSYS=/path/to/nsys"
prof_name nsys

# shellcheck disable=SC2086 # $extra: options split on purpose
prof_run nsys-rep "$nsys" profile --trace=cuda,nvtx,osrt --cuda-memory-usage=true --sample=none \
    --cpuctxsw=none --force-overwrite=false $extra -o "$outdir/$name" "$collprof" "$@"
