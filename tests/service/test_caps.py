"""Which cap a submission meets and what its sender reads then, in-process: the pure
decisions of :mod:`autograder.service.store.caps` over counts, as the store and the API
hand them over (the store's own reading of the counts: tests/service/test_store.py)."""
import pytest

from autograder.service.store.caps import Caps, learner_cap, queue_cap, refusal, waits_on_queue

CAPS = Caps(rate_count=3, rate_seconds=60.0, per_learner=2, per_client=4, max_queue=10,
            learner_bytes=1000)


def test_the_rate_cap_counts_the_window_and_keeps_its_oldest():
    assert learner_cap(CAPS, 10, recent=2, oldest=5.0) is None
    cap = learner_cap(CAPS, 10, recent=3, oldest=5.0)
    assert (cap.kind, cap.count, cap.limit, cap.oldest) == ("rate", 3, 3, 5.0)


def test_the_quota_counts_this_notebook_too():
    assert learner_cap(CAPS, 400, stored=600) is None  # exactly full fits
    cap = learner_cap(CAPS, 401, stored=600)
    assert (cap.kind, cap.count, cap.limit) == ("quota", 600, 1000)
    assert learner_cap(CAPS, 401, recent=3, oldest=1.0, stored=600).kind == "rate"  # first


def test_a_cap_of_zero_is_off():
    off = Caps(rate_count=0, per_learner=0, per_client=0, max_queue=0, learner_bytes=0)
    assert learner_cap(off, 10**9, recent=10**6, stored=10**9) is None
    assert queue_cap(off, learner=10**6, client=10**6, queue=10**6) is None


@pytest.mark.parametrize("counts, kind", [
    ({"learner": 1, "client": 3, "queue": 9}, None),
    ({"learner": 2, "client": 4, "queue": 10}, "learner"),  # the learner's is named first
    ({"learner": 1, "client": 4, "queue": 10}, "client"),
    ({"learner": 1, "client": 3, "queue": 10}, "queue"),
])
def test_the_waiting_caps_are_met_at_their_limit_in_order(counts, kind):
    cap = queue_cap(CAPS, **counts)
    assert (cap and cap.kind) == kind
    if cap:
        assert cap.count == counts[kind] and cap.limit == getattr(
            CAPS, {"learner": "per_learner", "client": "per_client", "queue": "max_queue"}[kind])


@pytest.mark.parametrize("now, wait", [(1030.2, 30), (1030.0, 31), (1059.5, 1), (1100.0, 1)])
def test_a_rate_refusal_waits_until_the_oldest_leaves_the_window(now, wait):
    """The oldest counted submission (at 1000 s) leaves the 60 s window at 1060 s."""
    said = refusal(learner_cap(CAPS, 1, recent=3, oldest=1000.0), CAPS, "ada", True, now)
    assert (said.status, said.code, said.retry_after) == (429, "rate_limited", wait)
    assert said.message == (f"ada has sent 3 submissions in the last 60 s (the limit); "
                            f"try again in {wait} s")


def test_a_full_quota_has_no_wait_to_offer():
    cap = learner_cap(CAPS, 500, stored=600)
    said = refusal(cap, CAPS, "ada", True, 0.0)
    assert not waits_on_queue(cap)
    assert (said.status, said.code, said.retry_after) == (413, "over_quota", None)
    assert "600 bytes of the 1000" in said.message


@pytest.mark.parametrize("wait, words, retry", [
    (90, "about 90 s", 90), (300, "about 5 min", 300),
    (None, "an unknown time (no grading worker is running right now)", 60)])
def test_a_full_queue_waits_as_long_as_the_queue_takes(wait, words, retry):
    cap = queue_cap(CAPS, learner=2)
    said = refusal(cap, CAPS, "ada", True, 0.0, waiting=7, wait=wait)
    assert waits_on_queue(cap)
    assert (said.status, said.code, said.retry_after) == (429, "learner_queue_full", retry)
    assert said.message == (f"ada already has 2 submissions waiting (the limit is 2); they "
                            f"should be graded in {words}: send more after that")
    full = refusal(queue_cap(CAPS, queue=10), CAPS, "ada", True, 0.0, waiting=12, wait=wait)
    assert (full.status, full.code, full.retry_after) == (503, "queue_full", retry)
    assert full.message.startswith("the grading queue is full (12 submissions waiting)")


@pytest.mark.parametrize("signed_in, sender", [(True, "from ada are waiting (the limit is 4 "
                                                      "per learner)"),
                                               (False, "from this address are waiting (the "
                                                       "limit is 4 per address)")])
def test_the_sender_cap_names_a_learner_under_the_hub_else_an_address(signed_in, sender):
    said = refusal(queue_cap(CAPS, client=4), CAPS, "ada", signed_in, 0.0, waiting=5, wait=30)
    assert said.code == "client_queue_full" and f"4 submissions {sender}" in said.message
