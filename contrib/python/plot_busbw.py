#!/usr/bin/python3
"""Print a table of collprof results and plot busBW against message size.

    /usr/bin/python3 contrib/python/plot_busbw.py RESULTS/ --out busbw.png

FILE_OR_DIR are collprof HDF5 result files or directories holding them.
The table lists every measured cell (status ok or wrong).  The plot has one
panel per operation and one line per backend/variant (alltoallv,
allgatherv, gatherv, scatterv: per imbalance pattern too); points of the same size from
several files are averaged.  Without matplotlib the plot is skipped with a
message.
"""

import argparse
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collprof_h5  # noqa: E402  (next to this script)

MEASURED = ("ok", "wrong")


def read(paths):
    """The measured result rows of every file and directory, as dicts."""
    runs = []
    for path in paths:
        if os.path.isdir(path):
            runs += [collprof_h5.load(os.path.join(path, n))
                     for n in sorted(os.listdir(path)) if n.endswith(".h5")]
        else:
            runs.append(collprof_h5.load(path))
    rows = collprof_h5.records(collprof_h5.concat(runs))
    return [r for r in rows if r["status"] in MEASURED]


def series(row):
    """The line a row belongs to: backend/variant, plus the imbalance."""
    name = "%s/%s" % (row["backend"], row["variant"])
    return name + (" " + row["imbalance"] if row["imbalance"] else "")


def order(row):
    return (row["op"], row["backend"], row["variant"], row["imbalance"],
            row["bytes"])


def print_table(rows, out=sys.stdout):
    """One line per measured cell: op, backend, variant, bytes, busBW, p50."""
    head = ("op", "backend", "variant", "bytes", "busBW(GB/s)", "p50(us)")
    fmt = "%-24s %-8s %-20s %12s %12s %10s"
    print(fmt % head, file=out)
    for r in sorted(rows, key=order):
        op = r["op"] + ("(%s)" % r["imbalance"] if r["imbalance"] else "")
        print(fmt % (op, r["backend"], r["variant"], r["bytes"],
                     "%.3f" % r["busbw_gbs"], "%.1f" % r["time_p50_us"]),
              file=out)


def size_label(nbytes, _pos=None):
    """A byte count as 512, 16K, 1M, 2G (powers of 1024)."""
    for unit in ("", "K", "M", "G"):
        if nbytes < 1024 or unit == "G":
            return "%g%s" % (nbytes, unit)
        nbytes /= 1024.0


def plot(rows, out):
    """busBW vs bytes, one panel per op, to the PNG ``out``.  Returns False
    (after a message) when matplotlib is not installed."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FuncFormatter
    except ImportError:
        print("matplotlib not found: skipping the plot", file=sys.stderr)
        return False
    # op -> series -> bytes -> [busBW, ...]; bytes 0 (barrier) has no busBW
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in rows:
        if r["bytes"] > 0:
            data[r["op"]][series(r)][r["bytes"]].append(r["busbw_gbs"])
    ops = sorted(data)
    if not ops:
        print("no measured cell with data: nothing to plot", file=sys.stderr)
        return False
    cols = min(3, len(ops))
    nrows = (len(ops) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.8 * nrows),
                             squeeze=False)
    for ax, op in zip(axes.flat, ops):
        for name in sorted(data[op]):
            points = sorted(data[op][name].items())
            ax.plot([b for b, _ in points],
                    [sum(v) / len(v) for _, v in points],
                    marker="o", label=name)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.set_title(op)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busBW (GB/s)")
        ax.set_ylim(bottom=0)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes.flat[len(ops):]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print("plot: %s" % out)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                        help="collprof .h5 files or directories of them")
    parser.add_argument("--out", default="busbw.png",
                        help="PNG to write (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        rows = read(args.paths)
    except (OSError, collprof_h5.SchemaError) as e:
        print("plot_busbw: %s" % e, file=sys.stderr)
        return 1
    print_table(rows)
    plot(rows, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
