"""What a signed-in learner and an instructor read under ``make hub``.

* ``GET <prefix>api/me``: who the hub says you are (``learner``, ``instructor``).
* ``GET <prefix>api/submissions``: your submissions, newest first, with their
  results (an instructor may add ``?learner=<name>``; anyone else asking for
  another learner gets 403).
* ``GET <prefix>api/class`` (instructors): per exercise (every released one),
  each learner's latest and best score, the latest submission's feedback, and
  each check's pass rate over the learners' latest submissions; ``roster``:
  every learner of the course (:mod:`autograder.service.class_views.roster`) with
  ``signed_in``, the exercises they ``submitted`` and, for an LMS's member, the LMS's
  display name ``lms_name``. Instructors' own
  submissions count for no learner; ``out_of_date``: where recorded
  grades or the gradebook's penalties are out of date (:mod:`.out_of_date`).
* ``GET <prefix>api/class.csv`` (instructors): nbgrader's own CSV export
  (:class:`nbgrader.plugins.export.CsvExportPlugin`, the columns of
  ``nbgrader export``) of the gradebook the service keeps in step, with every
  hub learner enrolled as a student first (an LMS member's display name as their
  ``last_name``) and instructors' rows left out.

* ``POST <prefix>api/runs`` ``{"lesson": name}``: the signed-in learner ran code
  on a lesson's page (recorded for them, shown in the class page's progress).
* ``GET <prefix>class`` (instructors): the class page, where the class is stuck
  in plots and groups of failing observations, and every learner's row
  (:mod:`autograder.service.class_views.class_page`); its scripts and style are at
  ``<prefix>static/<name>``.

* ``GET <prefix>``: the same as a page: a learner's own submissions and
  feedback; for instructors, links to the class page and the CSV.

Every route answers 403 to a request without a hub sign-in (see
:mod:`autograder.service.api.auth`); a browser's page view is sent through the
hub's sign-in instead.
"""
import json
import os
import tempfile
from html import escape

from nbgrader.api import Gradebook
from nbgrader.plugins.export import CsvExportPlugin

from autograder.defaults import CHECKOUT, points_text
from autograder.service.api.handler import Base, Refused, echo, late_penalty, log, submission_view
from autograder.service.class_views import class_page, class_stats, roster
from autograder.service.class_views.class_view import summary
from autograder.service.gradebook import out_of_date
from autograder.service.lms import outbox, roster as lms_roster
from autograder.service.store import withdrawn


def listing(store, person, learner=None, lateness=None):
    """``{"learner", "submissions": [submission_view(row), ...]}``, newest first: ``learner``'s
    (``person``'s own when None), each graded one with ``late_penalty`` (points, None when on
    time) under ``lateness`` (:func:`recorded.late_by`), as ``GET api/submissions/<id>``
    says it. Raises :class:`Refused` 403 when ``person`` is not an instructor and asks for
    another learner's."""
    learner = learner or person.name
    if learner != person.name and not person.instructor:
        raise Refused(403, "not_yours", "you can list your own submissions only")
    views = []
    for row in reversed(store.submissions(learner)):
        view = submission_view(row)
        if view["result"] is not None and lateness is not None:
            view["late_penalty"] = late_penalty(lateness, row)
        views.append(view)
    return {"learner": learner, "submissions": views}


def gradebook_csv(gradebook_url):
    """``nbgrader export``'s CSV of the gradebook at ``gradebook_url``, as text."""
    with tempfile.TemporaryDirectory(prefix="export-") as tmp:
        dest = os.path.join(tmp, "grades.csv")
        with Gradebook(gradebook_url) as gb:
            CsvExportPlugin(to=dest).export(gb)
        with open(dest, encoding="utf-8") as handle:
            return handle.read()


class Me(Base):
    def get(self):
        self.send(200, {"learner": self.person.name, "instructor": self.person.instructor})


class _Instructors(Base):
    async def prepare(self):
        await super().prepare()
        if self.person is None:  # a browser sent to the hub's sign-in: already answered
            return
        if not self.person.instructor:  # the hub's word now (auth.HubIdentity.person)
            raise Refused(403, "instructors_only", "this is the instructors' view of the class")

    async def roster(self):
        """The course's :class:`~autograder.service.class_views.roster.Roster`: the gradebook's
        students and exercises, the hub's users and the LMS's members (each left out,
        with a warning in the log, when it cannot be read: the class views still answer)."""
        try:
            hub = await self.settings_.identity.users()
        except Exception as exc:
            log.warning("the hub's users could not be read for the roster (%s)", exc)
            hub = None
        try:
            students, points = await self.db(roster.read_gradebook,
                                             self.application.settings["mirror"].url)
        except Exception as exc:
            log.warning("the gradebook's students could not be read for the roster (%s)", exc)
            students, points = [], {}
        try:
            lms = await self.db(lms_roster.people, self.store)
        except Exception as exc:
            log.warning("the LMS's members could not be read for the roster (%s)", exc)
            lms = None
        dropped = await self.db(withdrawn.kinds, self.store)
        staff = await self.db(roster.staff, self.store)
        return roster.combine(students, points, hub, lms, roster.group_learners(), dropped, staff)


class Class(_Instructors):
    async def get(self):
        course = await self.roster()
        view = await self.db(lambda: summary(
            self.store, self.settings_.recorded, self.application.settings["mirror"].deadlines,
            course.learner_rows(self.store.submissions())))
        for name in course.exercises:
            view.setdefault(name, {"max_score": course.points[name], "learners": {}, "checks": [],
                                   "recorded_rule": self.settings_.recorded})
        learners = {who: {"signed_in": signed_in, "submitted": sorted(
            name for name, ex in view.items() if ex["learners"].get(who, {}).get("submissions")),
            **({"lms_name": course.names[who]} if who in course.names else {}),
            **({"withdrawn": True} if who in course.withdrawn else {})}
            for who, signed_in in course.learners.items()}
        ordered = {name: view[name] for name in class_stats.course_order(view)}  # the course's
        exercises = await self.db(lambda: outbox.annotate(ordered, self.store))
        never = {who: v for who, v in (await self.db(
            lambda: lms_roster.never_launched(self.store))).items() if who not in course.dropped}
        mirror = self.application.settings["mirror"]
        stale = await self.db(lambda: out_of_date.warnings(self.store, mirror, self.settings_.exercises))
        self.send(200, {"exercises": exercises, "roster": learners, "lms_never_launched": never,
                        "out_of_date": stale})


class ClassPage(_Instructors):
    def write_error(self, status_code, **kwargs):
        """A refusal as a page (a browser opened it), in the same words the API gives."""
        exc = kwargs.get("exc_info", (None, None))[1]
        if not isinstance(exc, Refused):
            return super().write_error(status_code, **kwargs)
        for name, value in exc.headers.items():
            self.set_header(name, value)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(class_page.refusal(exc.message))

    async def get(self):
        deadlines = self.application.settings["mirror"].deadlines
        course = await self.roster()
        # the store's read and the plots' drawing both block: off the event loop
        html = await self.db(lambda: class_page.render(dict(
            class_stats.class_data(self.store, self.settings_.recorded, deadlines, course),
            out_of_date=out_of_date.warnings(self.store, self.application.settings["mirror"],
                                             self.settings_.exercises))))
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(html)


class Asset(Base):
    """The class page's scripts and style (library code and ours; nothing private)."""
    open_to_all = True

    def get(self, name):
        if name not in class_page.ASSETS:
            raise Refused(404, "not_found", f"no such file: {name}")
        path, kind = class_page.ASSETS[name]
        if not path.exists():  # node_modules not installed: the page still works unsorted
            raise Refused(404, "not_installed", f"{name} is not installed (run npm ci)")
        self.set_header("Content-Type", f"{kind}; charset=utf-8")
        self.set_header("Cache-Control", "max-age=600")
        self.finish(path.read_bytes())


LESSONS_DIR = CHECKOUT / "book" / "lessons"
RUN_BYTES = 1024  # a lesson run's body: {"lesson": "<name>"}


def lessons():
    """The course's lesson names (``book/lessons/<name>.md``), sorted."""
    return sorted(p.stem for p in LESSONS_DIR.glob("*.md"))


class LessonRun(Base):
    """``POST <prefix>api/runs`` ``{"lesson": name}``: the signed-in learner ran code
    on that lesson's page (the page's runner says so). Recorded for whoever signed in;
    nothing in the body says who."""

    async def post(self):
        if len(self.request.body) > RUN_BYTES:
            raise Refused(413, "too_large", f"a lesson run is at most {RUN_BYTES} bytes")
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            raise Refused(400, "bad_json", "send {\"lesson\": \"<name>\"} as JSON") from None
        lesson = body.get("lesson") if isinstance(body, dict) else None
        if lesson not in lessons():
            raise Refused(400, "unknown_lesson", f"no such lesson: {echo(lesson)}; "
                          f"one of {', '.join(lessons())}")
        await self.db(self.store.record_run, self.person.name, lesson)
        self.send(200, {"learner": self.person.name, "lesson": lesson})


class ClassCsv(_Instructors):
    async def get(self):
        # the gradebook, not the grading threads: an API-only process (--jobs 0) has none
        url, course = self.application.settings["mirror"].url, await self.roster()
        await self.db(roster.enroll, url, list(course.learners), course.names)
        text = _without(await self.db(gradebook_csv, url), course.instructors)
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="grades.csv"')
        self.finish(text)


def _without(text, students):
    """``nbgrader export``'s CSV ``text`` without the rows of ``students`` (its lines are
    joined with commas, unquoted: kept as they are)."""
    lines = text.splitlines(keepends=True)
    if not students or not lines:
        return text
    column = lines[0].rstrip("\n").split(",").index("student_id")
    return lines[0] + "".join(line for line in lines[1:]
                              if line.rstrip("\n").split(",")[column] not in students)


class Page(Base):
    """``GET <prefix>``: the learner's submissions, or the class (escaped HTML); an
    instructor's ``?learner=<name>``: that learner's whole history, each submission's
    notebook and feedback."""

    def get(self):
        who = self.person
        learner = self.get_argument("learner", None) if who.instructor else None
        if learner:
            subs = listing(self.store, who, learner)["submissions"]
            self._page(f"<h1>Submissions of {escape(learner)}</h1>",
                       *(_submission_html(sub) for sub in subs))
            return
        parts = [f"<h1>Grades: {escape(who.name)}</h1>"]
        if who.instructor:
            # the class itself is on the class page (one table of it here was unreadable)
            parts.append('<p><a href="class">The class</a>: where it is stuck, every learner '
                         'and their history. <a href="api/class.csv" download>Download the '
                         "class CSV (nbgrader export's columns)</a></p>")
        for sub in listing(self.store, who)["submissions"]:
            parts.append(_submission_html(sub))
        self._page(*parts)

    def _page(self, *parts):
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish('<!doctype html><html lang="en"><head><meta charset="utf-8">'
                    "<title>Grades</title></head><body><main>" + "".join(parts) + "</main></body></html>")


RETIRED = {  # a result a regrade made stop counting, as a learner's history says it
    "regraded": "<p>Graded again by a regrade, listed with its new grade: this grade no "
                "longer counts.</p>",
    "set_aside": "<p>Graded by older hidden tests and set aside by a regrade: this grade no "
                 "longer counts.</p>"}


def _submission_html(sub):
    head = (f"{escape(sub['exercise'])}, {escape(sub['submitted_at'])} "
            f"(<a href=\"api/submissions/{escape(sub['id'])}/notebook\" download>notebook</a>): ")
    result = sub["result"]
    if result is None:
        return f"<h2>{head}{escape(sub['status'])}</h2>"
    tests = "".join(f"<li>{'passed' if t['status'] == 'passed' else 'FAILED'}: "
                    f"{escape(t['name'])} ({_num(t['score'])} / {_num(t['max_score'])})"
                    + ("" if t["status"] == "passed" else f"<pre>{escape(t['output'])}</pre>")
                    + "</li>" for t in result["tests"])
    was = sub.get("regrade_of")
    regraded = (f"<p>Regraded with the current hidden tests: {_num(was['score'])} / "
                f"{_num(was['max_score'])} before, {_num(result['score'])} / "
                f"{_num(result['max_score'])} now.</p>" if was else "")
    regraded += RETIRED.get(sub["status"], "")
    return (f"<h2>{head}{_num(result['score'])} / {_num(result['max_score'])}</h2>{regraded}"
            f"<p>{escape(result.get('output', ''))}</p><ul>{tests}</ul>")


def _num(value):
    """Points as every view prints them (:func:`autograder.defaults.points_text`)."""
    return "-" if value is None else points_text(value)


def handlers(prefix):
    return [(prefix, Page), (prefix + "api/me", Me), (prefix + "api/class", Class),
            (prefix + "api/class.csv", ClassCsv), (prefix + "class", ClassPage),
            (prefix + r"static/([A-Za-z0-9_.-]+)", Asset), (prefix + "api/runs", LessonRun)]
