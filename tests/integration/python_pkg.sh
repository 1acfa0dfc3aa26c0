#!/bin/sh
# The Python package in contrib/python (import name collprof): its pytest tests on every sample
# file of tests/data, `pip install --no-build-isolation --no-deps` of it with no network,
# `python3 -m collprof` from that installation, and the example notebook run by nbconvert.
# Debian's python3 (python3-h5py, -pandas, -xarray, -pytest, -nbconvert, -ipykernel, -pip); a
# missing one skips here and fails under CI (COLLPROF_CI or CI set: contrib/quickstart.sh test).
. "${COLLPROF_SRCDIR}/tests/integration/lib.sh"
PY=/usr/bin/python3
PKG="$COLLPROF_SRCDIR/contrib/python"
DATA="$COLLPROF_SRCDIR/tests/data"
# the sources are read-only under distcheck: no byte code, no pytest cache there
export PYTHONDONTWRITEBYTECODE=1
# debugpy (in the notebook kernel) warns about frozen modules otherwise
export PYDEVD_DISABLE_FILE_VALIDATION=1

[ -x "$PY" ] || need_tool "$PY not found (python3)"
# which modules are missing, without importing them (that takes seconds)
missing=$("$PY" -c 'import importlib.util as u, sys
print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' \
    h5py numpy pandas xarray pytest nbconvert nbclient ipykernel pip 2>&1)
[ -z "$missing" ] || need_tool "missing for $PY: $missing (python3-h5py python3-pandas \
python3-xarray python3-pytest python3-nbconvert python3-ipykernel python3-pip)"

# ---- the pytest tests, one TAP line each --------------------------------
(cd "$WORK" && PYTHONPATH="$PKG" "$PY" -m pytest -q -rA -p no:cacheprovider "$PKG/tests") \
    >"$WORK/pytest.out" 2>&1
prc=$?
n=0
while read -r res name rest; do
    case $res in
    PASSED) ok 0 "pytest ${name#*tests/}" ;;
    FAILED | ERROR) ok 1 "pytest ${name#*tests/} $rest" ;;
    *) continue ;;
    esac
    n=$((n + 1))
done <<EOT
$(grep -E '^(PASSED|FAILED|ERROR) ' "$WORK/pytest.out")
EOT
[ "$prc" -ne 0 ] && tail -n 30 "$WORK/pytest.out" | sed 's/^/# /'
[ "$prc" -eq 0 ] && [ "$n" -gt 50 ]
ok $? "pytest ran every test and passed (exit $prc, $n tests)"

# ---- pip install, offline, from a copy (pip writes build/ next to pyproject.toml)
cp -R "$PKG" "$WORK/src" && chmod -R u+w "$WORK/src"
"$PY" -m pip install --no-build-isolation --no-deps --no-index --no-cache-dir \
    --disable-pip-version-check --no-compile --target "$WORK/site" "$WORK/src" >"$WORK/pip.out" 2>&1
prc=$?
[ "$prc" -eq 0 ] || tail -n 10 "$WORK/pip.out" | sed 's/^/# /'
[ "$prc" -eq 0 ] && [ -f "$WORK/site/collprof/report.py" ] && [ -f "$WORK/site/collprof_h5.py" ] &&
    ls -d "$WORK/site"/collprof-*.dist-info >/dev/null 2>&1
ok $? "pip install --no-build-isolation --no-deps --no-index installs collprof and collprof_h5"
where=$(cd "$WORK" && PYTHONPATH="$WORK/site" "$PY" -c 'import collprof; print(collprof.__file__)' 2>&1)
[ "$where" = "$WORK/site/collprof/__init__.py" ]
ok $? "python3 imports the installed package (got $where)"
(cd "$WORK" && PYTHONPATH="$WORK/site" "$PY" -m collprof summary "$DATA/collprof-1.8.h5") \
    >"$WORK/summary.out" 2>&1
prc=$?
[ "$prc" -eq 0 ] && grep -q '^  schema collprof-results 1\.8,' "$WORK/summary.out" &&
    grep -q '^  allreduce  *self  *default ' "$WORK/summary.out"
ok $? "python3 -m collprof summary from the installation (exit $prc)"
(cd "$WORK" && PYTHONPATH="$WORK/site" "$PY" -m collprof export "$DATA/nonexistent.h5") \
    >"$WORK/err.out" 2>"$WORK/err.err"
prc=$?
[ "$prc" -eq 1 ] && [ ! -s "$WORK/err.out" ] && [ "$(wc -l <"$WORK/err.err")" -eq 1 ] &&
    grep -q '^collprof: error: .*nonexistent\.h5: no such file$' "$WORK/err.err"
ok $? "a missing file: one line on stderr, exit 1 (exit $prc: $(head -c 200 "$WORK/err.err"))"

# ---- the example notebook, executed (its directory: contrib/python/examples).  The kernel
# talks over Unix sockets in $WORK, not TCP ports picked free and bound later (other tests
# bind ephemeral ports meanwhile: a kernel that lost its port dies), its runtime files there too
nb="$PKG/examples/reading-results.ipynb"
(cd "$WORK" && PYTHONPATH="$PKG" JUPYTER_RUNTIME_DIR="$WORK/jupyter" IPYTHONDIR="$WORK/ipython" \
    timeout -k 5 120 "$PY" -m nbconvert --to notebook --execute \
    --ExecutePreprocessor.timeout=60 --ExecutePreprocessor.kernel_name=python3 \
    --KernelManager.transport=ipc --KernelManager.ip="$WORK/kernel" \
    --output-dir "$WORK/nb" "$nb") >"$WORK/nb.out" 2>&1
prc=$?
[ "$prc" -eq 0 ] || tail -n 15 "$WORK/nb.out" | sed 's/^/# /'
out="$WORK/nb/reading-results.ipynb"
# every code cell ran, none raised, and the last one printed the table
"$PY" - "$out" <<'P' >"$WORK/nb.check" 2>&1
import json, sys
nb = json.load(open(sys.argv[1]))
code = [c for c in nb["cells"] if c["cell_type"] == "code"]
assert code and all(c.get("execution_count") for c in code), "a cell did not run"
errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
assert not errors, errors
assert any(o.get("output_type") in ("execute_result", "display_data", "stream")
           for o in code[-1].get("outputs", [])), "the last cell shows nothing"
P
crc=$?
[ "$crc" -eq 0 ] || sed 's/^/# /' "$WORK/nb.check"
[ "$prc" -eq 0 ] && [ "$crc" -eq 0 ]
ok $? "nbconvert --execute runs examples/reading-results.ipynb without an error (exit $prc)"
done_testing
