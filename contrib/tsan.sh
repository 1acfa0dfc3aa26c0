#!/bin/sh
# Build collprof with ThreadSanitizer in ./build-tsan and run the parts that
# use threads: the unit tests of the watchdog, the TCP control tree, the
# agreement and the runner (forked ranks, each with its watchdog or copier
# threads), and short self-launched runs of 4 ranks on the self and gloo
# backends (the watchdog, PMIx's threads, Gloo's).  A subset, to fit the
# test command's budget (about 1.5 min on 2 cores): only these targets are
# built, and the rest of the suite runs under ASan/UBSan (contrib/sanitize.sh).
# The mpi backend is not run: under TSan, Open MPI 4.1's rank 0 crashes
# (SIGSEGV inside the library) before a cell completes.
# Any race, lock-order inversion or misuse TSan reports in collprof's code
# fails the stage: halt_on_error ends the process with status 66, and a
# report in any output fails it too.  Races inside the libraries' own
# threads are suppressed by library (tests/tsan.supp); collprof's are not.
# Exit status: 0, or 1 when a test failed or TSan reported.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build-tsan
cd build-tsan
if [ ! -f config.status ] || [ ../configure -nt config.status ]; then
    # the backends that run here only: no NCCL/CUDA, libfabric or libslurm to build
    ../configure --enable-werror --without-nccl --without-cuda --without-ofi --without-slurm \
        CFLAGS="-g -O1 -fsanitize=thread" CXXFLAGS="-g -O1 -fsanitize=thread" \
        LDFLAGS="-fsanitize=thread" >/dev/null
fi
UNITS="test_watchdog test_oobtcp test_agree test_runner"
targets="collprof collprof_self.la"
# the gloo backend where configure found Gloo (automake's conditional left it in the list)
if grep -q '^am__append_[0-9]* = collprof_gloo.la' Makefile; then
    targets="$targets collprof_gloo.la"
fi
for u in $UNITS; do
    targets="$targets tests/unit/$u.t"
done
# shellcheck disable=SC2086
make -j"$(nproc)" $targets >/dev/null
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$top/tests/tsan.supp"
export COLLPROF_PLUGIN_PATH="$PWD/.libs"
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo GLOO_SOCKET_IFNAME=lo
logs=$(mktemp -d)
out=$(mktemp -d)
rc=0
run() { # name, command...: its output in $logs/name.log
    name=$1
    shift
    start=$(date +%s)
    r=0
    timeout 300 "$@" >"$logs/$name.log" 2>&1 || r=$?
    # a report from a forked rank whose parent does not pass its status on fails it too
    if [ "$r" -eq 0 ] && grep -q 'WARNING: ThreadSanitizer' "$logs/$name.log"; then
        r=66
    fi
    echo "tsan: $name: $([ "$r" -eq 0 ] && echo ok || echo "FAILED ($r)") ($(($(date +%s) - start)) s)"
    if [ "$r" -ne 0 ]; then
        rc=1
        grep -A 30 -m 2 'WARNING: ThreadSanitizer' "$logs/$name.log" || tail -n 20 "$logs/$name.log"
    fi
}
for u in $UNITS; do
    run "$u" "./tests/unit/$u.t"
done
for b in self gloo; do
    [ -f ".libs/collprof_$b.so" ] || continue
    run "collprof-$b" ./collprof --np 4 --backends "$b" --ops allreduce --counts 1K -n 5 -w 1 \
        --output-dir "$out" --log-dir "$out"
done
rm -rf "$logs" "$out"
exit "$rc"
