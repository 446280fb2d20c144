"""The learners' JupyterLab servers under ``make hub``.

:class:`CourseSpawner` is JupyterHub's :class:`~jupyterhub.spawner.LocalProcessSpawner`
(each learner's server runs as that learner's system user, in their home) with
three additions, all only when the hub runs as root:

* **A private mount namespace** (:func:`confine`, run in the forked child before
  it drops to the learner's uid). The course's Python lives where learners
  cannot go: the venv's interpreter links into root's home (mode 0700), and
  the repository holds the hidden tests, the grading database and the hub's
  state. In the learner's namespace empty tmpfs mounts cover root's home, the
  repository, ``/tmp`` and ``/dev/shm`` (their own), System V IPC is the
  server's own (an IPC namespace), and only the interpreter
  (``sys.base_prefix``) and the venv (``sys.prefix``) are bound back, at the
  same paths, so ``<repo>/.venv/bin/python`` runs and nothing else of the
  repository is there. Homes are made mode 0700: a learner cannot read
  another's.
* **Nothing outlives the server**: when it stops, every process of the
  learner's user is killed (:meth:`CourseSpawner.stop`); the server runs with
  ``no_new_privs``, so no setuid program it starts leaves the learner's uid.
* **The course workspace in the home** (:meth:`CourseSpawner.lay_workspace`), before
  each start and again while the server runs whenever the release changed (checked
  at each of JupyterHub's polls, :meth:`CourseSpawner.poll`, so an exercise released
  mid-course reaches running servers without a restart): the lessons and released
  exercises copied by
  ``scripts/jupyter_local.py``'s ``build_workspace`` (a notebook the learner
  changed is never overwritten) plus the learner JupyterLab's settings
  (nbgrader's Validate, no Nbgrader menu). It runs as the
  learner, from a world-readable copy of its inputs, so root never writes into a
  folder the learner controls (no symlink games).
"""
import asyncio
import ctypes
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

from autograder.sandbox import mounts
from autograder.sandbox.uids import end_uid

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SCRIPTS = REPO / "scripts"
LESSONS = REPO / "_build" / "html" / "_notebooks" / "lessons"
RELEASE = REPO / "exercises" / "release"
# The notebooks' submit cell imports it (and it the course's defaults); the repository
# is hidden from learners' servers, so each home gets a copy (learner_home.py, COURSE_LIB).
SUBMIT = REPO / "autograder" / "learner_submit.py"
DEFAULTS = REPO / "autograder" / "defaults.py"
# What learner_home.py runs with, beside lessons/ and release/ in the staging copy.
STAGED = (SCRIPTS / "jupyter_local.py", HERE / "learner_home.py", SUBMIT, DEFAULTS)
COURSE_LIB = ".course-lib"


def release_state():
    """Each released notebook with its modification time (a sorted tuple): changes
    when an exercise is released, or released again."""
    return tuple(sorted((str(p.relative_to(RELEASE)), p.stat().st_mtime_ns)
                        for p in RELEASE.glob("*/*.ipynb")))


def course_lib(spawner):
    """``$PYTHONPATH`` of a learner's server: the copy of the submit module in their home."""
    return str(Path(pwd.getpwnam(spawner.user.name).pw_dir) / COURSE_LIB)

CLONE_NEWNS, CLONE_NEWIPC = 0x00020000, 0x08000000
PR_SET_NO_NEW_PRIVS = 38


def covers():
    """Folders hidden from learners' servers, with their tmpfs options: /tmp and /dev/shm
    (their own, gone with the server), root's home and the repository (empty, holding
    only what is bound back)."""
    return {"/tmp": "size=512m,mode=1777", "/dev/shm": "size=512m,mode=1777",
            os.path.expanduser("~root"): mounts.SMALL, str(REPO): mounts.SMALL}


def kept():
    """What is bound back under :func:`covers`: the interpreter's prefix and the venv."""
    return mounts.under(mounts.interpreter_paths(), covers())


def confine():
    """In the learner's forked child, as root: the private mount namespace above.

    Raises OSError when namespaces are not available (the server does not start,
    rather than start with the repository in view)."""
    lib = mounts.libc()
    # System V shared memory of its own too: freed when the server's last process ends.
    if lib.unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS | CLONE_NEWIPC)")
    mounts.make_root_private(lib)
    mounts.cover(lib, covers(), kept())


def no_new_privileges():
    """``PR_SET_NO_NEW_PRIVS`` for this process and all it starts: a setuid program a
    learner runs keeps the learner's uid, so it ends with the learner's processes."""
    if mounts.libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner + :func:`confine` + the course workspace (see the module)."""

    _laid = None  # release_state() when the workspace was last laid

    def make_preexec_fn(self, name):
        drop = super().make_preexec_fn(name)  # setgroups, setgid, setuid, chdir home
        if os.geteuid() != 0:
            return drop

        def preexec():
            confine()
            drop()
            no_new_privileges()

        return preexec

    async def start(self):
        await asyncio.to_thread(self.lay_workspace)
        return await super().start()

    async def poll(self):
        """JupyterHub's check that the server runs (every ``poll_interval``, 30 s by
        default); a running server whose workspace predates the release gets it laid
        again: a new exercise appears in the learner's file browser, no restart."""
        status = await super().poll()
        if status is None and self._laid != release_state():
            try:
                await asyncio.to_thread(self.lay_workspace)
            except Exception:  # the server still runs: say so, and try at the next poll
                self.log.exception("could not lay the new release for %s", self.user.name)
        return status

    async def stop(self, now=False):
        """Stop the server, then every process of the learner's user: nothing a learner
        started (``setsid nohup``, a daemon) outlives their server."""
        await super().stop(now=now)
        if os.geteuid() == 0:
            await asyncio.to_thread(end_uid, pwd.getpwnam(self.user.name).pw_uid)

    def lay_workspace(self):
        """Copy the course into the learner's home, as the learner (see the module)."""
        name = self.user.name
        home = pwd.getpwnam(name).pw_dir
        state = release_state()  # before copying: a release made meanwhile is laid next
        if os.geteuid() == 0:
            os.chmod(home, 0o700)  # other learners cannot read it
        staging = Path(tempfile.mkdtemp(prefix="course-workspace-", dir="/var/tmp"))
        try:
            shutil.copytree(LESSONS, staging / "lessons")
            shutil.copytree(RELEASE, staging / "release")
            for script in STAGED:
                shutil.copy(script, staging / script.name)
            for path in [staging, *staging.rglob("*")]:
                path.chmod(0o755 if path.is_dir() else 0o644)
            done = subprocess.run(
                [sys.executable, str(staging / "learner_home.py"), home],
                preexec_fn=self.make_preexec_fn(name), env={"PATH": "/usr/bin:/bin", "HOME": home},
                capture_output=True, text=True, timeout=120)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if done.returncode != 0:
            raise RuntimeError(f"could not lay the course workspace in {home}: "
                               f"{done.stderr[-2000:]}")
        self._laid = state
        self.log.info("course workspace for %s: %s", name, done.stdout.strip())
