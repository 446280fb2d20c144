"""The class views' roster, from a real nbgrader gradebook (students added with
``nbgrader db student add`` and ``import``, exercises with ``nbgrader db assignment
add``) and the hub's users as :meth:`HubIdentity.users` answers them: every learner
on the class page, submitted or not, signed in or not; every released exercise;
instructors' own submissions counted for no learner."""
import shutil

import pytest

from autograder.service.api.classroom import _without, gradebook_csv
from autograder.service.class_views import class_page, class_stats, roster
from tests.course import nbgrader
from tests.grading.helpers import ASSIGNMENT
from tests.service.test_class_page import _graded, store  # noqa: F401  (a fixture)

OTHER = "donation_report"  # released, tried by nobody


@pytest.fixture(scope="module")
def made_gradebook(tmp_path_factory):
    """A gradebook with two exercises and three students, made by ``nbgrader db``'s
    commands (an instructor's: one added, two imported from a CSV)."""
    root = tmp_path_factory.mktemp("roster")
    db = f"--db=sqlite:///{root / 'gradebook.db'}"
    (root / "exercises.csv").write_text(f"name,duedate\n{ASSIGNMENT},\n{OTHER},\n")
    nbgrader(root, "db", "assignment", "import", str(root / "exercises.csv"), db)
    nbgrader(root, "db", "student", "add", "ada", db)
    (root / "students.csv").write_text("id,first_name,last_name,email\ncy,Cy,C,\ndee,Dee,D,\n")
    nbgrader(root, "db", "student", "import", str(root / "students.csv"), db)
    return root / "gradebook.db"


@pytest.fixture
def gradebook(made_gradebook, tmp_path):
    """A copy of :func:`made_gradebook` for one test: its URL."""
    shutil.copy(made_gradebook, tmp_path / "gradebook.db")
    return f"sqlite:///{tmp_path / 'gradebook.db'}"


HUB = {"ada": {"instructor": False, "signed_in": True},
       "bob": {"instructor": False, "signed_in": True},  # signed in, not in the gradebook
       "ins": {"instructor": True, "signed_in": True}}


def test_every_learner_and_released_exercise_is_on_the_class_page(store, gradebook):  # noqa: F811
    _graded(store, "ada", "state alive")
    _graded(store, "ins", None)  # the instructor tries the exercise: full marks
    course = roster.of_gradebook(gradebook, HUB)
    assert course.learners == {"ada": True, "bob": True, "cy": False, "dee": False}
    assert course.instructors == {"ins"} and course.exercises == (OTHER, ASSIGNMENT)

    data = class_stats.class_data(store, "best", roster=course)
    assert list(data["exercises"]) == [ASSIGNMENT, OTHER]  # the course's order (its registry)
    ex = data["exercises"][ASSIGNMENT]
    rows = {r["learner"]: r for r in ex["learners"]}
    assert list(rows) == ["ada", "bob", "cy", "dee"]
    assert (rows["bob"]["submissions"], rows["bob"]["signed_in"]) == (0, True)
    assert rows["cy"]["signed_in"] is False and rows["ada"]["submissions"] == 1
    assert ex["checks"][0]["learners"] == 1 and ex["scores"] == [ex["max_score"] - 2]
    assert [r["learner"] for r in data["exercises"][OTHER]["learners"]] == ["ada", "bob", "cy", "dee"]
    assert data["exercises"][OTHER]["scores"] == []  # its points: the gradebook's (no cells here)
    assert "ins" not in data["progress"] and set(data["progress"]) == set(rows)

    html = class_page.render(data)
    assert 'id="ex-donation-report"' in html and "4 learners, 0 submitted, 0 graded" in html
    assert "4 learners, 1 submitted, 1 graded" in html
    assert '?learner=cy">cy</a> <span class="absent">(never signed in)</span>' in html
    assert '?learner=bob">bob</a> <span class="absent">(never submitted)</span>' in html
    assert '<tr data-state="ungraded short never-submitted never-signed-in">' in html
    assert "?learner=ins" not in html


def test_the_gradebook_alone_is_a_roster_without_sign_ins(store, gradebook):  # noqa: F811
    _graded(store, "eve", None)  # submitted, never added to the gradebook
    data = class_stats.class_data(store, "best", roster=roster.of_gradebook(gradebook))
    rows = {r["learner"]: r for r in data["exercises"][ASSIGNMENT]["learners"]}
    assert list(rows) == ["ada", "cy", "dee", "eve"]
    assert all(r["signed_in"] is None for r in rows.values())
    html = class_page.render(data)
    assert "(never signed in)" not in html and html.count("(never submitted)") == 6  # ada, cy, dee; twice


def test_the_csv_lists_every_hub_learner_and_no_instructor(gradebook):
    assert roster.enroll(gradebook, ["ada", "bob", "ins"]) == ["bob", "ins"]
    assert roster.enroll(gradebook, ["bob"]) == []
    text = _without(gradebook_csv(gradebook), {"ins"})
    students = {line.split(",")[3] for line in text.splitlines()[1:]}
    assert text.splitlines()[0].split(",")[3] == "student_id"
    assert students == {"ada", "bob", "cy", "dee"}


def test_a_learner_another_process_adds_meanwhile_is_enrolled_not_refused(tmp_path, monkeypatch):
    """The class CSV enrols every learner while a separate worker's gradebook mirror may
    add the same one (its grade) between enroll's look and its write: a duplicate, which
    nbgrader refuses, must not make the CSV a 500."""
    from nbgrader.api import Gradebook

    from autograder.service.class_views import roster
    from tests.course import nbgrader_env

    monkeypatch.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs the venv's alembic
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    Gradebook(url).close()
    real = Gradebook.add_student
    raced = []

    def the_mirror_first(gb, name, **fields):
        if not raced:  # the other process's insert lands after nbgrader looked for her
            raced.append(name)
            with Gradebook(url) as other:
                real(other, name)
        return real(gb, name, **fields)

    monkeypatch.setattr(Gradebook, "add_student", the_mirror_first)
    assert roster.enroll(url, ["ada"], {"ada": "Ada L."}) == ["ada"]
    with Gradebook(url) as gb:
        assert [(s.id, s.last_name) for s in gb.students] == [("ada", "Ada L.")]
