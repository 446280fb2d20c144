"""Fixtures for the course-site tests.

The session builds the site once with the same strict command `make book` uses
(jupyter-book, warnings are errors, nitpicky references, cached execution). The
build is incremental: with a warm jupyter-cache and nothing changed it takes a
few seconds, and if `_build/html` is missing or stale it is brought up to date.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

REPO = Path(__file__).resolve().parents[2]
HTML = REPO / "_build" / "html"
LESSONS = ("donate_argnums", "state_tree", "lifetimes")
BUILD_FLAGS = ["--warningiserror", "--nitpick", "--keep-going", "--builder", "html"]


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


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build (or bring up to date) the course site; fail with the log if it breaks."""
    result = build_book(REPO)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"the strict site build failed:\n{log[-6000:]}")
    assert (HTML / "index.html").exists(), "the build produced no index.html"
    return HTML


def page(html_root: Path, rel: str) -> str:
    return (html_root / rel).read_text(encoding="utf-8")
