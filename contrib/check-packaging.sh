#!/bin/sh
# make check-packaging: build the Debian packages from a copy of the source tree (its `make
# distdir`, so only what the tarball holds) in a temporary directory, check them with lintian,
# install them and run their autopkgtest self-test with the null virt server (on this machine),
# then purge every package the test installed.  Needs root (or sudo) and Debian's debhelper,
# dh-python, lintian and autopkgtest, plus the Build-Depends of debian/control.
#   contrib/check-packaging.sh BUILDDIR VERSION
# Environment: DEB_BUILD_OPTIONS (default "nocheck parallel=2": the tests run elsewhere),
# DEB_BUILD_PROFILES (e.g. pkg.collprof.nccl to build collprof-nccl too, see
# debian/README.Debian), COLLPROF_DEB_KEEP=1 keeps the temporary directory.
set -eu
[ $# -eq 2 ] || { echo "usage: $0 BUILDDIR VERSION" >&2; exit 2; }
builddir=$1
version=$2
say() { echo "check-packaging: $*"; }
die() { echo "check-packaging: error: $*" >&2; exit 1; }
elapsed() { echo "$(($(date +%s) - t0)) s"; }

for tool in dpkg-buildpackage dh lintian autopkgtest dpkg-parsechangelog; do
    command -v "$tool" >/dev/null 2>&1 ||
        die "$tool not found (apt-get install debhelper dh-python lintian autopkgtest)"
done
sudo=
if [ "$(id -u)" -ne 0 ]; then
    if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
        die "autopkgtest installs the packages on this machine: run as root or with sudo"
    fi
    sudo=sudo
fi
# the purge at the end must not remove packages someone installed on purpose
pkgs="collprof collprof-dev collprof-nccl python3-collprof collprof-dbgsym"
for p in $pkgs; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        die "$p is installed already: the self-test would replace it (dpkg --purge $p first)"
    fi
done

t0=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/collprof-deb.XXXXXX")
before=$tmp/installed.before
# every package dpkg knows in any state but "not installed" (a failed install leaves one half-way)
installed() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' | awk '$1 !~ /^.n/ { print $2 }' | sort; }
installed >"$before"
purge() {
    # everything that was not installed before the test: our packages and the test's Depends
    new=$(installed | comm -13 "$before" -)
    if [ -n "$new" ]; then
        say "purging what the test installed: $(echo "$new" | tr '\n' ' ')"
        # shellcheck disable=SC2086
        $sudo env DEBIAN_FRONTEND=noninteractive dpkg --purge $new >"$tmp/purge.log" 2>&1 ||
            { cat "$tmp/purge.log" >&2; echo "check-packaging: error: dpkg --purge failed" >&2; }
    fi
}
cleanup() {
    rc=$?
    trap - EXIT INT TERM
    purge
    if [ -n "${COLLPROF_DEB_KEEP:-}" ]; then
        say "kept $tmp"
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the source: what `make dist` would pack ---------------------------------------------
src=$tmp/collprof-$version
env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$builddir" distdir distdir="$src" \
    top_distdir="$src" >"$tmp/distdir.log" 2>&1 || { tail -n 20 "$tmp/distdir.log"; die "make distdir failed"; }
[ -x "$src/debian/rules" ] || die "the distributed tree has no executable debian/rules (EXTRA_DIST)"
debver=$(cd "$src" && dpkg-parsechangelog -S Version)
[ "${debver%%-*}" = "$version" ] ||
    die "debian/changelog is at $debver but configure.ac at $version: add a debian/changelog entry"
say "source $src ($(elapsed))"

# ---- build ---------------------------------------------------------------------------------
export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-nocheck parallel=2}"
say "dpkg-buildpackage -b -us -uc (DEB_BUILD_OPTIONS=$DEB_BUILD_OPTIONS${DEB_BUILD_PROFILES:+, profiles $DEB_BUILD_PROFILES})"
(cd "$src" && dpkg-buildpackage -b -us -uc) >"$tmp/build.log" 2>&1 ||
    { tail -n 40 "$tmp/build.log"; die "dpkg-buildpackage failed (log: $tmp/build.log)"; }
changes=$(ls "$tmp"/collprof_*.changes)
set --
for deb in "$tmp"/*.deb; do
    case $deb in *-dbgsym_*) ;; *) set -- "$@" "$deb" ;; esac
done
[ $# -gt 0 ] || die "dpkg-buildpackage made no .deb"
say "built $(for deb in "$@"; do printf '%s ' "${deb##*/}"; done)($(elapsed))"

# ---- lintian: errors, warnings and info tags fail; overrides carry their reason ------------
lintian --pedantic --display-info --fail-on error,warning,info "$changes" >"$tmp/lintian.log" 2>&1 ||
    { cat "$tmp/lintian.log"; die "lintian found problems"; }
grep -v 'running with root privileges' "$tmp/lintian.log" | sed 's/^/lintian: /' || true
say "lintian clean ($(elapsed))"

# ---- autopkgtest on this machine, then purge ---------------------------------------------
arc=0
$sudo autopkgtest --no-built-binaries --output-dir "$tmp/autopkgtest" "$src/" "$@" -- null \
    >"$tmp/autopkgtest.log" 2>&1 || arc=$?
grep -E '^(selftest|modules) |: ok: |FAIL' "$tmp/autopkgtest.log" | sed 's/^/autopkgtest: /' || true
[ "$arc" -eq 0 ] || { tail -n 40 "$tmp/autopkgtest.log"; die "autopkgtest exited $arc"; }
purge
if [ -e /usr/bin/collprof ] || [ -d "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/collprof" ]; then
    die "the purge left collprof's files behind"
fi
say "autopkgtest passed, packages purged ($(elapsed) in all)"
