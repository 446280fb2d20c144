"""Under ``make hub``, at every step an instructor takes (a deadline, a late
submission, an extension, a regrade) the class view (``api/class``), the class CSV
and ``nbgrader export`` give each learner the same grade and late penalty."""
from __future__ import annotations

import csv
import subprocess
import sys
import time
from pathlib import Path

from autograder.service.lateness import CACHE_S
from tests.course import REPO, nbgrader, nbgrader_env
from tests.grading.helpers import expected, released_notebook, samples_dir, with_answer
from tests.hub.running import WAIT_S, Signed, class_csv_when, json_of

EXERCISE = "donation_report"  # the other hub tests submit update_with_donate


def _instructor_command(hub, module, *args):
    """``python -m <module> ARGS`` as docs/instructors.md runs it, on the hub's files."""
    done = subprocess.run([sys.executable, "-m", module, "--db", hub.env["GRADER_DB"],
                           "--course", hub.env["GRADER_COURSE"], *args],
                          cwd=REPO, env=nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _notebook(hub, sample):
    course = Path(hub.env["GRADER_COURSE"])
    return with_answer(released_notebook(course, EXERCISE),
                       (samples_dir(EXERCISE) / f"{sample}.py").read_text(), EXERCISE)


def _submit(learner, notebook):
    reply = learner.grader("POST", "api/submissions",
                           json={"exercise": EXERCISE, "notebook": notebook})
    assert reply.status_code == 202, reply.text
    return json_of(reply)["id"]


def _wait_graded(learner, sub_id):
    deadline = time.monotonic() + WAIT_S
    while json_of(learner.grader("GET", f"api/submissions/{sub_id}"))["status"] != "done":
        assert time.monotonic() < deadline, f"{sub_id} was not graded"
        time.sleep(1)


def _three_views(hub, instructor, grades, tmp_path):
    """``grades`` is ``{learner: (score, late penalty)}``: the class view, the CSV
    (once the gradebook mirror holds the scores) and nbgrader export must each say it."""
    deadline = time.monotonic() + WAIT_S
    while True:
        view = json_of(instructor.grader("GET", "api/class"))["exercises"][EXERCISE]["learners"]
        shown = {n: (view[n]["recorded"], view[n]["penalty"]) for n in grades if n in view}
        if shown == grades or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert shown == grades, view
    rows = class_csv_when(instructor, EXERCISE, grades, WAIT_S)
    in_csv = {r["student_id"]: (float(r["score"]), float(r["late_submission_penalty"]))
              for r in rows if r["assignment"] == EXERCISE and r["student_id"] in grades}
    assert in_csv == grades, rows
    out = tmp_path / "export.csv"
    out.unlink(missing_ok=True)
    nbgrader(Path(hub.env["GRADER_COURSE"]), "export", f"--to={out}")
    with open(out) as handle:
        exported = {r["student_id"]: (float(r["score"]), float(r["late_submission_penalty"]))
                    for r in csv.DictReader(handle)
                    if r["assignment"] == EXERCISE and r["student_id"] in grades}
    assert exported == grades


def test_deadline_late_work_extension_and_regrade_agree_everywhere(hub, sign_in, class_of_30,
                                                                    tmp_path):
    ada, bob, ins = sign_in("ada"), sign_in("bob"), sign_in("ins")
    cy = Signed(hub, class_of_30[0])
    full = float(expected(EXERCISE)["reference"]["score"])
    partial = float(expected(EXERCISE)["float_bytes"]["score"])
    first = [(ada, _submit(ada, _notebook(hub, "reference"))),
             (bob, _submit(bob, _notebook(hub, "float_bytes")))]
    for learner, sub_id in first:
        _wait_graded(learner, sub_id)
    _three_views(hub, ins, {ada.name: (full, 0.0), bob.name: (partial, 0.0)}, tmp_path)

    # a deadline now: what was handed in stays on time
    now = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    _instructor_command(hub, "autograder.service.deadlines", "due", EXERCISE, now)
    _instructor_command(hub, "autograder.service.deadlines", "extend", EXERCISE, bob.name, "2")
    time.sleep(CACHE_S + 0.5)  # the service reads the gradebook's dates this often
    _three_views(hub, ins, {ada.name: (full, 0.0), bob.name: (partial, 0.0)}, tmp_path)

    # late work: graded, counts 0 (the default policy) unless on time by an extension
    late = [(learner, _submit(learner, _notebook(hub, "reference"))) for learner in (ada, bob, cy)]
    for learner, sub_id in late:
        _wait_graded(learner, sub_id)
    after = {ada.name: (full, 0.0), bob.name: (full, 0.0), cy.name: (0.0, full)}
    _three_views(hub, ins, after, tmp_path)

    # a regrade grades each recorded submission again, at its own submission time
    said = _instructor_command(hub, "autograder.service.regrade", EXERCISE)
    assert "3 recorded submission(s) queued" in said, said
    deadline = time.monotonic() + WAIT_S
    while any(s["status"] != "done" for learner in (ada, bob, cy)
              for s in json_of(learner.grader("GET", "api/submissions"))["submissions"]
              if s["exercise"] == EXERCISE and s["status"] not in ("regraded", "set_aside", "replaced")):
        assert time.monotonic() < deadline, "the regrade did not finish"
        time.sleep(1)
    _three_views(hub, ins, after, tmp_path)
