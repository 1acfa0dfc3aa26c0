#!/usr/bin/python3
"""Silent connections at a run's TCP listeners, for the foreign-connection tests (foreign.sh).

Every 20 ms (--scan; the processes every 100 ms) it finds the listening TCP sockets of the processes it watches (--root PID: that
process and its descendants; --match REGEX: processes whose command line matches, and their
descendants; --env NAME=VALUE: only those with that variable), in whatever network namespace
each lives (/proc/PID/net/tcp{,6}, the socket's inode among the process's descriptors), and
keeps --conns connections open to each listener it can reach from here, sending nothing.
With --stream it opens a new one for each the listener closes, at once: a sustained flood.
With --collprof-only it keeps only listeners that greet a new connection with collprof's
challenge ("CPOC") within 200 ms.  A listener on 127.0.0.1 (or any address) in another
network namespace than this one cannot be reached from here: it is counted, not dialled.

It stops when the watched processes are gone (after it saw one) or after --duration seconds,
and prints one line: "flood: L listeners (P ports) dialled, C connections opened, K closed by
the listener, U listeners unreachable (another network namespace), N non-collprof skipped".
"""

import argparse
import errno
import os
import re
import resource
import selectors
import socket
import sys
import time


def own_netns():
    return os.stat("/proc/self/ns/net").st_ino


def ppid_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                st = f.read()
        except OSError:
            continue
        ppid = int(st[st.rindex(")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    return kids


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def has_env(pid, pair):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return pair.encode() in f.read().split(b"\0")
    except OSError:
        return False


def watched(args):
    """The pids watched now."""
    kids = ppid_map()
    roots = list(args.root)
    if args.match:
        rx = re.compile(args.match)
        roots += [p for ps in kids.values() for p in ps if rx.search(cmdline(p))]
    seen, todo = set(), [r for r in roots if os.path.exists(f"/proc/{r}")]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo += kids.get(p, [])
    if args.env:
        seen = {p for p in seen if has_env(p, args.env)}
    return seen


def hexaddr(h, v6):
    if not v6:
        return socket.inet_ntop(socket.AF_INET, bytes.fromhex(h)[::-1])
    b = bytes.fromhex(h)
    b = b"".join(b[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, b)


def listeners(pid):
    """(netns inode, family, address, port) of pid's listening TCP sockets."""
    try:
        inodes = set()
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        ns = os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return []
    out = []
    for name, v6 in (("tcp", False), ("tcp6", True)):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            c = row.split()
            if len(c) < 10 or c[3] != "0A" or c[9] not in inodes:
                continue
            h, port = c[1].split(":")
            fam = socket.AF_INET6 if v6 else socket.AF_INET
            out.append((ns, fam, hexaddr(h, v6), int(port, 16)))
    return out


class Flood:
    def __init__(self, args):
        self.args = args
        self.sel = selectors.DefaultSelector()
        self.targets = {}  # (ns, fam, addr, port) -> state
        self.opened = self.closed = 0
        self.finished = []  # listeners gone: (key, state)
        self.me = own_netns()

    def reachable(self, key):
        ns, fam, addr, _ = key
        if ns == self.me:
            return True
        return not (addr.startswith("127.") or addr in ("::1", "0.0.0.0", "::"))

    def dial(self, key):
        _, fam, addr, port = key
        if addr in ("0.0.0.0", "::"):
            addr = "127.0.0.1" if fam == socket.AF_INET else "::1"
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect((addr, port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return None
        self.opened += 1
        self.sel.register(s, selectors.EVENT_READ, key)
        self.targets[key]["socks"].add(s)
        return s

    def add(self, key):
        st = {"socks": set(), "state": "new", "since": time.monotonic()}
        self.targets[key] = st
        if not self.reachable(key):
            st["state"] = "unreachable"
            return
        st["state"] = "probe" if self.args.collprof_only else "on"
        for _ in range(1 if self.args.collprof_only else self.args.conns):
            self.dial(key)

    def drop(self, s, key):
        self.sel.unregister(s)
        s.close()
        self.targets[key]["socks"].discard(s)

    def on_read(self, s, key):
        st = self.targets[key]
        try:
            data = s.recv(4096)
        except OSError:
            data = b""
        if st["state"] == "probe" and data:
            st["state"] = "on" if data[:4] == b"CPOC" else "other"
        if not data:
            self.closed += 1
            self.drop(s, key)
        if st["state"] == "other":
            for x in list(st["socks"]):
                self.drop(x, key)

    def gone(self, key):
        """The listener closed: its connections closed, counted, forgotten (its port may
        come back as another listener)."""
        st = self.targets.pop(key)
        for x in list(st["socks"]):
            self.sel.unregister(x)
            x.close()
        st["socks"].clear()
        if st["state"] in ("on", "probe"):
            st["state"] = "done"
        self.finished.append((key, st))

    def top_up(self):
        now = time.monotonic()
        for key, st in self.targets.items():
            if st["state"] == "probe" and now - st["since"] > 0.2:
                st["state"] = "other"
                for x in list(st["socks"]):
                    self.drop(x, key)
            if st["state"] == "on" and (self.args.stream or not st.get("full")):
                while len(st["socks"]) < self.args.conns and self.dial(key) is not None:
                    pass
                st["full"] = True

    def summary(self):
        every = list(self.targets.items()) + self.finished
        n = lambda s: sum(1 for _, t in every if t["state"] in s)
        ports = {k[3] for k, t in every if t["state"] in ("on", "done")}
        return (
            f"flood: {n(('on', 'done'))} listeners ({len(ports)} ports) dialled, {self.opened} connections "
            f"opened, {self.closed} closed by the listener, {n(('unreachable',))} listeners "
            f"unreachable (another network namespace), {n(('other',))} non-collprof skipped"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=int, action="append", default=[])
    ap.add_argument("--match")
    ap.add_argument("--env")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--stream", action="store_true")
    ap.add_argument("--collprof-only", action="store_true")
    ap.add_argument("--duration", type=float, default=600.0)
    ap.add_argument("--scan", type=float, default=0.02, help="seconds between scans")
    ap.add_argument("--ready", help="touch this file once the watch has started")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    f = Flood(args)
    t0 = time.monotonic()
    seen_any, last_scan, last_pids, pids = False, 0.0, 0.0, set()
    if args.ready:
        open(args.ready, "w").close()
    while time.monotonic() - t0 < args.duration:
        now = time.monotonic()
        if now - last_pids >= max(args.scan, 0.1):  # the processes: a walk of /proc
            last_pids = now
            pids = watched(args)
            if pids:
                seen_any = True
            elif seen_any:
                break
        if now - last_scan >= args.scan:  # their listeners
            last_scan = now
            now_up = {key for p in pids for key in listeners(p)}
            for key in now_up - set(f.targets):
                f.add(key)
            for key in set(f.targets) - now_up:
                f.gone(key)
        for k, _ in f.sel.select(timeout=0.005):
            f.on_read(k.fileobj, k.data)
        f.top_up()
    print(f.summary(), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
