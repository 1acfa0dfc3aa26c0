"""python3 -m collprof summary|export: collprof result files from a shell.

    python3 -m collprof summary FILE_OR_DIR...
    python3 -m collprof export [--table results|samples|ranks|backends|
                                environment|links|screen]
                               [--format csv|jsonl] [-o OUT] FILE_OR_DIR...

Errors are one line on stderr, ``collprof: error: ...``; the exit status
is 1 for a file that cannot be read, 2 for a wrong command line.
"""

import argparse
import errno
import json
import math
import sys

from . import __version__, _file_last, _h5, expand_paths
from .report import Report

TABLES = ("results", "samples") + tuple(t for t in _h5.TABLES
                                        if t != "results")
MEASURED = ("ok", "wrong")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message):
        raise UsageError("%s (see %s --help)" % (message, self.prog))


def _parser():
    p = _Parser(prog="python3 -m collprof",
                description="Summarise or export collprof HDF5 result files.")
    p.add_argument("--version", action="version",
                   version="collprof (Python package) %s, reads schema %s "
                   "up to %d.%d" % (__version__, _h5.SCHEMA_NAME,
                                    _h5.SCHEMA_MAJOR, _h5.SCHEMA_MINOR))
    sub = p.add_subparsers(dest="command", metavar="summary|export",
                           parser_class=_Parser)
    s = sub.add_parser("summary", help="what each file holds, and a table "
                       "of its measured cells")
    s.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                   help="result files, or directories of *.h5 files")
    e = sub.add_parser("export", help="a table of every file as CSV or "
                       "JSON lines, with a file column")
    e.add_argument("paths", nargs="+", metavar="FILE_OR_DIR",
                   help="result files, or directories of *.h5 files")
    e.add_argument("--table", choices=TABLES, default="results",
                   help="results (one row per cell, the default), samples "
                   "(one row per cell, iteration and rank), or another "
                   "table of the file")
    e.add_argument("--format", choices=("csv", "jsonl"), default="csv",
                   help="csv (the default) or jsonl (one JSON object a line)")
    e.add_argument("-o", "--output", metavar="OUT",
                   help="write to OUT instead of standard output")
    return p


def _files(paths):
    files = expand_paths(paths)
    if not files:
        raise FileNotFoundError("no .h5 file in %s" % ", ".join(paths))
    return files


def _fmt_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%g %s" % (n, unit)
        n /= 1024.0


def summary(args, out):
    for i, path in enumerate(_files(args.paths)):
        r = Report(path)
        a = r.attrs
        t = r.results
        if i:
            print(file=out)
        print(path, file=out)
        print("  schema %s %d.%d, collprof %s, created %s, status %s"
              % (a.get("schema"), r.schema_version[0], r.schema_version[1],
                 a.get("collprof_version", "?"), a.get("created", "?"),
                 a.get("status", "?")), file=out)
        print("  ranks %s, nodes %s, launcher %s%s"
              % (a.get("world_size", "?"), a.get("node_count", "?"),
                 a.get("launcher", "?"),
                 ", tag %s" % a["tag"] if a.get("tag") else ""), file=out)
        if a.get("command_line"):
            print("  command: %s" % a["command_line"], file=out)
        counts = t["status"].value_counts() if len(t) else {}
        print("  cells: %d%s" % (len(t), "".join(
            ", %d %s" % (n, s) for s, n in sorted(dict(counts).items()))),
            file=out)
        for name in ("links", "screen"):
            table = getattr(r, name)
            if len(table):
                print("  %s: %d rows" % (name, len(table)), file=out)
        ok = t[t["status"].isin(MEASURED)] if len(t) else t
        if not len(ok):
            continue
        fmt = "  %-12s %-8s %-16s %-8s %10s %12s %12s %6s"
        print(fmt % ("op", "backend", "variant", "dtype", "size", "p50(us)",
                     "busBW(GB/s)", "wrong"), file=out)
        for row in ok.itertuples(index=False):
            print(fmt % (row.op, row.backend, row.variant, row.dtype,
                         _fmt_bytes(int(row.bytes)), "%.2f" % row.time_p50_us,
                         "%.3f" % row.busbw_gbs, row.wrong), file=out)


def export(args, out):
    import pandas as pd
    frames = []
    for path in _files(args.paths):
        r = Report(path)
        table = r.samples() if args.table == "samples" else getattr(r,
                                                                    args.table)
        frames.append(table.assign(file=path))
    table = _file_last(pd.concat(frames, ignore_index=True))
    if args.format == "csv":
        table.to_csv(out, index=False)
    else:
        for record in table.to_dict("records"):
            out.write(json.dumps({k: _plain(v) for k, v in record.items()},
                                 ensure_ascii=False, allow_nan=False) + "\n")


def _plain(value):
    """A value for JSON: NaN (a column an older file lacks) becomes null,
    and so does an infinity, which JSON cannot write."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value.item() if hasattr(value, "item") else value


def main(argv=None):
    parser = _parser()
    out = None
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            raise UsageError("a command is needed: summary or export (see "
                             "%s --help)" % parser.prog)
        out = (open(args.output, "w", encoding="utf-8", newline="")
               if getattr(args, "output", None) else sys.stdout)
        (summary if args.command == "summary" else export)(args, out)
        out.flush()
    except UsageError as e:
        print("collprof: error: %s" % e, file=sys.stderr)
        return 2
    except BrokenPipeError:
        # a reader such as head(1) went away: not an error of ours
        sys.stdout = None
        return 0
    except (OSError, ValueError, KeyError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e
        if isinstance(e, OSError) and e.filename and e.strerror:
            msg = "%s: %s" % (e.filename, e.strerror)
        elif isinstance(e, OSError) and e.errno == errno.ENOENT \
                and not str(e):
            msg = "no such file"
        print("collprof: error: %s" % str(msg).splitlines()[0],
              file=sys.stderr)
        return 1
    finally:
        if out is not None and out is not sys.stdout:
            out.close()
    return 0
