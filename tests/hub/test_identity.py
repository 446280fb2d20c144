"""Every grade belongs to who signed in: the grading service behind the hub
takes the learner from JupyterHub, shows a learner only their own work, and
shows instructors the class."""
from __future__ import annotations

from pathlib import Path

import requests

from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.running import class_csv_when

WAIT_S = 600


def notebook(course, sample):
    return with_answer(released_notebook(course), (SAMPLES / f"{sample}.py").read_text())


def course_of(hub):
    return Path(hub.env["GRADER_COURSE"])


def test_unsigned_requests_are_refused(hub):
    body = {"exercise": "update_with_donate", "learner": "anyone", "notebook": {"cells": []}}
    for method, path, kwargs in (("POST", "api/submissions", {"json": body}),
                                 ("GET", "api/submissions", {}),
                                 ("GET", "api/class", {}),
                                 ("GET", "api/class.csv", {})):
        reply = requests.request(method, hub.url("/services/grader/" + path), timeout=60, **kwargs)
        assert reply.status_code == 403, (path, reply.status_code, reply.text)
        assert reply.json()["code"] == "not_signed_in"
    bad = requests.post(hub.url("/services/grader/api/submissions"), json=body, timeout=60,
                        headers={"Authorization": "token not-a-hub-token"})
    assert bad.status_code == 403


def test_a_cross_site_post_with_the_learners_cookies_is_refused(hub, sign_in):
    """A cookie alone (what a cross-site form or fetch carries) does not sign a POST:
    HubOAuth wants the _xsrf token too, which another site cannot read."""
    ada = sign_in("ada")
    ada.session.get(hub.url("/services/grader/login?next=/services/grader/api/me"))
    assert any(c.path.startswith("/services/grader") for c in ada.session.cookies)
    before = len(ada.grader("GET", "api/submissions").json()["submissions"])
    body = {"exercise": "update_with_donate", "notebook": notebook(course_of(hub), "reference")}
    forged = ada.session.post(hub.url("/services/grader/api/submissions"), json=body,
                              headers={"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "cross-site",
                                       "Origin": "http://evil.example"})
    assert forged.status_code == 403, forged.text
    assert len(ada.grader("GET", "api/submissions").json()["submissions"]) == before
    # the session endpoint that hands out the token needs the XSRF header too
    stolen = ada.session.get(hub.url("/services/course/api/session"),
                             headers={"Sec-Fetch-Mode": "cors", "Sec-Fetch-Site": "cross-site"})
    assert stolen.status_code == 403


def test_a_learner_reads_only_their_own_submissions(hub, sign_in):
    ada, bob = sign_in("ada"), sign_in("bob")
    sub_id = ada.submit(notebook(course_of(hub), "reference"))
    done = ada.wait_done(sub_id)
    assert done["learner"] == ada.name and done["result"]["score"] == done["result"]["max_score"]
    assert sub_id in [s["id"] for s in ada.grader("GET", "api/submissions").json()["submissions"]]

    by_id = bob.grader("GET", f"api/submissions/{sub_id}")
    unknown = bob.grader("GET", "api/submissions/" + "A" * 32)
    assert by_id.status_code == unknown.status_code == 404  # as if it did not exist
    assert by_id.json() == unknown.json()
    listing = bob.grader("GET", "api/submissions", params={"learner": ada.name})
    assert listing.status_code == 403
    own = bob.grader("GET", "api/submissions").json()
    assert own["learner"] == bob.name and sub_id not in [s["id"] for s in own["submissions"]]
    assert bob.grader("GET", "api/class").status_code == 403
    assert bob.grader("GET", "api/class.csv").status_code == 403


def test_a_forged_learner_field_does_not_change_whose_grade_it_is(hub, sign_in):
    ada, bob = sign_in("ada"), sign_in("bob")
    before = len(ada.grader("GET", "api/submissions").json()["submissions"])
    sub_id = bob.submit(notebook(course_of(hub), "no_donation"), learner=ada.name)
    done = bob.wait_done(sub_id)
    assert done["learner"] == bob.name
    assert len(ada.grader("GET", "api/submissions").json()["submissions"]) == before
    assert sub_id in [s["id"] for s in bob.grader("GET", "api/submissions").json()["submissions"]]


def test_the_instructor_sees_the_class_and_downloads_its_csv(hub, sign_in):
    ada, bob, ins = sign_in("ada"), sign_in("bob"), sign_in("ins")
    course = course_of(hub)
    ada.wait_done(ada.submit(notebook(course, "reference")))
    bob.wait_done(bob.submit(notebook(course, "no_donation")))
    me = ins.grader("GET", "api/me").json()
    assert me == {"learner": ins.name, "instructor": True}

    view = ins.grader("GET", "api/class").json()["exercises"]["update_with_donate"]
    learners = view["learners"]
    assert learners[ada.name]["best"] == view["max_score"] == 10
    assert learners[bob.name]["latest"] < 10 and learners[bob.name]["feedback"]
    assert {c["name"] for c in view["checks"]} and all(0 <= c["pass_rate"] <= 1 for c in view["checks"])
    assert ins.grader("GET", f"api/submissions/{learners[bob.name]['latest_id']}").ok

    # the CSV: nbgrader export's columns, both learners' recorded scores, as the class
    # view says them (the gradebook is mirrored by a background thread: wait for it)
    assert view["recorded_rule"] == "best" and learners[bob.name]["recorded"] == learners[bob.name]["best"]
    rows = class_csv_when(ins, "update_with_donate",
                          {ada.name: 10.0, bob.name: float(learners[bob.name]["recorded"])}, WAIT_S)
    ours = {r["student_id"]: r for r in rows if r["assignment"] == "update_with_donate"
            and r["timestamp"]}
    assert list(rows[0]) == ["assignment", "duedate", "timestamp", "student_id", "last_name",
                             "first_name", "email", "raw_score", "late_submission_penalty",
                             "score", "max_score"]
    assert float(ours[ada.name]["score"]) == 10.0
    assert float(ours[bob.name]["score"]) == float(learners[bob.name]["recorded"])


def test_refused_requests_never_cost_another_learner_a_503(hub, sign_in):
    """Unsigned POSTs (refused before their body is read) interleaved with a signed-in
    learner's polls, all through the hub's proxy: every poll is answered by the service."""
    ada = sign_in("ada")
    body = {"exercise": "update_with_donate", "notebook": {"cells": []}}
    statuses = []
    for _ in range(100):
        refused = requests.post(hub.url("/services/grader/api/submissions"), json=body, timeout=60)
        assert refused.status_code == 403, refused.text[:300]
        statuses.append(ada.grader("GET", "api/submissions").status_code)
    assert set(statuses) == {200}, statuses


def test_a_quick_resubmit_keeps_the_listing_and_the_class_view(hub, sign_in):
    """A submission replaced while queued (the learner sent a newer one) is listed as
    replaced, with its successor; the learner's and the instructor's views still answer."""
    ada, ins = sign_in("ada"), sign_in("ins")
    course = course_of(hub)
    slow = notebook(course, "reference")
    answer = next(c for c in slow["cells"] if c["metadata"].get("nbgrader", {}).get("solution"))
    answer["source"] = "import time\ntime.sleep(4)\n" + "".join(answer["source"])
    running = ada.submit(slow)
    queued = ada.submit(notebook(course, "no_donation"))  # waits: ada is being graded
    newer = ada.submit(notebook(course, "reference"))  # replaces the queued one
    listed = ada.grader("GET", "api/submissions")
    assert listed.status_code == 200, listed.text[:500]
    by_id = {s["id"]: s for s in listed.json()["submissions"]}
    assert (by_id[queued]["status"], by_id[queued]["replaced_by"]) == ("replaced", newer)
    ada.wait_done(running), ada.wait_done(newer)
    for path in ("", "api/class"):
        assert ins.grader("GET", path).status_code == 200
    assert ada.grader("GET", "").status_code == 200


def test_every_submitted_notebook_stays_readable_to_its_learner_and_instructors(hub, sign_in):
    """Not only the newest: each submission's notebook, as submitted, for the learner and
    instructors (the history page links them); another learner gets a 404."""
    ada, bob, ins = sign_in("ada"), sign_in("bob"), sign_in("ins")
    course = course_of(hub)
    first = ada.submit(notebook(course, "no_donation"))
    ada.wait_done(first)
    ada.wait_done(ada.submit(notebook(course, "reference")))
    for reader in (ada, ins):
        got = reader.grader("GET", f"api/submissions/{first}/notebook")
        assert got.status_code == 200 and "ipynb" in got.headers["Content-Type"]
        cells = "".join("".join(c["source"]) for c in got.json()["cells"])
        no_donation = (SAMPLES / "no_donation.py").read_text()
        assert no_donation.strip().splitlines()[-1] in cells
    assert bob.grader("GET", f"api/submissions/{first}/notebook").status_code == 404
    history = ins.grader("GET", "", params={"learner": ada.name})
    assert history.status_code == 200 and f"api/submissions/{first}/notebook" in history.text
    assert 'href="class"' in ins.grader("GET", "").text
    assert f"./?learner={ada.name}" in ins.grader("GET", "class").text  # linked from the class


def test_a_notebook_far_over_the_limit_gets_the_services_413_through_the_proxy(hub, sign_in):
    """30 MiB (six times the limit): read to its end by the service and answered in its
    own words, not cut off mid-upload (which the proxy turned into its 503 page)."""
    ada = sign_in("ada")
    body = {"exercise": "update_with_donate", "notebook": {"cells": [], "x": "y" * (30 * 2**20)}}
    reply = ada.grader("POST", "api/submissions", json=body)
    assert reply.status_code == 413, reply.text[:300]
    assert reply.json()["code"] == "too_large" and "clear the notebook's outputs" in reply.json()["error"]
