"""The course's late-submission policy, as an nbgrader plugin.

nbgrader's own model is the one source for deadlines: each assignment's due date
(``Assignment.duedate``) and each learner's extension (``SubmittedAssignment.extension``)
live in the gradebook, and the penalty comes from the plugin that
``c.AssignLatePenalties.plugin_class`` names in ``exercises/nbgrader_config.py``.
This plugin is nbgrader's :class:`~nbgrader.plugins.LateSubmissionPlugin` with one
more method, so ``nbgrader autograde`` and the grading service apply the same rule.
"""
import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float

DAY_S = 86400.0


class CourseLatePolicy(LateSubmissionPlugin):
    """``penalty_method``: ``none`` (late work counts in full), ``zero`` (it counts 0),
    or ``per_day`` (``points_per_day`` points off for each day or part of one it is
    late, never below 0)."""

    penalty_method = Enum(("none", "zero", "per_day"), default_value="zero",
                          help="none, zero, or per_day (see points_per_day)").tag(config=True)
    points_per_day = Float(1.0, help="points off per day late, with per_day").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        """Points off ``score`` (a float) for ``total_seconds_late`` (s) late; None when none."""
        if total_seconds_late <= 0 or self.penalty_method == "none":
            return None
        if self.penalty_method == "per_day":
            return min(score, self.points_per_day * math.ceil(total_seconds_late / DAY_S))
        return super().late_submission_penalty(student_id, score, total_seconds_late)

    def cost_words(self):
        """What lateness costs, in words for learners."""
        return {"none": "late work counts in full",
                "zero": "late work is graded but counts 0",
                "per_day": f"late work loses {self.points_per_day:g} point(s) for each day "
                           "or part of one it is late"}[self.penalty_method]
