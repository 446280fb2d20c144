"""Paths and the strict build command (``make book``'s, from autograder.defaults)
shared by the course-site tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from autograder.defaults import CHECKOUT as REPO, site_build_argv

os.environ.setdefault("JAX_PLATFORMS", "cpu")

HTML = REPO / "_build" / "html"
LESSONS = ("donate_argnums", "state_tree", "lifetimes", "silent_donation")
# the sharded lesson, apart from the tuple so lessons added there merge cleanly
LESSONS = LESSONS + ("sharded_state",)


def build_book(path: Path, *extra: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the strict site build in `path` (plus `extra` flags), with the jupyter-book
    of the interpreter running the tests; returns the process."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [*site_build_argv(Path(sys.executable).parent), *extra],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def page(html_root: Path, rel: str) -> str:
    return (html_root / rel).read_text(encoding="utf-8")
