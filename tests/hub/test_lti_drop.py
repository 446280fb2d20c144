"""Dropping a learner and demoting an instructor under ``make hub`` with ``HUB_AUTH=lti``
(an LMS on loopback: tests/lti/platform.py), as docs/instructors.md says: her hub token
and session are refused at once, her next launch gets the hub's error page, every view
shows her withdrawn (grades kept) or not at all (removed); a demoted instructor loses the
class page at once. The same under PAM: tests/hub/test_drop.py."""
from __future__ import annotations

import csv
import io
import time
from pathlib import Path

import pytest
import requests

from autograder.service.lms.lti_tool import user_name
from autograder.service.store.withdrawn import FIRST_NAME
from tests.grading.helpers import released_notebook, samples_dir, with_answer
from tests.hub.running import WAIT_S, json_of
from tests.hub.test_drop import EXERCISE, roster_command
from tests.hub.test_lti_class import http_launch, hub_token
from tests.lti.platform import INSTRUCTOR


def as_token(hub, token):
    """``call(method, path, **kwargs)`` to the grading service with hub ``token``."""
    auth = {"Authorization": f"token {token}"}
    return lambda method, path, **kw: requests.request(
        method, hub.url("/services/grader/" + path), headers=auth, timeout=60, **kw)


def _graded(hub, grader):
    notebook = with_answer(released_notebook(Path(hub.env["GRADER_COURSE"])),
                           (samples_dir(EXERCISE) / "reference.py").read_text(), EXERCISE)
    sub = json_of(grader("POST", "api/submissions", json={"exercise": EXERCISE,
                                                          "notebook": notebook}))["id"]
    deadline = time.monotonic() + WAIT_S
    while json_of(grader("GET", f"api/submissions/{sub}"))["status"] != "done":
        assert time.monotonic() < deadline, f"{sub} was not graded"
        time.sleep(1)


@pytest.mark.parametrize("kind", ["--keep-grades", "--remove-grades"])
def test_a_dropped_learner_cannot_launch_and_nothing_of_hers_still_works(lti_hub, lti_platform,
                                                                         kind):
    sub = f"drop{kind[2:6]}"
    session, answer, _ = http_launch(lti_platform, lti_hub, sub, "Dee Dropped")
    assert answer.status_code == 302
    name, token = user_name(lti_platform.url, sub), hub_token(session, lti_hub)
    her = as_token(lti_hub, token)
    _graded(lti_hub, her)
    teacher, answer, _ = http_launch(lti_platform, lti_hub, f"t{sub}", "Frau Lehrer", INSTRUCTOR)
    ins = as_token(lti_hub, hub_token(teacher, lti_hub))

    done = roster_command(lti_hub, "drop", name, kind)
    assert done.returncode == 0, done.stdout + done.stderr
    reply = her("POST", "api/submissions", json={"exercise": EXERCISE, "notebook": {}})
    assert reply.status_code == 403 and reply.json()["code"] == "withdrawn", reply.text
    assert requests.get(lti_hub.url("/hub/api/user"), timeout=60,
                        headers={"Authorization": f"token {token}"}).status_code == 403
    home = session.get(lti_hub.url("/hub/home"), allow_redirects=False, timeout=60)
    assert home.status_code == 302 and "/hub/login" in home.headers["Location"]
    _, again, _ = http_launch(lti_platform, lti_hub, sub, "Dee Dropped")
    assert again.status_code == 403 and "withdrawn from this course" in again.text

    listed = json_of(ins("GET", "api/class"))["roster"]
    rows = [r for r in csv.DictReader(io.StringIO(ins("GET", "api/class.csv").text))
            if r["student_id"] == name]
    page = ins("GET", "class").text
    if kind == "--keep-grades":
        assert listed[name]["withdrawn"] is True and listed[name]["submitted"] == [EXERCISE]
        assert rows and {r["first_name"] for r in rows} == {FIRST_NAME}
        assert '<span class="absent">(withdrawn)</span>' in page
    else:
        assert name not in listed and not rows and f"?learner={name}" not in page


def test_a_demoted_instructor_loses_the_class_at_once(lti_hub, lti_platform):
    teacher, answer, _ = http_launch(lti_platform, lti_hub, "t-demote", "Herr Lehrer", INSTRUCTOR)
    ins = as_token(lti_hub, hub_token(teacher, lti_hub))
    assert ins("GET", "api/class").status_code == 200
    done = roster_command(lti_hub, "demote", user_name(lti_platform.url, "t-demote"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ins("GET", "api/class").status_code == 403
