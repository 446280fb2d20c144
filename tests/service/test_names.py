"""Every instructor command that takes an exercise's or a learner's name refuses one it
does not know (a typo, another case, a stray space, a learner nobody enrolled) before it
touches anything, naming the close match and the known names: no phantom exercise or
learner reaches the gradebook, the class page or the CSV."""
import hashlib
import shutil

import pytest
from nbgrader.api import Gradebook

from autograder import release
from autograder.service.commands import deadlines, regrade
from tests.course import nbgrader_env
from tests.grading.helpers import ASSIGNMENT

WRONG_EXERCISES = {"typo": ASSIGNMENT[:-1], "case": ASSIGNMENT.title(),
                   "trailing space": ASSIGNMENT + " ", "leading space": " " + ASSIGNMENT}
WRONG_LEARNERS = {"typo": "adaa", "case": "Ada", "trailing space": "ada ",
                  "unknown": "nobody"}


def _commands(exercise=ASSIGNMENT, learner="ada"):
    """Each command with an exercise name (and a learner's): ``(module, argv after the
    options)``."""
    return {"deadlines due": (deadlines, ["due", exercise, "2030-01-01 00:00"]),
            "deadlines extend": (deadlines, ["extend", exercise, learner, "24"]),
            "regrade": (regrade, [exercise]),
            "regrade --every": (regrade, [exercise, "--every"]),
            "release": (release, [exercise])}


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory):
    """A gradebook with the exercise and one student, ada (made once: nbgrader's schema
    takes seconds)."""
    path = tmp_path_factory.mktemp("names") / "gradebook.db"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs the venv's alembic
        gb = Gradebook(f"sqlite:///{path}")
    with gb:
        gb.update_or_create_assignment(ASSIGNMENT)
        gb.update_or_create_student("ada")
    return path


@pytest.fixture
def course(tmp_path, gradebook):
    """A course folder with a copy of :func:`gradebook`."""
    shutil.copy(gradebook, tmp_path / "gradebook.db")
    return tmp_path


def _state(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _refused(course, capsys, module, argv):
    before = _state(course)
    with pytest.raises(SystemExit) as stopped:
        module.main(["--db", str(course / "grading.db"), "--course", str(course), *argv])
    said = capsys.readouterr().err
    assert stopped.value.code == 2, said
    assert _state(course) == before  # nothing touched (no store made either)
    return said


@pytest.mark.parametrize("variant", WRONG_EXERCISES)
@pytest.mark.parametrize("command", _commands())
def test_an_unknown_exercise_is_refused_by_every_command(course, capsys, command, variant):
    wrong = WRONG_EXERCISES[variant]
    module, argv = _commands(exercise=wrong)[command]
    said = _refused(course, capsys, module, argv)
    assert f"unknown exercise {wrong!r}" in said and f"did you mean {ASSIGNMENT!r}" in said, said
    assert "Nothing was changed" in said and "silent_donation" in said  # the known ones


@pytest.mark.parametrize("variant", WRONG_LEARNERS)
def test_an_unknown_learner_is_refused(course, capsys, variant):
    wrong = WRONG_LEARNERS[variant]
    module, argv = _commands(learner=wrong)["deadlines extend"]
    said = _refused(course, capsys, module, argv)
    assert f"unknown learner {wrong!r}" in said and "nbgrader db student add" in said, said
    if variant != "unknown":
        assert "did you mean 'ada'" in said, said


def test_a_known_name_is_taken(course, capsys):
    module, argv = _commands()["deadlines extend"]
    assert module.main(["--db", str(course / "grading.db"), "--course", str(course), *argv]) == 0
    assert "ada: extension 1 day" in capsys.readouterr().out
