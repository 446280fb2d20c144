"""Which of a learner's graded submissions of an exercise is their grade: the
recorded one. One rule, read by the gradebook mirror (what nbgrader's gradebook,
``nbgrader export`` and the class CSV hold) and by the class view, so all of them
give the same number.

The rule (``GRADER_RECORDED``, :data:`autograder.defaults.RECORDED`), with each
submission's score after its late penalty (:mod:`autograder.service.commands.deadlines`):

* ``best`` (the default): the highest score; the newest among equal scores. A
  later, worse attempt (an experiment, the unedited notebook uploaded by mistake)
  never lowers a grade, so learners may resubmit freely; PrairieLearn's default.
  A late submission counts with its penalty (under the course's default policy,
  zero: it never replaces an on-time grade).
* ``latest``: the newest submission made before the deadline, whatever its score;
  the newest late one (with its penalty) only when none was on time.
"""
from autograder import defaults
from autograder.service.gradebook.lateness import Lateness
from autograder.service.store.rows import WAITING, Status

RETIRED = (Status.REGRADED, Status.SET_ASIDE)  # results a regrade replaced

RULES = defaults.RECORDED_RULES


def on_time(row):
    """The :class:`Lateness` of a submission when there are no deadlines."""
    return Lateness()


def recorded(rows, rule, lateness=on_time):
    """The row that counts among ``rows`` (one learner's submissions of one exercise:
    :class:`~autograder.service.store.rows.Submission`), or None when none is graded. ``lateness(row)`` is
    the row's :class:`Lateness` (on time by default).
    Raises ValueError for a rule not in :data:`RULES`."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r} for the recorded grade; one of {', '.join(RULES)}")
    graded = _graded(rows)
    if not graded:
        return None
    if rule == "latest":
        timely = [r for r in graded if not lateness(r).seconds]
        return max(timely or graded, key=attempt_order)
    return max(graded, key=lambda r: (r.score - lateness(r).penalty, r.seq))


def attempt_order(row):
    """The order of a learner's attempts: when they were submitted (a regrade keeps its
    attempt's time, and is newer than none of the attempts after it), then the store's."""
    return (row.submitted_at, row.seq)


def _graded(rows):
    return counting(rows)


def counting(rows):
    """The rows of ``rows`` whose result counts now: each graded one (``done``), and each a
    regrade replaced (``regraded``, ``set_aside``) while the regrade that replaces it
    still waits (queued or running, among ``rows``): until the new result is in, the old
    one stays the grade, as nbgrader's gradebook and the LMS still hold it."""
    waiting = {r.id for r in rows if r.status in WAITING}
    return [r for r in rows if r.result is not None and (
        r.status == Status.DONE or r.status in RETIRED and r.replaced_by in waiting)]


def late_by(deadlines):
    """``lateness(row)`` for :func:`recorded` from a course's
    :class:`~autograder.service.gradebook.lateness.Deadlines` (:func:`on_time` for None)."""
    if deadlines is None:
        return on_time
    return lambda row: deadlines.assess(row.learner, row.exercise, row.submitted_at, row.score)


def standing(rows, rule, lateness=on_time):
    """What the exercise page shows a learner about one exercise, from their graded
    ``rows`` (as for :func:`recorded`):
    ``{"rule", "recorded", "latest"}``, each of the last two None or ``{"id", "score",
    "max_score", "penalty", "submitted_at"}`` (score after the late penalty, in points;
    ``submitted_at`` ISO UTC). ``recorded`` is the grade (:func:`recorded`), ``latest``
    the newest graded submission."""
    def brief(row):
        if row is None:
            return None
        late = lateness(row)
        return {"id": row.id, "score": row.result.score - late.penalty,
                "max_score": row.result.max_score, "penalty": late.penalty,
                "submitted_at": _iso(row.submitted_at)}

    graded = _graded(rows)
    newest = max(graded, key=attempt_order) if graded else None
    return {"rule": rule, "recorded": brief(recorded(rows, rule, lateness)), "latest": brief(newest)}


def _iso(seconds):
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")
