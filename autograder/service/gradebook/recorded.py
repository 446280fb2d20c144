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

A grade an instructor set by hand in nbgrader's formgrader (a manual score, extra credit)
is the grade, as ``nbgrader export`` totals it (:func:`grade`): the rule above picks the
submission, the gradebook holds it, and the instructor's manual scores count on it in
every view (the class page, ``api/class``, ``api/standing``, the LMS). nbgrader keeps a
manual score when the submission is graded again (``nbgrader autograde`` flags the cell
for review; ``SaveAutoGrades``), and so do the service's regrades and new submissions:
the manual score stays the grade until the instructor clears it in formgrader.
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
    :class:`~autograder.service.gradebook.lateness.Deadlines` (:func:`on_time` for None);
    its ``manual(row)`` is what an instructor set by hand on the row's learner and exercise
    (:meth:`Deadlines.manual`), which :func:`grade` applies."""
    if deadlines is None:
        return on_time

    def lateness(row):
        return deadlines.assess(row.learner, row.exercise, row.submitted_at, row.score)
    lateness.manual = lambda row: deadlines.manual(row.exercise, row.learner)
    return lateness


def grade(row, lateness=on_time):
    """``(points, manual)``: the grade a recorded ``row`` gives, as ``nbgrader export``
    computes it from the gradebook: its score, or where an instructor set a manual score
    or extra credit in formgrader (``manual``, a
    :class:`~autograder.service.gradebook.lateness.Manual`; None where not) nbgrader's
    total with them; minus the late penalty, never below 0."""
    late = lateness(row)
    manual = getattr(lateness, "manual", None)
    manual = manual(row) if manual is not None else None
    if manual is None:
        return row.result.score - late.penalty, None
    return max(0.0, manual.total(row.result.checks) - late.penalty), manual


def set_by(manual, row, lateness=on_time):
    """What a view says of a recorded grade an instructor set by hand (None where not):
    ``{"by": "instructor", "autograder": the autograder's points (after the late penalty),
    "cells": [...], "review": bool}`` (``review``: graded again since the manual score was
    set; nbgrader keeps it, and flags the cell)."""
    if manual is None:
        return None
    return {"by": "instructor", "autograder": row.result.score - lateness(row).penalty,
            "cells": sorted({*manual.scores, *manual.extra}), "review": manual.review}


def standing(rows, rule, lateness=on_time):
    """What the exercise page shows a learner about one exercise, from their graded
    ``rows`` (as for :func:`recorded`):
    ``{"rule", "recorded", "latest"}``, each of the last two None or ``{"id", "score",
    "max_score", "penalty", "submitted_at"}`` (score after the late penalty, in points;
    ``submitted_at`` ISO UTC). ``recorded`` is the grade (:func:`recorded`, its score
    :func:`grade`'s, with ``set_by``: :func:`set_by`), ``latest`` the newest graded
    submission (the autograder's score)."""
    def brief(row):
        if row is None:
            return None
        late = lateness(row)
        return {"id": row.id, "score": row.result.score - late.penalty,
                "max_score": row.result.max_score, "penalty": late.penalty,
                "submitted_at": _iso(row.submitted_at)}

    graded = _graded(rows)
    newest = max(graded, key=attempt_order) if graded else None
    keep = recorded(rows, rule, lateness)
    mine = brief(keep)
    if keep is not None:
        mine["score"], manual = grade(keep, lateness)
        mine["set_by"] = set_by(manual, keep, lateness)
    return {"rule": rule, "recorded": mine, "latest": brief(newest)}


def _iso(seconds):
    import datetime

    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).isoformat(timespec="seconds")
