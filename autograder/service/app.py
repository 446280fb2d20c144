"""The HTTP API of the grading service (see ``autograder/SERVICE.md``).

``POST /api/submissions`` stores a submission and answers its id;
``GET /api/submissions/<id>`` answers its status and, when done, its result.
Requests are checked before anything is stored: size, JSON, exercise, learner
id, rate limit. Every answer is JSON, errors included (``{"error", "code"}``).
"""
import json
import re
import time
from dataclasses import dataclass, field

import tornado.web

from autograder import submission

LEARNER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
SUBMISSION_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")


@dataclass
class Settings:
    """What the API enforces; see ``python -m autograder.service --help``."""

    max_bytes: int = 5 * 2**20
    rate_count: int = 10
    rate_seconds: float = 60.0
    max_queue: int = 1000
    origins: tuple = field(default_factory=tuple)
    exercises: tuple = submission.EXERCISES


class Refused(tornado.web.HTTPError):
    """A 4xx/5xx with a plain-words message and a stable code for clients."""

    def __init__(self, status, code, message, headers=None):
        super().__init__(status, reason=None)
        self.code, self.message, self.headers = code, message, headers or {}


class Base(tornado.web.RequestHandler):
    @property
    def store(self):
        return self.application.settings["store"]

    @property
    def workers(self):
        return self.application.settings["workers"]

    @property
    def settings_(self):
        return self.application.settings["api"]

    def set_default_headers(self):
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")
        origin = self.request.headers.get("Origin")
        if origin and origin in self.settings_.origins:
            self.set_header("Access-Control-Allow-Origin", origin)
            self.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
            self.set_header("Access-Control-Allow-Headers", "Content-Type")
            self.set_header("Access-Control-Max-Age", "600")
        self.set_header("Vary", "Origin")

    def options(self, *_):
        self.set_status(204)
        self.finish()

    def send(self, status, data):
        self.set_status(status)
        self.finish(json.dumps(data))

    def write_error(self, status_code, **kwargs):
        exc = kwargs.get("exc_info", (None, None))[1]
        if isinstance(exc, Refused):
            for name, value in exc.headers.items():
                self.set_header(name, value)
            body = {"error": exc.message, "code": exc.code}
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


@tornado.web.stream_request_body
class Submissions(Base):
    """``POST /api/submissions``: check, store (committed), queue, answer the id."""

    def prepare(self):
        self._chunks, self._size = [], 0
        if self.request.method != "POST":
            return
        limit = self.settings_.max_bytes
        # Bodies up to 4x the limit are read and dropped so clients see the 413
        # (not a reset connection); anything bigger is cut off by tornado.
        self.request.connection.set_max_body_size(4 * limit + 65536)
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > 4 * limit + 65536:
            raise self._too_big(int(length))

    def data_received(self, chunk):
        self._size += len(chunk)
        if self._size <= self.settings_.max_bytes:
            self._chunks.append(chunk)

    def _too_big(self, size):
        return Refused(413, "too_large", f"the request is {size} bytes; the limit is "
                       f"{self.settings_.max_bytes} bytes (clear the notebook's outputs and retry)")

    def post(self):
        s = self.settings_
        if self._size > s.max_bytes:
            raise self._too_big(self._size)
        ctype = self.request.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            raise Refused(415, "bad_content_type", "send the submission as JSON "
                          "(Content-Type: application/json)")
        try:
            body = json.loads(b"".join(self._chunks))
        except ValueError as exc:
            raise Refused(400, "bad_json", f"the request body is not valid JSON ({exc})")
        if not isinstance(body, dict):
            raise Refused(400, "bad_json", "the request body must be a JSON object with "
                          "exercise, learner and notebook")
        missing = [k for k in ("exercise", "learner", "notebook") if k not in body]
        if missing:
            raise Refused(400, "missing_field", f"missing field(s): {', '.join(missing)}")
        exercise, learner, notebook = body["exercise"], body["learner"], body["notebook"]
        if not isinstance(exercise, str) or exercise not in s.exercises:
            raise Refused(400, "unknown_exercise", f"unknown exercise {exercise!r}; "
                          f"known: {', '.join(s.exercises)}")
        if not isinstance(learner, str) or not LEARNER.match(learner):
            raise Refused(400, "bad_learner", "the learner id must be 1-64 characters: "
                          "letters, digits and . _ @ - (starting with a letter or digit)")
        if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
            raise Refused(400, "bad_notebook", "notebook must be the notebook file's JSON "
                          "object (with a \"cells\" list)")
        now = time.time()
        count, oldest = self.store.count_since(learner, now - s.rate_seconds)
        if count >= s.rate_count:
            wait = max(1, int(oldest + s.rate_seconds - now + 1))
            raise Refused(429, "rate_limited", f"{learner} has sent {count} submissions in "
                          f"the last {s.rate_seconds:g} s (the limit); try again in {wait} s",
                          {"Retry-After": str(wait)})
        if self.store.queued() >= s.max_queue:
            raise Refused(503, "queue_full", "the grading queue is full; try again in a minute",
                          {"Retry-After": "60"})
        sub_id, _ = self.store.add(learner, exercise, json.dumps(notebook).encode(), now)
        self.workers.notify()
        self.set_header("Location", f"/api/submissions/{sub_id}")
        self.send(202, {"id": sub_id, "status": "queued"})


class Submission(Base):
    """``GET /api/submissions/<id>``: the submission's status and result."""

    def get(self, sub_id):
        row = self.store.get(sub_id) if SUBMISSION_ID.match(sub_id) else None
        if row is None:
            raise Refused(404, "not_found", "no submission with this id")
        self.send(200, describe(row))


def describe(row):
    """The public view of one submission (only its holder knows the id)."""
    data = {"id": row["id"], "exercise": row["exercise"], "learner": row["learner"],
            "status": row["status"], "submitted_at": _iso(row["submitted_at"]),
            "result": row["result"] if row["status"] == "done" else None}
    if row["status"] == "queued":
        data["queue_position"] = row["queue_position"]
    if row["status"] == "done":
        data["seconds"] = {
            "waiting": round(row["started_at"] - row["submitted_at"], 3),
            "grading": round(row["finished_at"] - row["started_at"], 3),
            "total": round(row["finished_at"] - row["submitted_at"], 3)}
    return data


def _iso(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}Z"


class Health(Base):
    def get(self):
        self.send(200, {"ok": True, "exercises": list(self.settings_.exercises),
                        "waiting": self.store.queued(), "max_bytes": self.settings_.max_bytes})


class NotFound(Base):
    def prepare(self):
        if self.request.method != "OPTIONS":
            raise Refused(404, "not_found", f"no such resource: {self.request.path}")


def make_app(store, workers, settings):
    return tornado.web.Application([
        (r"/api/submissions/?", Submissions),
        (r"/api/submissions/([^/]+)", Submission),
        (r"/api/health", Health),
        (r".*", NotFound),
    ], default_handler_class=NotFound, store=store, workers=workers, api=settings)
