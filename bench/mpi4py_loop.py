#!/usr/bin/env python3
"""mpi4py_loop: the mpi4py reference for bench/overhead.sh.

The same loop as bench/mpi_loop.c, written with mpi4py and numpy, so that
collprof's figure can be set beside what a Python user of MPI measures:

  - OMPI_MCA_coll_tuned_use_dynamic_rules=1 (no overwrite) before MPI
    starts; MPI_Init_thread(MPI_THREAD_SERIALIZED) (mpi4py.rc.thread_level);
    errors returned and raised as exceptions (mpi4py's default);
  - per op, a communicator duplicated from MPI_COMM_WORLD;
  - two 4096-aligned numpy float32 buffers of count elements (numpy's
    transparent-huge-page madvise switched off, as the C loop's
    posix_memalign buffers get none), every page touched by fill(0), then
    the send buffer initialised to (rank + 1) * (i % 1000), all before
    timing; the same buffers every iteration;
  - W warm-up then N timed iterations; each iteration is
    MPI.COMM_WORLD.Barrier() (not timed) and one blocking call timed with
    time.clock_gettime_ns(CLOCK_MONOTONIC): comm.Allreduce(float32, SUM,
    out of place, count) or comm.Alltoall(count/n float32 per peer);
  - per-rank samples gathered to rank 0 after the loop; an iteration's
    time is its max over ranks; mean, min, max and nearest-rank
    p50/p95/p99 of those, in microseconds.

Usage: mpirun -np 2 python3 mpi4py_loop.py [-o allreduce,alltoall] [-c 4M]
       [-n 50] [-w 10] [-s barrier|none] [-W]   (-W: time on MPI_COMM_WORLD)
Output (rank 0), one line per op, the same key-value pairs as mpi_loop:
  op allreduce count 4194304 bytes 16777216 ranks 2 iters 50 warmup 10 ...
"""

import argparse
import math
import os
import sys
import time

NAME = "mpi4py_loop"
OPS = ("allreduce", "alltoall")


def parse_count(text):
    """A positive count with an optional K, M or G suffix (powers of 1024)."""
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = text
    f = 1
    if s and s[-1].lower() in mult:
        f = mult[s[-1].lower()]
        s = s[:-1]
    if not s.isdigit() or int(s) <= 0 or int(s) * f > 2147483647:
        raise argparse.ArgumentTypeError("bad count '%s'" % text)
    return int(s) * f


def int_at_least(minimum):
    def parse(text):
        if not text.isdigit() or int(text) < minimum or int(text) > 100000000:
            raise argparse.ArgumentTypeError("bad value '%s'" % text)
        return int(text)

    return parse


def parse_args():
    p = argparse.ArgumentParser(
        prog=NAME, description="Time MPI collectives with mpi4py the way bench/mpi_loop.c does."
    )
    p.add_argument("-o", dest="ops", default="allreduce,alltoall", help="allreduce,alltoall")
    p.add_argument("-c", dest="count", type=parse_count, default=4 << 20, help="elements (K/M/G)")
    p.add_argument("-n", dest="iters", type=int_at_least(1), default=50, help="timed iterations")
    p.add_argument("-w", dest="warmup", type=int_at_least(0), default=10, help="warm-up iterations")
    p.add_argument("-s", dest="sync", choices=("barrier", "none"), default="barrier")
    p.add_argument("-W", dest="world", action="store_true", help="time on MPI_COMM_WORLD, no dup")
    a = p.parse_args()
    ops = [t for t in a.ops.split(",") if t]
    if not ops:
        p.exit(2, "%s: no op given\n" % NAME)
    for t in ops:
        if t not in OPS:
            p.exit(2, "%s: unknown op '%s' (allreduce, alltoall)\n" % (NAME, t))
    a.ops = ops
    return a


def percentile(sorted_vals, q):
    """Nearest rank, as collprof's cp_stats_percentile."""
    n = len(sorted_vals)
    k = math.ceil(q * n) - 1
    return sorted_vals[min(max(k, 0), n - 1)]


def aligned_floats(np, count):
    """count float32 elements at a 4096-aligned address (like posix_memalign)."""
    raw = np.empty(count * 4 + 4096, dtype=np.uint8)
    off = (-raw.ctypes.data) % 4096
    return raw[off : off + count * 4].view(np.float32)


def fail(MPI, rank, what, err):
    sys.stderr.write("%s: rank %d: %s failed: %s\n" % (NAME, rank, what, err))
    sys.stderr.flush()
    MPI.COMM_WORLD.Abort(1)
    sys.exit(1)


def run_cell(MPI, np, op, a, rank, n):
    world = MPI.COMM_WORLD
    count = a.count
    if op == "alltoall" and count % n != 0:
        if rank == 0:
            sys.stderr.write(
                "%s: alltoall count %d is not a multiple of %d ranks\n" % (NAME, count, n)
            )
        return False
    try:
        comm = world if a.world else world.Dup()
    except MPI.Exception as e:
        fail(MPI, rank, "MPI_Comm_dup", e)
    recvbuf = aligned_floats(np, count)
    sendbuf = aligned_floats(np, count)
    # touch every page outside the timed loop, then initialise the input
    recvbuf.fill(0)
    sendbuf.fill(0)
    pattern = np.arange(1000, dtype=np.float32) * np.float32(rank + 1)
    whole = count // 1000 * 1000
    sendbuf[:whole].reshape(-1, 1000)[:] = pattern
    sendbuf[whole:] = pattern[: count - whole]

    mine = np.zeros(a.iters, dtype=np.float64)
    allv = np.zeros(a.iters * n, dtype=np.float64) if rank == 0 else None
    sbuf = [sendbuf, MPI.FLOAT]
    rbuf = [recvbuf, MPI.FLOAT]
    sync = a.sync == "barrier"
    call = comm.Allreduce if op == "allreduce" else comm.Alltoall
    args = (sbuf, rbuf, MPI.SUM) if op == "allreduce" else (sbuf, rbuf)
    clock = time_clock()
    what = "MPI_Allreduce" if op == "allreduce" else "MPI_Alltoall"
    for i in range(a.warmup + a.iters):
        if sync:
            try:
                world.Barrier()
            except MPI.Exception as e:
                fail(MPI, rank, "MPI_Barrier", e)
        try:
            t0 = clock()
            call(*args)
            t1 = clock()
        except MPI.Exception as e:
            fail(MPI, rank, what, e)
        if i >= a.warmup:
            mine[i - a.warmup] = (t1 - t0) * 1e-3
    try:
        world.Gather(mine, allv, root=0)
    except MPI.Exception as e:
        fail(MPI, rank, "MPI_Gather", e)
    if rank == 0:
        # per-iteration max over ranks, then statistics of those
        imax = sorted(allv.reshape(n, a.iters).max(axis=0).tolist())
        print(
            "op %s count %d bytes %d ranks %d iters %d warmup %d sync %s comm %s"
            " mean_us %.1f p50_us %.1f p95_us %.1f p99_us %.1f min_us %.1f max_us %.1f"
            % (
                op, count, count * 4, n, a.iters, a.warmup, a.sync,
                "world" if a.world else "dup", sum(imax) / a.iters,
                percentile(imax, 0.50), percentile(imax, 0.95), percentile(imax, 0.99),
                imax[0], imax[-1],
            ),
            flush=True,
        )
    if not a.world:
        comm.Free()
    return True


def time_clock():
    cid = time.CLOCK_MONOTONIC
    return lambda: time.clock_gettime_ns(cid)


def main():
    a = parse_args()  # bad usage exits 2 before MPI starts
    try:
        import numpy as np
        import mpi4py
    except ImportError as e:
        sys.stderr.write(
            "%s: %s (Debian/Ubuntu: apt-get install python3-mpi4py, which brings numpy)\n"
            % (NAME, e)
        )
        return 1
    # the C loop's posix_memalign buffers get no huge pages under THP "madvise";
    # numpy would madvise(MADV_HUGEPAGE) its large arrays
    try:
        np.core.multiarray._set_madvise_hugepage(False)
    except AttributeError:
        pass
    # as collprof's MPI backend: before MPI registers its variables, no overwrite
    os.environ.setdefault("OMPI_MCA_coll_tuned_use_dynamic_rules", "1")
    mpi4py.rc.thread_level = "serialized"
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    n = MPI.COMM_WORLD.Get_size()
    ok = True
    for op in a.ops:
        if not run_cell(MPI, np, op, a, rank, n):
            ok = False
            break
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
