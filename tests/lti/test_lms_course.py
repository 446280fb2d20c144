"""One LMS course per course, and grades into the LMS's own column, against the LTI 1.3
platform on loopback (tests/lti/platform.py) and a course's real database: a launch of
another LMS course (or of none) is refused whoever makes it and changes nothing stored
(autograder/service/lms/roster.py's ``admit_context``); the column an instructor made in
the LMS gets the exercise's grades; a line item deleted in the LMS is made again, the
LMS's own column deleted or a permanent refusal is marked refused, shown, not retried,
and sent again by the instructor's re-send (autograder/service/lms/outbox.py). The same
through make hub and Chromium: tests/hub/test_lti_launch.py."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from sqlalchemy import select

from autograder.service.commands import passback as passback_command
from autograder.service.gradebook.recorded import late_by
from autograder.service.grading import GradingThreads
from autograder.service.lms import outbox, roster as roster
from autograder.service.store.schema import lti_context, lti_lineitems, lti_people, passback
from tests.course import REPO
from tests.lti.course import EXERCISE
from tests.lti.platform import COURSE, INSTRUCTOR, LEARNER, LTI

ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator"
SYS_ADMIN = "http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"
PAGE = f"/services/course/book/exercises/{EXERCISE}.html"


def claims(platform, sub, roles=(LEARNER,), context=COURSE, target="/services/course/",
           lineitem=None):
    """A verified launch's claims as the platform makes them (the hub checked the rest)."""
    lineitems, memberships = platform.endpoints((context or (None,))[0])
    made = {"iss": platform.url, "sub": sub, "name": f"Member {sub}", LTI + "roles": list(roles),
            LTI + "target_link_uri": "http://hub.example.org" + target,
            roster.AGS: dict({"lineitems": lineitems}, **({"lineitem": lineitem} if lineitem
                                                         else {})),
            roster.NRPS: {"context_memberships_url": memberships}}
    if context is not None:
        made[LTI + "context"] = {"id": context[0], "title": context[1]}
    return made


def launch(store, made, configured=""):
    """What the hub does with a launch that passed the library's checks: the context
    check, then (signed in) the roster's record."""
    instructor = any(r.endswith("#Instructor") for r in made[LTI + "roles"])
    roster.admit_context(store, made, instructor, configured)
    return roster.launched(store, made)


def stored(store):
    """Everything a launch may change in the course's database."""
    with store._read() as conn:
        return [sorted(tuple(r) for r in conn.execute(select(t))) for t in
                (lti_context, lti_lineitems, lti_people, passback)]


OTHER = [  # the other course's launches: (roles, context)
    pytest.param([INSTRUCTOR], ("course-2", "Another course"), id="instructor-other-id"),
    pytest.param([LEARNER], ("course-2", "Another course"), id="learner-other-id"),
    pytest.param([INSTRUCTOR, ADMIN], ("course-2", "Another course"), id="admin-other-id"),
    pytest.param([SYS_ADMIN, INSTRUCTOR], ("course-2", "Another course"), id="sysadmin-other"),
    pytest.param([INSTRUCTOR], ("course-1 ", COURSE[1]), id="same-title-near-id"),
    pytest.param([INSTRUCTOR], ("Course-1", COURSE[1]), id="same-title-case-id"),
    pytest.param([INSTRUCTOR], ("course-3", COURSE[1]), id="same-title-other-id"),
    pytest.param([INSTRUCTOR], None, id="no-context-claim"),
    pytest.param([LEARNER], None, id="learner-no-context-claim"),
]


@pytest.mark.parametrize("roles, context", OTHER)
def test_after_the_first_instructor_launch_another_lms_course_is_refused_and_changes_nothing(
        platform, course, roles, context):
    platform.enrol("teacher", "Teacher", INSTRUCTOR)
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR]))  # pins course-1
    course.graded(launch(course.store, claims(platform, "ann")), 2.0, time.time())
    outbox.plan(course.store, "best", late_by(course.deadlines()))
    before = stored(course.store)
    assert roster.pinned_context(course.store) == COURSE[0]
    with pytest.raises(roster.OtherCourse, match="another LMS course|no context"):
        launch(course.store, claims(platform, "eve", roles, context,
                                    target=PAGE, lineitem=platform.url + "/other/lineitem"))
    assert stored(course.store) == before
    assert outbox.context_url(course.store, "lineitems") == platform.url + "/lineitems"
    assert outbox.context_url(course.store, "memberships") == platform.url + "/memberships"


@pytest.mark.parametrize("roles, context", OTHER)
def test_a_set_lti_context_id_refuses_another_course_even_the_first_launch(
        platform, course, monkeypatch, roles, context):
    monkeypatch.setenv("LTI_CONTEXT_ID", COURSE[0])
    before = stored(course.store)
    with pytest.raises(roster.OtherCourse, match="another LMS course|no context"):
        launch(course.store, claims(platform, "eve", roles, context), COURSE[0])
    assert stored(course.store) == before
    launch(course.store, claims(platform, "ann"), COURSE[0])  # a learner of the course: in
    assert outbox.context_url(course.store, "lineitems") == platform.url + "/lineitems"


def test_no_learner_is_let_in_before_an_instructor_chose_the_course(platform, course):
    with pytest.raises(roster.OtherCourse, match="no instructor has opened"):
        launch(course.store, claims(platform, "ann"))
    assert roster.pinned_context(course.store) is None
    assert stored(course.store) == [[], [], [], []]


def test_grades_go_to_the_column_the_instructor_made_in_the_lms(platform, client, course):
    column = platform.make_lineitem("Assignment 1: donation", 10.0, "link-7")
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR], target=PAGE, lineitem=column))
    platform.enrol("ann", "Ann")
    course.graded(launch(course.store, claims(platform, "ann", target=PAGE, lineitem=column)),
                  3.0, time.time())
    _send(course, client)
    assert list(platform.lineitems) == [1]  # the tool made no column of its own
    assert platform.results[(1, "ann")]["scoreGiven"] == 3.0
    assert all(s["holds"] for s in outbox.states(course.store).values())


def test_a_link_to_the_whole_course_keeps_the_tools_own_line_item(platform, client, course):
    column = platform.make_lineitem("The course", 10.0, "link-1")
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR], lineitem=column))
    platform.enrol("ann", "Ann")
    course.graded(launch(course.store, claims(platform, "ann", lineitem=column)), 3.0, time.time())
    _send(course, client)
    assert platform.gradebook() == {(EXERCISE, "ann"): 3.0}  # its own item, by resourceId
    assert not any(k[0] == 1 for k in platform.results)


def test_a_line_item_deleted_in_the_lms_is_made_again(platform, client, course):
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR]))
    platform.enrol("ann", "Ann")
    ann = launch(course.store, claims(platform, "ann"))
    course.graded(ann, 1.0, time.time())
    _send(course, client)
    platform.delete_lineitem(next(iter(platform.lineitems.values()))["id"])
    course.graded(ann, 2.0, time.time())
    _send(course, client)
    says = outbox.states(course.store)[(ann, EXERCISE)]
    assert not says["holds"] and "deleted in the LMS" in says["why"]
    _send(course, client, after=3.0)  # the backoff's first 2 s (and jitter) later
    assert platform.gradebook() == {(EXERCISE, "ann"): 2.0}
    assert len(platform.lineitems) == 1 and outbox.states(course.store)[(ann, EXERCISE)]["holds"]


def test_the_lms_own_column_deleted_is_reported_until_a_launch_brings_a_new_one(
        platform, client, course, capsys):
    column = platform.make_lineitem("Assignment 1", 10.0, "link-7")
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR], target=PAGE, lineitem=column))
    platform.enrol("ann", "Ann")
    ann = launch(course.store, claims(platform, "ann", target=PAGE, lineitem=column))
    platform.delete_lineitem(column)
    course.graded(ann, 2.0, time.time())
    _send(course, client)
    begun = platform.scores_begun
    _send(course, client, after=400.0)  # refused: not tried again, however long
    assert platform.scores_begun == begun and not platform.lineitems
    why = outbox.states(course.store)[(ann, EXERCISE)]["why"]
    assert "refused by the LMS" in why and "own column" in why and "404" in why
    made_again = platform.make_lineitem("Assignment 1", 10.0, "link-7")
    launch(course.store, claims(platform, "ann", target=PAGE, lineitem=made_again))
    _send(course, client)
    assert platform.gradebook() == {("Assignment 1", "ann"): 2.0}


def test_a_permanent_refusal_is_shown_not_retried_and_sent_again_by_the_instructor(
        platform, client, course, capsys, monkeypatch):
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR]))
    ann = launch(course.store, claims(platform, "ann"))  # not (yet) a member in the LMS
    course.graded(ann, 2.0, time.time())
    _send(course, client)
    begun = platform.scores_begun
    for wait in (10.0, 400.0, 4000.0):
        _send(course, client, after=wait)
    assert platform.scores_begun == begun == 1  # one try: 422 is not asked again
    monkeypatch.delenv("LTI_CONTEXT_ID", raising=False)
    assert passback_command.main(["status", "--db", course.db, "--course",
                                  str(course.folder)]) == 0
    said = capsys.readouterr().out
    assert f"{ann}\t{EXERCISE}\trefused by the LMS" in said and "422" in said \
        and "not a member of the course" in said and "passback resend" in said
    platform.enrol("ann", "Ann")  # the instructor fixes it in the LMS, then re-sends
    assert passback_command.main(["resend", "--db", course.db, "--course",
                                  str(course.folder)]) == 0
    _send(course, client)
    assert platform.gradebook() == {(EXERCISE, "ann"): 2.0}
    assert outbox.states(course.store)[(ann, EXERCISE)] == {"holds": True, "why": None}


@pytest.mark.parametrize("status, kept", [
    (400, False), (403, False), (409, False), (422, False),  # asking again cannot help
    (408, True), (429, True), (500, True), (502, True), (503, True),  # later it may
])
def test_which_refusals_are_retried(platform, client, course, status, kept):
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR]))
    platform.enrol("ann", "Ann")
    ann = launch(course.store, claims(platform, "ann"))
    course.graded(ann, 2.0, time.time())
    platform.fail_scores, platform.fail_status = 1, status
    _send(course, client)
    why = outbox.states(course.store)[(ann, EXERCISE)]["why"]
    assert f"answered {status}" in why and ("(retrying)" in why) == kept, why
    _send(course, client, after=3.0)
    assert (platform.gradebook() == {(EXERCISE, "ann"): 2.0}) == kept


def _send(course, client, after=0.0):
    """One sender's plan and drain, ``after`` seconds from now (backoffs over)."""
    sender = outbox.Sender(course.store, client, "best", lambda: late_by(course.deadlines()),
                           "test:1:passback")
    sender.plan()
    now = time.time() + after
    for _ in range(20):  # a row retried forever would be claimed again and again
        if (row := outbox.claim(course.store, "test:1:passback", now)) is None:
            return
        _post(course, client, row, now)
    raise AssertionError("a post was tried 20 times in a row")


def _post(course, client, row, now):
    # send_one with the claim made at ``now``: give the row back, then let it claim it
    with course.store.engine.begin() as conn:
        conn.execute(passback.update().where(passback.c.learner == row["learner"],
                                             passback.c.exercise == row["exercise"])
                     .values(lease_owner=None, lease_until=None, next_at=0))
    outbox.send_one(course.store, client, "test:1:passback")


def _passback(course, command, **env):
    """``python -m autograder.service.passback <command>`` with no LTI_* setting but ``env``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("LTI_")}
    return subprocess.run([sys.executable, "-m", "autograder.service.passback", command,
                           "--db", course.db, "--course", str(course.folder)], cwd=REPO,
                          env=dict(clean, JAX_PLATFORMS="cpu", **env), capture_output=True,
                          text=True, timeout=120)


def test_passback_without_the_hubs_environment_posts_as_the_service_does(
        platform, registration, tool_pem, course, tmp_path, monkeypatch):
    launch(course.store, claims(platform, "teacher", [INSTRUCTOR]))
    platform.enrol("ann", "Ann")
    course.graded(launch(course.store, claims(platform, "ann")), 2.0, time.time())
    refused = _passback(course, "send")
    assert refused.returncode != 0
    assert "LTI_CLIENT_ID and LTI_TOKEN_URL not set here" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    key = tmp_path / "state" / "lti-tool-key.pem"
    key.parent.mkdir(mode=0o700)
    key.write_bytes(tool_pem)
    key.chmod(0o600)
    for name, value in (("LTI_CLIENT_ID", registration.client_id),
                        ("LTI_ISSUER", platform.url), ("LTI_TOKEN_URL", registration.token_url),
                        ("LTI_KEY_FILE", str(key))):
        monkeypatch.setenv(name, value)
    GradingThreads(course.store, None, None, 1, 0, 30.0, "best")  # the service starts
    done = _passback(course, "send")
    assert done.returncode == 0, done.stdout + done.stderr
    assert platform.gradebook() == {(EXERCISE, "ann"): 2.0}
    key.unlink()  # the key moved: said, and how to give it
    moved = _passback(course, "roster")
    assert moved.returncode != 0 and f"cannot be read at {key}" in moved.stderr, moved.stderr
    assert "LTI_KEY_FILE" in moved.stderr and "Traceback" not in moved.stderr
