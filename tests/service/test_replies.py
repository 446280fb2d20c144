"""The learner's reply the service makes from a stored result, in-process: every record
in the service's golden files (tests/grading/golden/service-*.json), read back as the
store reads a row (:meth:`autograder.service.store.rows.Submission.of`), gives the golden
reply byte for byte, without grading anything again (the capture itself:
tests/grading/test_golden.py)."""
import json

import pytest

from autograder.service.api.handler import submission_view
from autograder.service.store.rows import Submission
from tests.grading.golden import GOLDEN

FILES = sorted(p.name for p in GOLDEN.glob("service-*.json"))


@pytest.mark.parametrize("name", FILES)
def test_a_stored_record_gives_the_recorded_reply(name):
    golden = json.loads((GOLDEN / name).read_text())
    assert golden, f"{name} holds no submission"
    for key, entry in golden.items():
        reply = entry["reply"]
        row = Submission.of({"id": reply["id"], "exercise": reply["exercise"],
                             "learner": reply["learner"], "status": "done", "submitted_at": 0.0,
                             "started_at": 0.0, "finished_at": 0.0,
                             "result": json.dumps(entry["stored"])})
        got = json.dumps(submission_view(row), indent=1, sort_keys=True)
        assert got == json.dumps(reply, indent=1, sort_keys=True), key
