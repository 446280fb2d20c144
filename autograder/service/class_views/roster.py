"""Who is in the course, for the class views: every learner, whether or not they
ever signed in or submitted, every released exercise, and who is an instructor.

Learners are nbgrader's students (``nbgrader db student add``, ``nbgrader db
student import``: the gradebook's ``Student`` rows) and, under ``make hub``, the
hub's users who are not instructors and, with PAM, every member of the learners
group (:func:`group_members`: nobody else can sign in), signed in or not; the grading
service enrols each in nbgrader's gradebook (:func:`class_learners`, :func:`enroll`), so
``nbgrader export`` lists them too. A dropped learner (:mod:`.withdrawn`) is listed as
withdrawn, or not at all once removed, and never enrolled again. Instructors are the hub
group ``instructors`` and the hub's admins; their own submissions (a test of an exercise)
are no learner's. Released exercises are the gradebook's assignments (``nbgrader
generate_assignment`` adds each).

From an LMS (LTI 1.3, :mod:`autograder.service.lms.roster`): each member's display name
(``names``, shown beside the user name), and the LMS's learners who never launched the
course (no hub user yet) as learners who never signed in.
"""
import grp
import os
import pwd
import re
import time
from dataclasses import dataclass, field

from nbgrader.api import Gradebook, InvalidEntry

from autograder.service.store.withdrawn import Kind


@dataclass(frozen=True)
class Roster:
    """``learners``: ``{name: signed_in}`` (True, False: never signed in to the hub,
    None: no hub to ask); ``instructors``: names (frozenset); ``exercises``: the
    released exercises' names (tuple, sorted); ``points``: ``{exercise: max_score}``
    as the gradebook has them (floats); ``names``: ``{name: the LMS's display name}`` of
    the LMS's members (the learners' and instructors' alike); ``dropped``: ``{name:
    "withdrawn" or "removed"}`` (:mod:`.withdrawn`; a removed one is in no other field)."""

    learners: dict = field(default_factory=dict)
    instructors: frozenset = frozenset()
    exercises: tuple = ()
    points: dict = field(default_factory=dict)
    names: dict = field(default_factory=dict)
    dropped: dict = field(default_factory=dict)

    @property
    def withdrawn(self):
        """The withdrawn learners' names (a frozenset): listed, and marked so."""
        return frozenset(n for n, kind in self.dropped.items() if kind == Kind.WITHDRAWN)

    def learner_rows(self, rows):
        """``rows`` (the store's :class:`~autograder.service.store.rows.Submission` values) without
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


def combine(students, points, hub=None, lms=None, group=(), dropped=None, staff=frozenset()):
    """The :class:`Roster` of nbgrader's ``students``, the exercises of ``points``, the
    ``hub``'s users (None: no hub to ask), the LMS's members (``lms``:
    :func:`autograder.service.lms.roster.people`'s dict, or None), the learners group's
    members (``group``: names; never signed in unless the hub knows them) and the dropped
    learners (``dropped``: :func:`autograder.service.store.withdrawn.kinds`'s dict);
    ``staff`` (:func:`staff`) are instructors, whatever the hub says, as for the gradebook
    and the LMS."""
    exercises, lms, dropped = tuple(sorted(points)), lms or {}, dropped or {}
    names = {name: who["name"] for name, who in lms.items() if who.get("name")}
    never = [name for name, who in lms.items() if not who["launched"] and _learner(who["roles"])]
    if hub is None:
        learners = {n: None for n in [*students, *never, *group] if n not in staff}
        return _without_removed(Roster(dict(sorted(learners.items())), frozenset(staff),
                                       exercises, points, names, dropped))
    instructors = frozenset(name for name, u in hub.items() if u["instructor"]) | staff
    learners = {name: False for name in [*students, *never, *group] if name not in instructors}
    # a launch signs in without a page view the hub counts as activity: launched is signed in
    learners.update({name: u["signed_in"] or bool(lms.get(name, {}).get("launched"))
                     for name, u in hub.items() if name not in instructors})
    return _without_removed(Roster(dict(sorted(learners.items())), instructors, exercises,
                                   points, names, dropped))


def _without_removed(course):
    """``course`` without its removed learners (their names stay in ``dropped`` only)."""
    gone = {n for n, kind in course.dropped.items() if kind == Kind.REMOVED}
    if not gone:
        return course
    return Roster({n: s for n, s in course.learners.items() if n not in gone}, course.instructors,
                  course.exercises, course.points,
                  {n: s for n, s in course.names.items() if n not in gone}, course.dropped)


def group_members(group):
    """The user names of system group ``group`` (sorted list): those it lists and those
    whose primary group it is (``adduser --ingroup``, ``newusers``' GID field, which
    ``getent group`` does not list); empty when there is no such group."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return []
    primary = {p.pw_name for p in pwd.getpwall() if p.pw_gid == entry.gr_gid}
    return sorted(set(entry.gr_mem) | primary)


def group_learners():
    """The learners group's members less the instructors group's, under ``make hub`` with
    PAM (the hub passes ``HUB_LEARNERS_GROUP`` and ``HUB_INSTRUCTORS_GROUP`` to the
    grading service then; otherwise empty)."""
    group = os.environ.get("HUB_LEARNERS_GROUP")
    if not group:
        return []
    staff = set(group_members(os.environ.get("HUB_INSTRUCTORS_GROUP") or ""))
    return [name for name in group_members(group) if name not in staff]


def staff(store):
    """Who is an instructor without a hub to ask (a frozenset of names): the instructors
    group's members (``HUB_INSTRUCTORS_GROUP``, which the hub passes to the grading service
    under PAM), the hub's admins (``HUB_ADMINS``) and the LMS's members whose roles are not
    a learner's. Their own submissions (a test of an exercise) are no learner's grade: the
    gradebook thread never writes them into nbgrader's gradebook, so ``nbgrader export``
    lists no instructor, and the LMS is sent none of them."""
    from autograder.service.lms import roster as lms_roster
    group = os.environ.get("HUB_INSTRUCTORS_GROUP")
    admins = os.environ.get("HUB_ADMINS", "").split(",")
    lms = [name for name, who in lms_roster.people(store).items()
           if who["roles"] and not _learner(who["roles"])]
    return frozenset([*(group_members(group) if group else ()), *(a.strip() for a in admins
                                                                  if a.strip()), *lms])


def class_learners(store):
    """Who the class is without a hub to ask (list): :func:`group_learners` and the LMS's
    learners (launched or not), less every dropped learner; what the grading service
    enrols in nbgrader's gradebook."""
    from autograder.service.lms import roster as lms_roster
    from autograder.service.store import withdrawn
    lms = [name for name, who in lms_roster.people(store).items() if _learner(who["roles"])]
    gone = withdrawn.kinds(store)
    return [name for name in dict.fromkeys([*group_learners(), *lms]) if name not in gone]


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


ENROL_S = 30.0  # how often the gradebook thread reads the class (a group, the LMS's roster)


class Keeper:
    """Keeps nbgrader's gradebook (``mirror``: :class:`~autograder.service.gradebook.mirror.Mirror`)
    in step with the class, from the grading service's gradebook thread (which holds the
    gradebook's lock): each new drop is shown there (:func:`withdrawn.in_gradebook`: a
    removed learner that a grade written meanwhile brought back is removed again), and
    every :data:`ENROL_S` the class's learners it lacks are enrolled (:func:`class_learners`)."""

    def __init__(self, store, mirror):
        self.store, self.mirror = store, mirror
        self._shown, self._enrolled, self._due = {}, set(), 0.0

    def round(self):
        """One round (raises what the gradebook or the store raises; the next round retries)."""
        from autograder.service.store import withdrawn
        if self.mirror.missing():
            return
        drops = withdrawn.kinds(self.store)
        for name in set(drops) | set(self._shown):
            if self._shown.get(name) != drops.get(name):
                withdrawn.in_gradebook(self.mirror.url, self.mirror.course, name, drops.get(name))
                self._shown[name] = drops.get(name)
        now = time.monotonic()
        if now >= self._due:
            new = [name for name in class_learners(self.store) if name not in self._enrolled]
            if new:
                enroll(self.mirror.url, new)
            self._enrolled.update(new)
            self._due = now + ENROL_S
