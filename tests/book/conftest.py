"""Fixtures for the course-site tests.

The session builds the site once with the same strict command `make book` uses
(jupyter-book, warnings are errors, nitpicky references, cached execution). The
build is incremental: with a warm jupyter-cache and nothing changed it takes a
few seconds, and if `_build/html` is missing or stale it is brought up to date.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .sitebuild import HTML, REPO, build_book


@pytest.fixture(scope="session")
def built_site() -> Path:
    """Build (or bring up to date) the course site; fail with the log if it breaks."""
    result = build_book(REPO)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"the strict site build failed:\n{log[-6000:]}")
    assert (HTML / "index.html").exists(), "the build produced no index.html"
    return HTML
