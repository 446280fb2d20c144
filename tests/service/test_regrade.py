"""The instructor's regrade (python -m autograder.service.regrade): every learner's
recorded submission graded again, the earlier results kept in the history, the
gradebook released again, new submissions graded meanwhile."""
import subprocess
import sys
import time

from nbgrader.api import Gradebook

from autograder.service.api.app import POINTS_CHECK_S
from autograder.service.api.classroom import _submission_html
from autograder.service.api.handler import submission_view
from autograder.service.class_views.class_view import class_summary
from autograder.service.commands import regrade
from autograder.service.gradebook.recorded import on_time, standing
from autograder.service.store import Caps, Store
from tests.course import REPO, nbgrader_env
from tests.grading.helpers import ASSIGNMENT, EXPECTED
from tests.service.running import http
from tests.service.submissions import FinishesAfterARead, notebook_with


def test_a_regrade_grades_each_recorded_submission_again(new_service, course_template):
    service = new_service(jobs=1).start()
    plan = [("ada", "wrong_arithmetic"), ("ada", "reference"), ("bob", "no_donation")]
    first = []
    for who, sample in plan:  # each graded before the next: a queued one would be replaced
        first.append(service.submit(who, notebook_with(course_template, sample)))
        service.wait_done(first[-1:])
    service.wait_gradebook(first)

    done = subprocess.run([sys.executable, "-m", "autograder.service.regrade", ASSIGNMENT,
                           "--db", str(service.db), "--course", str(service.course)],
                          cwd=REPO, env=nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2 recorded submission(s) queued" in done.stdout, done.stdout
    newcomer = service.submit("cy", notebook_with(course_template, "reference"))

    rows = service.rows()
    # ada's recorded submission is her latest: graded again; her earlier one set aside
    assert [rows[i]["status"] for i in first] == ["set_aside", "regraded", "regraded"]
    regrades = {rows[first[1]]["replaced_by"], rows[first[2]]["replaced_by"]}
    assert rows[first[0]]["replaced_by"] == rows[first[1]]["replaced_by"]  # ada: one regrade
    answers = service.wait_done([*regrades, newcomer])
    scores = {a["learner"]: a["result"]["score"] for a in answers.values()}
    assert scores == {"ada": 10, "bob": EXPECTED["no_donation"]["score"], "cy": 10}
    old = http("GET", f"{service.url}/api/submissions/{first[0]}")[2]
    assert old["status"] == "set_aside" and old["result"]["score"] == 7  # kept in the history
    service.wait_gradebook([*regrades, newcomer])
    exported = service.export()
    assert {k: float(v["score"]) for k, v in exported.items()} == {
        "ada": 10.0, "bob": float(EXPECTED["no_donation"]["score"]), "cy": 10.0}


def test_the_service_says_when_gradebook_points_and_hidden_tests_disagree(new_service):
    """The gradebook's points edited apart from the hidden tests' (as after an edit of the
    tests): the health check says so, and the regrade command puts them back."""
    service = new_service(jobs=0)
    with Gradebook(service.gradebook_url()) as gb:
        cell = gb.find_grade_cell("test_values", ASSIGNMENT, ASSIGNMENT)
        cell.max_score = 3
        gb.db.commit()
    service.start()
    health = http("GET", service.url + "/api/health")[2]
    assert health["ok"] and any("test_values: hidden tests 2, gradebook 3" in w
                                for w in health["warnings"]), health
    done = subprocess.run([sys.executable, "-m", "autograder.service.regrade", ASSIGNMENT,
                           "--db", str(service.db), "--course", str(service.course)],
                          cwd=REPO, env=nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0 and "gradebook points set" in done.stdout, done.stderr
    time.sleep(POINTS_CHECK_S + 0.5)
    assert http("GET", service.url + "/api/health")[2]["warnings"] == []


def test_a_submission_graded_while_a_regrade_is_queued_still_counts(tmp_path):
    """The regrade reads each learner's graded submissions, then queues the recorded one
    in their place. One graded between the two (a learner submitting during the
    regrade) was never weighed: it is not replaced, and still counts."""
    def result(points):
        check = {"grade_id": "test_values", "title": "values", "score": points,
                 "max_score": 10.0, "status": "passed", "output": ""}
        return {"checks": [check], "output": "", "status": "graded", "version": "v"}

    store = FinishesAfterARead(tmp_path / "grading.db")
    try:
        ids = []
        for points in (4.0, 10.0):
            ids.append(store.admit("ada", ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))[0])
            store.claim("host:1:0", 30)
            if points == 10.0:
                store.pending = (ids[-1], "host:1:0", result(points))
            else:
                assert store.finish(ids[-1], "host:1:0", result(points))
        [new] = regrade.queue(store, ASSIGNMENT, "best", on_time)
        assert store.pending is None
        states = {sub_id: store.get(sub_id).status for sub_id in ids + [new]}
        assert store.claim("host:1:0", 30).id == new
        assert store.finish(new, "host:1:0", result(5.0))
        rows = store.submissions()
    finally:
        store.engine.dispose()
    assert states == {ids[0]: "regraded", ids[1]: "done", new: "queued"}
    # the regrade of her first attempt is stored after her second: still not her latest
    ada = class_summary(rows, "best", on_time, lambda *_: None)[ASSIGNMENT]["learners"]["ada"]
    assert (ada["latest_id"], ada["recorded_id"]) == (ids[1], ids[1])


def _one_check(points, version="v"):
    check = {"grade_id": "test_values", "title": "values", "score": points,
             "max_score": 10.0, "status": "passed" if points == 10.0 else "failed", "output": ""}
    return {"checks": [check], "output": "", "status": "graded", "version": version}


def test_after_a_regrade_latest_is_still_the_latest_attempt(tmp_path):
    """ada's best attempt is her first; two later, worse ones follow. The default regrade
    grades the recorded (best) one and her latest again; the one between is set aside, not
    marked regraded; "latest" (the class view, her standing) is her latest attempt, and her
    grade the best one's new score."""
    store = Store(tmp_path / "grading.db")
    try:
        ids = []
        for points in (10.0, 4.0, 6.0):
            ids.append(store.admit("ada", ASSIGNMENT, b"{}", "10.0.0.1", Caps(rate_count=0))[0])
            store.claim("host:1:0", 30)
            assert store.finish(ids[-1], "host:1:0", _one_check(points))
        made = regrade.queue(store, ASSIGNMENT, "best", on_time)
        assert len(made) == 2
        assert [store.get(i).status for i in ids] == ["regraded", "set_aside", "regraded"]
        again = {store.get(i).regrade_of["id"]: i for i in made}
        new_points = {again[ids[0]]: 9.0, again[ids[2]]: 5.0}  # the new tests: 1 point less
        for _ in made:
            claimed = store.claim("host:1:0", 30)
            assert store.finish(claimed.id, "host:1:0", _one_check(new_points[claimed.id], "w"))
        rows = store.submissions()
    finally:
        store.engine.dispose()
    ada = class_summary(rows, "best", on_time, lambda *_: None)[ASSIGNMENT]["learners"]["ada"]
    assert (ada["latest"], ada["latest_id"]) == (5.0, again[ids[2]])
    assert (ada["recorded"], ada["recorded_id"], ada["submissions"]) == (9.0, again[ids[0]], 3)
    mine = standing([r for r in rows if r.status == "done"], "best")
    assert (mine["latest"]["id"], mine["recorded"]["id"]) == (again[ids[2]], again[ids[0]])
    history = {r.id: _submission_html(submission_view(r)) for r in rows}  # her grades page
    assert "set aside by a regrade" in history[ids[1]] and "no longer counts" in history[ids[0]]
    assert "no longer counts" not in history[again[ids[2]]]
