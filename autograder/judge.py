"""Step 3 of grading: judge what the learner's process replied, with the hidden tests.

:func:`verdict` reads the reply (observations, cell errors, a missing function)
and gives the checks, the overall words and the status; :func:`check_result` is one
hidden test on observations, what ``nbgrader autograde``'s kernels run per cell
(:mod:`autograder.nbgrader_bridge`).

Runs in the grader's process, never in the learner's. The hidden tests
(``autograder/exercises/<exercise>/hidden/tests.py``) are pytest tests taking the fixtures ``obs``
and ``seed``; here each is called directly, in file order, exactly as the
nbgrader bridge calls them, so both graders judge with the same code (and a
class is not charged a pytest session per submission). To run them under
pytest, point ``AUTOGRADER_OBSERVATIONS`` at a JSON file ``{"obs": ..., "seed": ...}``
(see ``autograder/exercises/conftest.py``). A failing test shows only its
:class:`~autograder.feedback.GradeFailure` message, never its source, ending with
the requirement row(s) of the task it grades (:func:`graded_rows`); a
:class:`~autograder.feedback.NotChecked` says "not checked" with the title of the
check whose failure took its evidence, which alone says what was observed.

Each function is handed the :class:`~autograder.exercises.Exercise` it judges for (or its
name, looked up once, where a caller has only that: :func:`exercise_of`), and passes
the object on: the registry is read once per verdict, not at every step.
"""
from __future__ import annotations

import inspect
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from autograder import exercises, requirements
from autograder.exercises import Exercise
from autograder.feedback import GradeFailure, NotChecked, where_text
from autograder.results import CheckResult, CheckStatus, Status

if TYPE_CHECKING:  # not imported at run time: nbgrader's kernels import this module
    from autograder.sandbox.wire import Outcome

Obs = Mapping[str, Any]  # the probe's observations (JSON from the learner's process)
Failures = Mapping[str, "str | None"]  # {hidden test's name: its message, None if it passed}


class HiddenTest(Protocol):
    """A hidden test as :func:`autograder.feedback.graded` marks it: called with the
    fixtures it names (``obs``, ``seed``), raising on failure."""

    points: int
    title: str

    def __call__(self, **fixtures: Any) -> object: ...


class Handed(Protocol):
    """What :func:`verdict` reads of a loaded hand-in (a :class:`~autograder.load.Submission`,
    which imports the checks table, and so this module: named here, not imported)."""

    @property
    def exercise(self) -> str: ...
    @property
    def unreadable(self) -> str | None: ...
    @property
    def other_exercise(self) -> str | None: ...
    @property
    def attempted(self) -> bool: ...
    @property
    def notes(self) -> list[str]: ...


def exercise_of(exercise: Exercise | str) -> Exercise:
    """The :class:`~autograder.exercises.Exercise` itself, or the one registered under a
    name (ValueError when none is)."""
    return exercise if isinstance(exercise, Exercise) else exercises.get(exercise)


def hidden_module(exercise: Exercise | str) -> ModuleType:
    return exercise_of(exercise).hidden()


def hidden_tests(exercise: Exercise | str) -> list[tuple[str, str, int]]:
    """``[(function name, title, points)]`` of an exercise's hidden tests, in order."""
    return exercise_of(exercise).tests()


def _test(exercise: Exercise, name: str) -> HiddenTest:
    test: HiddenTest = getattr(exercise.hidden(), name)
    return test


def failure(exercise: Exercise | str, name: str, obs: Obs, seed: int) -> str | None:
    """Run one hidden test; return None if it passed, else the learner's message."""
    exercise = exercise_of(exercise)
    test = _test(exercise, name)
    fixtures = {"obs": obs, "seed": seed}
    try:
        test(**{k: v for k, v in fixtures.items() if k in inspect.signature(test).parameters})
    except NotChecked as exc:
        titles = {n: title for n, title, _ in exercise.tests()}
        return exc.told(titles.get(exc.needs, exc.needs)) + graded_rows(exercise, name, needs=exc.needs)
    except GradeFailure as exc:
        return str(exc) + graded_rows(exercise, name, row=exc.row)
    except Exception as exc:  # malformed observations or a grader bug: never show source
        return (f"The grader could not complete this check ({type(exc).__name__}); "
                "please tell your instructor.")
    return None


def check_result(exercise: Exercise | str, name: str, obs: Obs, seed: int,
                 failures: Failures | None = None) -> CheckResult:
    """Hidden test ``name`` of ``exercise`` on ``obs``: its :class:`CheckResult`.

    The one verdict both graders give: the command line and the service
    through :func:`checks`, ``nbgrader autograde`` through
    :mod:`autograder.nbgrader_bridge`. ``failures`` (``{test name: message or
    None}`` of every hidden test on ``obs``) spares running them again.
    """
    exercise = exercise_of(exercise)
    test = _test(exercise, name)
    if "missing" in obs:  # the probe found no function to test
        message: str | None = f"`{obs['missing']}` is not defined"
    else:
        message = failures[name] if failures is not None else failure(exercise, name, obs, seed)
        if message is not None and isinstance(obs.get("stopped"), dict):
            message = said_once(exercise, name, obs, seed, message, failures)
    if message is None:
        return CheckResult(name, test.title, test.points, test.points, CheckStatus.PASSED,
                           f"Passed: {test.title}.")
    return CheckResult(name, test.title, 0, test.points, CheckStatus.FAILED, message)


def graded_rows(exercise: Exercise | str, name: str, row: str | None = None,
                needs: str | None = None) -> str:
    """The last line of check ``name``'s failed feedback: the requirement rows of the task
    it grades (:mod:`autograder.requirements`), or '' for an exercise without a table.

    ``row``: the one row the check observed violated; ``needs``: the check whose failure
    left this one unchecked (the rows both grade). Else every row the check grades."""
    exercise = exercise_of(exercise)
    try:
        rows = requirements.rows_of_check(exercise.name, name)
    except ModuleNotFoundError as exc:  # no requirements.py; an error inside one is raised
        if exc.name != f"autograder.exercises.{exercise.name}.requirements":
            raise
        return ""
    narrowed = [r for r in rows if r.id == row or (needs is not None and needs in r.checks)]
    rows = narrowed or rows
    return (REQUIREMENT + "; ".join(row.title for row in rows)) if rows else ""


REQUIREMENT = "\nRequirement: "


def said_once(exercise: Exercise | str, name: str, obs: Obs, seed: int, message: str,
              failures: Failures | None = None) -> str:
    """One cause stopped every call (the probe's ``obs["stopped"]``): the first failing
    check says it, with its line, and names the checks it kept from running; each of
    those says only that it did not run. Decided from ``obs`` alone, so each graded
    cell of ``nbgrader autograde`` says the same as the course grader."""
    exercise = exercise_of(exercise)
    failures = failures if failures is not None else failures_of(exercise, obs, seed)
    failing = [(n, title) for n, title, _ in exercise.tests() if failures[n] is not None]
    (lead, lead_title), others = failing[0], [title for _, title in failing[1:]]
    where = where_text(obs["stopped"].get("where"))
    if name != lead:
        return (f"Not run: every call raised the error reported under \"{lead_title}\""
                + (f" ({where})" if where else "") + ".")
    said, rows, last = message.partition(REQUIREMENT)  # the row stays the last line
    return (said + (f"\nWhere: {where}" if where else "")
            + (f"\nNot run because of it: {'; '.join(others)}." if others else "") + rows + last)


def failures_of(exercise: Exercise | str, obs: Obs, seed: int) -> dict[str, str | None]:
    """``{test name: :func:`failure`}`` of every hidden test of ``exercise`` on ``obs``."""
    exercise = exercise_of(exercise)
    return {name: failure(exercise, name, obs, seed) for name, _, _ in exercise.tests()}


def checks(exercise: Exercise | str, obs: Obs, seed: int) -> list[CheckResult]:
    """Every hidden test of ``exercise`` on ``obs``, in order: ``[CheckResult]``; each
    test runs once."""
    exercise = exercise_of(exercise)
    failures = None if "missing" in obs else failures_of(exercise, obs, seed)
    return [check_result(exercise, name, obs, seed, failures)
            for name, _, _ in exercise.tests()]


NOT_RUN = "Not run."


def not_run(exercise: Exercise | str) -> list[CheckResult]:
    """Every hidden test scored 0, not run (timeouts, a missing function, the stub).

    The reason is said once, in the result's ``output``; each check says only
    :data:`NOT_RUN`, so feedback does not repeat it once per test.
    """
    return [CheckResult(name, title, 0, points, CheckStatus.FAILED, NOT_RUN)
            for name, title, points in hidden_tests(exercise)]


Verdict = tuple[list[CheckResult], str, Status]


def verdict(sub: Handed, outcome: Outcome | None, seed: int) -> Verdict:
    """``(checks, output, status)`` for a loaded submission and its sandbox outcome.

    ``sub`` is a :class:`~autograder.load.Submission`; ``outcome`` the
    :class:`~autograder.sandbox.Outcome` of running it (None when nothing ran);
    ``seed`` the input seed the probe used. Raises whatever a reply of a shape
    the hidden tests cannot read raises (the pipeline makes that an ``error``).
    """
    exercise = exercises.get(sub.exercise)
    if sub.unreadable:
        return _failed(exercise, sub.unreadable,
                       Status.WRONG_EXERCISE if sub.other_exercise else Status.UNREADABLE)
    if not sub.attempted:
        return _failed(exercise, "not attempted: the answer cell is still the released stub",
                       Status.NOT_ATTEMPTED)
    assert outcome is not None, "an attempted, readable hand-in is run before it is judged"
    if outcome.status != "ok":  # OutcomeStatus.OK
        return _failed(exercise, outcome.message, Status(outcome.status))
    reply = outcome.reply
    assert reply is not None, "an ok outcome carries the learner's reply"
    obs = reply["obs"] if isinstance(reply.get("obs"), dict) else {}
    errors = reply.get("cell_errors")
    notes = [str(e)[:500] for e in errors][:10] if isinstance(errors, list) else []
    if "missing" in obs or "probe_error" in obs:
        reason = (f"`{obs['missing']}` is not defined" if "missing" in obs
                  else f"the tests could not run: {obs['probe_error']}")
        # the cause (a cell that failed, e.g. a syntax error) before its effect
        return _failed(exercise, "; ".join(notes + [reason]), Status.INCOMPLETE)
    found = checks(exercise, obs, seed)
    passed = sum(c.status == CheckStatus.PASSED for c in found)
    output = (f"All {passed} checks passed." if passed == len(found)
              else f"{passed} of {len(found)} checks passed.")
    if isinstance(obs.get("stopped"), dict) and passed < len(found):
        where = where_text(obs["stopped"].get("where"))
        output += (f" One error stopped every call: {str(obs['stopped'].get('error'))[:500]}"
                   + (f" at {where}" if where else "") + " (the first failed check says more).")
    if notes:
        output += " Problems while running your code: " + "; ".join(notes) + "."
    return found, output + "".join(f" Note: {n}." for n in sub.notes), Status.GRADED


def _failed(exercise: Exercise, message: str, status: Status) -> Verdict:
    return not_run(exercise), message, status
