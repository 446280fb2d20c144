"""Grades back to a real LTI 1.3 platform on loopback (tests/lti/platform.py): the
outbox (autograder/service/lms/outbox.py) posts each learner's recorded grade once, and keeps
it right through resubmissions, late work, extensions, regrades, an LMS outage and a
sender killed mid-post."""
from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import jwt
import requests

from autograder.service.class_views.class_view import summary
from autograder.service.gradebook.recorded import late_by
from autograder.service.lms import lti_tool, outbox, roster as roster
from autograder.service.lms.lti_tool import CLIENT_ASSERTION_TYPE
from tests.course import REPO
from tests.lti.course import EXERCISE, max_points
from tests.lti.platform import INSTRUCTOR

HOUR, DAY = 3600.0, 86400.0


def sender(course, client, name="test:1:passback"):
    return outbox.Sender(course.store, client, "best", lambda: late_by(course.deadlines()), name)


def learners(platform, course, count):
    """``count`` LMS learners who launched: ``{learner id: sub}``."""
    made = {}
    for i in range(count):
        sub = f"user-{i:03d}"
        platform.enrol(sub, f"Learner {i}")
        made[roster.remember(course.store, platform.url, sub, f"Learner {i}", launched=True)] = sub
    return made


def recorded_grades(course, subs):
    """``{(exercise, sub): recorded grade}`` as the class view gives them."""
    view = summary(course.store, "best", course.deadlines())
    return {(exercise, subs[learner]): who["recorded"] for exercise, ex in view.items()
            for learner, who in ex["learners"].items() if learner in subs}


def assert_each_once(platform):
    """One line item per exercise, and no score posted twice for the same grade change
    except as the same score (same timestamp, same points)."""
    items = Counter(item["resourceId"] for item in platform.lineitems.values())
    assert all(n == 1 for n in items.values()), f"line items made twice: {items}"
    seen = {}
    for item, score in platform.posts:
        key = (item, score["userId"], score["timestamp"])
        assert seen.setdefault(key, score["scoreGiven"]) == score["scoreGiven"], key


def test_thirty_learners_recorded_grades_end_in_the_lms_gradebook_once_each(platform, client,
                                                                           course):
    due = time.time() - 5 * DAY
    course.due(datetime.datetime.fromtimestamp(due, datetime.UTC))
    subs = learners(platform, course, 30)
    top = max_points()
    extended, regrade = [], []
    for i, learner in enumerate(subs):
        kind = i % 4
        if kind == 0:  # a better resubmission, then a worse experiment: the best counts
            course.graded(learner, 1.0, due - 3 * HOUR)
            course.graded(learner, top, due - 2 * HOUR)
            course.graded(learner, 0.0, due - HOUR)
        elif kind == 1:  # late by a day and a half: 2 points off (1 a day or part of one)
            course.graded(learner, top, due + 1.5 * DAY)
        elif kind == 2:  # late by 10 h (1 point off) until an extension of a day
            course.graded(learner, top, due + 10 * HOUR)
            extended.append(learner)
        else:  # graded 2, regraded after the hidden tests changed
            regrade.append(course.graded(learner, 2.0, due - HOUR))
    outsider = "ada"  # graded, but not in the LMS: nothing to post for her
    course.graded(outsider, top, due - HOUR)

    post = sender(course, client)
    post.plan()
    post.drain()
    assert platform.gradebook() == recorded_grades(course, subs)
    assert {v for (_, sub), v in platform.gradebook().items() if sub == "user-001"} == {top - 2}

    for learner in extended:
        course.extend(learner, 24)
    for sub_id in regrade:
        course.regraded(sub_id, 3.0)
    post.plan()
    post.drain()
    grades = recorded_grades(course, subs)
    assert platform.gradebook() == grades
    assert len(grades) == 30 and grades[(EXERCISE, "user-002")] == top
    assert grades[(EXERCISE, "user-003")] == 3.0
    assert_each_once(platform)
    posted = Counter(score["userId"] for _, score in platform.posts)
    assert {posted[subs[learner]] for learner in extended} == {2}  # the old grade, the new
    assert posted["user-000"] == 1  # the worse experiment changed nothing

    post.plan()  # nothing changed: nothing is posted again
    assert post.drain() == 0
    view = outbox.annotate(summary(course.store, "best", course.deadlines()), course.store)
    lms = {learner: who["lms"] for learner, who in view[EXERCISE]["learners"].items()}
    assert all(lms[learner] == {"holds": True, "why": None} for learner in subs)
    assert not lms[outsider]["holds"] and "never launched" in lms[outsider]["why"]

    assert outbox.resend_all(course.store) == 31  # the instructor's re-send: still one each
    post.drain()
    assert platform.gradebook() == grades
    assert_each_once(platform)


def test_an_lms_down_during_a_deadline_burst_gets_every_score_once_it_is_back(platform, client,
                                                                             course):
    subs = learners(platform, course, 30)
    for i, learner in enumerate(subs):
        course.graded(learner, float(i % 4), time.time() - 60)
    platform.fail_scores = 3  # first 5xx ...
    stopping, wanted = threading.Event(), threading.Event()
    loop = threading.Thread(target=sender(course, client).loop, args=(stopping, wanted))
    loop.start()
    try:
        _wait(lambda: len(platform.posts) >= 5, "the first scores")
        platform.stop()  # ... then the LMS goes away in the middle of the burst
        for i, learner in enumerate(subs):  # a second attempt of everyone while it is down
            course.graded(learner, float(i % 4) + 1, time.time())
        wanted.set()
        _wait(lambda: sum(bool(s["why"] and "cannot be reached" in s["why"])
                          for s in outbox.states(course.store).values()) >= 10,
              "the class view saying the LMS cannot be reached")
        time.sleep(2)
        platform.start()
        _wait(lambda: all(s["holds"] for s in outbox.states(course.store).values()),
              "every grade held by the LMS", seconds=120)
    finally:
        stopping.set()
        loop.join()
    assert platform.gradebook() == recorded_grades(course, subs)
    assert sum(status == 503 for _, status, _ in platform.refused) == 3
    assert_each_once(platform)


def test_a_sender_killed_mid_post_leaves_one_score(platform, course, registration, tool_pem):
    subs = learners(platform, course, 3)
    for i, learner in enumerate(subs):
        course.graded(learner, float(i + 1), time.time() - 60)
    env = dict(os.environ, LTI_CLIENT_ID=registration.client_id, LTI_ISSUER=platform.url,
               LTI_TOKEN_URL=registration.token_url, LTI_LINEITEMS_URL=registration.lineitems_url,
               LTI_PRIVATE_KEY=tool_pem.decode(), JAX_PLATFORMS="cpu")
    command = [sys.executable, "-m", "autograder.service.passback", "send", "--db", course.db,
               "--course", str(course.folder)]
    platform.score_delay = 3.0  # the LMS takes the score 3 s after the request came
    killed = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)
    _wait(lambda: platform.scores_begun >= 1, "the first score request")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    _wait(lambda: len(platform.posts) == 1, "the LMS taking the killed sender's score")
    held = dict(platform.posts[0][1])
    assert not any(s["holds"] for s in outbox.states(course.store).values())

    platform.score_delay = 0.0
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(s["holds"] for s in outbox.states(course.store).values())
    assert platform.gradebook() == recorded_grades(course, subs)
    again = [s for _, s in platform.posts if s["userId"] == held["userId"]]
    assert len(again) == 2 and again[0] == again[1]  # posted twice, the same score
    assert_each_once(platform)


def test_a_learner_cannot_post_a_score(platform, client, course, tmp_path):
    subs = learners(platform, course, 1)
    course.graded(next(iter(subs)), 1.0, time.time())
    post = sender(course, client)
    post.plan()
    post.drain()
    item = next(iter(platform.lineitems.values()))["id"]
    score = {"userId": "user-000", "scoreGiven": 99, "scoreMaximum": 4,
             "activityProgress": "Completed", "gradingProgress": "FullyGraded",
             "timestamp": datetime.datetime.now(datetime.UTC).isoformat()}
    assert requests.post(item + "/scores", json=score, timeout=5).status_code == 401
    # a token of the learner's own making, or one asked for with their own key
    mine = lti_tool.private_key_pem(tmp_path / "mine.pem")
    forged = jwt.encode({"iss": platform.url, "sub": platform.client_id,
                         "scopes": "https://purl.imsglobal.org/spec/lti-ags/scope/score"},
                        mine, algorithm="RS256")
    assert requests.post(item + "/scores", json=score, timeout=5,
                         headers={"Authorization": f"Bearer {forged}"}).status_code == 401
    asked = requests.post(platform.token_url, timeout=5, data={
        "grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
        "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
        "client_assertion": lti_tool.client_assertion(client.registration, mine)})
    assert asked.status_code == 401
    assert platform.gradebook() == {(EXERCISE, "user-000"): 1.0}


def test_the_platform_refuses_token_requests_a_real_lms_refuses(platform, client, registration,
                                                               tool_pem):
    def ask(assertion):
        return requests.post(platform.token_url, timeout=5, data={
            "grant_type": "client_credentials", "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score",
            "client_assertion": assertion}).status_code

    good = lti_tool.client_assertion(registration, tool_pem)
    assert ask(good) == 200
    assert ask(good) == 401  # its jti again
    claims = jwt.decode(good, options={"verify_signature": False})
    kid = lti_tool.public_jwk(tool_pem)["kid"]
    for change in ({"aud": platform.url + "/other"}, {"iss": "someone"}, {"sub": "someone"},
                   {"exp": int(time.time()) - 10}):
        bad = dict(claims, jti=os.urandom(8).hex(), **change)
        assert ask(jwt.encode(bad, tool_pem, algorithm="RS256", headers={"kid": kid})) == 401, \
            change


def _wait(ready, what, seconds=60.0):
    deadline = time.monotonic() + seconds
    while not ready():
        assert time.monotonic() < deadline, f"waited {seconds:g} s for {what}"
        time.sleep(0.2)


def test_lms_members_who_never_launched_are_on_the_roster(platform, client, course, registration):
    subs = learners(platform, course, 2)  # two launched
    for i in range(5):
        platform.enrol(f"quiet-{i}", f"Quiet {i}")
    platform.enrol("teacher", "Teacher", role=INSTRUCTOR)
    assert roster.refresh(course.store, client, platform.url, registration.memberships_url) == 8
    never = roster.never_launched(course.store)
    assert sorted(who["name"] for who in never.values()) == [f"Quiet {i}" for i in range(5)]
    assert not set(never) & set(subs) and not any(w["submitted"] for w in never.values())
    assert all(roster.people(course.store)[learner]["launched"] for learner in subs)
