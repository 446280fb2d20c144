"""Who is in the course, for the class views: every learner, whether or not they
ever signed in or submitted, every released exercise, and who is an instructor.

Learners are nbgrader's students (``nbgrader db student add``, ``nbgrader db
student import``: the gradebook's ``Student`` rows) and, under ``make hub``, the
hub's users who are not instructors (with PAM, the members of the learners
group: nobody else can sign in). Instructors are the hub group ``instructors``
and the hub's admins; their own submissions (a test of an exercise) are no
learner's. Released exercises are the gradebook's assignments (``nbgrader
generate_assignment`` adds each).
"""
from dataclasses import dataclass, field

from nbgrader.api import Gradebook


@dataclass(frozen=True)
class Roster:
    """``learners``: ``{name: signed_in}`` (True, False: never signed in to the hub,
    None: no hub to ask); ``instructors``: names (frozenset); ``exercises``: the
    released exercises' names (tuple, sorted); ``points``: ``{exercise: max_score}``
    as the gradebook has them (floats)."""

    learners: dict = field(default_factory=dict)
    instructors: frozenset = frozenset()
    exercises: tuple = ()
    points: dict = field(default_factory=dict)

    def learner_rows(self, rows):
        """``rows`` (the store's submissions, dicts with ``learner``) without instructors'."""
        return [row for row in rows if row["learner"] not in self.instructors]


def of_gradebook(url, hub=None):
    """The :class:`Roster` of the gradebook at ``url`` (a SQLAlchemy URL) and, when
    ``hub`` is given (:meth:`HubIdentity.users`' dict), the hub's users."""
    return combine(*read_gradebook(url), hub)


def read_gradebook(url):
    """``(students, points)``: nbgrader's students' ids (list) and ``{exercise:
    max_score}`` of the gradebook at ``url``."""
    with Gradebook(url) as gb:
        return [s.id for s in gb.students], {a.name: a.max_score for a in gb.assignments}


def combine(students, points, hub=None):
    """The :class:`Roster` of nbgrader's ``students``, the exercises of ``points`` and
    the ``hub``'s users (None: no hub to ask)."""
    exercises = tuple(sorted(points))
    if hub is None:
        return Roster({name: None for name in students}, frozenset(), exercises, points)
    instructors = frozenset(name for name, u in hub.items() if u["instructor"])
    learners = {name: False for name in students if name not in instructors}
    learners.update({name: u["signed_in"] for name, u in hub.items() if not u["instructor"]})
    return Roster(dict(sorted(learners.items())), instructors, exercises, points)


def enroll(url, names):
    """Add each of ``names`` that nbgrader's gradebook at ``url`` lacks as a student
    (so ``nbgrader export`` and the class CSV list every learner); returns the
    names added (list)."""
    with Gradebook(url) as gb:
        known = {s.id for s in gb.students}
        added = [name for name in names if name not in known]
        for name in added:
            gb.update_or_create_student(name)
    return added
