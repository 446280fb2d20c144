"""Held polls (autograder/service/api/waiting.py), in-process: what a ``wait`` value asks
for, and that a held request wakes when the store says its submission left the queue,
or when its hold runs out."""
import asyncio
import time

import pytest

from autograder.service.api import waiting


@pytest.mark.parametrize("text,seconds", [("", 0), ("15", 15), ("0.5", 0.5), ("999", 30),
                                          ("-1", 0), ("0", 0), ("nan", 0), ("inf", 30),
                                          ("soon", 0)])
def test_a_wait_value_asks_for_a_hold_of_at_most_thirty_seconds(text, seconds):
    assert waiting.wait_seconds(text) == seconds


def _waiters(states, reads):
    def statuses(ids):
        reads.append(sorted(ids))
        return {i: states[i] for i in ids if i in states}

    async def run(call, *args):
        return call(*args)
    return waiting.Waiters(statuses, run)


def test_held_requests_wake_when_their_submission_is_graded(monkeypatch):
    monkeypatch.setattr(waiting, "CHECK_S", 0.01)
    states, reads = {"a": "queued", "b": "running"}, []
    waiters = _waiters(states, reads)

    async def scenario():
        a = asyncio.ensure_future(waiters.until_graded("a", 5))
        b = asyncio.ensure_future(waiters.until_graded("b", 5))
        await asyncio.sleep(0.05)
        assert not a.done() and not b.done()
        states["a"] = "done"
        await asyncio.wait_for(a, 1)
        assert not b.done()
        states["b"] = "error"  # any state out of the queue answers
        await asyncio.wait_for(b, 1)
        await asyncio.sleep(0.05)

    started = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - started < 2
    assert ["a", "b"] in reads  # one read for every held request at once
    assert waiters._held == {}  # and none left behind, so the watch stops


def test_a_hold_runs_out_and_an_unknown_id_wakes_at_once(monkeypatch):
    monkeypatch.setattr(waiting, "CHECK_S", 0.01)
    waiters = _waiters({"slow": "queued"}, [])

    async def scenario():
        started = time.monotonic()
        await waiters.until_graded("slow", 0.2)
        assert 0.2 <= time.monotonic() - started < 1
        await asyncio.wait_for(waiters.until_graded("gone", 5), 1)

    asyncio.run(scenario())


def test_a_learner_holds_at_most_her_cap_and_others_are_held_beside_her(monkeypatch):
    """eve asks for 50 holds at once: 4 (the cap) are held, the other 46 answered at once
    (False: not held); ann's poll is still held, and wakes when hers is graded."""
    monkeypatch.setattr(waiting, "CHECK_S", 0.01)
    states = {"eve1": "running", "ann1": "queued"}
    waiters = _waiters(states, [])

    async def scenario():
        eve = [asyncio.ensure_future(waiters.until_graded("eve1", 5, "eve", 4)) for _ in range(50)]
        await asyncio.sleep(0.05)
        answered = [f for f in eve if f.done()]
        assert len(answered) == 46 and not any(f.result() for f in answered)
        ann = asyncio.ensure_future(waiters.until_graded("ann1", 5, "ann", 4))
        await asyncio.sleep(0.05)
        assert not ann.done()
        states["ann1"] = "done"
        assert await asyncio.wait_for(ann, 1) is True
        states["eve1"] = "done"
        assert sum(await asyncio.wait_for(asyncio.gather(*eve), 1)) == 4
        assert waiters._holders == {}  # each hold given back: she may be held again

    asyncio.run(scenario())
