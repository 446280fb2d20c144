"""The grading run, in-process (``autograder/pipeline.py``): ``grade_all(source, sink, ...)``
from a small source held in memory into :class:`~autograder.pipeline.Held` or a sink
of the test's own. The sandbox is replaced by a stand-in that records each request and
answers a given :class:`~autograder.sandbox.Outcome`, so nothing here starts a process
or changes a file's mode (and a sandbox can be made to fail); the real sandbox runs the
same run through all three front doors in ``test_golden.py`` (``grader`` tier)."""
import json

import pytest

from autograder import exercises, gradescope, judge, load, pipeline, results, sandbox
from autograder.sandbox import Limits, Outcome
from autograder.service.api.handler import submission_view
from autograder.service.store.rows import Submission
from tests.grading.helpers import ASSIGNMENT, SAMPLES

LIMITS = Limits(seconds=5)


class Sandbox:
    """Stands in for :func:`autograder.sandbox.run`: ``requests`` holds what it was asked
    to run; each answer is ``outcome`` (or, when it is an exception, raises it)."""

    def __init__(self):
        self.requests, self.protected, self.launched = [], [], []
        self.outcome = Outcome("timeout", "it ran for more than 5 s", output_tail="printed")

    def run(self, request, limits, slot):
        self.requests.append((request, limits, slot))
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome

    def launch(self, names):
        self.launched.append(names)


@pytest.fixture(autouse=True)
def fake(monkeypatch):
    stand_in = Sandbox()
    monkeypatch.setattr(sandbox, "run", stand_in.run)
    monkeypatch.setattr(sandbox, "protect", stand_in.protected.append)
    monkeypatch.setattr(sandbox, "shared", lambda: stand_in)
    return stand_in


class Source:
    """Hand-ins held in memory (what a front door's source gives :func:`pipeline.grade_all`)."""

    def __init__(self, *subs, hide=("/hidden",), private=None, exercises=(ASSIGNMENT,)):
        self.subs, self.hide, self.private, self._exercises = list(subs), list(hide), private, exercises

    def exercises(self):
        return list(self._exercises)

    def submissions(self):
        return iter(self.subs)


class Progress(pipeline.Progress):
    def __init__(self):
        self.said = []

    def unchanged(self, sub, done):
        self.said.append(("kept", sub.name))

    def started(self, count):
        self.said.append(("started", count))

    def graded(self, sub, result):
        self.said.append(("graded", sub.name))

    def unwritten(self, sub, exc):
        self.said.append(("unwritten", sub.name, type(exc).__name__))


def answer(name, sample="reference"):
    """A loaded ``.py`` hand-in of a sample answer."""
    raw = (SAMPLES / f"{sample}.py").read_bytes()
    return load.from_bytes(name, raw, ASSIGNMENT, f"{name}.py")


def stub(name):
    return load.Submission(name=name, path=None, exercise=ASSIGNMENT, attempted=False, sha256="00")


def unreadable(name):
    return load.from_bytes(name, b"\xff", ASSIGNMENT, f"{name}.ipynb")


def test_each_hand_in_is_run_and_judged_into_the_sink(fake):
    held, progress = pipeline.Held(), Progress()
    subs = [answer("ada"), answer("bob", "wrong_dtype")]
    assert pipeline.grade_all(Source(*subs, private="/results"), held, LIMITS, progress=progress) == 0
    assert fake.protected == ["/results"] and fake.launched == [[ASSIGNMENT]]
    requests = {r["cells"][0]["source"]: (r, limits, slot) for r, limits, slot in fake.requests}
    for sub in subs:
        request, limits, slot = requests[sub.cells[0].source]
        digest = pipeline.digest(sub, LIMITS)
        assert request == {"exercise": ASSIGNMENT, "seed": pipeline.seed_for(digest),
                           "memory_mib": LIMITS.memory_mib, "hide": ["/hidden"],
                           "cells": [{"label": c.label, "source": c.source} for c in sub.cells]}
        assert (limits, slot) == (LIMITS, 0)
    assert sorted(r.digest for r in held.results) == sorted(pipeline.digest(s, LIMITS) for s in subs)
    for result in held.results:
        assert (result.status, result.output, result.score) == ("timeout", "it ran for more than 5 s", 0)
        assert (result.learner_output, result.exercise, result.fault) == ("printed", ASSIGNMENT, "")
    assert progress.said[0] == ("started", 2)
    assert sorted(progress.said[1:]) == [("graded", "ada"), ("graded", "bob")]


def test_what_cannot_run_is_judged_without_the_sandbox(fake):
    held = pipeline.Held()
    pipeline.grade_all(Source(stub("ada"), unreadable("bob")), held, LIMITS)
    assert fake.requests == []
    assert sorted(r.status for r in held.results) == ["not attempted", "unreadable"]


def test_the_digest_is_what_is_graded():
    """The file's bytes, the exercise, the grader's code and the limits: a change of any
    regrades; the seed follows from it."""
    sub = answer("ada")
    digest = pipeline.digest(sub, LIMITS)
    assert pipeline.digest(answer("bob"), LIMITS) == digest  # the learner's name is not graded
    assert pipeline.digest(answer("ada", "wrong_dtype"), LIMITS) != digest
    assert pipeline.digest(sub, Limits(seconds=6)) != digest
    other = load.from_bytes("ada", (SAMPLES / "reference.py").read_bytes(), "donation_report", "a.py")
    assert pipeline.digest(other, LIMITS) != digest
    assert pipeline.seed_for(digest) == int(digest[:8], 16)


def test_the_seed_hashes_only_the_code_that_decides_a_grade():
    """Every exercise's hidden tests and probe, the sandbox and the judge are hashed;
    the service, its pages, Gradescope's packaging and sample answers are not."""
    files = {p.relative_to(pipeline.Path(pipeline.__file__).parent).as_posix()
             for p in pipeline.grading_files()}
    for name in ("judge.py", "sandbox/learner.py", "sandbox/supervisor.py", "feedback.py"):
        assert name in files
    for exercise in exercises.names():
        assert {f"exercises/{exercise}/hidden/tests.py", f"exercises/{exercise}/probe.py"} <= files
    assert not [f for f in files if f.startswith("service/") or "samples" in f.split("/")]
    assert "gradescope.py" not in files and "defaults.py" not in files


class Keeps(pipeline.Held):
    """A sink that already holds a result for the digests in ``done``."""

    def __init__(self, done):
        super().__init__()
        self.done, self.asked = done, []

    def kept(self, sub, hex_digest):
        self.asked.append((sub.name, hex_digest))
        return {"extra_data": {"digest": hex_digest}} if hex_digest in self.done else None


def test_an_unchanged_hand_in_is_kept_unless_forced(fake):
    ada, bob = answer("ada"), answer("bob", "wrong_dtype")
    sink, progress = Keeps({pipeline.digest(ada, LIMITS)}), Progress()
    pipeline.grade_all(Source(ada, bob), sink, LIMITS, progress=progress)
    assert sink.asked == [("ada", pipeline.digest(ada, LIMITS)), ("bob", pipeline.digest(bob, LIMITS))]
    assert progress.said == [("kept", "ada"), ("started", 1), ("graded", "bob")]
    assert [r.digest for r in sink.results] == [pipeline.digest(bob, LIMITS)]
    assert len(fake.requests) == 1
    forced = Keeps({pipeline.digest(ada, LIMITS)})
    pipeline.grade_all(Source(ada, bob), forced, LIMITS, force=True)
    assert forced.asked == [] and len(forced.results) == 2


class Refuses(pipeline.Held):
    """A sink that cannot write ``ada``'s result (a full disk, say)."""

    closed = False

    def put(self, sub, result):
        if sub.name == "ada":
            raise OSError(28, "No space left on device")
        super().put(sub, result)

    def close(self):
        self.closed = True


def test_a_result_the_sink_refuses_is_counted_and_the_rest_still_written():
    sink, progress = Refuses(), Progress()
    refused = pipeline.grade_all(Source(stub("ada"), stub("bob"), unreadable("cy")), sink, LIMITS,
                           progress=progress)
    assert refused == 1 and sink.closed
    assert len(sink.results) == 2
    assert ("unwritten", "ada", "OSError") in progress.said
    assert {s for s in progress.said if s[0] == "graded"} == {("graded", "bob"), ("graded", "cy")}


def test_a_sandbox_that_raises_is_a_grader_fault_of_that_hand_in_only(fake):
    fake.outcome = RuntimeError("the zygote is gone")
    held = pipeline.Held()
    pipeline.grade_all(Source(answer("ada"), stub("bob")), held, LIMITS)
    by_status = {r.status: r for r in held.results}
    assert sorted(by_status) == ["error", "not attempted"]
    fault = by_status["error"]
    assert fault.output == ("the grader failed on this submission (RuntimeError); "
                            "please tell your instructor")
    assert "RuntimeError: the zygote is gone" in fault.fault and "Traceback" not in fault.output
    assert fault.digest == pipeline.digest(answer("ada"), LIMITS)
    assert by_status["not attempted"].fault == ""


def test_a_failed_preparation_is_a_fault_of_every_hand_in(monkeypatch, fake):
    def refuse(private):
        raise PermissionError("chmod refused")

    monkeypatch.setattr(sandbox, "protect", refuse)
    held = pipeline.Held()
    pipeline.grade_all(Source(answer("ada"), stub("bob")), held, LIMITS)
    assert [r.status for r in held.results] == ["error", "error"]
    assert all("PermissionError: chmod refused" in r.fault for r in held.results)
    assert held.results[0].fault == held.results[1].fault  # not one frame more per hand-in
    assert fake.requests == []


@pytest.mark.parametrize("reply", [None, [1, 2], "obs"], ids=["none", "a-list", "a-string"])
def test_a_reply_the_judge_cannot_read_is_an_error_result(reply):
    """The reply comes from the learner's process: a shape the judge cannot read gives
    this hand-in an ``error`` in the learner's words, and the instructor, whom those
    words send the learner to, the judge's traceback."""
    result = pipeline.judged(answer("ada"), Outcome("ok", reply=reply, output_tail="hi"), "ab" * 32, 2.0)
    assert (result.status, result.score, result.seconds, result.learner_output) == ("error", 0, 2.0, "hi")
    assert result.output.startswith("the grader could not read what your code produced (")
    assert result.output.endswith("); please tell your instructor")
    assert result.checks == tuple(judge.not_run(ASSIGNMENT))
    assert result.fault.startswith("Traceback") and "judge.py" in result.fault
    assert "Traceback" not in json.dumps(result.to_gradescope()["tests"])


def test_judging_without_running_gives_a_typed_result():
    sub = load.Submission(name="ada", path=None, exercise=ASSIGNMENT, attempted=False)
    result = pipeline.judged(sub, None, "ab" * 32, 0.5)
    assert (result.status, result.score, result.seconds) == ("not attempted", 0, 0.5)
    assert result.max_score == sum(p for _, _, p in judge.hidden_tests(ASSIGNMENT))
    fault = pipeline.fault(ASSIGNMENT, KeyError("x"), "cd")
    assert (fault.status, fault.digest, fault.checks) == ("error", "cd", result.checks)
    assert "KeyError" in fault.output


class _Broken:
    """A source whose ``hide`` the grader cannot read: grading it is a grader fault."""

    hide, private = None, None

    def exercises(self):
        return []

    def submissions(self):
        return [load.read("ada", SAMPLES / "reference.py", None, ASSIGNMENT)]


def _faulted():
    held = pipeline.Held()
    pipeline.grade_all(_Broken(), held, sandbox.Limits())
    return held.results[0]


def test_a_grader_fault_keeps_its_traceback_for_the_instructor(tmp_path):
    result = _faulted()
    assert (result.status, result.score) == ("error", 0)
    assert result.fault.startswith("Traceback (most recent call last):")
    assert "TypeError" in result.fault and "pipeline.py" in result.fault
    assert results.stored(json.loads(json.dumps(result.to_record())), ASSIGNMENT) == result
    folder = json.loads(results.write_results(tmp_path, "ada", result).read_text())
    assert folder["extra_data"]["fault"] == result.fault
    cut = gradescope.for_gradescope(result, "visible")
    assert cut["extra_data"]["fault"] == result.fault
    (instructors,) = [t for t in cut["tests"] if t["visibility"] == "hidden"]
    assert (instructors["output"], instructors["max_score"]) == (result.fault, 0)


def test_a_grader_fault_shows_learners_no_traceback():
    result = _faulted()
    assert result.output == ("the grader failed on this submission (TypeError); "
                             "please tell your instructor")
    row = Submission.of({"id": "x" * 32, "exercise": ASSIGNMENT, "learner": "ada",
                         "status": "done", "submitted_at": 0.0, "started_at": 1.0,
                         "finished_at": 2.0, "result": json.dumps(result.to_record())})
    learner_reads = [json.dumps(submission_view(row)), json.dumps(result.to_gradescope())]
    cut = gradescope.for_gradescope(result, "visible")
    learner_reads += [json.dumps(t) for t in cut["tests"] if t["visibility"] != "hidden"]
    learner_reads.append(cut["output"])
    for text in learner_reads:
        assert "Traceback" not in text and "pipeline.py" not in text


def test_the_command_line_names_a_grader_fault_for_whoever_runs_it(capsys):
    """The command line's user is the instructor: its progress line ends with the
    fault's last line, which the learner's results never show."""
    from autograder.__main__ import Lines

    result = pipeline.fault(ASSIGNMENT, RuntimeError("no learner process can run here"), "cd")
    with Lines() as lines:
        lines.started(1)
        lines.graded(answer("ada"), result)
    line = capsys.readouterr().out.strip()
    assert line.startswith("ada: 0/") and " - the grader failed on this submission" in line
    assert line.endswith("[RuntimeError: no learner process can run here]")
    assert "no learner process" not in result.output


def test_every_door_grades_one_submission_with_the_same_unit(fake):
    """``grade_one`` is what the batch loop and the service's rows both call: the same
    hand-in gives the same result through either, the service's row naming its exercise
    to the zygote and preparing nothing else (the process did that once)."""
    from autograder.service.grading import grade_row
    sub = answer("ada")
    held = pipeline.Held()
    pipeline.grade_all(Source(sub, hide=()), held, LIMITS)
    one = pipeline.grade_one(sub, LIMITS, 0)
    row = grade_row(Submission(id="s", learner="bob", exercise=ASSIGNMENT, status="running",
                               submitted_at=0.0, notebook=b"\xff"), LIMITS, 0)
    assert pipeline.digest(sub, LIMITS) == held.results[0].digest == one.digest
    assert ({**held.results[0].to_record(), "seconds": 0} == {**one.to_record(), "seconds": 0})
    assert fake.protected == [None] and fake.launched == [[ASSIGNMENT], [ASSIGNMENT]]
    assert (row.exercise, row.status, row.fault) == (ASSIGNMENT, "unreadable", "")


def test_one_submission_never_raises_on_a_grader_fault(fake):
    fake.outcome = RuntimeError("the zygote died")
    result = pipeline.grade_one(answer("ada"), LIMITS, 0)
    assert (result.status, result.score) == ("error", 0)
    assert "RuntimeError" in result.output and "the zygote died" in result.fault
