"""What every route of the grading service starts from: :class:`Base` (sign-in under
the hub, JSON answers, errors in plain words, the database thread pool),
:class:`Refused` (a refusal a client reads) and :func:`submission_view` (the public
view of one stored :class:`~autograder.service.store.rows.Submission`).
"""
import asyncio
import json
import logging
import math
import time

import tornado.web
from sqlalchemy.exc import SQLAlchemyError

from autograder.service.store import storage_problem, withdrawn
from autograder.service.store.rows import GRADED, REPLACED, Status

ECHO_CHARS = 80  # of a client's value quoted back in an error, at most
log = logging.getLogger("autograder.service")


class Refused(tornado.web.HTTPError):
    """A 4xx/5xx with a plain-words message and a stable code for clients."""

    def __init__(self, status, code, message, headers=None):
        super().__init__(status, reason=None)
        self.code, self.message, self.headers = code, message, headers or {}


class Base(tornado.web.RequestHandler):
    open_to_all = False  # True: answered without sign-in even under the hub

    async def prepare(self):
        """With an identity (the hub's, or make serve's key): who is asking
        (``self.person``), or 403 for nobody and for a dropped learner
        (:mod:`~autograder.service.store.withdrawn`)."""
        identity = self.settings_.identity
        self.person = await identity.person(self) if identity else None
        # a dropped learner's token or cookie may still be good at the hub for a moment
        # (its answers are cached): the drop itself is read on every request
        if self.person and await self.db(withdrawn.kind_of, self.store, self.person.name):
            raise Refused(403, "withdrawn", withdrawn.REFUSAL)
        if identity and self.person is None and not self.open_to_all \
                and self.request.method != "OPTIONS":
            sign_in = identity.sign_in_url(self.request.uri)
            if sign_in and self.request.method == "GET" and \
                    self.request.headers.get("Sec-Fetch-Mode") == "navigate":
                return self.redirect(sign_in)  # a browser
            raise Refused(403, "not_signed_in", identity.refusal)

    @property
    def store(self):
        return self.application.settings["store"]

    @property
    def grading(self):
        """This process's :class:`~autograder.service.grading.GradingThreads` (None: API only)."""
        return self.application.settings["grading"]

    @property
    def settings_(self):
        return self.application.settings["api"]

    async def db(self, call, *args):
        """``call(*args)`` on the database thread pool."""
        pool = self.application.settings["pool"]
        return await asyncio.get_running_loop().run_in_executor(pool, call, *args)

    def set_default_headers(self):
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        origin = self.request.headers.get("Origin")
        if origin and origin in self.settings_.origins:
            self.set_header("Access-Control-Allow-Origin", origin)
            self.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            # Authorization: make serve's pages send its key (local_auth.py)
            self.set_header("Access-Control-Allow-Headers", "Content-Type, Authorization")
            self.set_header("Access-Control-Max-Age", "600")
        self.set_header("Vary", "Origin")

    def options(self, *_):
        self.set_status(204)
        self.finish()

    def send(self, status, data):
        self.set_status(status)
        self.finish(json.dumps(data))

    def log_exception(self, kind, value, tb):
        if isinstance(value, SQLAlchemyError):
            log.warning("%s %s: %s", self.request.method, self.request.path,
                        storage_problem(value))
        else:
            super().log_exception(kind, value, tb)

    def write_error(self, status_code, **kwargs):
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, Refused):
            for name, value in exc.headers.items():
                self.set_header(name, value)
            body = {"error": exc.message, "code": exc.code}
        elif isinstance(exc, SQLAlchemyError):
            self.set_status(503)
            self.set_header("Retry-After", "30")
            body = {"error": "the grading service cannot use its database right now; "
                             "nothing was stored; try again in 30 s", "code": "store_unavailable"}
        elif status_code == 405:
            body = {"error": f"{self.request.method} is not allowed on {self.request.path}",
                    "code": "method_not_allowed"}
        elif status_code == 404:
            body = {"error": f"no such resource: {self.request.path}", "code": "not_found"}
        elif status_code < 500:
            body = {"error": self._reason, "code": "bad_request"}
        else:
            body = {"error": "the grading service had an internal error", "code": "internal"}
        self.finish(json.dumps(body))

    async def wait_estimate(self, position):
        """Seconds until a submission at queue ``position`` (1 = next) is graded, or None.

        From the mean grading time of recent results (else the time limit) and
        the grading slots of the workers alive now; None when no worker is.
        """
        seconds, slots = await self.db(self.store.pace)
        if not slots:
            return None
        per = seconds if seconds is not None else self.settings_.timeout
        return math.ceil(math.ceil(position / slots) * per + per)


def echo(value):
    """``repr(value)``, cut to :data:`ECHO_CHARS`: no answer repeats an unbounded part of
    a request."""
    text = repr(value)
    return text if len(text) <= ECHO_CHARS else text[:ECHO_CHARS] + f"... ({len(text)} characters)"


def late_penalty(lateness, row):
    """The points lateness takes from graded ``row`` under ``lateness``
    (:func:`~autograder.service.gradebook.recorded.late_by`), None when on time; a gradebook
    that cannot be read costs the note only (None, logged)."""
    try:
        late = lateness(row)
    except Exception as exc:
        log.warning("no deadline for the answer on %s (%s)", row.id[:8], exc)
        return None
    return late.penalty if late.seconds else None


def submission_view(sub):
    """The public view of one :class:`~autograder.service.store.rows.Submission` (a JSON-ready
    dict; only its holder knows the id). Times missing from a done one count as 0."""
    done = sub.status in GRADED and sub.result is not None
    data = {"id": sub.id, "exercise": sub.exercise, "learner": sub.learner,
            "status": sub.status, "submitted_at": _iso(sub.submitted_at),
            "result": sub.result.to_gradescope() if done else None}
    if sub.status == Status.QUEUED:
        data["queue_position"] = sub.queue_position
    if sub.status in REPLACED:
        data["replaced_by"] = sub.replaced_by
    if sub.regrade:
        data["regrade"] = True  # an instructor's regrade of an earlier submission
    if sub.regrade_of:  # what it regrades: old -> new, with the points of each
        data["regrade_of"] = sub.regrade_of
    if sub.status == Status.DONE:
        started, finished = (0 if t is None else t for t in (sub.started_at, sub.finished_at))
        data["seconds"] = {
            "waiting": round(started - sub.submitted_at, 3),
            "grading": round(finished - started, 3),
            "total": round(finished - sub.submitted_at, 3)}
    return data


def _iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}Z"
