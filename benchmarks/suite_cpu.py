"""Benchmark: where a test run's CPU goes, and the fewest seconds its work can take here.

    sudo python3 benchmarks/suite_cpu.py                 # make test, in this folder
    sudo python3 benchmarks/suite_cpu.py -- .ci/run      # CI's run, setup included
    sudo python3 benchmarks/suite_cpu.py -- .venv/bin/python -m pytest tests/grading -q

Runs the command (in the current folder; the script needs only Python's standard
library, so a fresh clone can be measured before its .venv exists) with the kernel's
process accounting on (acct(2), BSD accounting
version 3: one record per process as it ends, with its user and system CPU time, pid
and parent's pid) while a thread reads each new process's command line from /proc
every 0.3 s. At the end it prints the run's wall-clock seconds, the CPU-seconds of the
processes that ended meanwhile, grouped by kind (a process whose command line was not
read, such as a learner's process forked from the zygote, takes its nearest known
ancestor's), and the bound that follows: those CPU-seconds over the cores, the fewest
seconds the same work could take on this machine with nothing waiting. Accounting sees
every process of the machine: on a machine shared with other work, the line "of which the
command's own" counts only the processes descended from the command (each process's parent
from its record, or as the sampler first saw it, so that one which left its parent, such as
a daemon, still counts, unless it left within the sampler's 0.3 s, as a double fork does);
the kinds are the command's own. Needs root; the
machine has one accounting file at a time, and accounting is off again at the end. The
kernel stops accounting while less than 2 % of that disk is free (`/proc/sys/kernel/acct`):
the counts are then short.
"""
import argparse
import collections
import ctypes
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h): 64 bytes
TICKS = 100  # AHZ: the records' CPU times are in hundredths of a second

# (kind, test on the command line); the first that matches names a process
KINDS = [
    ("learner processes and zygotes", lambda c: "sys.path[:0]" in c),
    ("Chromium", lambda c: "chrom" in c or "headless_shell" in c),
    ("kernels (ipykernel)", lambda c: "ipykernel" in c),
    ("nbgrader commands", lambda c: "nbgrader " in c or c.endswith("nbgrader")),
    ("grading services and workers", lambda c: "-m autograder.service" in c),
    ("grading command and Gradescope runs", lambda c: "-m autograder" in c),
    ("Jupyter servers, JupyterHub, its proxy", lambda c: any(
        w in c for w in ("jupyterhub", "configurable-http-proxy", "jupyter_local", "jupyterlab"))),
    ("site builds", lambda c: "jupyter-book" in c or "sphinx" in c),
    ("PostgreSQL", lambda c: c.split(" ")[0].rsplit("/", 1)[-1].startswith(
        ("postgres", "initdb", "pg_"))),
    ("pytest and its workers", lambda c: "pytest" in c or "exec(eval(sys.stdin" in c),
]


def accounting(path):
    """Turn process accounting on into ``path`` (None: off); OSError if the kernel refuses."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(None if path is None else str(path).encode()) != 0:
        raise OSError(ctypes.get_errno(), "acct(2) refused (run as root)")


def _comp(value):
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent) as an int."""
    return (value & 0x1FFF) << (3 * (value >> 13 & 7))


def records(path):
    """``[(pid, ppid, start, end, cpu_seconds)]`` of an acct v3 file (start/end: epoch s)."""
    data, out = Path(path).read_bytes(), []
    for (_flag, version, _tty, _exit, _uid, _gid, pid, ppid, btime, etime, utime, stime,
         *_rest) in RECORD.iter_unpack(data[:len(data) // RECORD.size * RECORD.size]):
        if version & 0x0F == 3:
            out.append((pid, ppid, btime, btime + etime / TICKS, (_comp(utime) + _comp(stime)) / TICKS))
    return out


class CommandLines(threading.Thread):
    """Reads every new process's command line and parent every 0.3 s until stopped:
    ``seen[pid]`` is a list of ``(time, command line)`` and ``parents[pid]`` one of
    ``(time, parent's pid)`` (pids are reused; a record's own parent is its parent at exit)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen, self.stopped = collections.defaultdict(list), threading.Event()
        self.parents = collections.defaultdict(list)

    def run(self):
        known = set()
        while not self.stopped.wait(0.3):
            now, pids = time.time(), set(os.listdir("/proc"))
            for pid in pids - known:
                if not pid.isdigit():
                    continue
                try:
                    line = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                except OSError:
                    continue
                if line:
                    self.seen[int(pid)].append((now, line.decode(errors="replace").strip()))
                try:  # /proc/PID/stat: "pid (comm) state ppid ...", comm may hold spaces
                    ppid = int(Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                self.parents[int(pid)].append((now, ppid))
            known = pids

    def parent(self, pid, start, end):
        """The parent ``pid`` had when first seen while it ran from start to end, or None."""
        return next((ppid for when, ppid in self.parents.get(pid, ())
                     if start - 1 <= when <= end + 1), None)

    def at(self, pid, start, end):
        """The command line of ``pid`` as seen while it ran from start to end, or None."""
        return next((line for when, line in self.seen.get(pid, ())
                     if start - 1 <= when <= end + 1), None)


def classify(line):
    """The :data:`KINDS` name of a command line, or "other"."""
    return next((kind for kind, test in KINDS if test(line)), "other")


def kind_of(record, lines, by_pid):
    """The kind of one record's process: from its command line or its nearest ancestor's
    (a parent that ended in the run is a record; one still running, the sampler's line)."""
    pid, ppid, start, end, _ = record
    for _ in range(30):
        line = lines.at(pid, start, end)
        if line:
            return classify(line)
        parent = next((r for r in by_pid.get(ppid, ()) if r[2] - 1 <= start <= r[3] + 1), None)
        if parent is None:
            line = lines.at(ppid, start, start)
            return classify(line) if line else "other"
        pid, ppid, start, end, _ = parent
    return "other"


def own(ended, lines, by_pid, root):
    """The records of ``ended`` whose process descends from the pid ``root``."""
    memo = {}

    def descends(record, depth=0):
        key = record[:3]
        if key not in memo:
            memo[key] = False
            pid, ppid, start, end, _ = record
            found = False
            for parent_pid in {ppid, lines.parent(pid, start, end)} - {None, 0, 1}:
                if parent_pid == root:
                    found = True
                    break
                parent = next((r for r in by_pid.get(parent_pid, ())
                               if r[2] - 1 <= start <= r[3] + 1), None)
                if parent is not None and depth < 200 and descends(parent, depth + 1):
                    found = True
                    break
                if parent is None and lines.parent(parent_pid, start, start) == root:
                    found = True
                    break
            memo[key] = found
        return memo[key]

    return [r for r in ended if r[0] == root or descends(r)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", nargs="*", default=["make", "test"])
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
        file = Path(tmp) / "pacct"
        file.touch()
        lines = CommandLines()
        lines.start()
        accounting(file)
        start = time.time()
        try:
            command = subprocess.Popen(args.command)
            code = command.wait()
        finally:
            accounting(None)
            lines.stopped.set()
            lines.join()
        wall = time.time() - start
        ended = [r for r in records(file) if r[2] >= start - 1]
    by_pid = collections.defaultdict(list)
    for r in ended:
        by_pid[r[0]].append(r)
    everyone = sum(r[4] for r in ended)
    ended = own(ended, lines, by_pid, command.pid)
    cpu, count = collections.Counter(), collections.Counter()
    for r in ended:
        kind = kind_of(r, lines, by_pid)
        cpu[kind] += r[4]
        count[kind] += 1
    total, cores = sum(cpu.values()), os.cpu_count()
    print(f"# benchmarks/suite_cpu.py on {cores} cores, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(start))}: {' '.join(args.command)} "
          f"(exit {code})")
    print(f"wall {wall:.0f} s; CPU of the processes that ended in it: {everyone:.0f} s = "
          f"{everyone / (cores * wall):.0%} of the {cores} cores' time, of which the command's "
          f"own ({len(ended)} processes): {total:.0f} s = {total / (cores * wall):.0%}")
    for kind, seconds in cpu.most_common():
        print(f"  {seconds:7.1f} s  {count[kind]:6d} processes  {kind}")
    print(f"the same work needs at least {total / cores:.0f} s on {cores} cores "
          f"(10 minutes hold {600 * cores} CPU-seconds)")
    return code


if __name__ == "__main__":
    sys.exit(main())
