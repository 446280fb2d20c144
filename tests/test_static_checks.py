"""The static checks the project chose (pyproject.toml: ``[tool.ruff]``, ``[tool.mypy]``)
find nothing: ruff over the checkout, mypy over ``autograder/`` (strict on the grading core).

Both come from .venv (pinned in requirements.txt, so ``make venv`` and CI install them).
mypy keeps its cache in the checkout's ``.mypy_cache/``: a warm run is under a second, a
cold one (a fresh clone) about 9 CPU-seconds. A finding fails the test with the tool's
own report (file, line, rule).
"""
import subprocess
import sys
from pathlib import Path

from tests.course import REPO

BIN = Path(sys.executable).parent


def report(argv):
    """Run ``argv`` in the checkout; ``(exit status, stdout and stderr together)``."""
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


def test_ruff_finds_nothing():
    code, said = report([str(BIN / "ruff"), "check", "--no-fix", "--output-format", "concise", "."])
    assert code == 0, f"ruff (pyproject.toml's [tool.ruff] rules) found:\n{said}"


def test_mypy_finds_nothing():
    code, said = report([str(BIN / "mypy"), "--cache-dir", str(REPO / ".mypy_cache")])
    assert code == 0, f"mypy (pyproject.toml's [tool.mypy]) found:\n{said}"
