"""``nbgrader autograde`` and ``python -m autograder`` give the same totals.

The corpus (``agreement/``) holds answer cells modelled on instructors' bug
reports, each put into the released ``update_with_donate`` notebook, plus a
correct answer saved with a 24 MiB image output. Both graders run the way the
docs/instructors.md tells an instructor to, in a copy of the course's checkout (with
``.venv`` beside it, as ``make`` leaves it): ``make release``'s
``nbgrader generate_assignment``, then ``cd exercises`` and
``nbgrader autograde`` and ``nbgrader export``, and
``python -m autograder exercises/submitted --out grades``. The environment
carries no PYTHONPATH: the course's own config is all nbgrader gets.
"""
import base64
import csv
import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from autograder.defaults import release_argv
from tests.course import REPO, grader_cli, quiet
from tests.grading.helpers import SAMPLES, checkout, with_answer

AGREEMENT = Path(__file__).resolve().parent / "agreement"
EXPECTED = json.loads((AGREEMENT / "expected.json").read_text())
EXPECTED.pop("_comment")
ASSIGNMENT = "update_with_donate"
IMAGE_BYTES = 24 * 2**20  # base64 text of the saved PNG output


def _env():
    """The instructor's shell: docs/instructors.md's PATH prefix, and no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"../.venv/bin{os.pathsep}{env.get('PATH', '')}"
    return env


def _nbgrader(course, *args):
    return subprocess.run(["nbgrader", *args, *quiet(args)], cwd=course / "exercises",
                          env=_env(), check=True, capture_output=True, text=True, timeout=1800)


def large_image_output(release):
    """A correct answer whose cell still holds the image it displayed (24 MiB)."""
    nb = with_answer(release, (SAMPLES / "reference.py").read_text())
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + os.urandom(IMAGE_BYTES * 3 // 4 - 8)).decode()
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == ASSIGNMENT:
            cell["execution_count"] = 1
            cell["outputs"] = [{"output_type": "display_data", "metadata": {},
                                "data": {"image/png": png, "text/plain": ["<Figure>"]}}]
    return nb


def corpus(release):
    notebooks = {p.stem: with_answer(release, p.read_text()) for p in AGREEMENT.glob("*.py")}
    notebooks["large_image_output"] = large_image_output(release)
    return notebooks


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """``(course grader's results folder, nbgrader's totals)`` for the corpus."""
    course = checkout(tmp_path_factory.mktemp("checkout"))
    _nbgrader(course, *release_argv(ASSIGNMENT)[1:])  # make release's command
    release = json.loads((course / "exercises" / "release" / ASSIGNMENT /
                          f"{ASSIGNMENT}.ipynb").read_text())
    for name, nb in corpus(release).items():
        target = course / "exercises" / "submitted" / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(nb))
    ours = grader_cli("exercises/submitted", "--out", "grades", cwd=course, timeout=1800)
    assert ours.returncode == 0, ours.stderr
    _nbgrader(course, "autograde", ASSIGNMENT)
    _nbgrader(course, "export", "--to", "grades.csv")
    with open(course / "exercises" / "grades.csv") as handle:
        theirs = {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)}
    return course / "grades", theirs


def _results(out, name):
    return json.loads((out / name / ASSIGNMENT / "results.json").read_text())


def test_corpus_covers_every_reported_fault():
    assert set(EXPECTED) == {p.stem for p in AGREEMENT.glob("*.py")} | {"large_image_output"}


def test_both_graders_give_equal_totals(graded):
    out, theirs = graded
    with open(out / "summary.csv") as handle:
        ours = {row["submission"]: float(row["score"]) for row in csv.DictReader(handle)}
    assert ours == theirs


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_course_grader_total_is_right(graded, name):
    out, _ = graded
    got = _results(out, name)
    assert got["score"] == EXPECTED[name]["score"], got["output"]
    for phrase in EXPECTED[name].get("output", []):
        assert phrase in got["output"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_nbgrader_total_is_right(graded, name):
    _, theirs = graded
    assert theirs[name] == EXPECTED[name]["score"]


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "feedback" in EXPECTED[n]))
def test_feedback_says_what_was_observed(graded, name):
    out, _ = graded
    feedback = {t["name"].split(":")[0]: t["output"] for t in _results(out, name)["tests"]}
    for check, phrases in EXPECTED[name]["feedback"].items():
        for phrase in phrases:
            assert phrase in feedback[check], (check, feedback[check])
    for check, phrases in EXPECTED[name].get("not_in_feedback", {}).items():
        for phrase in phrases:
            assert phrase not in feedback[check], (check, feedback[check])


def _hidden_parts():
    """``(exercise, grade_id, source)`` of every hidden-test part of the source notebooks."""
    from autograder.exercises import names

    for exercise in names():
        path = REPO / "exercises" / "source" / exercise / f"{exercise}.ipynb"
        for cell in json.loads(path.read_text())["cells"]:
            source = "".join(cell["source"])
            if "### BEGIN HIDDEN TESTS" in source:
                hidden = source.split("### BEGIN HIDDEN TESTS")[1].split("### END HIDDEN TESTS")[0]
                yield exercise, cell["metadata"]["nbgrader"]["grade_id"], hidden


@pytest.mark.parametrize("exercise,grade_id,hidden", list(_hidden_parts()),
                         ids=lambda v: v if isinstance(v, str) and "\n" not in v else "")
def test_hidden_cells_bind_no_name_in_the_learners_namespace(exercise, grade_id, hidden):
    """nbgrader runs them in the learner's namespace: they must bind, rebind or shadow nothing."""
    import symtable

    table = symtable.symtable(hidden, f"{grade_id}.hidden", "exec")
    bound = [s.get_name() for s in table.get_symbols()
             if s.is_assigned() or s.is_imported() or s.is_namespace()]
    assert bound == [], f"{exercise}/{grade_id} binds {bound}"
    assert "nbgrader_bridge" in hidden


def test_the_scaled_result_expectation_holds_for_any_seed():
    """The seed comes from the grader's digest, so it changes with any edit of a grader
    module: ``scaled_result``'s expected phrases must hold whatever the seed. Recomputes
    its values check in NumPy (the same float32 additions and products XLA does) over
    many seeds, with the hidden test's own message functions."""
    from autograder.exercises.update_with_donate.hidden import tests as hidden
    from autograder.exercises.update_with_donate.probe import VALUE_LENGTHS, make_inputs

    phrases = EXPECTED["scaled_result"]["feedback"]["values"]
    for seed in range(300):
        for n in sorted(VALUE_LENGTHS, reverse=True):  # the hidden test's order
            state, delta = make_inputs(seed, n)
            got = (state + delta) * np.float32(1 + 5e-6)
            said = hidden._difference(got, state + delta, hidden.VALUE_TOL)
            if said:
                said += "; " + hidden._values_hint(got, state, delta)
                break
        assert said and all(p in said for p in phrases), (seed, said)
