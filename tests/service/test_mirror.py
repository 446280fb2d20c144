"""The gradebook mirror writes each check's score to the cell its grade id names,
and the notebook nbgrader keeps is the stored one, byte for byte."""
import dataclasses
import json
import os
import shutil
import time

import pytest
from nbgrader.api import Gradebook

from autograder.judge import hidden_tests
from autograder.results import CheckResult, GradingResult
from autograder.service.gradebook.mirror import Mirror, NotReady
from autograder.service.gradebook.out_of_date import DEADLINES_MARK
from autograder.service.gradebook.sync import ROUND, GradebookTaken
from autograder.service.grading import GradingThreads
from autograder.service.store import Caps, Store
from tests.course import copy_course
from tests.grading.helpers import ASSIGNMENT, released_notebook
from tests.service.submissions import FinishesAfterARead, notebook_with


def _graded_rows(course, tmp_path, learners):
    """One done submission per learner in a new store: ``(rows, checks, raw)``. Points
    differ per check, and the checks come in reverse order: only the grade ids say
    which cell each score belongs to."""
    raw = (json.dumps(released_notebook(course), indent=1) + "\n").encode()
    checks = [CheckResult(name, title, points if i % 2 else 0, points,
                          "passed" if i % 2 else "failed", "")
              for i, (name, title, points) in enumerate(hidden_tests(ASSIGNMENT))]
    store = Store(tmp_path / "grading.db")
    try:
        for learner in learners:
            sub_id = store.admit(learner, ASSIGNMENT, raw, "10.0.0.1", Caps(rate_count=0))[0]
            store.claim("host:1:0", lease=30)
            result = GradingResult(checks[::-1], "", "graded", "d", 1.0)
            assert store.finish(sub_id, "host:1:0", result.to_record())
        rows = [store.graded(r.learner, r.exercise)[0] for r in store.unsynced()]
    finally:
        store.engine.dispose()
    return rows, checks, raw


def _submitted(course):
    """Who has a submission in the gradebook, as another reader (nbgrader export) sees it."""
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student_id for s in gb.assignment_submissions(ASSIGNMENT)}


def test_scores_land_on_the_cells_their_grade_ids_name(course_template, tmp_path):
    course = copy_course(course_template, tmp_path / "course")
    [row], checks, raw = _graded_rows(course, tmp_path, ["ada"])
    Mirror(course).record(row)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        scores = {c.grade_id: gb.find_grade(c.grade_id, ASSIGNMENT, ASSIGNMENT, "ada").auto_score
                  for c in checks}
    assert scores == {c.grade_id: float(c.score) for c in checks}
    saved = course / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert saved.read_bytes() == raw


@pytest.mark.parametrize("rule,kept", [("best", 10.0), ("latest", 7.0)])
def test_nbgrader_export_holds_the_recorded_grade(new_service, course_template, rule, kept):
    """10/10, then a worse notebook: the gradebook (nbgrader export) holds the recorded
    one, by the rule the service was started with; the submitted notebook is that one."""
    service = new_service(jobs=1, recorded=rule).start()
    first = service.submit("ada", notebook_with(course_template, "reference"))
    service.wait_done([first])
    second = service.submit("ada", notebook_with(course_template, "wrong_arithmetic"))
    service.wait_done([second])
    service.wait_gradebook([first, second])
    assert float(service.export()["ada"]["raw_score"]) == kept
    saved = (service.course / "submitted" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert ("_sub = jax.jit" in saved) == (rule == "latest")  # wrong_arithmetic's answer
    rows = service.rows()
    assert {rows[first]["gradebook"], rows[second]["gradebook"]} == {"recorded", "superseded"}


def test_readers_see_a_round_of_grades_whole_or_not_at_all(course_template, tmp_path):
    """nbgrader's Gradebook commits a new submission before its scores: written through
    the mirror, another reader sees no submission until every score of the round is
    there, and a round that fails leaves nothing behind."""
    course = copy_course(course_template, tmp_path / "course")
    rows, checks, _ = _graded_rows(course, tmp_path, ["ada", "bob", "cy"])
    mirror = Mirror(course)
    with pytest.raises(RuntimeError), mirror.writing() as book:
        book.record(rows[0])
        raise RuntimeError("the round fails after its first grade")
    assert _submitted(course) == set()
    with mirror.writing() as book:
        for row in rows:
            book.record(row)
            assert _submitted(course) == set()
    assert _submitted(course) == {"ada", "bob", "cy"}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        assert {s.student_id: s.score for s in gb.assignment_submissions(ASSIGNMENT)} == \
            dict.fromkeys(["ada", "bob", "cy"], float(sum(c.score for c in checks)))


def test_an_unattempted_result_says_no_response_on_each_answer_cell(course_template, tmp_path):
    """As nbgrader autograde's SaveAutoGrades writes it: "No response." on every solution
    cell's comment of an unattempted notebook, and no comment once it is attempted."""
    course = copy_course(course_template, tmp_path / "course")
    [row], _, _ = _graded_rows(course, tmp_path, ["ada"])
    unattempted = dataclasses.replace(row, result=dataclasses.replace(row.result,
                                                                      status="not attempted"))

    def comments():
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            cells = gb.find_notebook(ASSIGNMENT, ASSIGNMENT).solution_cells
            assert cells
            return {gb.find_comment(c.name, ASSIGNMENT, ASSIGNMENT, "ada").auto_comment
                    for c in cells}

    Mirror(course).record(unattempted)
    assert comments() == {"No response."}
    Mirror(course).record(row)
    assert comments() == {None}


def test_a_replaced_gradebook_file_gets_the_next_grades(course_template, tmp_path):
    """The mirror keeps its gradebook open between rounds; when the file is replaced (a
    restored backup, a new release) the next grade lands in the new file, not the old."""
    course = copy_course(course_template, tmp_path / "course")
    rows, _, _ = _graded_rows(course, tmp_path, ["ada", "bob"])
    mirror = Mirror(course)
    mirror.record(rows[0])
    fresh = tmp_path / "fresh.db"
    shutil.copy(course_template / "gradebook.db", fresh)
    os.replace(fresh, course / "gradebook.db")
    mirror.record(rows[1])
    assert _submitted(course) == {"bob"}


def test_a_submission_graded_during_a_gradebook_round_is_written_after_it(course_template,
                                                                           tmp_path):
    """A round of the gradebook thread (here: every recorded grade written again, as after
    a change of deadlines) weighs a learner's graded submissions, then writes the best.
    One graded meanwhile was never weighed: it must not be marked superseded, and the
    next round writes it when it is better. (Marking it lost a learner's extension-saved
    10/10 behind an earlier 7/10 in every view but the class page.)"""
    course = copy_course(course_template, tmp_path / "course")
    raw = (json.dumps(released_notebook(course), indent=1) + "\n").encode()
    tests = hidden_tests(ASSIGNMENT)
    checks = {full: [CheckResult(name, title, points if full or i else 0, points,
                                 "passed" if full or i else "failed", "")
                     for i, (name, title, points) in enumerate(tests)] for full in (False, True)}
    store = FinishesAfterARead(tmp_path / "grading.db")
    threads = GradingThreads(store, Mirror(course), None, 1, 0, 30, "best")
    try:
        ids = []
        for full in (False, True):
            ids.append(store.admit("ada", ASSIGNMENT, raw, "10.0.0.1", Caps(rate_count=0))[0])
            store.claim("host:1:0", lease=30)
            record = GradingResult(checks[full], "", "graded", "d", 1.0).to_record()
            if full:
                store.pending = (ids[-1], "host:1:0", record)
            else:
                assert store.finish(ids[-1], "host:1:0", record)
                threads.sync.once()
        threads.sync.deadlines()  # the round during which the better one is graded
        assert store.pending is None
        threads.sync.once()
        states = {r.id: r.gradebook for r in store.graded("ada", ASSIGNMENT, notebooks=False)}
    finally:
        store.engine.dispose()
    assert states == {ids[0]: "superseded", ids[1]: "recorded"}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        best = sum(c.max_score for c in checks[True])
        assert gb.find_submission(ASSIGNMENT, "ada").score == best


def test_a_pass_whose_lock_another_process_took_writes_nothing_more(course_template, tmp_path):
    """Passes of the gradebook thread are one process's at a time (the store's lock
    ``gradebook``). A pass that outlived its lock while another process took it over
    stops before its next round: what it chose may be older than what the other writes."""
    course = copy_course(course_template, tmp_path / "course")
    learners = [f"l{i:02}" for i in range(ROUND + 1)]
    _graded_rows(course, tmp_path, learners)

    class TakenOverAfterARound(Store):
        def mark_recorded(self, *args):
            super().mark_recorded(*args)
            with self.engine.begin() as conn:  # our lock ran out; another process took it
                conn.exec_driver_sql("UPDATE locks SET owner = 'host:2:0', until = ? "
                                     "WHERE name = 'gradebook'", (time.time() + 120,))

    store = TakenOverAfterARound(tmp_path / "grading.db")
    try:
        with pytest.raises(GradebookTaken):
            GradingThreads(store, Mirror(course), None, 1, 0, 30, "best").sync.once()
        unsynced = [r.learner for r in store.unsynced()]
    finally:
        store.engine.dispose()
    assert unsynced == learners[ROUND:] and _submitted(course) == set(learners[:ROUND])


def test_a_grade_the_gradebook_cannot_take_holds_up_no_deadline_change(course_template,
                                                                       tmp_path):
    """Both grades are in the gradebook; then bob's result names a cell the gradebook
    lacks (NotReady), and the deadlines change. The pass still writes ada's grade and
    sets the store's mark (the penalties are current), and hands bob's grade back to the
    rounds that retry it, instead of stopping at bob every round or forgetting him."""
    course = copy_course(course_template, tmp_path / "course")
    _graded_rows(course, tmp_path, ["ada", "bob"])
    store = Store(tmp_path / "grading.db")
    try:
        threads = GradingThreads(store, Mirror(course), None, 1, 0, 30, "best")
        assert threads.sync.round() is None and not store.unsynced()
        with store.engine.begin() as conn:  # bob's check names no cell of the release
            conn.exec_driver_sql("UPDATE submissions SET result = replace(result, "
                                 "'\"grade_id\": \"test_', '\"grade_id\": \"gone_') "
                                 "WHERE learner = 'bob'")
        store.set_mark(DEADLINES_MARK, "the dates before a change")
        problem = threads.sync.round()
        mark, state = store.mark(DEADLINES_MARK), threads.mirror.deadlines.state()
        unsynced = [r.learner for r in store.unsynced()]
    finally:
        store.engine.dispose()
    assert isinstance(problem, NotReady) and mark == state and unsynced == ["bob"]


def test_a_round_reports_a_fault_before_a_grade_the_gradebook_cannot_take(tmp_path):
    """One learner's grade the gradebook cannot take is reported every round; a fault of
    the deadline pass behind it (here a full disk) must still be what the log says."""
    store = Store(tmp_path / "grading.db")
    threads = GradingThreads(store, Mirror(tmp_path), None, 1, 0, 30, "best")

    def not_ready():
        raise NotReady("bob's result names a cell the gradebook lacks")

    def full_disk():
        raise OSError("No space left on device")

    threads.sync.once, threads.sync.deadlines = not_ready, full_disk
    try:
        assert str(threads.sync.round()) == "No space left on device"
    finally:
        store.engine.dispose()
