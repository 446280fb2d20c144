"""Shared fixtures: paths and a released copy of the nbgrader course."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def nbgrader_env():
    """Environment for nbgrader commands: venv tools on PATH, repo importable."""
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    env["JAX_PLATFORMS"] = "cpu"
    return env


def nbgrader(course, *args):
    """Run ``nbgrader ARGS`` in ``course``; return the CompletedProcess (checked)."""
    return subprocess.run([str(BIN / "nbgrader"), *args, "--log-level=ERROR"], cwd=course,
                          env=nbgrader_env(), check=True, capture_output=True, text=True)


@pytest.fixture(scope="session")
def released_course(tmp_path_factory):
    """A private copy of ``exercises/`` after ``nbgrader generate_assignment`` of each exercise."""
    from autograder.submission import EXERCISES

    course = tmp_path_factory.mktemp("course")
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)
    shutil.copytree(REPO / "exercises" / "source", course / "source")
    for assignment in EXERCISES:
        nbgrader(course, "generate_assignment", assignment)
    return course
