"""50 submissions sent at once by 50 learners: all graded, none lost or mixed up.

They all come from this machine's address, as a class behind one proxy or NAT
would: the service runs with ``--max-per-client 0`` (no cap per address), as
SERVICE.md says to in that case.
"""
from concurrent.futures import ThreadPoolExecutor

from tests.grading.helpers import EXPECTED
from tests.service.submissions import expected_failed, failed_tests, small_notebook

SAMPLES = ["reference", "no_donation", "wrong_arithmetic", "fails_empty", "wrong_dtype",
           "jit_inside", "both_donated", "delta_donated", "misnamed", "syntax_error"]
LEARNERS = [f"load-{i:02d}" for i in range(50)]


def test_fifty_submissions_at_once(new_service):
    service = new_service(**{"max-per-client": 0}).start()
    plan = [(learner, SAMPLES[i % len(SAMPLES)]) for i, learner in enumerate(LEARNERS)]
    with ThreadPoolExecutor(max_workers=len(plan)) as pool:
        ids = list(pool.map(lambda p: service.submit(p[0], small_notebook(p[1])), plan))
    assert len(set(ids)) == 50
    answers = service.wait_done(ids)

    for sub_id, (learner, sample) in zip(ids, plan):
        answer = answers[sub_id]
        assert answer["learner"] == learner
        assert answer["result"]["score"] == EXPECTED[sample]["score"], (learner, sample)
        assert failed_tests(answer["result"]) == expected_failed(sample), (learner, sample)
    rows = service.rows()
    assert all(rows[i]["status"] == "done" and rows[i]["graded"] == 1 for i in ids)

    # The gradebook holds each learner's grade.
    service.wait_gradebook(ids)
    newest = {}
    for sub_id, (learner, sample) in zip(ids, plan):
        if learner not in newest or rows[sub_id]["seq"] > rows[newest[learner][0]]["seq"]:
            newest[learner] = (sub_id, sample)
    exported = service.export()
    assert {learner: float(exported[learner]["raw_score"]) for learner in LEARNERS} == {
        learner: float(EXPECTED[sample]["score"]) for learner, (_, sample) in newest.items()}
    rows = service.rows()
    assert all(rows[i]["gradebook"] == "recorded" for i in ids)  # one each, none superseded
