"""Read collprof HDF5 result files: the interface of collprof 0.1's loader.

New code should use the ``collprof`` package (``collprof.open(path)``:
tidy DataFrames, long-form samples, xarray).  This module keeps the older
interface working, on top of the package's reader: it needs h5py and numpy,
and uses pandas when it is installed.  Tables (``results``, ``ranks``,
``backends``, ``environment``) are pandas DataFrames when pandas can be
imported, else numpy structured arrays whose strings are decoded to ``str``.

Example::

    import collprof_h5
    run = collprof_h5.load("collprof_20260101T000000Z_w4.h5")
    run.attrs["world_size"], len(run.results)
    run.samples(0).shape            # [iterations x ranks], microseconds
    table = collprof_h5.load_dir("results/")    # every file, + "file"
"""

import os

import numpy as np

try:
    import pandas as pd
except ImportError:  # pandas is optional
    pd = None

# the package beside this file (contrib/python, or where both were installed)
from collprof import _h5
from collprof._h5 import SchemaError  # noqa: F401

__all__ = ["SchemaError", "Run", "load", "load_dir", "concat", "records",
           "HAVE_PANDAS"]

SCHEMA_NAME = _h5.SCHEMA_NAME
SCHEMA_MAJOR = _h5.SCHEMA_MAJOR
HAVE_PANDAS = pd is not None


def _table(array):
    """A decoded table: a DataFrame with pandas, else a structured array."""
    if pd is None:
        return array
    return pd.DataFrame({name: array[name] for name in array.dtype.names},
                        columns=list(array.dtype.names))


def _cell_index(cell):
    try:
        return int(cell)
    except TypeError:
        return int(cell["cell"])


class Run:
    """One result file: metadata and tables read at once, raw data on call.

    Attributes: ``path``; ``attrs`` (root attributes; strings as str,
    numbers as int); ``results`` (one row per cell); ``ranks``;
    ``backends``; ``environment`` (name, value).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        with _h5.open_file(self.path) as f:
            self.attrs, _ = _h5.read_root(f, self.path)
            tables = _h5.read_tables(f, self.path)
        for name in ("results", "ranks", "backends", "environment"):
            if name not in tables:
                raise SchemaError("%s: no /%s table" % (self.path, name))
            setattr(self, name, _table(tables[name]))

    def __repr__(self):
        return "<collprof_h5.Run %s: %d cells, %s ranks, %s>" % (
            self.path, len(self.results), self.attrs.get("world_size"),
            self.attrs.get("status"))

    def _read(self, cell, dataset):
        with _h5.open_file(self.path) as f:
            try:
                return _h5.cell_dataset(f, _cell_index(cell), dataset)
            except KeyError as e:
                raise KeyError("%s: %s" % (self.path, e.args[0])) from None

    def samples(self, cell):
        """Every rank's time (us) for every timed iteration:
        a float64 array of shape [iterations x ranks].

        ``cell`` is the cell number or a results row."""
        return self._read(cell, "samples_us")

    def rank_means(self, cell):
        """Each rank's mean time (us) over the timed iterations, [ranks]."""
        return self._read(cell, "rank_mean_us")

    def per_iteration_max(self, cell):
        """The time (us) of each iteration: the max over ranks.  Its mean
        is the row's ``time_mean_us``."""
        return self.samples(cell).max(axis=1)

    def traffic(self, cell):
        """(send_bytes, recv_bytes) per rank for an alltoallv, allgatherv,
        gatherv or scatterv cell, else None."""
        send = self._read(cell, "send_bytes")
        recv = self._read(cell, "recv_bytes")
        return None if send is None or recv is None else (send, recv)


def load(path):
    """Read one result file; raise SchemaError when it is not one."""
    return Run(path)


def load_dir(directory, suffix=".h5"):
    """The results of every ``*.h5`` file in ``directory``, in name order,
    concatenated, with a ``file`` column (the path of each row's file)."""
    paths = sorted(os.path.join(directory, n) for n in os.listdir(directory)
                   if n.endswith(suffix))
    return concat([load(p) for p in paths])


def concat(runs):
    """The results tables of several Runs in one, with a ``file`` column.

    Without pandas, only the columns that every file has are kept."""
    tables = [(run.path, run.results) for run in runs]
    if pd is not None:
        if not tables:
            return pd.DataFrame()
        return pd.concat([t.assign(file=path) for path, t in tables],
                         ignore_index=True)
    if not tables:
        return np.empty(0, dtype=[("file", "U1")])
    names = [n for n in tables[0][1].dtype.names
             if all(n in t.dtype.names for _, t in tables)]
    width = max(len(path) for path, _ in tables)
    dtype = [(n, tables[0][1].dtype[n]) for n in names] + [("file",
                                                            "U%d" % width)]
    out = np.empty(sum(len(t) for _, t in tables), dtype=dtype)
    start = 0
    for path, t in tables:
        part = out[start:start + len(t)]
        for n in names:
            part[n] = t[n]
        part["file"] = path
        start += len(t)
    return out


def records(table):
    """The rows of a table (DataFrame or structured array) as dicts of
    plain Python values, for code that must work with or without pandas."""
    if pd is not None and isinstance(table, pd.DataFrame):
        return table.to_dict("records")
    names = table.dtype.names
    return [dict(zip(names, row.tolist())) for row in table]
