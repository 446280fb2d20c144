"""Paths and the strict build command (``make book``'s, from autograder.defaults)
shared by the course-site tests."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, site_build_argv

os.environ.setdefault("JAX_PLATFORMS", "cpu")

HTML = REPO / "_build" / "html"
LESSONS = ("donate_argnums", "state_tree", "lifetimes", "silent_donation")
# the sharded lessons, apart from the tuple so lessons added there merge cleanly
LESSONS = LESSONS + ("sharded_state", "sharded_auto_axes", "sharded_pmap", "sharded_device_put", "sharded_optax")


def build_book(path: Path, *extra: str, timeout: int = 600,
               locked: bool = False) -> subprocess.CompletedProcess:
    """Run the strict site build in `path` (plus `extra` flags), with the jupyter-book
    of the interpreter running the tests, holding the lock ``make book`` takes
    (:func:`build_lock`; ``locked``: the caller holds it); returns the process."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    with contextlib.nullcontext() if locked else build_lock(path):
        return subprocess.run(
            [*site_build_argv(Path(sys.executable).parent), *extra],
            cwd=path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@contextlib.contextmanager
def build_lock(path: Path = REPO):
    """``path``'s ``_build/.build.lock`` held (flock, as the Makefile's ``flock`` takes
    it): one site build at a time in a checkout, whichever worker or command starts it."""
    lock = path / "_build" / ".build.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def page(html_root: Path, rel: str) -> str:
    return (html_root / rel).read_text(encoding="utf-8")
