"""The file itself: opening, the schema check, tables and cell datasets.

Only h5py and numpy are used here, so that the ``collprof_h5`` module
(which works without pandas) can share this code.  The format is
docs/hdf5-schema.md; include/collprof/schema.h is its one definition.
"""

import os

import h5py
import numpy as np

SCHEMA_NAME = "collprof-results"
#: The newest major version this reader reads.  A newer minor version only
#: adds columns, so it is read; a newer major version is refused.
SCHEMA_MAJOR = 1
#: The newest minor version this reader knows of (include/collprof/schema.h).
SCHEMA_MINOR = 13

#: The tables a result file may hold; ``results`` and ``ranks`` are always
#: there, ``links`` (from 1.2) and ``screen`` (from 1.7) only after a link
#: sweep or a screen, ``counters`` (from 1.11) in runs with --counters.
TABLES = ("results", "ranks", "backends", "environment", "links", "screen",
          "counters")
REQUIRED_TABLES = ("results", "ranks")


class SchemaError(ValueError):
    """The file is not a collprof result file that this reader can read."""


def text(value):
    """An HDF5 attribute value as a plain Python value (bytes -> str)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode(array):
    """A structured array with its fixed-size byte strings decoded to str."""
    fields = [(name, array.dtype[name]) for name in array.dtype.names]
    dtype = [(name, "U%d" % max(dt.itemsize, 1) if dt.kind == "S" else dt)
             for name, dt in fields]
    out = np.empty(array.shape, dtype=dtype)
    for name, dt in fields:
        column = array[name]
        out[name] = (np.char.decode(column, "utf-8", "replace")
                     if dt.kind == "S" else column)
    return out


def check_schema(attrs, path):
    """(major, minor) of a file's root attributes ``attrs`` (decoded), or
    SchemaError when they do not name a schema this reader can read."""
    name = attrs.get("schema")
    if name == "collprof-baseline":
        raise SchemaError("%s: a collprof baseline file (collprof-report "
                          "baseline), not a result file" % path)
    if name != SCHEMA_NAME:
        raise SchemaError("%s: not a collprof result file (schema %r, "
                          "expected %r)" % (path, name, SCHEMA_NAME))
    version = str(attrs.get("schema_version", ""))
    major = attrs.get("schema_version_major")
    minor = attrs.get("schema_version_minor")
    if major is None or minor is None:
        parts = version.split(".")
        try:
            major = int(parts[0]) if major is None else major
            minor = int(parts[1]) if minor is None and len(parts) > 1 else (
                minor or 0)
        except ValueError:
            raise SchemaError("%s: bad schema_version %r" % (path, version))
    major, minor = int(major), int(minor)
    if major > SCHEMA_MAJOR:
        raise SchemaError("%s: schema %s version %d.%d is newer than this "
                          "reader (%d.x): update the collprof Python package"
                          % (path, SCHEMA_NAME, major, minor, SCHEMA_MAJOR))
    if major < 1:
        raise SchemaError("%s: unknown schema version %d.%d"
                          % (path, major, minor))
    return major, minor


def open_file(path):
    """An open h5py.File of ``path``; SchemaError when it exists but is not
    HDF5 (FileNotFoundError and other OSErrors pass through)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise IsADirectoryError("%s: is a directory" % path)
    if os.path.exists(path) and not os.access(path, os.R_OK):
        raise PermissionError("%s: permission denied" % path)
    try:
        return h5py.File(path, "r")
    except OSError as e:
        if os.path.isfile(path) and not h5py.is_hdf5(path):
            raise SchemaError("%s: not an HDF5 file" % path) from None
        if not os.path.exists(path):
            raise FileNotFoundError("%s: no such file" % path) from None
        raise OSError("%s: %s" % (path, e)) from None


def read_root(f, path):
    """The decoded root attributes and the (major, minor) schema version."""
    attrs = {k: text(v) for k, v in f.attrs.items()}
    return attrs, check_schema(attrs, path)


def read_tables(f, path):
    """Every table of TABLES that the file has: name -> decoded structured
    array.  SchemaError when a required one is missing or not a table."""
    out = {}
    for name in TABLES:
        if name not in f:
            if name in REQUIRED_TABLES:
                raise SchemaError("%s: no /%s table (a damaged file?)"
                                  % (path, name))
            continue
        obj = f[name]
        if (not isinstance(obj, h5py.Dataset) or obj.dtype.names is None
                or obj.ndim != 1):
            raise SchemaError("%s: /%s is not a table" % (path, name))
        out[name] = decode(obj[()])
    return out


def cell_name(cell):
    return "cells/%06d" % cell


def has_cell(f, cell):
    return cell_name(cell) in f


def cell_dataset(f, cell, dataset):
    """Dataset ``dataset`` of /cells/<cell> as an array, None when the cell
    has no such dataset, KeyError when the cell has no raw data."""
    group = f.get(cell_name(cell))
    if group is None:
        raise KeyError("cell %d has no raw data (it did not run: see its "
                       "status and error columns)" % cell)
    return group[dataset][()] if dataset in group else None
