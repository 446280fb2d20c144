"""The HTTP API of the grading service (see ``autograder/SERVICE.md``).

``POST /api/submissions`` stores a submission and answers its id;
``GET /api/submissions/<id>`` answers its status and, when done, its result;
``GET /api/config`` answers the service's own address and limits (no secrets,
no sign-in needed).
Requests are checked before anything is stored: size, then (under the hub, where
the learner is known unparsed) the learner's rate and stored bytes, then JSON (and
its nesting depth, parsed off the event loop), exercise, learner, then the queue's
caps (rate, stored bytes, newest-wins replacement, waiting per learner, per client
address, in all), all in one database transaction. Every answer is JSON, errors included
(``{"error", "code"}``); a database that cannot be reached or written answers
503 ``store_unavailable`` and nothing is stored half-way.

Database calls run in a thread pool, so a slow or absent database never
stalls the event loop (other requests, time limits) while it is waited for.

With ``Settings.identity`` set (``make hub``: an
:class:`autograder.service.api.auth.HubIdentity`), every request but the health
check must come from a signed-in hub user, who is the learner; a ``learner``
field in the body is ignored, and a learner reads only their own submissions
(:mod:`autograder.service.api.classroom` adds the listings and the class views).
"""
import asyncio
import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import tornado.web
from sqlalchemy.exc import SQLAlchemyError

from autograder import defaults
from autograder.exercises import current, names as exercise_names
from autograder.service.api import classroom, health, lti_routes, uploads, waiting
from autograder.service.api.handler import Base, Refused, echo, late_penalty, log, submission_view
from autograder.service.gradebook import out_of_date, recorded
from autograder.service.gradebook.lateness import Lateness
from autograder.service.store import CapReached, Caps, caps, process_name, storage_problem
from autograder.service.store.rows import WAITING, Role, Status

LEARNER = re.compile(defaults.LEARNER_PATTERN)
SUBMISSION_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_DEPTH = 64  # JSON nesting levels; a notebook needs about 6
# Bodies over the limit are read to their end and dropped, up to this size, so the
# client gets the 413 and not a reset connection (which the hub's proxy turns into
# its own 503 page); a bigger one is refused from its Content-Length and cut off.
DRAIN_BYTES = 256 * 2**20
HELD_WORDS = ("waiting for the instructor, who is changing this exercise's checks: it is "
              "graded as soon as they are done, and nothing is lost meanwhile")
POINTS_CHECK_S = 5.0  # how often the health check compares the gradebook's points


@dataclass
class Settings:
    """What the API enforces, made from its options (``python -m autograder.service --help``,
    :func:`autograder.service.__main__.settings_of`)."""

    max_bytes: int  # largest request body, bytes
    caps: Caps
    timeout: float  # the workers' per-submission limit (s), for wait estimates
    address: str  # where this service listens, http://host:port (GET /api/config)
    recorded: str  # which graded submission is a grade (recorded.py)
    limits: dict  # the settings GET /api/config shows (autograder.options.shown)
    origins: tuple = ()
    max_held: int = defaults.MAX_HELD  # a learner's polls held at once (waiting.py)
    max_uploads: int = defaults.MAX_UPLOADS  # a learner's submissions being sent at once (uploads.py)
    identity: object = None  # auth.HubIdentity, local_auth.LocalIdentity; None: the request says
    prefix: str = "/"  # where the routes live (a hub service's JUPYTERHUB_SERVICE_PREFIX)

    @property
    def exercises(self):
        """The registered exercises (tuple of names) as the registry says now: one
        registered and released while the service runs is taken at once."""
        return exercise_names()


def is_learner_id(value):
    """True for a learner id the service accepts (``defaults.LEARNER_PATTERN``, all of
    ``value``: ``re``'s ``$`` alone would let a trailing newline through, unlike the
    pages' ``RegExp``)."""
    return isinstance(value, str) and LEARNER.fullmatch(value) is not None


def _depth_exceeds(value, limit):
    """Whether ``value`` (parsed JSON) nests deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children
                         if isinstance(child, (dict, list)))
    return False


def _unknown_exercise(exercise, known):
    return Refused(400, "unknown_exercise", f"unknown exercise {echo(exercise)}; "
                   f"known: {', '.join(known)}")


def _bad_learner():
    return Refused(400, "bad_learner", "the learner id must be 1-64 characters: "
                   "letters, digits and . _ @ - (starting with a letter or digit)")


def _not_json(name):
    """``json.loads``'s hook for NaN, Infinity and -Infinity, which JSON does not have."""
    raise ValueError(f"{name} is not a JSON value")


def _too_deep():
    return Refused(400, "too_deep", f"the request nests lists or objects more than "
                   f"{MAX_DEPTH} levels deep; a notebook needs fewer than 10")


def _decode(raw):
    """The JSON object ``raw`` (bytes) holds; :class:`Refused` (400) otherwise."""
    try:
        body = json.loads(raw, parse_constant=_not_json)
    except RecursionError:  # not a ValueError: deeper than the decoder's stack
        raise _too_deep() from None
    except ValueError as exc:
        raise Refused(400, "bad_json", f"the request body is not valid JSON ({exc})") from exc
    if _depth_exceeds(body, MAX_DEPTH):
        raise _too_deep()
    if not isinstance(body, dict):
        raise Refused(400, "bad_json", "the request body must be a JSON object with "
                      "exercise, learner and notebook")
    return body


def _stored(notebook):
    """The bytes stored for ``notebook`` (parsed JSON): compact, non-ASCII kept as UTF-8,
    so never much larger than the request that held it (an indented dump of deeply
    nested lists grows with their depth: 5 MiB became 165 MB)."""
    return (json.dumps(notebook, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


@tornado.web.stream_request_body
class SubmissionsHandler(Base):
    """``POST /api/submissions``: check, store (committed), queue, answer the id."""

    _body_read = False  # True once tornado has the whole body (post runs)
    _sender = None  # who holds an upload slot (uploads.py) while this request runs
    _busy = False  # True: over the sender's uploads, the body is dropped as it comes

    async def prepare(self):
        await super().prepare()
        self._body, self._size = bytearray(), 0
        if self.request.method != "POST":
            return
        drain = max(DRAIN_BYTES, self.settings_.max_bytes)
        self.request.connection.set_max_body_size(drain)
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > drain:
            raise self._too_big(int(length))
        # who sends: the signed-in learner, else the client's address, unless addresses are
        # shared (--max-per-client 0: a class behind one proxy or NAT), where it is nobody
        sender = self.client_of() if self.person or self.settings_.caps.per_client else None
        if sender is None:
            return
        if self.application.settings["uploads"].take(sender, self.settings_.max_uploads):
            self._sender = sender
        else:
            self._busy = True

    def data_received(self, chunk):
        self._size += len(chunk)
        if self._size <= self.settings_.max_bytes and not self._busy:
            self._body += chunk

    def _give_back(self):
        if self._sender is not None:
            self.application.settings["uploads"].give_back(self._sender)
            self._sender = None

    def on_connection_close(self):
        self._body = bytearray()  # a client that went away leaves nothing behind
        if not self._body_read:  # else post still holds the body: on_finish gives it back
            self._give_back()

    def on_finish(self):
        self._give_back()

    def finish(self, chunk=None):
        # Answered before the body was read (a refusal in prepare): tornado closes the
        # connection after this answer. Say so, or a keep-alive client (the hub's
        # proxy) sends its next request, another learner's, into the closed socket.
        if not self._body_read and not self._headers_written:
            self.set_header("Connection", "close")
        return super().finish(chunk)

    def _too_big(self, size):
        return Refused(413, "too_large", f"the request is {size} bytes; the limit is "
                       f"{self.settings_.max_bytes} bytes (clear the notebook's outputs and retry)")

    def check_size(self):
        """413 or 415 for a body refused unparsed."""
        if self._size > self.settings_.max_bytes:
            raise self._too_big(self._size)
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise Refused(415, "bad_content_type", "send the submission as JSON "
                          "(Content-Type: application/json)")

    async def parse(self):
        """The request's JSON object (400 otherwise), parsed on a thread of the event
        loop's default pool: a large body never holds up other learners' requests."""
        raw, self._body = bytes(self._body), bytearray()
        return await asyncio.get_running_loop().run_in_executor(None, _decode, raw)

    def learner_of(self, body):
        """Who this submission is for: the one place a request's learner is decided."""
        if self.person:  # under the hub: who signed in, whatever the body says
            return self.person.name
        learner = body.get("learner")
        if not is_learner_id(learner):
            raise _bad_learner()
        return learner

    def client_of(self):
        """Who is sending, for the per-client cap and the turns of the queue: the
        signed-in learner under the hub (every request comes from the proxy's address
        there), else the client's address (never from a header it sends)."""
        if self.person:
            return ("learner:" + self.person.name)[:64]
        return (self.request.remote_ip or "")[:64]

    async def post(self):
        self._body_read = True
        s = self.settings_
        if self._busy:
            raise Refused(429, "uploads_busy", uploads.busy(s.max_uploads), {"Retry-After": "5"})
        self.check_size()
        if self.person:  # a learner at their rate or quota costs no parse
            try:
                await self.db(self.store.room, self.person.name, self._size, s.caps)
            except CapReached as cap:
                raise await self.refused_by(cap, self.person.name) from cap
        body = await self.parse()
        needed = ("exercise", "notebook") if self.person else ("exercise", "learner", "notebook")
        missing = [k for k in needed if k not in body]
        if missing:
            raise Refused(400, "missing_field", f"missing field(s): {', '.join(missing)}")
        exercise, notebook = body["exercise"], body["notebook"]
        if not isinstance(exercise, str) or exercise not in s.exercises:
            raise _unknown_exercise(exercise, s.exercises)
        learner = self.learner_of(body)
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise Refused(400, "bad_notebook", "notebook must be the notebook file's JSON "
                          "object (with a \"cells\" list)")
        # Serialized once, as the file nbgrader keeps in submitted/: the grader loads
        # these bytes and the gradebook mirror writes them unchanged.
        data = await asyncio.get_running_loop().run_in_executor(None, _stored, notebook)
        if len(data) > s.max_bytes:  # numbers can grow when written back (1E2 -> 100.0)
            raise self._too_big(len(data))
        try:
            sub_id, replaced, ahead = await self.db(
                self.store.admit, learner, exercise, data, self.client_of(), s.caps)
        except CapReached as cap:
            raise await self.refused_by(cap, learner) from cap
        if self.grading:
            self.grading.notify()
        wait = await self.wait_estimate(ahead + 1)
        deadlines = self.application.settings["mirror"].deadlines
        try:  # the submission is stored: a gradebook that cannot be read costs the note only
            late = await self.db(deadlines.assess, learner, exercise, time.time(), 0.0)
        except Exception as exc:
            log.warning("no deadline for the reply to %s (%s)", sub_id[:8], exc)
            late = Lateness()
        self.set_header("Location", f"{s.prefix}api/submissions/{sub_id}")
        self.send(202, {"id": sub_id, "status": Status.QUEUED, "learner": learner,
                        "queue_position": ahead + 1,
                        "estimated_wait_seconds": wait, "replaced": replaced,
                        "due": late.due.isoformat() if late.due else None,
                        "late": deadlines.words(late)})

    async def refused_by(self, cap, learner):
        """The :class:`Refused` for a :class:`CapReached` (:func:`.caps.refusal`), with
        an honest wait."""
        waiting = wait = None
        if caps.waits_on_queue(cap):
            waiting = await self.db(self.store.waiting)
            wait = await self.wait_estimate(waiting)
        said = caps.refusal(cap, self.settings_.caps, learner, bool(self.person), time.time(),
                            waiting, wait)
        retry = {} if said.retry_after is None else {"Retry-After": str(said.retry_after)}
        return Refused(said.status, said.code, said.message, retry)

    async def get(self):
        """Under the hub: the signed-in learner's submissions (see classroom)."""
        self._body_read = True
        if self.person is None:
            raise Refused(405, "method_not_allowed", "nothing lists submissions without sign-in")
        lateness = recorded.late_by(self.application.settings["mirror"].deadlines)
        self.send(200, await self.db(classroom.listing, self.store, self.person,
                                     self.get_argument("learner", None), lateness))


class DeadlineHandler(Base):
    """``GET /api/deadline?exercise=E[&learner=L]``: when E is due for the learner (the
    signed-in one under the hub; ``learner`` otherwise, default none: no extension),
    as ISO UTC or null, and what lateness costs, in words."""

    async def get(self):
        exercise = self.get_argument("exercise", "")
        if exercise not in self.settings_.exercises:
            raise _unknown_exercise(exercise, self.settings_.exercises)
        learner = self.person.name if self.person else self.get_argument("learner", "")
        if learner and not is_learner_id(learner):
            raise _bad_learner()
        deadlines = self.application.settings["mirror"].deadlines
        due = await self.db(deadlines.due, exercise, learner)
        self.send(200, {"exercise": exercise, "learner": learner or None,
                        "due": due.isoformat() if due else None,
                        "late_policy": deadlines.policy_words()})


class StandingHandler(Base):
    """``GET /api/standing?exercise=E[&learner=L]``: the learner's recorded grade of E and
    their latest graded submission (recorded.standing), for the exercise page. The learner
    is the signed-in one under the hub; ``learner`` otherwise (make serve's one learner:
    without sign-in an id is taken as given, as for a submission)."""

    async def get(self):
        exercise = self.get_argument("exercise", "")
        if exercise not in self.settings_.exercises:
            raise _unknown_exercise(exercise, self.settings_.exercises)
        learner = self.person.name if self.person else self.get_argument("learner", "")
        if not is_learner_id(learner):
            raise _bad_learner()
        lateness = recorded.late_by(self.application.settings["mirror"].deadlines)

        def read():  # every row: a result a waiting regrade replaces still counts
            rows = [r for r in self.store.submissions(learner) if r.exercise == exercise]
            return recorded.standing(rows, self.settings_.recorded, lateness)
        self.send(200, {"exercise": exercise, "learner": learner, **await self.db(read)})


class SubmissionHandler(Base):
    """``GET /api/submissions/<id>``: the submission's status and result."""

    async def row(self, sub_id):
        """The row of ``sub_id`` if this person may read it (the learner's own, or any for
        an instructor; anyone holding the id without the hub), else 404."""
        row = await self.db(self.store.get, sub_id) if SUBMISSION_ID.match(sub_id) else None
        if row is not None and self.person and not (
                self.person.instructor or row.learner == self.person.name):
            row = None  # someone else's: answered exactly like an unknown id
        if row is None:
            raise Refused(404, "not_found", "no submission with this id")
        return row

    async def get(self, sub_id):
        """With ``?wait=S`` the answer is held while the submission is queued or running,
        up to S seconds (:mod:`autograder.service.api.waiting`): a client then asks again at
        once instead of every second or two. A learner with ``max_held`` polls held
        already gets this one answered at once."""
        row = await self.row(sub_id)
        seconds = waiting.wait_seconds(self.get_query_argument("wait", ""))
        if seconds and row.status in WAITING:
            # held per learner (under the hub every request comes from the proxy's address)
            holder = self.person.name if self.person else self.request.remote_ip
            if await self.application.settings["waiters"].until_graded(
                    row.id, seconds, holder, self.settings_.max_held):
                row = await self.row(sub_id)
        data = submission_view(row)
        if row.status == Status.QUEUED:
            data["estimated_wait_seconds"] = await self.wait_estimate(row.queue_position)
            if await self.db(self.held, row.exercise):
                data["held"] = HELD_WORDS
        if data["result"] is not None:  # what it counts, under the deadlines in force now
            lateness = recorded.late_by(self.application.settings["mirror"].deadlines)
            data["late_penalty"] = await self.db(late_penalty, lateness, row)
        self.send(200, data)


    def held(self, exercise):
        """Whether ``exercise``'s submissions wait for the instructor (hidden tests that
        cannot be loaded, or that changed past what the gradebook holds)."""
        if current.loadable([exercise])[1]:
            return True
        try:
            return bool(self.application.settings["mirror"].unreleased([exercise]))
        except Exception:  # a gradebook that cannot be read costs the note only
            return False


class SubmittedNotebook(SubmissionHandler):
    """``GET /api/submissions/<id>/notebook``: the notebook as it was submitted (every
    submission's, not only the one the gradebook keeps), to whom may read the submission."""

    async def get(self, sub_id):
        row = await self.row(sub_id)
        raw = await self.db(self.store.notebook, row.id)
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.set_header("Content-Disposition",
                        f'attachment; filename="{row.exercise}-{row.learner}-{row.id[:8]}.ipynb"')
        self.finish(raw)


class Health(Base):
    """``GET /api/health``: 200 ``ok`` or 503 with ``problems`` in plain words; and
    ``warnings``, which keep it ok: where the gradebook's points differ from the
    hidden tests', and where recorded grades are out of date (:mod:`.out_of_date`),
    read at most every :data:`POINTS_CHECK_S` seconds."""

    open_to_all = True

    def points_warnings(self):
        """The sentences of :mod:`.out_of_date` that read the gradebook or the hidden tests
        (all but the penalties' one), read at most every :data:`POINTS_CHECK_S` seconds."""
        cache = self.application.settings.setdefault("points_warnings", [0.0, []])
        if time.monotonic() - cache[0] > POINTS_CHECK_S:
            mirror = self.application.settings["mirror"]
            cache[:] = [time.monotonic(), out_of_date.points(mirror, self.settings_.exercises)
                        + out_of_date.versions(self.store, self.settings_.exercises)
                        + out_of_date.unreleased(mirror, self.settings_.exercises)
                        + out_of_date.overrides(mirror)]
        return cache[1]

    async def get(self):
        read = {}  # what health.report is told
        try:  # a write, so a store that cannot be written shows here
            await self.db(self.store.heartbeat, self.application.settings["name"], Role.API)
            read["waiting"] = await self.db(self.store.waiting)
            read["workers"] = await self.db(self.store.workers)
        except SQLAlchemyError as exc:
            read["store_problem"] = storage_problem(exc)
        read["grading_problem"] = self.grading.problem() if self.grading else None
        try:  # the gradebook may live in the same database, away with it
            read["warnings"] = await self.db(self.points_warnings) + await self.db(
                out_of_date.penalties, self.store, self.application.settings["mirror"])
        except SQLAlchemyError as exc:
            read["gradebook_problem"] = storage_problem(exc)
        self.send(*health.report(self.settings_.exercises, self.settings_.max_bytes, **read))


class Config(Base):
    """``GET /api/config``: the address and limits this service runs with.

    Open to all, like the health check: it holds nothing secret (no database URL,
    no token), only what a learner's client may plan around. Under the hub the
    ``address`` is where the proxy reaches the service; learners use ``prefix``.
    """

    open_to_all = True

    def get(self):
        s = self.settings_
        self.send(200, {
            "address": s.address, "prefix": s.prefix,
            "auth": s.identity.kind if s.identity else "none", "recorded": s.recorded,
            "exercises": list(s.exercises), "learner_pattern": defaults.LEARNER_PATTERN,
            "origins": list(s.origins), "limits": s.limits})


class NotFound(Base):
    open_to_all = True

    async def prepare(self):
        if self.request.method != "OPTIONS":
            raise Refused(404, "not_found", f"no such resource: {self.request.path}")


def make_app(store, grading, settings, mirror):
    """The tornado application; ``grading`` (the process's grading threads) is None
    when grading runs elsewhere; ``mirror`` is the nbgrader gradebook the grades are
    mirrored into (read for the class CSV, also by an API-only process)."""
    p, extra, app_settings = settings.prefix, [], {}
    if settings.identity:
        extra = settings.identity.handlers() + classroom.handlers(p)
        app_settings = settings.identity.app_settings()
    pool = ThreadPoolExecutor(8, thread_name_prefix="db")
    waiters = waiting.Waiters(store.statuses, lambda call, *args: asyncio.get_running_loop()
                              .run_in_executor(pool, call, *args))
    return tornado.web.Application([
        (p + r"api/submissions/?", SubmissionsHandler),
        (p + r"api/submissions/([^/]+)", SubmissionHandler),
        (p + r"api/submissions/([^/]+)/notebook", SubmittedNotebook),
        (p + r"api/health", Health),
        (p + r"api/deadline", DeadlineHandler),
        (p + r"api/standing", StandingHandler),
        (p + r"api/config", Config),
        *lti_routes.handlers(p, bool(settings.identity)),
        *extra,
        (r".*", NotFound),
    ], default_handler_class=NotFound, store=store, grading=grading, api=settings, mirror=mirror,
        pool=pool, waiters=waiters, uploads=uploads.Uploads(), name=process_name() + ":api",
        **app_settings)
