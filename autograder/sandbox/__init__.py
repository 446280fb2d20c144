"""Step 2 of grading: run learner code in its own limited process.

Runs in the grader's process: everything defined in this module does, and it
is the package's public face (:func:`run`, :class:`Limits`, :class:`Outcome`,
:func:`protect`, :func:`import_paths`, :class:`Lease`, :func:`lease_uid`,
:func:`kill_uid`, :class:`Zygote`, :func:`shared`). The other modules are
named for the process they run in:

- :mod:`~autograder.sandbox.zygote`: a process that imports JAX once and
  forks, per submission, a supervisor;
- :mod:`~autograder.sandbox.supervisor`: forks the learner's process, waits
  for it within the limits, kills what it left, reports an :class:`Outcome`;
- :mod:`~autograder.sandbox.confine` then :mod:`~autograder.sandbox.learner`:
  the learner's process: confined first (a fresh session in a scratch
  directory, wall-clock, address-space, process-count and file-size limits,
  and when grading runs as root private mounts, no network and an
  unprivileged uid of its own, see :func:`lease_uid`, so it cannot signal the
  grader or read root-only files), then the learner's code and the probes;
- :mod:`~autograder.sandbox.wire`: the messages between them (the learner's
  process talks only through a private pipe; what it prints is kept as a
  short tail); :mod:`~autograder.sandbox.uids`: the sandbox uids' leases;
- :mod:`~autograder.sandbox.compile_cache`: the programs grading compiles, compiled
  once (warmed by :mod:`~autograder.sandbox.warm`, held by the zygote).

No module here imports this one's own definitions, so the package has no
import cycle (``tests/grading/test_imports.py``).
"""
from __future__ import annotations

import atexit
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autograder.sandbox import cgroups, compile_cache, wire
from autograder.sandbox.confine import HIDDEN, REPO, XLA_FLAGS, import_paths
from autograder.sandbox.uids import Lease, kill_uid, lease_uid
from autograder.sandbox.wire import Limits, Outcome

log = logging.getLogger("autograder.sandbox")
RETIRE_S = 30.0  # a replaced zygote is closed this long after (connections to it have begun)
__all__ = ["run", "Limits", "Outcome", "protect", "import_paths", "Lease", "lease_uid",
           "kill_uid", "Zygote", "shared", "REPO", "PRIVATE"]

# Paths learner code must not read: hidden tests, solutions, sample answers,
# grades. When grading runs as root they are made root-only (git keeps no modes).
PRIVATE = (*HIDDEN, "_build/gradescope", "exercises/source", "exercises/gradebook.db",
           "exercises/submitted", "exercises/autograded", "tests", "grading.db", ".git")


def protect(out_dir: str | os.PathLike[str] | None = None) -> None:
    """Make :data:`PRIVATE` paths and ``out_dir`` unreadable to sandbox uids (root only)."""
    if os.geteuid() != 0:
        return
    for path in [REPO / p for p in PRIVATE] + ([Path(out_dir)] if out_dir else []):
        if path.exists():
            os.chmod(path, 0o700 if path.is_dir() else 0o600)


def run(request: dict[str, Any], limits: Limits | None = None, slot: int = 0) -> Outcome:
    """Run one request in a fresh limited process; return an :class:`Outcome`.

    ``request`` is ``{"exercise", "seed", "cells": [{"label", "source"}],
    "memory_mib", "hide"}``; ``slot`` picks the sandbox uid (see
    :func:`lease_uid`). Whatever learner code does is an Outcome; a failure of
    the sandbox itself (the zygote died or hung, no learner process can run here)
    raises RuntimeError or OSError, which :func:`autograder.pipeline.grade_all`
    makes a grader fault: plain words for the learner, the reason for the instructor.
    """
    limits = limits or Limits()
    with lease_uid(slot) as lease:
        outcome: Outcome = shared().send(request, limits, lease)
        return outcome


def interpreter():
    """The zygote's interpreter: the venv's, as the grader's own. Where it lives under
    root's home, learner processes reach it through their mount namespace
    (:mod:`autograder.sandbox.mounts`)."""
    return sys.executable


def _unreachable_interpreter():
    """Why a sandbox uid without a mount namespace of its own could not run the
    interpreter's standard library (a folder on the way other users cannot enter,
    such as pyenv's in root's home), or None when it could."""
    stdlib = Path(os.path.realpath(sys.base_prefix)) / "lib"
    for folder in [*reversed(stdlib.parents), stdlib]:
        if not os.stat(folder).st_mode & 0o001:
            return (f"learner code cannot run: without mount namespaces its uid cannot reach "
                    f"this Python ({folder} is closed to other users); give the grader "
                    f"CAP_SYS_ADMIN, or make .venv from a Python other users can read "
                    f"(make PYTHON=/path/to/python3.12)")
    return None


# What the zygote inherits from the grader's environment: nothing secret. Every
# learner process is forked from the zygote and holds a copy of the environment
# block it was started with, readable from its own memory whatever it does to
# os.environ (the hub token and a database password would be there otherwise).
ZYGOTE_ENV_KEPT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TF_CPP_MIN_LOG_LEVEL")


def zygote_environment():
    """The zygote's whole environment: :data:`ZYGOTE_ENV_KEPT` from the grader's, and
    JAX's platform and XLA flags (``{name: value}``, str to str)."""
    kept = {k: v for k, v in os.environ.items() if k in ZYGOTE_ENV_KEPT}
    return dict(kept, JAX_PLATFORMS="cpu", XLA_FLAGS=XLA_FLAGS)


def stack_at_hard_limit(code):
    """Python source that raises its process's stack limit (RLIMIT_STACK) to the hard
    limit, then execs the interpreter on ``code``. glibc sizes every new thread's
    stack from that limit when a process starts (8 MiB under a shell's usual
    ``ulimit -s 8192``; 2 MiB on x86-64 when it is unlimited), so without this the
    grader's caller would decide whether a learner's many threads first exhaust the
    memory limit or the process limit, and which of two explanations they read."""
    return ("import os, resource, sys; "
            "hard = resource.getrlimit(resource.RLIMIT_STACK)[1]; "
            "resource.setrlimit(resource.RLIMIT_STACK, (hard, hard)); "
            f"os.execv(sys.executable, [sys.executable, '-I', '-c', {code!r}])")


class Zygote:
    """The grader's handle on a zygote process (started on first use)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.path: str | None = None
        self.lock, self.ready = threading.Lock(), False
        self.cannot_run: str | None = None  # why no learner process could run, when none could
        self.versions: dict[str, str] = {}  # exercise -> version of its grading the zygote preloaded
        self.cached: list[str] = []  # the compile cache's folders the zygote holds
        # (zygote, when) replaced by a newer one, closed a while later
        self.retired: list[tuple[subprocess.Popen[str], float]] = []

    def launch(self, exercises: Iterable[str] = ()) -> None:
        """Start the zygote without waiting for it (it imports JAX meanwhile).

        ``exercises`` get their learners' heavier imports
        (:func:`autograder.sandbox.learner.exercise_imports`) imported once
        there rather than in every learner process. A running zygote whose preloaded
        probe of one of ``exercises`` is older than the files on disk
        (:func:`autograder.exercises.current.version`) is replaced by a new one: a
        grading started after an instructor's edit observes with the new probe. So is
        one started before the compile cache of its exercises was warm
        (:mod:`autograder.sandbox.compile_cache`), once it is.
        """
        wanted = _versions(exercises)
        with self.lock:
            self._close_retired()
            if self.proc and self.proc.poll() is None:
                if all(self.versions.get(ex, v) == v for ex, v in wanted.items()) and \
                        self.cached == _cached({**self.versions, **wanted}):
                    return
                log.info("the grading of %s changed on disk, or its compile cache is warm: "
                         "starting a new zygote", ", ".join(sorted(wanted)))
                # Closed later, not now: a grading thread may be connecting to it.
                self.retired.append((self.proc, time.monotonic()))
                wanted = {**_versions(self.versions), **wanted}
            self.versions = wanted
            self.cached = _cached(wanted)
            self.ready, self.cannot_run = False, None
            folder = tempfile.mkdtemp(prefix="zygote-")  # mode 0700: root only
            self.path = os.path.join(folder, "socket")
            code = (f"import sys; sys.path[:0] = {import_paths()!r}; "
                    f"from autograder.sandbox.zygote import main; "
                    f"main({self.path!r}, {tuple(sorted(wanted))!r}, {tuple(self.cached)!r})")
            env = zygote_environment()
            self.proc = subprocess.Popen([interpreter(), "-I", "-c", stack_at_hard_limit(code)],
                                         env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True)

    def _close_retired(self, after=RETIRE_S):
        """Let replaced zygotes exit (EOF on their stdin) ``after`` seconds on; their
        learner processes already running finish as they would have."""
        keep = []
        for proc, since in self.retired:
            if time.monotonic() - since >= after:
                proc.stdin.close()
                proc.wait()
                proc.stdout.close()
            else:
                keep.append((proc, since))
        self.retired = keep

    def start(self):
        """Launch if needed, then wait until the zygote listens; its socket's path (read
        here, under the lock: a zygote replaced meanwhile still serves it a while)."""
        self.launch()
        with self.lock:
            if not self.ready:
                said = self.proc.stdout.readline().strip()
                if said.split(" ", 1)[0] != "ready":
                    raise RuntimeError("the sandbox zygote did not start")
                if said != "ready":
                    log.warning("learner code runs WITHOUT network and mount isolation: %s",
                                said[len("ready "):])
                    self.cannot_run = _unreachable_interpreter()
                if os.geteuid() == 0 and (why := cgroups.problem()):
                    log.warning("a submission's processes are ended by uid only, not by a "
                                "cgroup of their own: %s", why)
                self.ready = True
            if self.cannot_run:
                raise RuntimeError(self.cannot_run)
            return self.path

    def send(self, request, limits, lease):
        """Send one request; block until its :class:`Outcome`.

        ``lease`` (a :class:`Lease`, or None when not root) goes with it: its
        descriptor is passed to the supervisor. Raises RuntimeError (or
        OSError) when the zygote or the supervisor fails.
        """
        path = self.start()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(limits.seconds + 60)
            conn.connect(path)
            wire.send_request(conn, request, limits, lease)
            return wire.receive_outcome(conn)

    def stop(self):
        """Kill the zygote (and those it replaced) and remove its socket folder."""
        for proc, _ in self.retired:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()
        self.retired = []
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.path:
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)


def _cached(versions):
    """The compile cache's warm folders for ``versions`` (``{exercise: version}``); a
    warming process is started for each exercise whose folder is not warm yet."""
    return compile_cache.ready(versions, zygote_environment())


def _versions(exercises):
    """``{exercise: version}`` of ``exercises``' grading on disk; one that cannot be
    loaded is left out (its submissions are refused or faulted where they are graded)."""
    from autograder.exercises import current
    return current.loadable(exercises)[0]


_shared = Zygote()
atexit.register(_shared.stop)


def shared() -> Zygote:
    """The process-wide zygote, started on first use."""
    return _shared
