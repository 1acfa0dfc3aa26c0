#!/bin/sh
# Build collprof's libFuzzer harnesses (tests/fuzz/) with clang, ASan and
# UBSan in ./build-fuzz, and run each for SECONDS (default 15) from the
# committed corpus.  New inputs go to a scratch directory, so the committed
# corpus only changes when you copy them in.  Exit status 1 on any crash,
# leak or sanitizer report.
#   contrib/fuzz.sh [SECONDS] [HARNESS...]     harnesses: sizes matrix traffic h5read import
set -eu
secs=${1:-15}
case $secs in
'' | *[!0-9]*)
    echo "fuzz: '$secs' is not a number of seconds (usage: contrib/fuzz.sh [SECONDS] [HARNESS...])" >&2
    exit 2
    ;;
esac
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/.." && pwd)
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang not found: skipping"; exit 0; }
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build-fuzz
cd build-fuzz
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
if [ ! -f config.status ] || [ ../configure -nt config.status ]; then
    ../configure CC=clang CFLAGS="-g -O1 $san -fsanitize=fuzzer-no-link" LDFLAGS="$san" \
        --disable-shared >/dev/null
fi
hdf5_built=$(grep -c '^#define CP_HAVE_HDF5 1' config.h || true)
make -j"$(nproc)" libcpoutput.la >/dev/null
[ "$hdf5_built" -eq 0 ] || make -j"$(nproc)" libcpreader.la >/dev/null
pmix=$(pkg-config --cflags --libs pmix)
hdf5=$(pkg-config --cflags --libs hdf5 2>/dev/null || echo "-lhdf5")
# import's JSON reader (src/report/import/json.c)
yajl=$(pkg-config --cflags --libs yajl 2>/dev/null || echo "-lyajl")
# the control channel's HMAC (libcpboot's tcp_auth.c)
nettle=$(pkg-config --cflags --libs nettle 2>/dev/null || echo "-lnettle")
inc="-I. -I../include -I../src -I../tests/fuzz"
cc="clang -g -O1 $san -fsanitize=fuzzer $inc"
# the libraries bottom last (Makefile.am): util is what needs neither PMIx nor HDF5
util=".libs/libcpformat.a .libs/libcpscreen.a .libs/libcpcolls.a .libs/libcpbase.a"
core=".libs/libcpoutput.a .libs/libcprunner.a .libs/libcpboot.a $util"
$cc ../tests/fuzz/fuzz_sizes.c $core $pmix $hdf5 $nettle -ldl -lpthread -lm -o fuzz_sizes
$cc ../tests/fuzz/fuzz_matrix.c $core $pmix $hdf5 $nettle -ldl -lpthread -lm -o fuzz_matrix
$cc ../tests/fuzz/fuzz_traffic.c $util -lm -o fuzz_traffic
$cc ../tests/fuzz/fuzz_import.c ../src/report/import/json.c ../src/report/import/json_text.c \
    ../src/report/import/import_rows.c \
    ../src/report/import/import_nccl.c ../src/report/import/import_osu.c $util $yajl -lm \
    -o fuzz_import
if [ "$hdf5_built" -ne 0 ]; then
    # shellcheck disable=SC2086
    $cc ../tests/fuzz/fuzz_h5read.c .libs/libcpreader.a $hdf5 -lm -o fuzz_h5read
fi
list=${*:-sizes matrix traffic h5read import}
status=0
# libhdf5 trusts the lengths written in a file: a crafted 68-byte file made it
# realloc 4 GiB and zero-fill it (RSS 3 GB) before failing.  On a real
# machine that allocation succeeds or fails and collprof-report then reports
# the file as unreadable; here single allocations above 1 GiB fail (NULL, as
# under a memory limit), so the fuzzer judges our handling, not the size of
# libhdf5's buffers.  That input is kept in the corpus (oom-hdf5-realloc).
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1:max_allocation_size_mb=1024
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
for h in $list; do
    [ -x "fuzz_$h" ] || { echo "fuzz: $h not built (needs HDF5?): skipping"; continue; }
    scratch=$(mktemp -d)
    echo "fuzz: $h for ${secs}s"
    if ! "./fuzz_$h" -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$scratch/" "$scratch" "../tests/fuzz/corpus/$h" \
        >"$scratch.log" 2>&1; then
        echo "fuzz: $h FAILED; the input is in $scratch:"
        tail -40 "$scratch.log"
        status=1
    else
        grep -E 'stat::number_of_executed_units|stat::new_units_added' "$scratch.log" | tr '\n' ' '
        echo
        rm -rf "$scratch"
    fi
    rm -f "$scratch.log"
done
exit $status
