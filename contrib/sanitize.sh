#!/bin/sh
# Build collprof with AddressSanitizer and UndefinedBehaviorSanitizer in
# ./build-asan and run the whole test suite under them, leak checking on.
# Memory that Open MPI and PMIx keep until exit is suppressed by library
# (tests/lsan.supp); collprof's own code is not.  Exit status: make check's.
# Stacks are not symbolized during the run: symbolizing every suppressed leak
# of Open MPI at each rank's exit cost about 12 s per launch, a third of the
# stage.  Reports still name module and offset (addr2line -e MODULE OFFSET);
# when a test fails, the failed tests run again symbolized for their logs.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build-asan
cd build-asan
if [ ! -f config.status ] || [ ../configure -nt config.status ]; then
    ../configure --enable-werror \
        CFLAGS="-g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
        LDFLAGS="-fsanitize=address,undefined" >/dev/null
fi
make -j"$(nproc)" >/dev/null
# exact stacks (Open MPI's components lack frame pointers) and components
# kept loaded, so suppressions can name the libraries
export ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:abort_on_error=0:symbolize=0
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMPI_MCA_mca_base_component_disable_dlclose=1 PMIX_MCA_mca_base_component_disable_dlclose=1
# instrumented runs are 2-3x slower: give each collprof command more time
export CP_TIMEOUT=${CP_TIMEOUT:-600}
# and too noisy for the tests that judge speed (collprof-report compare)
export CP_TIMING_UNRELIABLE=1
rc=0
make -j"$(nproc)" check || rc=$?
if [ "$rc" -ne 0 ]; then
    echo "sanitizers: running the failed tests again with symbolized stacks (their logs)"
    ASAN_OPTIONS=${ASAN_OPTIONS%:symbolize=0} make -j"$(nproc)" recheck >/dev/null 2>&1 || true
    grep -H -A 24 -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' tests/*.log tests/*/*.log \
        2>/dev/null | head -n 120 || true
fi
# where the time went (each test's log ends with "# took N s")
echo "slowest tests under the sanitizers:"
grep -H '^# took' tests/*.log tests/*/*.log 2>/dev/null | sed 's/:# took / /' | sort -k2 -n -r |
    head -n 8 | sed 's/^/  /'
exit "$rc"
