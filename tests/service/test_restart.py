"""The service killed (SIGKILL) with submissions queued, then restarted: all graded once."""
import signal
import time

from tests.grading.helpers import EXPECTED
from tests.service.running import WAIT
from tests.service.submissions import expected_failed, failed_tests, small_notebook

# One submission per learner: a learner's second one for the same exercise, sent
# while the first still waits, would replace it (newest wins; test_abuse.py).
PLAN = [("kim", "reference"), ("lee", "wrong_arithmetic"), ("max", "no_donation"),
        ("ned", "fails_empty"), ("oda", "reference"), ("pia", "wrong_dtype"),
        ("rex", "jit_inside"), ("sam", "reference")]


def test_sigkill_with_queued_submissions_loses_nothing(new_service):
    service = new_service(jobs=1, rate="10/3600").start()
    ids = [service.submit(learner, small_notebook(sample)) for learner, sample in PLAN]

    deadline = time.monotonic() + WAIT
    while not any(r["status"] == "done" for r in service.rows().values()):
        assert time.monotonic() < deadline, service.log.read_text()[-3000:]
        time.sleep(0.05)
    service.stop(signal.SIGKILL)
    assert service.proc.returncode == -signal.SIGKILL
    before = service.rows()
    assert any(r["status"] == "queued" for r in before.values()), "nothing was left queued"
    done_before = {i for i, r in before.items() if r["status"] == "done"}

    service.start()  # same database, same gradebook
    answers = service.wait_done(ids)
    rows = service.rows()
    for sub_id, (learner, sample) in zip(ids, PLAN):
        assert answers[sub_id]["learner"] == learner
        assert answers[sub_id]["result"]["score"] == EXPECTED[sample]["score"], sample
        assert failed_tests(answers[sub_id]["result"]) == expected_failed(sample)
        assert rows[sub_id]["graded"] == 1  # one result recorded per submission
        if sub_id in done_before:
            assert rows[sub_id]["attempts"] == 1  # a finished grading is never redone

    service.wait_gradebook(ids)
    newest = {}
    for _, (learner, sample) in zip(ids, PLAN):
        newest[learner] = sample  # PLAN order is submission order
    exported = service.export()
    assert {k: float(exported[k]["raw_score"]) for k in newest} == {
        k: float(EXPECTED[s]["score"]) for k, s in newest.items()}
