"""docs/instructors.md's "grade a whole class": ``python -m autograder exercises/submitted --out
grades`` from a checkout's root grades every exercise of every learner in nbgrader's
tree (one ``grades/<learner>/<exercise>/results.json`` each, ``summary.csv`` with an
exercise column), and ``--exercise`` picks one exercise's notebooks out of it."""
import csv
import json

import pytest

from autograder import exercises
from tests.course import grader_cli
from tests.grading.helpers import checkout, expected, released_notebook, samples_dir, with_answer

# learner -> exercise -> sample answer handed in (cy answered one exercise only)
CLASS = {
    "ada": dict.fromkeys(exercises.names(), "reference"),
    "bob": {"update_with_donate": "no_donation", "donation_report": "float_bytes",
            "fix_training_loop": "half_fixed", "silent_donation": "as_given"},
    "cy": {"donation_report": "positional_output"},
}


def _scores(answers):
    return {(learner, exercise): float(expected(exercise)[sample]["score"])
            for learner, handed in answers.items() for exercise, sample in handed.items()}


@pytest.fixture(scope="module")
def course(released_course, tmp_path_factory):
    """A checkout whose ``exercises/submitted/`` holds :data:`CLASS`, as the grading
    service or nbgrader's collect leave it."""
    root = checkout(tmp_path_factory.mktemp("checkout"))
    for learner, handed in CLASS.items():
        for exercise, sample in handed.items():
            nb = with_answer(released_notebook(released_course, exercise),
                             (samples_dir(exercise) / f"{sample}.py").read_text(), exercise)
            target = root / "exercises" / "submitted" / learner / exercise / f"{exercise}.ipynb"
            target.parent.mkdir(parents=True)
            target.write_text(json.dumps(nb))
    return root


def _summary(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_every_exercise_of_every_learner_is_graded(course):
    proc = grader_cli("exercises/submitted", "--out", "grades", cwd=course)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "skipped" not in proc.stderr, proc.stderr
    rows = _summary(course / "grades" / "summary.csv")
    assert {(r["submission"], r["exercise"]): float(r["score"]) for r in rows} == _scores(CLASS)
    assert {r["status"] for r in rows} == {"graded"}
    for learner, handed in CLASS.items():
        for exercise in handed:
            assert (course / "grades" / learner / exercise / "results.json").is_file()
    assert len(proc.stdout.strip().splitlines()) == len(rows)


def test_exercise_option_picks_that_exercise_out_of_the_tree(course):
    proc = grader_cli("exercises/submitted", "--exercise", "donation_report", "--out",
                      "report_grades", cwd=course)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = _summary(course / "report_grades" / "summary.csv")
    only = {learner: {"donation_report": handed["donation_report"]}
            for learner, handed in CLASS.items()}
    assert {(r["submission"], r["exercise"]): float(r["score"]) for r in rows} == _scores(only)
    assert "wrong exercise" not in proc.stdout
    others = sum(len(handed) - ("donation_report" in handed) for handed in CLASS.values())
    assert f"--exercise donation_report: left out {others} notebooks of other exercises" in proc.stderr
