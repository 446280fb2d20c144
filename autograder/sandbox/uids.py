"""Sandbox uids: each running submission gets one that no other grader uses.

Runs in the grader's process (:func:`lease_uid`, which also sweeps what a
crashed grader left under the uid and in its cgroup) and the supervisor's
(:func:`kill_uid` after each submission, a second net behind its cgroup). Only when
grading runs as root; otherwise learner code runs as the grader's own user and there is nothing to lease.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from autograder.sandbox import cgroups

SANDBOX_UID_BASE = 61000  # uid = base + slot; no passwd entry is needed
UID_COUNT = 1000
LEASES = Path(tempfile.gettempdir()) / "jax-donation-sandbox-uids"


@dataclass
class Lease:
    """A sandbox uid and the descriptor of its lock file, whose ``flock`` is the lease.

    The lease lasts while any copy of ``fd`` is open: the grader passes one
    to the supervisor (:meth:`autograder.sandbox.Zygote.run`), so a supervisor
    left running by a killed grader still holds the uid, and no newer run can
    lease it until that supervisor has killed its learner's processes.
    """

    uid: int
    fd: int


@contextlib.contextmanager
def lease_uid(slot: int = 0) -> Iterator[Lease | None]:
    """Hold a sandbox uid that no other grader on this machine is using; yield a :class:`Lease`.

    Each uid is guarded by an exclusive ``flock`` on a root-only file, so a
    class run and the grading service never share a uid (and so never kill
    each other's learner processes). Yields None when not running as root;
    raises RuntimeError when all :data:`UID_COUNT` uids are leased.
    """
    if os.geteuid() != 0:
        yield None
        return
    LEASES.mkdir(mode=0o700, exist_ok=True)
    for offset in range(UID_COUNT):
        uid = SANDBOX_UID_BASE + (slot + offset) % UID_COUNT
        fd = os.open(LEASES / str(uid), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            lease = Lease(uid, fd)
            _sweep(lease)  # whatever a crashed grader or supervisor left behind
            yield lease
        finally:
            os.close(fd)
        return
    raise RuntimeError("no free sandbox uid")


def _sweep(lease: Lease) -> None:
    """End what a crashed run left under ``lease``'s uid: its submission's cgroup
    (every process in it, then the group), then every process of the uid."""
    group = cgroups.found(cgroups.SANDBOX, str(lease.uid))
    if not group.kill():
        raise RuntimeError(f"processes left in {group.folders()} outlived their kill")
    kill_uid(lease)


def kill_uid(lease: Lease, reap: bool = False) -> bool:
    """SIGKILL every process owned by ``lease.uid``, fork bombs included, if the lease is held.

    Fenced by the lease: unless ``lease.fd`` holds the uid's lock (``flock``
    on a descriptor that already holds it succeeds; one held elsewhere
    refuses), a newer run owns the uid and nothing is killed; returns False
    then, else True. A helper process takes the uid and calls ``kill(-1,
    SIGKILL)``, which reaches every process of that uid in one system call
    (kill(2)); repeated until /proc shows none left. With ``reap`` (only in
    the supervisor, a child subreaper: see
    :func:`autograder.sandbox.supervisor.supervise`) the adopted zombies are
    reaped between rounds.
    """
    try:
        fcntl.flock(lease.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    end_uid(lease.uid, reap)
    return True


def end_uid(uid: int, reap: bool = False) -> None:
    """SIGKILL every process of ``uid`` (an int; root only), until /proc shows none left:
    :func:`kill_uid` without a lease, also for the hub's learners (their server stopped)."""
    for _ in range(100):
        if not any(_owner(p) == uid for p in Path("/proc").iterdir() if p.name.isdigit()):
            return
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        if reap:  # only in the supervisor, whose children are all the learner's
            _reap_children()
        time.sleep(0.01)


def _reap_children() -> None:
    """Reap every exited child of this (supervisor) process."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _owner(proc_dir: Path) -> int | None:
    try:
        return proc_dir.stat().st_uid
    except OSError:
        return None
