"""What one learner's requests may cost the grading service: the bytes they store
(no more than they sent, and no more than their quota), against the real service."""
import json

from sqlalchemy import create_engine, text

from autograder.service.store import database_url
from tests.grading.helpers import ASSIGNMENT
from tests.service.running import http
from tests.service.submissions import small_notebook

DEPTH = 60  # nested lists, under the service's 64 levels


def _nested_request(size):
    """A submission of about ``size`` bytes whose notebook carries deeply nested lists
    (what an indented dump blows up: each level a line, indented by its depth)."""
    notebook = small_notebook("reference")
    one = "[" * DEPTH + "0" + "]" * DEPTH
    head = json.dumps({"exercise": ASSIGNMENT, "learner": "eve", "notebook": notebook})
    filler = ",".join([one] * ((size - len(head)) // (len(one) + 1)))
    return head[:-2] + ', "metadata": {"x": [' + filler + "]}}}"


def _stored_bytes(db):
    engine = create_engine(database_url(db))
    try:
        with engine.connect() as conn:
            return dict(conn.execute(text(
                "SELECT learner, SUM(LENGTH(notebook)) FROM submissions GROUP BY learner")).all())
    finally:
        engine.dispose()


def test_a_submission_is_stored_no_larger_than_it_was_sent(new_service):
    service = new_service(jobs=0, **{"max-bytes": 2**20}).start()
    body = _nested_request(2**20 - 4096)
    status, _, answer = http("POST", service.url + "/api/submissions", body.encode())
    assert status == 202, answer
    assert _stored_bytes(service.db)["eve"] <= len(body)


def test_a_learner_past_their_quota_is_refused_with_a_reason(new_service):
    service = new_service(jobs=0, **{"learner-bytes": 120_000}).start()
    big = small_notebook("reference")
    big["metadata"]["padding"] = "x" * 50_000
    service.submit("eve", big)
    service.submit("eve", big)
    status, _, answer = http("POST", service.url + "/api/submissions",
                             {"exercise": ASSIGNMENT, "learner": "eve", "notebook": big})
    assert (status, answer["code"]) == (413, "over_quota"), answer
    assert "bytes" in answer["error"]
    service.submit("ann", big)  # another learner's room is their own
    assert _stored_bytes(service.db)["eve"] <= 120_000
