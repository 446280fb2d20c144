"""A real course hub for the tests: ``make hub`` as the README says, on free ports
(:func:`running_hub`), and a person signed in to it (:class:`Signed`) reading what
the grading service and the class CSV answer through it. The hub runs as root only
(PAM sign-in, each learner's server as that learner's system user: tests/hub/accounts.py).
"""
from __future__ import annotations

import contextlib
import csv
import io
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
import requests

from autograder.learner_submit import HOLD_S
from autograder.service.api.waiting import WAITING
from tests.course import REPO, nbgrader_env
from tests.hub.accounts import Account

WAIT_S = 600  # give-up time for servers, not a timing assertion


# Privileged ports Chromium opens: it refuses a list of "unsafe" ones (ERR_UNSAFE_PORT:
# 601, 636, 989, 990, 993, 995 among those below 1024), none between these two.
BROWSABLE = range(700, 980)


def worker_ports() -> range:
    """This pytest-xdist worker's share of :data:`BROWSABLE` (all of it without xdist):
    hubs of two workers start at once, and a port both found free before either
    listened would send one hub's requests to the other's proxy."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count <= 1:
        return BROWSABLE
    share = len(BROWSABLE) // count
    start = BROWSABLE.start + int(worker[2:]) % count * share
    return range(start, start + share)


def free_privileged_port() -> int:
    """A free port below 1024, as ``make hub`` uses by default (no learner can listen
    there), one Chromium will open (:data:`BROWSABLE`), from this worker's share."""
    ports = worker_ports()
    for port in random.sample(ports, len(ports)):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below 1024")


def free_privileged_ports(count: int, taken=()) -> list[int]:
    """``count`` distinct free ports as :func:`free_privileged_port` finds them, none in
    ``taken`` (ports a caller already gave out: each is free until its server listens,
    so two separate picks can return the same one)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_privileged_port()
        if port not in ports and port not in taken:
            ports.append(port)
    return ports


class Hub:
    """``make hub`` in its own process group; ``start()``, ``stop()``, ``url(path)``.
    ``repo``: the checkout it runs from; ``make``: its command line there."""

    def __init__(self, root: Path, env: dict, repo: Path = REPO, make=("make", "hub")):
        self.root, self.env, self.proc = root, env, None
        self.repo, self.make = repo, list(make)
        self.public = f"http://{env.get('HUB_DOMAIN', 'localhost')}:{env['PORT']}"  # as make hub
        self.log_path = root / "hub.log"

    def url(self, path: str) -> str:
        return self.public + path

    def start(self):
        """``make hub``, until it says its URL (only once the course site and the grading
        service answer through the proxy, as a user waits for it)."""
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.make, cwd=self.repo, env=self.env, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + WAIT_S
        said = f"==> the course hub is running: {self.public}/"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"make hub exited ({self.proc.returncode}):\n{self.log()}")
            if said in self.log_path.read_text(errors="replace")[offset:]:
                return
            time.sleep(0.5)
        pytest.fail(f"make hub did not say its URL:\n{self.log()}")

    def stop(self):
        """SIGTERM to make and the hub (as Ctrl-C would); wait until all of it is gone."""
        if self.proc is None:
            return
        group = self.proc.pid
        try:
            os.killpg(group, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (self.proc.poll() is None or _alive(group)):
            time.sleep(0.5)  # (poll reaps make, whose zombie would keep the group alive)
        if _alive(group):
            os.killpg(group, signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        self._end_strays()

    def _end_strays(self):
        """A hub that died (or gave up starting) leaves its proxy and services running,
        each in a session of its own: end this hub's, by pid."""
        ours = {"HUB_STATE": self.env["HUB_STATE"]}
        services = {f"http://127.0.0.1:{self.env[k]}" for k in ("GRADER_PORT", "SITE_PORT")}
        for proc in psutil.process_iter():
            try:
                env = proc.environ()
            except psutil.Error:
                continue
            if env.get("HUB_STATE") == ours["HUB_STATE"] or env.get("JUPYTERHUB_SERVICE_URL") in services:
                try:
                    proc.kill()
                except psutil.Error:
                    pass

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
        return True
    except ProcessLookupError:
        return False


@contextlib.contextmanager
def running_hub(accounts, released_course, root, repo=REPO, make=("make", "hub"), **extra):
    """``make hub`` with free ports, this run's groups and a fresh course in ``root``;
    ``extra`` sets more of its environment (``GRADER_JOBS="0"``: an API-only grader);
    ``repo`` and ``make``: as :class:`Hub` takes them."""
    _, groups = accounts
    course = root / "course"
    shutil.copytree(released_course, course)
    given = {int(value) for key, value in extra.items()
             if key.endswith("_PORT") and str(value).isdigit()}
    public, hub_api, proxy_api, grader, site = map(str, free_privileged_ports(5, given))
    env = dict(nbgrader_env(repo), PORT=public, HUB_API_PORT=hub_api, PROXY_API_PORT=proxy_api,
               GRADER_PORT=grader, SITE_PORT=site, HUB_STATE=str(root / "state"),
               GRADER_DB=str(root / "grading.db"), GRADER_COURSE=str(course),
               # two slots, as make hub's default gives on two cores (at most 8 apart)
               GRADER_JOBS="2", GRADER_SLOT_BASE=str(random.randrange(2000, 60000, 8)),
               HUB_LEARNERS_GROUP=groups["learners"], HUB_INSTRUCTORS_GROUP=groups["instructors"],
               HUB_HOME_MIB="128")  # each learner's home a file system (small: a class of 30)
    env.update(extra)
    hub = Hub(root, env, repo, make)
    try:
        hub.start()
        yield hub
    finally:
        hub.stop()


class Signed:
    """A signed-in ``requests`` session plus the hub token the course site hands its pages."""

    def __init__(self, hub: Hub, account: Account):
        self.hub, self.name = hub, account.name
        self.session = requests.Session()
        page = self.session.get(hub.url("/hub/login"))
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
        done = self.session.post(hub.url("/hub/login?next=/services/course/book/intro.html"),
                                 data={"username": account.name, "password": account.password,
                                       "_xsrf": xsrf})
        assert done.ok and done.url.endswith("/services/course/book/intro.html"), done.url
        cookie = next(c.value for c in self.session.cookies
                      if c.name == "_xsrf" and c.path.startswith("/services/course"))
        reply = self.session.get(hub.url("/services/course/api/session"),
                                 headers={"X-XSRFToken": cookie, "Sec-Fetch-Mode": "cors"})
        self.token = json_of(reply)["token"]
        self.headers = {"Authorization": f"token {self.token}"}

    def grader(self, method, path, **kwargs):
        kwargs.setdefault("headers", self.headers)
        return requests.request(method, self.hub.url("/services/grader/" + path), timeout=60,
                                **kwargs)

    def submit(self, notebook, **extra):
        reply = self.grader("POST", "api/submissions",
                            json={"exercise": "update_with_donate", "notebook": notebook, **extra})
        assert reply.status_code == 202, reply.text
        return json_of(reply)["id"]

    def wait_done(self, sub_id):
        """Submission ``sub_id`` once graded, polled as the learner's notebook polls: each
        poll held by the service until it is graded or ``HOLD_S`` passed (``?wait=``)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            sub = json_of(self.grader("GET", f"api/submissions/{sub_id}?wait={HOLD_S:g}"))
            if sub["status"] == "done":
                return sub
            if sub["status"] not in WAITING:  # what no hold waits out
                pytest.fail(f"submission {sub_id}: {sub['status']}")
        pytest.fail(f"submission {sub_id} was not graded")


def json_of(reply):
    """``reply``'s JSON body; a test failure that shows the reply (the redirects that led
    to it, its status and address, the start of its body) when it is not a JSON success."""
    if not (reply.ok and reply.headers.get("Content-Type", "").startswith("application/json")):
        came = " -> ".join(f"{r.status_code} {r.url}" for r in reply.history)
        pytest.fail(f"{reply.request.method} {came} -> {reply.status_code} {reply.url}: "
                    f"{reply.text[:400]!r}")
    return reply.json()


def class_csv_when(instructor, exercise, scores, wait_s):
    """The class CSV's rows (nbgrader export's columns), fetched by ``instructor``
    (a :class:`Signed`) until the gradebook mirror, a background thread, holds
    ``scores`` for ``exercise``, or ``wait_s`` seconds passed: ``{learner: score}``, or
    ``{learner: (score, late penalty)}`` where the penalty must be there too.
    Earlier tests may have graded the same learners: some row for each is not enough."""
    deadline = time.monotonic() + wait_s
    while True:
        reply = instructor.grader("GET", "api/class.csv")
        assert reply.ok and reply.headers["Content-Type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(reply.text)))
        held = {r["student_id"]: _csv_grade(r, scores[r["student_id"]]) for r in rows
                if r["assignment"] == exercise and r["timestamp"] and r["student_id"] in scores}
        if held == scores or time.monotonic() > deadline:
            return rows
        time.sleep(1)


def _csv_grade(row, like):
    """``row``'s score, or (score, late penalty) when ``like`` is a pair."""
    score = float(row["score"])
    return (score, float(row["late_submission_penalty"])) if isinstance(like, tuple) else score
