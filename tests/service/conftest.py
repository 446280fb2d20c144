"""A real grading service for the tests: a subprocess on a free port, real SQLite.

Each :class:`Service` gets its own database and its own copy of a freshly
released nbgrader course (so its gradebook starts empty), and its own sandbox
slots (uids), so it never kills another grader's processes on this machine.
"""
import csv
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, nbgrader, nbgrader_env
from tests.grading.helpers import ASSIGNMENT, EXPECTED, SAMPLES, released_notebook, with_answer

WAIT = float(os.environ.get("SERVICE_TEST_WAIT", "600"))  # give-up time, not a timing assertion


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def notebook_with(course, sample):
    """The released notebook with ``samples/<sample>.py`` as its answer."""
    release = released_notebook(course)
    if sample == "unattempted":
        return release
    return with_answer(release, (SAMPLES / f"{sample}.py").read_text())


def small_notebook(sample):
    """A one-cell notebook holding a sample answer (small and quick to grade)."""
    return {"cells": [{"cell_type": "code", "id": "answer", "metadata": {}, "outputs": [],
                       "execution_count": None,
                       "source": (SAMPLES / f"{sample}.py").read_text()}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def failed_tests(result):
    from autograder.grade import hidden_tests
    names = {title: name for name, title, _ in hidden_tests(ASSIGNMENT)}
    return {names[t["name"]] for t in result["tests"] if t["status"] == "failed"}


def expected_failed(sample):
    from autograder.grade import hidden_tests
    want = EXPECTED[sample]["failed"]
    return {n for n, _, _ in hidden_tests(ASSIGNMENT)} if want == "all" else set(want)


class Service:
    """One ``python -m autograder.service`` process and its files."""

    def __init__(self, root, course, site_port=None, **options):
        self.root, self.course = Path(root), Path(course)
        self.db = self.root / "grading.db"
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
        env = {k: v for k, v in nbgrader_env().items()
               if not k.startswith("GRADER_") and k not in ("PORT", "HOST")}
        if self.site_port:
            env["PORT"] = str(self.site_port)
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log,
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
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def submit(self, learner, notebook, exercise=ASSIGNMENT):
        status, _, body = http("POST", self.url + "/api/submissions",
                               {"exercise": exercise, "learner": learner, "notebook": notebook})
        assert status == 202, (status, body)
        return body["id"]

    def get(self, sub_id):
        status, _, body = http("GET", f"{self.url}/api/submissions/{sub_id}")
        assert status == 200, (status, body)
        return body

    def wait_done(self, ids):
        """``{id: answer}`` once every id is done (fails with the log after WAIT s)."""
        done, deadline = {}, time.monotonic() + WAIT
        while len(done) < len(ids):
            for sub_id in ids:
                if sub_id not in done:
                    body = self.get(sub_id)
                    if body["status"] == "done":
                        done[sub_id] = body
            if time.monotonic() > deadline:
                pytest.fail(f"{len(ids) - len(done)} submission(s) not graded:\n"
                            + self.log.read_text()[-3000:])
            time.sleep(0.3)
        return done

    def rows(self):
        with sqlite3.connect(self.db) as db:
            db.row_factory = sqlite3.Row
            return {r["id"]: dict(r) for r in db.execute(
                "SELECT id, learner, status, attempts, graded, gradebook, seq, "
                "submitted_at FROM submissions")}

    def wait_gradebook(self, ids):
        """Wait until the service has mirrored ``ids`` into the gradebook."""
        deadline = time.monotonic() + WAIT
        while any(self.rows()[i]["gradebook"] is None for i in ids):
            if time.monotonic() > deadline:
                pytest.fail("gradebook not updated:\n" + self.log.read_text()[-3000:])
            time.sleep(0.3)

    def export(self):
        """``{learner: row}`` of ``nbgrader export`` run in the service's course."""
        (self.course / "grades.csv").unlink(missing_ok=True)
        nbgrader(self.course, "export")
        with open(self.course / "grades.csv") as handle:
            return {r["student_id"]: r for r in csv.DictReader(handle)
                    if r["assignment"] == ASSIGNMENT}


@pytest.fixture(scope="session")
def course_template(tmp_path_factory):
    """A freshly released course: an empty gradebook that knows the graded cells."""
    course = tmp_path_factory.mktemp("service-course")
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", course)  # as in exercises/
    shutil.copytree(REPO / "exercises" / "source" / ASSIGNMENT, course / "source" / ASSIGNMENT)
    nbgrader(course, "generate_assignment", ASSIGNMENT)
    return course


@pytest.fixture
def new_service(course_template, tmp_path_factory):
    """Factory: ``new_service(**options)`` -> an unstarted :class:`Service`."""
    made = []

    def make(**options):
        root = tmp_path_factory.mktemp("service")
        course = root / "course"
        shutil.copytree(course_template, course)
        made.append(Service(root, course, **options))
        return made[-1]

    yield make
    for service in made:
        service.stop()


@pytest.fixture(scope="session")
def site_port():
    return free_port()


@pytest.fixture(scope="session")
def service(course_template, tmp_path_factory, site_port):
    """The shared service (2 jobs, 5 submissions per learner per hour, 256 KiB limit)."""
    root = tmp_path_factory.mktemp("service")
    course = root / "course"
    shutil.copytree(course_template, course)
    svc = Service(root, course, site_port=site_port).start()
    yield svc
    svc.stop()
