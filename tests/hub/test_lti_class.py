"""A class signing in by LTI 1.3 launch under ``make hub`` (``HUB_AUTH=lti``), by plain HTTP:
the LMS's pages (tests/lti/platform.py) are forms that post themselves, so a ``requests``
session posts them as a browser would (one launch in Chromium: tests/hub/test_lti_launch.py).
Thirty learners each become their own system user and are on the class page and in the
class CSV with their LMS name; a launch replayed after the hub restarted is still refused; /hub/login says to launch
from the LMS."""
from __future__ import annotations

import html
import io
import pwd
import re
from concurrent.futures import ThreadPoolExecutor
from csv import DictReader

import requests

from autograder.service.lms.lti_tool import user_name
from tests.hub.accounts import hub_users
from tests.lti.platform import INSTRUCTOR, LEARNER

CALLBACK = "/hub/lti13/oauth_callback"
CLASS = 30
FIELD = re.compile(r'<input type="hidden" name="([^"]*)" value="([^"]*)">')


def _form(page):
    """``(action, fields)`` of an auto-posting page of the platform."""
    action = html.unescape(re.search(r'action="([^"]*)"', page).group(1))
    return action, {html.unescape(k): html.unescape(v) for k, v in FIELD.findall(page)}


def http_launch(platform, hub, sub, name, role=LEARNER):
    """``sub`` launches the course from the LMS: ``(session, the hub's answer to the id_token,
    the callback request as sent: {"cookie", "form"})``; the session holds the hub's cookies
    after it."""
    session = requests.Session()
    page = session.get(platform.launch_page(sub, name, role, hub.url("/services/course/")),
                       timeout=60)
    action, fields = _form(page.text)  # the login initiation, posted to the hub
    to_lms = session.post(action, data=fields, allow_redirects=False, timeout=60)
    assert to_lms.status_code == 302, to_lms.text[-2000:]
    launch = session.get(to_lms.headers["Location"], timeout=60)  # the LMS's authorization
    assert launch.status_code == 200, launch.text
    action, fields = _form(launch.text)  # the id_token, posted to the hub's callback
    assert action == hub.url(CALLBACK)
    callback = session.prepare_request(requests.Request("POST", action, data=fields))
    # the launch's cookies are Secure, which browsers send to http://localhost (a secure
    # origin) and Python's cookie jar only over https: sent as a browser sends them
    launch_cookies = [f"{c.name}={c.value}" for c in session.cookies
                      if c.name.startswith("__Host-lti13")]
    callback.headers["Cookie"] = "; ".join(
        filter(None, [callback.headers.get("Cookie", "")] + launch_cookies))
    answer = session.send(callback, allow_redirects=False, timeout=120)
    return session, answer, {"cookie": callback.headers.get("Cookie", ""), "form": fields}


def hub_token(session, hub):
    """The hub token the course site hands its pages, for ``session`` (signed in to the hub)."""
    page = session.get(hub.url("/services/course/book/intro.html"), timeout=120)
    assert page.ok and page.url.endswith("/services/course/book/intro.html"), page.url
    xsrf = next(c.value for c in session.cookies
                if c.name == "_xsrf" and c.path.startswith("/services/course"))
    reply = session.get(hub.url("/services/course/api/session"),
                        headers={"X-XSRFToken": xsrf, "Sec-Fetch-Mode": "cors"}, timeout=60)
    assert reply.ok, reply.text
    return reply.json()["token"]


def test_a_class_of_30_launches_and_is_on_the_class_page_with_lms_names(lti_hub, lti_platform):
    subs = {f"class-{i:02d}": f"Learner Nummer {i:02d}" for i in range(CLASS)}
    lti_platform.enrol("never-1", "Nie Gestartet")  # in the LMS course, never launches
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda s: http_launch(lti_platform, lti_hub, s, subs[s])[1],
                                subs))
    assert [a.status_code for a in answers] == [302] * CLASS, answers[0].text[-2000:]
    names = {user_name(lti_platform.url, sub): shown for sub, shown in subs.items()}
    users = hub_users(lti_hub)
    for name in names:
        assert users[name] == ["learners"] and pwd.getpwnam(name).pw_dir  # own system user
    assert len({pwd.getpwnam(n).pw_uid for n in names}) == CLASS

    teacher, answer, _ = http_launch(lti_platform, lti_hub, "teacher-class", "Frau Lehrer",
                                     INSTRUCTOR)
    assert answer.status_code == 302
    headers = {"Authorization": f"token {hub_token(teacher, lti_hub)}"}
    view = requests.get(lti_hub.url("/services/grader/api/class"), headers=headers, timeout=120)
    assert view.ok, view.text
    roster = view.json()["roster"]
    for name, shown in names.items():
        assert roster[name]["lms_name"] == shown and roster[name]["signed_in"] is True
    page = requests.get(lti_hub.url("/services/grader/class"), headers=headers, timeout=300)
    assert page.ok
    for name, shown in names.items():
        assert f'{name}</a> <span class="lms-name">{shown}</span>' in page.text
        assert f'{shown}</span> <span class="absent">(never launched)' not in page.text
    csv = requests.get(lti_hub.url("/services/grader/api/class.csv"), headers=headers,
                       timeout=300)
    assert csv.ok
    rows = list(DictReader(io.StringIO(csv.text)))
    for name, shown in names.items():  # nbgrader's last_name, beside student_id
        assert {r["last_name"] for r in rows if r["student_id"] == name} == {shown}
    teacher_name = user_name(lti_platform.url, "teacher-class")
    assert teacher_name not in roster and hub_users(lti_hub)[teacher_name] == ["instructors"]


def test_a_launch_replayed_after_the_hub_restarted_is_refused(lti_hub, lti_platform):
    """The id_token and the cookies of a launch, posted again once the hub restarted (its
    cookie secret kept, so the cookies still read): refused, the nonce was taken."""
    _, answer, sent = http_launch(lti_platform, lti_hub, "replayer", "Re Player")
    assert answer.status_code == 302 and "lti13authenticator-nonce-state" in sent["cookie"]
    lti_hub.stop()
    lti_hub.start()
    # the same ports again (the platform registered them): another process may have taken one
    assert "EADDRINUSE" not in lti_hub.log(), "a port of the hub was taken while it restarted"
    replay = requests.post(lti_hub.url(CALLBACK), data=sent["form"], allow_redirects=False,
                           timeout=120, headers={"Cookie": sent["cookie"]})
    assert replay.status_code == 400, (replay.status_code, replay.text[-2000:])
    assert "used already" in replay.text and "Traceback" not in replay.text


def test_the_hubs_sign_in_page_says_to_launch_from_the_lms(lti_hub):
    page = requests.get(lti_hub.url("/hub/login"), timeout=60)
    assert page.status_code == 200
    assert "Open the course from your learning-management system" in page.text
    assert 'name="password"' not in page.text
