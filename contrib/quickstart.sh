#!/bin/sh
# collprof quick start: install what is missing (Debian 12 packages, as
# root or through sudo), build in ./build, then
#   contrib/quickstart.sh run [collprof options]   profile 4 self-launched local ranks
#   contrib/quickstart.sh test                     build with -Werror and run the test suite:
#                                                  make distcheck (check from a clean tarball),
#                                                  then again under ASan/UBSan (contrib/sanitize.sh),
#                                                  then the threaded tests and short runs under
#                                                  ThreadSanitizer (contrib/tsan.sh),
#                                                  then 5 s of each fuzzer (contrib/fuzz.sh)
# All traffic stays on loopback.
set -eu

mode=${1:-run}
[ $# -gt 0 ] && shift
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# build: compilers, autotools, PMIx, Open MPI, HDF5, nettle (the control channel's HMAC); tests: h5dump, h5py, Chromium (plots),
# promtool and the node exporter (export --prom; tests/integration/prom.sh fails without them here)
PKGS="build-essential g++ autoconf automake libtool libtool-bin pkg-config libpmix-dev libpmix-bin
libopenmpi-dev openmpi-bin libhdf5-dev hdf5-tools libyajl-dev libprotobuf-c-dev protobuf-c-compiler libfabric-dev libfabric-bin libgloo-dev nettle-dev procps python3 python3-h5py python3-numpy"
[ "$mode" = test ] && PKGS="$PKGS clang libclang-rt-14-dev chromium python3-pandas python3-matplotlib slurmctld slurmd slurm-client
munge libslurm-dev iproute2 prometheus prometheus-node-exporter curl python3-xarray python3-pytest python3-nbconvert python3-ipykernel python3-pip lmod tcl man-db shellcheck"
# Environment Modules (tests/integration/modules.sh) conflicts with lmod in Debian: test mode
# unpacks its package here instead of installing it
ENVMODULES=/opt/environment-modules

need_root() { # WHAT
    if [ "$(id -u)" -eq 0 ]; then
        sudo=
    elif command -v sudo >/dev/null 2>&1; then
        sudo=sudo
    else
        echo "quickstart: error: need root (or sudo) to install:$1" >&2
        exit 1
    fi
}

install_packages() {
    missing=
    for p in $PKGS; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    echo "quickstart: installing Debian packages:$missing"
    need_root "$missing"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    # shellcheck disable=SC2086
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
}

build() {
    if [ ! -x configure ] || [ configure.ac -nt configure ]; then
        ./autogen.sh >/dev/null
    fi
    mkdir -p build
    if [ ! -f build/config.status ] || [ configure -nt build/config.status ]; then
        (cd build && ../configure --enable-werror --prefix="$top/build/install" >/dev/null)
    fi
    # test: configured only; make distcheck builds the same with -Werror, from the tarball
    # (building here too cost a minute and checked nothing more)
    [ "$mode" = test ] || make -C build -j"$(nproc)" >/dev/null
}

# loopback only, oversubscription allowed (4 ranks on a 2-core machine)
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo GLOO_SOCKET_IFNAME=lo NCCL_SOCKET_IFNAME=lo

# Debian's prometheus packages start prometheus and the node exporter, listening on every
# address: the tests run their own on 127.0.0.1, so stop these (systemd or init scripts)
stop_prometheus_services() {
    s=
    [ "$(id -u)" -eq 0 ] || s=sudo
    for u in prometheus prometheus-node-exporter; do
        if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
            $s systemctl disable --now "$u" >/dev/null 2>&1 || true
        elif [ -x "/etc/init.d/$u" ]; then
            $s "/etc/init.d/$u" stop >/dev/null 2>&1 || true
        fi
    done
}

unpack_envmodules() {
    [ -f "$ENVMODULES/usr/lib/modulecmd.tcl" ] && return 0
    echo "quickstart: unpacking environment-modules into $ENVMODULES"
    need_root " environment-modules"
    d=$(mktemp -d)
    (cd "$d" && $sudo env DEBIAN_FRONTEND=noninteractive apt-get download -qq environment-modules)
    $sudo dpkg-deb -x "$d"/environment-modules_*.deb "$ENVMODULES"
    rm -rf "$d"
}

install_packages
[ "$mode" = test ] && unpack_envmodules
build
case $mode in
run)
    export COLLPROF_PLUGIN_PATH="$top/build/.libs"
    exec "$top/build/collprof" --np 4 "$@"
    ;;
test)
    # Debian's prometheus package starts its daemons (on all addresses): the tests start their own
    stop_prometheus_services
    # a test that finds a tool missing fails rather than skips (tests/integration/lib.sh need_tool)
    export COLLPROF_CI=1
    log=$(mktemp)
    stamp=$(mktemp) # older than the suites' logs of this run
    # every test's time, whichever stage ran it (tests/timed.sh): the slowest are printed at the end
    CP_TEST_TIMES=$(mktemp)
    export CP_TEST_TIMES
    # POSIX sh has no pipefail: carry make's status out of the pipe in a file
    { rc=0
      make -C build -j"$(nproc)" distcheck DISTCHECK_CONFIGURE_FLAGS=--enable-werror 2>&1 || rc=$?
      [ "$rc" -eq 0 ] && { sh contrib/sanitize.sh 2>&1 || rc=$?; }
      [ "$rc" -eq 0 ] && { sh contrib/tsan.sh 2>&1 || rc=$?; }
      [ "$rc" -eq 0 ] && { sh contrib/fuzz.sh 5 2>&1 || rc=$?; }
      echo "$rc" >"$log.rc"; } | tee "$log"
    status=$(cat "$log.rc")
    # the console shows a test's PASS/FAIL line only: end with what each failed check said
    # (its "not ok" line and the diagnostics under it, from the suites' test-suite.log files)
    if [ "$status" -ne 0 ]; then
        find build build-asan -name test-suite.log -newer "$stamp" 2>/dev/null | while read -r f; do
            awk -v f="$f" '/^not ok / { print "== " f ": " $0; d = 25; next }
                           /^(FAIL|ERROR): / { next }
                           d > 0 && /^#/ { print "   " $0; d--; next } { d = 0 }' "$f"
        done | head -n 300
    fi
    # automake prints "# PASS:  N" per suite; close with one plain line
    awk '/^# PASS:/ {p += $3} /^# FAIL:/ {f += $3} /^# ERROR:/ {f += $3} /^# SKIP:/ {s += $3}
         END {printf "%d passed, %d failed, %d skipped\n", p, f, s}' "$log"
    echo "the slowest tests (seconds, build folder, test):"
    sort -n -r "$CP_TEST_TIMES" | head -n 15 | sed 's/^/  /'
    rm -f "$log" "$log.rc" "$stamp" "$CP_TEST_TIMES"
    exit "$status"
    ;;
*)
    echo "usage: contrib/quickstart.sh run|test [collprof options]" >&2
    exit 2
    ;;
esac
