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
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import REPO, nbgrader, nbgrader_env, release
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
    from autograder.judge import hidden_tests
    names = {title: name for name, title, _ in hidden_tests(ASSIGNMENT)}
    return {names[t["name"]] for t in result["tests"] if t["status"] == "failed"}


def expected_failed(sample):
    from autograder.judge import hidden_tests
    want = EXPECTED[sample]["failed"]
    return {n for n, _, _ in hidden_tests(ASSIGNMENT)} if want == "all" else set(want)


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


def stop_process(proc, sig=signal.SIGTERM):
    """Send ``sig`` to a running ``proc`` and wait for it (SIGKILL after 30 s)."""
    if proc and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
        env = {k: v for k, v in nbgrader_env().items()
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


@pytest.fixture(scope="session")
def course_template(released_course):
    """A freshly released course: an empty gradebook that knows the graded cells (the
    session's released course; each service copies it)."""
    return released_course


@pytest.fixture
def new_service(course_template, tmp_path_factory):
    """Factory: ``new_service(**options)`` -> an unstarted :class:`Service`."""
    made = []

    def make(**options):
        root = tmp_path_factory.mktemp("service")
        course = root / "course"
        shutil.copytree(course_template, course)
        if options.get("db"):
            release_into(course, options["db"])
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


@pytest.fixture(scope="session")
def postgres():
    """A throwaway PostgreSQL server for the session (see ``tests/service/postgres.py``)."""
    from tests.service.postgres import Cluster
    cluster = Cluster(free_port()).init()
    yield cluster
    cluster.remove()


@pytest.fixture
def pg_url(postgres):
    """Factory: a new empty database on the test cluster; its ``postgresql://`` URL."""
    def make():
        name = f"grading_{random.randrange(16**8):08x}"
        postgres._run("createdb", "-h", "127.0.0.1", "-p", str(postgres.port), name)
        return postgres.url.rsplit("/", 1)[0] + "/" + name
    return make


def release_into(course, db):
    """Record the released exercise in the gradebook at ``db`` when it is not the course's file.

    With PostgreSQL the gradebook lives in the service's database; the instructor
    releases into it with ``nbgrader generate_assignment --db <url>``.
    """
    option = gradebook_option(db)
    if option:
        release(course, ASSIGNMENT, *option)


@pytest.fixture(scope="session", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_service(request, course_template, tmp_path_factory, site_port):
    """The shared service's settings on each database: SQLite (the ``service`` fixture
    itself) and PostgreSQL (a second service on a database of the test cluster)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("service")
        return
    cluster = request.getfixturevalue("postgres")
    root = tmp_path_factory.mktemp("service-pg")
    course = root / "course"
    shutil.copytree(course_template, course)
    db = cluster.url
    release_into(course, db)
    svc = Service(root, course, site_port=site_port, db=db).start()
    yield svc
    svc.stop()


def slow_notebook(sample, seconds):
    """:func:`small_notebook` whose answer first sleeps ``seconds`` (a grading one can
    catch in the middle)."""
    notebook = small_notebook(sample)
    notebook["cells"][0]["source"] = f"import time\ntime.sleep({seconds})\n" + \
        notebook["cells"][0]["source"]
    return notebook


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


@pytest.fixture
def worker():
    """Factory: ``worker(service, jobs, lease)`` -> an unstarted :class:`Worker` (stopped after)."""
    made = []

    def make(service, jobs=1, lease=None):
        made.append(Worker(service, jobs, lease))
        return made[-1]

    yield make
    for one in made:
        one.stop()
