"""A real grading service for the tests: one ``python -m autograder.service`` process on
a free port with real SQLite (or a PostgreSQL URL), its workers, and the HTTP client
the tests talk to it with.

Each :class:`Service` gets its own database and its own copy of a freshly released
nbgrader course (so its gradebook starts empty), and its own sandbox slots (uids), so
it never kills another grader's processes on this machine. The fixtures that start
them are in tests/service/conftest.py.
"""
import csv
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.course import REPO, nbgrader, nbgrader_env, release
from tests.grading.helpers import ASSIGNMENT
from tests.processes import free_port, stop_process

WAIT = float(os.environ.get("SERVICE_TEST_WAIT", "600"))  # give-up time, not a timing assertion


def http(method, url, body=None, content_type="application/json", headers=None):
    """``(status, headers, JSON or None)`` of one request; never raises on 4xx/5xx."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None and content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            status, head, raw = reply.status, dict(reply.headers), reply.read()
    except urllib.error.HTTPError as err:
        status, head, raw = err.code, dict(err.headers), err.read()
    try:
        return status, head, json.loads(raw) if raw else None
    except ValueError:
        return status, head, raw


def read_rows(db):
    """``{id: row}`` of the submissions table at ``db`` (a path or URL), read directly."""
    from sqlalchemy import create_engine, text

    from autograder.service.store import database_url
    engine = create_engine(database_url(db))
    try:
        with engine.connect() as conn:
            return {r["id"]: dict(r) for r in conn.execute(text(
                "SELECT id, learner, status, attempts, graded, gradebook, seq, submitted_at, "
                "started_at, finished_at, replaced_by, lease_owner FROM submissions")).mappings()}
    finally:
        engine.dispose()


def gradebook_option(db):
    """nbgrader's ``--db`` for a service database that holds the gradebook (PostgreSQL)."""
    from autograder.service.store import database_url, url_text
    url = database_url(db)
    return [] if url.get_backend_name() == "sqlite" else ["--db", url_text(url)]


class Service:
    """One ``python -m autograder.service`` process and its files."""

    def __init__(self, root, course, site_port=None, db=None, env=None, cwd=REPO, **options):
        self.root, self.course, self.cwd = Path(root), Path(course), Path(cwd)  # cwd: a checkout
        self.env = env or {}  # set in the service's environment (e.g. a PATH without the venv)
        self.db = db or self.root / "grading.db"  # a path (SQLite) or a postgresql:// URL
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.options = {"jobs": 2, "rate": "5/3600", "max-bytes": 262144,
                        "slot-base": random.randrange(2000, 20000, 16), **options}
        self.site_port = site_port
        self.proc = None
        self.log = self.root / "service.log"

    def start(self):
        argv = [sys.executable, "-m", "autograder.service", "--host", "127.0.0.1",
                "--port", str(self.port), "--db", str(self.db), "--course", str(self.course)]
        for key, value in self.options.items():
            argv += [f"--{key}", str(value)]
        # No --origins: the service allows the course site by default, on the PORT
        # make serve hands it (README: PORT=9000 make serve), as for a learner.
        env = {k: v for k, v in nbgrader_env(self.cwd).items()
               if not k.startswith("GRADER_") and k not in ("PORT", "HOST")}
        if self.site_port:
            env["PORT"] = str(self.site_port)
        env.update(self.env)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, env=env, stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited:\n{self.log.read_text()[-3000:]}")
            try:
                if http("GET", self.url + "/api/health")[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"the service did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self, sig=signal.SIGTERM):
        stop_process(self.proc, sig)

    def submit(self, learner, notebook, exercise=ASSIGNMENT):
        status, _, body = http("POST", self.url + "/api/submissions",
                               {"exercise": exercise, "learner": learner, "notebook": notebook})
        assert status == 202, (status, body)
        return body["id"]

    def get(self, sub_id):
        status, _, body = http("GET", f"{self.url}/api/submissions/{sub_id}")
        assert status == 200, (status, body)
        return body

    def wait_done(self, ids, final=("done",)):
        """``{id: answer}`` once every id is done (fails with the log after WAIT s).

        ``final=("done", "replaced")`` also accepts submissions a newer one replaced.
        """
        done, deadline = {}, time.monotonic() + WAIT
        while len(done) < len(ids):
            for sub_id in ids:
                if sub_id not in done:
                    body = self.get(sub_id)
                    if body["status"] in final:
                        done[sub_id] = body
            if time.monotonic() > deadline:
                pytest.fail(f"{len(ids) - len(done)} submission(s) not graded:\n"
                            + self.log.read_text()[-3000:])
            time.sleep(0.3)
        return done

    def rows(self):
        return read_rows(self.db)

    def settled_rows(self):
        """:meth:`rows` once the service is idle: nothing queued or being graded, every
        result mirrored into the gradebook. A test that compares rows before and after a
        request starts from here, so submissions an earlier test left in flight (on a
        shared service) do not change them in between."""
        deadline = time.monotonic() + WAIT
        while True:
            rows = self.rows()
            if not any(r["status"] in ("queued", "running")
                       or (r["status"] == "done" and r["gradebook"] is None) for r in rows.values()):
                return rows
            if time.monotonic() > deadline:
                pytest.fail("the service did not settle:\n" + self.log.read_text()[-3000:])
            time.sleep(0.3)

    def wait_gradebook(self, ids):
        """Wait until the service has mirrored ``ids`` into the gradebook."""
        deadline = time.monotonic() + WAIT
        while any(self.rows()[i]["gradebook"] is None for i in ids):
            if time.monotonic() > deadline:
                pytest.fail("gradebook not updated:\n" + self.log.read_text()[-3000:])
            time.sleep(0.3)

    def gradebook_url(self):
        """The SQLAlchemy URL of the service's gradebook."""
        option = gradebook_option(self.db)
        return option[1] if option else f"sqlite:///{self.course / 'gradebook.db'}"

    def export(self):
        """``{learner: row}`` of ``nbgrader export`` run in the service's course."""
        (self.course / "grades.csv").unlink(missing_ok=True)
        # nbgrader() runs in exercises/, as the README does: name the file, or it lands there
        nbgrader(self.course, "export", f"--to={self.course / 'grades.csv'}",
                 *gradebook_option(self.db))
        with open(self.course / "grades.csv") as handle:
            return {r["student_id"]: r for r in csv.DictReader(handle)
                    if r["assignment"] == ASSIGNMENT}


def release_into(course, db):
    """Record the released exercise in the gradebook at ``db`` when it is not the course's file.

    With PostgreSQL the gradebook lives in the service's database; the instructor
    releases into it with ``nbgrader generate_assignment --db <url>``.
    """
    option = gradebook_option(db)
    if option:
        release(course, ASSIGNMENT, *option)


class Worker:
    """One ``python -m autograder.service.worker`` process on a service's database."""

    def __init__(self, service, jobs=1, lease=None):
        self.service, self.jobs, self.lease = service, jobs, lease
        self.slot_base = random.randrange(20000, 40000, 16)
        self.log = service.root / f"worker-{self.slot_base}.log"
        self.proc = None

    @property
    def name(self):
        """The worker's process name in the store (``host:pid``)."""
        return f"{socket.gethostname()}:{self.proc.pid}"

    def start(self):
        argv = [sys.executable, "-m", "autograder.service.worker", "--db", str(self.service.db),
                "--course", str(self.service.course), "--jobs", str(self.jobs),
                "--slot-base", str(self.slot_base)]
        argv += ["--lease", str(self.lease)] if self.lease else []
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, cwd=REPO, env=nbgrader_env(), stdout=log,
                                         stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # ready once it has written its heartbeat
            if self.proc.poll() is not None:
                raise RuntimeError(f"the worker exited:\n{self.log.read_text()[-3000:]}")
            if f"grading worker {self.name}" in self.log.read_text():
                return self
            time.sleep(0.2)
        raise RuntimeError(f"the worker did not start:\n{self.log.read_text()[-3000:]}")

    def stop(self, sig=signal.SIGTERM):
        stop_process(self.proc, sig)
