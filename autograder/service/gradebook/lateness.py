"""Deadlines for the grading service, from nbgrader's model.

The due date of each exercise (``Assignment.duedate``) and each learner's
extension (``SubmittedAssignment.extension``) are read from nbgrader's gradebook;
the late penalty from the plugin ``exercises/nbgrader_config.py`` names
(:mod:`autograder.late_policy`), so ``nbgrader autograde``, ``nbgrader export``
and the service agree. Times are UTC, as nbgrader stores them. The instructor's
command that sets them is :mod:`autograder.service.commands.deadlines`.
"""
import datetime
import hashlib
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import BaseCell, Grade, Gradebook, SubmittedAssignment, SubmittedNotebook
from nbgrader.plugins import LateSubmissionPlugin
from traitlets.config.loader import PyFileConfigLoader
from traitlets.utils.importstring import import_item

log = logging.getLogger("autograder.service")
UTC = datetime.UTC
CACHE_S = 5.0  # how long a reading of the gradebook's dates is reused


def load_policy(course):
    """The late-penalty plugin ``<course>/nbgrader_config.py`` configures (nbgrader's own
    LateSubmissionPlugin when it names none)."""
    path = Path(course) / "nbgrader_config.py"
    config = PyFileConfigLoader(path.name, path=str(path.parent)).load_config() \
        if path.exists() else {}
    name = config.get("AssignLatePenalties", {}).get("plugin_class")
    cls = import_item(name) if isinstance(name, str) else (name or LateSubmissionPlugin)
    return cls(config=config) if config else cls()


@dataclass(frozen=True)
class Lateness:
    """One submission against its deadline: ``due`` (aware UTC datetime or None),
    ``seconds`` late (0 when on time), ``penalty`` in points (0 when none)."""
    due: object = None
    seconds: float = 0.0
    penalty: float = 0.0


class Deadlines:
    """Due dates, extensions and the late policy of a course (see the module). All three
    are live: dates are read again every :data:`CACHE_S` seconds, the policy as soon as
    ``nbgrader_config.py`` changes (:attr:`policy`), so every view computes penalties
    under the policy and dates in force now; :meth:`state` says which those are."""

    def __init__(self, gradebook_url, course, sqlite_file=None):
        self.url, self.course = gradebook_url, Path(course)
        self._policy = (None, None)  # (the config file's stat key, the plugin)
        self.sqlite_file = sqlite_file  # a SQLite gradebook is never created here
        self._cache, self._lock = (0.0, {}, {}, {}), threading.Lock()

    @property
    def policy(self):
        """The late-penalty plugin as ``<course>/nbgrader_config.py`` says it now (read
        again when the file changed; a file that cannot be read mid-edit keeps the last)."""
        path = self.course / "nbgrader_config.py"
        try:
            stat = path.stat()
            key = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            key = None
        if key != self._policy[0] or self._policy[1] is None:
            try:
                self._policy = (key, load_policy(self.course))
            except Exception as exc:  # a syntax error mid-edit
                if self._policy[1] is None:
                    raise
                log.warning("kept the late policy: %s cannot be read (%s)", path, exc)
        return self._policy[1]

    def state(self):
        """A digest (hex) of the policy and every due date and extension in force now:
        gradebook penalties written under another state are out of date."""
        dues, extensions = self._dates()
        policy = self.policy
        said = {name: getattr(policy, name) for name in sorted(policy.trait_names())
                if policy.trait_metadata(name, "config")}
        text = repr((type(policy).__name__, sorted(said.items()),
                     sorted((k, str(v)) for k, v in dues.items()),
                     sorted((k, str(v)) for k, v in extensions.items())))
        return hashlib.sha256(text.encode()).hexdigest()

    def _dates(self):
        """``({exercise: due}, {(exercise, learner): extension})``, read at most every
        :data:`CACHE_S` seconds."""
        return self._held()[:2]

    def _held(self):
        """:meth:`_dates`' pair and :meth:`manual`'s mapping, read together at most every
        :data:`CACHE_S` seconds."""
        with self._lock:
            read_at, *held = self._cache
            if time.monotonic() - read_at < CACHE_S:
                return tuple(held)
            dues, extensions, manual = {}, {}, {}
            if self.sqlite_file is None or Path(self.sqlite_file).exists():
                with Gradebook(self.url) as gb:
                    for assignment in gb.assignments:
                        dues[assignment.name] = assignment.duedate
                        for sub in assignment.submissions:
                            if sub.extension:
                                extensions[(assignment.name, sub.student_id)] = sub.extension
                    manual = set_by_hand(gb)
            self._cache = (time.monotonic(), dues, extensions, manual)
            return dues, extensions, manual

    def manual(self, exercise, learner):
        """The grades an instructor set by hand in nbgrader's formgrader on ``learner``'s
        ``exercise`` (:func:`set_by_hand`'s :class:`Manual`), or None; read with the dates."""
        return self._held()[2].get((exercise, learner))

    def due(self, exercise, learner):
        """When ``learner``'s ``exercise`` is due, extension included (aware UTC), or None."""
        dues, extensions = self._dates()
        if dues.get(exercise) is None:
            return None
        extension = extensions.get((exercise, learner), datetime.timedelta(0))
        return (dues[exercise] + extension).replace(tzinfo=UTC)

    def course_due(self, exercise):
        """When ``exercise`` is due for the class, extensions aside (aware UTC), or None."""
        due = self._dates()[0].get(exercise)
        return due.replace(tzinfo=UTC) if due else None

    def assess(self, learner, exercise, submitted_at, score):
        """The :class:`Lateness` of a submission made at ``submitted_at`` (epoch s) that
        scored ``score`` points; the penalty is clipped to ``[0, score]`` as nbgrader does."""
        due = self.due(exercise, learner)
        seconds = max(0.0, submitted_at - due.timestamp()) if due else 0.0
        penalty = self.policy.late_submission_penalty(learner, score, seconds) if seconds else None
        return Lateness(due, seconds, min(max(float(penalty or 0.0), 0.0), float(score)))

    def policy_words(self):
        """What lateness costs under the course's policy, in words for learners."""
        if hasattr(self.policy, "cost_words"):
            return self.policy.cost_words()
        return f"late penalty: {self.policy.penalty_method}"  # nbgrader's own plugin

    def words(self, lateness):
        """What a learner is told about ``lateness``: None when on time."""
        if not lateness.seconds:
            return None
        return (f"submitted {duration_words(lateness.seconds)} after the deadline "
                f"({lateness.due:%Y-%m-%d %H:%M} UTC): {self.policy_words()}")


@dataclass(frozen=True)
class Manual:
    """What an instructor set by hand in formgrader on one learner's exercise: ``scores``
    ``{cell: manual score or None}`` and ``extra`` ``{cell: extra credit}`` (points), of
    the cells where they set one; ``review``: nbgrader flags a cell for review (a new grading
    of that submission since the manual score was set; nbgrader keeps the manual score)."""
    scores: dict
    extra: dict
    review: bool

    def total(self, checks):
        """nbgrader's total (``Grade.score`` summed) of a result's ``checks``
        (:class:`~autograder.results.CheckResult`): each cell's manual score where one
        is set, else the autograder's, plus extra credit; in points, before the late penalty."""
        return sum((self.scores[c.grade_id] if self.scores.get(c.grade_id) is not None
                    else float(c.score)) + self.extra.get(c.grade_id, 0.0) for c in checks)


def set_by_hand(gb):
    """``{(exercise, learner): Manual}`` of every learner's gradebook submission with a
    manual score other than the autograder's, or extra credit (nbgrader's ``Grade``: the
    manual score takes precedence, extra credit adds), in one query."""
    rows = gb.db.query(Grade, BaseCell.name, SubmittedAssignment).join(
        BaseCell, Grade.cell_id == BaseCell.id).join(
        SubmittedNotebook, Grade.notebook_id == SubmittedNotebook.id).join(
        SubmittedAssignment, SubmittedNotebook.assignment_id == SubmittedAssignment.id).filter(
        Grade.extra_credit.isnot(None) & (Grade.extra_credit != 0)
        | Grade.manual_score.isnot(None) & (Grade.auto_score.is_(None)
                                            | (Grade.manual_score != Grade.auto_score)))
    found = {}
    for grade, cell, sub in rows:
        key = (sub.assignment.name, sub.student_id)
        scores, extra, review = found.get(key, ({}, {}, False))
        if grade.manual_score is not None:
            scores[cell] = float(grade.manual_score)
        if grade.extra_credit:
            extra[cell] = float(grade.extra_credit)
        found[key] = (scores, extra, review or bool(grade.needs_manual_grade))
    return {key: Manual(*held) for key, held in found.items()}


def duration_words(seconds):
    """``seconds`` as days, hours or minutes, e.g. '2 h 5 min'."""
    minutes = int(seconds // 60)
    days, hours, mins = minutes // 1440, minutes // 60 % 24, minutes % 60
    parts = [f"{days} d"] * bool(days) + [f"{hours} h"] * bool(hours) + [f"{mins} min"] * bool(mins)
    return " ".join(parts) or f"{int(seconds)} s"
