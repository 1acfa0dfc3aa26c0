"""One result file as pandas DataFrames and an xarray Dataset."""

import os

import numpy as np
import pandas as pd

from . import _h5

#: The columns that say what a cell measured; the long-form samples carry
#: them so that they can be grouped without a join.
KEY_COLUMNS = ("backend", "variant", "op", "dtype", "redop", "root",
               "in_place", "imbalance", "memory", "split", "count", "bytes")
#: Cell figures copied into the xarray Dataset, one value per (op, bytes).
CELL_FIGURES = ("time_mean_us", "time_p50_us", "time_p99_us", "algbw_gbs",
                "busbw_gbs", "iterations")


def _frame(array):
    """A decoded structured array as a DataFrame, columns in file order."""
    return pd.DataFrame({n: array[n] for n in array.dtype.names},
                        columns=list(array.dtype.names))


class Report:
    """A collprof result file (schema ``collprof-results`` 1.x).

    The root attributes and the tables are read when the Report is made;
    the raw samples of the cells are read when asked for.

    Attributes:
        path: the file.
        attrs: the root attributes (strings as str, numbers as int/float).
        schema_version: (major, minor) of the file's schema.
        results: one row per matrix cell (every status), file order.
        ranks, backends, environment: the other tables.
        links, screen: the link sweep and the screen tables; empty
            DataFrames in files without them.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        with _h5.open_file(self.path) as f:
            self.attrs, self.schema_version = _h5.read_root(f, self.path)
            tables = _h5.read_tables(f, self.path)
        for name in _h5.TABLES:
            setattr(self, name, _frame(tables[name]) if name in tables
                    else pd.DataFrame())

    def __repr__(self):
        return "<collprof.Report %s: schema %d.%d, %d cells, %s ranks, %s>" % (
            self.path, self.schema_version[0], self.schema_version[1],
            len(self.results), self.attrs.get("world_size"),
            self.attrs.get("status"))

    # ---- raw data of one cell (numpy) ----------------------------------

    def _read(self, cell, dataset):
        cell = _cell_index(cell)
        with _h5.open_file(self.path) as f:
            try:
                return _h5.cell_dataset(f, cell, dataset)
            except KeyError as e:
                raise KeyError("%s: %s" % (self.path, e.args[0])) from None

    def cell_samples(self, cell):
        """Every rank's time (us) for every timed iteration of one cell: a
        float64 array [iterations x ranks].  ``cell`` is the cell number or
        a results row; KeyError for a cell that did not run."""
        return self._read(cell, "samples_us")

    def rank_means(self, cell):
        """Each rank's mean time (us) over the timed iterations, [ranks]."""
        return self._read(cell, "rank_mean_us")

    def traffic(self, cell):
        """(send_bytes, recv_bytes) per rank of an alltoallv, allgatherv,
        gatherv or scatterv cell; None for the other operations."""
        send = self._read(cell, "send_bytes")
        recv = self._read(cell, "recv_bytes")
        return None if send is None or recv is None else (send, recv)

    # ---- tidy frames ---------------------------------------------------

    def measured(self):
        """The rows of the cells that have raw samples (status ok or wrong,
        and incomplete cells that kept theirs)."""
        with _h5.open_file(self.path) as f:
            keep = [_h5.has_cell(f, int(c)) for c in self.results["cell"]] \
                if len(self.results) else []
        return self.results[np.asarray(keep, dtype=bool)]

    def samples(self):
        """Every sample of every measured cell in long form: one row per
        (cell, iteration, rank) with ``time_us``, the cell's key columns
        (backend, variant, op, dtype, bytes, ...), ``repeat`` (the repeat
        the iteration belongs to, 0 without --repeats) and ``host``."""
        rows = self.measured()
        keys = ["cell"] + [k for k in KEY_COLUMNS if k in rows.columns]
        parts = []
        with _h5.open_file(self.path) as f:
            for row in rows[keys].itertuples(index=False):
                cell = int(row.cell)
                s = _h5.cell_dataset(f, cell, "samples_us")
                if s is None or s.ndim != 2:
                    continue
                niter, nrank = s.shape
                reps = _h5.cell_dataset(f, cell, "repeat_iterations")
                repeat = (np.repeat(np.arange(len(reps)), reps.astype(int))
                          if reps is not None and int(reps.sum()) == niter
                          else np.zeros(niter, dtype=int))
                part = dict(zip(keys, row))
                part.update(iteration=np.repeat(np.arange(niter), nrank),
                            repeat=np.repeat(repeat, nrank),
                            rank=np.tile(np.arange(nrank), niter),
                            time_us=s.reshape(-1))
                parts.append(pd.DataFrame(part))
        columns = keys + ["iteration", "repeat", "rank", "time_us", "host"]
        if not parts:
            return pd.DataFrame(columns=columns)
        out = pd.concat(parts, ignore_index=True)
        if len(self.ranks) and "hostname" in self.ranks:
            hosts = dict(zip(self.ranks["rank"], self.ranks["hostname"]))
            out["host"] = out["rank"].map(hosts).fillna("")
        else:
            out["host"] = ""
        return out[columns]

    # ---- xarray --------------------------------------------------------

    def to_xarray(self, **select):
        """The samples as an xarray Dataset with ``time_us`` over the
        dimensions (op, bytes, rank, iteration), and the cells' figures
        (busbw_gbs, time_p50_us, ...) over (op, bytes).

        Keyword arguments select cells by column (``backend="mpi"``,
        ``variant="ring"``, ``split=""``).  After the selection, each (op,
        bytes) must name one cell: when several backends, variants or
        other settings share one, ValueError says which columns to choose.
        Cells with fewer iterations or ranks than the largest are padded
        with NaN; a cell that did not run is NaN throughout."""
        try:
            import xarray as xr
        except ImportError:
            raise ImportError("to_xarray() needs xarray (Debian: "
                              "python3-xarray)") from None
        rows = self.measured()
        for column, value in select.items():
            if column not in rows.columns:
                raise ValueError("%s: no column %r to select on"
                                 % (self.path, column))
            rows = rows[rows[column] == value]
        if not len(rows):
            raise ValueError("%s: no measured cell%s" % (
                self.path, " matches %s" % _kwargs(select) if select else ""))
        dup = rows[rows.duplicated(["op", "bytes"], keep=False)]
        if len(dup):
            vary = [k for k in KEY_COLUMNS if k in dup.columns
                    and k not in ("op", "bytes", "count")
                    and dup[k].nunique() > 1]
            raise ValueError(
                "%s: several cells per op and size differ in %s: choose with "
                "to_xarray(%s)" % (self.path, ", ".join(vary) or "nothing",
                                   ", ".join("%s=..." % k for k in vary)))
        ops = sorted(rows["op"].unique())
        sizes = sorted(int(b) for b in rows["bytes"].unique())
        arrays = {}
        with _h5.open_file(self.path) as f:
            for row in rows.itertuples(index=False):
                arrays[(row.op, int(row.bytes))] = _h5.cell_dataset(
                    f, int(row.cell), "samples_us")
        nrank = max(a.shape[1] for a in arrays.values())
        niter = max(a.shape[0] for a in arrays.values())
        data = np.full((len(ops), len(sizes), nrank, niter), np.nan)
        for (op, size), a in arrays.items():
            data[ops.index(op), sizes.index(size), :a.shape[1], :a.shape[0]] = a.T
        figures = {}
        for name in ("cell",) + CELL_FIGURES:
            if name not in rows.columns:
                continue
            grid = np.full((len(ops), len(sizes)), np.nan)
            for row in rows.itertuples(index=False):
                grid[ops.index(row.op), sizes.index(int(row.bytes))] = \
                    getattr(row, name)
            figures[name] = (("op", "bytes"), grid)
        coords = {"op": ops, "bytes": sizes, "rank": np.arange(nrank),
                  "iteration": np.arange(niter)}
        if len(self.ranks) == nrank and "hostname" in self.ranks:
            coords["host"] = ("rank", list(self.ranks.sort_values("rank")
                                           ["hostname"]))
        attrs = {"file": self.path,
                 "schema_version": "%d.%d" % self.schema_version,
                 "collprof_version": self.attrs.get("collprof_version", ""),
                 "units": "time_us: microseconds; *_gbs: 1e9 bytes/s"}
        for k in KEY_COLUMNS:
            if k in rows.columns and k not in ("op", "bytes", "count") \
                    and rows[k].nunique() == 1:
                v = rows[k].iloc[0]
                attrs[k] = v.item() if isinstance(v, np.generic) else v
        ds = xr.Dataset({"time_us": (("op", "bytes", "rank", "iteration"),
                                     data), **figures},
                        coords=coords, attrs=attrs)
        ds["time_us"].attrs["units"] = "us"
        return ds


def _cell_index(cell):
    """The cell number of an int or of a results row (its ``cell``)."""
    if isinstance(cell, (int, np.integer)):
        return int(cell)
    try:
        return int(cell["cell"])          # a Series or a dict
    except (TypeError, KeyError, IndexError):
        return int(cell.cell)             # a row of itertuples()


def _kwargs(select):
    return ", ".join("%s=%r" % kv for kv in select.items())
