"""Typed results, and Gradescope's format made in one place (in-process, no sandbox)."""
import json

from autograder import gradescope, judge, load, pipeline, results, sandbox
from autograder.results import CheckResult, GradingResult
from autograder.service.app import describe
from tests.grading.helpers import ASSIGNMENT, SAMPLES


def _result():
    return GradingResult(
        [CheckResult("test_values", "values: the result equals state + delta", 2, 2, "passed",
                     "Passed: values: the result equals state + delta."),
         CheckResult("test_empty", "empty input returns an empty float32 array", 0, 1, "failed",
                     "Checked: ...\nExpected: ...\nGot: ...")],
        "1 of 2 checks passed.", "graded", "ab" * 32, 1.23456, "x" * 2500, ASSIGNMENT)


# Gradescope's results.json as the command line wrote it before results were typed
# (autograder/results.py results_json + grade.entry), and the exercise graded (which
# summary.csv is rebuilt from): the bytes must not change.
WRITTEN = """{
  "score": 2,
  "max_score": 3,
  "output": "1 of 2 checks passed.",
  "execution_time": 1.235,
  "tests": [
    {
      "name": "values: the result equals state + delta",
      "score": 2,
      "max_score": 2,
      "status": "passed",
      "output": "Passed: values: the result equals state + delta.",
      "visibility": "visible"
    },
    {
      "name": "empty input returns an empty float32 array",
      "score": 0,
      "max_score": 1,
      "status": "failed",
      "output": "Checked: ...\\nExpected: ...\\nGot: ...",
      "visibility": "visible"
    }
  ],
  "extra_data": {
    "status": "graded",
    "digest": "%s",
    "learner_output": "%s",
    "exercise": "%s"
  }
}
""" % ("ab" * 32, "x" * 2000, ASSIGNMENT)


def test_results_json_keeps_its_bytes(tmp_path):
    path = results.write_results(tmp_path, "ada", _result())
    assert path == tmp_path / "ada" / "results.json"
    assert path.read_text() == WRITTEN


def test_every_edge_uses_the_one_conversion(tmp_path):
    """The command line's file, the service's reply and Gradescope's results.json
    are the same conversion of the same typed result."""
    result = _result()
    edge = result.to_gradescope()
    assert json.loads(results.write_results(tmp_path, "ada", result).read_text()) == edge
    row = {"id": "x" * 32, "exercise": ASSIGNMENT, "learner": "ada", "status": "done",
           "submitted_at": 0.0, "started_at": 1.0, "finished_at": 2.0,
           "result": json.loads(json.dumps(result.to_record()))}  # as the store keeps it
    assert describe(row)["result"] == edge
    cut = gradescope.for_gradescope(result, "after_published")
    assert cut == {**{k: v for k, v in result.to_gradescope("after_published").items()
                      if k in gradescope.RESULT_FIELDS}, "output_format": "text"}
    assert {t["visibility"] for t in cut["tests"]} == {"after_published"}
    assert "max_score" not in cut  # not among Gradescope's documented top-level fields


def test_a_stored_result_comes_back_whole():
    result = _result()
    assert len(result.learner_output) == 2000  # the end of what the learner printed
    stored = json.loads(json.dumps(result.to_record()))
    assert results.stored(stored, ASSIGNMENT) == result
    assert [c.grade_id for c in results.stored(stored, ASSIGNMENT).checks] == \
        ["test_values", "test_empty"]


def test_a_result_stored_before_typing_gets_grade_ids_from_titles():
    """A service database from before typed results holds Gradescope dicts."""
    old = GradingResult(judge.not_run(ASSIGNMENT), "timed out", "timeout", "d", 3.0)
    back = results.stored(old.to_gradescope(), ASSIGNMENT)
    assert [c.grade_id for c in back.checks] == [n for n, _, _ in judge.hidden_tests(ASSIGNMENT)]
    assert back.to_gradescope() == old.to_gradescope()


def test_judging_without_running_gives_a_typed_result():
    sub = load.Submission(name="ada", path=None, exercise=ASSIGNMENT, attempted=False)
    result = pipeline.judged(sub, None, "ab" * 32, 0.5)
    assert (result.status, result.score, result.seconds) == ("not attempted", 0, 0.5)
    assert result.max_score == sum(p for _, _, p in judge.hidden_tests(ASSIGNMENT))
    fault = pipeline.fault(ASSIGNMENT, KeyError("x"), "cd")
    assert (fault.status, fault.digest, fault.checks) == ("error", "cd", result.checks)
    assert "KeyError" in fault.output


def test_no_other_module_builds_gradescope_entries():
    """Gradescope's per-test and timing keys are written in results.py alone."""
    from tests.course import REPO

    makers = sorted(str(p.relative_to(REPO)) for p in (REPO / "autograder").rglob("*.py")
                    if any(key in p.read_text() for key in ('"visibility":', '"execution_time":')))
    assert makers == ["autograder/results.py"]


class _Broken:
    """A source whose ``hide`` the grader cannot read: grading it is a grader fault."""

    hide, private = None, None

    def exercises(self):
        return []

    def submissions(self):
        return [load.read("ada", SAMPLES / "reference.py", None, ASSIGNMENT)]


def _faulted():
    held = pipeline.Held()
    pipeline.run(_Broken(), held, sandbox.Limits())
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
    row = {"id": "x" * 32, "exercise": ASSIGNMENT, "learner": "ada", "status": "done",
           "submitted_at": 0.0, "started_at": 1.0, "finished_at": 2.0,
           "result": json.loads(json.dumps(result.to_record()))}
    learner_reads = [json.dumps(describe(row)), json.dumps(result.to_gradescope())]
    cut = gradescope.for_gradescope(result, "visible")
    learner_reads += [json.dumps(t) for t in cut["tests"] if t["visibility"] != "hidden"]
    learner_reads.append(cut["output"])
    for text in learner_reads:
        assert "Traceback" not in text and "pipeline.py" not in text


def test_a_result_without_a_fault_is_stored_as_before():
    assert "fault" not in _result().to_record()
    assert "fault" not in _result().for_instructor()["extra_data"]
