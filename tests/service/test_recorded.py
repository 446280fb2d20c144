"""The rule that decides a learner's grade, in-process: which graded submission is
recorded (``best``, ``latest``) once each one's late penalty is taken off, under each
late policy of :mod:`autograder.late_policy` (``none``, ``zero``, ``per_day``), with
due dates and an extension read from a real nbgrader gradebook (SQLite, made here
with nbgrader's own API; no command, no server)."""
import datetime
import sqlite3
from dataclasses import replace

import pytest
from nbgrader.api import Gradebook

from autograder.results import CheckResult, GradingResult
from autograder.service.gradebook.lateness import Deadlines, Lateness
from autograder.service.gradebook.mirror import update_or_create_submission
from autograder.service.gradebook.recorded import late_by, recorded, standing
from autograder.service.store.rows import Submission

DUE = datetime.datetime(2026, 12, 1, 12, 0)  # naive UTC, as nbgrader stores it
HOUR, DAY = 3600.0, 86400.0


def course(tmp_path, method, per_day=1.0):
    """A course folder whose ``nbgrader_config.py`` names the course's plugin with
    ``method``; its gradebook holds exercise ``ex`` due at :data:`DUE`, learners ``ann``
    (no extension) and ``bob`` (a two-day extension). Returns its :class:`Deadlines`."""
    (tmp_path / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.AssignLatePenalties.plugin_class = 'autograder.late_policy.CourseLatePolicy'\n"
        f"c.CourseLatePolicy.penalty_method = {method!r}\n"
        f"c.CourseLatePolicy.points_per_day = {per_day!r}\n")
    # nbgrader stamps a new database by running `alembic heads` (a process); a database
    # that already has a table is left unstamped, which nothing here reads
    with sqlite3.connect(tmp_path / "gradebook.db") as db:
        db.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(url) as gb:
        gb.add_assignment("ex", duedate=DUE)
        for name in ("ann", "bob"):
            gb.add_student(name)
        update_or_create_submission(gb, "ex", "bob", extension=datetime.timedelta(days=2))
    return Deadlines(url, tmp_path, sqlite_file=tmp_path / "gradebook.db")


def at(hours_after_due):
    """Epoch seconds ``hours_after_due`` hours after :data:`DUE` (negative: before)."""
    return DUE.replace(tzinfo=datetime.UTC).timestamp() + hours_after_due * HOUR


def row(seq, score, hours_after_due, learner="ann", status="done"):
    """A graded :class:`Submission` as the store gives it, its one check scoring ``score``
    of 10 points."""
    check = CheckResult("test_values", "values", score, 10.0,
                        "passed" if score == 10.0 else "failed", "")
    return Submission(id=f"s{seq}", learner=learner, exercise="ex", status=status,
                      submitted_at=at(hours_after_due), seq=seq,
                      result=GradingResult((check,), "", "graded", exercise="ex"))


@pytest.mark.parametrize("late_h, penalty", [(-1, 0.0), (0.5, 2.0), (24, 2.0), (24.01, 4.0),
                                            (100, 9.0)])
def test_per_day_takes_points_for_each_day_or_part_of_one(tmp_path, late_h, penalty):
    deadlines = course(tmp_path, "per_day", per_day=2.0)
    late = deadlines.assess("ann", "ex", at(late_h), 9.0)
    assert late.penalty == penalty  # never below 0 points: 100 h late on 9 points costs 9
    assert late.seconds == max(0.0, late_h * HOUR)


def test_an_extension_moves_the_deadline_of_one_learner(tmp_path):
    deadlines = course(tmp_path, "per_day", per_day=2.0)
    assert deadlines.assess("bob", "ex", at(47), 10.0) == Lateness(
        deadlines.due("ex", "bob"), 0.0, 0.0)
    assert deadlines.assess("bob", "ex", at(49), 10.0).penalty == 2.0
    assert deadlines.assess("ann", "ex", at(47), 10.0).penalty == 4.0


@pytest.mark.parametrize("method, best_seq, best_score", [
    ("none", 2, 10.0),      # late work counts in full: the late 10 wins
    ("zero", 1, 7.0),       # late work counts 0: the on-time 7 stays the grade
    ("per_day", 2, 8.0),    # 30 h late costs 2 days: 10 - 2 = 8 beats the on-time 7
])
def test_best_compares_scores_after_their_penalty(tmp_path, method, best_seq, best_score):
    deadlines = course(tmp_path, method, per_day=1.0)
    rows = [row(1, 7.0, -2), row(2, 10.0, 30)]
    lateness = late_by(deadlines)
    assert recorded(rows, "best", lateness).seq == best_seq
    assert score_after(rows, "best", lateness) == best_score


def test_per_day_can_leave_the_on_time_grade_standing(tmp_path):
    deadlines = course(tmp_path, "per_day", per_day=3.0)
    rows = [row(1, 7.0, -2), row(2, 10.0, 30)]  # 10 - 2 days * 3 = 4 < 7
    assert recorded(rows, "best", late_by(deadlines)).seq == 1


def test_latest_takes_the_newest_on_time_and_a_late_one_only_when_none_was(tmp_path):
    lateness = late_by(course(tmp_path, "per_day", per_day=1.0))
    on_time_and_late = [row(1, 9.0, -5), row(2, 4.0, -1), row(3, 10.0, 2)]
    assert recorded(on_time_and_late, "latest", lateness).seq == 2  # a worse newer one counts
    only_late = [row(1, 9.0, 2), row(2, 6.0, 26)]
    assert recorded(only_late, "latest", lateness).seq == 2
    assert score_after(only_late, "latest", lateness) == 4.0  # 26 h: two days


def test_ungraded_rows_never_count_and_an_unknown_rule_is_refused(tmp_path):
    lateness = late_by(course(tmp_path, "zero"))
    rows = [row(1, 5.0, -1), replace(row(2, 10.0, -1), status="queued", result=None)]
    assert recorded(rows, "best", lateness).seq == 1
    assert recorded([rows[1]], "best", lateness) is None
    with pytest.raises(ValueError, match="unknown rule 'highest'"):
        recorded(rows, "highest", lateness)


def test_equal_scores_keep_the_newest(tmp_path):
    rows = [row(1, 8.0, -3), row(2, 8.0, -2)]
    assert recorded(rows, "best", late_by(None)).seq == 2


def score_after(rows, rule, lateness):
    """The recorded row's score minus its penalty, as the page and the gradebook show it."""
    chosen = recorded(rows, rule, lateness)
    return chosen.score - lateness(chosen).penalty


def test_standing_shows_the_penalty_it_took_off(tmp_path):
    lateness = late_by(course(tmp_path, "per_day", per_day=1.0))
    shown = standing([row(1, 10.0, 30)], "best", lateness)
    assert shown["recorded"]["penalty"] == 2.0 and shown["recorded"]["score"] == 8.0
    assert shown["recorded"]["max_score"] == 10.0 and shown["latest"]["id"] == "s1"
