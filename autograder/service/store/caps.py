"""Which cap a submission meets, and what its sender reads then: pure functions over
the counts the store read (:meth:`autograder.service.store.Store.admit`) and the
queue's pace (the API's refusals). Nothing here reads a clock or a database."""
from dataclasses import dataclass

from autograder import defaults


class CapReached(Exception):
    """A submission the queue will not take; ``kind`` is ``rate``, ``quota``, ``learner``,
    ``client`` or ``queue``; ``count`` is what was counted against the limit (submissions,
    or stored bytes for ``quota``) and ``oldest`` the time of the oldest counted
    submission (UNIX seconds, for ``rate``)."""

    def __init__(self, kind, count, limit, oldest=None):
        super().__init__(f"{kind}: {count} >= {limit}")
        self.kind, self.count, self.limit, self.oldest = kind, count, limit, oldest


@dataclass
class Caps:
    """Admission limits; 0 disables a cap."""

    rate_count: int = defaults.RATE_COUNT
    rate_seconds: float = defaults.RATE_SECONDS
    per_learner: int = defaults.MAX_PER_LEARNER
    per_client: int = defaults.MAX_PER_CLIENT
    max_queue: int = defaults.MAX_QUEUE
    learner_bytes: int = defaults.LEARNER_BYTES  # stored notebook bytes per learner


def learner_cap(caps, size, recent=0, oldest=None, stored=0):
    """The :class:`CapReached` a learner meets before storing ``size`` more bytes, or None.

    ``recent``: their submissions in the last ``caps.rate_seconds`` (``oldest``: the
    first one's UNIX seconds); ``stored``: the bytes their stored notebooks take. The
    rate is checked first, then the quota (this notebook included)."""
    if caps.rate_count and recent >= caps.rate_count:
        return CapReached("rate", recent, caps.rate_count, oldest)
    if caps.learner_bytes and stored + size > caps.learner_bytes:
        return CapReached("quota", stored, caps.learner_bytes)
    return None


def queue_cap(caps, learner=0, client=0, queue=0):
    """The first :class:`CapReached` among the waiting caps (per learner, per client, in
    all), or None. The counts are queued submissions (ints), the new one not among them."""
    for kind, count, limit in (("learner", learner, caps.per_learner),
                               ("client", client, caps.per_client),
                               ("queue", queue, caps.max_queue)):
        if limit and count >= limit:
            return CapReached(kind, count, limit)
    return None


@dataclass(frozen=True)
class Refusal:
    """What a refused sender reads: HTTP ``status``, a stable ``code``, the ``message``
    and ``retry_after`` (whole seconds for the Retry-After header, or None: none sent)."""

    status: int
    code: str
    message: str
    retry_after: int | None = None


def waits_on_queue(cap):
    """True when :func:`refusal` needs the queue's length and pace for ``cap``."""
    return cap.kind not in ("rate", "quota")


def refusal(cap, caps, learner, signed_in, now, waiting=None, wait=None):
    """The :class:`Refusal` for ``cap`` (a :class:`CapReached`) sent by ``learner``.

    ``signed_in``: the cap on senders counts learners (the hub), else addresses.
    ``now``: UNIX seconds. ``waiting``: submissions queued or running, and ``wait``: the
    seconds the whole queue takes at the current pace (None: no worker to ask), both
    read only when :func:`waits_on_queue`. A rate refusal waits until the oldest counted
    submission leaves the window; a full queue's, until the queue clears."""
    if cap.kind == "rate":
        wait = max(1, int(cap.oldest + caps.rate_seconds - now + 1))
        return Refusal(429, "rate_limited", f"{learner} has sent {cap.count} submissions in "
                       f"the last {caps.rate_seconds:g} s (the limit); try again in {wait} s",
                       wait)
    if cap.kind == "quota":
        return Refusal(413, "over_quota", f"{learner}'s submissions take {cap.count} bytes "
                       f"of the {cap.limit} a learner may store; this one does not fit: ask "
                       "your instructor")
    # The capped submissions are spread through the queue: the honest wait for them is
    # the time the whole queue takes.
    retry = wait or 60
    if cap.kind == "learner":
        return Refusal(429, "learner_queue_full", f"{learner} already has {cap.count} "
                       f"submissions waiting (the limit is {cap.limit}); they should be "
                       f"graded in {wait_words(wait)}: send more after that", retry)
    if cap.kind == "client":
        sender = (learner, "learner") if signed_in else ("this address", "address")
        return Refusal(429, "client_queue_full", f"{cap.count} submissions from {sender[0]} "
                       f"are waiting (the limit is {cap.limit} per {sender[1]}); they should "
                       f"be graded in {wait_words(wait)}: send more after that", retry)
    return Refusal(503, "queue_full", f"the grading queue is full ({waiting} submissions "
                   f"waiting); at the current pace it clears in {wait_words(wait)}: "
                   "try again then", retry)


def wait_words(seconds):
    """``seconds`` (int, or None when no worker is running) in words."""
    if seconds is None:
        return "an unknown time (no grading worker is running right now)"
    return f"about {seconds} s" if seconds < 120 else f"about {round(seconds / 60)} min"
