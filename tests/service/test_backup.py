"""Backups (docs/instructors.md, "Backups"): read by no learner whatever the umask or the
folder they are written into, holding no live state of the machine they were made on
(process ids, locks, sockets), and restoring the same course, its own files included.
"""
import csv
import io
import json
import os
import pwd
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder.service.commands import backup
from autograder.service.store import Store
from tests.course import REPO
from tests.grading.helpers import ASSIGNMENT

LEARNER = "nobody"  # an unprivileged uid, as a learner's server runs under


READ = 'for f; do if [ -d "$f" ]; then ls -a "$f" >/dev/null 2>&1 && echo "$f"; ' \
       'elif [ -e "$f" ]; then head -c 1 "$f" >/dev/null 2>&1 && echo "$f"; fi; done'


def _as_learner(paths):
    """The ``paths`` (str) a process with a learner's uid, gid and no other group can
    read a byte of (a file) or list (a folder)."""
    entry = pwd.getpwnam(LEARNER)
    done = subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}",
                           "--clear-groups", "sh", "-c", READ, "sh", *paths],
                          capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def _everything(root):
    """``root`` and every path below it (str), links not followed."""
    found = [str(root)]
    for top, dirs, names in os.walk(root):
        found += [os.path.join(top, n) for n in dirs + names]
    return found


def _socket(path):
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()


@pytest.fixture(autouse=True)
def umask_put_back():
    """The process's umask as it was before each test: a test here sets 000, which the
    worker's next tests (and the hubs they start) would otherwise inherit."""
    before = os.umask(0o077)
    os.umask(before)
    yield
    os.umask(before)


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course's data as an older, careless version may have left it (files 0644): the
    grading database, the gradebook, submitted notebooks, and a hub's state folder with
    its secrets and the live state of a running hub (a proxy's pid, locks, sockets)."""
    db, folder, hub = tmp_path / "grading.db", tmp_path / "exercises", tmp_path / "hub-state"
    Store(db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO submissions (id, learner, exercise, status, notebook, "
                     "submitted_at, attempts) VALUES ('s1', 'ann', 'e', 'queued', '{}', "
                     "0, 0)")
    shutil.copytree(REPO / "exercises" / "source", folder / "source")
    shutil.copy(REPO / "exercises" / "nbgrader_config.py", folder)
    sqlite3.connect(folder / "gradebook.db").execute("CREATE TABLE t (x)").connection.commit()
    (folder / "submitted" / "ann" / "e").mkdir(parents=True)
    (folder / "submitted" / "ann" / "e" / "e.ipynb").write_text("{}")
    hub.mkdir()
    sqlite3.connect(hub / "jupyterhub.sqlite").execute("CREATE TABLE users (name TEXT)").connection.commit()
    for name, text in {"jupyterhub_cookie_secret": "ab" * 32, "lti-tool-key.pem": "KEY",
                       "lti-nonces.json": "{}"}.items():
        (hub / name).write_text(text)
    for path in [db, *_everything(folder)[1:], *_everything(hub)[1:]]:
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    monkeypatch.setenv("HUB_STATE", str(hub))
    return db, folder, hub


LIVE = {"proxy.pid": "4242\n", "jupyterhub-proxy.pid": "4242", "server": "4242\n",
        "hub.lock": "", "gone.sqlite-journal": "x"}


def _plant_live_state(folder):
    """Live state of this machine's processes, of every kind, in ``folder``."""
    for name, text in LIVE.items():
        (folder / name).write_text(text)
    _socket(folder / "hub.sock")
    os.mkfifo(folder / "events")
    (folder / "secret-link").symlink_to("/etc/hostname")
    return [*LIVE, "hub.sock", "events", "secret-link"]


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as another uid needs root")
@pytest.mark.parametrize("umask", [0o022, 0o000], ids=["umask 022", "umask 000"])
def test_a_backup_and_its_restore_are_read_by_no_learner(course, umask, monkeypatch):
    db, folder, hub = course
    top = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="course-backups-"))  # like /srv
    try:
        top.chmod(0o755)
        os.umask(umask)
        dest = top / "backups" / "course-2026-12-03"  # its parent made by the backup too
        assert backup.main(["--db", str(db), "--course", str(folder), "save", str(dest)]) == 0
        written = _everything(top / "backups")
        assert len(written) > 10 and _as_learner(written) == [], _as_learner(written)
        assert {oct(os.lstat(p).st_mode & 0o777) for p in written if os.path.isfile(p)} == {"0o600"}
        assert {oct(os.lstat(p).st_mode & 0o777) for p in written if os.path.isdir(p)} == {"0o700"}

        again = top / "restored"  # a fresh machine's places, world-readable as a checkout is
        (again / "exercises").mkdir(parents=True, mode=0o755)
        monkeypatch.setenv("HUB_STATE", str(again / "hub-state"))
        assert backup.main(["--db", str(again / "grading.db"), "--course", str(again / "exercises"),
                            "restore", str(dest)]) == 0
        # the checkout's own files (nbgrader_config.py, the source notebooks) come back with
        # the modes they had, as a clone has them; the rest is learners' work and secrets
        course_files = {str(again / "exercises" / k.split("/", 1)[1]) for k in
                        json.loads((dest / "manifest.json").read_text())["course_files"]
                        if k.startswith("course/")}
        restored = [p for p in _everything(again)[1:]
                    if p != str(again / "exercises") and p not in course_files]
        assert {"grading.db", "gradebook.db", "submitted", "hub-state", "source"} <= \
            {Path(p).name for p in restored}
        assert _as_learner(restored) == [], _as_learner(restored)
    finally:
        shutil.rmtree(top)


def test_no_live_state_of_the_machine_is_backed_up_or_put_back(course, tmp_path):
    db, folder, hub = course
    planted = _plant_live_state(hub) + [f"submitted/{n}" for n in _plant_live_state(folder / "submitted")]
    dest = tmp_path / "backup"
    assert backup.main(["--db", str(db), "--course", str(folder), "save", str(dest)]) == 0
    kept = {p.name for p in (dest / "hub-state").iterdir()}
    assert kept == {"jupyterhub.sqlite", "jupyterhub_cookie_secret", "lti-tool-key.pem",
                    "lti-nonces.json"}, kept
    assert {p.name for p in (dest / "submitted").iterdir()} == {"ann"}
    manifest = json.loads((dest / "manifest.json").read_text())
    assert len(manifest["left_out"]) == len(planted), manifest["left_out"]
    assert manifest["submissions"] == 1

    for name in ("proxy.pid", "hub.lock"):  # an older backup that still holds them
        (dest / "hub-state" / name).write_text(LIVE[name])
    for name in os.listdir(hub):
        os.unlink(hub / name)
    assert backup.main(["--db", str(db), "--course", str(folder), "restore", str(dest)]) == 0
    assert {p.name for p in hub.iterdir()} == kept



@pytest.mark.parametrize("key", ["course/../../outside.py", "grader/../../../outside.py",
                                 "elsewhere/tests.py", "course/"])
def test_a_backup_naming_a_file_outside_the_course_is_refused_before_anything(course, tmp_path, key):
    db, folder, hub = course
    dest = tmp_path / "backup"
    assert backup.main(["--db", str(db), "--course", str(folder), "save", str(dest)]) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["course_files"][key] = {"sha256": "0" * 64, "mode": 0o644}
    (dest / "manifest.json").write_text(json.dumps(manifest))
    db.unlink()
    with pytest.raises(SystemExit, match="nothing was restored"):
        backup.main(["--db", str(db), "--course", str(folder), "restore", str(dest)])
    assert not db.exists()  # nothing touched: not even the database

def _class_views(service):
    """Every number the instructor sees of update_with_donate, as ``{view: {learner:
    (score, max score)}}``: nbgrader export, the class CSV (api/class.csv's own
    function), the class view (api/class's), and the gradebook's max score."""
    from autograder import defaults
    from autograder.service.api import classroom
    from autograder.service.class_views import roster
    from autograder.service.class_views.class_view import summary
    url = service.gradebook_url()
    csv_rows = [r for r in csv.DictReader(io.StringIO(classroom.gradebook_csv(url)))
                if r["assignment"] == ASSIGNMENT]
    store = Store(service.db)
    try:
        view = summary(store, defaults.setting("GRADER_RECORDED"))[ASSIGNMENT]
    finally:
        store.engine.dispose()
    points = roster.read_gradebook(url)[1][ASSIGNMENT]
    return {"export": {k: (float(r["score"]), float(r["max_score"])) for k, r in service.export().items()},
            "class.csv": {r["student_id"]: (float(r["score"]), float(r["max_score"])) for r in csv_rows},
            "api/class": {k: (float(v["recorded"]), float(view["max_score"]))
                          for k, v in view["learners"].items()},
            "gradebook max": {"ada": (11.0, float(points))}}


def _private_files(service):
    """The learners' work and grades a service's course keeps (str paths)."""
    return [*_everything(service.db.parent), str(service.course / "gradebook.db"),
            *_everything(service.course / "submitted")]


@pytest.mark.skipif(os.geteuid() != 0, reason="reading as another uid needs root")
def test_a_restored_course_is_the_course_that_was_backed_up(monkeypatch):
    """A check's points changed (2 -> 3: the exercise is out of 11), regraded, backed up;
    restored into a fresh clone (whose hidden tests still say 10) and released there,
    as make hub does: every view says 11 out of 11, a regrade there keeps it. All of it
    under umask 000 in folders any user may enter, and no learner reads a byte of it."""
    from tests.grading.helpers import SAMPLES, checkout, with_answer
    from tests.service.running import Service
    from tests.service.test_course_changes import TESTS, VALUES, _command
    from tests.service.test_new_exercise import _release
    top = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="course-restore-"))
    os.umask(0)
    try:
        top.chmod(0o755)
        monkeypatch.setenv("HUB_STATE", str(top / "hub-state"))
        first = checkout(top / "first")
        _release(first, ASSIGNMENT)
        # the database where an administrator keeps one (GRADER_DB), out of the checkout
        service = Service(first, first / "exercises", cwd=first,
                          db=top / "first-data" / "grading.db").start()
        try:
            released = json.loads((first / "exercises" / "release" / ASSIGNMENT /
                                   f"{ASSIGNMENT}.ipynb").read_text())
            answer = with_answer(released, (SAMPLES / "reference.py").read_text())
            service.wait_done([service.submit("ada", answer)])
            tests = first / TESTS  # the instructor reweights one check: 2 -> 3 points
            tests.write_text(tests.read_text().replace(VALUES, VALUES.replace("(2,", "(3,")))
            args = ["--db", str(service.db), "--course", str(service.course)]
            done = _command(first, "autograder.service.commands.regrade", ASSIGNMENT, "--wait", *args)
            assert done.returncode == 0 and "ada: 10/10 -> 11/11" in done.stdout, done.stdout
            service.settled_rows()
            before = _class_views(service)
            assert {v["ada"] for v in before.values()} == {(11.0, 11.0)}, before
            saved = _command(first, "autograder.service.commands.backup", *args, "save", str(top / "backup"))
            assert saved.returncode == 0, saved.stderr
        finally:
            service.stop()

        fresh = checkout(top / "second")  # a fresh clone, released: its tests say 10 points
        assert _command(fresh, "autograder.release", ASSIGNMENT).returncode == 0  # make release's
        assert os.stat(fresh / "exercises" / "gradebook.db").st_mode & 0o777 == 0o600
        args = ["--db", str(top / "second-data" / "grading.db"), "--course", str(fresh / "exercises")]
        back = _command(fresh, "autograder.service.commands.backup", *args, "restore", str(top / "backup"))
        assert back.returncode == 0, back.stderr
        assert f"{ASSIGNMENT}/hidden/tests.py" in back.stdout, back.stdout  # it says what it put back
        assert (fresh / TESTS).read_text() == tests.read_text()
        done = _command(fresh, "autograder.release", ASSIGNMENT)  # make hub's, after the restore
        assert done.returncode == 0, done.stderr
        again = Service(fresh, fresh / "exercises", cwd=fresh, db=top / "second-data" / "grading.db").start()
        try:
            again.settled_rows()
            assert _class_views(again) == before
            done = _command(fresh, "autograder.service.commands.regrade", ASSIGNMENT, "--wait", *args)
            assert done.returncode == 0 and "ada: 11/11 -> 11/11" in done.stdout, done.stdout
            again.settled_rows()
            assert _class_views(again) == before
        finally:
            again.stop()
        private = [*_private_files(service), *_private_files(again), *_everything(top / "backup")]
        folders = [p for s in (service, again) for p in _everything(s.course / "submitted")
                   if os.path.isdir(p)]
        assert {oct(os.stat(p).st_mode & 0o777) for p in folders} == {"0o700"}  # any uid's view
        assert len(private) > 8 and _as_learner(private) == [], _as_learner(private)
    finally:
        shutil.rmtree(top)
