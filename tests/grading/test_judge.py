"""Step 3 of grading, in-process (``autograder/judge.py``): the hidden tests' verdict on
observations, and the overall words and status of a loaded submission and its sandbox
:class:`~autograder.sandbox.Outcome`, both made by hand here (no sandbox runs). Real
observations come from the probe run in this process on a sample answer."""
import functools
import json
import os
import subprocess
import sys

import pytest

from autograder import exercises, judge, load
from autograder.exercises.update_with_donate.probe import observe
from autograder.sandbox import Outcome
from tests.grading.helpers import ASSIGNMENT, EXPECTED, SAMPLES, STOPPED

SEED = 7
TESTS = judge.hidden_tests(ASSIGNMENT)  # [(name, title, points)]
TITLES = {name: title for name, title, _ in TESTS}
COULD_NOT = "The grader could not complete this check (KeyError); please tell your instructor."


@functools.cache
def _observed(sample):
    namespace = {}
    exec((SAMPLES / f"{sample}.py").read_text(), namespace)
    return json.dumps(observe(namespace, SEED))  # as the learner's process sends them


def observed(sample):
    """The probe's observations of ``sample``'s answer (a fresh copy to change)."""
    return json.loads(_observed(sample))


def submission(**fields):
    return load.Submission(name="ada", path=None, exercise=ASSIGNMENT, **fields)


def test_checks_on_a_right_answer_pass_with_full_points():
    found = judge.checks(ASSIGNMENT, observed("reference"), SEED)
    assert [(c.grade_id, c.title, c.score, c.max_score) for c in found] == \
        [(name, title, points, points) for name, title, points in TESTS]
    assert [(c.status, c.output) for c in found] == \
        [("passed", f"Passed: {title}.") for _, title, _ in TESTS]


def test_checks_on_a_wrong_answer_fail_what_its_expected_grades_say():
    found = judge.checks(ASSIGNMENT, observed("wrong_dtype"), SEED)
    failed = [c for c in found if c.status == "failed"]
    assert [c.grade_id for c in failed] == EXPECTED["wrong_dtype"]["failed"]
    assert all(c.score == 0 and c.output and "Passed" not in c.output for c in failed)
    assert sum(c.score for c in found) == EXPECTED["wrong_dtype"]["score"]


def test_a_check_on_observations_without_the_function_says_so():
    name = TESTS[0][0]
    check = judge.check_result(ASSIGNMENT, name, {"missing": "update_with_donate"}, 1)
    assert (check.grade_id, check.score, check.status) == (name, 0, "failed")
    assert check.output == "`update_with_donate` is not defined"


def test_observations_a_check_cannot_read_give_plain_words():
    """Malformed observations (a grader bug, or a forged reply) never show a traceback or
    the hidden test's source: each check says it could not complete."""
    for name, _, points in TESTS:
        check = judge.check_result(ASSIGNMENT, name, {"values": 3}, SEED)
        assert (check.score, check.max_score, check.status) == (0, points, "failed")
        assert check.output.startswith("The grader could not complete this check (")
        assert "Traceback" not in check.output and "obs[" not in check.output


def test_one_error_that_stopped_every_call_is_said_once():
    """The first failing check says the error and where, and names the checks it kept from
    running; each of those says only that it did not run (judge.said_once)."""
    stopped = {"error": "RuntimeError: Array has been deleted",
               "where": {"line": 9, "code": "return state.sum()"}}
    obs = {"stopped": stopped}  # nothing else: every check fails (KeyError)
    (lead, lead_title, _), *others = TESTS
    first = judge.check_result(ASSIGNMENT, lead, obs, SEED)
    assert first.output == (COULD_NOT + "\nWhere: line 9 of your cell: `return state.sum()`"
                            + "\nNot run because of it: " + "; ".join(t for _, t, _ in others) + ".")
    for name, _, _ in others:
        assert judge.check_result(ASSIGNMENT, name, obs, SEED).output == (
            f"{STOPPED} the error reported under \"{lead_title}\" "
            "(line 9 of your cell: `return state.sum()`).")
    assert judge.said_once(ASSIGNMENT, others[0][0], {"stopped": {}}, SEED, COULD_NOT) == \
        f"{STOPPED} the error reported under \"{lead_title}\"."  # no line known: none said


def test_a_check_without_evidence_says_not_checked_and_names_the_failed_check_once():
    """Nothing donated: "state is donated" says what was observed; the two checks that need a
    donated state say "not checked" with its title, and do not repeat its observation."""
    found = {c.grade_id: c for c in judge.checks(ASSIGNMENT, observed("no_donation"), SEED)}
    cause = found["test_state_donated"].output
    assert "Got: jit__lambda donates 0 of its 2 arguments" in cause
    for name in ("test_delta_kept", "test_no_read_after_donation"):
        said = found[name].output
        assert f'Got: not checked: "{TITLES["test_state_donated"]}" failed' in said, said
        assert "donates 0 of its 2" not in said and "Hint:" not in said


def test_a_failed_check_names_the_requirement_row_its_observations_show():
    """The last line names the row of the task (autograder/exercises/<exercise>/
    requirements.py): the one the failure shows when the check grades several."""
    from autograder import requirements

    rows = {row.id: row.title for row in requirements.of(ASSIGNMENT)}
    both = {c.grade_id: c for c in judge.checks(ASSIGNMENT, observed("both_donated"), SEED)}
    assert both["test_delta_kept"].output.endswith(f"\nRequirement: {rows['keep-delta']}")
    read = {c.grade_id: c for c in judge.checks(ASSIGNMENT, observed("reads_donated"), SEED)}
    assert read["test_no_read_after_donation"].output.endswith(f"\nRequirement: {rows['no-read']}")
    # left unchecked by the no-read failure: the row both checks grade
    assert read["test_rebinding"].output.endswith(f"\nRequirement: {rows['no-read']}")
    assert all(c.status == "passed" for n, c in read.items()
               if n not in ("test_no_read_after_donation", "test_rebinding"))


@pytest.mark.parametrize("sample", ["reference", "wrong_arithmetic"])
def test_hidden_tests_run_under_pytest_and_agree(tmp_path, sample):
    """The hidden tests are real pytest tests (autograder/exercises/conftest.py): same
    verdicts as the grader's runner."""
    obs = observed(sample)
    saved = tmp_path / "obs.json"
    saved.write_text(json.dumps({"obs": obs, "seed": SEED}))
    env = dict(os.environ, AUTOGRADER_OBSERVATIONS=str(saved))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(exercises.get(ASSIGNMENT).folder / "hidden" / "tests.py"), "-rA"],
                          env=env, capture_output=True, text=True, cwd=tmp_path)
    failed_by_pytest = {line.split("::")[1].split()[0] for line in proc.stdout.splitlines()
                        if line.startswith("FAILED")}
    failed_by_grader = {name for name, _, _ in TESTS if judge.failure(ASSIGNMENT, name, obs, SEED)}
    assert failed_by_pytest == failed_by_grader
    assert bool(failed_by_grader) == (sample != "reference")


def test_checks_carry_nbgrader_grade_ids():
    checks = judge.not_run(ASSIGNMENT)
    assert [(c.grade_id, c.title, c.max_score) for c in checks] == judge.hidden_tests(ASSIGNMENT)
    assert all((c.score, c.status, c.output) == (0, "failed", judge.NOT_RUN) for c in checks)


def test_a_graded_verdict_counts_the_checks_and_adds_notes():
    reply = {"obs": observed("wrong_dtype"), "cell_errors": ["cell 3: NameError: name 'x' is not defined"]}
    sub = submission(notes=["read-only cells were edited (given); grading used the instructor's copy"])
    found, output, status = judge.verdict(sub, Outcome("ok", reply=reply), SEED)
    assert status == "graded" and found == judge.checks(ASSIGNMENT, reply["obs"], SEED)
    assert output == ("6 of 8 checks passed. Problems while running your code: cell 3: NameError: "
                      "name 'x' is not defined. Note: read-only cells were edited (given); "
                      "grading used the instructor's copy.")
    found, output, status = judge.verdict(submission(), Outcome("ok", reply={"obs": observed("reference")}),
                                          SEED)
    assert (output, status) == ("All 8 checks passed.", "graded")


def test_a_verdict_says_when_one_error_stopped_every_call():
    obs = {"stopped": {"error": "RuntimeError: Array has been deleted", "where": {"line": 9}}}
    _, output, status = judge.verdict(submission(), Outcome("ok", reply={"obs": obs}), SEED)
    assert status == "graded"
    assert output == ("0 of 8 checks passed. One error stopped every call: RuntimeError: Array has "
                      "been deleted at line 9 of your cell (the first failed check says more).")


@pytest.mark.parametrize("sub, outcome, output, status", [
    (submission(unreadable="notebook could not be read: invalid JSON"), None,
     "notebook could not be read: invalid JSON", "unreadable"),
    (submission(unreadable="this is the notebook of the exercise x", other_exercise="x"), None,
     "this is the notebook of the exercise x", "wrong exercise"),
    (submission(attempted=False), None,
     "not attempted: the answer cell is still the released stub", "not attempted"),
    (submission(), Outcome("timeout", "it ran for more than 60 s"), "it ran for more than 60 s",
     "timeout"),
    (submission(), Outcome("ok", reply={"obs": {"missing": "update_with_donate"},
                                        "cell_errors": ["the answer cell has a syntax error at line 6"]}),
     "the answer cell has a syntax error at line 6; `update_with_donate` is not defined", "incomplete"),
    (submission(), Outcome("ok", reply={"obs": {"probe_error": "TypeError: no"}}),
     "the tests could not run: TypeError: no", "incomplete"),
], ids=["unreadable", "wrong-exercise", "stub", "timeout", "missing-after-error", "probe-error"])
def test_what_stops_the_checks_is_said_once_and_every_check_is_not_run(sub, outcome, output, status):
    assert judge.verdict(sub, outcome, SEED) == (judge.not_run(ASSIGNMENT), output, status)


def test_a_reply_without_readable_observations_fails_every_check_in_plain_words():
    found, output, status = judge.verdict(submission(), Outcome("ok", reply={"obs": [1, 2]}), SEED)
    assert (output, status) == ("0 of 8 checks passed.", "graded")
    assert {c.output for c in found} == {COULD_NOT}


def test_a_probes_warnings_are_its_own_while_another_thread_probes():
    """The grader judges on one thread per slot, and hidden tests compile under
    ``quiet()`` to learn which warnings JAX gives: a second thread inside ``quiet()``
    must neither take the first one's warnings nor lose its own."""
    import threading
    import warnings

    from autograder.exercises.common import quiet

    entered, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    caught = {}

    def first():
        with quiet() as mine:
            entered.set()
            second_in.wait(0.5)  # without one probe at a time, the second enters here
            warnings.warn("first", stacklevel=1)
        first_out.set()
        caught["first"] = mine

    def second():
        entered.wait(5)
        with quiet() as mine:
            second_in.set()
            first_out.wait(5)
            warnings.warn("second", stacklevel=1)
        caught["second"] = mine

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert caught == {"first": ["first"], "second": ["second"]}
