#!/usr/bin/env python3
"""The one-way flow of collprof's code, checked on a build (docs/architecture.md).

Reads the symbols of every object file below BUILDDIR (nm) and, for each source
file of SRCDIR that one of them was compiled from, which files' symbols it uses:
a file "calls" another when it uses a function or variable the other defines.
Two rules:
  circles:  no two files call each other, directly or round a loop;
  layers:   a file of src/ calls only files of its own folder or of a layer
            below its own (LAYERS, bottom first).
Prints what breaks a rule, one line each, and exits 1; 0 when both hold.
Usage: layers.py BUILDDIR SRCDIR
"""
import collections
import os
import re
import subprocess
import sys

# src/ folders bottom first; a folder calls only those on lower lines (never
# one on its own line but itself).  A file named here sits apart from its folder.
LAYERS = [
    ["src/base", "src/trace"],
    ["src/counters"],
    ["src/colls"],
    ["src/screen"],
    ["src/format"],
    ["src/schema"],
    ["src/report/read"],
    ["src/report/args"],
    ["src/report/links_data"],
    ["src/report/best_cells"],
    ["src/report/import", "src/report/export", "src/report/plot", "src/report/cmd"],
    ["src/report/main"],
    ["src/plugin", "src/launch"],
    ["src/chan"],
    ["src/boot"],
    ["src/slurm"],
    ["src/wd"],
    ["src/runner"],
    ["src/plan"],
    ["src/cli", "src/screen/run"],
    ["src/output"],
    ["src/run"],
    ["src/collprof"],
]


def layer_of(path):
    """(layer index, unit name) of a source path without its suffix, or None."""
    best = None
    for i, units in enumerate(LAYERS):
        for u in units:
            if path == u or path.startswith(u + "/"):
                if best is None or len(u) > len(best[1]):
                    best = (i, u)
    return best


def source_of(obj, builddir, srcdir):
    """The source file (no suffix, relative to srcdir) an object was built from."""
    rel = os.path.relpath(os.path.dirname(obj), builddir).replace("/.libs", "")
    rel = "" if rel in (".", ".libs") else rel
    base = re.sub(r"^[A-Za-z0-9_]+-", "", os.path.basename(obj)[:-2])
    for cand in (base, os.path.basename(obj)[:-2]):
        p = os.path.normpath(os.path.join(rel, cand))
        if any(os.path.exists(os.path.join(srcdir, p + e)) for e in (".c", ".cc")):
            return p
    return None


def graph(builddir, srcdir):
    defs, uses, seen = {}, collections.defaultdict(set), set()
    for d, dirs, files in os.walk(builddir):
        dirs[:] = [x for x in dirs if x not in ("tests", "bench", "_inst")]
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            src = source_of(os.path.join(d, f), builddir, srcdir)
            if src is None or src in seen or not src.startswith(("src/", "plugins/")):
                continue
            seen.add(src)
            out = subprocess.run(["nm", os.path.join(d, f)], capture_output=True,
                                 text=True, check=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRC":  # weak (inline, template) ones belong to no file
                    # the MPI standard's names are the MPI library's, also where the recorder
                    # (src/trace) defines them to wrap them: a call of MPI_X is a call into MPI
                    if not p[2].startswith(("MPI_", "PMPI_")):
                        defs.setdefault(p[2], src)
                elif len(p) == 2 and p[0] == "U":
                    uses[src].add(p[1])
    edges = collections.defaultdict(set)
    for src, names in uses.items():
        for n in names:
            if n in defs and defs[n] != src:
                edges[src].add(defs[n])
    return sorted(seen), edges


def circles(files, edges):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in files:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv):
    if len(argv) != 3:
        print("usage: layers.py BUILDDIR SRCDIR", file=sys.stderr)
        return 2
    builddir, srcdir = argv[1], argv[2]
    files, edges = graph(builddir, srcdir)
    if not files:
        print("layers.py: error: no object file of src/ or plugins/ below " + builddir +
              ": build first", file=sys.stderr)
        return 2
    bad = 0
    for comp in circles(files, edges):
        inside = set(comp)
        calls = ", ".join(a + " -> " + b for a in comp for b in sorted(edges[a]) if b in inside)
        print("circle: " + calls)
        bad += 1
    for a in files:
        la = layer_of(a) if a.startswith("src/") else None
        if a.startswith("src/") and la is None:
            print("layers: %s is in no layer (contrib/layers.py LAYERS)" % a)
            bad += 1
            continue
        for b in sorted(edges.get(a, ())):
            if a.startswith("plugins/") or not b.startswith("src/"):
                if a.split("/")[:2] != b.split("/")[:2]:
                    print("layers: %s -> %s (a plugin calls only its own files)" % (a, b))
                    bad += 1
                continue
            lb = layer_of(b)
            if lb is not None and la[1] != lb[1] and lb[0] >= la[0]:
                print("layers: %s -> %s (%s may not call %s)" % (a, b, la[1], lb[1]))
                bad += 1
    print("%d files, %d calls between files, %d faults" %
          (len(files), sum(len(v) for v in edges.values()), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
