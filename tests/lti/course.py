"""A course's database with graded submissions, for the LMS tests: the grading service's
store (SQLite) and an nbgrader gradebook with a due date, written as the service writes
them (admit, claim, finish). The grading itself is the service's tests' subject; here a
result is a :class:`~autograder.results.GradingResult` of the exercise's real hidden
tests with the points a test asks for."""
from __future__ import annotations

import datetime
import os

from nbgrader.api import Gradebook

from autograder import exercises
from autograder.results import CheckResult, GradingResult
from autograder.service.config import venv_tools_on_path
from autograder.service.gradebook.lateness import Deadlines
from autograder.service.gradebook.mirror import update_or_create_submission
from autograder.service.store import Caps, Store

EXERCISE = "update_with_donate"
NO_CAPS = Caps(0, 1.0, 0, 0, 0)


def result(points, exercise=EXERCISE):
    """A graded result scoring ``points`` (filled check by check, in test order)."""
    checks, left = [], float(points)
    for name, title, most in exercises.get(exercise).tests():
        got = min(float(most), left)
        left -= got
        checks.append(CheckResult(name, title, got, float(most),
                                  "passed" if got == most else "failed", ""))
    return GradingResult(checks=tuple(checks), output="", status="graded", exercise=exercise)


def max_points(exercise=EXERCISE):
    return float(sum(p for _, _, p in exercises.get(exercise).tests()))


class Course:
    """The store and gradebook of one course in ``folder``; late work loses 1 point a day."""

    def __init__(self, folder):
        venv_tools_on_path()
        self.folder = folder
        (folder / "nbgrader_config.py").write_text(
            'c = get_config()\n'
            'c.AssignLatePenalties.plugin_class = "autograder.late_policy.CourseLatePolicy"\n'
            'c.CourseLatePolicy.penalty_method = "per_day"\n'
            'c.CourseLatePolicy.points_per_day = 1.0\n')
        self.gradebook_url = f"sqlite:///{folder / 'gradebook.db'}"
        self.db = str(folder / "grading.db")
        self.store = Store(self.db)

    def due(self, when, exercise=EXERCISE):
        with Gradebook(self.gradebook_url) as gb:
            gb.update_or_create_assignment(exercise, duedate=when.replace(tzinfo=None))

    def extend(self, learner, hours, exercise=EXERCISE):
        with Gradebook(self.gradebook_url) as gb:
            gb.update_or_create_student(learner)
            update_or_create_submission(gb, exercise, learner,
                                        extension=datetime.timedelta(hours=hours))

    def deadlines(self):
        """A fresh reading of the due dates (the service's is cached for 5 s)."""
        return Deadlines(self.gradebook_url, self.folder)

    def graded(self, learner, points, at=None, exercise=EXERCISE):
        """``learner`` submitted at ``at`` (epoch s) and scored ``points``: its id."""
        sub_id, _, _ = self.store.admit(learner, exercise, b"{}", learner, NO_CAPS, now=at)
        return self._finish(sub_id, points)

    def regraded(self, sub_id, points):
        """An instructor's regrade of ``sub_id`` scored ``points``: the new id."""
        row = self.store.get(sub_id)
        graded = self.store.graded(row.learner, row.exercise, notebooks=False)
        (new,) = self.store.requeue({sub_id: [r.id for r in graded]})
        return self._finish(new, points)

    def _finish(self, sub_id, points):
        owner = f"test:{os.getpid()}:0"
        row = self.store.claim(owner, 30.0)
        assert row.id == sub_id, "one submission is queued at a time here"
        assert self.store.finish(sub_id, owner, result(points, row.exercise).to_record())
        return sub_id
