"""Submissions being uploaded, per sender: the memory a learner can make the service hold.

A submission's body is kept in the service's memory while it arrives (up to
``GRADER_MAX_BYTES``) and while it is parsed and stored, so a sender who opens many
uploads and sends them slowly would hold that much each until ``GRADER_BODY_TIMEOUT``.
Each sender (the signed-in learner, else the client's address, unless the service is told
that addresses are shared: ``--max-per-client 0``) has at most
``GRADER_MAX_UPLOADS`` such uploads at once; the body of one more is read and dropped as
it comes, holding no memory, and answered 429 ``uploads_busy`` at its end, so its client
reads the refusal rather than a reset connection (which the hub's proxy turns into its
own error page). What one sender holds is thus at most ``GRADER_MAX_UPLOADS`` x
``GRADER_MAX_BYTES`` of bodies; the connections of the refused ones are bounded where
they are opened (the hub's proxy and its ``grader.sock``, per learner).
"""


class Uploads:
    """Senders' uploads in progress in this API process (one event loop: no locks)."""

    def __init__(self):
        self._held = {}  # sender (str) -> uploads of theirs holding a body now

    def take(self, sender, cap):
        """Whether ``sender`` (str) may hold one more upload (``cap`` at once, 0: no cap);
        if so it is counted until :meth:`give_back`."""
        if cap and self._held.get(sender, 0) >= cap:
            return False
        self._held[sender] = self._held.get(sender, 0) + 1
        return True

    def give_back(self, sender):
        """One upload of ``sender`` ended (answered, or its connection closed)."""
        left = self._held.get(sender, 0) - 1
        if left > 0:
            self._held[sender] = left
        else:
            self._held.pop(sender, None)

    def held(self, sender):
        """How many uploads ``sender`` holds now (int)."""
        return self._held.get(sender, 0)


def busy(cap):
    """The words of the 429 for one upload over ``cap`` (int)."""
    return (f"{cap} submissions of yours are still being sent to the grading service; "
            f"wait for them to arrive (or stop them), then send this one again")
