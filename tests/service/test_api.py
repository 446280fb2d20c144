"""The HTTP API on SQLite and on PostgreSQL: submit, poll, read feedback; bad requests
refused, nothing stored."""
import json
from http.client import HTTPConnection

import pytest
from nbgrader.api import Gradebook

from autograder import defaults
from tests.grading.helpers import ASSIGNMENT
from tests.service.running import http
from tests.service.submissions import expected_failed, failed_tests, notebook_with, slow_notebook


@pytest.fixture(scope="module")
def graded(store_service, course_template):
    """The reference solution and a wrong answer, submitted and graded."""
    ids = {"ada": store_service.submit("ada", notebook_with(course_template, "reference")),
           "bob": store_service.submit("bob", notebook_with(course_template, "wrong_arithmetic"))}
    answers = store_service.wait_done(list(ids.values()))
    return {learner: answers[sub_id] for learner, sub_id in ids.items()}


def test_reference_solution_gets_full_marks(graded):
    answer = graded["ada"]
    assert answer["status"] == "done" and answer["learner"] == "ada"
    result = answer["result"]
    assert (result["score"], result["max_score"]) == (10, 10)
    assert result["output"] == "All 8 checks passed."  # the notebook's submit cell ran quietly
    assert all(t["status"] == "passed" and t["output"].startswith("Passed: ")
               for t in result["tests"])
    assert answer["seconds"]["total"] >= answer["seconds"]["grading"] > 0
    assert result["execution_time"] > 0


def test_wrong_answer_gets_plain_words_feedback(graded):
    result = graded["bob"]["result"]
    assert result["score"] == 7
    assert failed_tests(result) == expected_failed("wrong_arithmetic")
    values = next(t for t in result["tests"] if t["name"].startswith("values"))
    assert values["output"].startswith("Checked: ")
    assert "\nExpected: state + delta" in values["output"]
    assert "Hint: the values returned are state - delta" in values["output"]
    assert "Traceback" not in json.dumps(result)


def test_gradebook_has_the_same_grades(store_service, graded):
    ids = [graded[name]["id"] for name in ("ada", "bob")]
    store_service.wait_gradebook(ids)
    rows = store_service.export()
    assert float(rows["ada"]["raw_score"]) == 10 and float(rows["bob"]["raw_score"]) == 7
    assert float(rows["bob"]["max_score"]) == 10
    with Gradebook(store_service.gradebook_url()) as gb:
        def auto(cell, learner):
            return gb.find_grade(cell, ASSIGNMENT, ASSIGNMENT, learner).auto_score
        assert auto("test_values", "bob") == 0 and auto("test_rebinding", "bob") == 0
        assert auto("test_values", "ada") == 2 and auto("test_compiled_once", "bob") == 1
        assert not gb.find_grade("test_values", ASSIGNMENT, ASSIGNMENT, "bob").needs_manual_grade
    saved = store_service.course / "submitted" / "bob" / ASSIGNMENT
    assert "_sub = jax.jit" in (saved / f"{ASSIGNMENT}.ipynb").read_text()
    assert (saved / "timestamp.txt").read_text().strip().endswith("UTC")


def test_ids_are_unguessable_and_nothing_lists_submissions(store_service, graded):
    for answer in graded.values():
        assert len(answer["id"]) >= 32
    status, _, body = http("GET", store_service.url + "/api/submissions")
    assert status == 405 and "error" in body
    assert http("GET", store_service.url + "/api/submissions/" + "A" * 32)[0] == 404
    assert http("GET", store_service.url + "/api/submissions/ada")[0] == 404


def _post(store_service, body, content_type="application/json"):
    return http("POST", store_service.url + "/api/submissions", body, content_type)


BAD = {
    "malformed JSON": (b'{"exercise": "update_with_donate", "learner": ', 400, "bad_json"),
    "not an object": (b"[1, 2, 3]", 400, "bad_json"),
    "unknown exercise": ({"exercise": "no_such_exercise", "learner": "eve",
                          "notebook": {"cells": []}}, 400, "unknown_exercise"),
    "missing learner": ({"exercise": ASSIGNMENT, "notebook": {"cells": []}}, 400,
                        "missing_field"),
    "path in learner id": ({"exercise": ASSIGNMENT, "learner": "../eve",
                            "notebook": {"cells": []}}, 400, "bad_learner"),
    "empty learner id": ({"exercise": ASSIGNMENT, "learner": "", "notebook": {"cells": []}},
                         400, "bad_learner"),
    "long learner id": ({"exercise": ASSIGNMENT, "learner": "e" * 65,
                         "notebook": {"cells": []}}, 400, "bad_learner"),
    "numeric learner id": ({"exercise": ASSIGNMENT, "learner": 7, "notebook": {"cells": []}},
                           400, "bad_learner"),
    "notebook as text": ({"exercise": ASSIGNMENT, "learner": "eve", "notebook": "{}"}, 400,
                         "bad_notebook"),
    "oversized": ({"exercise": ASSIGNMENT, "learner": "eve",
                   "notebook": {"cells": [], "padding": "x" * 300_000}}, 413, "too_large"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_requests_are_refused_and_change_nothing(store_service, case):
    body, want_status, want_code = BAD[case]
    before = store_service.settled_rows()
    status, headers, answer = _post(store_service, body)
    assert (status, answer["code"]) == (want_status, want_code), answer
    assert answer["error"] and headers["Content-Type"].startswith("application/json")
    assert store_service.rows() == before


def test_wrong_content_type_is_refused(store_service):
    before = store_service.settled_rows()
    body = json.dumps({"exercise": ASSIGNMENT, "learner": "eve", "notebook": {"cells": []}})
    status, _, answer = _post(store_service, body.encode(), "text/plain")
    assert (status, answer["code"]) == (415, "bad_content_type")
    assert store_service.rows() == before


def test_per_learner_rate_limit(store_service, course_template):
    unattempted = notebook_with(course_template, "unattempted")  # graded without running code
    ids = [store_service.submit("carol", unattempted) for _ in range(5)]
    before = store_service.rows()
    status, headers, answer = _post(store_service, {"exercise": ASSIGNMENT, "learner": "carol",
                                              "notebook": unattempted})
    assert (status, answer["code"]) == (429, "rate_limited")
    assert int(headers["Retry-After"]) > 0
    assert set(store_service.rows()) == set(before)
    assert store_service.submit("dave", unattempted)  # other learners are not affected
    answers = store_service.wait_done(ids, final=("done", "replaced"))
    assert answers[ids[-1]]["status"] == "done"  # the newest is always graded
    for answer in answers.values():
        if answer["status"] == "replaced":  # by a newer one of carol's, sent before grading
            assert answer["replaced_by"] in ids[ids.index(answer["id"]) + 1:]
        else:
            assert answer["result"]["score"] == 0
            assert "not attempted" in answer["result"]["output"]


def test_cors_allows_the_course_site_only(store_service, site_port):
    site = f"http://127.0.0.1:{site_port}"
    for origin, allowed in ((site, True), ("http://evil.example", False)):
        status, headers, _ = http("OPTIONS", store_service.url + "/api/submissions",
                                  headers={"Origin": origin,
                                           "Access-Control-Request-Method": "POST",
                                           "Access-Control-Request-Headers": "content-type"})
        assert status == 204
        assert headers.get("Access-Control-Allow-Origin") == (origin if allowed else None)


def test_the_service_answers_its_own_address_and_limits(store_service):
    """``GET /api/config``: what this service runs with (tests/service/running.py's
    options), without sign-in, and nothing secret (the database URL holds a password)."""
    status, _, config = http("GET", store_service.url + "/api/config")
    assert status == 200
    assert config["address"] == store_service.url and config["prefix"] == "/"
    assert config["auth"] == "none" and config["learner_pattern"] == defaults.LEARNER_PATTERN
    limits = config["limits"]
    assert limits["max_bytes"] == store_service.options["max-bytes"]
    assert limits["rate"] == {"count": 5, "seconds": 3600}  # the options' --rate 5/3600
    assert (limits["timeout_s"], limits["memory_mib"]) == (defaults.SERVICE_TIMEOUT_S,
                                                           defaults.MEMORY_MIB)
    assert set(limits) == {defaults.BY_NAME[n].shown for n in defaults.SERVICE} - {""}
    assert ASSIGNMENT in config["exercises"]
    assert len(config["origins"]) == len(set(config["origins"])), config["origins"]  # each once
    text = json.dumps(config)
    assert str(store_service.db) not in text and "password" not in text


def test_an_answer_before_the_body_says_the_connection_closes(store_service):
    """A refusal sent before the body is read ends the connection (tornado drops the
    unread body): the answer says ``Connection: close``, so a keep-alive client such as
    the hub's proxy never sends the next request into a socket the service closed."""
    conn = HTTPConnection("127.0.0.1", store_service.port, timeout=60)
    try:
        conn.putrequest("POST", "/api/submissions")
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(10 ** 10))  # refused from the headers alone
        conn.endheaders(b'{"exercise": ')
        reply = conn.getresponse()
        assert reply.status == 413 and json.loads(reply.read())["code"] == "too_large"
        assert reply.getheader("Connection") == "close"
    finally:
        conn.close()
    # an answer after the whole body keeps the connection for the next request
    conn = HTTPConnection("127.0.0.1", store_service.port, timeout=60)
    try:
        conn.request("POST", "/api/submissions", b"{}", {"Content-Type": "application/json"})
        reply = conn.getresponse()
        assert reply.status == 400 and reply.getheader("Connection") != "close"
        reply.read()
        conn.request("GET", "/api/health")
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_a_body_far_over_the_limit_is_read_and_answered(store_service):
    """80 times the limit (the hub's proxy turned a connection cut mid-upload into its own
    503 page): read to the end, answered 413 in JSON, the connection kept."""
    conn = HTTPConnection("127.0.0.1", store_service.port, timeout=120)
    try:
        conn.request("POST", "/api/submissions", b" " * (20 * 2**20),
                     {"Content-Type": "application/json"})
        reply = conn.getresponse()
        assert reply.status == 413 and reply.getheader("Connection") != "close"
        assert json.loads(reply.read())["code"] == "too_large"
        conn.request("GET", "/api/health")
        assert conn.getresponse().status == 200
    finally:
        conn.close()


def test_standing_gives_the_recorded_grade_and_refuses_bad_input(store_service, graded):
    url = f"{store_service.url}/api/standing?exercise={ASSIGNMENT}"
    status, _, ada = http("GET", url + "&learner=ada")
    assert status == 200 and ada["rule"] == defaults.RECORDED, ada
    assert ada["recorded"]["score"] == 10 and ada["recorded"]["id"] == graded["ada"]["id"], ada
    assert ada["latest"]["id"] == graded["ada"]["id"] and ada["latest"]["submitted_at"].endswith("+00:00")
    status, _, nobody = http("GET", url + "&learner=nobody")
    assert status == 200 and nobody["recorded"] is None and nobody["latest"] is None
    assert http("GET", url)[2]["code"] == "bad_learner"
    status, _, body = http("GET", f"{store_service.url}/api/standing?exercise=nope&learner=ada")
    assert status == 400 and body["code"] == "unknown_exercise", body


def test_a_held_poll_answers_when_the_submission_is_graded(store_service, course_template):
    """``?wait=`` holds the answer while the submission is queued and graded (about 2 s
    here), so one request gets the result; a done one is answered whatever ``wait`` says."""
    sub_id = store_service.submit("hal", slow_notebook("reference", 2))
    status, _, body = http("GET", f"{store_service.url}/api/submissions/{sub_id}?wait=30")
    assert status == 200 and body["status"] == "done", body
    assert body["result"]["score"] == 10
    for wait in ("nan", "-5", "soon", "1e309"):
        status, _, again = http("GET", f"{store_service.url}/api/submissions/{sub_id}?wait={wait}")
        assert status == 200 and again["status"] == "done"
