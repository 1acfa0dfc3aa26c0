#!/bin/bash
# contrib/gpu/bundle.sh: build collprof here and pack everything a bare GPU
# machine lacks into one xz tarball, .gpu/collprof-gpu.tar.xz of the checkout
# (a folder git ignores, so that it can travel beside the source tree).
# contrib/gpu/run.sh unpacks and uses it there.  See docs/gpu-run.md.
#
# What goes in (top folder collprof-gpu/):
#   root/tmp/cp/...   collprof installed with --prefix=/tmp/cp (the same
#                     absolute prefix on both machines: no relocation)
#   root/usr/...,     the component and data trees PMIx and Open MPI load at
#   root/etc/...      run time, at the paths they have here
#   lib/              the shared-library closure (ldd) of all the ELF files
#                     above, one file per soname, without glibc's own
#                     libraries and without libnccl, libcuda and libcudart
#                     (the GPU machine has its own)
#   bench/nccl_loop   the plain NCCL loop, where configure found CUDA and NCCL
#   MANIFEST          provenance: commit, versions, trees, glibc needed
# Exit status: 0 tarball written, 1 failed, 2 bad usage.
set -u
NAME=bundle.sh
PREFIX=/tmp/cp
BUILD=/tmp/cp-build
JOBS=2
MAX_MIB=60
TREES="/usr/lib/x86_64-linux-gnu/pmix2 /usr/lib/x86_64-linux-gnu/openmpi /usr/share/openmpi
/etc/openmpi /usr/lib/x86_64-linux-gnu/hdf5/serial/plugins /usr/local/hdf5/lib/plugin"

usage() {
    cat <<'EOF'
Usage: contrib/gpu/bundle.sh [OPTIONS]
Configures, builds and installs collprof from the checkout this script is in
(in a scratch build folder), collects what a machine without collprof's
Debian dependencies needs to run it, and writes .gpu/collprof-gpu.tar.xz in
the checkout.  Run it under nice on a shared machine.

  --prefix DIR     install prefix, the same path on the GPU machine (default /tmp/cp)
  --build-dir DIR  scratch build folder, made afresh (default /tmp/cp-build)
  -j N             parallel make jobs (default 2)
  -h, --help       this help
Both folders are removed first if an earlier run of this script made them;
a folder it did not make is refused.
EOF
}

# die, bad_usage, need_arg: the bench scripts' helpers
# shellcheck source=../../bench/lib.sh
. "$(dirname "$0")/../../bench/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
    --prefix) need_arg "$1" $#; PREFIX=$2; shift 2 ;;
    --build-dir) need_arg "$1" $#; BUILD=$2; shift 2 ;;
    -j) need_arg "$1" $#; JOBS=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) bad_usage "unknown argument '$1'" ;;
    esac
done
case $PREFIX in /?*) ;; *) bad_usage "--prefix must be an absolute path" ;; esac
case $BUILD in /?*) ;; *) bad_usage "--build-dir must be an absolute path" ;; esac
case $JOBS in '' | *[!0-9]* | 0) bad_usage "-j needs a positive integer" ;; esac

SRC=$(cd "$(dirname "$0")/../.." && pwd) || die "cannot find the checkout"
[ -f "$SRC/configure.ac" ] && [ -f "$SRC/src/collprof.c" ] || die "$SRC is not a collprof checkout"
[ ! -e "$SRC/config.status" ] ||
    die "$SRC is configured in place; a separate build folder needs a clean source tree (make distclean there)"
MARK=.collprof-gpu-scratch

# fresh DIR: remove it when an earlier run made it (marker inside), refuse otherwise
fresh_dir() {
    # run.sh's link from the prefix into an unpacked bundle (a test run here)
    case $(readlink "$1" 2>/dev/null) in */collprof-gpu/root"$1") rm -f "$1" ;; esac
    if [ -e "$1" ]; then
        [ -e "$1/$MARK" ] || die "$1 exists and was not made by this script: move it away or choose another path"
        rm -rf "$1" || die "cannot remove $1"
    fi
    mkdir -p "$1" && touch "$1/$MARK" || die "cannot create $1"
}

# ---- configure, build, install ------------------------------------------------
step() { printf '%s: %s\n' "$NAME" "$*"; }
fresh_dir "$BUILD"
fresh_dir "$PREFIX"
if [ ! -x "$SRC/configure" ]; then
    step "autogen.sh"
    (cd "$SRC" && ./autogen.sh) >"$BUILD/autogen.log" 2>&1 || die "autogen.sh failed: see $BUILD/autogen.log"
fi
cd "$BUILD" || die "cannot enter $BUILD"
run_logged() { # LOG COMMAND...
    local log=$1
    shift
    "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "'$*' failed: see $log"; }
}
step "configure --prefix=$PREFIX in $BUILD"
run_logged configure.log "$SRC/configure" --prefix="$PREFIX" --enable-werror
step "make -j$JOBS"
run_logged make.log make -j"$JOBS"
run_logged install.log make install
[ -x "$PREFIX/bin/collprof" ] || die "make install left no $PREFIX/bin/collprof"

STAGE=$BUILD/stage/collprof-gpu
mkdir -p "$STAGE/root" "$STAGE/lib" "$STAGE/bench" || die "cannot create $STAGE"

# nccl_loop.c is plain C against the CUDA runtime and NCCL headers (no nvcc):
# configure's CUDA/NCCL detection decides, as for the plugin
if [ -e "$PREFIX/lib/collprof/collprof_nccl.so" ]; then
    step "make bench/nccl_loop (the nccl plugin was built; nvcc is not needed: $(command -v nvcc || echo 'no nvcc here'))"
    run_logged nccl_loop.log make bench/nccl_loop
    cp bench/nccl_loop "$STAGE/bench/" || die "cannot copy bench/nccl_loop"
else
    step "the nccl plugin was not built (configure found no CUDA/NCCL): no bench/nccl_loop, and no GPU path"
fi

# ---- the trees ------------------------------------------------------------------
mkdir -p "$STAGE/root$(dirname "$PREFIX")"
cp -a "$PREFIX" "$STAGE/root$PREFIX" || die "cannot copy $PREFIX"
rm -f "$STAGE/root$PREFIX/$MARK"
trees="$PREFIX"
for t in $TREES; do
    [ -d "$t" ] || continue
    mkdir -p "$STAGE/root$(dirname "$t")"
    cp -a "$t" "$STAGE/root$t" || die "cannot copy $t"
    trees="$trees $t"
done
step "trees: $trees"

# ---- the shared-library closure -------------------------------------------------
# glibc's own files (package libc6), found once; the GPU machine's glibc serves
glibc_files=$BUILD/glibc.files
dpkg -L libc6 2>/dev/null | while read -r f; do [ -f "$f" ] && readlink -f "$f"; done | sort -u >"$glibc_files"
[ -s "$glibc_files" ] || die "cannot list libc6's files (dpkg -L libc6)"
elfs=$BUILD/elfs
find "$STAGE/root" "$STAGE/bench" -type f \( -perm -u+x -o -name '*.so' -o -name '*.so.*' \) |
    while read -r f; do
        [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"
    done >"$elfs"
missing=$BUILD/not-found
: >"$missing"
while read -r f; do
    ldd "$f" 2>/dev/null | awk -v f="$f" -v miss="$missing" '
        $2 == "=>" && $3 == "not" { print $1, f >>miss; next }
        $2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done <"$elfs" | sort -u >"$BUILD/closure"
nlib=0
while read -r soname path; do
    case $soname in
    libnccl.so* | libcuda.so* | libcudart.so*) continue ;;
    esac
    grep -qxF "$(readlink -f "$path")" "$glibc_files" && continue
    [ -e "$STAGE/lib/$soname" ] && continue
    cp -L "$path" "$STAGE/lib/$soname" || die "cannot copy $path"
    nlib=$((nlib + 1))
done <"$BUILD/closure"
step "closure: $nlib libraries (glibc, libnccl, libcuda, libcudart left out)"
if [ -s "$missing" ]; then
    step "not found by ldd here (left out; only these components would miss them):"
    sort -u "$missing" | awk '{ n[$1] = n[$1] " " $2 } END { for (s in n) print "  " s ":" n[s] }' |
        sed "s|$STAGE/root||g" | cut -c1-200
fi

# ---- for a glibc older than this one -----------------------------------------
# A library that needs a newer glibc only for the arc4random family (2.36:
# libevent, libstdc++) gets a compat copy whose glibc versions above
# COMPAT_BASE are weak, and libcp_glibc_compat.so provides the functions;
# run.sh uses both only where the machine's glibc is too old.
COMPAT_BASE=2.34
SHIMMED="arc4random arc4random_buf arc4random_uniform"
mkdir -p "$STAGE/compat"
if ! cc -O2 -Wall -Wextra -Werror -shared -fPIC -o "$STAGE/compat/libcp_glibc_compat.so" \
    "$SRC/contrib/gpu/glibc_compat.c" 2>"$BUILD/compat.log"; then
    step "no glibc compat library (see $BUILD/compat.log)"
    rm -rf "$STAGE/compat"
else
    for f in "$STAGE"/lib/*; do
        newer=$(objdump -T "$f" 2>/dev/null | awk -v base="$COMPAT_BASE" '
            /\*UND\*/ && match($0, /\(GLIBC_2\.[0-9.]+\)/) {
                v = substr($0, RSTART + 7, RLENGTH - 8); split(v, a, "."); split(base, b, ".")
                if (a[1] * 1000 + a[2] > b[1] * 1000 + b[2]) print $NF }' | sort -u)
        [ -n "$newer" ] || continue
        other=$(for n in $newer; do case " $SHIMMED " in *" $n "*) ;; *) echo "$n" ;; esac; done)
        if [ -n "$other" ]; then
            step "no compat copy of $(basename "$f"): it needs $(echo "$other" | tr '\n' ' ')from glibc > $COMPAT_BASE"
            continue
        fi
        python3 "$SRC/contrib/gpu/weak_glibc_versions.py" "$f" "$STAGE/compat/$(basename "$f")" "$COMPAT_BASE" \
            >/dev/null || die "cannot make a compat copy of $f"
    done
    step "glibc compat (glibc $COMPAT_BASE and newer): $(cd "$STAGE/compat" && ls | tr '\n' ' ')"
fi

# ---- provenance -------------------------------------------------------------------
glibc_need=$(while read -r f; do objdump -T "$f" 2>/dev/null; done <"$elfs" |
    grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V | tail -n 1)
for f in "$STAGE"/lib/*; do objdump -T "$f" 2>/dev/null; done | grep -o 'GLIBC_[0-9][0-9.]*' |
    sort -u -V | tail -n 1 >"$BUILD/glibc.libs"
{
    echo "made $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) ($(. /etc/os-release && echo "$PRETTY_NAME"))"
    echo "commit $(git -C "$SRC" describe --always --dirty 2>/dev/null || echo unknown)"
    echo "prefix $PREFIX"
    echo "trees $trees"
    echo "glibc-here $(ldd --version 2>/dev/null | head -n 1)"
    echo "glibc-needed collprof:$glibc_need libs:$(cat "$BUILD/glibc.libs")"
    echo "version $("$PREFIX/bin/collprof" --version 2>&1 | head -n 1)"
    echo "nccl-built-with $(grep -h -o 'NCCL [0-9][0-9.]*[^)]*)' <("$PREFIX/bin/collprof" --list 2>&1) | head -n 1)"
    echo "nccl_loop $([ -x "$STAGE/bench/nccl_loop" ] && echo yes || echo no)"
    echo "cudart-soname $(awk '$1 ~ /^libcudart\.so/ { print $1; exit }' "$BUILD/closure")"
    echo "libs $(cd "$STAGE/lib" && ls | tr '\n' ' ')"
    echo "compat $([ -d "$STAGE/compat" ] && cd "$STAGE/compat" && ls | tr '\n' ' ')"
} >"$STAGE/MANIFEST"

# ---- the tarball --------------------------------------------------------------------
if ! git -C "$SRC" check-ignore -q .gpu/x 2>/dev/null; then
    excl=$(git -C "$SRC" rev-parse --git-path info/exclude 2>/dev/null) || die "not a git checkout: $SRC"
    case $excl in /*) ;; *) excl=$SRC/$excl ;; esac
    mkdir -p "$(dirname "$excl")" && echo '/.gpu/' >>"$excl" || die "cannot write $excl"
    step "added /.gpu/ to $excl"
fi
mkdir -p "$SRC/.gpu" || die "cannot create $SRC/.gpu"
out=$SRC/.gpu/collprof-gpu.tar.xz
step "packing (xz)"
tar -C "$BUILD/stage" -cf - collprof-gpu | xz -T"$JOBS" -6 >"$out.tmp" && mv "$out.tmp" "$out" ||
    die "cannot write $out"
bytes=$(stat -c %s "$out")
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
step "wrote $out: $mib MiB ($(du -sh "$BUILD/stage" | cut -f1) unpacked; $nlib libraries)"
step "glibc needed: collprof $glibc_need, libs $(cat "$BUILD/glibc.libs") (here: $(ldd --version | head -n 1 | awk '{ print $NF }'))"
[ "$bytes" -le $((MAX_MIB * 1048576)) ] || die "the tarball is over $MAX_MIB MiB: it would not travel (64 MiB in all)"
exit 0
