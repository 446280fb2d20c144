"""A cgroup (version 2) per learner's server under ``make hub`` run as root
(``course_spawner.py``), ended as a whole with ``cgroup.kill``.

A process moved into a cgroup stays there with everything it starts, whatever their
uids, sessions or parents become; only root may move a process out (the folders are
root's). ``cgroup.kill`` (Linux 5.14) SIGKILLs every process in it at once, including
those forked meanwhile. Hosts with only cgroup v1, or an older kernel, get None from
:func:`make`: the callers then end processes by uid, and say so in their log.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

PARENT = "course-hub"  # every cgroup made here is below <cgroup v2 root>/course-hub/


def v2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or, on hybrid hosts,
    ``/sys/fs/cgroup/unified``), or None."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        after = fields.index("-")
        if fields[after + 1] == "cgroup2":
            return Path(fields[4])
    return None


def make(*names: str) -> Path | None:
    """A new (or emptied, reused) cgroup ``<root>/course-hub/<names...>`` that
    :func:`kill` can end, or None where cgroup v2 with ``cgroup.kill`` is unavailable.
    Raises OSError when it exists but cannot be made (not root)."""
    root = v2_root()
    if root is None:
        return None
    group = root.joinpath(PARENT, *names)
    group.mkdir(parents=True, exist_ok=True)
    if not (group / "cgroup.kill").exists():
        return None
    return group


def join(group: Path, pid: int = 0):
    """Move ``pid`` (0: the calling process) into ``group``; raises OSError."""
    (group / "cgroup.procs").write_text(f"{pid}\n")


def kill(group: Path, wait_s: float = 10.0) -> bool:
    """SIGKILL every process in ``group``, wait until it is empty (up to ``wait_s``) and
    remove it. True when it is gone (or was never there)."""
    try:
        (group / "cgroup.kill").write_text("1\n")
    except FileNotFoundError:
        return True
    deadline = time.monotonic() + wait_s
    while "populated 1" in (group / "cgroup.events").read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    try:
        os.rmdir(group)
    except FileNotFoundError:
        pass
    return True
