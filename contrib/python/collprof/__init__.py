"""Read collprof result files (HDF5, schema ``collprof-results`` 1.x).

    import collprof
    r = collprof.open("collprof_20260101T000000Z_w4.h5")
    r.results          # one row per matrix cell (pandas DataFrame)
    r.samples()        # every sample in long form: cell, iteration, rank, time_us
    r.to_xarray(backend="mpi")   # time_us over (op, bytes, rank, iteration)
    collprof.load_results(["runs/"])   # the results of many files, + "file"

``python3 -m collprof summary|export FILES`` does the same from a shell.
The format is described in docs/hdf5-schema.md of the collprof sources.
"""

import os

from ._h5 import SCHEMA_MAJOR, SCHEMA_MINOR, SCHEMA_NAME, SchemaError

__version__ = "0.1.0"
__all__ = ["open", "load_results", "expand_paths", "Report", "SchemaError",
           "SCHEMA_NAME", "SCHEMA_MAJOR", "SCHEMA_MINOR", "__version__"]


def __getattr__(name):
    # Report needs pandas: imported on first use, so that the numpy-only
    # parts (collprof._h5, used by collprof_h5) work without it
    if name == "Report":
        from .report import Report
        return Report
    raise AttributeError("module 'collprof' has no attribute %r" % name)


def open(path):  # noqa: A001 (the package's entry point, as h5py.File is)
    """Read one result file: a Report.  SchemaError when the file is not a
    collprof result file or its schema's major version is newer than this
    package's; FileNotFoundError when there is no such file."""
    from .report import Report
    return Report(path)


def expand_paths(paths, suffix=".h5"):
    """Files and directories as a list of files: a directory stands for its
    ``*.h5`` files, in name order."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            out += [os.path.join(p, n) for n in sorted(os.listdir(p))
                    if n.endswith(suffix)]
        else:
            out.append(p)
    return out


def load_results(paths):
    """The results tables of several files (and directories of them) in one
    DataFrame, with a ``file`` column; a column that one file lacks (an older
    schema) is empty (NaN) in its rows."""
    import pandas as pd
    from .report import Report
    reports = [Report(p) for p in expand_paths(paths)]
    if not reports:
        return pd.DataFrame()
    return _file_last(pd.concat([r.results.assign(file=r.path)
                                 for r in reports], ignore_index=True))


def _file_last(table):
    """``table`` with its ``file`` column last: after the columns that only
    the newer files have."""
    return table[[c for c in table.columns if c != "file"] + ["file"]]
