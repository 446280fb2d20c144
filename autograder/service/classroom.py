"""What a signed-in learner and an instructor read under ``make hub``.

* ``GET <prefix>api/me``: who the hub says you are (``learner``, ``instructor``).
* ``GET <prefix>api/submissions``: your submissions, newest first, with their
  results (an instructor may add ``?learner=<name>``; anyone else asking for
  another learner gets 403).
* ``GET <prefix>api/class`` (instructors): per exercise, each learner's
  latest and best score, the latest submission's feedback, and each check's
  pass rate over the learners' latest submissions.
* ``GET <prefix>api/class.csv`` (instructors): nbgrader's own CSV export
  (:class:`nbgrader.plugins.export.CsvExportPlugin`, the columns of
  ``nbgrader export``) of the gradebook the service keeps in step.

Every route answers 403 to a request without a hub sign-in (see
:mod:`autograder.service.auth`).
"""
import os
import tempfile

from nbgrader.api import Gradebook
from nbgrader.plugins.export import CsvExportPlugin

from autograder.service.app import Base, Refused, describe


def listing(store, person, learner=None):
    """``{"learner", "submissions": [describe(row), ...]}``, newest first."""
    learner = learner or person.name
    if learner != person.name and not person.instructor:
        raise Refused(403, "not_yours", "you can list your own submissions only")
    rows = store.submissions(learner)
    return {"learner": learner, "submissions": [_public(r) for r in reversed(rows)]}


def _public(row):
    return describe(dict(row, queue_position=None, started_at=row["started_at"] or 0,
                         finished_at=row["finished_at"] or 0))


def summary(store):
    """The class view: ``{exercise: {"max_score", "learners": {...}, "checks": [...]}}``.

    For each learner: ``submissions`` (count, graded or not), ``latest`` and
    ``best`` score among graded ones, ``latest_id`` and ``feedback`` (the
    latest result's tests: name, status, score, output). For each check:
    ``passed`` learners (whose latest result passed it), ``learners`` graded,
    and ``pass_rate`` = passed / learners.
    """
    view = {}
    for row in store.submissions():
        ex = view.setdefault(row["exercise"], {"max_score": None, "learners": {}, "checks": []})
        who = ex["learners"].setdefault(row["learner"], {
            "submissions": 0, "latest": None, "best": None, "latest_id": None, "feedback": []})
        who["submissions"] += 1
        result = row["result"]
        if row["status"] != "done" or result is None:
            continue
        ex["max_score"] = result["max_score"]
        who["latest"], who["latest_id"] = result["score"], row["id"]
        who["best"] = result["score"] if who["best"] is None else max(who["best"], result["score"])
        who["feedback"] = [{k: t[k] for k in ("name", "status", "score", "max_score", "output")}
                           for t in result["tests"]]
    for ex in view.values():
        graded = [w["feedback"] for w in ex["learners"].values() if w["latest_id"]]
        names = [t["name"] for t in graded[0]] if graded else []
        for i, name in enumerate(names):
            passed = sum(1 for tests in graded if i < len(tests) and tests[i]["status"] == "passed")
            ex["checks"].append({"name": name, "passed": passed, "learners": len(graded),
                                 "pass_rate": round(passed / len(graded), 4)})
    return view


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
        if not self.person.instructor:
            raise Refused(403, "instructors_only", "this is the instructors' view of the class")


class Class(_Instructors):
    def get(self):
        self.send(200, {"exercises": summary(self.store)})


class ClassCsv(_Instructors):
    def get(self):
        text = gradebook_csv(self.workers.mirror.url)
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.set_header("Content-Disposition", 'attachment; filename="grades.csv"')
        self.finish(text)


def handlers(prefix):
    return [(prefix + "api/me", Me), (prefix + "api/class", Class),
            (prefix + "api/class.csv", ClassCsv)]
