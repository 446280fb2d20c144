"""A stored submission as the service's code reads it: :class:`Submission`, made from
one row of the store's ``submissions`` table with its result parsed once, where the
row is read (:meth:`Submission.of`)."""
import json
from dataclasses import dataclass
from enum import StrEnum

from autograder import results


class Status(StrEnum):
    """A submission's state, the ``status`` column (str-valued: stored and answered as
    the words themselves). ``queued`` -> ``running`` -> ``done``; ``queued`` ->
    ``replaced`` by the learner's newer one; ``done`` -> ``regraded`` or ``set_aside`` by an
    instructor's regrade (:mod:`autograder.service.store.queue`)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    REPLACED = "replaced"
    REGRADED = "regraded"
    SET_ASIDE = "set_aside"


WAITING = (Status.QUEUED, Status.RUNNING)  # not yet answered with a result
GRADED = (Status.DONE, Status.REGRADED, Status.SET_ASIDE)  # hold a result
REPLACED = (Status.REPLACED, Status.REGRADED, Status.SET_ASIDE)  # name the one after them


class Mirrored(StrEnum):
    """A graded submission's state in nbgrader's gradebook (the ``gradebook`` column;
    None: not written yet): the learner's grade there, or one it was chosen over."""

    RECORDED = "recorded"
    SUPERSEDED = "superseded"


class Role(StrEnum):
    """What a process is to the store (the ``processes`` table's ``role``)."""

    API = "api"
    WORKER = "worker"


class Source(StrEnum):
    """Whose line item of an exercise the LMS's grades go to (``lti_lineitems.source``;
    None: the tool's own)."""

    LMS = "lms"  # the column an instructor made in the LMS, from a launch


@dataclass(frozen=True)
class Submission:
    """One submission. Times are UNIX seconds (floats; None before they happen).

    ``status``: its :class:`Status`. ``result``: the
    :class:`~autograder.results.GradingResult` of a graded one, else None.
    ``regrade``: an instructor's regrade of an earlier submission (known to the
    listings; False where the reader did not ask), ``regrade_of``: what it regrades
    (``{"id", "score", "max_score", "version"}``, points) or None. ``queue_position``:
    1 = next, for a queued one read by :meth:`Store.get`, else None. ``notebook``: the
    stored bytes where the reader asked for them, else None. ``gradebook``: the
    mirror's state (None, ``recorded``, ``superseded``).
    """

    id: str
    learner: str
    exercise: str
    status: Status
    submitted_at: float
    seq: int = 0
    started_at: float | None = None
    finished_at: float | None = None
    attempts: int = 0
    graded: int = 0
    result: results.GradingResult | None = None
    replaced_by: str | None = None
    regrade: bool = False
    regrade_of: dict | None = None
    version: str | None = None
    gradebook: str | None = None
    lease_owner: str | None = None
    lease_until: float | None = None
    queue_position: int | None = None
    notebook: bytes | None = None

    @classmethod
    def of(cls, row, **more):
        """The submission of a store row (a mapping with the table's column names, any
        subset including ``id``, ``learner``, ``exercise``, ``status``, ``submitted_at``;
        ``result`` and
        ``regrade_of`` as the JSON text stored) plus ``more`` fields."""
        data = {k: v for k, v in dict(row, **more).items() if k in _FIELDS}
        text = data.get("result")
        data["result"] = results.stored(json.loads(text), row["exercise"]) if text else None
        was = data.get("regrade_of")
        data["regrade_of"] = json.loads(was) if was else None
        data["regrade"] = bool(data.get("regrade"))
        data["status"] = Status(data["status"])
        return cls(**data)

    @property
    def score(self):
        """The result's score in points (a float); raises AttributeError when ungraded."""
        return float(self.result.score)


_FIELDS = set(Submission.__dataclass_fields__)
