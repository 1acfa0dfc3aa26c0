#!/usr/bin/env python3
"""The simulator's grid as the tables of docs/screen.md ("The screen across the whole space").

Reads the document of `collprof-report simulate screen --grid --format json` (a file, or
standard input with no argument or "-") and prints, in Markdown:
  the grid table: one row per case, one column per node count or group of node counts
    (2, 3, 4, 5, 6-8, 9-16, 17-64, 128, 1,024, 4,096), each cell
    exact/missed/false positive/inconclusive in per cent of the runs; a column of several
    node counts sums their runs (and the k rows sum every k of their range as well);
  the baseline table: the cases run against a baseline on one switch, one row each;
  the spine table: the cases on two leaf switches with a spine at 0.5x (judged by class,
    against the screen's own figures and against a baseline by class), in the grid table's
    columns from 8 nodes, and the healthy one against a baseline with each pair's bandwidth
    test right after its own latency test (lat_with_bulk: the tests before 2026-12-06).
A figure of 1 % or more is rounded to a whole number (a half to the even one), one below it
to a tenth, one below 0.1 % but not 0 is written <0.1; a cell with no run is left empty.
With --rows it also prints each k row's figures per node count and k (what the breakdown
point is read from).  With --goals it prints, instead of the tables, issue 38's goals each
with "met" or "not met" and the node counts that miss it; --check (with --goals) exits 1 when
a goal is missed other than by the known shortfalls of SHORTFALLS, each held at its floor
(tests/integration/simulate_grid.sh).
Usage: screen_grid_table.py [--rows | --goals [--check]] [GRID.json]
"""
import json
import sys

COLUMNS = [("2", 2, 2), ("3", 3, 3), ("4", 4, 4), ("5", 5, 5), ("6-8", 6, 8),
           ("9-16", 9, 16), ("17-64", 17, 64), ("128", 128, 128), ("1,024", 1024, 1024),
           ("4,096", 4096, 4096)]
NOISES = [0.05, 0.1, 0.2, 0.3]
FACTORS = [0.3, 0.5, 0.7, 0.9]
FIELDS = ["exact", "missed", "false_positive", "inconclusive"]


def pct(part, runs):
    """One figure of a cell: part of runs in per cent, as the doc writes it."""
    if part == 0:
        return "0"
    v = 100.0 * part / runs
    if v < 0.1:
        return "<0.1"
    if v < 1:
        return "%.1f" % v
    return "%.0f" % v  # a half to the even whole number, as printf rounds


def cell(cases):
    runs = sum(c["runs"] for c in cases)
    if runs == 0:
        return ""
    return "/".join(pct(sum(c[f] for c in cases), runs) for f in FIELDS)


def k_group(k, n):
    """The k row of k slow nodes among n (k >= 2): each range holds its upper end."""
    if 8 * k <= n:
        return "up to N/8"
    if 4 * k <= n:
        return "N/8 to N/4"
    if 3 * k <= n:
        return "N/4 to N/3"
    return "N/3 to N/2"


def own(c):
    """A case of the grid's own figures (not against a baseline)."""
    return not c["baseline"] and c["spine"] == 0


def is_kslow(c):
    return own(c) and c["slow_count"] >= 2 and not c["slow"] and not c["links"] and \
        not c["paired_links"] and not c["hung"] and not c["setup_fail"]


def one_slow(c, f):
    return own(c) and c["slow_count"] == 1 and abs(c["factor"] - f) < 1e-9


def healthy(c):
    return own(c) and c["slow_count"] == 0 and not c["slow"] and not c["links"] and \
        not c["paired_links"] and not c["hung"] and not c["setup_fail"]


def rows():
    """(title, predicate) of the grid table's rows, in order."""
    out = []
    for p in NOISES:
        out.append(("healthy, ±%d %%" % round(p * 100),
                    lambda c, p=p: healthy(c) and abs(c["noise"] - p) < 1e-9))
    for f in FACTORS:
        for p in NOISES:
            out.append(("one node at %gx, ±%d %%" % (f, round(p * 100)),
                        lambda c, f=f, p=p: one_slow(c, f) and abs(c["noise"] - p) < 1e-9))
    for g in ["N/3 to N/2", "N/4 to N/3", "N/8 to N/4", "up to N/8"]:
        out.append(("2 or more at 0.5x, %s, ±10 %%" % g,
                    lambda c, g=g: is_kslow(c) and k_group(c["slow_count"], c["nodes"]) == g))
    out.append(("a link at 0.5x a round covers, ±10 %",
                lambda c: own(c) and bool(c["paired_links"])))
    out.append(("a hung node, ±10 %", lambda c: own(c) and bool(c["hung"])))
    out.append(("a node whose pairs cannot be set up, ±10 %",
                lambda c: own(c) and bool(c["setup_fail"])))
    return out


def grid_table(cases, title="case", table=None, columns=None):
    columns = columns or COLUMNS
    print("| %s | " % title + " | ".join(t for t, _, _ in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for title, pred in table or rows():
        sel = [c for c in cases if pred(c)]
        cells = [cell([c for c in sel if lo <= c["nodes"] <= hi]) for _, lo, hi in columns]
        print("| %s | %s |" % (title, " | ".join(cells)))


def spine(c, base, slow, before=False):
    """A case of the spine table: on two switches, against a baseline or not, one slow node
    or none, the tests as before 2026-12-06 or not."""
    return c["spine"] > 0 and c["baseline"] == base and c["slow_count"] == slow and \
        bool(c.get("lat_with_bulk", False)) == before


SPINE_ROWS = [
    ("healthy, by class", lambda c: spine(c, False, 0)),
    ("one node at 0.5x, by class", lambda c: spine(c, False, 1)),
    ("healthy, against a baseline by class", lambda c: spine(c, True, 0)),
    ("one node at 0.5x, against a baseline by class", lambda c: spine(c, True, 1)),
    ("healthy, against a baseline by class, each pair's bulk right after its latency "
     "(before 2026-12-06)", lambda c: spine(c, True, 0, True)),
]


def spine_table(cases):
    if any(c["spine"] > 0 for c in cases):
        grid_table(cases, "case (spine 0.5x, ±10 %)", SPINE_ROWS,
                   [("8", 8, 8)] + COLUMNS[5:])


def baseline_table(cases):
    base = [c for c in cases if c["baseline"] and c["spine"] == 0]
    if not base:
        return
    print("| nodes | case (against a baseline, ±10 %) | exact | missed | false positive | "
          "inconclusive |")
    print("|---:|---|---:|---:|---:|---:|")
    for c in sorted(base, key=lambda c: (c["nodes"], c["slow_count"] == 0, c["factor"])):
        what = "healthy" if c["slow_count"] == 0 else "one node at %gx" % c["factor"]
        print("| %d | %s | %s |" % (c["nodes"], what,
                                    " | ".join(pct(c[f], c["runs"]) for f in FIELDS)))


def k_rows(cases):
    print("nodes k share exact missed false_positive inconclusive runs rounds_max")
    for c in sorted((c for c in cases if is_kslow(c)), key=lambda c: (c["nodes"], c["slow_count"])):
        print("%5d %4d %5.3f %5d %6d %14d %12d %4d %10d" % (
            c["nodes"], c["slow_count"], c["slow_count"] / c["nodes"], c["exact"], c["missed"],
            c["false_positive"], c["inconclusive"], c["runs"], c["rounds_max"]))


# Known shortfalls against the goals, held at a floor: (goal, nodes) -> the least share exact.
SHORTFALLS = {}  # none held: 4 nodes met the goal once the screen ran the circle twice


def share(c, field="exact"):
    return c[field] / c["runs"] if c["runs"] else 0.0


def goal_lines(cases):
    """(goal, ok, misses): misses a list of (nodes, share, floor or None, what)."""
    out = []
    miss = []
    for c in cases:  # one node at 0.7x or slower, +-5-10 %, N >= 4: 99 %
        if one_slow(c, c["factor"]) and c["factor"] <= 0.7 and c["noise"] <= 0.1 + 1e-9 \
                and c["nodes"] >= 4 and share(c) < 0.99:
            miss.append((c["nodes"], share(c), "%gx, ±%d %%" % (c["factor"], round(c["noise"] * 100))))
    out.append(("one slow node", "one node at 0.7x or slower, ±10 %, exact in 99 % at every N "
                "from 4", miss))
    miss = [(c["nodes"], share(c), "%gx" % c["factor"]) for c in cases
            if c["baseline"] and c["nodes"] == 3 and c["slow_count"] == 1 and c["factor"] <= 0.7
            and share(c) < 0.95]
    out.append(("three nodes", "N = 3 with a baseline, 95 %", miss))
    miss = [(c["nodes"], share(c), "k = %d" % c["slow_count"]) for c in cases
            if is_kslow(c) and 2 * c["slow_count"] <= c["nodes"] and share(c) < 0.95]
    out.append(("up to half", "up to N/2 nodes at 0.5x found with no healthy node named, 95 %",
                miss))
    miss = [(c["nodes"], share(c, "false_positive"), "±20 %") for c in cases
            if healthy(c) and abs(c["noise"] - 0.2) < 1e-9 and c["nodes"] >= 3
            and share(c, "false_positive") > 0.01]
    out.append(("healthy", "healthy clusters at ±20 % flagged in at most 1 %", miss))
    miss = [(c["nodes"], share(c, "setup_slow"), "set-up failure") for c in cases
            if c.get("setup_slow", 0) > 0]
    out.append(("set-up", "a node whose pairs cannot be set up never slow (0 in the grid)", miss))
    miss = [(c["nodes"], c["rounds_max"], "%s rounds" % c["rounds_max"]) for c in cases
            if own(c) and c["noise"] <= 0.1 + 1e-9 and c["slow_count"] <= 1 and not c["slow"]
            and not c["hung"] and not c["setup_fail"]
            and ((c["nodes"] == 1024 and c["rounds_max"] > 6)
                 or (c["nodes"] == 4096 and c["rounds_max"] > 7))]
    out.append(("rounds", "at most 6 rounds at 1,024 nodes and 7 at 4,096 (one fault, ±5-10 %)",
                miss))
    miss = [(c["nodes"], share(c, "false_positive"), "%s" % ("baseline" if c["baseline"] else
                                                            "by class"))
            for c in cases if (spine(c, False, 0) or spine(c, True, 0))
            and share(c, "false_positive") > 0.01]
    out.append(("spine", "a spine at 0.5x, healthy, by class and against a baseline by class: "
                "flagged in at most 1 %", miss))
    return out


def goals(cases, check):
    bad = 0
    for key, words, miss in goal_lines(cases):
        held = [m for m in miss if (key, m[0]) in SHORTFALLS and m[1] >= SHORTFALLS[(key, m[0])]]
        print("%s: %s%s" % (words, "met" if not miss else "not met",
                            "" if not miss else ": " + ", ".join(
                                "%d nodes %s %.3g" % (n, what, v) for n, v, what in miss)))
        bad += len(miss) - len(held)
    if check and bad:
        print("%d miss%s beyond the known shortfalls" % (bad, "" if bad == 1 else "es"))
        return 1
    return 0


def main(argv):
    args = [a for a in argv[1:] if a not in ("--rows", "--goals", "--check")]
    if len(args) > 1 or any(a.startswith("--") for a in args):
        sys.stderr.write(__doc__)
        return 2
    src = sys.stdin if not args or args[0] == "-" else open(args[0], encoding="utf-8")
    doc = json.load(src)
    if doc.get("format") != "collprof-simulate" or doc.get("what") != "screen":
        sys.stderr.write("not a collprof-report simulate screen document\n")
        return 2
    cases = doc["cases"]
    if "--goals" in argv[1:]:
        return goals(cases, "--check" in argv[1:])
    grid_table(cases)
    print()
    baseline_table(cases)
    print()
    spine_table(cases)
    if "--rows" in argv[1:]:
        print()
        k_rows(cases)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
