"""collprof.open on every committed sample file (tests/data), and the files
it must refuse."""

import os
import re
import shutil

import h5py
import numpy as np
import pandas as pd
import pytest

import collprof
import collprof_h5
from conftest import SAMPLES, report

MEASURED = ("ok", "wrong")


def header_minor(srcdir):
    text = open(os.path.join(srcdir, "include", "collprof", "schema.h")).read()
    return int(re.search(r"COLLPROF_SCHEMA_VERSION_MINOR\s+(\d+)", text).group(1))


def header_columns(srcdir):
    text = open(os.path.join(srcdir, "include", "collprof", "schema.h")).read()
    block = re.search(r"^#define COLLPROF_RESULT_COLUMNS.*?\n\n", text, re.M | re.S)
    return re.findall(r"^\s*X\((\w+),", block.group(0), re.M)


def test_a_sample_of_every_schema_version(srcdir):
    minor = header_minor(srcdir)
    assert collprof.SCHEMA_MINOR == minor, "update collprof/_h5.py SCHEMA_MINOR"
    have = {os.path.basename(p) for p in SAMPLES}
    missing = ["collprof-1.%d.h5" % m for m in range(minor + 1)
               if "collprof-1.%d.h5" % m not in have]
    assert not missing


def test_version_is_configure_s(srcdir):
    text = open(os.path.join(srcdir, "configure.ac")).read()
    version = re.search(r"AC_INIT\(\[collprof\], \[([^]]+)\]", text).group(1)
    assert collprof.__version__ == version


def test_open(sample, srcdir):
    r = report(sample)
    with h5py.File(sample, "r") as f:
        version = f.attrs["schema_version"]
        cells = f["results"].shape[0]
        groups = set(f["cells"]) if "cells" in f else set()
    version = version.decode() if isinstance(version, bytes) else version
    assert "%d.%d" % r.schema_version == version
    assert r.attrs["schema"] == "collprof-results"
    t = r.results
    assert isinstance(t, pd.DataFrame) and len(t) == cells
    # tidy: one row per cell, the file's columns in the order of schema.h
    assert t["cell"].is_unique
    names = header_columns(srcdir)
    assert [c for c in names if c in t.columns] == list(t.columns)
    for column in ("op", "backend", "status"):
        assert all(isinstance(v, str) for v in t[column])
    assert len(r.ranks) == r.attrs["world_size"]
    measured = r.measured()
    assert len(measured) == len(groups)
    assert set(measured["status"]) <= set(MEASURED)
    if "links" in os.path.basename(sample) or r.attrs.get("schema_version_minor", 0) in (7, 9, 10):
        assert len(r.links) > 0


def test_samples_long_form(sample):
    r = report(sample)
    s = r.samples()
    rows = r.measured()
    ranks = r.attrs["world_size"]
    assert list(s.columns[-5:]) == ["iteration", "repeat", "rank", "time_us", "host"]
    assert len(s) == sum(int(n) * ranks for n in rows["iterations"]) or \
        rows["split"].ne("").any()
    for row in rows.itertuples(index=False):
        cell = s[s["cell"] == row.cell]
        assert (cell["op"] == row.op).all() and (cell["bytes"] == row.bytes).all()
        # the per-iteration time is the max over ranks; its mean is the row's
        per_iter = cell.groupby("iteration")["time_us"].max()
        assert len(per_iter) == row.iterations
        assert per_iter.mean() == pytest.approx(row.time_mean_us, rel=1e-6)
        assert np.array_equal(r.cell_samples(row.cell).reshape(-1),
                              cell["time_us"].to_numpy())
        if getattr(row, "repeats", 1) > 1:
            assert sorted(cell["repeat"].unique()) == list(range(row.repeats))
    if len(s):
        hosts = dict(zip(r.ranks["rank"], r.ranks["hostname"]))
        assert (s["host"] == s["rank"].map(hosts)).all()


def _selection(rows):
    """Column values that make (op, bytes) name one cell: the first cell's
    values of every key column that varies."""
    dup = rows[rows.duplicated(["op", "bytes"], keep=False)]
    keys = [k for k in collprof.report.KEY_COLUMNS
            if k in dup and k not in ("op", "bytes", "count")
            and dup[k].nunique() > 1]
    first = dup.iloc[0] if len(dup) else None
    return {k: first[k] for k in keys}


def test_xarray(sample):
    pytest.importorskip("xarray")
    r = report(sample)
    rows = r.measured()
    if not len(rows):
        with pytest.raises(ValueError, match="no measured cell"):
            r.to_xarray()
        return
    select = _selection(rows)
    if select:
        with pytest.raises(ValueError, match="choose with to_xarray"):
            r.to_xarray()
    ds = r.to_xarray(**select)
    assert ds["time_us"].dims == ("op", "bytes", "rank", "iteration")
    for k, v in select.items():
        rows = rows[rows[k] == v]
    for row in rows.itertuples(index=False):
        t = ds["time_us"].sel(op=row.op, bytes=row.bytes)
        per_iter = t.max("rank").dropna("iteration")
        assert len(per_iter) == row.iterations
        assert float(per_iter.mean()) == pytest.approx(row.time_mean_us, rel=1e-6)
        assert float(ds["busbw_gbs"].sel(op=row.op, bytes=row.bytes)) == \
            pytest.approx(row.busbw_gbs)


def test_compat_module_reads_the_same(sample):
    old = collprof_h5.load(sample)
    new = report(sample)
    pd.testing.assert_frame_equal(old.results, new.results)
    for row in collprof_h5.records(old.results):
        if row["status"] in MEASURED:
            assert np.array_equal(old.samples(row), new.cell_samples(row["cell"]))


def test_load_results_of_every_sample():
    t = collprof.load_results(SAMPLES)
    assert len(t) == sum(len(report(p).results) for p in SAMPLES)
    assert set(t["file"]) == {p for p in SAMPLES if len(report(p).results)}
    # a column that the oldest files lack is empty in their rows
    old = t[t["file"].str.endswith("collprof-1.0.h5")]
    assert old["memory"].isna().all()


# ---- files that must be refused ------------------------------------------

def _copy(sample, tmp_path, name, **attrs):
    path = tmp_path / name
    shutil.copy(sample, path)
    with h5py.File(path, "r+") as f:
        for k, v in attrs.items():
            f.attrs[k] = v
    return path


def newest():
    return max(SAMPLES, key=lambda p: report(p).schema_version)


def test_newer_major_is_refused(tmp_path):
    path = _copy(newest(), tmp_path, "newer.h5", schema_version="2.0",
                 schema_version_major=2, schema_version_minor=0)
    with pytest.raises(collprof.SchemaError, match=r"version 2\.0 is newer"):
        collprof.open(path)
    with pytest.raises(collprof_h5.SchemaError):
        collprof_h5.load(path)


def test_newer_minor_is_read(tmp_path):
    path = _copy(SAMPLES[0], tmp_path, "minor.h5", schema_version="1.99",
                 schema_version_major=1, schema_version_minor=99)
    assert collprof.open(path).schema_version == (1, 99)


def test_other_files_are_refused(tmp_path):
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f.attrs["schema"] = "something-else"
    with pytest.raises(collprof.SchemaError, match="not a collprof result file"):
        collprof.open(other)
    bare = tmp_path / "bare.h5"
    with h5py.File(bare, "w"):
        pass
    with pytest.raises(collprof.SchemaError, match="not a collprof result file"):
        collprof.open(bare)
    text = tmp_path / "text.h5"
    text.write_text("collprof\n")
    with pytest.raises(collprof.SchemaError, match="not an HDF5 file"):
        collprof.open(text)
    with pytest.raises(FileNotFoundError):
        collprof.open(tmp_path / "absent.h5")
    damaged = _copy(SAMPLES[0], tmp_path, "damaged.h5")
    with h5py.File(damaged, "r+") as f:
        del f["results"]
    with pytest.raises(collprof.SchemaError, match="no /results table"):
        collprof.open(damaged)
