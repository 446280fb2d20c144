"""Answers held until a submission is graded: ``GET api/submissions/<id>?wait=S``.

A page that asks "is it graded yet?" every second or two costs the service a request
and a few store reads each time: 300 learners waiting before a deadline are about 150
requests a second, answered on the cores that grade. A held request instead costs
nothing while it waits; one store read every :data:`CHECK_S` seconds, for every held
request at once, says which of their submissions left the queue and wakes those.
The grading itself may happen in another process (``autograder.service.commands.worker``), so
the store, not this process's grading threads, is what is watched.
"""
import asyncio

from autograder.service.store.rows import WAITING  # not yet answered with a result

CHECK_S = 0.5  # how often the held requests' submissions are looked up, seconds
MAX_WAIT_S = 30.0  # longest hold a client may ask for, seconds (the proxy's idle limit is far above)


def wait_seconds(text):
    """The hold a ``wait`` query value asks for, in seconds: 0 (answer at once) when
    absent, not a number, or not positive; at most :data:`MAX_WAIT_S`."""
    try:
        seconds = float(text) if text else 0.0
    except ValueError:
        return 0.0
    return min(seconds, MAX_WAIT_S) if seconds > 0 else 0.0  # NaN is not > 0


class Waiters:
    """The requests held in this API process, by submission id (one event loop)."""

    def __init__(self, statuses, run):
        """``statuses(ids)`` -> ``{id: status}`` (the store's, on a thread: ``run(call,
        *args)`` awaits it off the event loop)."""
        self._statuses, self._run = statuses, run
        self._held = {}  # submission id -> set of futures, resolved when it leaves WAITING
        self._holders = {}  # who asked (a learner's name) -> requests of theirs held now
        self._watch = None

    async def until_graded(self, sub_id, seconds, holder="", cap=0):
        """Return when ``sub_id`` is no longer queued or running, or after ``seconds``:
        True. With ``cap``, when ``holder`` (who asks: str) has that many requests held
        already, return False at once: one learner's client holds at most ``cap``
        connections here (and through the proxy), however many it opens."""
        if cap and self._holders.get(holder, 0) >= cap:
            return False
        self._holders[holder] = self._holders.get(holder, 0) + 1
        future = asyncio.get_running_loop().create_future()
        self._held.setdefault(sub_id, set()).add(future)
        if self._watch is None or self._watch.done():
            self._watch = asyncio.ensure_future(self._watch_store())
        try:
            await asyncio.wait_for(future, seconds)
        except TimeoutError:
            pass
        finally:
            held = self._held.get(sub_id, set())
            held.discard(future)
            if not held:
                self._held.pop(sub_id, None)
            self._holders[holder] -= 1
            if not self._holders[holder]:
                del self._holders[holder]
        return True

    async def _watch_store(self):
        """While requests are held: every CHECK_S, one read of their submissions' states."""
        while self._held:
            await asyncio.sleep(CHECK_S)
            ids = list(self._held)
            try:
                states = await self._run(self._statuses, ids)
            except Exception:  # the store is away: the holds time out and are answered
                continue
            for sub_id in ids:
                if states.get(sub_id) not in WAITING:
                    for future in self._held.pop(sub_id, ()):
                        if not future.done():
                            future.set_result(None)
