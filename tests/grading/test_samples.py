"""Every sample submission gets its expected grade, from both graders.

The samples (``autograder/exercises/update_with_donate/hidden/samples/*.py``) are answer
cells; each is put into the released notebook and handed in as an nbgrader
``submitted/`` tree. The command line's grades are the session's run over every
exercise's samples (``cli_runs("samples")``, tests/grading/conftest.py: the run the golden
results are compared with; each sample's grade and feedback, every exercise's, are
checked in tests/grading/test_exercises.py, its results.json and summary.csv here);
``nbgrader autograde`` grades the samples whose totals fix
each check's points (tests/grading/helpers.py: one_per_check); both must give each sample
its expected total. ``python -m autograder`` itself, as docs/instructors.md runs it on an
nbgrader tree, grades two samples and keeps them on a rerun.
"""
import csv
import json

import pytest
from nbgrader.api import Gradebook

from autograder import exercises
from autograder.judge import hidden_tests
from tests.course import copy_course, grader_cli, nbgrader
from tests.grading.helpers import ASSIGNMENT, EXPECTED, one_per_check, submitted_tree


@pytest.fixture
def graded(cli_runs):
    """``(out_dir, run)``: the session's command-line run over every exercise's samples
    (results in ``out_dir/<sample>/<exercise>/results.json``; ``run["stdout"]`` its
    progress lines)."""
    run = cli_runs("samples")
    return run["out"], run


# What nbgrader autograde grades: samples whose totals fix each check's points, and the one whose
# feedback test_nbgrader_feedback_is_written reads.
AUTOGRADED = one_per_check(ASSIGNMENT, also=("wrong_dtype",))


@pytest.fixture(scope="module")
def autograded(released_course, tmp_path_factory):
    """:data:`AUTOGRADED` handed in, after docs/instructors.md's ``nbgrader autograde``."""
    course = copy_course(released_course, tmp_path_factory.mktemp("autograded") / "course")
    submitted_tree(course, course / "submitted", AUTOGRADED)
    nbgrader(course, "autograde", ASSIGNMENT, "--create")
    return course


def results(out, name, exercise=None):
    """``out/<name>/results.json``, or a tree's ``out/<name>/<exercise>/results.json``."""
    return json.loads((out / name / (exercise or "") / "results.json").read_text())


def test_results_follow_gradescope_format(graded):
    out, _ = graded
    for name in EXPECTED:
        data = results(out, name, ASSIGNMENT)
        assert {"score", "max_score", "output", "tests"} <= set(data)
        assert data["score"] == sum(t["score"] for t in data["tests"])
        for test in data["tests"]:
            assert set(test) == {"name", "score", "max_score", "status", "output", "visibility"}
            assert test["status"] in ("passed", "failed")
            assert test["output"].strip()


def test_feedback_names_each_compiled_helper_once():
    """A helper jitted inside the function is lowered once per call; say it once."""
    from autograder.exercises.update_with_donate.hidden import tests as hidden

    module = {"module": "jit__lambda", "args": ["tensor<32xf32>"] * 2, "donated": [False, False]}
    assert hidden._describe([module] * 4) == "jit__lambda donates 0 of its 2 arguments"


def test_summary_matches_results_on_disk(graded):
    out, _ = graded
    rows = [r for r in csv.DictReader((out / "summary.csv").open()) if r["exercise"] == ASSIGNMENT]
    assert {(r["submission"], r["exercise"]): float(r["score"]) for r in rows} == {
        (name, ASSIGNMENT): results(out, name, ASSIGNMENT)["score"] for name in EXPECTED}


def test_rerun_grades_nothing_unchanged(released_course, tmp_path):
    """docs/instructors.md's command on an nbgrader tree, twice: the second run keeps
    every result as it is."""
    names = ("reference", "no_donation")
    tree = submitted_tree(released_course, tmp_path / "submitted", names)
    out = tmp_path / "out"
    first = grader_cli(tree, "--out", out)
    assert first.returncode == 0, first.stderr
    assert sorted(line.split(":")[0] for line in first.stdout.splitlines()) == sorted(
        f"{n}/{ASSIGNMENT}" for n in names)

    def mtimes():
        return {n: (out / n / ASSIGNMENT / "results.json").stat().st_mtime_ns for n in names}

    before = mtimes()
    proc = grader_cli(tree, "--out", out)
    assert proc.returncode == 0
    assert proc.stdout.count("unchanged, kept") == len(names)
    assert before == mtimes()
    assert [results(out, n, ASSIGNMENT)["score"] for n in names] == [10, 6]


def test_nbgrader_autograde_agrees_on_every_total(autograded):
    with Gradebook(f"sqlite:///{autograded / 'gradebook.db'}") as gb:
        totals = {name: gb.find_submission(ASSIGNMENT, name).score for name in AUTOGRADED}
    assert totals == {name: float(EXPECTED[name]["score"]) for name in AUTOGRADED}


def test_nbgrader_feedback_is_written(autograded):
    nbgrader(autograded, "generate_feedback", ASSIGNMENT)
    html = autograded / "feedback" / "wrong_dtype" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    text = html.read_text()
    assert "Expected: a jax.Array of shape (32,) and dtype float32" in text
    assert "check(" not in text  # the hidden part is not in the learner's feedback


@pytest.mark.parametrize("exercise", exercises.names())
def test_the_autograded_samples_fix_every_checks_points(exercise):
    """What nbgrader autograde grades (helpers.one_per_check) is enough: a total is the
    maximum less the points of the checks a sample fails, and the chosen samples' rows of
    failed checks span every check, so equal totals in both graders mean equal points
    per check."""
    import numpy as np

    from tests.grading.helpers import expected

    want = expected(exercise)
    checks = sorted(name for name, _, _ in hidden_tests(exercise))
    rows = np.array([[float(want[n]["failed"] == "all" or c in want[n]["failed"]) for c in checks]
                     for n in one_per_check(exercise)])
    assert np.linalg.matrix_rank(rows) == len(checks), (exercise, one_per_check(exercise))
