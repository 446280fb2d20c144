"""The class's membership under ``make hub`` with PAM, as docs/instructors.md says to
manage it: learners added to the learners group who never sign in are on every view
(class page, ``api/class``, the class CSV, ``nbgrader export``) without an nbgrader import;
a learner dropped with ``python -m autograder.service.members drop`` while she has a
session, tokens and a running server is refused at once by every way of still acting as
her, and every view shows her withdrawn (grades kept) or not at all (removed); a demoted
instructor loses the class at once."""
from __future__ import annotations

import contextlib
import csv
import io
import re
import secrets
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import requests

from autograder.service.class_views import roster
from autograder.service.store.withdrawn import FIRST_NAME, REFUSAL
from tests.course import REPO, nbgrader, nbgrader_env
from tests.grading.helpers import released_notebook, samples_dir, with_answer
from tests.hub.accounts import Account, add_account, hub_users, kill_users, more_learners, remove_account, run
from tests.hub.running import WAIT_S, Signed, json_of
from tests.hub.test_attacks import start_server

EXERCISE = "update_with_donate"


def roster_command(hub, *args):
    """``python -m autograder.service.members ARGS`` as docs/instructors.md runs it (root,
    the hub's settings in the environment): the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "autograder.service.members", *args],
                          cwd=REPO, env=dict(nbgrader_env(), **hub.env), capture_output=True,
                          text=True, timeout=300)


def exported(hub, tmp_path):
    """``nbgrader export``'s rows (a list of dicts) of the hub's course."""
    out = tmp_path / f"export-{time.monotonic_ns()}.csv"
    nbgrader(Path(hub.env["GRADER_COURSE"]), "export", f"--to={out}")
    with open(out) as handle:
        return list(csv.DictReader(handle))


def views(hub, ins, tmp_path):
    """``{view: {learner: what it says of her}}`` of the four views: ``api`` the roster
    entry of ``api/class``, ``page`` the note after her name on the class page, ``csv`` and
    ``export`` her ``first_name`` column in the class CSV and in ``nbgrader export``."""
    api = json_of(ins.grader("GET", "api/class"))["roster"]
    page = ins.grader("GET", "class").text
    notes = dict(re.findall(r'>([a-z0-9]+)</a> <span class="absent">\(([a-z ]+)\)</span>', page))
    named = {m for m in re.findall(r"\?learner=([a-z0-9]+)", page)}
    csv_rows = list(csv.DictReader(io.StringIO(ins.grader("GET", "api/class.csv").text)))
    return {"api": api, "page": {n: notes.get(n) for n in named},
            "csv": {r["student_id"]: r["first_name"] for r in csv_rows},
            "export": {r["student_id"]: r["first_name"] for r in exported(hub, tmp_path)}}


@pytest.fixture
def primary_members(accounts):
    """Three learners whose primary group is the learners group (``useradd -g``), which
    the group's member list does not name: ``[name]``, removed afterwards."""
    _, groups = accounts
    names = [f"p{time.time_ns() % 10**6:06d}{i}" for i in range(3)]
    for name in names:
        run("useradd", "-g", groups["learners"], "-M", name)
    yield names
    for name in names:
        remove_account(Account(name, ""))


def test_the_learners_group_is_the_class_on_every_view_before_anyone_signs_in(
        hub, accounts, sign_in, primary_members, tmp_path):
    ins = sign_in("ins")
    with more_learners(accounts, 30) as added:
        names = {a.name for a in added} | set(primary_members)
        # nbgrader export first: the grading service enrols the group on its own
        deadline = time.monotonic() + roster.ENROL_S + WAIT_S / 10
        while not names <= {r["student_id"] for r in exported(hub, tmp_path)}:
            assert time.monotonic() < deadline, "the group's members were not enrolled"
            time.sleep(2)
        seen = views(hub, ins, tmp_path)
        for name in names:
            assert seen["api"][name] == {"signed_in": False, "submitted": []}
            assert seen["page"][name] == "never signed in"
            assert name in seen["csv"] and name in seen["export"]
        assert accounts[0]["ins"].name not in seen["api"]


def _enrolment_ran(hub, accounts):
    """Return once the grading service's enrolment (every :data:`roster.ENROL_S`) has read
    the class again: a learner added to the group now is in nbgrader's gradebook (read
    directly, as the enrolment writes it). Fails after ``ENROL_S`` and a tenth of
    ``WAIT_S``; the added learner (no home, never signed in) is removed again."""
    name = f"n{time.time_ns() % 10**7:07d}"
    run("useradd", "-M", "-g", accounts[1]["learners"], name)
    try:
        gradebook = Path(hub.env["GRADER_COURSE"]) / "gradebook.db"
        deadline = time.monotonic() + roster.ENROL_S + WAIT_S / 10
        while name not in _gradebook_students(gradebook):
            assert time.monotonic() < deadline, "the class was not read again"
            time.sleep(0.5)
    finally:
        remove_account(Account(name, ""))


def _gradebook_students(path):
    """The student ids in nbgrader's gradebook at ``path`` (a set; read-only)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return {name for (name,) in db.execute("SELECT id FROM student")}
    finally:
        db.close()


def _submitted(hub, learner):
    """``learner`` (a Signed) submits a full answer; the graded submission."""
    course = Path(hub.env["GRADER_COURSE"])
    notebook = with_answer(released_notebook(course),
                           (samples_dir(EXERCISE) / "reference.py").read_text(), EXERCISE)
    return learner.wait_done(learner.submit(notebook))


def _server_token(name):
    """The hub token of ``name``'s running server (its ``$JUPYTERHUB_API_TOKEN``, the one the
    submit cell sends)."""
    for proc in psutil.process_iter(["username", "cmdline"]):
        if proc.info["username"] == name and "jupyterhub.singleuser" in " ".join(
                proc.info["cmdline"] or []):
            return proc.environ()["JUPYTERHUB_API_TOKEN"]
    pytest.fail(f"no server of {name} is running")


def _api_token(hub, learner):
    """A personal hub API token of ``learner``'s, as an admin makes one (``jupyterhub token``
    on the hub's database)."""
    db = f"sqlite:///{hub.env['HUB_STATE']}/jupyterhub.sqlite"
    done = subprocess.run([str(Path(sys.executable).parent / "jupyterhub"), "token",
                           f"--JupyterHub.db_url={db}", learner.name], cwd=hub.root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def _grader_cookie(hub, learner):
    """``learner``'s session signed in to the grading service itself (its OAuth cookie)."""
    page = learner.session.get(hub.url("/services/grader/login?next=/services/grader/"),
                               headers={"Sec-Fetch-Mode": "navigate"})
    assert page.ok and page.url.endswith("/services/grader/"), page.url
    return learner.session


def acting_as(hub, learner, notebook):
    """Every way ``learner`` (a Signed, with a running server) has of acting as herself:
    ``{way: call() -> requests.Response}`` of something only she may do. Each credential
    is captured now, to be used after her drop; the ways named ``read`` work before it."""
    tokens = {"api token": _api_token(hub, learner), "course page's token": learner.token,
              "server's own token": _server_token(learner.name)}
    session = _grader_cookie(hub, learner)
    xsrf = {"X-XSRFToken": next(c.value for c in session.cookies if c.name == "_xsrf"
                                and c.path.startswith("/services/grader"))}
    body = {"exercise": EXERCISE, "notebook": notebook}
    ways = {}
    for way, token in tokens.items():
        auth = {"Authorization": f"token {token}"}
        ways[f"read her grades with the {way}"] = lambda auth=auth: learner.grader(
            "GET", "api/submissions", headers=auth)
        ways[f"submit with the {way}"] = lambda auth=auth: learner.grader(
            "POST", "api/submissions", json=body, headers=auth)
        ways[f"read herself at the hub's API with the {way}"] = lambda auth=auth: requests.get(
            hub.url("/hub/api/user"), headers=auth, timeout=60)
    grader = hub.url("/services/grader/api/submissions")
    ways["read her grades with the grading service's cookie"] = lambda: session.get(
        grader, headers=xsrf, timeout=60)
    ways["submit with the grading service's cookie"] = lambda: session.post(
        grader, json=body, headers=xsrf, timeout=60)
    ways["read the hub's home with her hub cookie"] = lambda: session.get(
        hub.url("/hub/home"), allow_redirects=False, timeout=60)
    ways["a new sign-in with her password"] = lambda: _sign_in_again(hub, learner)
    return ways


def _sign_in_again(hub, learner):
    fresh = requests.Session()
    page = fresh.get(hub.url("/hub/login"), timeout=60)
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
    return fresh.post(hub.url("/hub/login"), data={
        "username": learner.name, "password": learner.password, "_xsrf": xsrf}, timeout=60)


def _refused(way, reply):
    """Whether ``reply`` refuses her: no 2xx answer as her, no 5xx, no redirect but to the
    sign-in; a refusal by the grading service says she was withdrawn (or, once the hub's
    answer about her token is no longer cached there, that she is signed in nowhere)."""
    if "/services/grader/" in reply.url and reply.status_code == 403:
        return reply.json()["code"] in ("withdrawn", "not_signed_in")
    if reply.status_code in (301, 302, 303):
        return "/hub/login" in reply.headers.get("Location", "")
    return reply.status_code in (401, 403, 404)


def _her_processes(name):
    return [p for p in psutil.process_iter(["username"]) if p.info["username"] == name]


@contextlib.contextmanager
def a_learner(accounts, how):
    """A new learner (an Account) in the learners group as ``how`` says: ``listed`` in its
    members (``adduser``), or ``primary``: it is her primary group (``useradd -g``), which
    no ``gpasswd -d`` takes her out of."""
    if how == "listed":
        with more_learners(accounts, 1) as (eve,):
            yield eve
        return
    eve = Account(f"p{time.time_ns() % 10**7:07d}", secrets.token_urlsafe(12))
    run("useradd", "-m", "-g", accounts[1]["learners"], eve.name)
    try:
        subprocess.run(["chpasswd"], input=f"{eve.name}:{eve.password}\n", text=True, check=True)
        yield eve
    finally:
        remove_account(eve)


@pytest.mark.parametrize("kind,how", [("--keep-grades", "listed"), ("--remove-grades", "primary")])
def test_a_dropped_learner_is_refused_at_once_and_every_view_agrees(hub, accounts, sign_in,
                                                                    kind, how, tmp_path):
    ins = sign_in("ins")
    with a_learner(accounts, how) as eve:
        her = Signed(hub, eve)
        her.password = eve.password
        graded = _submitted(hub, her)
        assert graded["result"]["score"] > 0
        start_server(her)
        ways = acting_as(hub, her, released_notebook(Path(hub.env["GRADER_COURSE"])))
        before = {w: ways[w]().status_code for w in ways if w.startswith("read")}
        assert set(before.values()) == {200}, before  # each works until the drop

        done = roster_command(hub, "drop", eve.name, kind)
        assert done.returncode == 0, done.stdout + done.stderr
        not_refused = {}
        for way, call in ways.items():
            reply = call()
            if not _refused(way, reply):
                not_refused[way] = (reply.status_code, reply.text[:300])
        assert not not_refused, not_refused
        if how == "primary":  # still in the group: the hub's own refusal, in words
            assert "withdrawn from this course" in ways["a new sign-in with her password"]().text
        reply = her.grader("POST", "api/submissions", json={"exercise": EXERCISE, "notebook": {}})
        assert reply.status_code == 403 and reply.json()["error"] == REFUSAL
        assert not _her_processes(eve.name), "her server and kernels are gone"
        assert eve.name not in hub_users(hub)

        withdrawn = kind == "--keep-grades"
        _enrolment_ran(hub, accounts)  # the service's enrolment had its chance to undo it
        seen = views(hub, ins, tmp_path)
        if withdrawn:
            assert seen["api"][eve.name]["withdrawn"] is True
            assert seen["api"][eve.name]["submitted"] == [EXERCISE]
            assert seen["page"][eve.name] == "withdrawn"
            assert seen["csv"][eve.name] == seen["export"][eve.name] == FIRST_NAME
        else:
            assert all(eve.name not in seen[view] for view in seen), seen
        mine = json_of(ins.grader("GET", f"api/submissions?learner={eve.name}"))["submissions"]
        assert bool(mine) == withdrawn
        kill_users([eve.name])


def instructors_reads(learner, sub_id):
    """Every way an instructor reads what is another learner's (``learner``'s submission
    ``sub_id`` among it): ``[(method, path below /services/grader/, what must not be in
    the answer when it is refused)]``."""
    return [("GET", "api/class", learner), ("GET", "api/class.csv", learner),
            ("GET", "class", learner), ("GET", f"api/submissions?learner={learner}", sub_id),
            ("GET", f"api/submissions/{sub_id}", sub_id),
            ("GET", f"api/submissions/{sub_id}/notebook", '"cells"'),
            ("GET", f"?learner={learner}", sub_id), ("POST", "api/lti/resend", "resent")]


def test_a_demoted_instructor_loses_the_class_at_once(hub, accounts, sign_in):
    _, groups = accounts
    teacher = add_account(f"dt{time.time_ns() % 10**6:06d}", groups["instructors"])
    learner = sign_in("ada")
    notebook = with_answer(released_notebook(Path(hub.env["GRADER_COURSE"])), "x = 1\n")
    sub_id = learner.submit(notebook)
    try:
        signed = Signed(hub, teacher)
        session = _grader_cookie(hub, signed)
        reads = instructors_reads(learner.name, sub_id)
        for method, path, _ in reads:  # each works while she teaches (the cookie: GETs)
            assert signed.grader(method, path).status_code == 200, (method, path)
            if method == "GET":
                assert session.get(hub.url("/services/grader/" + path)).status_code == 200, path
        done = roster_command(hub, "demote", teacher.name)
        assert done.returncode == 0, done.stdout + done.stderr
        for method, path, secret in reads:  # by token and by cookie, at once
            answers = [signed.grader(method, path)]
            if method == "GET":
                answers.append(session.get(hub.url("/services/grader/" + path)))
            for answer in answers:  # the page answers her own grades, hers only
                assert answer.status_code in (403, 404) or path.startswith("?"), \
                    (method, path, answer.status_code)
                assert secret not in answer.text, (method, path, answer.text[:300])
        assert teacher.name not in roster.group_members(groups["instructors"])
    finally:
        remove_account(teacher)


def test_the_roster_command_refuses_a_name_the_course_does_not_know(hub, accounts):
    done = roster_command(hub, "drop", "nobody-of-this-course")
    assert done.returncode == 2 and "no learner of this course" in done.stderr
    learner = accounts[0]["ada"].name  # a learner is no instructor to demote
    done = roster_command(hub, "demote", learner)
    assert done.returncode == 2 and "no instructor of this course" in done.stderr
