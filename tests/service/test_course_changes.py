"""An instructor changes a running course: hidden tests edited on disk, a late policy
edited, a release after submissions, a backup while learners submit. Each change
applies everywhere without a restart, or is refused before anything is touched, or
is flagged until it applies (docs/instructors.md)."""
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder import exercises, learner_submit
from autograder.service.api.app import POINTS_CHECK_S
from tests.course import REPO, nbgrader_env
from tests.grading.helpers import ASSIGNMENT, SAMPLES, checkout, released_notebook, with_answer
from tests.service.running import Service, http
from tests.service.test_new_exercise import _release

TESTS = f"autograder/exercises/{ASSIGNMENT}/hidden/tests.py"
VALUES = '@graded(2, "values: the result equals state + delta")'


@pytest.fixture(scope="module")
def released_checkout(tmp_path_factory):
    """A checkout with update_with_donate released (``make release``'s command), made once
    for the module: each test changes a copy of its own (:func:`_course`)."""
    root = checkout(tmp_path_factory.mktemp("released") / "checkout")
    _release(root, ASSIGNMENT)
    return root


def _course(released_checkout, tmp_path):
    """A copy of ``released_checkout`` (its ``.venv`` link kept), and its service (started)."""
    root = tmp_path / "checkout"
    shutil.copytree(released_checkout, root, symlinks=True)
    service = Service(tmp_path, root / "exercises", cwd=root).start()
    release = json.loads((root / "exercises" / "release" / ASSIGNMENT /
                          f"{ASSIGNMENT}.ipynb").read_text())
    return root, service, with_answer(release, (SAMPLES / "reference.py").read_text())


def _health(service, until, seconds=POINTS_CHECK_S * 4):
    """The health answer once ``until(answer)`` holds (the last one after ``seconds``)."""
    deadline = time.monotonic() + seconds
    while True:
        answer = http("GET", service.url + "/api/health")[2]
        if until(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.5)


def _older(answer):
    return [w for w in answer.get("warnings", []) if "older hidden tests" in w]


def _command(root, *args, env=None):
    return subprocess.run([sys.executable, "-m", *args], cwd=root, env=dict(nbgrader_env(root), **(env or {})),
                          capture_output=True, text=True, timeout=600)


def test_hidden_tests_changed_on_disk_grade_new_submissions_and_the_regrade(released_checkout, tmp_path):
    root, service, answer = _course(released_checkout, tmp_path)
    try:
        first = service.submit("ada", answer)
        assert service.wait_done([first])[first]["result"]["score"] == 10
        service.settled_rows()
        assert _older(_health(service, lambda a: True)) == []

        tests = root / TESTS  # the instructor reweights one check: 2 -> 3 points
        tests.write_text(tests.read_text().replace(VALUES, VALUES.replace("(2,", "(3,")))
        warned = _health(service, _older)
        assert _older(warned) and "1 graded submission(s) of 1 learner(s)" in _older(warned)[0]

        second = service.submit("bob", answer)  # no restart: graded by the tests on disk
        graded = service.wait_done([second])[second]["result"]
        assert (graded["score"], graded["max_score"]) == (11, 11), graded["output"]
        assert graded["extra_data"]["version"] != service.get(first)["result"]["extra_data"]["version"]

        done = _command(root, "autograder.service.commands.regrade", ASSIGNMENT, "--wait",
                        "--db", str(service.db), "--course", str(service.course))
        assert done.returncode == 0, done.stderr
        assert "gradebook points set" in done.stdout and "ada: 10/10 -> 11/11" in done.stdout, \
            done.stdout
        assert _older(_health(service, lambda a: not _older(a))) == []
        regrade = service.get(service.rows()[first]["replaced_by"])
        assert regrade["regrade_of"]["score"] == 10 and regrade["result"]["score"] == 11
        assert service.get(first)["result"]["score"] == 10  # the old result is kept
        service.settled_rows()
        assert {k: float(v["score"]) for k, v in service.export().items()} == \
            {"ada": 11.0, "bob": 11.0}

        tests.write_text(tests.read_text() + "\ndef broken(:\n")  # mid-edit: cannot load
        third = service.submit("cy", answer)
        sick = _health(service, lambda a: any("cannot be loaded" in p for p in a["problems"]))
        assert any("cannot be loaded" in p and "SyntaxError" in p for p in sick["problems"]), sick
        assert service.get(third)["status"] == "queued"  # waits, never graded by old tests
        tests.write_text(tests.read_text().replace("\ndef broken(:\n", ""))
        assert service.wait_done([third])[third]["result"]["score"] == 11
    finally:
        service.stop()


def _make(root, target):
    """``make target`` in the checkout at ``root`` (its Makefile and the files its .venv
    target names copied in with their times, so the shared .venv counts as made)."""
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        if not (root / name).exists():
            shutil.copy2(REPO / name, root / name)
    return subprocess.run(["make", "--no-print-directory", target], cwd=root,
                          env=nbgrader_env(root), capture_output=True, text=True, timeout=900)


def _add_check(root):
    """What adding a check takes: a hidden test and a graded cell of its grade_id."""
    tests = root / TESTS
    tests.write_text(tests.read_text() + '\n\n@graded(1, "an extra check")\ndef test_extra(obs):\n'
                     '    """Always passes."""\n')
    source = root / "exercises" / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = json.loads(source.read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade"))
    extra = json.loads(json.dumps(cell).replace("test_values", "test_extra"))
    extra["id"] = "extra0001"
    nb["cells"].insert(nb["cells"].index(cell) + 1, extra)
    source.write_text(json.dumps(nb, indent=1))


def _held(answer):
    return [w for w in answer.get("warnings", []) if "hidden tests changed since release" in w]


def _csv_scores(service):
    """``{learner: score}`` of ``nbgrader export``."""
    return {k: float(v["score"]) for k, v in service.export().items()}


def test_a_check_added_to_the_hidden_tests_grades_nothing_ahead_of_the_gradebook(
        released_checkout, tmp_path, monkeypatch, capsys):
    """A check added before anyone submitted: submissions wait, said on /api/health, until
    make release succeeds; then each is graded with it and the gradebook holds that grade.
    Another check added once learners submitted: make release refuses it, submissions
    wait until the change is undone, and every view agrees on the grade made then."""
    root, service, answer = _course(released_checkout, tmp_path)
    tests = root / TESTS
    try:
        assert _held(_health(service, lambda a: True)) == []
        _add_check(root)  # hidden test and graded cell: a release can take it (no submissions)
        first = service.submit("ada", answer)
        warned = _health(service, _held)
        assert warned["ok"] and "test_extra" in _held(warned)[0], warned  # make hub starts
        waiting = service.get(first)
        assert waiting["status"] == "queued"  # never graded ahead of the gradebook
        assert "waiting for the instructor" in waiting["held"], waiting  # the learner reads why
        monkeypatch.setattr(learner_submit, "HOLD_S", 1)  # the submit cell's poll, held 1 s
        assert learner_submit.follow(service.url, first, {}, time.monotonic() + 2.5) is None
        assert capsys.readouterr().out.count("Received, waiting for the instructor") == 1
        released = _command(root, "autograder.release", ASSIGNMENT)
        assert released.returncode == 0, released.stderr
        graded = service.wait_done([first])[first]["result"]
        assert (graded["score"], graded["max_score"]) == (11, 11), graded["output"]
        service.settled_rows()
        assert _csv_scores(service) == {"ada": 11.0}
        assert _held(_health(service, lambda a: not _held(a))) == []

        kept = tests.read_text()  # now a check in the hidden tests only, after submissions
        tests.write_text(kept + '\n\n@graded(1, "a second extra")\ndef test_more(obs):\n'
                         '    """Always passes."""\n')
        second = service.submit("bob", answer)
        assert "test_more" in _held(_health(service, _held))[0]
        refused = _command(root, "autograder.release", ASSIGNMENT)
        assert refused.returncode == 3, refused.stderr
        time.sleep(1.0)
        assert service.get(second)["status"] == "queued"
        assert _csv_scores(service) == {"ada": 11.0}
        tests.write_text(kept)  # undone: graded by the tests in force at release
        graded = service.wait_done([second])[second]["result"]
        assert (graded["score"], graded["max_score"]) == (11, 11), graded["output"]
        service.settled_rows()
        assert _csv_scores(service) == {"ada": 11.0, "bob": 11.0}
        assert _standing(service, "bob")["recorded"]["score"] == 11
        assert _held(_health(service, lambda a: not _held(a))) == []
    finally:
        service.stop()


def test_a_release_nbgrader_cannot_apply_is_refused_before_anything_is_touched(released_checkout, tmp_path):
    root, service, answer = _course(released_checkout, tmp_path)
    course = root / "exercises"
    released = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    try:
        first = service.submit("ada", answer)
        service.wait_done([first])
        service.settled_rows()
    finally:
        service.stop()
    before = {p: p.read_bytes() for p in (released, course / "gradebook.db")}
    _add_check(root)
    done = _command(root, "autograder.release", ASSIGNMENT)
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "adds graded cell(s) test_extra" in done.stderr and "nothing changed" in done.stderr
    assert "regrade" in done.stderr and "new exercise" in done.stderr  # the supported paths
    assert {p: p.read_bytes() for p in before} == before
    made = _make(root, "release")  # the other exercises are released, the refusal said
    assert made.returncode != 0 and f"make release refused: {ASSIGNMENT}" in made.stdout, made
    assert released.read_bytes() == before[released]  # kept as released before
    others = [course / "release" / ex / f"{ex}.ipynb" for ex in exercises.names()]
    assert all(p.is_file() for p in others)
    assert _make(root, "released").returncode == 0  # what make book, serve and hub run

    (root / TESTS).write_text((REPO / TESTS).read_text().replace(VALUES, VALUES.replace("(2,", "(3,")))
    source = f"exercises/source/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    (root / source).write_text((REPO / source).read_text())  # still says 2 points
    done = _command(root, "autograder.release", ASSIGNMENT)
    assert done.returncode == 0, done.stderr
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:  # the hidden tests' points
        assert gb.find_grade_cell("test_values", ASSIGNMENT, ASSIGNMENT).max_score == 3
        assert gb.find_submission(ASSIGNMENT, "ada").score == 10  # the grade is kept
    cell = next(c for c in json.loads(released.read_text())["cells"]
                if c["metadata"].get("nbgrader", {}).get("grade_id") == "test_values")
    assert cell["metadata"]["nbgrader"]["points"] == 3 and "(3 points)" in "".join(cell["source"])


def _standing(service, learner):
    return http("GET", f"{service.url}/api/standing?exercise={ASSIGNMENT}&learner={learner}")[2]


def test_an_edited_late_policy_applies_to_every_view_or_is_flagged(released_checkout, tmp_path):
    root, service, answer = _course(released_checkout, tmp_path)
    try:
        due = _command(root, "autograder.service.commands.deadlines", "--db", str(service.db),
                       "--course", str(service.course), "due", ASSIGNMENT, "2020-01-01 00:00")
        assert due.returncode == 0, due.stderr
        time.sleep(5.5)  # the service reads new dates within 5 s (docs/instructors.md)
        late = service.submit("ada", answer)
        service.wait_done([late])
        service.settled_rows()
        assert _standing(service, "ada")["recorded"]["score"] == 0  # the default: zero
        assert float(service.export()["ada"]["score"]) == 0
        assert not any("late penalties" in w for w in _health(service, lambda a: True)["warnings"])

        config = service.course / "nbgrader_config.py"
        config.write_text(config.read_text().replace(
            'penalty_method = "zero"', 'penalty_method = "none"'))
        assert _standing(service, "ada")["recorded"]["score"] == 10  # at once, no restart
        flagged = any("late penalties" in w for w in http("GET", service.url + "/api/health")[2]["warnings"])
        assert flagged or float(service.export()["ada"]["score"]) == 10  # flagged, or applied
        settled = _health(service, lambda a: not any("late penalties" in w for w in a["warnings"]))
        assert not any("late penalties" in w for w in settled["warnings"]), settled
        assert float(service.export()["ada"]["score"]) == 10  # nbgrader's own export agrees
        assert _standing(service, "ada")["recorded"]["score"] == 10
    finally:
        service.stop()


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_backup_during_submissions_restores_every_grade_and_deadline(engine, new_service,
                                                                        course_template, tmp_path,
                                                                        request):
    import sqlite3

    db = request.getfixturevalue("pg_url")() if engine == "postgresql" else None
    service = new_service(jobs=1, db=db).start()
    args = ["--db", str(service.db), "--course", str(service.course)]
    hub = tmp_path / "hub-state"  # a hub's state: its database and cookie secret
    hub.mkdir()
    sqlite3.connect(hub / "jupyterhub.sqlite").execute("CREATE TABLE users (name TEXT)").connection.commit()
    (hub / "jupyterhub_cookie_secret").write_text("secret\n")
    from autograder.service.class_views.roster import enroll
    enroll(service.gradebook_url(), ["ada"])  # an extension names an enrolled learner
    for what in (["due", ASSIGNMENT, "2030-01-01 00:00"], ["extend", ASSIGNMENT, "ada", "48"]):
        assert _command(REPO, "autograder.service.commands.deadlines", *args, *what).returncode == 0
    learners = [f"l{i}" for i in range(6)] + ["ada"]
    # each answer takes two seconds more (one grading at a time: about 14 s), so the backup
    # is surely taken while the burst is queued or grading, however fast the grader gets
    slow = with_answer(released_notebook(course_template),
                       (SAMPLES / "reference.py").read_text() + "\nimport time\ntime.sleep(2)\n")
    ids = {who: service.submit(who, slow) for who in learners}
    backup = tmp_path / "backup"
    saved = _command(REPO, "autograder.service.commands.backup", *args, "save", str(backup),
                     env={"HUB_STATE": str(hub)})
    assert saved.returncode == 0, saved.stderr
    assert any(r["status"] in ("queued", "running") for r in service.rows().values())  # mid-burst
    assert json.loads((backup / "manifest.json").read_text())["submissions"] == len(learners)
    service.stop()

    if db:  # the database is lost: an empty one in its place
        cluster, name = request.getfixturevalue("postgres"), db.rsplit("/", 1)[1]
        for tool in ("dropdb", "createdb"):
            cluster._run(tool, "-h", "127.0.0.1", "-p", str(cluster.port), name)
    for lost in ([] if db else [Path(service.db), service.course / "gradebook.db"]):
        lost.unlink()
    (hub / "jupyterhub.sqlite").unlink()
    back = _command(REPO, "autograder.service.commands.backup", *args, "restore", str(backup),
                    env={"HUB_STATE": str(hub)})
    assert back.returncode == 0, back.stderr
    assert sqlite3.connect(hub / "jupyterhub.sqlite").execute("SELECT * FROM users").fetchall() == []
    again = Service(service.root, service.course, db=service.db, jobs=1).start()
    try:
        again.wait_done(list(ids.values()))
        again.settled_rows()
        assert {k: float(v["score"]) for k, v in again.export().items()} == \
            {who: 10.0 for who in learners}
        shown = _command(REPO, "autograder.service.commands.deadlines", *args, "show").stdout
        assert "2030-01-01" in shown and "ada" in shown, shown
    finally:
        again.stop()
