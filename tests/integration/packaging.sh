#!/bin/sh
# The recipes of contrib/ that cannot run here (Spack, Apptainer, enroot and pyxis are not in
# Debian), checked statically: the Spack package parses, passes every backend explicitly, and
# every flag it passes is one ./configure --help lists; the Apptainer definition's scripts and
# the pyxis example pass shellcheck; debian/: the changelog's version is configure's, every
# configure flag debian/rules passes exists, its test scripts pass shellcheck.
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || need_tool "python3 not found"
command -v shellcheck >/dev/null 2>&1 || need_tool "shellcheck not found (apt-get install shellcheck)"
SRC=$COLLPROF_SRCDIR
# file $2 as TAP comments when $1 (an exit status) is not 0
show() { [ "$1" -eq 0 ] || sed 's/^/# /' "$2" | head -n 20; }

# ---- Spack ---------------------------------------------------------------------------------
"$SRC/configure" --help >"$WORK/help" 2>&1
ok $? "./configure --help"
"$PY" - "$SRC/contrib/spack/collprof/package.py" "$WORK/help" >"$WORK/spack" 2>&1 <<'PYEOF'
import re, sys, types
# a stand-in for spack.package: just what the recipe names, recording its directives
mod = types.ModuleType("spack.package")
variants = {}
class Spec:
    def __init__(self, on):
        self.on = on
    def satisfies(self, s):
        return s.lstrip("+~") in self.on if s.startswith("+") else s.lstrip("~") not in self.on
    def __getitem__(self, name):
        return types.SimpleNamespace(prefix="/opt/" + name)
class AutotoolsPackage:
    pass
class CudaPackage:
    pass
def variant(name, **kw):
    variants[name] = kw
for n in ("version", "depends_on", "conflicts", "Executable", "join_path"):
    setattr(mod, n, lambda *a, **k: None)
mod.AutotoolsPackage, mod.CudaPackage, mod.variant = AutotoolsPackage, CudaPackage, variant
spack = types.ModuleType("spack")
spack.package = mod
sys.modules["spack"], sys.modules["spack.package"] = spack, mod
ns = {}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), ns)
cls = ns["Collprof"]
helptext = open(sys.argv[2]).read()
known = set(re.findall(r"--with-([a-z0-9-]+)", helptext))
names = sorted(variants)
assert {"mpi", "gloo", "ofi", "nccl", "slurm", "hdf5"} <= set(names), names
for on in (set(names) | {"cuda"}, set()):
    p = cls()
    p.spec = Spec(on)
    args = p.configure_args()
    for a in args:
        m = re.match(r"--with(?:out)?-([a-z0-9-]+)", a)
        assert m and m.group(1) in known, "configure does not know " + a
    for n in names:  # every backend explicit, either way
        assert any(a.startswith("--with-%s=" % n) or a == "--without-" + n for a in args), (n, args)
print("variants", " ".join(names), "flags ok")
PYEOF
rc=$?
show $rc "$WORK/spack"
grep -q "flags ok" "$WORK/spack"
ok $? "spack package.py: parses, every variant an explicit --with/--without that configure knows"

# ---- Apptainer and pyxis --------------------------------------------------------------------
# FILE is shellcheck-clean (as sh); LABEL names it in the test line
shellchecked() { # FILE LABEL
    shellcheck -s sh "$1" >"$WORK/sc" 2>&1
    r=$?
    show $r "$WORK/sc"
    ok $r "$2: shellcheck-clean"
}
DEF=$SRC/contrib/containers/collprof.def
for sec in post test; do
    { echo "#!/bin/sh"
      awk -v s="%$sec" '/^%/ { on = ($1 == s); next } on { print }' "$DEF"; } >"$WORK/$sec.sh"
    if [ "$(wc -l <"$WORK/$sec.sh")" -gt 2 ]; then
        shellchecked "$WORK/$sec.sh" "collprof.def %$sec"
    else
        ok 1 "collprof.def %$sec: shellcheck-clean (the section is empty)"
    fi
done
shellchecked "$SRC/contrib/containers/pyxis.sbatch" pyxis.sbatch
# ---- Debian (built, linted and installed by make check-packaging; checked here statically) --
ver=$("$COLLPROF_BIN" --version 2>/dev/null | sed -n 's/^collprof \([^ ]*\).*/\1/p')
debver=$(sed -n '1s/^collprof (\([^)]*\)).*/\1/p' "$SRC/debian/changelog")
[ -n "$ver" ] && [ "${debver%%-*}" = "$ver" ]
ok $? "debian/changelog's version ($debver) is configure's ($ver)"
# every --with/--without flag debian/rules passes is one that configure knows
flags=$(grep -o -- '--with\(out\)\{0,1\}-[a-z0-9-]*' "$SRC/debian/rules" | sed 's/^--without-/--with-/' | sort -u)
unknown=
for f in $flags; do
    grep -q -- "^  $f\[=" "$WORK/help" || unknown="$unknown $f"
done
[ -n "$flags" ] && [ -z "$unknown" ]
ok $? "debian/rules: every --with/--without flag is in ./configure --help (unknown:${unknown:- none})"
missing=
for b in pmix hdf5 slurm mpi gloo ofi ofi-cuda cuda nccl; do
    grep -q -e "--with-$b[ =]" -e "--without-$b\( \|\$\)" "$SRC/debian/rules" || missing="$missing $b"
done
[ -z "$missing" ]
ok $? "debian/rules names every optional part explicitly (missing:${missing:- none})"
for t in selftest modules; do
    shellchecked "$SRC/debian/tests/$t" "debian/tests/$t"
done
shellchecked "$SRC/contrib/check-packaging.sh" contrib/check-packaging.sh
done_testing
