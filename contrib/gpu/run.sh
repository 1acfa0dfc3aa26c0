#!/bin/bash
# contrib/gpu/run.sh: collprof's GPU validation on a machine that has a GPU,
# CUDA and NCCL (a pip wheel will do) but none of collprof's Debian
# dependencies.  It uses the bundle contrib/gpu/bundle.sh made
# (.gpu/collprof-gpu.tar.xz) and runs, each step under its own timeout within
# one total budget, a failure never stopping the later steps:
#   version    collprof --version, --list
#   matrix     collprof --np 1 --backends nccl (the default matrix): summary, .h5
#   profiler   tests/integration/nccl_profiler_gpu.sh: collprof's NCCL profiler plugin
#   gaps       tests/integration/nccl_gpu_gaps.sh: a replay whose gaps run a busy kernel
#   compare    bench/nccl_compare.sh: collprof against the plain NCCL loop, 5 rounds,
#              with the control (the loop with per-cell buffers, as collprof's)
#   compare-pinned  the same with all three programs on two CPUs (taskset)
#   sanitizer  compute-sanitizer (memcheck) on a short nccl run
#   sanitizer-triage  its log sorted (contrib/gpu/san_triage.sh): memory
#              errors and API errors outside NCCL fail, NCCL's own are counted
#   check-gpu  tests/integration/nccl_gpu.sh, as make check-gpu runs it
# Every step's log and status go under the output folder (steps.tsv: step,
# status, rc, seconds, limit, note); at the end the logs and results are
# packed into results.tar.xz there, and report.txt repeats what stdout showed.
# Without a GPU it records "no GPU", skips the GPU steps and ends in seconds.
# Run from the repository root.  See docs/gpu-run.md.
# Exit status: 0 every step ran (whatever its result), 1 could not set up, 2 bad usage.
set -u
NAME=run.sh
BUDGET=520
OUTDIR=${OUT:-}
BUNDLE=.gpu/collprof-gpu.tar.xz
UNPACK=/tmp/collprof-gpu
FORCE=0
SKIP=,
CMP_ARGS="--rounds 5 --control"

usage() {
    cat <<'EOF'
Usage: contrib/gpu/run.sh [OPTIONS]
  -b, --budget S    seconds for everything (default 520)
  -o, --out DIR     output folder (default: $OUT)
      --bundle F    the bundle (default .gpu/collprof-gpu.tar.xz)
      --unpack DIR  where to unpack it (default /tmp/collprof-gpu)
      --force       run the GPU steps even when no GPU is seen (to test this script)
      --skip LIST   steps not to run (comma-separated names; their time goes to
                    the later steps)
      --compare-args ARGS  bench/nccl_compare.sh options of both compare steps
                    (default "--rounds 5 --control"; e.g. "--rounds 11 -e 8M")
  -h, --help        this help
EOF
}

# die, bad_usage, need_arg: the bench scripts' helpers
# shellcheck source=../../bench/lib.sh
. "$(dirname "$0")/../../bench/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
    -b | --budget) need_arg "$1" $#; BUDGET=$2; shift 2 ;;
    -o | --out) need_arg "$1" $#; OUTDIR=$2; shift 2 ;;
    --bundle) need_arg "$1" $#; BUNDLE=$2; shift 2 ;;
    --unpack) need_arg "$1" $#; UNPACK=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    --skip) need_arg "$1" $#; SKIP=,$2,; shift 2 ;;
    --compare-args) need_arg "$1" $#; CMP_ARGS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) bad_usage "unknown argument '$1'" ;;
    esac
done
for st in ${SKIP//,/ }; do
    case $st in version | matrix | profiler | gaps | compare | compare-pinned | sanitizer | sanitizer-triage | check-gpu) ;;
    *) bad_usage "--skip: no step '$st' (version, matrix, profiler, gaps, compare, compare-pinned, sanitizer, sanitizer-triage, check-gpu)" ;;
    esac
done
case $BUDGET in '' | *[!0-9]*) bad_usage "--budget needs a whole number of seconds" ;; esac
[ "$BUDGET" -ge 30 ] || bad_usage "--budget must be at least 30 s"
[ -n "$OUTDIR" ] || bad_usage "no output folder: set OUT or pass --out DIR"
case $UNPACK in /?*) ;; *) bad_usage "--unpack must be an absolute path" ;; esac
[ -f tests/integration/nccl_gpu.sh ] || bad_usage "run it from the repository root"
[ -f "$BUNDLE" ] || die "no bundle at $BUNDLE: make it with contrib/gpu/bundle.sh and carry .gpu"

SRC=$PWD
ORIG_LDLP=${LD_LIBRARY_PATH:-}
START=$(date +%s)
DEADLINE=$((START + BUDGET))
mkdir -p "$OUTDIR/logs" || die "cannot create $OUTDIR/logs"
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
TSV=$OUTDIR/steps.tsv
REPORT=$OUTDIR/report.txt
printf 'step\tstatus\trc\tseconds\tlimit\tnote\n' >"$TSV"
: >"$REPORT"
say() { printf '%s\n' "$*" | tee -a "$REPORT"; }

# record STEP STATUS RC SECONDS LIMIT NOTE
record() {
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$TSV"
    if [ "$2" = skip ]; then
        say "[$(($(date +%s) - START))s] $1: skip: $6"
    else
        say "[$(($(date +%s) - START))s] $1: $2 (rc $3, $4 s of $5 s) $6"
    fi
}

# the seconds a step is kept at least, for the default budget of 520 s
need() {
    case $1 in
    matrix | compare-pinned) echo 30 ;;
    profiler | gaps) echo 20 ;;
    compare) echo 40 ;;
    check-gpu) echo 100 ;;
    *) echo 0 ;;
    esac
}

# run_step NAME CAP "LATER STEPS" NOTE COMMAND...: COMMAND under min(CAP, what the
# budget leaves after the needs of the later steps not skipped, scaled to the real
# budget), output in logs/NAME.log
run_step() {
    local name=$1 cap=$2 reserve=0 note=$4 left t0 rc st s
    for s in $3; do
        case $SKIP in *",$s,"*) ;; *) reserve=$((reserve + $(need "$s"))) ;; esac
    done
    reserve=$((reserve * BUDGET / 520))
    shift 4
    case $SKIP in *",$name,"*)
        record "$name" skip - 0 0 "--skip"
        return ;;
    esac
    left=$((DEADLINE - $(date +%s) - reserve))
    [ "$left" -lt "$cap" ] && cap=$left
    if [ "$cap" -lt 5 ]; then
        record "$name" skip - 0 0 "out of budget"
        return
    fi
    t0=$(date +%s)
    rc=0
    timeout -k 5 "$cap" "$@" </dev/null >"$LOGS/$name.log" 2>&1 || rc=$?
    case $rc in
    0) st=ok ;;
    124 | 137) st=timeout ;;
    *) st=fail ;;
    esac
    record "$name" "$st" "$rc" $(($(date +%s) - t0)) "$cap" "$note"
}

skip_step() { # NAME WHY
    record "$1" skip - 0 0 "$2"
}

# ---- the machine ------------------------------------------------------------------
{
    echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host $(hostname) $(uname -rm)"
    echo "os $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
    echo "glibc $(ldd --version 2>/dev/null | head -n 1)"
    echo "cpus $(nproc) mem $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
    echo "user $(id -un)"
} >"$OUTDIR/machine.txt"
NGPU=0
if command -v nvidia-smi >/dev/null 2>&1; then
    timeout 60 nvidia-smi -q >"$OUTDIR/nvidia-smi-q.txt" 2>&1
    NGPU=$(timeout 30 nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    timeout 30 nvidia-smi -L >>"$OUTDIR/machine.txt" 2>&1
    timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv,noheader \
        2>/dev/null | sed 's/^/gpu /' >>"$OUTDIR/machine.txt"
    grep -m1 'CUDA Version' "$OUTDIR/nvidia-smi-q.txt" 2>/dev/null | sed 's/^ */driver-/' >>"$OUTDIR/machine.txt"
else
    echo "nvidia-smi: not found" >"$OUTDIR/nvidia-smi-q.txt"
fi
GPU_NOTE=""
if [ "$NGPU" -eq 0 ]; then
    GPU_NOTE="no GPU (nvidia-smi $(command -v nvidia-smi >/dev/null 2>&1 && echo 'lists none' || echo 'not found'))"
fi
echo "gpus $NGPU${GPU_NOTE:+: $GPU_NOTE}" >>"$OUTDIR/machine.txt"
NVCC=$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })
[ -n "$NVCC" ] && "$NVCC" --version 2>&1 | tail -n 2 | sed 's/^/nvcc /' >>"$OUTDIR/machine.txt"
sed 's/^/# /' "$OUTDIR/machine.txt" | tee -a "$REPORT"

# ---- the bundle ---------------------------------------------------------------------
# unpacked once per bundle (a stamp of its checksum), reused on a warm machine
sum=$(cksum <"$BUNDLE" | cut -d' ' -f1)
if [ "$(cat "$UNPACK/.stamp" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$UNPACK" && mkdir -p "$UNPACK" || die "cannot create $UNPACK"
    if xz --version >/dev/null 2>&1; then
        timeout 120 tar -C "$UNPACK" -xJf "$BUNDLE" || die "cannot unpack $BUNDLE"
    else # no xz-utils: Python's tarfile reads xz too
        timeout 120 python3 -c 'import sys, tarfile
kw = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
tarfile.open(sys.argv[1]).extractall(sys.argv[2], **kw)' \
            "$BUNDLE" "$UNPACK" || die "cannot unpack $BUNDLE (no xz, and python3 failed)"
    fi
    echo "$sum" >"$UNPACK/.stamp"
fi
B=$UNPACK/collprof-gpu
[ -f "$B/MANIFEST" ] || die "$BUNDLE holds no collprof-gpu/MANIFEST"
sed 's/^/# bundle /' "$B/MANIFEST" | grep -v '^# bundle libs ' | tee -a "$REPORT"
PREFIX=$(awk '$1 == "prefix" { print $2 }' "$B/MANIFEST")

# each tree at its absolute path: a link into the bundle where the path is
# missing (or is such a link already), the machine's own where it exists
for t in $(awk '$1 == "trees" { $1 = ""; print }' "$B/MANIFEST"); do
    if [ -L "$t" ] && [ "$(readlink "$t")" = "$B/root$t" ]; then
        echo "tree $t: linked to the bundle"
    elif [ -e "$t" ]; then
        echo "tree $t: the machine's own"
    else
        mkdir -p "$(dirname "$t")" && ln -s "$B/root$t" "$t" &&
            echo "tree $t: linked to the bundle" || echo "tree $t: cannot link (missing)"
    fi
done >"$OUTDIR/trees.txt" 2>&1
sed 's/^/# /' "$OUTDIR/trees.txt" | tee -a "$REPORT"
COLLPROF=$PREFIX/bin/collprof
[ -x "$COLLPROF" ] || die "no $COLLPROF after linking the trees"

# a private folder with only the sonames this machine lacks
PRIV=$UNPACK/lib
rm -rf "$PRIV" && mkdir -p "$PRIV" || die "cannot create $PRIV"
have_soname() {
    ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s && /x86-64/ { f = 1 } END { exit !f }' ||
        [ -e "/usr/lib/x86_64-linux-gnu/$1" ] || [ -e "/lib64/$1" ]
}
for f in "$B"/lib/*; do
    s=$(basename "$f")
    [ "${CP_GPU_ASSUME_MISSING:-}" = all ] || ! have_soname "$s" || continue
    ln -s "$f" "$PRIV/$s"
done

# NCCL and the CUDA runtime: the pip wheels' copies (nvidia/ in Python's site
# folders) first, then /usr/local/cuda's, the site folders', and the root
# file system's when none was found there
SITES=$(timeout 30 env LD_LIBRARY_PATH="$ORIG_LDLP" python3 -c \
    'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
find_libs() { # SONAME: the folders holding it, in that order
    local d
    {
        # shellcheck disable=SC2086 # one folder per word
        for d in $(for s in $SITES; do echo "$s/nvidia"; done) /usr/local/cuda/lib64 \
            /usr/local/cuda/targets/x86_64-linux/lib $SITES; do
            [ -d "$d" ] && timeout 30 find "$d/" -name "$1" -print 2>/dev/null | head -n 4
        done
    } | sed 's|//*|/|g; s|/[^/]*$||' | awk '!seen[$0]++' >"$UNPACK/found"
    [ -s "$UNPACK/found" ] || timeout 40 find / -xdev \( -path /proc -o -path /sys -o -path "$UNPACK" \) \
        -prune -o -name "$1" -print 2>/dev/null | head -n 4 | sed 's|/[^/]*$||' >"$UNPACK/found"
    cat "$UNPACK/found"
}
CUDART_SONAME=$(awk '$1 == "cudart-soname" { print $2 }' "$B/MANIFEST")
CUDART_DIR=$(find_libs "${CUDART_SONAME:-libcudart.so.13}" | head -n 1)
# the first NCCL that leaves the plugin no undefined symbol (one older than
# the 2.28.9 it was built with may lack an entry point it links)
PLUGIN=$B/root$PREFIX/lib/collprof/collprof_nccl.so
NCCL_DIR=
for d in $(find_libs libnccl.so.2); do
    n=$(LD_LIBRARY_PATH="$d${CUDART_DIR:+:$CUDART_DIR}:$PRIV" ldd -r "$PLUGIN" 2>&1 | grep -c 'undefined symbol')
    echo "libnccl.so.2 in $d: $n undefined symbol(s) in the plugin" >>"$OUTDIR/machine.txt"
    [ -z "$NCCL_DIR" ] && NCCL_DIR=$d # the first, should none fit
    if [ "$n" -eq 0 ]; then
        NCCL_DIR=$d
        break
    fi
done
echo "libnccl.so.2 taken from ${NCCL_DIR:-(not found)}" >>"$OUTDIR/machine.txt"
echo "libcudart in ${CUDART_DIR:-(not found)}" >>"$OUTDIR/machine.txt"
say "# libnccl.so.2 in ${NCCL_DIR:-(not found)}; ${CUDART_SONAME:-libcudart} in ${CUDART_DIR:-(not found)}"
[ "$CUDART_DIR" = "$NCCL_DIR" ] && CUDART_DIR=
export LD_LIBRARY_PATH="${NCCL_DIR:+$NCCL_DIR:}${CUDART_DIR:+$CUDART_DIR:}$PRIV${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# a soname the machine has but too old for the bundle ("version ... not
# found"): take the bundle's instead, unless it is glibc itself
elfs=$(find "$B/root$PREFIX" "$B/bench" -type f \( -perm -u+x -o -name '*.so' \) 2>/dev/null)
for pass in 1 2; do
    # shellcheck disable=SC2086 # one path per word
    bad=$(for f in $elfs; do ldd "$f" 2>&1; done | awk -F': version ' '/: version .* not found/ {
        n = split($1, a, ": "); sub(/^[ \t]+/, "", a[n]); print a[n] }' | sort -u)
    [ -n "$bad" ] || break
    for p in $bad; do
        s=$(basename "$p")
        if [ -e "$B/lib/$s" ] && [ ! -e "$PRIV/$s" ]; then
            ln -s "$B/lib/$s" "$PRIV/$s" && echo "too old here, the bundle's taken: $s ($p)"
        elif [ "$pass" = 2 ]; then
            echo "too old here and not in the bundle: $p"
        fi
    done
done >"$OUTDIR/libs.txt" 2>&1
# glibc itself too old for a library taken from the bundle: its compat copy
# (glibc versions above 2.34 weak) and the functions from libcp_glibc_compat.so
if [ -d "$B/compat" ] && { [ "${CP_GPU_ASSUME_OLD_GLIBC:-}" = 1 ] ||
    grep -q 'not in the bundle: .*/libc\.so\.6' "$OUTDIR/libs.txt"; }; then
    for f in "$B"/compat/*; do
        s=$(basename "$f")
        [ -e "$PRIV/$s" ] && ln -sfn "$f" "$PRIV/$s" && echo "glibc too old: the compat copy of $s" >>"$OUTDIR/libs.txt"
    done
    export LD_PRELOAD="$B/compat/libcp_glibc_compat.so${LD_PRELOAD:+ $LD_PRELOAD}"
    echo "LD_PRELOAD=$LD_PRELOAD" >>"$OUTDIR/libs.txt"
fi
{
    echo "private libs ($PRIV): $(ls "$PRIV" | tr '\n' ' ')"
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    # shellcheck disable=SC2086
    for f in $elfs; do ldd "$f" 2>&1 | grep -E 'not found' | sed "s|^|$(basename "$f"): |"; done
} >>"$OUTDIR/libs.txt"
sed 's/^/# /' "$OUTDIR/libs.txt" | cut -c1-300 | tee -a "$REPORT"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo GLOO_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo
export COLLPROF_PLUGIN_PATH=$PREFIX/lib/collprof
# the bundled libhwloc would load the machine's hwloc plugins (another
# version, or their X/OpenCL libraries missing): none, as in the bundle's test
mkdir -p "$UNPACK/no-hwloc-plugins"
export HWLOC_PLUGINS_PATH=$UNPACK/no-hwloc-plugins
export PATH=$PREFIX/bin:$PATH
# a parent's NCCL choices would change what is measured (the device
# selection, CUDA_VISIBLE_DEVICES, is the machine's and stays as it is)
unset NCCL_ALGO NCCL_PROTO 2>/dev/null
# another Open MPI's or PMIx's install prefix (HPC-X, say) would misdirect the bundled ones
unset OPAL_PREFIX PMIX_INSTALL_PREFIX 2>/dev/null
env | grep -E '^(NCCL|CUDA|OMPI|OPAL|PMIX|HWLOC|LD_LIBRARY_PATH|LD_PRELOAD|COLLPROF)' | sort >"$OUTDIR/env.txt"

# versions of the pip wheels (torch, nvidia-*), with the machine's untouched environment
timeout 30 env LD_LIBRARY_PATH="$ORIG_LDLP" python3 -c '
import importlib.metadata as m
for d in sorted(m.distributions(), key=lambda d: d.metadata["Name"].lower()):
    n = d.metadata["Name"].lower()
    if n.startswith(("torch", "nvidia")): print("pip", d.metadata["Name"], d.version)
' >>"$OUTDIR/machine.txt" 2>/dev/null
grep -i -E '^pip (torch|nvidia-nccl|nvidia-cuda-runtime)' "$OUTDIR/machine.txt" | sed 's/^/# /' | tee -a "$REPORT"

# ---- the steps (reserves: what the later steps need at least) -------------------------
GPU=1
[ "$NGPU" -gt 0 ] || [ "$FORCE" = 1 ] || GPU=0
run_step version 30 "matrix profiler gaps compare compare-pinned check-gpu" "" sh -c '"$1" --version && echo && "$1" --list' sh "$COLLPROF"
grep -h -o 'NCCL[X]* [0-9][^ ]* ([^)]*)[^|]*' "$LOGS/version.log" 2>/dev/null | head -n 1 | sed 's/^/# nccl as loaded: /' |
    tee -a "$REPORT"

mkdir -p "$OUTDIR/matrix" "$OUTDIR/compare" "$OUTDIR/sanitizer"
if [ "$GPU" = 1 ]; then
    run_step matrix 110 "profiler gaps compare compare-pinned check-gpu" "default matrix, 1 rank" \
        "$COLLPROF" --np 1 --backends nccl -v --output-dir "$OUTDIR/matrix"
else
    skip_step matrix "$GPU_NOTE"
fi

# collprof's NCCL profiler plugin (docs/replay.md, "Recording from NCCL programs"): the nccl
# backend recorded through NCCL_PROFILER_PLUGIN, the trace imported; files kept in profiler/
mkdir -p "$OUTDIR/profiler"
if [ "$GPU" = 1 ]; then
    run_step profiler 60 "gaps compare compare-pinned check-gpu" "NCCL profiler plugin, one rank per GPU" \
        env COLLPROF_BIN="$COLLPROF" COLLPROF_SRCDIR="$SRC" CP_KEEP_DIR="$OUTDIR/profiler" \
        CP_TIMEOUT=45 sh tests/integration/nccl_profiler_gpu.sh
    grep -E '^(ok|not ok|# NCCL:|# [0-9]+ ops)' "$LOGS/profiler.log" 2>/dev/null | cut -c1-300 |
        sed 's/^/# profiler: /' | tee -a "$REPORT"
else
    skip_step profiler "$GPU_NOTE"
fi

# collprof --replay --gaps compute on nccl (docs/replay.md "Gaps"): each gap a busy kernel on
# the device beside the collectives' stream; the exposed communication figures
if [ "$GPU" = 1 ]; then
    run_step gaps 60 "compare compare-pinned check-gpu" "replay --gaps compute, busy kernel, one rank per GPU" \
        env COLLPROF_BIN="$COLLPROF" COLLPROF_SRCDIR="$SRC" CP_TIMEOUT=45 \
        sh tests/integration/nccl_gpu_gaps.sh
    grep -E '^(ok|not ok|# .*busy kernel|# exposed|# whole trace|# CUDA_DISABLE)' "$LOGS/gaps.log" 2>/dev/null |
        cut -c1-300 | sed 's/^/# gaps: /' | tee -a "$REPORT"
else
    skip_step gaps "$GPU_NOTE"
fi

LOOP=$B/bench/nccl_loop
if [ "$GPU" = 0 ]; then
    skip_step compare "$GPU_NOTE"
elif [ ! -x "$LOOP" ]; then
    skip_step compare "the bundle has no bench/nccl_loop"
else
    cmp=(env TMPDIR="$OUTDIR/compare" bash bench/nccl_compare.sh --collprof "$COLLPROF"
        --plugin-path "$COLLPROF_PLUGIN_PATH" --nccl-loop "$LOOP"
        --ops allreduce,allgather,reducescatter,broadcast,sendrecv --keep)
    read -ra w <<<"$CMP_ARGS" && cmp+=("${w[@]}")
    # the machine's CPU time while they run, every 50 ms with the wall clock as collprof's
    # log lines write it: /proc/stat's cpu line (user nice system idle iowait irq softirq
    # steal ...) and the load.  Some collprof launches start 3-12x slow on the host for about
    # 80 ms (docs/nccl.md, "Validated on"): steal time rising with them would name the cause.
    (while :; do
        printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)" "$(head -n 1 /proc/stat)" \
            "$(cut -d' ' -f1-4 /proc/loadavg)"
        sleep 0.05
    done) >"$OUTDIR/compare/cpu.txt" 2>/dev/null &
    sampler=$!
    run_step compare 200 "compare-pinned check-gpu" "5 ops, 8 B-256 MB unless: $CMP_ARGS" "${cmp[@]}"
    # where the host's launch rate bounds both (small sizes), where each runs decides it: the
    # same with both programs on the last two CPUs this process may use (on one, collprof's
    # helper threads share the launching thread's CPU: 2026-11-26 pinned to one)
    cpu=$(awk '/^Cpus_allowed_list:/ { n = split($2, a, /[,-]/); print a[n] }' /proc/self/status)
    [ "${cpu:-0}" -gt 0 ] 2>/dev/null && cpu="$((cpu - 1)),$cpu"
    run_step compare-pinned 200 check-gpu "5 ops, 8 B-256 MB unless: $CMP_ARGS, CPUs ${cpu:-0}" "${cmp[@]}" \
        --pin "${cpu:-0}"
    kill "$sampler" 2>/dev/null
    wait "$sampler" 2>/dev/null
fi

SAN=$(command -v compute-sanitizer ||
    ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
if [ "$GPU" = 0 ]; then
    skip_step sanitizer "$GPU_NOTE"
elif [ -z "$SAN" ]; then
    skip_step sanitizer "no compute-sanitizer"
else
    # one rank in this process (no --np: no child to follow); options this
    # compute-sanitizer does not list are left out
    help=$(timeout 30 "$SAN" --help 2>&1)
    san_opts=(--tool memcheck --error-exitcode 9)
    for o in "--target-processes all" "--print-limit 100000"; do
        case $help in *"${o%% *}"*) read -ra w <<<"$o" && san_opts+=("${w[@]}") ;; esac
    done
    run_step sanitizer 80 check-gpu "memcheck, one rank (rc 9: it reported something; see sanitizer-triage)" "$SAN" "${san_opts[@]}" \
        "$COLLPROF" --backends nccl --variants default,reg,graph,p2p --ops all \
        --counts 1K,64K -n 2 -w 1 --timeout 300 --output-dir "$OUTDIR/sanitizer"
    run_step sanitizer-triage 10 "" "memory errors, API errors outside NCCL" \
        sh contrib/gpu/san_triage.sh "$LOGS/sanitizer.log"
fi

# make check-gpu's script, with the environment that target gives it; it skips
# itself (1..0 # SKIP) without a GPU, so it runs in every case
left=$((DEADLINE - $(date +%s) - 5))
run_step check-gpu "$left" "" "tests/integration/nccl_gpu.sh" env COLLPROF_BIN="$COLLPROF" \
    COLLPROF_SRCDIR="$SRC" CP_MPIRUN= CP_TIMEOUT=$((left > 20 ? left - 10 : 10)) \
    sh tests/integration/nccl_gpu.sh
grep -E '^(not ok|1\.\.|# [a-z -]*: [0-9]+ s$)' "$LOGS/check-gpu.log" 2>/dev/null | head -n 30 |
    sed 's/^/# check-gpu: /' | tee -a "$REPORT"
[ -f "$LOGS/check-gpu.log" ] && awk '/^ok / { o++ } /^not ok / { n++ }
    END { printf "# check-gpu: %d ok, %d not ok\n", o, n }' "$LOGS/check-gpu.log" | tee -a "$REPORT"

# ---- what came out ------------------------------------------------------------------------
s=$(ls "$OUTDIR"/matrix/collprof_*.txt 2>/dev/null | head -n 1)
[ -n "$s" ] && grep -m1 '^result:' "$s" | sed 's/^/# matrix /' | tee -a "$REPORT"
for c in compare compare-pinned; do
    grep -E '^(op |allreduce|allgather|reducescatter|broadcast|sendrecv|worst|verdicts|SLOWER|faster|pooled)' "$LOGS/$c.log" 2>/dev/null |
        sed "s/^/# $c: /" | tee -a "$REPORT"
done
grep -E 'ERROR SUMMARY|========= (Invalid|Program hit|Error)' "$LOGS/sanitizer.log" 2>/dev/null | sort | uniq -c |
    head -n 10 | sed 's/^/# sanitizer: /' | tee -a "$REPORT"
sed 's/^/# sanitizer-triage: /' "$LOGS/sanitizer-triage.log" 2>/dev/null | tee -a "$REPORT"
say "# steps (steps.tsv):"
awk -F'\t' '{ printf "#   %-10s %-8s %-4s %-7s %-6s %s\n", $1, $2, $3, $4, $5, $6 }' "$TSV" | tee -a "$REPORT"
# few files come back: pack everything but the overview
z=J ext=xz
xz --version >/dev/null 2>&1 || z=z ext=gz
packed=$UNPACK/results.tar.$ext
(cd "$OUTDIR" && find . -mindepth 1 -maxdepth 1 ! -name steps.tsv ! -name report.txt >"$UNPACK/pack.list" &&
    timeout 60 tar -c${z}f "$packed" -T "$UNPACK/pack.list" && mv "$packed" "results.tar.$ext" &&
    xargs rm -rf <"$UNPACK/pack.list") || say "# could not pack the results: left as they are"
# a file over 16 MiB would not come back: then leave the .h5 files out
if [ "$(stat -c %s "$OUTDIR/results.tar.$ext" 2>/dev/null || echo 0)" -gt $((15 * 1048576)) ]; then
    x=$UNPACK/results.x
    rm -rf "$x" && mkdir -p "$x" && tar -C "$x" -x${z}f "$OUTDIR/results.tar.$ext" &&
        find "$x" -name '*.h5' -delete && tar -C "$x" -c${z}f "$OUTDIR/results.tar.$ext" . &&
        say "# results.tar.$ext: over 15 MiB, .h5 files left out"
    rm -rf "$x"
fi
echo "# results: $(ls -l "$OUTDIR" | awk 'NR > 1 { printf "%s (%d B) ", $NF, $5 }')"
echo "# done in $(($(date +%s) - START)) s (budget $BUDGET s)"
exit 0
