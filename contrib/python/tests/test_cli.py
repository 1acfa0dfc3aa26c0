"""python3 -m collprof summary|export, and its one-line errors."""

import io
import json
import sys

import h5py
import pandas as pd
import pytest

import collprof
from collprof import cli
from conftest import DATA, SAMPLES, report


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        rc = cli.main(list(argv))
    finally:
        sys.stdout, sys.stderr = saved
    return rc, out.getvalue(), err.getvalue()


def test_summary_of_every_sample():
    rc, out, err = run("summary", *SAMPLES)
    assert rc == 0 and err == ""
    for path in SAMPLES:
        r = report(path)
        assert "\n%s\n  schema collprof-results %d.%d," % ((path,) + r.schema_version) \
            in "\n" + out
    assert "  op  " in out and "busBW(GB/s)" in out


def test_export_csv_round_trip(tmp_path):
    out = tmp_path / "all.csv"
    rc, _, err = run("export", DATA, "-o", str(out))
    assert rc == 0 and err == ""
    t = pd.read_csv(out, keep_default_na=False)
    assert len(t) == len(collprof.load_results(SAMPLES))
    assert list(t.columns[:4]) == ["cell", "backend", "variant", "op"]


def test_export_jsonl_samples(sample):
    rc, out, err = run("export", "--table", "samples", "--format", "jsonl", sample)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == len(report(sample).samples())
    for line in lines[:50]:
        record = json.loads(line)
        assert record["file"] == sample and record["time_us"] > 0


@pytest.mark.parametrize("argv, status, message", [
    ((), 2, "a command is needed"),
    (("frobnicate",), 2, "invalid choice"),
    (("summary",), 2, "required"),
    (("export", "--format", "xml", "x.h5"), 2, "invalid choice"),
    (("summary", "/nonexistent/run.h5"), 1, "/nonexistent/run.h5: no such file"),
    (("summary", "TEXT"), 1, "not an HDF5 file"),
    (("summary", "NEWER"), 1, "is newer than this reader"),
    (("export", "EMPTYDIR"), 1, "no .h5 file in"),
])
def test_errors_are_one_line(tmp_path, argv, status, message):
    text = tmp_path / "text.h5"
    text.write_text("not hdf5\n")
    newer = tmp_path / "newer.h5"
    with h5py.File(newer, "w") as f:
        f.attrs["schema"] = "collprof-results"
        f.attrs["schema_version"] = "3.1"
        f.attrs["schema_version_major"] = 3
        f.attrs["schema_version_minor"] = 1
    empty = tmp_path / "empty"
    empty.mkdir()
    names = {"TEXT": str(text), "NEWER": str(newer), "EMPTYDIR": str(empty)}
    rc, out, err = run(*[names.get(a, a) for a in argv])
    assert rc == status
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("collprof: error: ")
    assert message in err
