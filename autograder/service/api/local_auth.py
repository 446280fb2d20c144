"""Who is asking under ``make serve``: its one learner, holding the key it printed.

``make serve`` is one person on one machine without sign-in, but any program on
that machine can reach the grading service on loopback. So ``scripts/serve.py``
starts the service with ``--auth local``, the learner it serves
(``$GRADER_LEARNER``, else the operating-system user) and a random key
(``$GRADER_TOKEN``, new at every start; in the environment only, never on a
command line or in ``course-local.json``). The key reaches the learner's pages
in the site URL make serve prints (``?grader_token=``, kept in the site's
localStorage) and the notebooks' submit cell in JupyterLab's kernels' environment.

A request carrying ``Authorization: token <key>`` is that learner; one without it
is nobody, and gets nothing of theirs (see :class:`autograder.service.api.handler.Base`).
The learner never comes from the request: a ``learner`` field or argument is
ignored, or refused where it names someone else, as under the hub.
"""
import getpass
import hmac
import re

from autograder import defaults
from autograder.service.api.auth import Person

KEY_MIN_CHARS = 16  # a key shorter than this is guessable; make serve's has 32


class LocalIdentity:
    """The one learner of ``make serve``, for requests that hold its key.

    ``learner``: an id of :data:`autograder.defaults.LEARNER_PATTERN`; ``key``: the
    secret text (at least :data:`KEY_MIN_CHARS` characters). Raises ValueError for
    either out of form."""

    kind = "local"
    prefix = "/"
    refusal = ("this page or notebook does not hold the key of the running make serve: open "
               "the course site from the address make serve printed last (it carries the key)")

    def __init__(self, learner, key):
        if not isinstance(learner, str) or not re.fullmatch(defaults.LEARNER_PATTERN, learner):
            raise ValueError(f"the learner id {learner!r} is not of the form the service accepts")
        if not key or len(key) < KEY_MIN_CHARS:
            raise ValueError(f"the key must have at least {KEY_MIN_CHARS} characters")
        self.learner, self._key = learner, key.encode()

    @classmethod
    def from_environment(cls):
        """The identity ``$GRADER_LEARNER`` (else the operating-system user) and
        ``$GRADER_TOKEN`` say, as ``scripts/serve.py`` sets them."""
        return cls(defaults.setting("GRADER_LEARNER") or getpass.getuser(),
                   defaults.setting("GRADER_TOKEN"))

    async def person(self, handler):
        """The learner when ``handler``'s request carries the key, else None."""
        scheme, _, given = handler.request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "token" or not hmac.compare_digest(given.strip().encode(), self._key):
            return None
        return Person(self.learner, instructor=False)

    def sign_in_url(self, next_path):
        return None  # nowhere to sign in: the key comes in the printed URL

    def handlers(self):
        return []

    def app_settings(self):
        return {}
