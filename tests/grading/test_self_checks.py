"""Validate agrees with the grade where it can: every sample whose visible self-check
passes (tests/grading/self_checks.py: the notebook's cells up to the self-check, failing
on an exception or on stderr, as nbgrader's Validate does) yet is graded below full
marks fails only checks of requirement rows the notebook names as checked only when
you submit (``ONLY_ON_SUBMISSION`` in its self-check cell). The samples that pass
Validate below full marks are listed in the assertion's message."""
import ast
import json
import subprocess
import sys

import pytest

from autograder import exercises, requirements
from autograder.judge import hidden_tests
from tests.course import REPO
from tests.grading import self_checks
from tests.grading.helpers import expected


def named(exercise):
    """The row titles the self-check cell's ``ONLY_ON_SUBMISSION`` lists."""
    source = dict(self_checks.cells(exercise))["self_check"]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["ONLY_ON_SUBMISSION"]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{exercise}: the self-check names no ONLY_ON_SUBMISSION")


@pytest.mark.parametrize("exercise", exercises.names())
def test_the_named_rows_are_the_exercises(exercise):
    titles = {row.title for row in requirements.of(exercise)}
    assert set(named(exercise)) <= titles, set(named(exercise)) - titles


@pytest.mark.parametrize("exercise", exercises.names())
def test_validate_passes_below_full_marks_only_on_rows_named_submission_only(exercise):
    proc = subprocess.run([sys.executable, "-m", "tests.grading.self_checks", exercise], cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    passed = [name for name, why in json.loads(proc.stdout).items() if why is None]
    assert "reference" in passed
    full = sum(points for _, _, points in hidden_tests(exercise))
    want = expected(exercise)
    only = set(named(exercise))
    rows = requirements.of(exercise)
    listed, unnamed = [], []
    for name in passed:
        failed = [] if want[name]["failed"] == "all" else want[name]["failed"]
        if want[name]["score"] >= full:
            continue
        listed.append(name)
        # a failed check is named when one of the rows it grades is
        if any(not {r.title for r in rows if check in r.checks} & only for check in failed) \
                or want[name]["failed"] == "all":
            unnamed.append(name)
    assert not unnamed, (f"Validate passes, the grade is below full, and the notebook does not "
                         f"name the rows as checked on submission: {unnamed} (all below full: {listed})")
