"""Under the hub, with a class of 31 learners, an instructor changes a running course:
a check's points (then a regrade), a check added (refused before anything is touched),
the late policy, a re-release, a regrade. After each step the class page, ``api/class``,
the class CSV, ``nbgrader export`` and the learners' own standing agree for every
learner, without a restart.

The hub runs from a copy of the checkout (its site: this checkout's build), with the
copy's ``exercises/`` as its course: the hidden tests it grades with are the copy's
``autograder`` package, so editing them touches no file another test reads.
"""
from __future__ import annotations

import csv
import io
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from autograder.service.gradebook.lateness import CACHE_S
from tests.course import REPO, copy_tracked, nbgrader
from tests.grading.helpers import ASSIGNMENT, SAMPLES, released_notebook, with_answer
from tests.hub.running import Signed, running_hub
from tests.service.test_course_changes import TESTS, VALUES, _add_check, _command

ROW = re.compile(r'<tr data-state="[^"]*"><th scope="row" class="learner"><a [^>]*>([^<]+)</a>'
                 r'.*?<td class="recorded">([^<]*)</td>.*?<td class="late">([^<]*)</td>')


def _copy_checkout(root: Path) -> Path:
    """This checkout's files as a clone has them, in ``root``; its virtual environment,
    npm packages and built site linked (read only by the hub)."""
    copy_tracked(root)
    for linked in (".venv", "node_modules", "_build"):
        (root / linked).symlink_to(REPO / linked)
    return root


@pytest.fixture(scope="module")
def changing_hub(accounts, released_course, tmp_path_factory, request):
    """``make hub`` run from a copy of the checkout (site taken as built: ``-o book``),
    its course the copy's ``exercises/`` (released): ``(hub, copy)``."""
    if not (REPO / "_build" / "html" / "index.html").exists():
        request.getfixturevalue("built_site")
    copy = _copy_checkout(tmp_path_factory.mktemp("checkout"))
    course = copy / "exercises"
    shutil.copytree(released_course, course, dirs_exist_ok=True)
    root = tmp_path_factory.mktemp("changing-hub")
    with running_hub(accounts, released_course, root, repo=copy, make=("make", "-o", "book", "hub"),
                     GRADER_COURSE=str(course)) as hub:
        yield hub, copy


def _class_page(ins):
    page = ins.grader("GET", "class").text
    table = page.split(f'id="ex-{ASSIGNMENT.replace("_", "-")}-learners"', 1)[1].split("</table>")[0]
    shown = {}
    for name, score, late in ROW.findall(table):
        penalty = re.search(r"\(\u2212([0-9.]+)\)", late)
        shown[name] = (float(score) if score != "-" else None, float(penalty[1]) if penalty else 0.0)
    return shown


def _class_api(ins):
    """``GET api/class`` through the hub's proxy; anything but 200 fails with its body."""
    reply = ins.grader("GET", "api/class")
    assert reply.status_code == 200, (reply.status_code, reply.text[:500])
    return reply.json()


def _views(hub, ins, learners, names, out):
    """Each view's ``{learner: (score, late penalty)}`` for ``names``."""
    api = _class_api(ins)["exercises"][ASSIGNMENT]["learners"]
    rows = csv.DictReader(io.StringIO(ins.grader("GET", "api/class.csv").text))
    out.unlink(missing_ok=True)
    nbgrader(Path(hub.env["GRADER_COURSE"]), "export", f"--to={out}")
    with open(out) as handle:
        exported = list(csv.DictReader(handle))

    def from_csv(rows):
        return {r["student_id"]: (float(r["score"]), float(r["late_submission_penalty"]))
                for r in rows if r["assignment"] == ASSIGNMENT and r["student_id"] in names}
    standing = {}
    for learner in learners:
        mine = learner.grader("GET", f"api/standing?exercise={ASSIGNMENT}").json()["recorded"]
        standing[learner.name] = mine["score"]
    page = _class_page(ins)
    return {"api/class": {n: (api[n]["recorded"], api[n]["penalty"]) for n in names if n in api},
            "class page": {n: page[n] for n in names if n in page},
            "class.csv": from_csv(rows), "nbgrader export": from_csv(exported),
            "standing": standing}


def _agree(hub, ins, learners, grades, tmp_path):
    """Every view says ``grades`` (``{learner: (score, penalty)}``), within the mirror's
    catching up; each learner's own standing says their score."""
    want = {"api/class": grades, "class page": grades, "class.csv": grades,
            "nbgrader export": grades, "standing": {one.name: grades[one.name][0] for one in learners}}
    deadline = time.monotonic() + 120
    while True:
        seen = _views(hub, ins, learners, set(grades), tmp_path / "export.csv")
        if seen == want or time.monotonic() > deadline:
            break
        time.sleep(2)
    wrong = {view: {n: (got.get(n), want[view].get(n)) for n in want[view]
                    if got.get(n) != want[view].get(n)} for view, got in seen.items()}
    assert seen == want, {view: w for view, w in wrong.items() if w}


def _regrade(hub, copy):
    done = _command(copy, "autograder.service.commands.regrade", ASSIGNMENT, "--wait",
                    "--db", hub.env["GRADER_DB"], "--course", hub.env["GRADER_COURSE"])
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_points_checks_late_policy_and_releases_change_live_for_a_class(
        changing_hub, accounts, class_of_30, tmp_path):
    hub, copy = changing_hub
    made, _ = accounts
    course = Path(hub.env["GRADER_COURSE"])
    answer = with_answer(released_notebook(course), (SAMPLES / "reference.py").read_text())
    def sign_in_and_submit(account):  # graded while the others still sign in
        learner = Signed(hub, account)
        return learner, learner.submit(answer)

    with ThreadPoolExecutor(8) as pool:
        learners, ids = zip(*pool.map(sign_in_and_submit, [made["ada"], *class_of_30]))
        learners = list(learners)
        list(pool.map(lambda p: p[0].wait_done(p[1]), zip(learners, ids)))
    ins, bob = Signed(hub, made["ins"]), Signed(hub, made["bob"])
    names = [one.name for one in learners]
    watched = [learners[0], learners[-1], bob]  # whose own standing is read too
    _agree(hub, ins, watched[:2], {n: (10.0, 0.0) for n in names}, tmp_path)

    # a check's points: 2 -> 3 in the hidden tests, then the documented regrade
    tests = copy / TESTS
    tests.write_text(tests.read_text().replace(VALUES, VALUES.replace("(2,", "(3,")))
    said = _regrade(hub, copy)
    assert "gradebook points set" in said and f"{names[0]}: 10/10 -> 11/11" in said, said
    _agree(hub, ins, watched[:2], {n: (11.0, 0.0) for n in names}, tmp_path)

    # a check added after submissions: refused, nothing changed (files or grades)
    released = course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    source = course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    kept = {p: p.read_bytes() for p in (tests, source)}
    before = {p: p.read_bytes() for p in (released, course / "gradebook.db")}
    _add_check(copy)
    try:
        refused = _command(copy, "autograder.release", ASSIGNMENT, "--db", hub.env["GRADER_DB"],
                           "--course", str(course))
        assert refused.returncode == 3, (refused.stdout, refused.stderr)
        assert "adds graded cell(s) test_extra" in refused.stderr
        assert "nothing changed" in refused.stderr
        assert {p: p.read_bytes() for p in before} == before
    finally:  # the instructor reverts, as the message says
        for path, data in kept.items():
            path.write_bytes(data)
    _agree(hub, ins, watched[:2], {n: (11.0, 0.0) for n in names}, tmp_path)

    # a due date, late work under the default policy (zero), then the policy edited
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    due = _command(copy, "autograder.service.commands.deadlines", "--db", hub.env["GRADER_DB"],
                   "--course", str(course), "due", ASSIGNMENT, now)
    assert due.returncode == 0, due.stderr
    time.sleep(CACHE_S + 0.5)  # the service reads the gradebook's dates this often
    bob.wait_done(bob.submit(answer))
    grades = {n: (11.0, 0.0) for n in names} | {bob.name: (0.0, 11.0)}
    _agree(hub, ins, watched, grades, tmp_path)
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text().replace('penalty_method = "zero"',
                                                 'penalty_method = "none"'))
    grades[bob.name] = (11.0, 0.0)
    _agree(hub, ins, watched, grades, tmp_path)

    # a re-release (points as the hidden tests say; grades kept), then a regrade of all
    again = _command(copy, "autograder.release", ASSIGNMENT, "--db", hub.env["GRADER_DB"],
                     "--course", str(course))
    assert again.returncode == 0, again.stderr
    _agree(hub, ins, watched, grades, tmp_path)
    _regrade(hub, copy)
    _agree(hub, ins, watched, grades, tmp_path)
    assert hub.proc.poll() is None  # the same hub throughout: no restart
