"""Cgroups (version 2) that end what they contain as a whole, with ``cgroup.kill``.

Runs in the supervisor's process (a group per submission, named by its sandbox uid,
:func:`make_submission_group`), the grader's (:func:`problem`, and the sweep of a
leased uid's group, :func:`autograder.sandbox.uids.lease_uid`) and the hub's (a group
per learner's server, ``deploy/hub/course_spawner.py``), always as root.

A process moved into a cgroup stays there with everything it starts, whatever their
uids, sessions or parents become; only root may move a process out (the folders are
root's). ``cgroup.kill`` (Linux 5.14) SIGKILLs every process in it at once, including
those forked meanwhile. Hosts with only cgroup v1, or an older kernel, get None from
:func:`make`: the callers then end processes by uid, and say so in their log.
Making a group, moving a process in, killing and removing it costs a few ms,
most of it the move (``benchmarks/cgroup.py``).
"""
from __future__ import annotations

import os
import time
from pathlib import Path

SANDBOX = "course-sandbox"  # <cgroup v2 root>/course-sandbox/<sandbox uid>: one submission


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
    """A new (or reused) cgroup ``<root>/<names...>`` that :func:`kill` can end, or None
    where cgroup v2 with ``cgroup.kill`` is unavailable. Raises OSError when it exists
    but cannot be made (not root)."""
    root = v2_root()
    if root is None:
        return None
    group = root.joinpath(*names)
    group.mkdir(parents=True, exist_ok=True)
    if not (group / "cgroup.kill").exists():
        return None
    return group


def join(group: Path, pid: int = 0):
    """Move ``pid`` (0: the calling process) into ``group``; raises OSError."""
    (group / "cgroup.procs").write_text(f"{pid}\n")


def kill(group: Path, wait_s: float = 10.0) -> bool:
    """SIGKILL every process in ``group``, wait until it is empty (up to ``wait_s``;
    zombies do not count) and remove it. True when it is gone (or was never there)."""
    try:
        (group / "cgroup.kill").write_text("1\n")
    except FileNotFoundError:
        return True
    deadline = time.monotonic() + wait_s
    while "populated 1" in (group / "cgroup.events").read_text():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    try:
        os.rmdir(group)
    except FileNotFoundError:
        pass
    return True


def submission_group(uid: int) -> Path | None:
    """The cgroup of the submission running as sandbox ``uid`` (whose lease makes it the
    only one): its path, whether or not it exists; None without cgroup v2."""
    root = v2_root()
    return root / SANDBOX / str(uid) if root is not None else None


def make_submission_group(uid: int, processes: int) -> Path | None:
    """:func:`submission_group` made, with ``pids.max`` = ``processes`` where the pids
    controller reaches it (its parent delegates it; this host's root may not), else
    with no process limit of its own (RLIMIT_NPROC still holds). None where cgroup v2
    with ``cgroup.kill`` is unavailable; raises OSError when it cannot be made."""
    group = make(SANDBOX, str(uid))
    if group is None:
        return None
    parent = group.parent
    if "pids" in (parent / "cgroup.controllers").read_text().split():
        if "pids" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+pids\n")
        (group / "pids.max").write_text(f"{processes}\n")
    return group


def problem() -> str | None:
    """Why a submission's processes would be ended by uid only (not root, no cgroup v2,
    no ``cgroup.kill``), or None when each gets a cgroup. Makes and removes a probe group."""
    if os.geteuid() != 0:
        return "not root"
    root = v2_root()
    if root is None:
        return "no cgroup v2 is mounted"
    probe = root / f"{SANDBOX}-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError as error:
        return f"no cgroup can be made in {root}: {error.strerror}"
    try:
        return None if (probe / "cgroup.kill").exists() else "this kernel has no cgroup.kill"
    finally:
        os.rmdir(probe)
