"""Thirty learners submit within seconds of each other through the real hub: every
submission is accepted (limits are per signed-in learner, not per proxy address)
and graded, each as the learner who sent it."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.grading.helpers import SAMPLES, released_notebook, with_answer
from tests.hub.running import Signed


def test_thirty_learners_submit_at_once_and_all_are_graded(hub, class_of_30):
    course = Path(hub.env["GRADER_COURSE"])
    right = with_answer(released_notebook(course), (SAMPLES / "reference.py").read_text())
    wrong = with_answer(released_notebook(course), (SAMPLES / "no_donation.py").read_text())
    with ThreadPoolExecutor(10) as pool:
        learners = list(pool.map(lambda a: Signed(hub, a), class_of_30))
        replies = list(pool.map(lambda pair: pair[1].grader(
            "POST", "api/submissions", json={"exercise": "update_with_donate",
                                             "notebook": right if pair[0] % 2 else wrong}),
            enumerate(learners)))
    assert [r.status_code for r in replies] == [202] * 30, [r.text[:200] for r in replies
                                                             if r.status_code != 202]
    with ThreadPoolExecutor(10) as pool:
        done = list(pool.map(lambda pair: pair[0].wait_done(pair[1].json()["id"]),
                             zip(learners, replies)))
    assert [d["learner"] for d in done] == [a.name for a in class_of_30]
    scores = [d["result"]["score"] for d in done]
    assert scores[1::2] == [10] * 15 and all(s < 10 for s in scores[::2]), scores
