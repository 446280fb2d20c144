"""The grader's fast notebook reading agrees with nbformat and nbgrader."""
import json
import os
import subprocess
import sys

import nbformat
import pytest
from nbgrader.utils import compute_checksum, is_grade, is_locked, is_solution

from autograder import judge, notebook
from autograder.exercises.update_with_donate.probe import observe
from tests.course import REPO
from tests.grading.helpers import SAMPLES


def _notebooks(course):
    for path in sorted((REPO / "exercises" / "source").glob("*/*.ipynb")):
        yield path.read_text()
    for path in sorted((course / "release").glob("*/*.ipynb")):
        yield path.read_text()


def test_cells_and_checksums_match_nbgrader(released_course):
    checked = 0
    for text in _notebooks(released_course):
        ours = notebook.cells(json.loads(text))
        theirs = nbformat.reads(text, as_version=4).cells
        assert [c["source"] for c in ours] == [c.source for c in theirs]
        for mine, cell in zip(ours, theirs):
            if "nbgrader" not in cell.metadata:
                continue
            assert (notebook.is_grade(mine), notebook.is_solution(mine), notebook.is_locked(mine)) == (
                is_grade(cell), is_solution(cell), is_locked(cell))
            assert notebook.checksum(mine) == compute_checksum(cell)
            checked += 1
    assert checked > 20


def test_older_notebook_versions_are_converted():
    v3 = nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(
        cells=[nbformat.v3.new_code_cell(input="x = 1")])])
    cells = notebook.cells(json.loads(nbformat.v3.nbjson.writes(v3)))
    assert [(c["cell_type"], c["source"]) for c in cells] == [("code", "x = 1")]


@pytest.mark.parametrize("sample", ["reference", "wrong_arithmetic"])
def test_hidden_tests_run_under_pytest_and_agree(tmp_path, sample):
    """The hidden tests are real pytest tests: same verdicts as the grader's runner."""
    ns = {}
    exec((SAMPLES / f"{sample}.py").read_text(), ns)
    obs = json.loads(json.dumps(observe(ns, 7)))
    saved = tmp_path / "obs.json"
    saved.write_text(json.dumps({"obs": obs, "seed": 7}))
    env = dict(os.environ, AUTOGRADER_OBSERVATIONS=str(saved), PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(REPO / "autograder" / "exercises" / "update_with_donate" / "hidden" / "tests.py"),
                           "-rA"], env=env, capture_output=True, text=True, cwd=tmp_path)
    failed_by_pytest = {line.split("::")[1].split()[0] for line in proc.stdout.splitlines()
                        if line.startswith("FAILED")}
    failed_by_grader = {name for name, _, _ in judge.hidden_tests("update_with_donate")
                        if judge.run_test("update_with_donate", name, obs, 7)}
    assert failed_by_pytest == failed_by_grader
    assert bool(failed_by_grader) == (sample != "reference")
