"""Deadlines from nbgrader's model, on the path an instructor takes: a due date and an
extension set with the documented command, the late policy from the course's
nbgrader_config.py (zero by default), late work graded but never replacing an
on-time grade, and ``nbgrader export`` showing the same numbers."""
import datetime
import subprocess
import sys
import time

from autograder.service.class_views import roster
from autograder.service.gradebook.lateness import CACHE_S
from tests.course import REPO, nbgrader_env
from tests.grading.helpers import ASSIGNMENT
from tests.service.running import http
from tests.service.submissions import notebook_with


def deadlines(service, *args):
    done = subprocess.run([sys.executable, "-m", "autograder.service.deadlines", "--db",
                           str(service.db), "--course", str(service.course), *args],
                          cwd=REPO, env=nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not done.stderr  # nothing for the instructor to wonder about (a library's warning)
    time.sleep(CACHE_S + 0.5)  # the service rereads the gradebook's dates this often
    return done.stdout


def test_late_work_is_graded_but_keeps_the_on_time_grade(new_service, course_template):
    service = new_service(jobs=1).start()
    on_time = service.submit("ada", notebook_with(course_template, "reference"))
    service.wait_done([on_time])
    time.sleep(1.1)  # the due date is given to the second: a whole one after on_time's submission
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    shown = deadlines(service, "due", ASSIGNMENT, f"{now:%Y-%m-%d %H:%M:%S}")
    assert f"{ASSIGNMENT}: due {now:%Y-%m-%d %H:%M:%S}" in shown
    roster.enroll(service.gradebook_url(), ["bob"])  # enrolled, not submitted yet
    deadlines(service, "extend", ASSIGNMENT, "bob", "2")

    status, _, late = http("POST", service.url + "/api/submissions", {
        "exercise": ASSIGNMENT, "learner": "ada", "notebook": notebook_with(course_template,
                                                                            "reference")})
    assert status == 202 and late["due"].startswith(f"{now:%Y-%m-%dT%H:%M}")
    assert "after the deadline" in late["late"] and "counts 0" in late["late"], late
    status, _, extended = http("POST", service.url + "/api/submissions", {
        "exercise": ASSIGNMENT, "learner": "bob", "notebook": notebook_with(course_template,
                                                                            "reference")})
    assert status == 202 and extended["late"] is None, extended
    status, _, bobs = http("GET", f"{service.url}/api/deadline?exercise={ASSIGNMENT}&learner=bob")
    assert status == 200 and bobs["due"] > late["due"] and "counts 0" in bobs["late_policy"]

    only_late = service.submit("cy", notebook_with(course_template, "reference"))
    ids = [on_time, late["id"], extended["id"], only_late]
    answers = service.wait_done(ids)
    assert answers[late["id"]]["result"]["score"] == 10  # graded in full, feedback and all
    # what it counts, as the submit cell prints it: "Score: 10 / 10, counted 0 / 10 (late)"
    assert answers[late["id"]]["late_penalty"] == 10 and answers[on_time]["late_penalty"] is None
    service.wait_gradebook(ids)
    rows = service.export()
    assert (float(rows["ada"]["score"]), float(rows["ada"]["late_submission_penalty"])) == (10, 0)
    assert float(rows["bob"]["score"]) == 10 and float(rows["bob"]["late_submission_penalty"]) == 0
    assert service.rows()[on_time]["gradebook"] == "recorded"
    cy = rows["cy"]  # late only: recorded with the policy's penalty, as nbgrader counts it
    assert (float(cy["raw_score"]), float(cy["late_submission_penalty"]), float(cy["score"])) == (
        10, 10, 0)


def test_the_learners_list_of_submissions_says_what_each_late_one_counts(new_service, course_template):
    """The exercise page's "Your submissions" (``GET api/submissions``, ``make serve``'s
    one learner) carries each graded submission's late penalty as the submission's own
    answer does: a late 10 / 10 that counts 0 is not shown as a plain 10 / 10."""
    key = "k" * 8 + "-a-key-of-this-test-0123"
    service = new_service(jobs=1, auth="local", env={"GRADER_LEARNER": "ada", "GRADER_TOKEN": key}).start()
    held = {"Authorization": f"token {key}"}

    def graded():
        status, _, sent = http("POST", service.url + "/api/submissions", {
            "exercise": ASSIGNMENT, "notebook": notebook_with(course_template, "reference")},
            headers=held)
        assert status == 202, sent
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            answer = http("GET", f"{service.url}/api/submissions/{sent['id']}", headers=held)[2]
            if answer["status"] == "done":
                return answer
            time.sleep(0.5)
        raise AssertionError(f"not graded: {answer}")

    on_time = graded()
    time.sleep(1.1)  # the due date is given to the second: a whole one after on_time's submission
    now = datetime.datetime.now(datetime.UTC).replace(tzinfo=None)
    deadlines(service, "due", ASSIGNMENT, f"{now:%Y-%m-%d %H:%M:%S}")
    late = graded()
    status, _, listed = http("GET", service.url + "/api/submissions", headers=held)
    assert status == 200, listed
    said = {s["id"]: s.get("late_penalty", "missing") for s in listed["submissions"]}
    assert said == {late["id"]: 10, on_time["id"]: None}
    assert late["late_penalty"] == 10 and on_time["late_penalty"] is None  # as each one's answer
