"""nbgrader's Validate, as the learner's JupyterLab runs it: on a released notebook in
the workspace ``make serve`` lays, with the nbgrader config and environment that
server has (scripts/jupyter_local.py). The graded cells are empty there (their tests
are hidden), so Validate is honest only if it fails on a failing self-check."""
import json
import subprocess

import pytest

from autograder import defaults, exercises
from scripts import jupyter_local
from tests.course import BIN, REPO

EXERCISES = exercises.names()
WRONG_SUM = '''import jax
import jax.numpy as jnp

_add = jax.jit(lambda state, delta: state - delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    return _add(state, delta)
'''


@pytest.fixture(scope="module")
def workspace(released_course, tmp_path_factory):
    """The learner workspace and the environment of its JupyterLab (what Validate runs in)."""
    root = tmp_path_factory.mktemp("validate")
    (root / "lessons").mkdir()
    (root / "lessons" / "one.ipynb").write_text(json.dumps({"cells": [], "metadata": {},
                                                            "nbformat": 4, "nbformat_minor": 5}))
    ws = root / "ws"
    jupyter_local.build_workspace(ws, lessons=root / "lessons", release=released_course / "release")
    _, env, cwd = jupyter_local.server_command(defaults.JUPYTER_PORT, defaults.site_origin(), "t",
                                               workspace=ws, config_dir=root / "config")
    return cwd, env


def validate(workspace, exercise, answer=None):
    """``nbgrader validate`` on the exercise's notebook, its answer cell replaced by
    ``answer`` (None: as released). Returns what it printed."""
    cwd, env = workspace
    path = cwd / exercise / f"{exercise}.ipynb"
    nb = json.loads(path.read_text())
    if answer is not None:
        for cell in nb["cells"]:
            if cell["metadata"].get("nbgrader", {}).get("grade_id") == exercise:
                cell["source"] = answer
    mine = cwd / exercise / f"attempt-{answer is not None}.ipynb"
    mine.write_text(json.dumps(nb))
    done = subprocess.run([str(BIN / "nbgrader"), "validate", str(mine.relative_to(cwd))], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=600)
    return done.stdout


def reference(exercise):
    return (REPO / "autograder" / "exercises" / exercise / "hidden" / "samples" / "reference.py").read_text()


@pytest.mark.parametrize("exercise", EXERCISES)
def test_validate_passes_a_solved_notebook(workspace, exercise):
    out = validate(workspace, exercise, reference(exercise))
    assert "Success!" in out, out


@pytest.mark.parametrize("exercise", EXERCISES)
def test_validate_fails_the_notebook_as_released(workspace, exercise):
    out = validate(workspace, exercise)
    assert "VALIDATION FAILED" in out and "NotImplementedError" in out, out
    assert "not the hidden graded checks" in out, out


def test_validate_fails_when_the_self_check_fails(workspace):
    out = validate(workspace, "update_with_donate", WRONG_SUM)
    assert "VALIDATION FAILED ON 1 CELL" in out, out
    assert "Self-check:" in out and "should return state + delta" in out, out
