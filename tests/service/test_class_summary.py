"""The class summary as a pure function of typed submissions, in-process:
:func:`autograder.service.class_views.class_view.class_summary` (the store-backed view, with a
real gradebook's deadlines: tests/service/test_class_view.py, tests/lti)."""
import datetime

from autograder.results import CheckResult, GradingResult
from autograder.service.class_views.class_view import class_summary
from autograder.service.gradebook.lateness import Lateness
from autograder.service.gradebook.recorded import on_time
from autograder.service.store.rows import Submission

DUE = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


def sub(seq, learner, passed, status="done", regrade=False, exercise="ex"):
    """A submission of ``exercise`` whose checks ``a`` (2 points) and ``b`` (3 points)
    passed where named in ``passed``; ungraded unless ``status`` is done or regraded."""
    checks = tuple(CheckResult(n, f"title {n}", p if n in passed else 0.0, p,
                               "passed" if n in passed else "failed", "" if n in passed else "no")
                   for n, p in (("a", 2.0), ("b", 3.0)))
    result = GradingResult(checks, "", "graded", exercise=exercise) if status in (
        "done", "regraded") else None
    return Submission(id=f"s{seq}", learner=learner, exercise=exercise, status=status,
                      submitted_at=1000.0 + seq, seq=seq, result=result, regrade=regrade)


def test_each_learner_gets_counts_scores_and_the_latest_feedback():
    rows = [sub(1, "ada", "ab"), sub(2, "ada", "a"), sub(3, "ada", "", status="queued"),
            sub(4, "bob", "b"), sub(5, "bob", "ab", regrade=True)]
    view = class_summary(rows, "best", on_time, lambda ex, who: None)["ex"]
    assert view["max_score"] == 5.0 and view["recorded_rule"] == "best"
    ada, bob = view["learners"]["ada"], view["learners"]["bob"]
    assert ada["submissions"] == 3 and bob["submissions"] == 1  # a regrade is not theirs
    assert (ada["recorded"], ada["recorded_id"], ada["best"]) == (5.0, "s1", 5.0)
    assert (ada["latest"], ada["latest_id"]) == (2.0, "s2")
    assert ada["feedback"] == [
        {"name": "title a", "status": "passed", "score": 2.0, "max_score": 2.0, "output": ""},
        {"name": "title b", "status": "failed", "score": 0.0, "max_score": 3.0, "output": "no"}]
    assert (bob["recorded"], bob["latest_id"], bob["due"]) == (5.0, "s5", None)


def test_pass_rates_count_each_learners_latest_result():
    rows = [sub(1, "ada", "ab"), sub(2, "ada", "a"), sub(3, "bob", "ab"), sub(4, "cy", "")]
    checks = class_summary(rows, "best", on_time, lambda ex, who: None)["ex"]["checks"]
    assert checks == [
        {"name": "title a", "passed": 2, "learners": 3, "pass_rate": 0.6667},
        {"name": "title b", "passed": 1, "learners": 3, "pass_rate": 0.3333}]


def test_the_recorded_grade_takes_its_penalty_and_says_when_it_was_due():
    def lateness(row):  # ada's second submission is a day late and costs 1.5 points
        return Lateness(DUE, 86400.0, 1.5) if row.seq == 2 else Lateness(DUE)

    rows = [sub(1, "ada", "a"), sub(2, "ada", "ab")]
    ada = class_summary(rows, "best", lateness, lambda ex, who: DUE)["ex"]["learners"]["ada"]
    assert (ada["recorded"], ada["recorded_id"]) == (3.5, "s2")  # 5 - 1.5 beats 2
    assert (ada["late_seconds"], ada["penalty"], ada["due"]) == (86400.0, 1.5, DUE.isoformat())


def test_a_learner_with_nothing_graded_is_listed_without_a_grade():
    """A regraded submission's old result (kept for old -> new) is no grade either."""
    view = class_summary([sub(1, "ada", "ab", status="regraded"),
                          sub(2, "ada", "", status="queued")], "best", on_time,
                         lambda ex, who: None)["ex"]
    assert view["max_score"] is None and view["checks"] == []
    assert view["learners"]["ada"]["submissions"] == 2
    assert view["learners"]["ada"]["recorded"] is None and view["learners"]["ada"]["best"] is None
