"""Typed results, and Gradescope's format made in one place (in-process, no sandbox)."""
import json

from autograder import gradescope, judge, results
from autograder.results import CheckResult, GradingResult
from autograder.service.api.handler import submission_view
from autograder.service.store.rows import Submission
from tests.grading.helpers import ASSIGNMENT


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
""" % ("ab" * 32, "x" * 2000, ASSIGNMENT)  # noqa: UP031 (JSON's own braces)


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
    row = Submission.of({"id": "x" * 32, "exercise": ASSIGNMENT, "learner": "ada",
                         "status": "done", "submitted_at": 0.0, "started_at": 1.0,
                         "finished_at": 2.0, "result": json.dumps(result.to_record())})
    assert submission_view(row)["result"] == edge
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


def test_no_other_module_builds_gradescope_entries():
    """Gradescope's per-test and timing keys are written in results.py alone."""
    from tests.course import REPO

    makers = sorted(str(p.relative_to(REPO)) for p in (REPO / "autograder").rglob("*.py")
                    if any(key in p.read_text() for key in ('"visibility":', '"execution_time":')))
    assert makers == ["autograder/results.py"]


def test_a_result_without_a_fault_is_stored_as_before():
    assert "fault" not in _result().to_record()
    assert "fault" not in _result().for_instructor()["extra_data"]
