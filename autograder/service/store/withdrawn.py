"""Learners dropped from the course, and what a drop does to the course's data.

A drop is kept in the grading database's ``dropped`` table (so a backup carries it), as
one of two kinds, the instructor's choice:

* ``withdrawn``: her grades are kept, and every view lists her as withdrawn: the class
  page, ``api/class`` (``"withdrawn": true``), and the ``first_name`` column of the class
  CSV and of ``nbgrader export`` (nbgrader's student row says ``withdrawn`` there);
* ``removed``: her submissions, grades, lesson runs and LMS grades are deleted from the
  grading database, her student row (with its grades) from nbgrader's gradebook and her
  notebooks from ``submitted/``; no view lists her.

Either way, from then on the grading service refuses every request of hers (it reads
:func:`kind_of` on each request, whatever token or cookie she sends), the hub refuses her
sign-in and her launches (:func:`autograder.service.api.auth.refuse_sign_in`), and nothing
enrols her again. The command that drops a learner is
:mod:`autograder.service.commands.members`.
"""
from __future__ import annotations

import shutil
import time
from enum import StrEnum
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from sqlalchemy import delete, select, update

from autograder.service.store.schema import dropped, lesson_runs, lti_people, passback, submissions


class Kind(StrEnum):
    """What a drop did (the ``kind`` column; see the module)."""

    WITHDRAWN = "withdrawn"
    REMOVED = "removed"


KINDS = tuple(Kind)
FIRST_NAME = "withdrawn"  # nbgrader's first_name of a withdrawn learner (the CSV's column)
REFUSAL = ("you were withdrawn from this course: it takes no more submissions or "
           "sign-ins from you (ask your instructor if this is a mistake)")


def mark(store, learner, kind, now=None):
    """Record ``learner`` as dropped, ``kind`` one of :data:`KINDS` (a later drop replaces
    an earlier one's kind). Raises ValueError for another kind."""
    if kind not in KINDS:
        raise ValueError(f"{kind!r}: say one of {', '.join(KINDS)}")
    now = time.time() if now is None else now
    with store.engine.begin() as conn:
        if not conn.execute(update(dropped).where(dropped.c.learner == learner)
                            .values(kind=kind, at=now)).rowcount:
            conn.execute(dropped.insert().values(learner=learner, kind=kind, at=now))


def unmark(store, learner):
    """``learner`` is in the course again; whether she was marked (bool)."""
    with store.engine.begin() as conn:
        return bool(conn.execute(delete(dropped).where(dropped.c.learner == learner)).rowcount)


def kinds(store):
    """``{learner: kind}`` of every dropped learner."""
    with store._read() as conn:
        return dict(conn.execute(select(dropped.c.learner, dropped.c.kind)).all())


def kind_of(store, learner):
    """``learner``'s kind of drop (str), or None while she is in the course."""
    with store._read() as conn:
        return conn.execute(select(dropped.c.kind)
                            .where(dropped.c.learner == learner)).scalar()


def forget(store, learner):
    """Delete everything of ``learner`` the grading database holds but the drop itself:
    submissions (a grading under way then finds no row to finish), lesson runs, LMS grades
    and her LMS roster row. How many submissions were deleted."""
    with store.engine.begin() as conn:
        count = conn.execute(delete(submissions).where(submissions.c.learner == learner)).rowcount
        for table in (lesson_runs, passback, lti_people):
            conn.execute(delete(table).where(table.c.learner == learner))
    return count


def in_gradebook(url, course, learner, kind):
    """Show ``kind`` in nbgrader's gradebook at ``url``: a withdrawn learner's student row
    gets :data:`FIRST_NAME` (made when missing); a removed learner's row and grades are
    deleted, and her notebooks under ``course``'s ``submitted/``; None (readmitted): the
    row's ``first_name`` is cleared."""
    with Gradebook(url) as gb:
        if kind == Kind.REMOVED:
            try:
                gb.remove_student(learner)
            except MissingEntry:
                pass
        else:
            gb.update_or_create_student(learner, first_name=FIRST_NAME if kind else None)
    if kind == Kind.REMOVED:
        shutil.rmtree(Path(course) / "submitted" / learner, ignore_errors=True)
