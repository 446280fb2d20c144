"""What the store keeps of grading versions, regrades and the gradebook's deadlines, and
the sentences /api/health and the class page make of it (in-process, on SQLite and on a
real PostgreSQL server; the exercise's version is the one on disk)."""
import pytest

from autograder.exercises import current
from autograder.service.class_views import class_page
from autograder.service.gradebook import out_of_date
from autograder.service.gradebook.mirror import Mirror
from autograder.service.store import Caps, Store

EX = "update_with_donate"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request, tmp_path):
    url = tmp_path / "grading.db" if request.param == "sqlite" else request.getfixturevalue(
        "pg_url")()
    store = Store(url)
    yield store
    store.engine.dispose()


def _graded(store, learner, version, score=4.0):
    sub = store.admit(learner, EX, b"{}", "10.0.0.1", Caps(rate_count=0))[0]
    store.claim("host:1:0", 30)
    check = {"grade_id": "test_values", "title": "values", "score": score, "max_score": 10.0,
             "status": "passed", "output": ""}
    assert store.finish(sub, "host:1:0", {"checks": [check], "output": "", "status": "graded",
                                          "version": version})
    return sub


def test_grades_made_by_other_hidden_tests_are_counted_until_regraded(store, tmp_path):
    now = current.version(EX)
    old = _graded(store, "ada", "an older version")
    _graded(store, "bob", now)
    assert store.stale({EX: now}) == {EX: (1, 1)}
    said = out_of_date.versions(store, [EX])
    assert len(said) == 1 and "1 graded submission(s) of 1 learner(s)" in said[0]
    assert f"regrade {EX}" in said[0]
    [new] = store.requeue({old: [old]})
    assert store.get(new).status == "queued" and store.get(old).status == "regraded"
    assert store.stale({EX: now}) == {}  # the old result is kept, not counted
    assert store.get(new).regrade_of == {
        "id": old, "score": 4.0, "max_score": 10.0, "version": "an older version"}


def test_gradebook_penalties_are_flagged_until_written_under_the_current_deadlines(store, tmp_path):
    config = tmp_path / "course" / "nbgrader_config.py"
    config.parent.mkdir()
    config.write_text('c.AssignLatePenalties.plugin_class = "autograder.late_policy.CourseLatePolicy"\n'
                      'c.CourseLatePolicy.penalty_method = "zero"\n')
    mirror = Mirror(tmp_path / "course")
    assert out_of_date.penalties(store, mirror) == []  # nothing graded: nothing out of date
    _graded(store, "ada", current.version(EX))
    assert "late penalties" in out_of_date.penalties(store, mirror)[0]
    store.set_mark(out_of_date.DEADLINES_MARK, mirror.deadlines.state())
    assert out_of_date.penalties(store, mirror) == []
    config.write_text(config.read_text().replace('"zero"', '"per_day"'))  # an edited policy
    assert mirror.deadlines.policy.penalty_method == "per_day"  # read again at once
    assert "late penalties" in out_of_date.penalties(store, mirror)[0]
    store.set_mark(out_of_date.DEADLINES_MARK, mirror.deadlines.state())
    store.remirror()  # after a restore: every grade is written again
    assert out_of_date.penalties(store, mirror) and store.unsynced()


def test_the_class_page_says_what_is_out_of_date_first():
    page = class_page.render({"exercises": {}, "progress": {}, "out_of_date": ["ex: <stale>"]})
    assert "Out of date" in page and "ex: &lt;stale&gt;" in page
    assert "Out of date" not in class_page.render({"exercises": {}, "progress": {}})


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory):
    """A gradebook with ``EX`` and its notebook, no graded cell (made once: a new one runs
    alembic)."""
    from nbgrader.api import Gradebook

    from tests.course import nbgrader_env
    path = tmp_path_factory.mktemp("released") / "gradebook.db"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PATH", nbgrader_env()["PATH"])  # a new gradebook runs the venv's alembic
        gb = Gradebook(f"sqlite:///{path}")
    with gb:
        gb.update_or_create_assignment(EX)
        gb.add_notebook(EX, EX)
    return path


def _released(folder, template, cells):
    """A course folder whose gradebook has ``EX`` released with graded cells ``cells``."""
    import shutil

    from nbgrader.api import Gradebook
    folder.mkdir()
    shutil.copy(template, folder / "gradebook.db")
    points = {name: worth for name, _, worth in __import__(
        "autograder.exercises", fromlist=["get"]).get(EX).tests()}  # as released: theirs
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gb:
        for name in cells:
            gb.add_grade_cell(name, EX, EX, max_score=points.get(name, 1), cell_type="code")
    return Mirror(folder)


def test_hidden_tests_changed_past_the_release_hold_their_submissions_and_say_why(
        store, tmp_path, empty_gradebook):
    """The hidden tests hold a check the released gradebook has no cell for (one added
    since release), or lack one it has (one removed): the exercise's submissions wait
    (the grading threads leave them queued), and /api/health and the class page say why;
    the same tests as released hold nothing."""
    from autograder.service.grading import GradingThreads
    tests = [name for name, _, _ in __import__("autograder.exercises", fromlist=["get"])
             .get(EX).tests()]
    variants = {"a check added": (tests[1:], f"add check(s) {tests[0]}"),
                "a check removed": (tests + ["test_gone"], "remove check(s) test_gone"),
                "as released": (tests, None)}
    for variant, (cells, change) in variants.items():
        mirror = _released(tmp_path / variant.replace(" ", "_"), empty_gradebook, cells)
        said = out_of_date.warnings(store, mirror, [EX])
        held = GradingThreads(store, mirror, None, 1, 0, 30, "best").unloadable()
        if change is None:
            assert said == [] and held == (), (variant, said)
            continue
        assert len(said) == 1 and held == (EX,), (variant, said, held)
        assert "hidden tests changed since release: run make release" in said[0], said
        assert change in said[0] and "wait, queued" in said[0], (variant, said)
        page = class_page.render({"exercises": {}, "progress": {}, "out_of_date": said})
        assert "hidden tests changed since release" in page


def test_a_grading_made_by_tests_edited_meanwhile_goes_back_to_the_queue(store, tmp_path,
                                                                           empty_gradebook):
    """Hidden tests edited after a grading was claimed (the check before the claim saw
    them as released): its result holds a check the gradebook cannot hold, so it is not
    stored; the submission waits, queued, with the others."""
    from autograder.judge import not_run
    from autograder.results import GradingResult
    from autograder.service.grading import GradingThreads
    result = GradingResult(tuple(not_run(EX)), "", "graded", "d", 1.0)
    released = sorted(c.grade_id for c in result.checks)
    for cells, ahead in ((released, False), (released[1:], True), (released + ["gone"], True)):
        mirror = _released(tmp_path / f"cells{len(cells)}", empty_gradebook, cells)
        assert GradingThreads(store, mirror, None, 1, 0, 30, "best").ahead_of_gradebook(
            EX, result) is ahead, cells
    sub = store.admit("ada", EX, b"{}", "10.0.0.1", Caps(rate_count=0))[0]
    store.claim("host:1:0", 30)
    assert store.give_back(sub, "host:1:0") and store.get(sub).status == "queued"
    assert store.claim("host:1:0", 30).id == sub  # graded again, by the tests then in force
