"""Paths and the strict build command shared by the course-site tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


os.environ.setdefault("JAX_PLATFORMS", "cpu")

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "_build" / "html"
LESSONS = ("donate_argnums", "state_tree", "lifetimes", "silent_donation")
BUILD_FLAGS = ["--warningiserror", "--nitpick", "--keep-going", "--builder", "html"]
# the sharded lesson, apart from the tuple so lessons added there merge cleanly
LESSONS = LESSONS + ("sharded_state",)


def jupyter_book() -> str:
    """The jupyter-book executable of the interpreter running the tests."""
    candidate = Path(sys.executable).with_name("jupyter-book")
    return str(candidate) if candidate.exists() else "jupyter-book"


def build_book(path: Path, *extra: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """Run the strict site build on `path` (plus `extra` flags); returns the process."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run(
        [jupyter_book(), "build", str(path), *BUILD_FLAGS, *extra],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def page(html_root: Path, rel: str) -> str:
    return (html_root / rel).read_text(encoding="utf-8")
