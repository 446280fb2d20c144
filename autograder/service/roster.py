"""Who is in the course, for the class views: every learner, whether or not they
ever signed in or submitted, every released exercise, and who is an instructor.

Learners are nbgrader's students (``nbgrader db student add``, ``nbgrader db
student import``: the gradebook's ``Student`` rows) and, under ``make hub``, the
hub's users who are not instructors (with PAM, the members of the learners
group: nobody else can sign in). Instructors are the hub group ``instructors``
and the hub's admins; their own submissions (a test of an exercise) are no
learner's. Released exercises are the gradebook's assignments (``nbgrader
generate_assignment`` adds each).

From an LMS (LTI 1.3, :mod:`autograder.service.lms_roster`): each member's display name
(``names``, shown beside the user name), and the LMS's learners who never launched the
course (no hub user yet) as learners who never signed in.
"""
import re
from dataclasses import dataclass, field

from nbgrader.api import Gradebook, InvalidEntry


@dataclass(frozen=True)
class Roster:
    """``learners``: ``{name: signed_in}`` (True, False: never signed in to the hub,
    None: no hub to ask); ``instructors``: names (frozenset); ``exercises``: the
    released exercises' names (tuple, sorted); ``points``: ``{exercise: max_score}``
    as the gradebook has them (floats); ``names``: ``{name: the LMS's display name}`` of
    the LMS's members (the learners' and instructors' alike)."""

    learners: dict = field(default_factory=dict)
    instructors: frozenset = frozenset()
    exercises: tuple = ()
    points: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)

    def learner_rows(self, rows):
        """``rows`` (the store's :class:`~autograder.service.rows.Submission` values) without
        instructors'."""
        return [row for row in rows if row.learner not in self.instructors]


def of_gradebook(url, hub=None):
    """The :class:`Roster` of the gradebook at ``url`` (a SQLAlchemy URL) and, when
    ``hub`` is given (:meth:`HubIdentity.users`' dict), the hub's users."""
    return combine(*read_gradebook(url), hub)


def read_gradebook(url):
    """``(students, points)``: nbgrader's students' ids (list) and ``{exercise:
    max_score}`` of the gradebook at ``url``."""
    with Gradebook(url) as gb:
        return [s.id for s in gb.students], {a.name: a.max_score for a in gb.assignments}


def combine(students, points, hub=None, lms=None):
    """The :class:`Roster` of nbgrader's ``students``, the exercises of ``points``, the
    ``hub``'s users (None: no hub to ask) and the LMS's members (``lms``:
    :func:`autograder.service.lms_roster.people`'s dict, or None)."""
    exercises, lms = tuple(sorted(points)), lms or {}
    names = {name: who["name"] for name, who in lms.items() if who.get("name")}
    never = [name for name, who in lms.items() if not who["launched"] and _learner(who["roles"])]
    if hub is None:
        learners = dict.fromkeys([*students, *never])
        return Roster(dict(sorted(learners.items())), frozenset(), exercises, points, names)
    instructors = frozenset(name for name, u in hub.items() if u["instructor"])
    learners = {name: False for name in [*students, *never] if name not in instructors}
    # a launch signs in without a page view the hub counts as activity: launched is signed in
    learners.update({name: u["signed_in"] or bool(lms.get(name, {}).get("launched"))
                     for name, u in hub.items() if not u["instructor"]})
    return Roster(dict(sorted(learners.items())), instructors, exercises, points, names)


def _learner(roles):
    """Whether an LMS member of ``roles`` (LTI role URIs, or none known) is a learner."""
    return not roles or any(r.endswith("#Learner") or r == "Learner" for r in roles)


def enroll(url, names, lms_names=None):
    """Add each of ``names`` that nbgrader's gradebook at ``url`` lacks as a student
    (so ``nbgrader export`` and the class CSV list every learner), and give each learner
    of ``lms_names`` (``{name: the LMS's display name}``) that name as nbgrader's
    ``last_name`` (the CSV's column beside ``student_id``; :func:`csv_safe`); returns the
    names added (list)."""
    lms_names = lms_names or {}
    with Gradebook(url) as gb:
        known = {s.id: s.last_name for s in gb.students}
        added = [name for name in names if name not in known]
        for name in names:
            shown = csv_safe(lms_names[name]) if lms_names.get(name) else None
            if name in added or (shown and known.get(name) != shown):
                _student(gb, name, {"last_name": shown} if shown else {})
    return added


def _student(gb, name, fields):
    """nbgrader's ``update_or_create_student``, once more when another writer added
    ``name`` after this one looked (a grading worker's gradebook mirror records a grade
    meanwhile, in another process): nbgrader then raises InvalidEntry for the duplicate
    row, and the second call finds the student and updates it."""
    try:
        gb.update_or_create_student(name, **fields)
    except InvalidEntry:
        gb.db.rollback()
        gb.update_or_create_student(name, **fields)


def csv_safe(text):
    """``text`` (an LMS's display name: a member may choose it) fit for a cell of
    ``nbgrader export``'s CSV, which joins cells with commas unquoted: commas, quotes and
    line breaks become spaces, and a leading ``= + - @`` (a spreadsheet formula) is dropped."""
    text = " ".join(re.sub(r'[,"\r\n\t]', " ", str(text)).split())
    return text.lstrip("=+-@ ") or None
