"""The instructors' views agree, or say they are out of date: every statistic of the class
page says which learners it is over, and its numbers are those of ``api/class``
(:func:`~autograder.service.class_views.class_view.summary`), whoever the class holds; a grade
set by hand in nbgrader's formgrader is the grade in every view, as in ``nbgrader export``,
and survives a regrade as nbgrader keeps it; gradebook points other than the hidden tests'
are said on the class page, ``api/class`` and ``/api/health``; an instructor's own test
submission counts in no view; every view prints points by one rule (a real nbgrader
gradebook, a real store, the course site's own script run by node)."""
import csv
import dataclasses
import datetime
import io
import json
import re
import shutil
import sqlite3
from html import unescape

import pytest
from nbgrader.api import Gradebook

from autograder import exercises
from autograder.defaults import points_text
from autograder.judge import hidden_tests, not_run
from autograder.results import GradingResult
from autograder.service.api.classroom import gradebook_csv
from autograder.service.class_views import class_page, class_stats, roster
from autograder.service.class_views.class_view import summary
from autograder.service.gradebook import out_of_date
from autograder.service.gradebook.mirror import Mirror
from autograder.service.store import Caps
from tests.grading.helpers import ASSIGNMENT
from tests.service.test_class_page import _graded, store  # noqa: F401  (a fixture)


@pytest.fixture(scope="module")
def empty_gradebook(tmp_path_factory):
    """A gradebook with ``ASSIGNMENT`` and its notebook, no graded cell (nbgrader stamps a
    new database by running alembic, a process of seconds; a database that has a table
    already is left unstamped, which nothing here reads)."""
    path = tmp_path_factory.mktemp("released") / "gradebook.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    with Gradebook(f"sqlite:///{path}") as gb:
        gb.update_or_create_assignment(ASSIGNMENT)
        gb.add_notebook(ASSIGNMENT, ASSIGNMENT)
    return path


HUB = {"ins": {"instructor": True, "signed_in": True}}


def _not_graded(store, learner):  # noqa: F811
    store.admit(learner, ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))
    claimed = store.claim("host:1:0", lease=30)
    result = GradingResult(tuple(not_run(ASSIGNMENT)), "not attempted: the stub", "not attempted",
                           "d", 1.0)
    assert store.finish(claimed.id, "host:1:0", result.to_record())


# each kind of learner a class holds: how to make one (store, name) -> the drops it adds
KINDS = {
    "passing": lambda s, n: _graded(s, n, None) and {},
    "failing": lambda s, n: _graded(s, n, "donates 0 of its 2 arguments") and {},
    "not graded": lambda s, n: _not_graded(s, n) or {},
    "failing, then not graded": lambda s, n: (_graded(s, n, "x"), _not_graded(s, n)) and {},
    "not graded, then failing": lambda s, n: (_not_graded(s, n), _graded(s, n, "x")) and {},
    "never submitted": lambda s, n: {},
    "withdrawn, failing": lambda s, n: _graded(s, n, "donates 0 of 2") and {n: "withdrawn"},
    "withdrawn, never submitted": lambda s, n: {n: "withdrawn"},
    "an instructor's test": lambda s, n: _graded(s, "ins", "x") and {},
}


def _caption(html, starts):
    [text] = [unescape(c) for c in re.findall(r"<figcaption>(.*?)</figcaption>", html)
              if unescape(c).startswith(starts)] or [""]
    return text


def _count(text, pattern):
    found = re.search(pattern, text)
    return int(found[1]) if found else 0


@pytest.mark.parametrize("kinds", [(k,) for k in KINDS] + [tuple(KINDS)], ids=lambda k: "+".join(k))
def test_each_statistic_of_the_class_page_says_whom_it_counts(store, kinds):  # noqa: F811
    """A passing learner and one of each kind in ``kinds``: the header, the pass rates, the
    failing count of each check, the recorded scores and the timeline each name the learners
    they count, those counts are the class's, and the pass rates are api/class's."""
    dropped = {}
    for i, kind in enumerate(("passing", *kinds)):
        dropped |= KINDS[kind](store, f"l{i}")
    course = roster.combine([f"l{i}" for i in range(len(kinds) + 1)], {ASSIGNMENT: 10.0}, HUB,
                            None, dropped=dropped)
    data = class_stats.class_data(store, "best", roster=course)
    ex = data["exercises"][ASSIGNMENT]
    html = class_page.render(data)
    rows = ex["learners"]
    ran = [r for r in rows if r["latest"] is not None and not r["not_graded"]]
    not_graded = [r for r in rows if r["not_graded"]]
    none = [r for r in rows if r["latest"] is None]
    head = unescape(re.search(r"<h2 id=\"ex-[^\"]+-h\">.*?</h2><p>(.*?)</p>", html)[1])
    assert _count(head, r"^(\d+) learners") == len(rows) == len(course.learners), head
    assert _count(head, r"\((\d+) withdrawn") == len(course.withdrawn), head
    assert _count(head, r"(\d+) submitted") == sum(1 for r in rows if r["submissions"]), head
    assert _count(head, r"(\d+) graded") == len(ex["scores"]), head
    assert _count(head, r"\((\d+) of them: latest notebook could not be graded") == len(not_graded)

    rates = _caption(html, "Pass rate")
    assert _count(rates, r"each of (\d+) learners") == len(ran), rates
    assert _count(rates, r"(\d+) whose latest notebook could not be graded") == len(not_graded)
    assert _count(rates, r"(\d+) with no graded submission") == len(none), rates
    api = summary(store, "best", rows=course.learner_rows(store.submissions()))[ASSIGNMENT]
    assert [(c["passed"], c["learners"]) for c in ex["checks"]] == [
        (c["passed"], c["learners"]) for c in api["checks"]]
    for check in ex["checks"]:  # the page's "n failing" is the learners listed under it
        assert check["learners"] == len(ran), check
        failing = re.search(rf'<h4 class="check">{re.escape(check["name"])}: (\d+) failing', html)
        listed = sum(g["count"] for g in check["groups"])
        assert (int(failing[1]) if failing else 0) == listed == check["learners"] - check["passed"]

    scores = _caption(html, "Recorded scores")
    assert _count(scores, r"of the (\d+) learners") == len(ex["scores"]), scores
    assert _count(scores, r"the (\d+) without one") == len(rows) - len(ex["scores"]), scores
    timeline = _caption(html, "Submissions over time")
    assert _count(timeline, r"all (\d+) submissions") == len(ex["times"]), timeline
    assert _count(timeline, r"of the (\d+) learners") == sum(1 for r in rows if r["submissions"])


def _course(tmp_path, template, store, points=None, late=False):  # noqa: F811
    """A course whose gradebook has ``ASSIGNMENT`` released with the hidden tests' cells
    (``points``: ``{cell: max_score}`` instead of the tests' own, for some), and ada's and
    bob's graded submissions written there by the service's mirror (``late``: due two days
    before they submitted, a third of a point off per day late)."""
    folder = tmp_path / "course"
    folder.mkdir()
    shutil.copy(template, folder / "gradebook.db")
    with Gradebook(f"sqlite:///{folder / 'gradebook.db'}") as gb:
        for name, _, worth in exercises.get(ASSIGNMENT).tests():
            gb.add_grade_cell(name, ASSIGNMENT, ASSIGNMENT, cell_type="code",
                              max_score=(points or {}).get(name, worth))
        if late:
            gb.update_or_create_assignment(ASSIGNMENT, duedate=datetime.datetime.now(
                datetime.UTC).replace(tzinfo=None) - datetime.timedelta(days=2))
    if late:
        (folder / "nbgrader_config.py").write_text(
            "c = get_config()\n"
            "c.AssignLatePenalties.plugin_class = 'autograder.late_policy.CourseLatePolicy'\n"
            "c.CourseLatePolicy.penalty_method = 'per_day'\n"
            "c.CourseLatePolicy.points_per_day = 1 / 3\n")
    mirror = Mirror(folder)
    store.set_mark(out_of_date.DEADLINES_MARK, mirror.deadlines.state())  # penalties written
    for who in ("ada", "bob"):
        _graded(store, who, "x")
        _mirror(mirror, store.graded(who, ASSIGNMENT)[-1])
    return mirror


def _mirror(mirror, row):
    """Write ``row`` into the gradebook with its late penalty, as the gradebook thread does."""
    from autograder.service.gradebook.recorded import late_by
    mirror.record(row, late_by(mirror.deadlines)(row).penalty)


CELL = hidden_tests(ASSIGNMENT)[1][0]  # a check each learner passed (the first failed)


def _grade(mirror, learner, **fields):
    """Set ``fields`` of ``learner``'s :data:`CELL` as formgrader does."""
    with Gradebook(mirror.url) as gb:
        name = CELL
        grade = gb.find_grade(name, ASSIGNMENT, ASSIGNMENT, learner)
        for key, value in fields.items():
            setattr(grade, key, value)
        gb.db.commit()


def _csv(mirror):
    return {r["student_id"]: float(r["score"])
            for r in csv.DictReader(io.StringIO(gradebook_csv(mirror.url)))}


# each way formgrader sets a grade (its fields, from the autograder's score of the cell),
# and whether it is a grade set by hand (nbgrader's total then differs from the autograder's)
MANUAL = {
    "a manual score above the autograder's": (lambda auto: {"manual_score": auto + 1}, True),
    "a manual score below it": (lambda auto: {"manual_score": 0.0}, True),
    "a fractional manual score": (lambda auto: {"manual_score": auto * 2 / 3}, True),
    "extra credit": (lambda auto: {"extra_credit": 0.5}, True),
    "a manual score and extra credit": (
        lambda auto: {"manual_score": auto / 3, "extra_credit": 0.25}, True),
    "a manual score equal to it": (lambda auto: {"manual_score": auto}, False),
    "both cleared again": (lambda auto: {"manual_score": None, "extra_credit": None}, False),
}


def _auto(mirror, learner="ada"):
    with Gradebook(mirror.url) as gb:
        return gb.find_grade(CELL, ASSIGNMENT, ASSIGNMENT, learner).auto_score


def _agree(db, mirror):
    """Every view's grades (:func:`_views`) of the store ``db``, asserted equal to the class
    CSV's, which is ``nbgrader export``'s; returns them."""
    views = _views(db, mirror)
    for view, grades in views.items():
        assert grades == pytest.approx(views["class CSV"], abs=1e-9), (view, views)
    return views


@pytest.mark.parametrize("late", [False, True], ids=["on time", "late"])
@pytest.mark.parametrize("how", MANUAL)
def test_a_grade_set_in_formgrader_is_the_grade_in_every_view(
        store, tmp_path, empty_gradebook, monkeypatch, how, late):  # noqa: F811
    """An instructor's manual score or extra credit in formgrader is the learner's grade in
    api/class (the class page's), api/standing, the LMS's outbox, as in nbgrader export and
    the class CSV, on time or late (nbgrader's late penalty deducted), and those views say
    it was set by the instructor, with the autograder's score beside it; bob's is his own."""
    from autograder.service.gradebook import lateness
    monkeypatch.setattr(lateness, "CACHE_S", 0.0)  # formgrader's edits read at once
    mirror = _course(tmp_path, empty_gradebook, store, late=late)
    before = _agree(store, mirror)
    change, by_hand = MANUAL[how]
    _grade(mirror, "ada", **change(_auto(mirror)))
    after = _agree(store, mirror)
    assert after["class CSV"]["bob"] == before["class CSV"]["bob"]
    assert (after["class CSV"]["ada"] != pytest.approx(before["class CSV"]["ada"])) == by_hand
    learners = summary(store, "best", mirror.deadlines)[ASSIGNMENT]["learners"]
    said = learners["ada"]["set_by"]
    assert learners["bob"]["set_by"] is None
    if not by_hand:
        assert said is None, (how, said)
        return
    assert said["by"] == "instructor" and said["cells"] == [CELL] and not said["review"], said
    assert said["autograder"] == pytest.approx(before["class CSV"]["ada"]), said
    rows = [r for r in store.submissions("ada") if r.exercise == ASSIGNMENT]
    from autograder.service.gradebook.recorded import late_by, standing
    assert standing(rows, "best", late_by(mirror.deadlines))["recorded"]["set_by"] == said
    row = class_page._row(dict(class_stats.NOBODY, learner="ada", signed_in=True, late=late,
                               last_activity=None, failed=[], **learners["ada"]), 10)
    assert "set by the instructor in formgrader" in row, row
    assert out_of_date.overrides(mirror) == []  # nothing out of date: every view agrees


# each later grading of ada's exercise after her grade was set by hand
REGRADED = {
    "a regrade of her submission": lambda db, mirror: _regrade_all(db, mirror),
    "a better attempt of hers": lambda db, mirror: _graded(db, "ada", None),
}


def _regrade_all(db, mirror):
    """Regrade ``ASSIGNMENT`` in the store ``db`` (every check now passes), as the regrade
    command and a worker do."""
    from autograder.service.commands import regrade
    from autograder.service.gradebook.recorded import late_by
    regrade.queue(db, ASSIGNMENT, "best", late_by(mirror.deadlines), False)
    while (row := db.claim("host:1:0", lease=30)) is not None:
        checks = [c.__class__(c.grade_id, c.title, c.max_score, c.max_score, "passed", "")
                  for c in db.submissions("ada")[0].result.checks]
        assert db.finish(row.id, "host:1:0", GradingResult(checks, "", "graded", "d", 1.0)
                            .to_record())


@pytest.mark.parametrize("late", [False, True], ids=["on time", "late"])
@pytest.mark.parametrize("later", REGRADED)
def test_a_grade_set_in_formgrader_survives_a_regrade_as_in_nbgrader(
        store, tmp_path, empty_gradebook, monkeypatch, later, late):  # noqa: F811
    """nbgrader keeps a manual score when a submission is graded again (``SaveAutoGrades``
    flags the cell for review): after a regrade or a better attempt, written into the
    gradebook by the mirror, the manual score still counts in every view, they say it needs
    review, and the class page's "Out of date" names ada until it is reviewed."""
    from autograder.service.gradebook import lateness
    from autograder.service.gradebook.recorded import late_by, recorded
    monkeypatch.setattr(lateness, "CACHE_S", 0.0)
    mirror = _course(tmp_path, empty_gradebook, store, late=late)
    _grade(mirror, "ada", manual_score=0.5)
    REGRADED[later](store, mirror)
    for who in ("ada", "bob"):  # the gradebook thread writes each recorded grade
        keep = recorded(store.submissions(who), "best", late_by(mirror.deadlines))
        _mirror(mirror, next(r for r in store.graded(who, ASSIGNMENT) if r.id == keep.id))
    with Gradebook(mirror.url) as gb:
        grade = gb.find_grade(CELL, ASSIGNMENT, ASSIGNMENT, "ada")
        assert grade.manual_score == 0.5 and grade.needs_manual_grade, "nbgrader's own rule"
    _agree(store, mirror)
    said = summary(store, "best", mirror.deadlines)[ASSIGNMENT]["learners"]["ada"]["set_by"]
    assert said is not None and said["review"], said
    warned = out_of_date.overrides(mirror)
    assert len(warned) == 1 and "ada" in warned[0] and "bob" not in warned[0], warned
    assert set(warned) <= set(out_of_date.warnings(store, mirror, [ASSIGNMENT]))
    _grade(mirror, "ada", needs_manual_grade=False)  # reviewed in formgrader
    assert out_of_date.overrides(mirror) == []


def test_gradebook_points_other_than_the_hidden_tests_are_said_on_the_class_page(
        store, tmp_path, empty_gradebook):  # noqa: F811
    """A check reweighted in the hidden tests before anyone was graded by older ones: the
    gradebook's max_score (the CSV's) is not what the class page grades out of, and the
    class page and api/class say so, as /api/health does."""
    name, _, worth = hidden_tests(ASSIGNMENT)[0]
    mirror = _course(tmp_path, empty_gradebook, store, {name: worth + 1})
    said = out_of_date.warnings(store, mirror, [ASSIGNMENT])
    assert any("the gradebook's points differ from the hidden tests'" in s and name in s
               for s in said), said


def _views(store, mirror):  # noqa: F811
    """``{view: {learner: recorded grade}}`` of the class view (api/class, the class page),
    api/standing's reading, the LMS's outbox and the class CSV."""
    from autograder.service.gradebook import recorded
    from autograder.service.lms import outbox
    lateness = recorded.late_by(mirror.deadlines)
    learners = summary(store, "best", mirror.deadlines)[ASSIGNMENT]["learners"]
    return {
        "api/class": {who: v["recorded"] for who, v in learners.items()},
        "api/standing": {who: recorded.standing(
            [r for r in store.submissions(who) if r.exercise == ASSIGNMENT], "best",
            lateness)["recorded"]["score"] for who in learners},
        "LMS": {who: score for (who, _), (score, _, _) in outbox.wanted(store, "best", lateness).items()},
        "class CSV": _csv(mirror)}


@pytest.mark.parametrize("every", [False, True], ids=["recorded", "every"])
@pytest.mark.parametrize("running", [False, True], ids=["queued", "running"])
def test_a_regrade_under_way_keeps_the_old_grade_in_every_view_and_says_so(
        store, tmp_path, empty_gradebook, every, running):  # noqa: F811
    """ada has a better and a later, worse attempt, bob one: while their regrades wait
    (queued, or one taken by a worker), every view gives the old grades, as nbgrader's
    gradebook and the LMS still hold them, and the class page says a regrade is under way;
    once graded, the views take the new ones and the sentence goes."""
    from autograder.service.commands import regrade
    from autograder.service.gradebook.recorded import late_by
    mirror = _course(tmp_path, empty_gradebook, store)  # ada's and bob's first attempts
    _graded(store, "ada", "y")  # ada's later attempt (the same score): the gradebook keeps hers
    before = _views(store, mirror)
    assert all(v == before["class CSV"] for v in before.values()), before
    made = regrade.queue(store, ASSIGNMENT, "best", late_by(mirror.deadlines), every)
    assert len(made) == 3 if every else len(made) >= 2
    if running:
        store.claim("host:1:0", lease=30)
    assert _views(store, mirror) == before
    said = out_of_date.warnings(store, mirror, [ASSIGNMENT])
    assert any("a regrade is under way" in s for s in said), said
    taken = [store.get(i) for i in made if store.get(i).status == "running"]
    while taken or (claimed := store.claim("host:1:0", lease=30)) is not None:
        row = taken.pop() if taken else claimed
        checks = [c.__class__(c.grade_id, c.title, c.max_score, c.max_score, "passed", "")
                  for c in store.submissions("ada")[0].result.checks]
        assert store.finish(row.id, row.lease_owner or "host:1:0",
                            GradingResult(checks, "", "graded", "d", 1.0).to_record())
    after = _views(store, mirror)
    full = sum(p for _, _, p in hidden_tests(ASSIGNMENT))
    assert {k: v for k, v in after.items() if k != "class CSV"} == {
        k: {"ada": full, "bob": full} for k in ("api/class", "api/standing", "LMS")}
    assert not any("a regrade is under way" in s for s in out_of_date.warnings(store, mirror, [ASSIGNMENT]))


# one learner's attempts: (score of 10, hours after the due date), oldest first
HISTORIES = {
    "on time, then a late better one": [(6.0, -2), (10.0, 30)],
    "on time, then a late worse one": [(8.0, -2), (4.0, 30)],
    "late only": [(10.0, 5)],
    "late, then on time (a regrade's time)": [(10.0, 50), (7.0, -1)],
    "on time only": [(9.0, -1)],
}


@pytest.mark.parametrize("method", ["none", "zero", "per_day"])
@pytest.mark.parametrize("rule", ["best", "latest"])
def test_latest_and_best_on_the_class_page_are_what_the_learner_reads(tmp_path, method, rule):
    """For each history of on-time and late attempts, under each late policy and rule
    (due dates from a real nbgrader gradebook, with an extension for bob): the class
    page's and api/class's latest score is the learner's own (api/standing's, after its
    late penalty), their recorded grade is api/standing's, and under ``best`` the best
    score is the recorded grade."""
    from autograder.service.class_views.class_view import class_summary
    from autograder.service.gradebook.recorded import late_by, standing
    from tests.service.test_recorded import course, row
    deadlines = course(tmp_path, method, per_day=3.0)
    lateness = late_by(deadlines)
    for history in HISTORIES.values():
        for learner in ("ann", "bob"):
            rows = [dataclasses.replace(row(i + 1, score, hours), learner=learner,
                                        id=f"{learner}{i}") for i, (score, hours) in enumerate(history)]
            page = class_summary(rows, rule, lateness, deadlines.due)["ex"]["learners"][learner]
            mine = standing(rows, rule, lateness)
            said = (history, learner, page, mine)
            assert page["latest"] == mine["latest"]["score"], said
            assert page["recorded"] == mine["recorded"]["score"], said
            if rule == "best":
                assert page["best"] == page["recorded"], said


def _extension(deadlines, days):
    with Gradebook(deadlines.url) as gb:
        from autograder.service.gradebook.mirror import update_or_create_submission
        update_or_create_submission(gb, ASSIGNMENT, "ann", extension=datetime.timedelta(days=days))


def _due(deadlines, when):
    with Gradebook(deadlines.url) as gb:
        gb.update_or_create_assignment(ASSIGNMENT, duedate=when)


def _late_course(tmp_path):
    """The :class:`Deadlines` of a course (a real nbgrader gradebook) whose ``ASSIGNMENT``
    was due two days ago, half a point off per day late, with ann enrolled."""

    from autograder.service.gradebook.lateness import Deadlines
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.AssignLatePenalties.plugin_class = 'autograder.late_policy.CourseLatePolicy'\n"
        "c.CourseLatePolicy.penalty_method = 'per_day'\nc.CourseLatePolicy.points_per_day = 0.5\n")
    with sqlite3.connect(tmp_path / "gradebook.db") as db:  # no alembic (empty_gradebook)
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment(ASSIGNMENT, duedate=datetime.datetime.now(datetime.UTC).replace(
            tzinfo=None) - datetime.timedelta(days=2))
        gb.add_student("ann")
    return Deadlines(url, tmp_path, sqlite_file=tmp_path / "gradebook.db")


# each change that moves a recorded grade without a new plan of the LMS's grades
REPLANNED = {
    "an extension granted": lambda graded, d: _extension(d, 60),
    "the deadline moved past the submission": lambda graded, d: _due(
        d, datetime.datetime.now(datetime.UTC).replace(tzinfo=None) + datetime.timedelta(days=1)),
    "the late policy edited": lambda graded, d: (d.course / "nbgrader_config.py").write_text(
        (d.course / "nbgrader_config.py").read_text().replace("'per_day'", "'none'")),
    "a better submission graded": lambda graded, d: _graded(graded, "ann", None),
}


@pytest.mark.parametrize("change", REPLANNED)
def test_api_class_says_the_lms_holds_a_grade_only_while_it_is_the_recorded_one(
        store, tmp_path, monkeypatch, change):  # noqa: F811
    """ann's late grade was planned and sent to the LMS; then a course change moves her
    recorded grade before the next plan: api/class's ``lms`` no longer says the LMS holds
    it, and says what the LMS holds; after the plan and the send it holds it again."""
    from autograder.service.gradebook import lateness
    from autograder.service.gradebook.recorded import late_by
    from autograder.service.lms import outbox
    from autograder.service.store import lti, passback
    monkeypatch.setattr(lateness, "CACHE_S", 0.0)  # the gradebook's dates read at once
    deadlines = _late_course(tmp_path)
    _graded(store, "ann", "x")
    lti.remember_person(store, "ann", {"issuer": "i", "sub": "s-ann", "name": "Ann",
                                       "roles": "[]", "seen_at": 0.0}, True)

    def send():
        outbox.plan(store, "best", late_by(deadlines))
        while (row := passback.claim(store, "t", 60.0)) is not None:
            passback.sent(store, row, "t")
        return outbox.annotate(summary(store, "best", deadlines), store)[ASSIGNMENT]["learners"]["ann"]

    sent = send()
    assert sent["lms"] == {"holds": True, "why": None} and sent["penalty"] > 0, sent
    REPLANNED[change](store, deadlines)
    now = outbox.annotate(summary(store, "best", deadlines), store)[ASSIGNMENT]["learners"]["ann"]
    assert now["recorded"] != sent["recorded"], (change, now)
    assert now["lms"]["holds"] is False and f"holds {points_text(sent['recorded'])}" in now["lms"]["why"]
    assert send()["lms"] == {"holds": True, "why": None}


def _fractions():
    """Points the course's views print: thirds and eighths (ties at the second decimal),
    each less late penalties of a third and of half a point a day, and a manual score's
    extra credit of a quarter; halves such as 7.5 among them; negatives never shown."""
    base = [k / d for d in (1, 2, 3, 8, 100) for k in range(0, 33)] + [2 / 3, 1.005, 2.675, 12.345]
    late = [max(0.0, x - days * per) for x in base[:60] for per in (1 / 3, 0.5) for days in (1, 2)]
    return base + late + [x + 0.25 for x in base[:40]]


def test_every_view_prints_points_by_one_rule(tmp_path):
    """Each number a view prints (the class page's cells, the learner's history page, the
    exercise page's grader.js, the submit cell, the command line, the regrade command's
    words) is :func:`autograder.defaults.points_text` of it: rounded to 2 decimals by one
    rule, never 0.666667 in one place and 0.67 in another, 7.5 here and 8 there."""
    import json
    import subprocess

    from autograder import defaults, learner_submit
    from autograder.service.api import classroom
    from autograder.service.commands import regrade
    numbers = _fractions()
    js = (defaults.CHECKOUT / "book" / "_static" / "grader.js").read_text()
    points_js = re.search(r"function points\(x\) \{.*?\n?\s*\}", js)[0]
    script = tmp_path / "points.js"
    script.write_text(points_js + "\nconst xs = JSON.parse(process.argv[2]);\n"
                      "console.log(JSON.stringify(xs.map(points)));\n")
    page = json.loads(subprocess.run(["node", str(script), json.dumps(numbers)], check=True,
                                     capture_output=True, text=True).stdout)
    for x, shown in zip(numbers, page, strict=True):
        rule = defaults.points_text(x)
        assert shown == rule, (x, shown, rule)  # the exercise page's (grader.js)
        assert class_page._num(x) == classroom._num(x) == learner_submit._pts(x) == rule, x
        assert regrade._points({"score": x, "max_score": 10.0}) == f"{rule}/10", x
        assert abs(float(rule) - x) <= 0.005 + 1e-12, (x, rule)  # the same number, rounded
    row = class_page._row(dict(class_stats.NOBODY, learner="ada", signed_in=True, late=True,
                               last_activity=None, failed=[], recorded=2 / 3, best=7.5,
                               latest=29 / 8, late_seconds=90000.0, penalty=1 / 3), 10)
    for x in (2 / 3, 7.5, 29 / 8, 1 / 3):
        assert f">{defaults.points_text(x)}<" in row or f"\u2212{defaults.points_text(x)})" in row, row


INSTRUCTOR_ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"

def _lms_instructor(db, name):
    from autograder.service.store import lti
    lti.remember_person(db, name, {"issuer": "i", "sub": f"s-{name}", "name": name.title(),
                                   "roles": json.dumps([INSTRUCTOR_ROLE]), "seen_at": 0.0}, True)


# each way a person is an instructor without a hub to ask: (their name, how to make them one)
STAFF = {
    "the instructors group's member (PAM)": (  # root: the primary member of group root
        "root", lambda mp, db: mp.setenv("HUB_INSTRUCTORS_GROUP", "root")),
    "a hub admin": ("ins", lambda mp, db: mp.setenv("HUB_ADMINS", "someone, ins")),
    "the LMS's instructor": ("ins", lambda mp, db: _lms_instructor(db, "ins")),
}


@pytest.mark.parametrize("who", STAFF)
def test_an_instructors_test_submission_counts_in_no_view(
        store, tmp_path, empty_gradebook, monkeypatch, who):  # noqa: F811
    """An instructor submits to try an exercise: the gradebook thread never writes it into
    nbgrader's gradebook (``nbgrader export`` itself lists no instructor, nor does
    ``submitted/``, which ``python -m autograder`` grades), the LMS is sent no grade of
    theirs, and the class view, its statistics and the class CSV count only the learners."""
    import threading

    from autograder.service.gradebook.recorded import late_by
    from autograder.service.gradebook.sync import GradebookSync
    from autograder.service.lms import outbox
    for name in ("HUB_INSTRUCTORS_GROUP", "HUB_ADMINS"):
        monkeypatch.delenv(name, raising=False)
    mirror = _course(tmp_path, empty_gradebook, store)
    name, make = STAFF[who]
    make(monkeypatch, store)
    _graded(store, name, None)  # their test: full marks
    _graded(store, "cy", "x")  # a learner graded beside it
    GradebookSync(store, mirror, "best", "host:1:gradebook", threading.Event()).once()
    exported = _csv(mirror)
    assert name not in exported and set(exported) == {"ada", "bob", "cy"}, exported
    assert not (mirror.course / "submitted" / name).exists()
    assert (mirror.course / "submitted" / "cy").is_dir()
    sent = outbox.wanted(store, "best", late_by(mirror.deadlines))
    assert {who for who, _ in sent} == {"ada", "bob", "cy"}, sent
    students, points = roster.read_gradebook(mirror.url)
    course = roster.combine(students, points, None, None, (), {}, roster.staff(store))
    assert name in course.instructors and name not in course.learners, course
    data = class_stats.class_data(store, "best", mirror.deadlines, course)
    rows = data["exercises"][ASSIGNMENT]["learners"]
    assert sorted(r["learner"] for r in rows) == ["ada", "bob", "cy"], rows
    assert len(data["exercises"][ASSIGNMENT]["scores"]) == len(exported), data
    assert not store.unsynced()  # nothing left for the next round
