#!/usr/bin/python3
"""Derive hostile trace files from a good one, for collprof --replay in
tests/integration/badinput.sh (the tr_*.h5 cases of tests/data/badinput.tsv).

    badinput_trace.py TRACE.h5 OUTDIR

TRACE.h5 is a trace collprof-report import --trace wrote (2 ranks).  Every
file is a copy of it damaged one way: a table missing or of the wrong type
or shape, a group's members out of range or twice, an op's rank, group,
split, count or name out of range, a root or peer not (another) member of
its group, a rank's seqs twice, with a gap or
negative.  Needs h5py and numpy; the output
is the same for the same TRACE.
"""
import os
import shutil
import sys

import h5py
import numpy as np

BASE, OUT = sys.argv[1], sys.argv[2]
I32_MAX, I64_MAX = 2**31 - 1, 2**63 - 1


def edit(name, fn):
    """tr_NAME.h5: a copy of BASE changed through h5py by fn(file)."""
    p = os.path.join(OUT, "tr_%s.h5" % name)
    shutil.copyfile(BASE, p)
    with h5py.File(p, "r+") as f:
        fn(f)


def replace(f, name, data):
    del f[name]
    f.create_dataset(name, data=data)


def rows(table, fn):
    """Rows of table changed by fn(rows) (a numpy record array), written back."""
    def change(f):
        r = f[table][()]
        fn(r)
        f[table][...] = r
    return change


def first(table, col, value, where=None):
    """Column col of the first row of table (where(row) true, if given) set to value."""
    def fn(r):
        i = next(k for k in range(len(r)) if where is None or where(r[k]))
        r[col][i] = value
    return rows(table, fn)


def coll(r):
    return r["peer"] < 0 and r["op"] not in (b"send", b"recv", b"wait")


def vop(r):
    return r["nsplit"] > 0


# ---- tables missing, of the wrong type or shape ----------------------------------------
edit("no_ops", lambda f: f.__delitem__("trace_ops"))
edit("no_groups", lambda f: f.__delitem__("trace_groups"))
edit("no_members", lambda f: f.__delitem__("trace_members"))
edit("ops_float", lambda f: replace(f, "trace_ops", np.ones(len(f["trace_ops"]))))
edit("ops_2d", lambda f: replace(f, "trace_ops", np.stack([f["trace_ops"][()]] * 2)))
edit("ops_group", lambda f: (f.__delitem__("trace_ops"), f.create_group("trace_ops")))
edit("groups_scalar", lambda f: replace(f, "trace_groups", f["trace_groups"][0]))
edit("members_str", lambda f: replace(f, "trace_members", np.array([b"0", b"1"])))
edit("splits_int", lambda f: replace(f, "trace_splits", np.arange(3)))
# a column missing: the rows' type has no seq
edit("ops_noseq", lambda f: replace(
    f, "trace_ops", f["trace_ops"][()][[n for n in f["trace_ops"].dtype.names if n != "seq"]]))

# ---- groups and members out of range -------------------------------------------------
edit("member_off", first("trace_groups", "member_off", 1000))
edit("group_size", first("trace_groups", "size", 1000))
edit("group_size_neg", first("trace_groups", "size", -1))
edit("group_id", first("trace_groups", "group", 7))
edit("member_neg", first("trace_members", "rank", -1))
edit("member_huge", first("trace_members", "rank", I32_MAX))
edit("member_twice", rows("trace_members", lambda r: r["rank"].__setitem__(1, r["rank"][0])))

# ---- ops out of range ------------------------------------------------------------------
edit("op_rank_neg", first("trace_ops", "rank", -1))
edit("op_rank_huge", first("trace_ops", "rank", I32_MAX))
edit("op_group", first("trace_ops", "group", 99))
edit("op_group_neg", first("trace_ops", "group", -1))
edit("op_split", first("trace_ops", "split_off", 1000, vop))
edit("op_nsplit", first("trace_ops", "nsplit", 1000, vop))
edit("op_root", first("trace_ops", "root", 7, lambda r: r["root"] >= 0))
edit("op_peer", first("trace_ops", "peer", 7, lambda r: r["peer"] >= 0))
edit("op_peer_self", first("trace_ops", "peer", 0, lambda r: r["peer"] >= 0 and r["rank"] == 0))
edit("op_peer_none", first("trace_ops", "peer", -1, lambda r: r["op"] == b"send"))
edit("op_count", first("trace_ops", "in_count", I64_MAX, coll))
edit("split_count", first("trace_splits", "count", 2**60))
edit("op_name", first("trace_ops", "op", b"frobnicate", coll))
# seqs: two of a rank's ops with one seq, a gap, a negative one
edit("seq_twice", rows("trace_ops", lambda r: r["seq"].__setitem__(1, r["seq"][0])))
edit("seq_gap", first("trace_ops", "seq", 1000))
edit("seq_neg", first("trace_ops", "seq", -5))
