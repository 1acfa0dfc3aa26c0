#!/usr/bin/python3
"""Derive hostile HDF5 files from a real collprof result file, for
tests/integration/badinput.sh (the cases in tests/data/badinput.tsv).

    badinput_h5.py BASE.h5 OUTDIR

Every file is a copy of BASE damaged one way: truncated, bit-flipped
metadata, datasets and attributes of the wrong type or shape, huge declared
dimensions over tiny storage, external links, external and virtual
datasets, soft-link loops, hostile strings, missing groups.  Special files
(FIFO, directory, device links) are made by the shell test itself.  Needs
h5py and numpy; the output is the same for the same BASE.
"""
import os
import shutil
import sys

import h5py
import numpy as np

BASE, OUT = sys.argv[1], sys.argv[2]
RAW = open(BASE, "rb").read()


def path(name):
    return os.path.join(OUT, name)


def raw(name, data):
    with open(path(name), "wb") as f:
        f.write(data)


def copy(name):
    shutil.copyfile(BASE, path(name))
    return path(name)


def edit(name, fn):
    """A copy of BASE changed through h5py by fn(file)."""
    with h5py.File(copy(name), "r+") as f:
        fn(f)


def flip(data, off, mask=0x10):
    b = bytearray(data)
    b[off] ^= mask
    return bytes(b)


# ---- byte-level damage ---------------------------------------------------------
for pct in (1, 5, 10, 25, 50, 75, 90, 99):
    raw("trunc_%02d.h5" % pct, RAW[: len(RAW) * pct // 100])
raw("trunc_sig.h5", RAW[:8])
raw("trunc_last.h5", RAW[:-1])
raw("sig_only_padded.h5", RAW[:8] + b"\0" * 4096)
raw("zeros.h5", b"\0" * len(RAW))
raw("text.h5", b"collprof_20261122T000000Z_w4.h5 is not this\n")
raw("flip_sig.h5", flip(RAW, 1))
# superblock: version, sizes of offsets/lengths, base, end-of-file and root addresses
for off in (8, 9, 13, 14, 20, 28, 36, 44):
    raw("flip_sb_%02d.h5" % off, flip(RAW, off, 0x40))
# metadata blocks start with a signature (v1: TREE, HEAP, SNOD, GCOL; v2 ones end
# with a checksum too): damage the signature of the first few of each kind
for sig in (b"TREE", b"HEAP", b"SNOD", b"GCOL", b"OHDR", b"BTHD", b"BTLF", b"FRHP"):
    pos, n = 0, 0
    while n < 3:
        pos = RAW.find(sig, pos)
        if pos < 0:
            break
        raw("flip_%s_sig_%d.h5" % (sig.decode().lower(), n), flip(RAW, pos + 1))
        if sig in (b"OHDR", b"BTHD", b"BTLF", b"FRHP"):
            raw("flip_%s_body_%d.h5" % (sig.decode().lower(), n), flip(RAW, pos + 6, 0x01))
        pos += 4
        n += 1
# the object headers of the tables and of a cell: their version byte
with h5py.File(BASE, "r") as f:
    for obj in ("results", "ranks", "environment", "cells", "cells/000000/samples_us"):
        addr = h5py.h5o.get_info(f[obj].id).addr
        raw("flip_ohdr_%s.h5" % obj.split("/")[-1], flip(RAW, addr, 0x07))
# the results rows themselves: random bytes over the first row
with h5py.File(BASE, "r") as f:
    off = f["results"].id.get_offset()
if off is not None:
    b = bytearray(RAW)
    rnd = np.random.RandomState(15).bytes(200)
    b[off + 8 : off + 208] = rnd
    raw("rows_random.h5", bytes(b))
    raw("rows_ff.h5", bytes(RAW[: off + 8]) + b"\xff" * 200 + RAW[off + 208 :])

# ---- structure: missing, wrong type, wrong shape -----------------------------------
for name in ("results", "ranks", "cells", "environment"):
    edit("no_%s.h5" % name, lambda f, n=name: f.__delitem__(n))
edit("no_cell0.h5", lambda f: f.__delitem__("cells/000000"))
edit("no_samples.h5", lambda f: f.__delitem__("cells/000000/samples_us"))
edit("no_rank_mean.h5", lambda f: f.__delitem__("cells/000000/rank_mean_us"))
for a in ("schema", "schema_version", "collprof_version", "node_count"):
    edit("noattr_%s.h5" % a, lambda f, a=a: f.attrs.__delitem__(a))
with h5py.File(path("empty_hdf5.h5"), "w"):
    pass
with h5py.File(path("foreign.h5"), "w") as f:
    f["x"] = np.arange(10)


def replace(f, name, data, **kw):
    del f[name]
    f.create_dataset(name, data=data, **kw)


edit("results_group.h5", lambda f: (f.__delitem__("results"), f.create_group("results")))
edit("results_int.h5", lambda f: replace(f, "results", np.arange(3)))
edit("results_2d.h5", lambda f: replace(f, "results", np.zeros((3, 3), f["results"].dtype)))
edit("results_scalar.h5", lambda f: replace(f, "results", f["results"][0]))
edit("results_str.h5", lambda f: replace(f, "results", np.array([b"allreduce"] * 3)))
edit("ranks_float.h5", lambda f: replace(f, "ranks", np.ones(2)))
edit("environment_int.h5", lambda f: replace(f, "environment", np.arange(4)))
edit("samples_int.h5", lambda f: replace(f, "cells/000000/samples_us",
                                         f["cells/000000/samples_us"][()].astype("i8")))
edit("samples_1d.h5", lambda f: replace(f, "cells/000000/samples_us",
                                        f["cells/000000/samples_us"][()].ravel()))
edit("samples_str.h5", lambda f: replace(f, "cells/000000/samples_us", b"fast"))
edit("samples_nan.h5", lambda f: replace(
    f, "cells/000000/samples_us", np.full(f["cells/000000/samples_us"].shape, np.nan)))
edit("samples_neg.h5", lambda f: replace(
    f, "cells/000000/samples_us", -np.ones(f["cells/000000/samples_us"].shape)))
edit("samples_inf.h5", lambda f: replace(
    f, "cells/000000/samples_us", np.full(f["cells/000000/samples_us"].shape, np.inf)))
edit("rank_mean_short.h5", lambda f: replace(f, "cells/000000/rank_mean_us", np.ones(1)))
edit("attr_version_int.h5", lambda f: f.attrs.__setitem__("schema_version", 1))
edit("attr_version_array.h5", lambda f: f.attrs.__setitem__("schema_version", ["1.3", "1.3"]))
edit("attr_major_str.h5", lambda f: f.attrs.__setitem__("schema_version_major", "one"))
edit("attr_major_huge.h5", lambda f: f.attrs.__setitem__("schema_version_major", 2**62))
edit("attr_major_neg.h5", lambda f: f.attrs.__setitem__("schema_version_major", -1))
edit("attr_nodes_str.h5", lambda f: f.attrs.__setitem__("node_count", "two"))
edit("attr_nodes_array.h5", lambda f: f.attrs.__setitem__("node_count", np.arange(5)))
edit("attr_schema_other.h5", lambda f: f.attrs.__setitem__("schema", "not-collprof"))
edit("attr_compound.h5", lambda f: f.attrs.__setitem__("schema_version",
                                                       np.zeros(1, "i4,f8")[0]))


def grow(f, name, n):
    """Declare n rows of a chunked table while storing only the old ones."""
    d = f[name]
    data, attrs = d[()], dict(d.attrs)
    del f[name]
    nd = f.create_dataset(name, shape=(n,) + data.shape[1:], maxshape=(None,) + data.shape[1:],
                          dtype=data.dtype, chunks=(1,) + data.shape[1:])
    nd[: len(data)] = data
    for k, v in attrs.items():
        nd.attrs[k] = v


edit("huge_results.h5", lambda f: grow(f, "results", 2**40))
edit("million_results.h5", lambda f: grow(f, "results", 10**6))
edit("million_ranks.h5", lambda f: grow(f, "ranks", 10**6))
edit("million_environment.h5", lambda f: grow(f, "environment", 10**6))
edit("huge_samples.h5", lambda f: grow(f, "cells/000000/samples_us", 2**31))


def compressed_table(f, name, n):
    """n rows of zeros behind gzip: a million-row table in a few kB."""
    d = f[name]
    dt = d.dtype
    del f[name]
    nd = f.create_dataset(name, shape=(n,), dtype=dt, chunks=(65536,), compression="gzip",
                          compression_opts=1)
    nd[...] = np.zeros(n, dt)


edit("million_rows_gzip.h5", lambda f: compressed_table(f, "results", 10**6))
edit("million_ranks_gzip.h5", lambda f: compressed_table(f, "ranks", 10**6))

# ---- links and storage that lead elsewhere --------------------------------------------


def soft_loop(f):
    del f["results"]
    f["results"] = h5py.SoftLink("/loop")
    f["loop"] = h5py.SoftLink("/results")


def ext(target_file, target_obj):
    def fn(f):
        del f["results"]
        f["results"] = h5py.ExternalLink(target_file, target_obj)
    return fn


edit("softlink_loop.h5", soft_loop)
edit("softlink_dangling.h5", lambda f: (f.__delitem__("results"),
                                       f.__setitem__("results", h5py.SoftLink("/nowhere"))))
edit("softlink_self.h5", lambda f: (f.__delitem__("ranks"),
                                   f.__setitem__("ranks", h5py.SoftLink("/ranks"))))
edit("extlink_base.h5", ext(os.path.abspath(BASE), "/results"))
edit("extlink_fifo.h5", ext(path("fifo"), "/results"))
edit("extlink_missing.h5", ext("/nonexistent/x.h5", "/results"))
edit("extlink_cells.h5", lambda f: (f.__delitem__("cells"),
                                   f.__setitem__("cells",
                                                 h5py.ExternalLink(os.path.abspath(BASE),
                                                                   "/cells"))))
edit("hardlink_cycle.h5", lambda f: f["cells/000000"].__setitem__("up", f["cells"]))


def external_storage(target):
    def fn(f):
        d = f["results"]
        data = d[()]
        del f["results"]
        f.create_dataset("results", shape=data.shape, dtype=data.dtype,
                         external=[(target, 0, data.nbytes)])
    return fn


edit("external_zero.h5", external_storage("/dev/zero"))
edit("external_fifo.h5", external_storage(path("fifo")))
edit("external_missing.h5", external_storage("/nonexistent/rows.bin"))


def virtual(f):
    d = f["results"]
    lay = h5py.VirtualLayout(shape=d.shape, dtype=d.dtype)
    lay[:] = h5py.VirtualSource(os.path.abspath(BASE), "results", shape=d.shape)
    del f["results"]
    f.create_virtual_dataset("results", lay)


def virtual_samples(f):
    d = f["cells/000000/samples_us"]
    lay = h5py.VirtualLayout(shape=d.shape, dtype=d.dtype)
    lay[...] = h5py.VirtualSource(path("fifo"), "x", shape=d.shape)
    del f["cells/000000/samples_us"]
    f.create_virtual_dataset("cells/000000/samples_us", lay)


edit("virtual_results.h5", virtual)
edit("virtual_samples.h5", virtual_samples)

# ---- hostile strings -------------------------------------------------------------------


def set_field(table, col, value):
    def fn(f):
        d = f[table]
        rows = d[()]
        rows[0][col] = value
        d[0] = rows[0]
    return fn


HOSTILE = {
    "esc": b"a\x1b[31mred\x1b[0m",
    "nl": b"two\nlines",
    "cr": b"over\rwrite",
    "ff": b"bad\xffutf8",
    "overlong": b"\xc0\xafslash",
    "bidi": "rtl\u202eevil".encode(),
    "del": b"del\x7f",
}
with h5py.File(BASE, "r") as f:
    host_col = "host" if "host" in f["ranks"].dtype.names else f["ranks"].dtype.names[1]
    res_cols = f["results"].dtype.names
op_col = "op" if "op" in res_cols else "operation"
for tag, s in HOSTILE.items():
    edit("str_host_%s.h5" % tag, set_field("ranks", host_col, s))
    edit("str_op_%s.h5" % tag, set_field("results", op_col, s))
    edit("str_backend_%s.h5" % tag, set_field("results", "backend", s))
for tag in ("esc", "ff", "bidi", "nl"):
    s = HOSTILE[tag]
    edit("attr_tag_%s.h5" % tag,
         lambda f, s=s: f.attrs.__setitem__("tag", np.bytes_(s)))
    edit("attr_version_%s.h5" % tag,
         lambda f, s=s: f.attrs.__setitem__("collprof_version", np.bytes_(s)))
    edit("attr_cmdline_%s.h5" % tag,
         lambda f, s=s: f.attrs.__setitem__("command_line", np.bytes_(s)))
    # the job's facts are copied as Slurm gives them: shown escaped, never refused
    edit("attr_slurm_%s.h5" % tag,
         lambda f, s=s: f.attrs.__setitem__("slurm_partition", np.bytes_(s)))
# what a Prometheus label or a JSON string must escape: quotes, backslashes, braces
edit("str_variant_quotes.h5", set_field("results", "variant", b'a"b\\c},x="y'))
edit("attr_slurm_quotes.h5",
     lambda f: f.attrs.__setitem__("slurm_partition", np.bytes_(b'p"\\q\\n')))
