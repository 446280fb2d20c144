"""The released notebook: stubbed answer, no hidden tests, cells match the grader."""
import json

from autograder.judge import hidden_tests
from tests.course import REPO
from tests.grading.helpers import ASSIGNMENT, released_notebook

SOURCE = REPO / "exercises" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def _cells(nb):
    return [c for c in nb["cells"] if "nbgrader" in c["metadata"]]


def test_release_has_stub_and_no_hidden_tests(released_course):
    text = json.dumps(released_notebook(released_course))
    assert "raise NotImplementedError()" in text
    for secret in ("BEGIN SOLUTION", "_add_donating", "BEGIN HIDDEN", "nbgrader_bridge", "check("):
        assert secret not in text


def test_one_answer_cell_and_a_self_check(released_course):
    cells = _cells(released_notebook(released_course))
    answers = [c for c in cells if c["metadata"]["nbgrader"]["solution"]]
    assert [c["metadata"]["nbgrader"]["grade_id"] for c in answers] == [ASSIGNMENT]
    assert any(c["metadata"]["nbgrader"]["grade_id"] == "self_check" for c in cells)


def test_graded_cells_match_hidden_tests():
    nb = json.loads(SOURCE.read_text())
    graded = [(c["metadata"]["nbgrader"]["grade_id"], c["metadata"]["nbgrader"]["points"])
              for c in _cells(nb) if c["metadata"]["nbgrader"]["grade"]]
    assert graded == [(name, points) for name, _, points in hidden_tests(ASSIGNMENT)]


def test_run_all_runs_past_every_cell_before_the_submit_cell(released_course):
    """A self-check that fails on a wrong answer raises: tagged, Run All still reaches
    the submit cell (JupyterLab sends the cell with stop_on_error false)."""
    from autograder import exercises

    for exercise in exercises.names():
        code = [c for c in released_notebook(released_course, exercise)["cells"]
                if c["cell_type"] == "code"]
        assert code[-1]["metadata"]["nbgrader"]["grade_id"] == "submit"
        untagged = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in code[:-1]
                    if "raises-exception" not in c["metadata"].get("tags", [])]
        assert untagged == [], (exercise, untagged)
